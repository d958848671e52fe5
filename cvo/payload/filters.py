"""Which manifests a cluster gets: library-go's ``Manifest.Include`` rules, in its order.

Load-time filters (exclude id, feature set, feature gates, major version, profile) drop a manifest
from the payload.  Apply-time filters (capabilities, ClusterVersion ``spec.overrides``, feature
gates again) skip a task that stays in the graph and in ``Total``, as in the CVO.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cvo.payload.gostrings import go_parse_uint, go_quote
from cvo.payload.manifest import (
    CAPABILITY_ANNOTATION,
    EXCLUDE_ANNOTATION_PREFIX,
    FEATURE_GATE_ANNOTATION,
    FEATURE_SET_ANNOTATION,
    MAJOR_VERSION_ANNOTATION,
    PROFILE_ANNOTATION_PREFIX,
    Manifest,
)

DEFAULT_PROFILE = "self-managed-high-availability"
KNOWN_PROFILES = ("self-managed-high-availability", "single-node-developer", "ibm-cloud-managed", "hypershift")
KNOWN_FEATURE_SETS = ("CustomNoUpgrade", "Default", "DevPreviewNoUpgrade", "OKD", "TechPreviewNoUpgrade")
# The ClusterVersion API's capability enum (the 5.0 payload's own CRD): all status.capabilities may hold.
API_CAPABILITIES = (
    "openshift-samples", "baremetal", "marketplace", "Console", "Insights", "Storage", "CSISnapshot",
    "NodeTuning", "MachineAPI", "Build", "DeploymentConfig", "ImageRegistry", "OperatorLifecycleManager",
    "CloudCredential", "Ingress", "CloudControllerManager", "OperatorLifecycleManagerV1",
)
# ClusterVersion capabilities known to the 5.0 CVO: the API enum plus the two the corpus already uses.
KNOWN_CAPABILITIES = (*API_CAPABILITIES, "ClusterAPI", "CompatibilityRequirements")


@dataclass(frozen=True)
class LoadFilter:
    """The inputs of the load-time ``Include`` call."""

    profile: str = DEFAULT_PROFILE
    feature_set: str = ""  # "" is the Default feature set
    feature_gates: frozenset[str] = frozenset()
    exclude_id: str | None = None
    major_version: int | None = None


@dataclass(frozen=True)
class Override:
    """One ClusterVersion ``spec.overrides`` entry."""

    kind: str
    group: str
    namespace: str
    name: str
    unmanaged: bool

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Override:
        return cls(
            kind=str(data.get("kind", "")),
            group=str(data.get("group", "")),
            namespace=str(data.get("namespace", "")),
            name=str(data.get("name", "")),
            unmanaged=bool(data.get("unmanaged", False)),
        )


@dataclass(frozen=True)
class ApplyFilter:
    """The inputs of the apply-time ``Include`` call."""

    enabled_capabilities: frozenset[str] = frozenset(KNOWN_CAPABILITIES)
    known_capabilities: frozenset[str] = frozenset(KNOWN_CAPABILITIES)
    overrides: tuple[Override, ...] = ()
    feature_gates: frozenset[str] | None = None
    allow_unknown_capabilities: bool = False
    _override_index: dict[tuple[str, str, str, str], Override] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for o in self.overrides:
            self._override_index.setdefault((o.group, o.kind, o.namespace, o.name), o)


def _split(value: str, sep: str = ",") -> list[str]:
    return [part.strip() for part in value.split(sep) if part.strip()]


def _feature_set_reason(feature_set: str, annotations: Mapping[str, str]) -> str | None:
    value = annotations.get(FEATURE_SET_ANNOTATION)
    if value is None:
        return None
    wanted = feature_set or "Default"
    values = value.split(",")
    for item in values:
        if item not in KNOWN_FEATURE_SETS:
            return (
                f"unrecognized value {go_quote(item)} in {FEATURE_SET_ANNOTATION}={value}; "
                f"known values are: {','.join(sorted(KNOWN_FEATURE_SETS))}"
            )
    if wanted not in values:
        return f'"{wanted}" is required, and {FEATURE_SET_ANNOTATION}={",".join(sorted(set(values)))}'
    return None


def _feature_gate_reason(enabled: frozenset[str], annotations: Mapping[str, str]) -> str | None:
    value = annotations.get(FEATURE_GATE_ANNOTATION)
    if value is None:
        return None
    for term in _split(value):
        if term.startswith("-"):
            if term[1:] in enabled:
                return f"feature gate {term[1:]} is enabled but manifest requires it to be disabled"
        elif term not in enabled:
            return f"feature gate {term} is required but not enabled"
    return None


def _major_version_reason(m: Manifest, major: int, annotations: Mapping[str, str]) -> str | None:
    value = annotations.get(MAJOR_VERSION_ANNOTATION)
    if value is None:
        return None
    allowed = (m.group == "config.openshift.io" and m.kind == "FeatureGate") or (
        m.group == "apiextensions.k8s.io" and m.kind == "CustomResourceDefinition"
    )
    if not allowed:
        return "major version filtering is only supported for feature gates and custom resources"
    included: set[int] = set()
    excluded: set[int] = set()
    for term in _split(value):
        target, text = (excluded, term[1:]) if term.startswith("-") else (included, term)
        number = go_parse_uint(text)
        if isinstance(number, str):
            kind = "excluded" if target is excluded else "included"
            return f"invalid {kind} major version {go_quote(text)} in annotation: {number}"
        target.add(number)
    if included & excluded:
        return f"inclusion and exclusion requirements overlap: [{' '.join(map(str, sorted(included & excluded)))}]"
    if major in included:
        return None
    if major in excluded:
        return f"major version {major} matches excluded version {major}"
    if included:
        return f"major version {major} does not match any required versions"
    return None


def load_exclusion(m: Manifest, f: LoadFilter) -> str | None:
    """Why ``m`` is not part of the payload, or ``None`` if it is."""
    annotations = m.annotations
    if not annotations:
        return "no annotations"
    if f.exclude_id is not None:
        key = f"{EXCLUDE_ANNOTATION_PREFIX}{f.exclude_id}"
        if annotations.get(key) == "true":
            return f"{key}=true"
    if FEATURE_SET_ANNOTATION in annotations and FEATURE_GATE_ANNOTATION in annotations:
        return (
            "both feature set and feature gate annotations are present: "
            "manifests may specify either a feature set or a feature gate, but not both"
        )
    if reason := _feature_set_reason(f.feature_set, annotations):
        return reason
    if reason := _feature_gate_reason(f.feature_gates, annotations):
        return reason
    if f.major_version is not None and (reason := _major_version_reason(m, f.major_version, annotations)):
        return reason
    key = f"{PROFILE_ANNOTATION_PREFIX}{f.profile}"
    value = annotations.get(key)
    if value is None:
        return f"{key} unset"
    if value != "true":
        return f"unrecognized value {key}={value}"
    return None


def capabilities_of(m: Manifest) -> list[str]:
    value = m.annotations.get(CAPABILITY_ANNOTATION, "")
    return value.split("+") if value else []


def apply_exclusion(m: Manifest, f: ApplyFilter) -> str | None:
    """Why the runner skips ``m`` at apply time, or ``None`` if it applies it."""
    if f.feature_gates is not None and (reason := _feature_gate_reason(f.feature_gates, m.annotations)):
        return reason
    caps = capabilities_of(m)
    if caps:
        unknown = [c for c in caps if c not in f.known_capabilities] if not f.allow_unknown_capabilities else []
        if unknown:
            return f"unrecognized capability names: {', '.join(unknown)}"
        disabled = [c for c in caps if c not in f.enabled_capabilities and c not in unknown]
        if disabled:
            return f"disabled capabilities: {', '.join(disabled)}"
    if f._override_index:
        namespace = m.namespace
        for (group, kind, ns, name), override in f._override_index.items():
            if (group, kind, name) == (m.group, m.kind, m.name) and (not namespace or ns == namespace):
                if override.unmanaged:
                    return "overridden"
                break
    return None


def parse_list(value: str | None) -> frozenset[str]:
    return frozenset(_split(value)) if value else frozenset()


def known_or_error(values: Iterable[str], known: Sequence[str], what: str) -> list[str]:
    """Names in ``values`` that are not in ``known`` (for flag validation)."""
    return [v for v in values if v not in known]
