"""``cvo release info``: what ``oc adm release info`` prints of a pulled release image.

openshift/oc ``pkg/cli/admin/release/info.go``: ``LoadReleaseInfo`` (manifests counted among the
``release-manifests/`` files, ``image-references`` and ``release-metadata`` read), ``readComponentVersions``
(the ``io.openshift.build.versions`` annotations of the image-references tags), ``describeReleaseInfo``
(the text, aligned by Go's ``text/tabwriter``, ported below as :func:`tabwrite`) and ``describeImage``
(``-o json``: ``ReleaseInfo``'s JSON fields).  Images are listed as oc lists them without
``--pullspecs``: the tag and the digest of its pull spec.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from cvo.images.errors import ImageError
from cvo.images.manifest import ImageConfig
from cvo.images.pull import PulledRelease
from cvo.payload import semver
from cvo.payload.limits import InputError, read_input
from cvo.payload.release import parse_image_references, parse_release_metadata
from cvo.payload.yamlorjson import load_documents

# pkg/cli/admin/release/annotations.go
BUILD_VERSIONS = "io.openshift.build.versions"
BUILD_VERSION_DISPLAY_NAMES = "io.openshift.build.version-display-names"
# pkg/cli/admin/release/image_mapper.go reAllowedVersionKey, reAllowedDisplayNameKey
_VERSION_KEY = re.compile(r"^[a-z0-9]+[\-a-z0-9]*[a-z0-9]+$")
_DISPLAY_NAME = re.compile(r"^[a-zA-Z0-9\-:\s().]+$")
_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?(Z|[+-]\d\d:\d\d)$")
GO_ZERO_TIME = "0001-01-01T00:00:00Z"
MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class ComponentVersion:
    """image_mapper.go ``ComponentVersion``."""

    version: str
    display_name: str = ""


@dataclass(frozen=True)
class ReleaseImage:
    """One ``image-references`` tag that names an image (``from.kind: DockerImage``)."""

    name: str
    pull_spec: str

    @property
    def digest(self) -> str:
        """The pull spec's digest, or the pull spec itself when it has none (``describeReleaseInfo``)."""
        _, at, digest = self.pull_spec.rpartition("@")
        return digest if at and digest else self.pull_spec


@dataclass(frozen=True)
class ReleaseInfo:
    """info.go ``ReleaseInfo``: what ``oc adm release info`` prints of one release image."""

    image: str
    name: str
    digest: str  # the image manifest's
    list_digest: str  # the index's, when the pull spec names one
    pull_from: str
    config: ImageConfig
    manifests: int
    metadata_files: int
    metadata: Mapping[str, Any]  # release-metadata as written
    references: Mapping[str, Any]  # image-references as written
    images: tuple[ReleaseImage, ...]
    component_versions: Mapping[str, ComponentVersion] = field(default_factory=dict)
    component_tags: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def platform(self) -> str:
        """info.go ``ReleaseInfo.Platform``."""
        platform = f"{self.config.os or 'unknown'}/{self.config.architecture or 'unknown'}"
        return f"multi ({platform})" if self.list_digest else platform

    @property
    def shown_digest(self) -> str:
        return self.list_digest or self.digest

    @property
    def created(self) -> str:
        return rfc3339(self.config.created)


def rfc3339(text: str) -> str:
    """Go's ``Created.UTC().Truncate(time.Second).Format(time.RFC3339)`` of an image config's ``created``."""
    match = _RFC3339.match(text or "")
    if match is None:
        return text or GO_ZERO_TIME
    try:
        when = datetime.fromisoformat(match[1] + ("+00:00" if match[2] == "Z" else match[2]))
    except ValueError:
        return text
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _read_json(image: str, path: os.PathLike[str], display: str) -> Any:
    try:
        return orjson.loads(read_input(path, display))
    except InputError as err:
        raise ImageError(image, f"release image could not be read: {err}") from None
    except orjson.JSONDecodeError:
        return None


