"""An image's layers applied in order into a private directory, as a container runtime does, but stricter.

oc ``pkg/cli/image/archive/archive.go`` ``unpackLayer`` (docker's ``pkg/archive``) applies each layer over
the ones below: an entry replaces what is at its path (a directory over a directory merges), ``.wh.NAME``
removes NAME of the layers below and ``.wh..wh..opq`` empties its directory of what they put there (OCI
image-spec ``layer.md``, "Whiteouts").  :func:`extract_layers` does the same for the two directories a
release is made of (:data:`KEPT`); every other entry is read, checked by name and counted, never written.
What it refuses and why is in ``docs/images.md`` ("Extracting layers").  Errors are
:class:`~cvo.images.errors.ImageError` naming the image, the layer digest and the entry; the target is the
caller's temporary directory, to be thrown away on error: nothing is ever written outside it.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import zlib
from collections import deque
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvo.images import media
from cvo.images.digest import CHUNK, VerifyingReader
from cvo.images.errors import ImageError
from cvo.images.repository import Descriptor
from cvo.log import get_logger
from cvo.payload.limits import MAX_RELEASE_BYTES

log = get_logger("cvo.images")

# What a release image holds for cvo: `oc adm release new` writes release-manifests/, the CVO image's own
# layers hold manifests/ (pkg/cli/admin/release/new.go).
KEPT = ("release-manifests", "manifests")

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
# docker pkg/archive WhiteoutMetaPrefix: aufs' own bookkeeping (.wh..wh.plnk, .wh..wh.aufs), never extracted.
AUFS_META = ".wh..wh."

GIB = 1 << 30
# tarfile reads a pax extended header or a GNU long name whole; a real one holds a path, a link target and a
# few xattrs (an SELinux label, file capabilities): a few hundred bytes.
MAX_HEADER_BYTES = 1 << 20
# Keys of global pax headers ('g'), which tarfile copies into every later entry (git archive writes one key).
MAX_GLOBAL_PAX_KEYS = 64
# pax and long-name headers in a row before an entry, which tarfile reads by recursion (a real entry has at
# most a global header, an extended one, a long name and a long link).
MAX_HEADER_CHAIN = 8
# Linux's MAXSYMLINKS: the links the kernel follows in one path lookup before ELOOP.
MAX_SYMLINK_FOLLOWS = 40
# Path components looked up to check every symlink written (a release payload has none): bounds the work
# links with long targets that lead through each other can make (40 follows of 2,000 components each).
MAX_LINK_STEPS = 1_000_000
_META_TYPES = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, tarfile.GNUTYPE_LONGNAME,
               tarfile.GNUTYPE_LONGLINK)
_GZIP_WBITS = 16 + zlib.MAX_WBITS
_GZIP_MAGIC = b"\x1f\x8b"
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class ExtractLimits:
    """Caps on one image's extraction, all layers together; each far above what a release image needs
    (the 5.0 nightly corpus: 925 files, 16.7 MB), so only a hostile or broken image meets them."""

    # Bytes of regular files written; the payload loader reads no more than this of one release.
    max_written_bytes: int = MAX_RELEASE_BYTES
    # Files, directories and links written.
    max_files: int = 100_000
    # Bytes of tar read, after gunzip, written or not: a gzip bomb stops here.  An OpenShift release image
    # (a RHEL base, the CVO binary, the release layer) holds well under 1 GiB.
    max_tar_bytes: int = 4 * GIB
    # Tar entries read, written or not (a RHEL base image's layers hold a few ten thousand).
    max_entries: int = 1_000_000
    # pax extended headers and GNU long names, in bytes: what tarfile parses besides the entries.
    max_header_bytes: int = 64 << 20
    # Bytes of one entry's name or link target (Linux PATH_MAX).
    max_path: int = 4096
    # Directories deep a written entry may be (release-manifests/ is flat).
    max_depth: int = 64


@dataclass
class ExtractStats:
    """What one extraction read and wrote."""

    layers: int = 0
    entries: int = 0        # tar entries read
    skipped: int = 0        # of those, outside release-manifests/ and manifests/: read, never written
    files: int = 0          # files, directories and links written
    written_bytes: int = 0  # bytes of regular files written
    tar_bytes: int = 0      # bytes of tar read (after gunzip)
    header_bytes: int = 0   # of those, pax and GNU long-name headers
    whiteouts: int = 0      # whiteouts applied to release-manifests/ and manifests/


class _Refused(Exception):
    """An entry (or header) cvo will not extract; the message says why."""


class _Corrupt(Exception):
    """The layer's bytes are not what its media type says."""


