"""An OCI image layout directory as a :class:`~cvo.images.repository.Repository`, read and written.

The layout is image-spec ``image-layout.md``: ``oci-layout`` (``{"imageLayoutVersion": "1.0.0"}``),
``index.json`` (an OCI index whose entries carry ``org.opencontainers.image.ref.name``) and
``blobs/sha256/HEX``.  Names follow containers/image ``oci/layout``: ``getManifestDescriptor`` picks the
entry whose ref name is the tag, or the only entry when no tag is given; ``ociImageDestination.addManifest``
moves a tag to the new entry and replaces an unnamed entry of the same digest.  Unlike containers/image,
every write is atomic (a temporary file renamed into place, ``index.json`` rewritten under a lock), and
reads go through directory descriptors opened without following symlinks, so a layout whose ``blobs``
is a symlink, or whose blob is a FIFO or a link elsewhere, is refused rather than followed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from cvo.images import media
from cvo.images.digest import CHUNK, VerifyingReader, check_digest, sha256_of
from cvo.images.errors import ImageError, Problem
from cvo.images.manifest import MAX_MANIFEST_BYTES, ImageIndex, parse_manifest
from cvo.images.reference import OCI, SHA256
from cvo.images.repository import Descriptor, RawManifest

LAYOUT_FILE = "oci-layout"
INDEX_FILE = "index.json"
BLOBS = "blobs"
LAYOUT_VERSION = "1.0.0"
REF_NAME = "org.opencontainers.image.ref.name"
_TMP = ".cvo-tmp-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class IndexEntry:
    """One ``index.json`` entry: the descriptor and its ref name (``""`` when unnamed)."""

    descriptor: Descriptor
    name: str


class OciLayout:
    """The OCI image layout at ``directory``; created by the first write, read-only until then."""

    def __init__(self, directory: Path, image: str | None = None) -> None:
        self.directory = Path(directory)
        self._image = image or f"{OCI}{directory}"

    @property
    def image(self) -> str:
        return self._image

    def __repr__(self) -> str:
        return f"OciLayout({str(self.directory)!r})"

    # -- reading -------------------------------------------------------------------------------------

    def entries(self) -> tuple[IndexEntry, ...]:
        """The entries of ``index.json``, in order."""
        index = self._read_index()
        return tuple(IndexEntry(d, d.annotations.get(REF_NAME, "")) for d in index.manifests)

    def get_manifest(self, reference: str) -> RawManifest:
        """The manifest named by a ``sha256:`` digest, a tag (a ref name), or ``""`` (the only entry)."""
        if SHA256.fullmatch(reference):
            data = self._read_small_blob(reference, MAX_MANIFEST_BYTES, "manifest")
            return RawManifest(data, self._listed_media_type(reference) or _declared_media_type(data), reference)
        entry = self._select(reference)
        if entry.descriptor.media_type not in media.ACCEPT:
            raise ImageError(self._ref(reference), f"index.json entry {entry.descriptor.digest} is of unsupported "
                                                   f"media type {entry.descriptor.media_type}")
        data = self._read_small_blob(entry.descriptor.digest, MAX_MANIFEST_BYTES, "manifest", entry.descriptor.size)
        return RawManifest(data, entry.descriptor.media_type, entry.descriptor.digest)

    @contextlib.contextmanager
    def open_blob(self, descriptor: Descriptor) -> Iterator[VerifyingReader]:
        digest = check_digest(self.image, descriptor.digest)
        with self._open_blob_file(digest) as file:
            yield VerifyingReader(file, self.image, digest, descriptor.size)

    def has_blob(self, digest: str) -> bool:
        check_digest(self.image, digest)
        try:
            with self._blob_dir() as fd:
                info = os.stat(digest.removeprefix("sha256:"), dir_fd=fd, follow_symlinks=False)
        except ImageError as err:
            if err.problem is Problem.NOT_FOUND:
                return False
            raise
        except FileNotFoundError:
            return False
        except OSError as err:
            raise ImageError(self.image, f"cannot read blob {digest}: {err.strerror}", Problem.UNAVAILABLE) from None
        return stat.S_ISREG(info.st_mode)

    def _listed_media_type(self, digest: str) -> str:
        """The media type ``index.json`` gives ``digest``; ``""`` when it is not listed (an index's child)
        or there is no ``index.json`` (a layout written by digest only)."""
        try:
            entries = self.entries()
        except ImageError as err:
            if err.problem is Problem.NOT_FOUND:
                return ""
            raise
        return next((e.descriptor.media_type for e in entries if e.descriptor.digest == digest), "")

    def _ref(self, reference: str) -> str:
        return f"{self.image}:{reference}" if reference and not SHA256.fullmatch(reference) else self.image

    def _select(self, tag: str) -> IndexEntry:
        entries = self.entries()
        if tag:
            for entry in entries:
                if entry.name == tag:
                    return entry
            raise ImageError(self._ref(tag), f"no image tagged {tag!r} in {INDEX_FILE}", Problem.NOT_FOUND)
        if not entries:
            raise ImageError(self.image, f"{INDEX_FILE} holds no image", Problem.NOT_FOUND)
        if len(entries) > 1:
            names = sorted(e.name for e in entries if e.name)
            raise ImageError(self.image, f"{INDEX_FILE} holds {len(entries)} images: name one as oci:DIR:TAG"
                             + (f" (tags: {', '.join(names)})" if names else ""), Problem.INVALID)
        return entries[0]

    def _read_index(self) -> ImageIndex:
        doc_bytes = self._read_top_file(INDEX_FILE, MAX_MANIFEST_BYTES)
        self._check_layout_file()
        try:
            parsed = parse_manifest(self.image, RawManifest(doc_bytes, "", sha256_of(doc_bytes)))
        except ImageError as err:
            message = err.message.removeprefix("manifest ")
            raise ImageError(self.image, f"{INDEX_FILE} {message}" if message != err.message
                             else f"{INDEX_FILE}: {message}") from None
        if not isinstance(parsed, ImageIndex):
            raise ImageError(self.image, f"{INDEX_FILE} is not an image index (it is an image manifest)")
        return parsed

    def _check_layout_file(self) -> None:
        data = self._read_top_file(LAYOUT_FILE, 4096)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError:
            doc = None
        if not isinstance(doc, dict) or not isinstance(doc.get("imageLayoutVersion"), str):
            raise ImageError(self.image, f"{LAYOUT_FILE} is not a JSON object with an imageLayoutVersion")

    @contextlib.contextmanager
    def _root(self) -> Iterator[int]:
        try:
            fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise ImageError(self.image, "no such directory", Problem.NOT_FOUND) from None
        except OSError as err:
            raise ImageError(self.image, f"cannot open the directory: {err.strerror}", Problem.UNAVAILABLE) from None
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _blob_dir(self, create: bool = False) -> Iterator[int]:
        """``blobs/sha256`` as a descriptor, each step opened without following a symlink."""
        with self._root() as root:
            fd = root
            opened: list[int] = []
            try:
                for name, where in ((BLOBS, BLOBS), ("sha256", f"{BLOBS}/sha256")):
                    if create:
                        with contextlib.suppress(FileExistsError):
                            os.mkdir(name, 0o755, dir_fd=fd)
                    try:
                        fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except FileNotFoundError:
                        raise ImageError(self.image, f"no {where} directory", Problem.NOT_FOUND) from None
                    except OSError as err:
                        if err.errno in (errno.ELOOP, errno.ENOTDIR):
                            raise ImageError(self.image, f"{where} is not a directory (a symlink or a file)") from None
                        raise ImageError(self.image, f"cannot open {where}: {err.strerror}",
                                         Problem.UNAVAILABLE) from None
                    opened.append(fd)
                yield fd
            finally:
                for each in opened:
                    os.close(each)

    @contextlib.contextmanager
    def _open_blob_file(self, digest: str) -> Iterator[IO[bytes]]:
        with self._blob_dir() as blobs:
            try:
                fd = os.open(digest.removeprefix("sha256:"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                             | os.O_CLOEXEC, dir_fd=blobs)
            except FileNotFoundError:
                raise ImageError(self.image, f"blob {digest} is missing from {BLOBS}/sha256",
                                 Problem.NOT_FOUND) from None
            except OSError as err:
                if err.errno == errno.ELOOP:
                    raise ImageError(self.image, f"blob {digest} is a symlink, not a file") from None
                raise ImageError(self.image, f"cannot open blob {digest}: {err.strerror}",
                                 Problem.UNAVAILABLE) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ImageError(self.image, f"blob {digest} is not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as file:
            yield file

    def _read_small_blob(self, digest: str, limit: int, what: str, size: int | None = None) -> bytes:
        with self._open_blob_file(digest) as file:
            reader = VerifyingReader(file, self.image, digest, size, what)
            data = reader.read(limit + 1)
            if len(data) > limit:
                raise ImageError(self.image, f"{what} {digest} is over the limit of {limit} bytes")
            reader.finish()
        return data

    def _read_top_file(self, name: str, limit: int) -> bytes:
        with self._root() as root:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=root)
            except FileNotFoundError:
                raise ImageError(self.image, f"not an OCI image layout: no {name}", Problem.NOT_FOUND) from None
            except OSError as err:
                if err.errno == errno.ELOOP:
                    raise ImageError(self.image, f"{name} is a symlink, not a file") from None
                raise ImageError(self.image, f"cannot open {name}: {err.strerror}", Problem.UNAVAILABLE) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ImageError(self.image, f"{name} is not a regular file")
            os.set_blocking(fd, True)
            with os.fdopen(fd, "rb", closefd=False) as file:
                data = file.read(limit + 1)
        finally:
            os.close(fd)
        if len(data) > limit:
            raise ImageError(self.image, f"{name} is over the limit of {limit} bytes")
        return data

    # -- writing -------------------------------------------------------------------------------------

    def put_blob(self, path: Path, descriptor: Descriptor) -> None:
        """Copy ``path`` into ``blobs/sha256`` (checked against ``descriptor``), unless already there."""
        digest = check_digest(self.image, descriptor.digest)
        if self.has_blob(digest):
            return
        with open(path, "rb") as source:
            reader = VerifyingReader(source, self.image, digest, descriptor.size)
            self._write_blob(digest, reader)

    def put_manifest(self, reference: str, manifest: RawManifest) -> None:
        """Store ``manifest``'s blob and name it in ``index.json``: under the tag ``reference``, unnamed
        for ``""``; a ``sha256:`` reference stores only the blob (an index's child, as containers/image
        ``PutManifest`` with an instance digest does)."""
        if sha256_of(manifest.data) != manifest.digest:
            raise ImageError(self.image, f"manifest {manifest.digest} does not match its content")
        by_digest = bool(SHA256.fullmatch(reference))
        if by_digest and reference != manifest.digest:
            raise ImageError(self.image, f"manifest {manifest.digest} cannot be stored as {reference}")
        if not self.has_blob(manifest.digest):
            self._write_blob(manifest.digest, VerifyingReader(io.BytesIO(manifest.data), self.image,
                                                              manifest.digest, len(manifest.data), "manifest"))
        if by_digest:
            return
        entry: dict[str, Any] = {"mediaType": manifest.media_type, "digest": manifest.digest,
                                 "size": len(manifest.data)}
        if reference:
            entry["annotations"] = {REF_NAME: reference}
        with self._locked() as root:
            doc = self._index_document(root)
            doc["manifests"] = _add_entry(doc["manifests"], entry, reference)
            self._write_top_file(root, INDEX_FILE, orjson.dumps(doc))

    def _index_document(self, root: int) -> dict[str, Any]:
        """``index.json`` as a mutable document (unknown fields kept); a new index when there is none."""
        try:
            os.stat(INDEX_FILE, dir_fd=root, follow_symlinks=False)
        except FileNotFoundError:
            return {"schemaVersion": 2, "mediaType": media.OCI_INDEX, "manifests": []}
        self._read_index()  # checked first: a broken index.json is refused, never overwritten
        doc: dict[str, Any] = orjson.loads(self._read_top_file(INDEX_FILE, MAX_MANIFEST_BYTES))
        return doc

    @contextlib.contextmanager
    def _locked(self) -> Iterator[int]:
        """The layout's directory, created with its ``oci-layout`` file, under an exclusive ``flock``."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ImageError(self.image, f"cannot create the directory: {err.strerror}",
                             Problem.UNAVAILABLE) from None
        with self._root() as root:
            fcntl.flock(root, fcntl.LOCK_EX)
            try:
                try:
                    os.stat(LAYOUT_FILE, dir_fd=root, follow_symlinks=False)
                except FileNotFoundError:
                    self._write_top_file(root, LAYOUT_FILE, orjson.dumps({"imageLayoutVersion": LAYOUT_VERSION}))
                yield root
            finally:
                fcntl.flock(root, fcntl.LOCK_UN)

    def _write_top_file(self, root: int, name: str, data: bytes) -> None:
        tmp = f"{_TMP}{name}-{os.getpid()}-{os.urandom(4).hex()}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                         dir_fd=root)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, name, src_dir_fd=root, dst_dir_fd=root)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=root)
            raise ImageError(self.image, f"cannot write {name}: {err.strerror}", Problem.UNAVAILABLE) from None

    def _write_blob(self, digest: str, reader: VerifyingReader) -> None:
        with self._locked(), self._blob_dir(create=True) as blobs:
            tmp = f"{_TMP}{os.getpid()}-{os.urandom(4).hex()}"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                             dir_fd=blobs)
                with os.fdopen(fd, "wb") as out:
                    while chunk := reader.read(CHUNK):
                        out.write(chunk)
                    reader.finish()
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, digest.removeprefix("sha256:"), src_dir_fd=blobs, dst_dir_fd=blobs)
            except OSError as err:
                raise ImageError(self.image, f"cannot write blob {digest}: {err.strerror}",
                                 Problem.UNAVAILABLE) from None
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=blobs)


