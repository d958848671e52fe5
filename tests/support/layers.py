"""Image layers made in the test: real tar streams (tarfile), gzip-compressed or not, served as blobs through
:class:`~cvo.images.digest.VerifyingReader` as a repository serves them."""

from __future__ import annotations

import gzip as gzip_module
import io
import tarfile
import zlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

from cvo.images import media
from cvo.images.digest import VerifyingReader, sha256_of
from cvo.images.repository import Descriptor

IMAGE = "quay.example.com/ocp/release@sha256:" + "a" * 64

Entry = tuple[tarfile.TarInfo, bytes | None]


def entry(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", *, linkname: str = "",
          size: int | None = None, pax: dict[str, str] | None = None) -> Entry:
    """One tar entry (``data`` only for a regular file; ``size`` to declare another size than ``len(data)``)."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    info.mtime = 1_700_000_000
    if pax:
        info.pax_headers = dict(pax)
    if kind in (tarfile.REGTYPE, tarfile.AREGTYPE):
        info.size = len(data) if size is None else size
        return info, data
    return info, None


def file(name: str, data: bytes | str = b"") -> Entry:
    return entry(name, data=data.encode() if isinstance(data, str) else data)


def directory(name: str) -> Entry:
    return entry(name, tarfile.DIRTYPE)


def symlink(name: str, target: str) -> Entry:
    return entry(name, tarfile.SYMTYPE, linkname=target)


def hardlink(name: str, target: str) -> Entry:
    return entry(name, tarfile.LNKTYPE, linkname=target)


def tar(*entries: Entry, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """The tar stream of ``entries``, names written as given (absolute and ``..`` names included)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt, encoding="utf-8", errors="surrogateescape") as archive:
        for info, data in entries:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def header(item: Entry, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """The header blocks of one entry alone (no data, no end of archive): for streams made by hand."""
    return item[0].tobuf(fmt, "utf-8", "surrogateescape")


def gzipped(data: bytes) -> bytes:
    return gzip_module.compress(data, compresslevel=6, mtime=0)


@dataclass
class Blob:
    """A layer blob and the descriptor a manifest gives for it (``digest``/``size`` may lie on purpose);
    :meth:`open` serves it as a repository's ``open_blob`` does and keeps the readers it handed out."""

    data: bytes
    media_type: str = media.OCI_LAYER_GZIP
    digest: str = ""
    size: int | None = None
    stream: io.RawIOBase | None = None  # served instead of ``data`` (an endless stream, say)
    readers: list[VerifyingReader] = field(default_factory=list)

    @property
    def descriptor(self) -> Descriptor:
        return Descriptor(self.media_type, self.digest or sha256_of(self.data),
                          len(self.data) if self.size is None else self.size)

    @contextmanager
    def open(self) -> Iterator[VerifyingReader]:
        reader = VerifyingReader(self.stream or io.BytesIO(self.data), IMAGE, self.descriptor.digest, self.descriptor.size,
                                 "layer")
        self.readers.append(reader)
        yield reader

    def pair(self) -> tuple[Descriptor, AbstractContextManager[VerifyingReader]]:
        return self.descriptor, self.open()


def layer(*entries: Entry, compression: str = "gzip", fmt: int = tarfile.PAX_FORMAT) -> Blob:
    """A layer of ``entries``: ``gzip`` (OCI media type), ``docker`` (Docker's gzip media type) or ``none``."""
    data = tar(*entries, fmt=fmt)
    if compression == "none":
        return Blob(data, media.OCI_LAYER)
    return Blob(gzipped(data), media.DOCKER_LAYER_GZIP if compression == "docker" else media.OCI_LAYER_GZIP)


class EndlessGzip(io.RawIOBase):
    """A gzip stream that never ends: ``head`` (a tar header, say) and then zeros, forever, a few hundred
    bytes of deflate per MiB; ``produced`` counts the compressed bytes handed out."""

    def __init__(self, head: bytes) -> None:
        compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        zeros = bytes(1 << 20)
        self._prefix = compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH)
        block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
        again = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
        assert block == again, "a full flush resets deflate: the same input makes the same block"
        self._block = block
        self._pending = self._prefix
        self.produced = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if not self._pending:
            self._pending = self._block
        n = len(self._pending) if size is None or size < 0 else size
        out, self._pending = self._pending[:n], self._pending[n:]
        self.produced += len(out)
        return out
