"""Which workloads a ClusterOperator's status comes from: the ``release.cvo.dev/status-from-workloads`` and
``release.cvo.dev/version-from`` annotations of a ClusterOperator manifest, read (docs/workload-status.md).

Pure over :class:`~cvo.payload.manifest.Manifest`; lint reads it, and :mod:`cvo.operators.workloads` derives
the status from the live workloads it names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cvo.payload.fields import dig, entries, mapping, string
from cvo.payload.manifest import Manifest

STATUS_FROM = "release.cvo.dev/status-from-workloads"
VERSION_FROM = "release.cvo.dev/version-from"
DEFAULT_VERSION_FROM = "label:app.kubernetes.io/version"
KINDS = {"Deployment": "apps", "DaemonSet": "apps", "StatefulSet": "apps", "Job": "batch"}


class WorkloadSpecError(ValueError):
    """The annotation does not say which workloads, or where the version comes from."""


@dataclass(frozen=True)
class WorkloadRef:
    kind: str
    namespace: str
    name: str = ""
    selector: tuple[tuple[str, str], ...] = ()

    @property
    def group(self) -> str:
        return KINDS[self.kind]

    def __str__(self) -> str:
        which = self.name or ",".join(f"{k}={v}" for k, v in self.selector)
        return f"{self.kind.lower()} {self.namespace}/{which}"

    def matches(self, obj: Mapping[str, Any]) -> bool:
        meta = mapping(obj.get("metadata"))
        if string(meta.get("namespace")) != self.namespace:
            return False
        if self.name:
            return string(meta.get("name")) == self.name
        labels = mapping(meta.get("labels"))
        return all(labels.get(k) == v for k, v in self.selector)


@dataclass(frozen=True)
class WorkloadSpec:
    """What a ClusterOperator's status comes from."""

    operator: str
    workloads: tuple[WorkloadRef, ...]
    version_from: str  # "label:KEY", "annotation:KEY" or "image"
    versions: tuple[tuple[str, str], ...]  # the manifest's declared status.versions


def _ref(item: Any, where: str) -> WorkloadRef:
    if not isinstance(item, dict):
        raise WorkloadSpecError(f"{where}: each entry must be a map with kind, namespace and name or selector")
    kind, namespace, name, selector = item.get("kind"), item.get("namespace"), item.get("name"), item.get("selector")
    if kind not in KINDS:
        raise WorkloadSpecError(f"{where}: kind {kind!r} is not one of {', '.join(sorted(KINDS))}")
    if not isinstance(namespace, str) or not namespace:
        raise WorkloadSpecError(f"{where}: {kind} needs a namespace")
    if (name is None) == (selector is None):
        raise WorkloadSpecError(f"{where}: {kind} in {namespace} needs exactly one of name and selector")
    if name is not None:
        if not isinstance(name, str) or not name:
            raise WorkloadSpecError(f"{where}: {kind} in {namespace}: name must be a non-empty string")
        return WorkloadRef(kind, namespace, name)
    if (not isinstance(selector, dict) or not selector
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in selector.items())):
        raise WorkloadSpecError(f"{where}: {kind} in {namespace}: selector must be a non-empty map of labels")
    return WorkloadRef(kind, namespace, selector=tuple(sorted(selector.items())))


def spec_of(m: Manifest) -> WorkloadSpec | None:
    """The workloads a ClusterOperator manifest's status comes from (None: not annotated); a
    :class:`WorkloadSpecError` naming the manifest when the annotation is not usable."""
    text = m.annotations.get(STATUS_FROM)
    if text is None:
        return None
    where = f"{m.path}: ClusterOperator {m.name}: {STATUS_FROM}"
    import yaml  # here: every command that loads a release imports this module, few read the annotation

    try:
        items = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise WorkloadSpecError(f"{where}: not YAML: {str(err).splitlines()[0]}") from None
    if not isinstance(items, list) or not items:
        raise WorkloadSpecError(f"{where}: must be a non-empty list of workloads")
    version_from = m.annotations.get(VERSION_FROM, DEFAULT_VERSION_FROM)
    if version_from != "image" and not (version_from.partition(":")[0] in ("label", "annotation")
                                        and version_from.partition(":")[2]):
        raise WorkloadSpecError(f"{m.path}: ClusterOperator {m.name}: {VERSION_FROM}: {version_from!r} is not "
                                "label:KEY, annotation:KEY or image")
    declared = tuple((string(v.get("name")), string(v.get("version")))
                     for v in entries(dig(m.obj, "status", "versions")))
    return WorkloadSpec(m.name, tuple(_ref(item, where) for item in items), version_from, declared)


def specs_of(manifests: Sequence[Manifest]) -> tuple[list[WorkloadSpec], dict[str, str]]:
    """The derived ClusterOperators of a release, and those whose annotation is not usable (name -> why)."""
    specs, broken = [], {}
    for m in manifests:
        if m.kind != "ClusterOperator" or STATUS_FROM not in m.annotations:
            continue
        try:
            spec = spec_of(m)
        except WorkloadSpecError as err:
            broken[m.name] = str(err)
            continue
        if spec is not None:
            specs.append(spec)
    return specs, broken