def describe(pulled: PulledRelease, image: str | None = None) -> ReleaseInfo:
    """The :class:`ReleaseInfo` of a pulled release (``image``: the pull spec as the user wrote it)."""
    image = image or str(pulled.ref)
    root = pulled.directory / "release-manifests"
    meta_path, refs_path = root / "release-metadata", root / "image-references"
    try:
        metadata = parse_release_metadata(read_input(meta_path, "release-manifests/release-metadata"),
                                          "release-manifests/release-metadata")
        parse_image_references(read_input(refs_path, "release-manifests/image-references"),
                               "release-manifests/image-references")
    except InputError as err:
        raise ImageError(image, f"release image could not be read: {err}") from None
    meta_doc = _read_json(image, meta_path, "release-manifests/release-metadata")
    refs_doc = _read_json(image, refs_path, "release-manifests/image-references")
    if not isinstance(refs_doc, dict):  # YAML: cvo's loader takes it (parse_image_references checked it)
        refs_doc = next((d for d in load_documents(read_input(refs_path, "release-manifests/image-references"))
                         if isinstance(d, dict)), {})
    manifests = metadata_files = 0
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            if dirpath == str(root) and name in ("release-metadata", "image-references"):
                continue
            if os.path.splitext(name)[1] in MANIFEST_EXTENSIONS:
                manifests += 1
            else:
                metadata_files += 1
    tags = [t for t in _list(_obj(refs_doc.get("spec")).get("tags")) if isinstance(t, dict)]
    images = tuple(ReleaseImage(str(t.get("name", "")), str(_obj(t.get("from")).get("name", "")))
                   for t in tags if _obj(t.get("from")).get("kind") == "DockerImage")
    versions, component_tags, warnings = read_component_versions(tags)
    index_digest = pulled.digest if pulled.index is not None else ""
    name = metadata.version or str(_obj(refs_doc.get("metadata")).get("name", ""))
    return ReleaseInfo(image=image, name=name, digest=pulled.manifest.digest, list_digest=index_digest,
                       pull_from=pulled.pull_spec, config=pulled.config, manifests=manifests,
                       metadata_files=metadata_files, metadata=_obj(meta_doc), references=refs_doc, images=images,
                       component_versions=versions, component_tags=component_tags,
                       warnings=tuple(sorted([*warnings, *metadata.warnings])))


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _check_version_name(key: str) -> None:
    """A component's name in ``io.openshift.build.versions`` and its display names (oc's ``parseComponentVersionsLabel``)."""
    if len(key) < 2:
        raise ValueError(f'the version name "{key}" must be at least 2 characters')
    if not _VERSION_KEY.match(key):
        raise ValueError(f'the version name "{key}" must only be ASCII alphanumerics and internal hyphens')


def parse_component_versions(label: str, display_names: str) -> dict[str, ComponentVersion]:
    """image_mapper.go ``parseComponentVersionsLabel``; :class:`ValueError` with oc's message."""
    label = label.strip()
    if not label:
        return {}
    names: dict[str, str] = {}
    if display_names:
        for pair in display_names.split(","):
            pair = pair.strip()
            key, eq, value = pair.partition("=")
            if not eq:
                raise ValueError(f'the display name pair "{pair}" must be NAME=DISPLAYNAME')
            _check_version_name(key)
            if not _DISPLAY_NAME.match(value):
                raise ValueError(f'the display name "{value}" must only be alphanumerics, spaces, and symbols in '
                                 "[().:-]")
            names[key] = value
    out: dict[str, ComponentVersion] = {}
    for pair in label.split(","):
        pair = pair.strip()
        key, eq, value = pair.partition("=")
        if not eq:
            raise ValueError(f'the version pair "{pair}" must be NAME=VERSION')
        _check_version_name(key)
        try:
            version = semver.parse(value)
        except semver.SemverError as err:
            raise ValueError(f'the version pair "{pair}" must have a valid semantic version: {err}') from None
        out[key] = ComponentVersion(str(semver.Version(version.major, version.minor, version.patch, version.pre)),
                                    names.get(key, ""))
    return out


