"""Which rows of an embedded store already passed the open-time checks: their digests, kept in cvo's cache.

Opening a store checks every row as a hostile file deserves (:func:`cvo.cluster.embedded.server._check_row`:
a JSON object of the kind and name its key says, metadata as the API server validated it;
:func:`cvo.cluster.embedded.store.nested_deeper`: nested within cvo's limit).  On the corpus that is
two thirds of opening the store, and every command that reads the cluster (``status``, ``diff``, ``get``)
paid it again for rows nothing had changed.  A row's check depends on nothing but its key and bytes, so
the digest of (key, bytes) of each row that passed is kept, one file per store, under cvo's cache
directory (``$CVO_CACHE_DIR``, as the parse cache): the next open checks only rows whose digest is not
there, i.e. every row another process (or a person with ``sqlite3``) wrote since.

The file is trusted as the parse cache is (it is the user's own cache); what it holds is still read
as hostile input: anything but the magic line followed by whole digests, or more than
:data:`MAX_BYTES`, is ignored (every row is checked), and a file that cannot be written is no error.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from cvo.cluster.api import Ref
from cvo.log import get_logger

log = get_logger(__name__)

MAGIC = b"cvo checked rows 1\n"
DIGEST_BYTES = 16
MAX_BYTES = 16 * 1024 * 1024  # a million rows' digests: larger than any store cvo writes
SUBDIR = "checked-rows"


def row_digest(ref: Ref, data: bytes) -> bytes:
    """What a row is known by: SHA-256 (the CPU's SHA extensions, as the parse cache) of its key and bytes."""
    key = "\0".join((ref.group, ref.kind, ref.namespace, ref.name)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(len(key).to_bytes(4, "little") + key + data).digest()[:DIGEST_BYTES]


def parse(blob: bytes) -> frozenset[bytes]:
    """The digests a file holds; empty for anything that is not such a file."""
    if not blob.startswith(MAGIC) or len(blob) > MAX_BYTES:
        return frozenset()
    body = memoryview(blob)[len(MAGIC):]
    if len(body) % DIGEST_BYTES:
        return frozenset()
    return frozenset(bytes(body[i:i + DIGEST_BYTES]) for i in range(0, len(body), DIGEST_BYTES))


class CheckedRows:
    """The digests of one store's rows that passed the checks, in ``cache_dir``."""

    def __init__(self, cache_dir: Path, store: Path) -> None:
        name = hashlib.sha256(os.fsencode(os.path.abspath(store))).hexdigest()[:32]
        self.file = cache_dir / SUBDIR / name

    def load(self) -> frozenset[bytes]:
        try:
            with open(self.file, "rb") as f:
                blob = f.read(MAX_BYTES + 1)
        except OSError:
            return frozenset()
        return parse(blob)

    def save(self, digests: Iterable[bytes]) -> None:
        """Replace the file (atomically: a reader sees the old one or the new one) by ``digests``."""
        blob = MAGIC + b"".join(sorted(digests))
        tmp: str | None = None
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, self.file)
            tmp = None
        except OSError as err:
            log.debug("the checked rows of a store were not saved", file=str(self.file), reason=err.strerror)
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