def _add_entry(entries: list[Any], entry: dict[str, Any], name: str) -> list[Any]:
    """containers/image ``oci/layout`` ``addManifest``: the name moves to the new entry; an unnamed entry of
    the same digest is replaced; otherwise the entry is appended."""
    out = [dict(e) if isinstance(e, dict) else e for e in entries]
    if name:
        for each in out:
            notes = each.get("annotations") if isinstance(each, dict) else None
            if isinstance(notes, dict) and notes.get(REF_NAME) == name:
                each["annotations"] = {k: v for k, v in notes.items() if k != REF_NAME}
                if not each["annotations"]:
                    del each["annotations"]
                break
    for i, each in enumerate(out):
        if (isinstance(each, dict) and each.get("digest") == entry["digest"]
                and not (each.get("annotations") or {}).get(REF_NAME)):
            out[i] = entry
            return out
    out.append(entry)
    return out


def _declared_media_type(data: bytes) -> str:
    """The ``mediaType`` a manifest declares (``""`` when none: the parser then tells by its fields)."""
    with contextlib.suppress(orjson.JSONDecodeError):
        doc = orjson.loads(data)
        if isinstance(doc, dict) and isinstance(doc.get("mediaType"), str):
            return str(doc["mediaType"])
    return ""


def blob_digest(path: Path) -> tuple[str, int]:
    """The sha256 digest and size of the file ``path``."""
    hasher = hashlib.sha256()
    size = 0
    with open(path, "rb") as file:
        while chunk := file.read(CHUNK):
            hasher.update(chunk)
            size += len(chunk)
    return "sha256:" + hasher.hexdigest(), size
