"""The risks the ClusterVersion itself carries: an update in progress (pkg/risk/updating/updating.go) and
overrides that take components out of the CVO's hands (pkg/risk/overrides/overrides.go).  Both apply to
the major and minor updates beyond ``status.desired``; a ClusterVersion that does not exist has none."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from cvo.gates.risks.versions import ALWAYS_RULES, DOCS, major_and_minor_updates, updating_docs
from cvo.objects import ClusterVersion
from cvo.payload import semver
from cvo.payload.gostrings import go_quote
from cvo.updates.model import Risk
from cvo.updates.sources import SourcedRisks

UPDATING = "ClusterVersionUpdating"
OVERRIDES = "ClusterVersionOverrides"
OVERRIDES_MESSAGE = ("Disabling ownership via cluster version overrides prevents updates between minor or major "
                     "versions. Please remove overrides before requesting a minor or major version update.")

GetClusterVersion = Callable[[], Awaitable[ClusterVersion | None]]


def _one(cv: ClusterVersion, risk: Callable[[semver.Version], Risk], versions: Sequence[str]) -> SourcedRisks:
    desired = cv.status.desired.version
    try:
        version = semver.parse(desired)
    except semver.SemverError as err:
        return SourcedRisks(error=f"failed to parse current target {go_quote(desired)} to SemVer: {err}")
    found = risk(version)
    updates = major_and_minor_updates(version, versions)
    return SourcedRisks((found,), {found.name: updates} if updates else {})


def is_updating(cv: ClusterVersion) -> bool:
    """``IsOperatorStatusConditionTrue(Progressing)``."""
    progressing = cv.status.condition("Progressing")
    return progressing is not None and progressing.status == "True"


def updating_risks(name: str, cv: ClusterVersion | None, versions: Sequence[str]) -> SourcedRisks:
    """``updating.Risks``: while ``Progressing=True``, the risk ``name``."""
    if cv is None or not is_updating(cv):
        return SourcedRisks()
    return _one(cv, lambda v: Risk(name, "An update is already in progress and the details are in the Progressing "
                                         "condition.", updating_docs(v), ALWAYS_RULES), versions)


def has_overrides(cv: ClusterVersion) -> bool:
    return any(o.unmanaged for o in cv.spec.overrides)


def overrides_risks(name: str, cv: ClusterVersion | None, versions: Sequence[str]) -> SourcedRisks:
    """``overrides.Risks``: while some ``spec.overrides`` entry is ``unmanaged``, the risk ``name``."""
    if cv is None or not has_overrides(cv):
        return SourcedRisks()
    return _one(cv, lambda v: Risk(name, OVERRIDES_MESSAGE,
                                   f"{DOCS}{v.major}.{v.minor}/html/config_apis/clusterversion-config-openshift-io-v1"
                                   "#spec-8", ALWAYS_RULES), versions)


class Updating:
    def __init__(self, cluster_version: GetClusterVersion, name: str = UPDATING) -> None:
        self.name = name
        self.cluster_version = cluster_version

    async def risks(self, versions: Sequence[str]) -> SourcedRisks:
        return updating_risks(self.name, await self.cluster_version(), versions)


class Overrides:
    def __init__(self, cluster_version: GetClusterVersion, name: str = OVERRIDES) -> None:
        self.name = name
        self.cluster_version = cluster_version

    async def risks(self, versions: Sequence[str]) -> SourcedRisks:
        return overrides_risks(self.name, await self.cluster_version(), versions)
