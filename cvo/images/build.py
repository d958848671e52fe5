"""``cvo release new``: a release directory built into a release image as ``oc adm release new`` lays it out.

openshift/oc ``pkg/cli/admin/release/new.go``: the release image is the cluster-version-operator image
(whose layers hold ``/manifests``) with one layer appended holding ``release-manifests/``
(``writePayload``: ``image-references``, ``release-metadata`` and the operators' manifests); its config
gets ``created``, the label ``io.openshift.release`` (the ImageStream's name) and
``io.openshift.release.base-image-digest`` (the base image's manifest digest), its ``os``/``architecture``
default to linux/amd64 (``NewOptions.write``'s ``ConfigurationCallback``).  Here the base is a
``--base`` image's layers, or one layer holding the directory's ``manifests/`` (itself pushed as an
image, by digest, so the label names a real image).  Docker schema 2 media types for a registry, as
quay.io serves release images, OCI ones for an OCI layout; either on request.

The output is reproducible: entries sorted byte-wise, owner 0:0, mode 0644/0755, every mtime and
``created`` the image-references ``creationTimestamp`` (else ``$SOURCE_DATE_EPOCH``, else the epoch),
gzip without name or time.  The same directory gives the same digest on any machine.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import orjson

from cvo.images import media
from cvo.images.digest import CHUNK, sha256_of
from cvo.images.errors import ImageError, Problem
from cvo.images.manifest import (
    BASE_IMAGE_LABEL,
    RELEASE_LABEL,
    ImageConfig,
    ImageManifest,
    parse_config,
    parse_manifest,
)
from cvo.images.pull import MULTI, PullOptions, PullStats, fetch_image, open_repository, read_config
from cvo.images.reference import ImageRef, parse_image
from cvo.images.repository import Deadline, Descriptor, RawManifest, Repository
from cvo.log import get_logger
from cvo.payload.arch import go_arch
from cvo.payload.limits import MAX_RELEASE_BYTES, InputError, read_input
from cvo.payload.release import parse_image_references, parse_release_metadata

log = get_logger("cvo.images")

MANIFESTS = "manifests"
RELEASE_MANIFESTS = "release-manifests"
# oc adm release new's history comment (NewOptions.write)
RELEASE_COMMENT = "Release image for OpenShift"
BASE_COMMENT = "manifests/ of the release, standing in for the cluster-version-operator image"
GZIP_LEVEL = 6  # Go's gzip.DefaultCompression, what oc writes with
_DOCKER_TO_OCI = {media.DOCKER_LAYER_GZIP: media.OCI_LAYER_GZIP, media.OCI_LAYER_GZIP: media.OCI_LAYER_GZIP,
                  media.OCI_LAYER: media.OCI_LAYER}
_OCI_TO_DOCKER = {media.OCI_LAYER_GZIP: media.DOCKER_LAYER_GZIP, media.DOCKER_LAYER_GZIP: media.DOCKER_LAYER_GZIP}


@dataclass(frozen=True)
class BuiltRelease:
    """What ``cvo release new`` pushed: ``oc adm release new`` prints ``DIGEST NAME CREATED``."""

    ref: ImageRef  # where it went, with the tag it was pushed under
    digest: str
    pull_spec: str  # ref.by_digest(digest)
    name: str  # the io.openshift.release label: the image-references ImageStream's name
    created: str
    base_digest: str
    manifest: ImageManifest
    config: ImageConfig


@dataclass(frozen=True)
class _Layer:
    path: Path
    descriptor: Descriptor
    diff_id: str


class _Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...


class _HashingWriter(io.RawIOBase):
    """Forwards writes to ``out`` and hashes them."""

    def __init__(self, out: _Sink) -> None:
        self._out = out
        self.hash = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = bytes(data)
        self._out.write(view)
        self.hash.update(view)
        self.size += len(view)
        return len(view)


def _timestamp(created: datetime) -> str:
    return created.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _created(image: str, refs_doc: Any, explicit: str | None) -> datetime:
    def parse(text: str, where: str) -> datetime:
        try:
            value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ImageError(image, f"{where} {text!r} is not an RFC 3339 time", Problem.INVALID) from None
        return value if value.tzinfo else value.replace(tzinfo=UTC)

    if explicit:
        return parse(explicit, "created")
    metadata = refs_doc.get("metadata") if isinstance(refs_doc, dict) else None
    stamp = metadata.get("creationTimestamp") if isinstance(metadata, dict) else None
    if isinstance(stamp, str) and stamp:
        return parse(stamp, f"{RELEASE_MANIFESTS}/image-references metadata.creationTimestamp")
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if epoch:
        if not epoch.isdigit():
            raise ImageError(image, f"SOURCE_DATE_EPOCH {epoch[:40]!r} is not a number of seconds", Problem.INVALID)
        return datetime.fromtimestamp(int(epoch), UTC)
    return datetime.fromtimestamp(0, UTC)


def _files(image: str, root: Path, top: str) -> Iterator[tuple[str, bytes | None]]:
    """``(path, bytes)`` for every file under ``root/top`` (``None`` for a directory), sorted byte-wise;
    a symlink to a regular file is read as the file (as the loader does), anything else is refused."""
    total = 0
    stack = [top]
    while stack:
        rel = stack.pop()
        yield rel, None
        try:
            names = sorted(os.listdir(root / rel), key=os.fsencode)
        except OSError as err:
            raise ImageError(image, f"{root / rel}: {err.strerror}", Problem.INVALID) from None
        subdirs = []
        for name in names:
            path = f"{rel}/{name}"
            info = os.lstat(root / path)
            if stat.S_ISDIR(info.st_mode):
                subdirs.append(path)
                continue
            if stat.S_ISLNK(info.st_mode) and (root / path).is_dir():
                raise ImageError(image, f"{root / path}: a symbolic link to a directory cannot be built into "
                                        "an image", Problem.INVALID)
            try:
                data = read_input(root / path, str(root / path))
            except InputError as err:
                raise ImageError(image, str(err), Problem.INVALID) from None
            total += len(data)
            if total > MAX_RELEASE_BYTES:
                raise ImageError(image, f"{root}: the release is over the limit of {MAX_RELEASE_BYTES} bytes",
                                 Problem.INVALID)
            yield path, data
        stack.extend(reversed(subdirs))


def _write_layer(image: str, root: Path, tops: tuple[str, ...], created: datetime, path: Path,
                 media_type: str, opaque: bool = False) -> _Layer:
    """One gzipped tar of ``tops`` under ``root``, reproducibly; ``opaque`` adds an opaque whiteout to each
    top directory, so the layer replaces whatever a lower layer had there."""
    mtime = int(created.timestamp())
    with open(path, "wb") as file:
        compressed = _HashingWriter(file)
        with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, compresslevel=GZIP_LEVEL, mtime=0) as gz:
            plain = _HashingWriter(gz)
            with tarfile.open(fileobj=plain, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                for top in tops:
                    for name, data in _files(image, root, top):
                        info = tarfile.TarInfo(name)
                        info.mtime, info.uid, info.gid, info.uname, info.gname = mtime, 0, 0, "", ""
                        if data is None:
                            info.type, info.mode = tarfile.DIRTYPE, 0o755
                            tar.addfile(info)
                            if opaque and name == top:
                                whiteout = tarfile.TarInfo(f"{top}/.wh..wh..opq")
                                whiteout.mtime, whiteout.mode = mtime, 0o644
                                tar.addfile(whiteout, io.BytesIO(b""))
                        else:
                            info.mode, info.size = 0o644, len(data)
                            tar.addfile(info, io.BytesIO(data))
    digest = "sha256:" + compressed.hash.hexdigest()
    return _Layer(path, Descriptor(media_type, digest, compressed.size), "sha256:" + plain.hash.hexdigest())


def _obj(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _descriptor_json(d: Descriptor) -> dict[str, Any]:
    return {"mediaType": d.media_type, "size": d.size, "digest": d.digest}


def _manifest_bytes(oci: bool, config: Descriptor, layers: list[Descriptor]) -> RawManifest:
    kind = media.OCI_MANIFEST if oci else media.DOCKER_MANIFEST
    data = orjson.dumps({"schemaVersion": 2, "mediaType": kind, "config": _descriptor_json(config),
                         "layers": [_descriptor_json(d) for d in layers]})
    return RawManifest(data, kind, sha256_of(data))


def _put_bytes(repo: Repository, tmp: Path, data: bytes, media_type: str) -> Descriptor:
    descriptor = Descriptor(media_type, sha256_of(data), len(data))
    path = tmp / descriptor.digest.removeprefix("sha256:")
    path.write_bytes(data)
    repo.put_blob(path, descriptor)
    return descriptor


def _base_layers(image: str, base: str, options: PullOptions, target: Repository, tmp: Path, oci: bool
                 ) -> tuple[list[Descriptor], dict[str, Any], str]:
    """The layers of ``base`` copied into ``target`` (streamed through a temporary file each), its config
    document and the digest of its image manifest."""
    _, _, manifest, _, source = fetch_image(base, options, stats=PullStats())
    data = read_config(base, source, manifest)
    parse_config(base, data)
    config = _obj(orjson.loads(data))
    layers: list[Descriptor] = []
    convert = _DOCKER_TO_OCI if oci else _OCI_TO_DOCKER
    for i, layer in enumerate(manifest.layers):
        if layer.media_type not in convert:
            raise ImageError(image, f"base image {base}: layer {i} ({layer.digest}) is {layer.media_type}, which a "
                                    f"{'OCI' if oci else 'Docker schema 2'} manifest cannot hold", Problem.INVALID)
        out = Descriptor(convert[layer.media_type], layer.digest, layer.size)
        if not target.has_blob(layer.digest):
            path = tmp / f"base-{i}"
            with source.open_blob(layer) as reader, open(path, "wb") as file:
                while chunk := reader.read(CHUNK):
                    file.write(chunk)
                reader.finish()
            target.put_blob(path, out)
            path.unlink()
        layers.append(out)
    return layers, config, manifest.digest


def build_release(from_dir: Path, to: str, options: PullOptions | None = None, *, base: str | None = None,
                  oci: bool | None = None, created: str | None = None) -> BuiltRelease:
    """Build the release directory ``from_dir`` into an image and push it to ``to`` (a registry pull spec
    or ``oci:DIR[:TAG]``; the tag defaults to the release's name, as ``oc adm release new`` does).

    ``oci``: OCI media types, else Docker schema 2; by default Docker for a registry (as quay.io serves
    releases) and OCI for a layout (containers/image before 5.35 finds only OCI manifests by tag in a
    layout, and converts what it copies into one)."""
    options = options or PullOptions()
    ref = parse_image(to)
    if oci is None:
        oci = ref.transport == "oci"
    if ref.digest:
        raise ImageError(to, "the image to build may only name a repository or a tag, not a digest",
                         Problem.INVALID)
    root = Path(from_dir)
    meta_path, refs_path = root / RELEASE_MANIFESTS / "release-metadata", root / RELEASE_MANIFESTS / "image-references"
    try:
        metadata = parse_release_metadata(read_input(meta_path, str(meta_path)), str(meta_path))
        refs_bytes = read_input(refs_path, str(refs_path))
        refs = parse_image_references(refs_bytes, str(refs_path))
    except InputError as err:
        raise ImageError(to, str(err), Problem.INVALID) from None
    if base is None and not (root / MANIFESTS).is_dir():
        raise ImageError(to, f"{root / MANIFESTS}: no such directory (the cluster-version-operator's manifests; "
                             "or build on a base image that holds them)", Problem.INVALID)
    try:
        refs_doc = orjson.loads(refs_bytes)
    except orjson.JSONDecodeError:
        refs_doc = None
    when = _created(to, refs_doc, created)
    ref = ImageRef(ref.transport, ref.registry, ref.repository, ref.tag or refs.name)
    arch = go_arch() if options.architecture == MULTI else options.architecture
    target = open_repository(ref, options, Deadline(options.timeout))
    layer_type = media.OCI_LAYER_GZIP if oci else media.DOCKER_LAYER_GZIP
    config_type = media.OCI_CONFIG if oci else media.DOCKER_CONFIG
    stamp = _timestamp(when)
    with tempfile.TemporaryDirectory(prefix="cvo-build-") as tmp_name:
        tmp = Path(tmp_name)
        if base is not None:
            layers, config, base_digest = _base_layers(to, base, options, target, tmp, oci)
            if not config.get("os"):
                config["os"] = "linux"
            if not config.get("architecture"):
                config["architecture"] = "amd64"
            for key in ("container", "parent", "container_config"):
                config.pop(key, None)
            diff_ids = _list(_obj(config.get("rootfs")).get("diff_ids"))
            history = _list(config.get("history"))
            inner = _obj(config.get("config"))
        else:
            base_layer = _write_layer(to, root, (MANIFESTS,), when, tmp / "base.tar.gz", layer_type)
            target.put_blob(base_layer.path, base_layer.descriptor)
            base_config = {"architecture": arch, "config": {}, "created": stamp,
                           "history": [{"created": stamp, "comment": BASE_COMMENT}], "os": "linux",
                           "rootfs": {"type": "layers", "diff_ids": [base_layer.diff_id]}}
            base_config_desc = _put_bytes(target, tmp, orjson.dumps(base_config, option=orjson.OPT_SORT_KEYS),
                                          config_type)
            base_manifest = _manifest_bytes(oci, base_config_desc, [base_layer.descriptor])
            target.put_manifest(base_manifest.digest, base_manifest)
            layers, base_digest = [base_layer.descriptor], base_manifest.digest
            config, diff_ids, history, inner = dict(base_config), [base_layer.diff_id], list(base_config["history"]), {}
        release_layer = _write_layer(to, root, (RELEASE_MANIFESTS,), when, tmp / "release.tar.gz", layer_type,
                                     opaque=base is not None)
        target.put_blob(release_layer.path, release_layer.descriptor)
        config["created"] = stamp
        config["config"] = {**inner, "Labels": {RELEASE_LABEL: refs.name, BASE_IMAGE_LABEL: base_digest}}
        config["rootfs"] = {"type": "layers", "diff_ids": [*diff_ids, release_layer.diff_id]}
        config["history"] = [*history, {"created": stamp, "comment": RELEASE_COMMENT}]
        config_desc = _put_bytes(target, tmp, orjson.dumps(config, option=orjson.OPT_SORT_KEYS), config_type)
        raw = _manifest_bytes(oci, config_desc, [*layers, release_layer.descriptor])
        target.put_manifest(ref.tag, raw)
        config_bytes = orjson.dumps(config, option=orjson.OPT_SORT_KEYS)
    manifest = parse_manifest(to, raw)
    assert isinstance(manifest, ImageManifest)
    log.info("built release image", image=str(ref), digest=raw.digest, name=refs.name, version=metadata.version,
             layers=len(manifest.layers))
    return BuiltRelease(ref, raw.digest, str(ref.by_digest(raw.digest)), refs.name, stamp, base_digest, manifest,
                        parse_config(to, config_bytes))

