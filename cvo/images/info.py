"""What ``cvo release info`` prints of a pulled release image, as ``oc adm release info`` does.

openshift/oc ``pkg/cli/admin/release/info.go`` (``describeReleaseInfo``): Name, Digest, Created, OS/Arch,
Manifests, Pull From, the release metadata (Version, Upgrades, Metadata), Component Versions (the
``io.openshift.build.versions`` annotations of ``image-references``' tags) and Images (name and digest of
each tag).  ``-o json|yaml`` gives the same as one document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from cvo.images.pull import METADATA, PulledRelease
from cvo.payload.limits import InputError, read_input
from cvo.payload.release import parse_release_metadata

REFERENCES = "release-manifests/image-references"
VERSIONS = "io.openshift.build.versions"


@dataclass(frozen=True)
class ReleaseInfo:
    name: str
    digest: str
    created: str
    os_arch: str
    manifests: int
    pull_from: str
    version: str
    upgrades: tuple[str, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)
    components: dict[str, str] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)  # tag name → pull spec
    platforms: tuple[str, ...] = ()  # a manifest list's entries

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "digest": self.digest, "created": self.created, "osArch": self.os_arch,
                "manifests": self.manifests, "pullFrom": self.pull_from,
                "metadata": {"version": self.version, "previous": list(self.upgrades), "metadata": self.metadata},
                "componentVersions": self.components, "images": self.images,
                **({"platforms": list(self.platforms)} if self.platforms else {})}

    def render(self) -> str:
        lines = [f"Name:           {self.name}", f"Digest:         {self.digest}",
                 f"Created:        {self.created or '-'}", f"OS/Arch:        {self.os_arch}",
                 f"Manifests:      {self.manifests}"]
        if self.platforms:
            lines.append(f"Manifest list:  {', '.join(self.platforms)}")
        lines += ["", f"Pull From: {self.pull_from}", "", "Release Metadata:", f"  Version:  {self.version}",
                  f"  Upgrades: {', '.join(self.upgrades) or '<none>'}"]
        if self.metadata:
            lines.append("  Metadata:")
            lines += [f"    {k}: {v}" for k, v in sorted(self.metadata.items())]
        if self.components:
            lines += ["", "Component Versions:"]
            lines += [f"  {k:<15} {v}" for k, v in sorted(self.components.items())]
        if self.images:
            width = max(len(n) for n in self.images)
            lines += ["", "Images:", f"  {'NAME':<{width}}  DIGEST"]
            lines += [f"  {n:<{width}}  {_digest(spec)}" for n, spec in sorted(self.images.items())]
        return "\n".join(lines) + "\n"


def _digest(spec: str) -> str:
    return spec.rpartition("@")[2] if "@" in spec else spec


def _json(path: Any) -> Any:
    try:
        return orjson.loads(read_input(path, str(path)))
    except (InputError, OSError, orjson.JSONDecodeError):
        return None


def describe(pulled: PulledRelease) -> ReleaseInfo:
    """The description of ``pulled`` (its release metadata was checked when it was pulled)."""
    root = pulled.directory
    try:
        metadata = parse_release_metadata(read_input(root / METADATA, str(METADATA)), str(METADATA))
        version, upgrades = metadata.version, metadata.previous
    except (InputError, OSError, ValueError):
        version, upgrades = pulled.config.release, ()
    raw_metadata = _json(root / METADATA)
    extra = raw_metadata.get("metadata") if isinstance(raw_metadata, dict) else None
    shown = {str(k): str(v) for k, v in extra.items()} if isinstance(extra, dict) else {}
    components: dict[str, str] = {}
    images: dict[str, str] = {}
    stream = _json(root / REFERENCES)
    tags = (stream.get("spec") or {}).get("tags") if isinstance(stream, dict) else None
    for tag in tags if isinstance(tags, list) else []:
        if not isinstance(tag, dict) or not isinstance(tag.get("name"), str):
            continue
        source = tag.get("from")
        if isinstance(source, dict) and isinstance(source.get("name"), str):
            images[tag["name"]] = source["name"]
        annotations = tag.get("annotations")
        versions = annotations.get(VERSIONS) if isinstance(annotations, dict) else None
        if isinstance(versions, str):
            for pair in versions.split(","):
                key, eq, value = pair.strip().partition("=")
                if eq and key:
                    components[key] = value
    manifests = sum(1 for d in ("manifests", "release-manifests") if (root / d).is_dir()
                    for p in (root / d).rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml", ".json"))
    platforms = tuple(sorted(f"{d.platform.os}/{d.platform.architecture}" for d in pulled.index.manifests
                             if d.platform)) if pulled.index else ()
    return ReleaseInfo(version, pulled.digest, pulled.config.created,
                       f"{pulled.config.os or 'linux'}/{pulled.config.architecture or '-'}", manifests,
                       pulled.pull_spec, version, upgrades, shown, components, images, platforms)