class _Archive(tarfile.TarFile):
    """A tar stream read by :class:`_Header`; ``chain`` counts the pax and long-name headers being read in a row."""

    chain = 0


class _Header(tarfile.TarInfo):
    """tarfile's header, refusing what tarfile would otherwise read whole into memory or by unbounded
    recursion: a pax or GNU long-name header over :data:`MAX_HEADER_BYTES`, more than :data:`MAX_HEADER_CHAIN`
    of them in a row, and GNU sparse maps (no layer writer makes sparse files: Go's archive/tar never writes
    them, and the OCI image-spec ``layer.md`` says they SHOULD NOT be used)."""

    # CPython Lib/tarfile.py TarInfo._proc_member: where tarfile dispatches on a header's type.
    def _proc_member(self, archive: tarfile.TarFile) -> Any:
        assert isinstance(archive, _Archive)
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise _Refused(f"a GNU sparse file (at tar byte {self.offset}), which cvo does not extract")
        if self.type not in _META_TYPES:
            return super()._proc_member(archive)  # type: ignore[misc]  # in Lib/tarfile.py; typeshed leaves it out
        if self.size > MAX_HEADER_BYTES:
            raise _Refused(f"a pax or long-name header of {self.size} bytes (at tar byte {self.offset}) is "
                           f"over the limit of {MAX_HEADER_BYTES}")
        if archive.chain >= MAX_HEADER_CHAIN:
            raise _Refused(f"more than {MAX_HEADER_CHAIN} pax or long-name headers in a row (at tar byte "
                           f"{self.offset})")
        archive.chain += 1
        try:
            return super()._proc_member(archive)  # type: ignore[misc]  # as above
        finally:
            archive.chain -= 1

    # CPython Lib/tarfile.py TarInfo._proc_gnusparse_10: its sparse map is read whole, however long.
    def _proc_gnusparse_10(self, member: tarfile.TarInfo, pax: Any, archive: tarfile.TarFile) -> None:
        raise _Refused(f"a GNU sparse file (at tar byte {self.offset}), which cvo does not extract")


class _TarBytes:
    """One layer's tar stream: the blob gunzipped (gzip media types) or as it is, every byte counted against
    ``max_tar_bytes`` as it is produced, so that a gzip bomb stops at the cap, not at its end."""

    def __init__(self, source: VerifyingReader, gzip: bool, stats: ExtractStats, limit: int) -> None:
        self._source = source
        self._gzip = gzip
        self._inflater = zlib.decompressobj(_GZIP_WBITS)
        self._ended = False
        self._stats = stats
        self._limit = limit

    def read(self, size: int = -1) -> bytes:
        size = size if size > 0 else CHUNK
        data = self._inflate(size) if self._gzip else self._source.read(size)
        self._stats.tar_bytes += len(data)
        if self._stats.tar_bytes > self._limit:
            raise _Refused(f"the layers hold more than {self._limit} bytes of tar (gunzipped)")
        return data

    def _inflate(self, size: int) -> bytes:
        while not self._ended:
            inflater = self._inflater
            if inflater.eof:
                # A gzip stream may hold several members (Go's gzip.Reader reads on); anything else after
                # the last one is hashed by finish() but never read as tar.
                rest = inflater.unused_data
                while len(rest) < 2 and (more := self._source.read(CHUNK)):
                    rest += more
                if rest[:2] != _GZIP_MAGIC:
                    self._ended = True
                    break
                inflater = self._inflater = zlib.decompressobj(_GZIP_WBITS)
                data_in = rest
            else:
                data_in = inflater.unconsumed_tail or self._source.read(CHUNK)
            try:
                # max_length: never more than asked for, whatever the ratio; b"" flushes what zlib holds.
                data = inflater.decompress(data_in, size)
            except zlib.error as err:
                raise _Corrupt(f"not gzip: {err}") from None
            if data:
                return data
            if not data_in and not inflater.eof:
                raise _Corrupt("the gzip stream ends early")
        return b""

    # tarfile's _Fileobj protocol; a layer is only ever read forwards.
    def write(self, data: bytes) -> int:
        raise OSError("a layer is read-only")

    def tell(self) -> int:
        return self._stats.tar_bytes

    def seek(self, offset: int) -> int:
        raise OSError("a layer stream cannot seek")

    def close(self) -> None:
        pass


