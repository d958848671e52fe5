"""Bytes checked against their digest while they stream: nothing is trusted before its last byte.

distribution's ``opencontainers/go-digest`` ``Verifier`` hashes as the bytes go by; so does
:class:`VerifyingReader`, which also refuses a stream that runs past its declared size at once (a
registry cannot make cvo read more than the manifest said) and checks size and digest at the end of
the stream, when its reader calls :meth:`VerifyingReader.finish`.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

from cvo.images.errors import ImageError, Problem
from cvo.images.reference import SHA256

CHUNK = 1 << 20


class Readable(Protocol):
    """What a stream of bytes needs to be read: ``read(n)``."""

    def read(self, n: int = -1, /) -> bytes: ...


def sha256_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_digest(image: str, digest: str) -> str:
    """``digest`` if it is ``sha256:<64 lowercase hex>``; otherwise :class:`ImageError` (``REFUSED``)."""
    if not isinstance(digest, str) or not SHA256.fullmatch(digest):
        raise ImageError(image, f"digest {str(digest)[:80]!r} is not sha256:<64 lowercase hex digits>")
    return digest


class VerifyingReader:
    """A binary stream over ``source`` that hashes what it reads; ``read`` raises :class:`ImageError`
    as soon as more than ``size`` bytes arrive, :meth:`finish` when the total or the digest is wrong."""

    def __init__(self, source: Readable, image: str, digest: str, size: int | None, what: str = "blob") -> None:
        self._source = source
        self._image = image
        self.digest = check_digest(image, digest)
        self.size = size
        self._what = what
        self._hash = hashlib.sha256()
        self.count = 0
        self._done = False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            chunks = []
            while chunk := self.read(CHUNK):
                chunks.append(chunk)
            return b"".join(chunks)
        data = self._source.read(n)
        if data:
            self.count += len(data)
            if self.size is not None and self.count > self.size:
                raise ImageError(self._image, f"{self._what} {self.digest} is longer than its declared "
                                              f"{self.size} bytes")
            self._hash.update(data)
        return data

    def readable(self) -> bool:
        return True

    def finish(self) -> None:
        """Read what is left and check size and digest; idempotent."""
        if self._done:
            return
        while self.read(CHUNK):
            pass
        if self.size is not None and self.count != self.size:
            raise ImageError(self._image, f"{self._what} {self.digest} ended after {self.count} of its "
                                          f"declared {self.size} bytes")
        actual = "sha256:" + self._hash.hexdigest()
        if actual != self.digest:
            raise ImageError(self._image, f"{self._what} {self.digest} does not match its content ({actual})",
                             Problem.REFUSED)
        self._done = True
