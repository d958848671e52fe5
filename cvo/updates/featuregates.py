"""Which of the CVO's feature-gated behaviours are on (pkg/featuregates/featuregates.go ``CvoGates``,
``DefaultCvoGates``, ``CvoGatesFromFeatureGate``; pkg/cvo/cvo.go ``shouldReconcileAcceptRisks``).

The CVO reads the cluster's FeatureGate ``cluster``: the ``status.featureGates`` entry for its own version
(rendered by the cluster-config-operator) decides; without one it runs with every gate off.  No
cluster-config-operator renders that status in cvo's clusters, so cvo goes one step further (its extension):

    1. status.featureGates has the version           -> as the CVO (CvoGatesFromFeatureGate)
    2. else spec.featureSet (or --feature-set)       -> the gates openshift/api's features.go enables in
       that set (CustomNoUpgrade: spec.customNoUpgrade.enabled/disabled)
    3. else                                          -> DefaultCvoGates: all off, unknown version
    and --feature-gates A,B turns on the gates it names, whatever the above says.

``accept_risks`` (``ClusterUpdateAcceptRisks``) is the gate of ``spec.desiredUpdate.acceptRisks``,
``riskNames``, the risks' ``Applies`` conditions, ``status.conditionalUpdateRisks`` and alerts as risks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FEATURE_GATE = ("config.openshift.io", "FeatureGate", "cluster")  # group, kind, name (cluster-scoped)

ACCEPT_RISKS = "ClusterUpdateAcceptRisks"
IMAGE_STREAM_IMPORT_MODE = "ImageStreamImportMode"  # the CVO's statusReleaseArchitecture
CVO_CONFIGURATION = "ClusterVersionOperatorConfiguration"

DEFAULT, TECH_PREVIEW, DEV_PREVIEW, OKD, CUSTOM = (
    "Default", "TechPreviewNoUpgrade", "DevPreviewNoUpgrade", "OKD", "CustomNoUpgrade")

# openshift/api features/features.go (as vendored by the CVO at 6e71933): the feature sets enabling each
# gate the CVO reads.
ENABLED_IN: Mapping[str, frozenset[str]] = {
    ACCEPT_RISKS: frozenset({DEV_PREVIEW, TECH_PREVIEW}),
    IMAGE_STREAM_IMPORT_MODE: frozenset({DEFAULT, OKD, TECH_PREVIEW, DEV_PREVIEW}),
    CVO_CONFIGURATION: frozenset({TECH_PREVIEW, DEV_PREVIEW}),
}


@dataclass(frozen=True)
class CvoGates:
    """featuregates.go ``CvoGates``; ``source`` says which rule above decided (for logs and docs)."""

    unknown_version: bool = True
    status_release_architecture: bool = False
    cvo_configuration: bool = False
    accept_risks: bool = False
    source: str = "default"

    def with_enabled(self, names: Iterable[str]) -> CvoGates:
        names = set(names)
        if not names & set(ENABLED_IN):
            return self
        return CvoGates(self.unknown_version,
                        self.status_release_architecture or IMAGE_STREAM_IMPORT_MODE in names,
                        self.cvo_configuration or CVO_CONFIGURATION in names,
                        self.accept_risks or ACCEPT_RISKS in names, f"{self.source}+--feature-gates")


def _gates(enabled: set[str], disabled: set[str], unknown: bool, source: str) -> CvoGates:
    def on(name: str) -> bool:
        return name in enabled and name not in disabled
    return CvoGates(unknown, on(IMAGE_STREAM_IMPORT_MODE), on(CVO_CONFIGURATION), on(ACCEPT_RISKS), source)


def _names(entries: Any) -> set[str]:
    """``[{name: X}, …]`` (status) or ``[X, …]`` (spec.customNoUpgrade) as a set of names."""
    out: set[str] = set()
    for entry in entries if isinstance(entries, list) else []:
        name = entry.get("name") if isinstance(entry, Mapping) else entry
        if isinstance(name, str):
            out.add(name)
    return out


def from_feature_gate_status(feature_gate: Mapping[str, Any], version: str) -> CvoGates | None:
    """``CvoGatesFromFeatureGate``: the gates of ``version``'s status entry, or None when it has none.
    Every matching entry is applied in order (a later entry's enabled and disabled win, as in Go)."""
    status = feature_gate.get("status")
    entries = status.get("featureGates") if isinstance(status, Mapping) else None
    found: CvoGates | None = None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or entry.get("version") != version:
            continue
        base = found or CvoGates()
        enabled, disabled = _names(entry.get("enabled")), _names(entry.get("disabled"))

        def pick(name: str, now: bool, enabled: set[str] = enabled, disabled: set[str] = disabled) -> bool:
            return False if name in disabled else (True if name in enabled else now)
        found = CvoGates(False, pick(IMAGE_STREAM_IMPORT_MODE, base.status_release_architecture),
                         pick(CVO_CONFIGURATION, base.cvo_configuration), pick(ACCEPT_RISKS, base.accept_risks),
                         "status")
    return found


def from_feature_set(feature_set: str, custom: Mapping[str, Any] | None = None) -> CvoGates | None:
    """The gates a feature set enables (openshift/api), or None for a set cvo does not know."""
    name = feature_set or DEFAULT
    if name == CUSTOM:
        custom = custom or {}
        return _gates(_names(custom.get("enabled")), _names(custom.get("disabled")), False, f"featureSet {CUSTOM}")
    if name not in (DEFAULT, TECH_PREVIEW, DEV_PREVIEW, OKD):
        return None
    return _gates({g for g, sets in ENABLED_IN.items() if name in sets}, set(), False, f"featureSet {name}")


def cvo_gates(feature_gate: Mapping[str, Any] | None, version: str, *, feature_set: str = "",
              enabled: Iterable[str] = ()) -> CvoGates:
    """The gates, by the rules in this module's docstring.  ``feature_gate``: the FeatureGate ``cluster``
    (None when absent); ``feature_set``/``enabled``: the ``--feature-set``/``--feature-gates`` flags."""
    gates: CvoGates | None = None
    if isinstance(feature_gate, Mapping):
        gates = from_feature_gate_status(feature_gate, version)
        spec = feature_gate.get("spec")
        if gates is None and isinstance(spec, Mapping) and isinstance(spec.get("featureSet"), str):
            custom = spec.get("customNoUpgrade")
            gates = from_feature_set(spec["featureSet"], custom if isinstance(custom, Mapping) else None)
    if gates is None and feature_set:
        gates = from_feature_set(feature_set)
    return (gates or CvoGates()).with_enabled(enabled)


def accepted_risk_names(desired_update: Mapping[str, Any] | None) -> frozenset[str]:
    """``spec.desiredUpdate.acceptRisks[].name`` as a set (syncAvailableUpdates' ``acceptRisks``)."""
    if not isinstance(desired_update, Mapping):
        return frozenset()
    return frozenset(_names(desired_update.get("acceptRisks")))
