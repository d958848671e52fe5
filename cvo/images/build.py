"""Building a release image from a release directory, laid out as ``oc adm release new`` lays it out.

openshift/oc ``pkg/cli/admin/release/new.go`` (``Run``, ``writeNestedTarHeader`` and the ``release-manifests``
layer it appends): the image is the cluster-version-operator image, whose layers hold ``/manifests``, with
one more layer holding ``release-manifests/`` (``release-metadata``, ``image-references`` and the
components' manifests); its config carries ``io.openshift.release=<version>`` and
``io.openshift.release.base-image-digest``.  Without ``base`` cvo makes the base layer from the directory's
``manifests/``.  Layers are deterministic (entries sorted, owner root, modes 0644/0755, mtime 0, gzip
without name or time), so the same directory gives the same layers; ``created`` is
``$SOURCE_DATE_EPOCH`` when set, else now.  Docker schema 2 media types by default, as quay.io serves
release images, OCI ones in an OCI layout (containers/image ``oci/layout`` reads only those there).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from cvo.images import media
from cvo.images.digest import sha256_of
from cvo.images.errors import ImageError, Problem
from cvo.images.manifest import (
    BASE_IMAGE_LABEL,
    RELEASE_LABEL,
    ImageIndex,
    ImageManifest,
    parse_config,
    parse_manifest,
)
from cvo.images.reference import parse_image
from cvo.images.repository import Descriptor, RawManifest
from cvo.payload.limits import InputError, read_input
from cvo.payload.release import parse_release_metadata

METADATA = Path("release-manifests") / "release-metadata"
FORMATS = ("docker", "oci")


@dataclass(frozen=True)
class Built:
    """What was pushed."""

    image: str  # as asked (REGISTRY/REPO:TAG, oci:DIR:TAG)
    digest: str  # the manifest's digest
    pull_spec: str  # the image by digest
    version: str
    layers: int


def _created() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    moment = datetime.fromtimestamp(int(epoch), UTC) if epoch.isdigit() else datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _layer(source: Path, top: str, out_dir: Path) -> tuple[Path, str, str, int]:
    """``source/top`` as a gzipped tar at ``top/…``: (file, digest, diff id, size)."""
    raw = tempfile.NamedTemporaryFile(dir=out_dir, delete=False, suffix=".tar")  # noqa: SIM115
    with raw, tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        paths = [source / top, *sorted((source / top).rglob("*"), key=lambda p: p.relative_to(source).as_posix())]
        for path in paths:
            if path.is_symlink():
                continue  # a release directory's files are read through; links are not carried
            name = path.relative_to(source).as_posix()
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif path.is_file():
                info.mode, info.size = 0o644, path.stat().st_size
                with open(path, "rb") as f:
                    tar.addfile(info, f)
    diff_id = _sha256_file(Path(raw.name))
    gz_path = Path(raw.name + ".gz")
    with open(raw.name, "rb") as src, open(gz_path, "wb") as dst, \
            gzip.GzipFile(filename="", mode="wb", fileobj=dst, mtime=0) as gz:
        shutil.copyfileobj(src, gz, 1 << 20)
    os.unlink(raw.name)
    return gz_path, _sha256_file(gz_path), diff_id, gz_path.stat().st_size


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def build_release(from_dir: Path, to: str, options: Any, *, base: str | None = None,
                  image_format: str = "") -> Built:
    """Build the release image of ``from_dir`` and push it to ``to`` (``options``: a
    :class:`~cvo.images.pull.PullOptions` for the registries involved).  ``image_format``: ``docker`` (the
    default for a registry) or ``oci`` (the default, and the only kind containers/image accepts, in an OCI
    layout)."""
    from cvo.images.pull import open_repository, pick

    image_format = image_format or ("oci" if to.startswith("oci:") else "docker")
    if image_format not in FORMATS:
        raise ImageError(to, f"unknown image format {image_format!r} (docker or oci)", Problem.INVALID)
    ref = parse_image(to)
    if ref.digest:
        raise ImageError(to, "push to a tag, not a digest (the digest is the result)", Problem.INVALID)
    try:
        metadata = parse_release_metadata(read_input(from_dir / METADATA, str(METADATA)), str(from_dir / METADATA))
    except (InputError, OSError, ValueError) as err:
        raise ImageError(to, f"{from_dir} is not a release directory: {err}", Problem.INVALID) from None
    docker = image_format == "docker"
    architecture = (metadata.architecture if metadata.architecture not in ("", "multi", "Multi")
                    else options.architecture if options.architecture != "multi" else "amd64")
    layer_type = media.DOCKER_LAYER_GZIP if docker else media.OCI_LAYER_GZIP
    deadline = options.deadline()
    target = open_repository(ref, options, deadline)
    base_layers: list[dict[str, Any]] = []
    diff_ids: list[str] = []
    base_digest = ""
    with tempfile.TemporaryDirectory(prefix="cvo-release-new-") as scratch:
        work = Path(scratch)
        if base is not None:
            base_ref = parse_image(base)
            source = open_repository(base_ref, options, deadline)
            top = source.get_manifest(base_ref.reference)
            base_digest = top.digest
            parsed = parse_manifest(base, top)
            if isinstance(parsed, ImageIndex):
                parsed = parse_manifest(base, source.get_manifest(pick(base, parsed, options.architecture).digest))
            assert isinstance(parsed, ImageManifest)
            with source.open_blob(parsed.config) as reader:
                base_config = orjson.loads(reader.read())
                reader.finish()
            parse_config(base, orjson.dumps(base_config))
            diff_ids = [d for d in (base_config.get("rootfs") or {}).get("diff_ids") or [] if isinstance(d, str)]
            for layer in parsed.layers:
                blob = work / layer.digest.replace(":", "-")
                with source.open_blob(layer) as reader, open(blob, "wb") as out:
                    while chunk := reader.read(1 << 20):
                        out.write(chunk)
                    reader.finish()
                target.put_blob(blob, layer)
                base_layers.append({"mediaType": layer.media_type, "digest": layer.digest, "size": layer.size})
        elif (from_dir / "manifests").is_dir():
            path, digest, diff_id, size = _layer(from_dir, "manifests", work)
            target.put_blob(path, Descriptor(layer_type, digest, size))
            base_layers.append({"mediaType": layer_type, "digest": digest, "size": size})
            diff_ids.append(diff_id)
        path, digest, diff_id, size = _layer(from_dir, "release-manifests", work)
        target.put_blob(path, Descriptor(layer_type, digest, size))
        layers = [*base_layers, {"mediaType": layer_type, "digest": digest, "size": size}]
        diff_ids.append(diff_id)
        config = {
            "architecture": architecture,
            "os": "linux",
            "created": _created(),
            "config": {"Labels": {RELEASE_LABEL: metadata.version, BASE_IMAGE_LABEL: base_digest}},
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        }
        config_bytes = orjson.dumps(config)
        config_path = work / "config.json"
        config_path.write_bytes(config_bytes)
        config_type = media.DOCKER_CONFIG if docker else media.OCI_CONFIG
        config_digest = sha256_of(config_bytes)
        target.put_blob(config_path, Descriptor(config_type, config_digest, len(config_bytes)))
        manifest_type = media.DOCKER_MANIFEST if docker else media.OCI_MANIFEST
        manifest = {"schemaVersion": 2, "mediaType": manifest_type,
                    "config": {"mediaType": config_type, "digest": config_digest, "size": len(config_bytes)},
                    "layers": layers}
        data = orjson.dumps(manifest, option=orjson.OPT_INDENT_2)
        raw = RawManifest(data, manifest_type, sha256_of(data))
        target.put_manifest(ref.tag or "latest" if ref.transport == "docker" else ref.tag, raw)
    return Built(to, raw.digest, str(ref.by_digest(raw.digest)), metadata.version, len(layers))

