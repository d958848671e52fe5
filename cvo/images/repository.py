"""Where manifests and blobs live: one interface for a registry and an OCI image layout.

A :class:`Repository` hands out raw manifests (bytes, media type, digest: the caller parses them) and
blobs as :class:`~cvo.images.digest.VerifyingReader` streams, and takes them for a push.  Every
implementation checks what it returns against the digest it was asked for (or, for a tag, reports the
digest of the bytes it returned), so nothing above it hashes again.  :class:`Deadline` is the injected
time a command's ``--timeout`` gives every request, retry and back-off.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from cvo.images.digest import VerifyingReader


@dataclass(frozen=True)
class Platform:
    """OCI image-spec ``image-index.md`` ``platform`` (architecture as GOARCH: amd64, arm64, …)."""

    os: str
    architecture: str
    variant: str = ""


@dataclass(frozen=True)
class Descriptor:
    """OCI image-spec ``descriptor.md``: what a manifest or index says of a blob or manifest it points to."""

    media_type: str
    digest: str
    size: int
    platform: Platform | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RawManifest:
    """A manifest or index as served: its bytes, the media type they declare and their sha256 digest."""

    data: bytes
    media_type: str
    digest: str


@dataclass
class Deadline:
    """The time one command may spend on an image, on an injected clock (``--timeout``)."""

    seconds: float
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    start: float = -1.0

    def __post_init__(self) -> None:
        if self.start < 0:
            self.start = self.monotonic()

    def remaining(self) -> float:
        return self.seconds - (self.monotonic() - self.start)

    def expired(self) -> bool:
        return self.remaining() <= 0


class Repository(Protocol):
    """One repository of images: a registry's ``REGISTRY/REPO`` or an OCI layout directory."""

    @property
    def image(self) -> str:
        """The repository as the user named it, for messages (never with credentials)."""
        ...

    def get_manifest(self, reference: str) -> RawManifest:
        """The manifest or index ``reference`` (a tag or a ``sha256:`` digest) names; for a digest its
        bytes are checked against it.  :class:`~cvo.images.errors.ImageError` when absent or wrong."""
        ...

    def open_blob(self, descriptor: Descriptor) -> AbstractContextManager[VerifyingReader]:
        """The blob as a stream checked against ``descriptor``'s digest and size (the reader calls
        ``finish()`` once it has what it needs)."""
        ...

    def has_blob(self, digest: str) -> bool:
        ...

    def put_blob(self, path: Path, descriptor: Descriptor) -> None:
        """Upload the file ``path`` (whose digest and size ``descriptor`` gives), unless already there."""
        ...

    def put_manifest(self, reference: str, manifest: RawManifest) -> None:
        """Store ``manifest`` under ``reference`` (a tag, or its own digest)."""
        ...


def iter_chunks(reader: VerifyingReader, size: int = 1 << 20) -> Iterator[bytes]:
    while chunk := reader.read(size):
        yield chunk
