"""Helpers of the image tests: trees compared file by file, small images written into OCI layouts by hand
(not by cvo's builder, so the reader is tested against something else), and a stand-in for
``cvo.images.extract.extract_layers`` used only until that module is on the branch."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from cvo.images import media
from cvo.images.layout import OciLayout
from cvo.images.repository import RawManifest


def tree(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root``: relative path -> bytes (``None`` for a directory)."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for name in dirnames:
            out[str(rel / name)] = None
        for name in filenames:
            out[str(rel / name)] = (Path(dirpath) / name).read_bytes()
    return out


def payload_tree(root: Path) -> dict[str, bytes | None]:
    """:func:`tree` of ``manifests/`` and ``release-manifests/`` only."""
    return {k: v for k, v in tree(root).items() if k.split("/")[0] in ("manifests", "release-manifests")}


def tar_bytes(files: Mapping[str, bytes | None], *, gz: bool = True) -> bytes:
    """A tar (gzipped unless ``gz`` is false) of ``files`` (name -> bytes; ``None`` makes a directory)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), mtime=0) if gz else buf.getvalue()


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def write_blob(layout: Path, data: bytes) -> str:
    """``data`` into ``layout``'s ``blobs/sha256`` directly (no cvo code); its digest."""
    digest = digest_of(data)
    blobs = layout / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    (blobs / digest.removeprefix("sha256:")).write_bytes(data)
    return digest


def write_index(layout: Path, entries: list[dict[str, Any]]) -> None:
    layout.mkdir(parents=True, exist_ok=True)
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (layout / "index.json").write_bytes(orjson.dumps(
        {"schemaVersion": 2, "mediaType": media.OCI_INDEX, "manifests": entries}))


def image_manifest(layout: Path, layers: list[bytes], *, architecture: str = "amd64", labels: dict | None = None,
                   oci: bool = True, created: str = "2024-01-02T03:04:05Z") -> tuple[bytes, str]:
    """An image of ``layers`` (gzipped tars) written into ``layout``'s blobs by hand: (manifest, digest)."""
    config = orjson.dumps({"architecture": architecture, "os": "linux", "created": created,
                           "config": {"Labels": labels or {}},
                           "rootfs": {"type": "layers",
                                      "diff_ids": [digest_of(gzip.decompress(layer)) for layer in layers]}})
    layer_type = media.OCI_LAYER_GZIP if oci else media.DOCKER_LAYER_GZIP
    doc = {"schemaVersion": 2, "mediaType": media.OCI_MANIFEST if oci else media.DOCKER_MANIFEST,
           "config": {"mediaType": media.OCI_CONFIG if oci else media.DOCKER_CONFIG,
                      "digest": write_blob(layout, config), "size": len(config)},
           "layers": [{"mediaType": layer_type, "digest": write_blob(layout, layer), "size": len(layer)}
                      for layer in layers]}
    data = orjson.dumps(doc)
    return data, write_blob(layout, data)


def entry(data: bytes, digest: str, *, tag: str = "", media_type: str = media.OCI_MANIFEST,
          platform: dict | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"mediaType": media_type, "digest": digest, "size": len(data)}
    if tag:
        out["annotations"] = {"org.opencontainers.image.ref.name": tag}
    if platform:
        out["platform"] = platform
    return out


def release_layers(version: str = "4.16.0") -> list[bytes]:
    """The two layers of a minimal release image: manifests/, then release-manifests/."""
    metadata = orjson.dumps({"kind": "cincinnati-metadata-v0", "version": version})
    refs = orjson.dumps({"kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
                         "metadata": {"name": version}, "spec": {"tags": []}})
    return [tar_bytes({"manifests": None, "manifests/0000_00_cvo.yaml": b"kind: Namespace\n"}),
            tar_bytes({"release-manifests": None, "release-manifests/release-metadata": metadata,
                       "release-manifests/image-references": refs})]


def put_raw(layout: OciLayout, tag: str, data: bytes, media_type: str = media.OCI_MANIFEST) -> str:
    raw = RawManifest(data, media_type, digest_of(data))
    layout.put_manifest(tag, raw)
    return raw.digest
