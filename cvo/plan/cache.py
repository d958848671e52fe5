"""A cache of finished plans: ``cvo plan``'s output, keyed by everything the output depends on.

A warm ``cvo plan`` of the corpus spends most of its time turning cached parse results back into
manifests and the manifests into a graph; the output itself is a function of the files read, the
command's options and cvo's own code.  The key is a SHA-256 over all three:

- the release as read (:meth:`cvo.payload.loader.ReadRelease.fingerprint`): every manifest file's
  path and bytes (after template rendering), ``release-metadata`` and ``image-references`` byte for
  byte, the files not read and why, the version and the release image.  Every file is read and hashed
  on every run: an edit is seen whatever its mtime says, an mtime that changed alone changes nothing;
- the options that change the output (filters, capabilities, mode, attempt, output format);
- cvo's code: its version, Python's, orjson's, and the size and mtime of every module of the ``cvo``
  package (an edited cvo gives other plans).

One entry per (release directory, options): a file named after those, holding the key, a SHA-256 of
the output and the output.  A key that differs, a checksum that does not match, a truncated or
foreign file: all are misses, and the entry is rewritten (atomically).  A cache that cannot be read or
written is never an error.  At most :data:`MAX_ENTRIES` entries are kept (the oldest go first).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path

FORMAT = b"cvo-plan-cache-1\n"
KEY_BYTES = 32
MAX_ENTRIES = 64
_HEADER = len(FORMAT) + 2 * KEY_BYTES


def _put(h: hashlib._Hash, parts: Iterable[str | bytes]) -> None:
    for part in parts:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)


def code_fingerprint(package: Path | None = None) -> bytes:
    """What identifies cvo's code: versions, and every module's path, size and mtime."""
    import orjson

    import cvo

    root = package or Path(cvo.__file__).parent
    h = hashlib.sha256()
    _put(h, [cvo.__version__, sys.version, orjson.__version__])
    stack = [root]
    found: list[tuple[str, int, int]] = []
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append(Path(entry.path))
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    found.append((os.path.relpath(entry.path, root), st.st_size, st.st_mtime_ns))
    for rel, size, mtime in sorted(found):
        _put(h, [rel, str(size), str(mtime)])
    return h.digest()


def plan_key(release_fingerprint: bytes, options: Iterable[str], code: bytes) -> bytes:
    """The key of one plan: the release as read, the options (in a fixed order), cvo's code."""
    h = hashlib.sha256()
    _put(h, [FORMAT, code, release_fingerprint, *options])
    return h.digest()


def encode_entry(key: bytes, body: bytes) -> bytes:
    return FORMAT + key + hashlib.sha256(body).digest() + body


def decode_entry(data: bytes, key: bytes) -> bytes | None:
    """The output stored in ``data`` if it is an intact entry for ``key``, else ``None``."""
    if len(data) < _HEADER or not data.startswith(FORMAT):
        return None
    stored_key = data[len(FORMAT):len(FORMAT) + KEY_BYTES]
    checksum = data[len(FORMAT) + KEY_BYTES:_HEADER]
    body = data[_HEADER:]
    if stored_key != key or hashlib.sha256(body).digest() != checksum:
        return None
    return body


class PlanCache:
    """The plan entries under ``directory/plan/``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory / "plan"

    def entry_path(self, release_dir: Path, options: Iterable[str]) -> Path:
        h = hashlib.blake2b(digest_size=16)
        _put(h, [os.fsencode(release_dir.resolve()), *options])  # type: ignore[arg-type]
        return self.directory / f"{h.hexdigest()}.plan"

    def get(self, path: Path, key: bytes) -> bytes | None:
        try:
            data = path.read_bytes()
        except OSError:
            return None
        return decode_entry(data, key)

    def put(self, path: Path, key: bytes, body: bytes) -> None:
        """Store ``body`` for ``key`` at ``path`` (atomically); a cache that cannot be written is not an error."""
        import tempfile  # only when writing: a hit never does

        with contextlib.suppress(OSError):
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".plan-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(encode_entry(key, body))
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            self._prune()

    def _prune(self) -> None:
        entries = []
        with os.scandir(self.directory) as it:
            for entry in it:
                if entry.name.endswith(".plan"):
                    with contextlib.suppress(OSError):
                        entries.append((entry.stat().st_mtime_ns, entry.path))
        entries.sort()
        for _, path in entries[:max(0, len(entries) - MAX_ENTRIES)]:
            with contextlib.suppress(OSError):
                os.unlink(path)
