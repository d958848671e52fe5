"""An image's layers applied in order into a directory, keeping only the two payload directories.

As openshift/oc ``pkg/cli/image/extract`` (``ApplyLayer`` over each layer, bottom first) and the container
runtimes apply layers (OCI image-spec ``layer.md``): a later layer overrides a file of an earlier one, a
whiteout ``.wh.NAME`` removes NAME, an opaque whiteout ``.wh..wh..opq`` empties its directory.  Stricter
than a runtime, because the content is only ever read as manifests:

* only ``release-manifests/`` and ``manifests/`` are written; every other entry is read and counted, never
  written (the cluster-version-operator image's OS layers hold absolute symlinks and devices: they are
  outside the two directories, so they are skipped, not refused);
* any name that is absolute or holds ``..`` is refused wherever it is (no runtime writes it either);
* inside the two directories: regular files and directories only, plus symlinks and hard links that stay
  inside the tree; devices, FIFOs and links that leave it are refused;
* caps on bytes written, entries, bytes decompressed (a gzip bomb stops at the cap) and name length.

Every layer's reader is finished (:meth:`~cvo.images.digest.VerifyingReader.finish`), so a layer whose
bytes do not match its digest is refused after it was read; the caller extracts into a temporary directory
and keeps it only when everything passed.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tarfile
import zlib
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from cvo.images import media
from cvo.images.digest import Readable, VerifyingReader
from cvo.images.errors import ImageError
from cvo.images.repository import Descriptor

KEPT = ("release-manifests", "manifests")
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
MIB = 1 << 20


@dataclass(frozen=True)
class ExtractLimits:
    """Caps on what one image may make cvo do (the 5.0 corpus: 19 MB in 900 files)."""

    max_written: int = 512 * MIB  # bytes written under the two directories (the loader's own release cap)
    max_entries: int = 200_000  # tar entries over all layers (a real CVO image: about 15,000)
    max_decompressed: int = 4096 * MIB  # bytes decompressed over all layers, skipped entries included
    max_name: int = 4096  # bytes of one entry's name (PATH_MAX)


@dataclass
class ExtractStats:
    layers: int = 0
    entries: int = 0
    files: int = 0
    written: int = 0
    decompressed: int = 0
    skipped: int = 0


class _Counting:
    """The decompressed stream of a layer, counted against the cap as it is read."""

    def __init__(self, source: Readable, stats: ExtractStats, limits: ExtractLimits, image: str,
                 digest: str) -> None:
        self.source = source
        self.stats = stats
        self.limits = limits
        self.image = image
        self.digest = digest

    def read(self, n: int = -1) -> bytes:
        data = self.source.read(n)
        self.stats.decompressed += len(data)
        if self.stats.decompressed > self.limits.max_decompressed:
            raise ImageError(self.image, f"layer {self.digest}: more than {self.limits.max_decompressed} bytes "
                                         f"decompressed (a compression bomb?)")
        return data


class _Gunzip:
    """gzip decompression of a stream, bounded per read (``tarfile``'s own gzip reader is not)."""

    def __init__(self, source: Readable, image: str, digest: str) -> None:
        self.source = source
        self.image = image
        self.digest = digest
        self._z = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        self._pending = b""
        self._eof = False

    def read(self, n: int = -1) -> bytes:
        n = 64 * 1024 if n is None or n < 0 else n
        while not self._pending and not self._eof:
            tail = self._z.unconsumed_tail
            chunk = tail or self.source.read(64 * 1024)
            if not chunk:
                if not self._z.eof:
                    raise ImageError(self.image, f"layer {self.digest}: the gzip stream is truncated")
                self._eof = True
                break
            try:
                self._pending = self._z.decompress(chunk, max(n, 64 * 1024))
            except zlib.error as err:
                raise ImageError(self.image, f"layer {self.digest}: not a valid gzip stream ({err})") from None
            if self._z.eof:
                rest = self._z.unused_data
                self._eof = True
                if rest.strip(b"\0"):  # another gzip member: keep going (gzip allows concatenation)
                    self._z = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
                    self._pending += self._z.decompress(rest)
                    self._eof = self._z.eof
        out, self._pending = self._pending[:n], self._pending[n:]
        return out


def extract_layers(image: str, layers: Iterable[tuple[Descriptor, AbstractContextManager[VerifyingReader]]],
                   target: Path, limits: ExtractLimits | None = None) -> ExtractStats:
    """Apply ``layers`` (bottom first) into the empty directory ``target``; only the two payload directories are
    written.  :class:`ImageError` names the image, the layer and the entry of the first problem."""
    limits = limits or ExtractLimits()
    stats = ExtractStats()
    root = target.resolve()
    for descriptor, opened in layers:
        stats.layers += 1
        with opened as reader:
            stream: Readable = reader
            if descriptor.media_type in media.LAYERS_GZIP:
                stream = _Gunzip(reader, image, descriptor.digest)
            elif descriptor.media_type != media.OCI_LAYER:
                raise ImageError(image, f"layer {descriptor.digest} of unsupported media type "
                                        f"{descriptor.media_type}")
            counted = _Counting(stream, stats, limits, image, descriptor.digest)
            try:
                # typeshed wants IO[bytes] here; the stream mode calls only read()
                with tarfile.open(fileobj=counted, mode="r|") as tar:  # type: ignore[call-overload]
                    for member in tar:
                        _apply(image, descriptor.digest, tar, member, root, stats, limits)
            except tarfile.TarError as err:
                raise ImageError(image, f"layer {descriptor.digest}: not a valid tar stream ({err})") from None
            reader.finish()
    return stats


def _clean_name(image: str, digest: str, name: str, limits: ExtractLimits) -> str:
    where = f"layer {digest}: entry {name[:200]!r}"
    if len(name.encode("utf-8", "surrogateescape")) > limits.max_name:
        raise ImageError(image, f"{where}: name longer than {limits.max_name} bytes")
    if "\0" in name:
        raise ImageError(image, f"{where}: name holds a NUL byte")
    stripped = name[2:] if name.startswith("./") else name
    if stripped.startswith("/"):
        raise ImageError(image, f"{where}: absolute path")
    parts = [p for p in stripped.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ImageError(image, f"{where}: path leaves the image's root (..)")
    return "/".join(parts)


def _kept(name: str) -> bool:
    top = name.split("/", 1)[0]
    return top in KEPT


def _inside(root: Path, path: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _safe_parent(image: str, where: str, root: Path, path: Path) -> None:
    """``path``'s parent directories exist inside ``root`` (a symlinked directory on the way is refused)."""
    current = root
    for part in path.relative_to(root).parts[:-1]:
        current = current / part
        if current.is_symlink():
            raise ImageError(image, f"{where}: a parent directory is a symbolic link")
        if current.exists() and not current.is_dir():
            current.unlink()
        current.mkdir(exist_ok=True)


def _apply(image: str, digest: str, tar: tarfile.TarFile, member: tarfile.TarInfo, root: Path,
           stats: ExtractStats, limits: ExtractLimits) -> None:
    stats.entries += 1
    if stats.entries > limits.max_entries:
        raise ImageError(image, f"more than {limits.max_entries} entries in its layers")
    name = _clean_name(image, digest, member.name, limits)
    where = f"layer {digest}: entry {member.name[:200]!r}"
    if not name or not _kept(name):
        stats.skipped += 1
        return
    directory, base = posixpath.split(name)
    if base == OPAQUE:
        target_dir = root / directory
        if target_dir.is_dir() and not target_dir.is_symlink():
            for child in list(target_dir.iterdir()):
                _remove(child)
        return
    if base.startswith(WHITEOUT):
        victim = root / directory / base[len(WHITEOUT):]
        if _inside(root, victim.parent) and (victim.exists() or victim.is_symlink()):
            _remove(victim)
        return
    path = root / name
    _safe_parent(image, where, root, path)
    if member.isdir():
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            _remove(path)
        path.mkdir(exist_ok=True)
        return
    if member.isreg():
        if path.is_symlink() or path.exists():
            _remove(path)
        stats.written += member.size
        if stats.written > limits.max_written:
            raise ImageError(image, f"more than {limits.max_written} bytes under {' and '.join(KEPT)}")
        source = tar.extractfile(member)
        assert source is not None  # a regular file always has content
        with open(path, "xb") as out:
            while chunk := source.read(MIB):
                out.write(chunk)
        stats.files += 1
        return
    if member.issym():
        link = member.linkname
        resolved = Path(os.path.normpath(path.parent / link)) if not link.startswith("/") else None
        if resolved is None or not _inside(root, resolved) or not _kept(str(resolved.relative_to(root))):
            raise ImageError(image, f"{where}: symbolic link to {link[:200]!r} leaves the payload directories")
        if path.is_symlink() or path.exists():
            _remove(path)
        os.symlink(link, path)
        return
    if member.islnk():
        linked = _clean_name(image, digest, member.linkname, limits)
        if not _kept(linked):
            raise ImageError(image, f"{where}: hard link to {member.linkname[:200]!r} leaves the payload directories")
        source_path = root / linked
        if not source_path.is_file() or source_path.is_symlink():
            raise ImageError(image, f"{where}: hard link to {member.linkname[:200]!r}, which is not a file "
                                    "extracted before it")
        if path.is_symlink() or path.exists():
            _remove(path)
        stats.written += source_path.stat().st_size
        if stats.written > limits.max_written:
            raise ImageError(image, f"more than {limits.max_written} bytes under {' and '.join(KEPT)}")
        shutil.copyfile(source_path, path)  # a copy: the two names must not change together later
        stats.files += 1
        return
    kind = ("character device" if member.ischr() else "block device" if member.isblk()
            else "FIFO" if member.isfifo() else f"entry of type {member.type!r}")
    raise ImageError(image, f"{where}: a {kind} under the payload directories")
