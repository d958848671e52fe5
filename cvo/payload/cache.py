"""A parse cache keyed by file content.

Parsing the YAML of a large payload dominates ``cvo plan``.  The result of parsing one file
(its documents' headers and JSON) is stored under the SHA-256 digest of the file's bytes (after
template rendering), so an edited file is parsed again and an unchanged one never is.  One pack
file per release directory holds the entries of the files that directory had the last time; it is
rewritten atomically whenever something was parsed, which also drops stale entries.

The pack is one marshalled entry per file followed by an index (each key's offset, length and
checksum), the index's checksum and its length, written as it goes; an entry is read only when it is
asked for: loading a release never holds the whole pack, let alone
the pack and every file's bytes at once (a 20× corpus's pack is 220 MB).  What is read is checked
before it is used (its checksum, then its shape), so :mod:`marshal` only ever decodes bytes cvo wrote:
a damaged pack or entry is a miss (the file is parsed again), never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
from pathlib import Path
from typing import Any, BinaryIO, TypeGuard

from cvo.payload.manifest import Header

# Bump when the parser's output or the pack's layout changes, so old packs are ignored.
FORMAT = b"cvo-parse-cache-6\n"
_LENGTH = 8  # bytes of the index's length, at the end
_SUM = 16  # bytes of a checksum
MAX_INDEX_BYTES = 64 * 1024 * 1024


def default_cache_dir() -> Path:
    if env := os.environ.get("CVO_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cvo"


def _checksum(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()[:_SUM]


def digest(data: bytes) -> bytes:
    # SHA-256 runs on the CPU's SHA extensions where present: faster than BLAKE2b here (docs/benchmarks.md).
    return hashlib.sha256(data).digest()[:16]


def valid_headers(value: Any) -> TypeGuard[list[Header]]:
    """Whether ``value`` is what :func:`cvo.payload.manifest.parse_headers` returns (a list of headers)."""
    if type(value) is not list:
        return False
    for h in value:
        if (type(h) is not tuple or len(h) != 7 or type(h[0]) is not int or type(h[6]) is not bytes
                or not all(type(s) is str for s in h[1:5]) or type(h[5]) is not dict
                or not all(type(k) is str and type(v) is str for k, v in h[5].items())):
            return False
    return True


def valid_index(value: Any, data_bytes: int) -> bool:
    """Whether ``value`` is a pack's index: 16-byte keys to (offset, length, checksum) inside ``data_bytes``."""
    if type(value) is not dict:
        return False
    for key, where in value.items():
        if (type(key) is not bytes or len(key) != 16 or type(where) is not tuple or len(where) != 3
                or type(where[0]) is not int or type(where[1]) is not int or type(where[2]) is not bytes
                or where[0] < 0 or where[1] < 0 or where[0] + where[1] > data_bytes):
            return False
    return True


def write_pack(out: BinaryIO, entries: dict[bytes, list[Header]]) -> None:
    """Write a pack of ``entries`` to ``out``, one entry at a time."""
    out.write(FORMAT)
    index: dict[bytes, tuple[int, int, bytes]] = {}
    offset = 0
    for key, headers in entries.items():
        blob = marshal.dumps(headers)
        out.write(blob)
        index[key] = (offset, len(blob), _checksum(blob))
        offset += len(blob)
    encoded = marshal.dumps(index)
    out.write(encoded)
    out.write(_checksum(encoded))
    out.write(len(encoded).to_bytes(_LENGTH, "little"))


class ParseCache:
    def __init__(self, directory: Path, release_dir: Path) -> None:
        self._fd: int | None = None  # first: close() (and __del__) must work whatever follows fails
        try:
            resolved = release_dir.resolve()
        except (OSError, RuntimeError, ValueError):  # a link loop, a directory gone, a NUL: no cache (the loader says why)
            resolved = release_dir.absolute()
        key = hashlib.blake2b(os.fsencode(resolved), digest_size=10).hexdigest()
        self.path = directory / "parse" / f"{key}.pack"
        self.index: dict[bytes, tuple[int, int, bytes]] = {}
        self.hits = 0
        self._base = 0  # where the entries start in the file

    def load(self) -> None:
        """Read the pack's index (not its entries); a missing or damaged pack is an empty cache."""
        self.close()
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return
        try:
            size = os.fstat(fd).st_size
            if size < len(FORMAT) + _SUM + _LENGTH or os.pread(fd, len(FORMAT), 0) != FORMAT:
                raise ValueError("not a pack")
            length = int.from_bytes(os.pread(fd, _LENGTH, size - _LENGTH), "little")
            entries_end = size - _LENGTH - _SUM - length
            if length > MAX_INDEX_BYTES or entries_end < len(FORMAT):
                raise ValueError("index out of bounds")
            encoded = os.pread(fd, length + _SUM, entries_end)
            if len(encoded) != length + _SUM or _checksum(encoded[:length]) != encoded[length:]:
                raise ValueError("damaged index")
            index = marshal.loads(encoded[:length])
            if not valid_index(index, entries_end - len(FORMAT)):
                raise ValueError("bad index")
        except (OSError, EOFError, ValueError, TypeError):
            os.close(fd)
            return
        base = len(FORMAT)
        self.index, self._fd, self._base = index, fd, base

    def get(self, key: bytes) -> list[Header] | None:
        where = self.index.get(key)
        if where is None or self._fd is None:
            return None
        offset, length, checksum = where
        try:
            blob = os.pread(self._fd, length, self._base + offset)
            found = marshal.loads(blob) if len(blob) == length and _checksum(blob) == checksum else None
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if not valid_headers(found):
            return None
        self.hits += 1
        return found

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()

    def save(self, entries: dict[bytes, list[Header]]) -> None:
        """Replace the pack with ``entries``; a cache that cannot be written is not an error."""
        import tempfile  # only when writing: a warm load never does

        self.close()
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".pack-")
            try:
                with os.fdopen(fd, "wb") as out:
                    write_pack(out, entries)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
