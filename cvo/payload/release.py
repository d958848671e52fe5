"""``release-metadata`` and ``image-references``, validated with the CVO's rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from cvo.payload import semver
from cvo.payload.manifest import ManifestError

CINCINNATI_KIND = "cincinnati-metadata-v0"
CHANNELS_KEY = "io.openshift.upgrades.graph.release.channels"
ARCHITECTURE_KEY = "release.openshift.io/architecture"


@dataclass(frozen=True)
class ReleaseMetadata:
    """The release-metadata file (cincinnati-metadata-v0)."""

    version: str
    previous: tuple[str, ...] = ()
    next: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    url: str = ""
    architecture: str = ""
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImageReferences:
    """The image-references ImageStream: the release's images by tag."""

    name: str
    images: dict[str, str] = field(default_factory=dict)


def _version_list(value: Any, key: str, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ManifestError(path, f"{key!r} must be a list of version strings")
    for item in value:
        try:
            semver.parse(item)
        except semver.SemverError as err:
            raise ManifestError(path, f"{key!r} entry {item!r} is not a semantic version: {err}") from None
    return tuple(value)


def parse_release_metadata(data: bytes, path: str) -> ReleaseMetadata:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise ManifestError(path, f"invalid JSON: {err}") from None
    if not isinstance(doc, dict):
        raise ManifestError(path, "must be a JSON object")
    kind = doc.get("kind")
    if kind != CINCINNATI_KIND:
        raise ManifestError(path, f"unrecognized Cincinnati metadata kind {kind!r} (want {CINCINNATI_KIND!r})")
    version = doc.get("version")
    if not version:
        raise ManifestError(path, "'version' is required")
    if not isinstance(version, str):
        raise ManifestError(path, "'version' must be a string")
    try:
        semver.parse(version)
    except semver.SemverError as err:
        raise ManifestError(path, f"'version' {version!r} is not a semantic version: {err}") from None
    previous = _version_list(doc.get("previous"), "previous", path)
    next_ = _version_list(doc.get("next"), "next", path)
    warnings: list[str] = []
    metadata = doc.get("metadata") or {}
    if not isinstance(metadata, dict):
        warnings.append("'metadata' is not an object and is ignored; make it a JSON object")
        metadata = {}
    channels: tuple[str, ...] = ()
    raw_channels = metadata.get(CHANNELS_KEY)
    if isinstance(raw_channels, str):
        channels = tuple(sorted(c for c in raw_channels.split(",") if c))
    elif raw_channels is not None:
        warnings.append(
            f"metadata {CHANNELS_KEY!r} is not a string and is ignored; "
            'write the channels as one comma-separated string, e.g. "stable-4.16,fast-4.16"'
        )
    architecture = metadata.get(ARCHITECTURE_KEY, "")
    if architecture and architecture != "multi":
        warnings.append(
            f"metadata {ARCHITECTURE_KEY}={architecture!r} is ignored: the only value the CVO knows is "
            "'multi'; remove it or set it to multi"
        )
        architecture = ""
    url = metadata.get("url", "")
    return ReleaseMetadata(
        version=version,
        previous=previous,
        next=next_,
        channels=channels,
        url=url if isinstance(url, str) else "",
        architecture="Multi" if architecture == "multi" else "",
        warnings=tuple(warnings),
    )


def parse_image_references(data: bytes, path: str) -> ImageReferences:
    try:
        docs = [orjson.loads(data)]  # the release tooling writes JSON
    except orjson.JSONDecodeError:
        from cvo.payload.yamlorjson import load_documents
        from cvo.payload.yamlparse import DocumentError

        try:
            docs = [d for d in load_documents(data) if d is not None]
        except DocumentError as err:
            raise ManifestError(path, f"invalid YAML/JSON: {err}") from None
        except UnicodeDecodeError as err:
            raise ManifestError(path, f"not UTF-8 text: {err.reason}") from None
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ManifestError(path, "must hold exactly one ImageStream object")
    doc = docs[0]
    if doc.get("kind") != "ImageStream" or doc.get("apiVersion") != "image.openshift.io/v1":
        raise ManifestError(
            path, f"image-references is a {doc.get('apiVersion')}/{doc.get('kind')}, not a v1 ImageStream"
        )
    metadata = doc.get("metadata") or {}
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        raise ManifestError(path, "ImageStream has no metadata.name")
    images: dict[str, str] = {}
    spec = doc.get("spec") or {}
    if not isinstance(spec, dict):
        raise ManifestError(path, "spec must be an object")
    tags = spec.get("tags") or []
    if not isinstance(tags, list):
        raise ManifestError(path, "spec.tags must be a list")
    for i, tag in enumerate(tags):
        if not isinstance(tag, dict) or not isinstance(tag.get("name"), str):
            raise ManifestError(path, f"spec.tags[{i}] has no name")
        source = tag.get("from") or {}
        pullspec = source.get("name") if isinstance(source, dict) else None
        if not isinstance(pullspec, str) or not pullspec:
            raise ManifestError(path, f"spec.tags[{i}] ({tag['name']}) has no from.name")
        images[tag["name"]] = pullspec
    return ImageReferences(name=name, images=images)
