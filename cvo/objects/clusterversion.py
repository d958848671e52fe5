"""ClusterVersion (``config.openshift.io/v1``): the cluster's desired release, its history and conditions.

Checked against ``manifests/0000_00_cvo_01_clusterversions.crd.yaml``; the fields are openshift/api
``config/v1/types_cluster_version.go``'s that cvo reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cvo.objects.base import Kind, Object, crd
from cvo.objects.condition import Condition, MetaCondition, find
from cvo.objects.times import Time
from cvo.objects.view import View

COMPLETED = "Completed"


@dataclass(frozen=True)
class Release(View):
    """``status.desired``, an available update: a release by version and image."""

    version: str = ""
    image: str = ""
    url: str = ""
    channels: tuple[str, ...] = ()
    architecture: str = ""


@dataclass(frozen=True)
class PromQLRule(View):
    promql: str = ""


@dataclass(frozen=True)
class MatchingRule(View):
    """A ``ClusterCondition``: when a risk applies (``Always``, or ``PromQL`` with its query)."""

    type: str = ""
    promql: PromQLRule | None = None


@dataclass(frozen=True)
class ConditionalUpdateRisk(View):
    url: str = ""
    name: str = ""
    message: str = ""
    matching_rules: tuple[MatchingRule, ...] = ()
    conditions: tuple[MetaCondition, ...] = ()  # Applies (gated: ClusterUpdateAcceptRisks)

    def condition(self, type_: str) -> MetaCondition | None:
        return find(self.conditions, type_)


@dataclass(frozen=True)
class ConditionalUpdate(View):
    """An entry of ``status.conditionalUpdates``: a release, its risks, and its ``Recommended`` condition."""

    release: Release = field(default_factory=Release)
    risks: tuple[ConditionalUpdateRisk, ...] = ()
    conditions: tuple[MetaCondition, ...] = ()
    risk_names: tuple[str, ...] = ()  # gated: ClusterUpdateAcceptRisks

    def condition(self, type_: str) -> MetaCondition | None:
        return find(self.conditions, type_)


@dataclass(frozen=True)
class AcceptRisk(View):
    name: str = ""


@dataclass(frozen=True)
class Update(View):
    """``spec.desiredUpdate``; ``accept_risks`` is gated (ClusterUpdateAcceptRisks)."""

    version: str = ""
    image: str = ""
    force: bool = False
    architecture: str = ""
    accept_risks: tuple[AcceptRisk, ...] = ()


@dataclass(frozen=True)
class ComponentOverride(View):
    """An entry of ``spec.overrides``: an object the CVO leaves alone when ``unmanaged``."""

    kind: str = ""
    group: str = ""
    namespace: str = ""
    name: str = ""
    unmanaged: bool = False


@dataclass(frozen=True)
class Capabilities(View):
    baseline_capability_set: str = ""
    additional_enabled_capabilities: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterVersionSpec(View):
    cluster_id: str = field(default="", metadata={"key": "clusterID"})
    desired_update: Update | None = None
    upstream: str = ""
    channel: str = ""
    capabilities: Capabilities | None = None
    overrides: tuple[ComponentOverride, ...] = ()


@dataclass(frozen=True)
class UpdateHistory(View):
    """An entry of ``status.history`` (newest first)."""

    state: str = ""
    started_time: Time | None = None
    completion_time: Time | None = None
    version: str = ""
    image: str = ""
    verified: bool = False
    accepted_risks: str = ""


@dataclass(frozen=True)
class CapabilitiesStatus(View):
    enabled_capabilities: tuple[str, ...] = ()
    known_capabilities: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterVersionStatus(View):
    desired: Release = field(default_factory=Release)
    history: tuple[UpdateHistory, ...] = ()
    observed_generation: int = 0
    version_hash: str = ""
    capabilities: CapabilitiesStatus = field(default_factory=CapabilitiesStatus)
    conditions: tuple[Condition, ...] = ()
    available_updates: tuple[Release, ...] = ()
    conditional_updates: tuple[ConditionalUpdate, ...] = ()
    conditional_update_risks: tuple[ConditionalUpdateRisk, ...] = ()  # gated: ClusterUpdateAcceptRisks

    def condition(self, type_: str) -> Condition | None:
        return find(self.conditions, type_)

    @property
    def current_version(self) -> str:
        """``GetCurrentVersion`` (pkg/payload/precondition/clusterversion/upgradeable.go): the first Completed
        history entry's version, else the oldest entry's."""
        for entry in self.history:
            if entry.state == COMPLETED:
                return entry.version
        return self.history[-1].version if self.history else ""


@dataclass(frozen=True)
class ClusterVersion(Object):
    KIND = Kind("config.openshift.io", "ClusterVersion", crd("0000_00_cvo_01_clusterversions.crd.yaml", "v1"))

    spec: ClusterVersionSpec = field(default_factory=ClusterVersionSpec)
    status: ClusterVersionStatus = field(default_factory=ClusterVersionStatus)