def read_component_versions(tags: list[dict[str, Any]]) -> tuple[dict[str, ComponentVersion], dict[str, str],
                                                                 list[str]]:
    """info.go ``readComponentVersions``: the versions by component, the tag each came from, warnings."""
    warnings: list[str] = []
    combined: dict[str, set[str]] = {}
    display: dict[str, set[str]] = {}
    component_tags: dict[str, str] = {}
    kubectl: dict[str, set[str]] = {}
    for tag in tags:
        notes = _obj(tag.get("annotations"))
        if BUILD_VERSIONS not in notes:
            continue
        name = str(tag.get("name", ""))
        try:
            found = parse_component_versions(str(notes[BUILD_VERSIONS]), str(notes.get(BUILD_VERSION_DISPLAY_NAMES, "")))
        except ValueError as err:
            warnings.append(f"the referenced image {name} had an invalid version annotation: {err}")
            found = {}
        for key, value in found.items():
            component_tags[key] = name
            if key == "kubectl":
                kubectl.setdefault(value.version, set()).add(name)
                if name not in ("cli", "cli-artifacts"):
                    continue
            combined.setdefault(key, set()).add(value.version)
            display.setdefault(key, set()).add(value.display_name)
    if len(kubectl) > 2:
        listed = ", ".join(f"{v} ({', '.join(sorted(t))})" for v, t in sorted(kubectl.items()))
        warnings.append(f"multiple versions reported for the kubectl: {listed}")
    multiples: set[str] = set()
    out: dict[str, ComponentVersion] = {}
    for key in sorted(combined):
        if len(combined[key]) > 1 and key != "machine-os":
            multiples.add(key)
        if len(display.get(key, ())) > 1 and key != "machine-os":
            multiples.add(key)
        out[key] = ComponentVersion(sorted(combined[key])[0], sorted(display.get(key, {""}))[0])
    if multiples:
        warnings.append("multiple versions or display names reported for the following component(s): "
                        + ",  ".join(sorted(multiples)))
    return out, component_tags, warnings


def go_value(value: Any) -> str:
    """Go's ``%v`` of a JSON value decoded into ``interface{}`` (numbers are float64: ``strconv`` 'g', shortest)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _go_float(float(value))
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _go_float(value: float) -> str:
    """strconv ``FormatFloat(v, 'g', -1, 64)``: %e when the exponent is < -4 or >= 6 (the shortest digits)."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    assert isinstance(exponent, int)
    exp = len(text) + exponent - 1
    minus = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{minus}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exponent >= 0:
        return minus + text + "0" * exponent
    point = len(text) + exponent
    return minus + (text[:point] if point > 0 else "0") + "." + ("0" * -point if point < 0 else "") + text[max(point, 0):]


def _sorted_versions(versions: list[Any]) -> list[str]:
    """info.go ``sortSemanticVersions``: sorted when every one parses, else as given."""
    try:
        parsed = [semver.parse(v) for v in versions]
    except (semver.SemverError, TypeError):
        return [str(v) for v in versions]
    return [str(v) for v in sorted(parsed)]


