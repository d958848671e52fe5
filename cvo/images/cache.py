"""The pull cache: manifests by digest, and extracted release trees by the digest of their image manifest.

Layout under the cache directory (``$CVO_CACHE_DIR/images``, else ``$XDG_CACHE_HOME/cvo/images``, else
``~/.cache/cvo/images``)::

    manifests/sha256/HEX          a manifest or index: its media type, a newline, its bytes
    trees/sha256/HEX/release/     release-manifests/ and manifests/ of the image whose manifest is HEX
    trees/sha256/HEX/config       the image's config blob
    trees/sha256/HEX/entry.json   what the tree held when it was written: every path, size and mtime
    tmp/                          entries being written; each is renamed into trees/ when complete

An entry appears whole or not at all (rename), so two processes pulling the same image both succeed:
the second rename finds the first one's entry and uses it.  Every hit is checked (manifests against
their digest, a tree against its ``entry.json``: paths, sizes, mtimes; the config against its digest);
a damaged entry is removed and pulled again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cvo.images.digest import sha256_of
from cvo.images.reference import SHA256
from cvo.images.repository import RawManifest
from cvo.log import get_logger

log = get_logger("cvo.images")

FORMAT = 1
TREE = "release"
CONFIG = "config"
ENTRY = "entry.json"
# Temporary entries older than this are a crashed pull's: the next pull removes them.
STALE_SECONDS = 24 * 3600

Listing = dict[str, list[Any]]


@dataclass(frozen=True)
class CachedTree:
    """A complete, checked cache entry."""

    manifest_digest: str
    directory: Path  # holds release-manifests/ and manifests/
    config: bytes


class PullCache:
    """Manifests and extracted trees under ``root``; every method is safe against concurrent processes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # -- manifests -----------------------------------------------------------------------------------

    def _manifest_path(self, digest: str) -> Path:
        return self.root / "manifests" / "sha256" / digest.removeprefix("sha256:")

    def manifest(self, digest: str) -> RawManifest | None:
        """The cached manifest ``digest``, checked against it; ``None`` when absent or damaged."""
        if not SHA256.fullmatch(digest):
            return None
        path = self._manifest_path(digest)
        try:
            content = path.read_bytes()
        except OSError:
            return None
        media_type, newline, data = content.partition(b"\n")
        if not newline or sha256_of(data) != digest:
            log.warning("damaged cache entry removed", path=str(path))
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        return RawManifest(data, media_type.decode("utf-8", "replace"), digest)

    def put_manifest(self, raw: RawManifest) -> None:
        if not SHA256.fullmatch(raw.digest) or sha256_of(raw.data) != raw.digest or "\n" in raw.media_type:
            return
        path = self._manifest_path(raw.digest)
        if path.exists():
            return
        try:
            self._write_atomic(path, raw.media_type.encode() + b"\n" + raw.data)
        except OSError as err:  # a cache that cannot be written is no reason to fail a pull
            log.warning("cannot cache a manifest", path=str(path), problem=str(err))

    # -- trees ---------------------------------------------------------------------------------------

    def _entry_path(self, manifest_digest: str) -> Path:
        return self.root / "trees" / "sha256" / manifest_digest.removeprefix("sha256:")

    def tree(self, manifest_digest: str) -> CachedTree | None:
        """The cached tree of ``manifest_digest`` when present and intact; a damaged one is removed."""
        if not SHA256.fullmatch(manifest_digest):
            return None
        entry = self._entry_path(manifest_digest)
        if not entry.is_dir():
            return None
        problem = ""
        try:
            found = self._check(entry, manifest_digest)
        except (OSError, ValueError, orjson.JSONDecodeError) as err:
            found, problem = None, str(err)
        if isinstance(found, CachedTree):
            return found
        log.warning("damaged cache entry removed", path=str(entry), problem=problem or found)
        self._remove(entry)
        return None

    def _check(self, entry: Path, manifest_digest: str) -> CachedTree | str:
        doc = orjson.loads((entry / ENTRY).read_bytes())
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("manifest") != manifest_digest:
            return f"{ENTRY} is not this entry's"
        config = (entry / CONFIG).read_bytes()
        if sha256_of(config) != doc.get("config"):
            return "the config does not match its digest"
        if listing(entry / TREE) != doc.get("files"):
            return "the tree differs from what was written"
        return CachedTree(manifest_digest, entry / TREE, config)

    def begin(self) -> Path:
        """A new, empty temporary entry; extract into ``begin() / TREE`` (created), then :meth:`publish`."""
        tmp = self.root / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        self._sweep(tmp)
        entry = tmp / f"entry-{os.getpid()}-{os.urandom(6).hex()}"
        (entry / TREE).mkdir(parents=True)
        return entry

    def publish(self, tmp_entry: Path, manifest_digest: str, config: bytes) -> CachedTree:
        """Record the tree in ``tmp_entry`` and rename it into place; when another process was first, its
        entry is used (and ours removed), unless it is damaged, then ours replaces it."""
        (tmp_entry / CONFIG).write_bytes(config)
        doc = {"format": FORMAT, "manifest": manifest_digest, "config": sha256_of(config),
               "files": listing(tmp_entry / TREE)}
        (tmp_entry / ENTRY).write_bytes(orjson.dumps(doc))
        final = self._entry_path(manifest_digest)
        final.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            try:
                os.rename(tmp_entry, final)
            except OSError:
                existing = self.tree(manifest_digest)  # removes a damaged one, so the next rename succeeds
                if existing is not None:
                    self._remove(tmp_entry)
                    return existing
                continue
            return CachedTree(manifest_digest, final / TREE, config)
        self._remove(tmp_entry)
        raise OSError(f"cannot rename a cache entry into {final}")

    def discard(self, tmp_entry: Path) -> None:
        self._remove(tmp_entry)

    # -- helpers -------------------------------------------------------------------------------------

    def _remove(self, path: Path) -> None:
        """Rename ``path`` away first (atomic), then delete it: no reader ever sees half an entry."""
        trash = self.root / "tmp" / f"trash-{os.getpid()}-{os.urandom(6).hex()}"
        try:
            trash.parent.mkdir(parents=True, exist_ok=True)
            os.rename(path, trash)
        except OSError:
            trash = path
        shutil.rmtree(trash, ignore_errors=True)

    def _sweep(self, tmp: Path) -> None:
        now = time.time()
        with contextlib.suppress(OSError), os.scandir(tmp) as it:
            for each in it:
                with contextlib.suppress(OSError):
                    if now - each.stat(follow_symlinks=False).st_mtime > STALE_SECONDS:
                        shutil.rmtree(each.path, ignore_errors=True)

    def _write_atomic(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{os.getpid()}-{os.urandom(6).hex()}")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()


def listing(tree: Path) -> Listing:
    """Every entry under ``tree`` by relative path: ``["f", size, mtime_ns]``, ``["d"]`` or ``["l", target]``."""
    out: Listing = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(tree / rel if rel else tree) as it:
            for each in it:
                path = f"{rel}/{each.name}" if rel else each.name
                info = each.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    out[path] = ["d"]
                    stack.append(path)
                elif stat.S_ISLNK(info.st_mode):
                    out[path] = ["l", os.readlink(each.path)]
                else:
                    out[path] = ["f", info.st_size, info.st_mtime_ns]
    return dict(sorted(out.items()))