def _quote(name: str) -> str:
    """A name as it appears in one error line: quoted, escaped, at most 200 characters."""
    text = repr(name)
    return text if len(text) <= 200 else text[:197] + "..."


def _parts(name: str, limits: ExtractLimits) -> tuple[str, ...]:
    """``name``'s components (``.`` and empty ones dropped); refused when absolute, with ``..``, too long."""
    if "\0" in name:
        raise _Refused("has a NUL byte in its name")
    try:
        length = len(os.fsencode(name))
    except UnicodeEncodeError:
        raise _Refused("has a name that is not a file name") from None
    if length > limits.max_path:
        raise _Refused(f"has a name of {length} bytes, over the limit of {limits.max_path}")
    if name.startswith("/"):
        raise _Refused("is an absolute path")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise _Refused("leaves the image through '..'")
    return parts


def _kept(parts: tuple[str, ...]) -> bool:
    return bool(parts) and parts[0] in KEPT


def _kind(member: tarfile.TarInfo) -> str:
    return {tarfile.CHRTYPE: "a character device", tarfile.BLKTYPE: "a block device",
            tarfile.FIFOTYPE: "a FIFO"}.get(member.type, f"of tar type {member.type!r}")


class _Extraction:
    """The state of one :func:`extract_layers` call: the target, the caps, the counts, the current entry."""

    def __init__(self, image: str, target: Path, limits: ExtractLimits) -> None:
        self.image = image
        self.root = target
        self.limits = limits
        self.stats = ExtractStats()
        self.dirs: set[tuple[str, ...]] = set()      # real directories under root, checked already
        self.written: set[tuple[str, ...]] = set()   # paths (and their parents) the current layer wrote
        self.cleared: set[tuple[str, ...]] = set()   # whiteouts the current layer applied already
        self.links: dict[tuple[str, ...], str] = {}  # symlinks written -> the layer digest
        self.link_steps = 0
        self.layer = ""
        self.entry: str | None = None
        self.previous: str | None = None

    # -- errors ----------------------------------------------------------------------------------------------

    def error(self, message: str) -> ImageError:
        if self.entry is not None:
            where = f"entry {_quote(self.entry)}"
        elif self.previous is not None:
            where = f"after entry {_quote(self.previous)}"
        else:
            where = "at its start"
        return ImageError(self.image, f"layer {self.layer}: {where}: {message}")

    # -- layers ----------------------------------------------------------------------------------------------

    def apply(self, descriptor: Descriptor, opener: AbstractContextManager[VerifyingReader]) -> None:
        self.layer, self.entry, self.previous = descriptor.digest, None, None
        if descriptor.media_type == media.OCI_LAYER_ZSTD:
            raise ImageError(self.image, f"layer {self.layer} is zstd-compressed, which cvo does not read "
                                         f"(gzip-compressed or plain tar only)")
        if descriptor.media_type not in media.LAYERS:
            raise ImageError(self.image, f"layer {self.layer} is of media type {_quote(descriptor.media_type)}, "
                                         f"not a tar layer")
        gzip = descriptor.media_type in media.LAYERS_GZIP
        self.written, self.cleared = set(), set()
        with opener as reader:
            stream = _TarBytes(reader, gzip, self.stats, self.limits.max_tar_bytes)
            try:
                self.entries(stream)
            except _Refused as err:
                raise self.error(str(err)) from None
            except (tarfile.TarError, EOFError, zlib.error, ValueError, _Corrupt) as err:
                _diagnose(reader)
                raise self.error(f"not a valid {'gzip-compressed ' if gzip else ''}tar stream: "
                                 f"{str(err) or type(err).__name__}") from None
            self.entry = None
            reader.finish()
        self.stats.layers += 1
        log.debug("layer applied", image=self.image, layer=self.layer, entries=self.stats.entries,
                  files=self.stats.files, written_bytes=self.stats.written_bytes)

    def entries(self, stream: _TarBytes) -> None:
        with _Archive.open(fileobj=stream, mode="r|", tarinfo=_Header, encoding="utf-8",
                           errors="surrogateescape") as archive:
            start = 0
            while True:
                self.previous, self.entry = self.entry, None
                member = archive.next()
                if member is None:
                    return
                # tarfile keeps every header it read; without them memory stays flat whatever the entry count
                archive.members.clear()  # type: ignore[attr-defined]  # set in TarFile.__init__, not in typeshed
                self.entry = member.name
                self.stats.entries += 1
                self.stats.header_bytes += max(0, member.offset_data - start - tarfile.BLOCKSIZE)
                start = archive.offset
                if self.stats.entries > self.limits.max_entries:
                    raise _Refused(f"the layers hold more than {self.limits.max_entries} entries")
                if self.stats.header_bytes > self.limits.max_header_bytes:
                    raise _Refused(f"the layers hold more than {self.limits.max_header_bytes} bytes of pax "
                                   f"and long-name headers")
                if len(archive.pax_headers) > MAX_GLOBAL_PAX_KEYS:
                    raise _Refused(f"global pax headers with more than {MAX_GLOBAL_PAX_KEYS} keys")
                self.member(archive, member)
                # the rest of its data, read and counted while errors still name it
                assert archive.fileobj is not None
                archive.fileobj.seek(archive.offset)

    def member(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        parts = _parts(member.name, self.limits)
        base = parts[-1] if parts else ""
        if base.startswith(WHITEOUT):
            self.whiteout(parts)
            return
        if not _kept(parts):
            self.stats.skipped += 1
            return
        if len(parts) > self.limits.max_depth:
            raise _Refused(f"is {len(parts)} directories deep, over the limit of {self.limits.max_depth}")
        if member.issparse():
            raise _Refused("is a sparse file, which cvo does not extract")
        if member.isdir():
            path = self.place(parts, directory=True)
            if path is not None:
                self.fs(os.mkdir, path, 0o755)
                self.count_file()
        elif member.isreg():
            self.write_file(archive, member, parts)
        elif member.issym():
            self.symlink(member, parts)
        elif member.islnk():
            self.hardlink(member, parts)
        else:
            raise _Refused(f"is {_kind(member)}, which cvo does not extract")

    # -- entries ---------------------------------------------------------------------------------------------

    def write_file(self, archive: tarfile.TarFile, member: tarfile.TarInfo, parts: tuple[str, ...]) -> None:
        cap = self.limits.max_written_bytes
        if member.size < 0:  # a pax size record may say anything
            raise _Refused(f"has a negative size ({member.size})")
        if self.stats.written_bytes + member.size > cap:
            raise _Refused(f"a file of {member.size} bytes would take the files written past the limit of "
                           f"{cap} bytes")
        source = archive.extractfile(member)
        if source is None:  # tarfile gives None only for links and directories
            raise _Refused("has no content")
        path = self.place(parts, directory=False)
        assert path is not None
        fd = self.fs(os.open, path, _FILE_FLAGS, 0o644)
        self.count_file()
        with os.fdopen(fd, "wb") as out:
            while chunk := source.read(CHUNK):
                self.stats.written_bytes += len(chunk)
                if self.stats.written_bytes > cap:
                    raise _Refused(f"the files written are over the limit of {cap} bytes")
                self.fs(out.write, chunk)

    def symlink(self, member: tarfile.TarInfo, parts: tuple[str, ...]) -> None:
        target = member.linkname
        if "\0" in target:
            raise _Refused("is a symlink whose target has a NUL byte")
        if len(os.fsencode(target)) > self.limits.max_path:
            raise _Refused(f"is a symlink whose target is over the limit of {self.limits.max_path} bytes")
        if target.startswith("/"):
            raise _Refused(f"is a symlink to the absolute path {_quote(target)}, outside the extracted tree")
        self.check_link(parts, target)  # as the tree is now; again once every layer is applied
        path = self.place(parts, directory=False)
        self.fs(os.symlink, target, path)
        self.count_file()
        self.links[parts] = self.layer

    def hardlink(self, member: tarfile.TarInfo, parts: tuple[str, ...]) -> None:
        try:
            source = _parts(member.linkname, self.limits)
        except _Refused as err:
            raise _Refused(f"is a hard link to {_quote(member.linkname)}, which {err}") from None
        if not _kept(source):
            raise _Refused(f"is a hard link to {_quote(member.linkname)}, outside release-manifests/ and "
                           f"manifests/")
        parent = self.existing_parent(source)
        st = self.lstat(parent / source[-1]) if parent is not None else None
        if st is None or not stat.S_ISREG(st.st_mode):
            raise _Refused(f"is a hard link to {_quote(member.linkname)}, which is not a regular file "
                           f"extracted before it")
        path = self.place(parts, directory=False)
        assert parent is not None and path is not None
        self.fs(os.link, parent / source[-1], path, follow_symlinks=False)
        self.count_file()

    # -- whiteouts -------------------------------------------------------------------------------------------

    def whiteout(self, parts: tuple[str, ...]) -> None:
        base = parts[-1]
        if base == OPAQUE:
            directory = parts[:-1]
            if directory and not _kept(directory):
                self.stats.skipped += 1
                return
            path = self.existing_dir(directory)
            if path is not None and parts not in self.cleared:  # once is all it takes, however often it comes
                self.cleared.add(parts)
                for child in sorted(os.listdir(path)):
                    self.remove_lower((*directory, child))
                self.stats.whiteouts += 1
            return
        if base.startswith(AUFS_META):
            self.stats.skipped += 1
            return
        name = base[len(WHITEOUT):]
        if name in ("", ".", ".."):
            raise _Refused("is a whiteout of no file")
        victim = (*parts[:-1], name)
        if not _kept(victim):
            self.stats.skipped += 1
            return
        if self.existing_parent(victim) is not None and victim not in self.cleared:
            self.cleared.add(victim)
            self.remove_lower(victim)
            self.stats.whiteouts += 1

    def remove_lower(self, parts: tuple[str, ...]) -> None:
        """Remove ``parts`` as the layers below left it: what the current layer wrote there stays (``layer.md``:
        whiteouts apply to lower layers only, wherever they come in the layer)."""
        todo = [parts]
        while todo:
            current = todo.pop()
            path = self.root.joinpath(*current)
            st = self.lstat(path)
            if st is None:
                continue
            if current not in self.written:
                self.remove(path, st)
            elif stat.S_ISDIR(st.st_mode):
                todo.extend((*current, child) for child in os.listdir(path))

    # -- the file system -------------------------------------------------------------------------------------

    def place(self, parts: tuple[str, ...], *, directory: bool) -> Path | None:
        """Make ``parts``' parents (real directories, never through a link) and clear the path for a new entry:
        what is there is removed unless both are directories (``layer.md``, "Changeset over existing files").
        ``None``: a directory is already there."""
        parent = self.existing_parent(parts, create=True)
        assert parent is not None
        path = parent / parts[-1]
        for i in range(1, len(parts) + 1):
            self.written.add(parts[:i])
        st = self.lstat(path)
        if st is not None:
            if directory and stat.S_ISDIR(st.st_mode):
                self.dirs.add(parts)
                return None
            self.remove(path, st)
        if directory:
            self.dirs.add(parts)
        return path

    def existing_parent(self, parts: tuple[str, ...], *, create: bool = False) -> Path | None:
        """The directory ``parts`` is in: each parent a real directory (made when ``create``), never a link;
        ``None`` when one is missing or a file (then nothing can be there)."""
        path = self.root
        for i, name in enumerate(parts[:-1], 1):
            path = path / name
            key = parts[:i]
            if key in self.dirs:
                continue
            st = self.lstat(path)
            if st is None and create:
                self.fs(os.mkdir, path, 0o755)
                self.count_file()
            elif st is None:
                return None
            elif stat.S_ISLNK(st.st_mode):
                raise _Refused(f"is under {_quote('/'.join(key))}, a symlink: cvo never writes through one")
            elif not stat.S_ISDIR(st.st_mode):
                if create:
                    raise _Refused(f"is under {_quote('/'.join(key))}, which is not a directory")
                return None
            self.dirs.add(key)
        return path

    def existing_dir(self, parts: tuple[str, ...]) -> Path | None:
        """``parts`` when it is a real directory (the parent of a child in it), else ``None``."""
        path = self.existing_parent((*parts, ""))
        return path if path is not None and (not parts or parts in self.dirs) else None

    def remove(self, path: Path, st: os.stat_result) -> None:
        if stat.S_ISDIR(st.st_mode):
            self.fs(shutil.rmtree, path)
            self.dirs.clear()
        else:
            self.fs(os.unlink, path)

    def lstat(self, path: Path) -> os.stat_result | None:
        try:
            return os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):  # a link's target under a file: nothing there
            return None
        except OSError as err:
            raise _Refused(f"cannot be extracted: {err.strerror}") from None

    def fs(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """A file-system call under the target; its OSError (a name too long for the file system, say) is
        a refusal of the entry."""
        try:
            return call(*args, **kwargs)
        except OSError as err:
            raise _Refused(f"cannot be extracted: {err.strerror or err}") from None

    def count_file(self) -> None:
        self.stats.files += 1
        if self.stats.files > self.limits.max_files:
            raise _Refused(f"the layers hold more than {self.limits.max_files} files under release-manifests/ "
                           f"and manifests/")

    # -- links -----------------------------------------------------------------------------------------------

    def check_link(self, parts: tuple[str, ...], target: str) -> None:
        """Refuse a symlink at ``parts`` to ``target`` unless it leads, as the kernel follows it through the
        tree as it is, into release-manifests/ or manifests/."""
        resolved: list[str] = list(parts[:-1])
        todo = deque(target.split("/"))
        follows = 0
        while todo:
            name = todo.popleft()
            self.link_steps += 1
            if self.link_steps > MAX_LINK_STEPS:
                raise _Refused(f"is a symlink: following the symlinks written took more than {MAX_LINK_STEPS} "
                               f"steps")
            if name in ("", "."):
                continue
            if name == "..":
                if not resolved:
                    raise _Refused(f"is a symlink to {_quote(target)}, which leads outside the image")
                resolved.pop()
                continue
            resolved.append(name)
            st = self.lstat(self.root.joinpath(*resolved))
            if st is not None and stat.S_ISLNK(st.st_mode):
                follows += 1
                if follows > MAX_SYMLINK_FOLLOWS:
                    raise _Refused(f"is a symlink to {_quote(target)}, through more than "
                                   f"{MAX_SYMLINK_FOLLOWS} links")
                further = os.readlink(self.root.joinpath(*resolved))
                if further.startswith("/"):
                    raise _Refused(f"is a symlink to {_quote(target)}, which leads outside the image")
                resolved.pop()
                todo.extendleft(reversed(further.split("/")))
        if not resolved or resolved[0] not in KEPT:
            raise _Refused(f"is a symlink to {_quote(target)}, outside release-manifests/ and manifests/")

    def check_links(self) -> None:
        """Every symlink still in the tree, now that every layer is applied: links written later may have
        made an earlier one lead elsewhere."""
        for parts, layer in sorted(self.links.items()):
            path = self.root.joinpath(*parts)
            st = self.lstat(path)
            if st is None or not stat.S_ISLNK(st.st_mode):
                continue
            self.layer, self.entry = layer, "/".join(parts)
            try:
                self.check_link(parts, os.readlink(path))
            except _Refused as err:
                raise self.error(f"{err} (once every layer is applied)") from None


def _diagnose(reader: VerifyingReader) -> None:
    """A layer that is not a valid tar stream is often a truncated blob: read on a little (at most 1 MiB) and,
    at its end, let ``finish()`` say what is wrong with it (its :class:`ImageError` propagates)."""
    for _ in range(16):
        if not reader.read(1 << 16):
            reader.finish()
            return


def extract_layers(image: str, layers: Iterable[tuple[Descriptor, AbstractContextManager[VerifyingReader]]],
                   target: Path, limits: ExtractLimits = ExtractLimits()) -> ExtractStats:
    """Apply ``layers`` (bottom first; each a descriptor and its blob to open) into ``target``, an empty
    directory the caller made, keeping :data:`KEPT` only.  Every blob is read to its end and checked against
    its digest.  :class:`ImageError` when a layer is refused; ``target`` is then to be thrown away."""
    if not target.is_dir() or any(target.iterdir()):
        raise ValueError(f"{target} is not an empty directory")
    extraction = _Extraction(image, target, limits)
    for descriptor, opener in layers:
        extraction.apply(descriptor, opener)
    extraction.check_links()
    return extraction.stats


def require_release(image: str, target: Path) -> None:
    """:class:`ImageError` unless ``target`` holds ``release-manifests/release-metadata`` (an image made by
    ``oc adm release new`` or ``cvo release new``)."""
    if not (target / "release-manifests" / "release-metadata").is_file():
        raise ImageError(image, "is not a release image: it has no release-manifests/release-metadata")