def render_text(info: ReleaseInfo) -> str:
    """info.go ``describeReleaseInfo`` without ``--commits``/``--pullspecs``/``--size``."""
    out = [f"Name:\t{info.name}", f"Digest:\t{info.shown_digest}", f"Created:\t{info.created}",
           f"OS/Arch:\t{info.platform}", f"Manifests:\t{info.manifests}"]
    if info.metadata_files:
        out.append(f"Metadata files:\t{info.metadata_files}")
    out += ["", f"Pull From:\t{info.pull_from}"]
    if info.metadata:
        previous = _list(info.metadata.get("previous"))
        out += ["", "Release Metadata:", f"  Version:\t{info.metadata.get('version', '')}",
                f"  Upgrades:\t{', '.join(_sorted_versions(previous)) if previous else '<none>'}"]
        extra = _obj(info.metadata.get("metadata"))
        keys = sorted(k for k, v in extra.items() if not (isinstance(v, str | list | dict) and len(v) == 0))
        section = ["  Metadata:", *(f"    {k}:\t{go_value(extra[k])}" for k in keys)]
        out.append(tabwrite("\n".join(section) + "\n").removesuffix("\n"))
    if info.component_versions:
        out += ["", "Component Versions:"]
        out += [f"  {k}\t{v.version}\t{v.display_name}" for k, v in sorted(info.component_versions.items())]
    images = ["", "Images:", "  NAME\tDIGEST", *(f"  {i.name}\t{i.digest}" for i in info.images)]
    out.append(tabwrite("\n".join(images) + "\n").removesuffix("\n"))
    if info.warnings:
        out.append(tabwrite("\n".join(["", "Warnings:", *(f"* {w}" for w in info.warnings)]) + "\n")
                   .removesuffix("\n"))
    return tabwrite("\n".join(out) + "\n\n")


def to_dict(info: ReleaseInfo) -> dict[str, Any]:
    """``-o json|yaml``: info.go ``ReleaseInfo``'s JSON fields (``images`` only with ``--size``: null),
    and cvo's ``name``, ``pullFrom`` and ``manifests``."""
    config: dict[str, Any] = {"created": info.config.created or GO_ZERO_TIME, "os": info.config.os,
                              "architecture": info.config.architecture, "config": {"Labels": dict(info.config.labels)}}
    if info.config.variant:
        config["variant"] = info.config.variant
    return {
        "image": info.image,
        "digest": info.digest,
        "contentDigest": info.digest,
        "listDigest": info.list_digest,
        "config": config,
        "metadata": dict(info.metadata) or None,
        "references": dict(info.references),
        "versions": {k: v.version for k, v in sorted(info.component_versions.items())} or None,
        "displayVersions": {k: {"Version": v.version, "DisplayName": v.display_name}
                            for k, v in sorted(info.component_versions.items())} or None,
        "versionsTags": dict(sorted(info.component_tags.items())) or None,
        "images": None,
        "warnings": list(info.warnings) or None,
        "name": info.name,
        "pullFrom": info.pull_from,
        "manifests": info.manifests,
    }


def tabwrite(text: str, minwidth: int = 0, padding: int = 1) -> str:
    """Go's ``text/tabwriter`` (``NewWriter(out, minwidth, 4, padding, ' ', 0)``) over ``text``: tab-terminated
    cells aligned in columns, a column's block being the consecutive lines that have that cell."""
    lines = [line.split("\t") for line in text.split("\n")]
    rendered: list[str] = []

    def write_lines(widths: list[int], line0: int, line1: int) -> None:
        for i in range(line0, line1):
            parts = []
            for j, cell in enumerate(lines[i]):
                parts.append(cell)
                if j < len(widths) and j < len(lines[i]) - 1:
                    parts.append(" " * max(widths[j] - len(cell), 0))
            rendered.append("".join(parts))

    def format_block(widths: list[int], line0: int, line1: int) -> None:
        column = len(widths)
        this = line0
        while this < line1:
            if column >= len(lines[this]) - 1:
                this += 1
                continue
            write_lines(widths, line0, this)
            line0 = this
            width = minwidth
            while this < line1 and column < len(lines[this]) - 1:
                width = max(width, len(lines[this][column]) + padding)
                this += 1
            format_block([*widths, width], line0, this)
            line0 = this
        write_lines(widths, line0, line1)

    format_block([], 0, len(lines))
    return "\n".join(rendered)
