"""A parse cache keyed by file content.

Parsing the YAML of a large payload dominates ``cvo plan``.  The result of parsing one file
(its documents' headers and JSON) is stored under the SHA-256 digest of the file's bytes (after
template rendering), so an edited file is parsed again and an unchanged one never is.  One pack
file per release directory holds the entries of the files that directory had the last time; it is
rewritten atomically whenever something was parsed, which also drops stale entries.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
from pathlib import Path

from cvo.payload.manifest import Header

# Bump when the parser's output changes, so old packs are ignored.
FORMAT = b"cvo-parse-cache-5\n"


def default_cache_dir() -> Path:
    if env := os.environ.get("CVO_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cvo"


def digest(data: bytes) -> bytes:
    # SHA-256 runs on the CPU's SHA extensions where present: faster than BLAKE2b here (docs/benchmarks.md).
    return hashlib.sha256(data).digest()[:16]


class ParseCache:
    def __init__(self, directory: Path, release_dir: Path) -> None:
        key = hashlib.blake2b(os.fsencode(release_dir.resolve()), digest_size=10).hexdigest()
        self.path = directory / "parse" / f"{key}.pack"
        self.entries: dict[bytes, list[Header]] = {}
        self.hits = 0

    def load(self) -> None:
        try:
            data = self.path.read_bytes()
        except OSError:
            return
        if not data.startswith(FORMAT):
            return
        try:
            entries = marshal.loads(data[len(FORMAT):])
        except (EOFError, ValueError, TypeError):
            return
        if isinstance(entries, dict):
            self.entries = entries

    def get(self, key: bytes) -> list[Header] | None:
        found = self.entries.get(key)
        if found is not None:
            self.hits += 1
        return found

    def save(self, entries: dict[bytes, list[Header]]) -> None:
        """Replace the pack with ``entries``; a cache that cannot be written is not an error."""
        import tempfile  # only when writing: a warm load never does

        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".pack-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(FORMAT)
                    out.write(marshal.dumps(entries))
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
