"""Manifests, indexes and image configs as typed values, parsed from bytes nobody vouched for.

The shapes are the OCI image-spec's (``manifest.md``, ``image-index.md``, ``config.md``) and Docker's
schema 2 (``distribution/manifest/schema2``, ``manifestlist``).  Anything else is refused with an
:class:`~cvo.images.errors.ImageError` naming the image and the field: schema 1, an unknown media type, a
``mediaType`` field that contradicts the one served, a descriptor without a sha256 digest or a size.
Size caps follow distribution (``registry/handlers/manifests.go`` ``maxManifestBodySize``, 4 MiB).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from cvo.images import media
from cvo.images.errors import ImageError
from cvo.images.reference import SHA256
from cvo.images.repository import Descriptor, Platform, RawManifest

MAX_MANIFEST_BYTES = 4 << 20
# A release image's config is a few kB; the CVO's own image config is about 10 kB.
MAX_CONFIG_BYTES = 4 << 20
MAX_ENTRIES = 10_000

RELEASE_LABEL = "io.openshift.release"
BASE_IMAGE_LABEL = "io.openshift.release.base-image-digest"


@dataclass(frozen=True)
class ImageManifest:
    """One image: its config and its layers, bottom first."""

    media_type: str
    config: Descriptor
    layers: tuple[Descriptor, ...]
    digest: str


@dataclass(frozen=True)
class ImageIndex:
    """A manifest list / OCI index: one manifest per platform."""

    media_type: str
    manifests: tuple[Descriptor, ...]
    digest: str


@dataclass(frozen=True)
class ImageConfig:
    """What an image config says that a release reader uses (``config.md``)."""

    created: str = ""
    os: str = ""
    architecture: str = ""
    variant: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def release(self) -> str:
        """The ``io.openshift.release`` label: the version ``oc adm release new`` stamped, or ``""``."""
        return self.labels.get(RELEASE_LABEL, "")


def _json(image: str, data: bytes, what: str, limit: int) -> dict[str, Any]:
    if len(data) > limit:
        raise ImageError(image, f"{what} is {len(data)} bytes, over the limit of {limit}")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise ImageError(image, f"{what} is not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise ImageError(image, f"{what} is not a JSON object")
    return doc


def _q(value: Any, limit: int = 80) -> str:
    """A value from the document as one line of a message: quoted, escaped, cut at ``limit`` characters."""
    return repr(str(value)[:limit])


def _str(image: str, doc: Mapping[str, Any], key: str, what: str, required: bool = False) -> str:
    value = doc.get(key)
    if value is None and not required:
        return ""
    if value is None:
        raise ImageError(image, f"{what}: {key} is missing")
    if not isinstance(value, str) or (required and not value):
        raise ImageError(image, f"{what}: {key} is not a{' non-empty' if required else ''} string")
    return value


def _labels(image: str, value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ImageError(image, f"{what} is not a map of strings")
    return dict(value)


def descriptor(image: str, doc: Any, what: str) -> Descriptor:
    """One descriptor, checked: a media type, a sha256 digest, a non-negative size."""
    if not isinstance(doc, dict):
        raise ImageError(image, f"{what} is not an object")
    media_type = _str(image, doc, "mediaType", what, required=True)
    digest = doc.get("digest")
    if not isinstance(digest, str) or not SHA256.fullmatch(digest):
        raise ImageError(image, f"{what}: digest {_q(digest)} is not sha256:<64 lowercase hex digits>")
    size = doc.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ImageError(image, f"{what}: size {_q(size, 40)} is not a non-negative integer")
    platform = None
    if doc.get("platform") is not None:
        raw = doc["platform"]
        if not isinstance(raw, dict):
            raise ImageError(image, f"{what}: platform is not an object")
        platform = Platform(_str(image, raw, "os", f"{what} platform"),
                            _str(image, raw, "architecture", f"{what} platform"),
                            _str(image, raw, "variant", f"{what} platform"))
    return Descriptor(media_type, digest, size, platform, _labels(image, doc.get("annotations"),
                                                                  f"{what}: annotations"))


def _kind(image: str, raw: RawManifest, doc: Mapping[str, Any]) -> str:
    declared = doc.get("mediaType")
    if declared is not None and not isinstance(declared, str):
        raise ImageError(image, "manifest: mediaType is not a string")
    served = raw.media_type.split(";")[0].strip()
    if served in media.ACCEPT:
        if declared and declared != served:
            raise ImageError(image, f"manifest declares media type {_q(declared)} but was served as {served}")
        return served
    if declared:
        if declared not in media.ACCEPT:
            raise ImageError(image, f"manifest of unknown media type {_q(declared)}")
        return declared
    if served and served not in ("application/json", "application/octet-stream", "text/plain"):
        raise ImageError(image, f"manifest of unknown media type {_q(served)}")
    # An OCI layout's index.json and an OCI manifest may omit mediaType (image-spec manifest.md).
    if "manifests" in doc:
        return media.OCI_INDEX
    if "layers" in doc:
        return media.OCI_MANIFEST
    raise ImageError(image, "manifest has no media type and is neither an image manifest nor an index")


def parse_manifest(image: str, raw: RawManifest) -> ImageManifest | ImageIndex:
    """``raw`` as an image manifest or an index; :class:`ImageError` for anything else."""
    doc = _json(image, raw.data, "manifest", MAX_MANIFEST_BYTES)
    version = doc.get("schemaVersion")
    if type(version) is not int or version != 2:  # not 2.0 either: Go decodes it into an int
        shown = version if type(version) is int else _q(version, 20)
        raise ImageError(image, f"manifest schemaVersion {shown} is not 2 (schema 1 is not supported)")
    kind = _kind(image, raw, doc)
    if kind in media.INDEXES:
        entries = doc.get("manifests")
        if not isinstance(entries, list):
            raise ImageError(image, "index: manifests is not a list")
        if len(entries) > MAX_ENTRIES:
            raise ImageError(image, f"index has {len(entries)} manifests, over the limit of {MAX_ENTRIES}")
        return ImageIndex(kind, tuple(descriptor(image, e, f"index entry {i}") for i, e in enumerate(entries)),
                          raw.digest)
    layers = doc.get("layers")
    if not isinstance(layers, list):
        raise ImageError(image, "manifest: layers is not a list")
    if len(layers) > MAX_ENTRIES:
        raise ImageError(image, f"manifest has {len(layers)} layers, over the limit of {MAX_ENTRIES}")
    config = descriptor(image, doc.get("config"), "manifest config")
    if config.media_type not in media.CONFIGS:
        raise ImageError(image, f"manifest config of unknown media type {_q(config.media_type)}")
    parsed = tuple(descriptor(image, layer, f"layer {i}") for i, layer in enumerate(layers))
    for i, layer in enumerate(parsed):
        if layer.media_type not in media.LAYERS:
            raise ImageError(image, f"layer {i} ({layer.digest}) of unsupported media type {_q(layer.media_type)}")
    return ImageManifest(kind, config, parsed, raw.digest)


def parse_config(image: str, data: bytes) -> ImageConfig:
    """An image config blob's ``created``, platform and ``config.Labels``."""
    doc = _json(image, data, "image config", MAX_CONFIG_BYTES)
    inner = doc.get("config")
    if inner is not None and not isinstance(inner, dict):
        raise ImageError(image, "image config: config is not an object")
    labels = _labels(image, (inner or {}).get("Labels"), "image config: config.Labels")
    return ImageConfig(_str(image, doc, "created", "image config"), _str(image, doc, "os", "image config"),
                       _str(image, doc, "architecture", "image config"), _str(image, doc, "variant", "image config"),
                       labels)
