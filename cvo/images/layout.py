"""An OCI image layout directory as a :class:`~cvo.images.repository.Repository` (``oci:DIR[:TAG]``).

The layout is the image-spec's ``image-layout.md``: ``oci-layout`` (``{"imageLayoutVersion": "1.0.0"}``),
``index.json`` (an index whose entries name their tag in ``org.opencontainers.image.ref.name``) and
``blobs/sha256/HEX``.  A tag picks its entry; no tag, the only entry (containers/image ``oci/layout``
``ociReference.getManifestDescriptor``).  Writes are atomic: a blob is written to a temporary file and
renamed, ``index.json`` is rewritten the same way, so a reader never sees half a blob or half an index.
A layout read from elsewhere is hostile input: a ``blobs`` that is a symlink, a blob that is not a regular
file, an ``index.json`` that is not an index are refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from cvo.images import media
from cvo.images.digest import VerifyingReader, check_digest, sha256_of
from cvo.images.errors import ImageError, Problem
from cvo.images.manifest import MAX_MANIFEST_BYTES, ImageIndex, parse_manifest
from cvo.images.repository import Descriptor, RawManifest

REF_NAME = "org.opencontainers.image.ref.name"
LAYOUT_VERSION = {"imageLayoutVersion": "1.0.0"}


class LayoutRepository:
    """``oci:DIR``: read and written in place."""

    def __init__(self, directory: Path, image: str) -> None:
        self.directory = directory
        self._image = image

    @property
    def image(self) -> str:
        return self._image

    # --- reading ----------------------------------------------------------------------------------

    def _blob_path(self, digest: str) -> Path:
        check_digest(self._image, digest)
        blobs = self.directory / "blobs"
        if blobs.is_symlink() or (blobs / "sha256").is_symlink():
            raise ImageError(self._image, "blobs/ is a symbolic link")
        return blobs / "sha256" / digest.split(":", 1)[1]

    def _read_small(self, path: Path, what: str, limit: int) -> bytes:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise ImageError(self._image, f"{what} not found", Problem.NOT_FOUND) from None
        except OSError as err:
            raise ImageError(self._image, f"{what}: {err.strerror}", Problem.NOT_FOUND) from None
        with os.fdopen(fd, "rb") as f:
            if not _is_regular(f.fileno()):
                raise ImageError(self._image, f"{what} is not a regular file")
            data = f.read(limit + 1)
        if len(data) > limit:
            raise ImageError(self._image, f"{what} is over {limit} bytes")
        return data

    def index(self) -> list[Descriptor]:
        """The entries of ``index.json``."""
        if not self.directory.is_dir():
            raise ImageError(self._image, f"{self.directory}: no such OCI layout directory", Problem.NOT_FOUND)
        data = self._read_small(self.directory / "index.json", "index.json", MAX_MANIFEST_BYTES)
        parsed = parse_manifest(self._image, RawManifest(data, media.OCI_INDEX, sha256_of(data)))
        if not isinstance(parsed, ImageIndex):
            raise ImageError(self._image, "index.json is not an image index")
        return list(parsed.manifests)

    def find(self, reference: str) -> Descriptor:
        """The entry of ``index.json`` for a tag (``""``: the only one) or a digest."""
        entries = self.index()
        if reference.startswith("sha256:"):
            found = [e for e in entries if e.digest == reference]
            if found:
                return found[0]
            if self._blob_path(reference).is_file():  # a manifest by digest need not be in the index
                data = self._read_small(self._blob_path(reference), f"manifest {reference}", MAX_MANIFEST_BYTES)
                return Descriptor(_declared_type(data), reference, len(data))
            raise ImageError(self._image, f"no manifest {reference}", Problem.NOT_FOUND)
        if not reference:
            if len(entries) != 1:
                tags = sorted(e.annotations.get(REF_NAME, "") for e in entries)
                raise ImageError(self._image, f"the layout holds {len(entries)} images; name one of them "
                                              f"(oci:DIR:TAG; tags: {', '.join(t for t in tags if t) or 'none'})",
                                 Problem.NOT_FOUND)
            return entries[0]
        found = [e for e in entries if e.annotations.get(REF_NAME) == reference]
        if not found:
            raise ImageError(self._image, f"no image tagged {reference!r} in the layout", Problem.NOT_FOUND)
        return found[-1]

    def get_manifest(self, reference: str) -> RawManifest:
        entry = self.find(reference)
        data = self._read_small(self._blob_path(entry.digest), f"manifest {entry.digest}", MAX_MANIFEST_BYTES)
        actual = sha256_of(data)
        if actual != entry.digest:
            raise ImageError(self._image, f"manifest {entry.digest} does not match its content ({actual})")
        return RawManifest(data, entry.media_type or _declared_type(data), actual)

    @contextlib.contextmanager
    def open_blob(self, descriptor: Descriptor) -> Iterator[VerifyingReader]:
        path = self._blob_path(descriptor.digest)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            raise ImageError(self._image, f"blob {descriptor.digest} not found", Problem.NOT_FOUND) from None
        with os.fdopen(fd, "rb") as f:
            if not _is_regular(f.fileno()):
                raise ImageError(self._image, f"blob {descriptor.digest} is not a regular file")
            yield VerifyingReader(f, self._image, descriptor.digest, descriptor.size)

    def has_blob(self, digest: str) -> bool:
        path = self._blob_path(digest)
        return path.is_file() and not path.is_symlink()

    # --- writing ----------------------------------------------------------------------------------

    def _init(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        layout = self.directory / "oci-layout"
        if not layout.exists():
            _atomic_write(layout, orjson.dumps(LAYOUT_VERSION))
        (self.directory / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        if not (self.directory / "index.json").exists():
            _atomic_write(self.directory / "index.json",
                          orjson.dumps({"schemaVersion": 2, "mediaType": media.OCI_INDEX, "manifests": []}))

    def put_blob(self, path: Path, descriptor: Descriptor) -> None:
        self._init()
        if self.has_blob(descriptor.digest):
            return
        target = self._blob_path(descriptor.digest)
        digest = hashlib.sha256()
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out, open(path, "rb") as source:
                while chunk := source.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            if "sha256:" + digest.hexdigest() != descriptor.digest:
                raise ImageError(self._image, f"blob {descriptor.digest}: {path} does not match its digest")
            os.replace(temp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)

    def put_manifest(self, reference: str, manifest: RawManifest) -> None:
        self._init()
        target = self._blob_path(manifest.digest)
        if not target.exists():
            _atomic_write(target, manifest.data)
        entries = self.index()
        entry: dict[str, Any] = {"mediaType": manifest.media_type, "digest": manifest.digest,
                                 "size": len(manifest.data)}
        kept = []
        for e in entries:
            tagged = e.annotations.get(REF_NAME)
            if reference and not reference.startswith("sha256:") and tagged == reference:
                continue  # the tag moves to the new manifest
            if e.digest == manifest.digest and not tagged and (not reference or reference.startswith("sha256:")):
                continue
            kept.append(_entry(e))
        if reference and not reference.startswith("sha256:"):
            entry["annotations"] = {REF_NAME: reference}
        kept.append(entry)
        _atomic_write(self.directory / "index.json",
                      orjson.dumps({"schemaVersion": 2, "mediaType": media.OCI_INDEX, "manifests": kept}))


def _entry(d: Descriptor) -> dict[str, Any]:
    out: dict[str, Any] = {"mediaType": d.media_type, "digest": d.digest, "size": d.size}
    if d.platform is not None:
        out["platform"] = {k: v for k, v in (("os", d.platform.os), ("architecture", d.platform.architecture),
                                             ("variant", d.platform.variant)) if v}
    if d.annotations:
        out["annotations"] = dict(d.annotations)
    return out


def _declared_type(data: bytes) -> str:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return ""
    value = doc.get("mediaType") if isinstance(doc, dict) else None
    return value if isinstance(value, str) else ""


def _is_regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


def _atomic_write(path: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)

