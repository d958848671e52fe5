"""The ClusterVersion ``Upgradeable`` condition, derived from risks (pkg/cvo/status.go ``setUpgradeableCondition``,
the CVO at 6e71933).

The sources of pkg/cvo/cvo.go's ``optr.upgradeable``, in its order — an update in progress, ClusterVersion
overrides, deletions in progress, admin-ack gates, ClusterOperators with ``Upgradeable=False`` — and cvo's
own last, OperatorConditions (:mod:`cvo.gates.risks`).  Every risk that applies blocks: none, no
``Upgradeable`` condition; one, ``Upgradeable=False`` with the risk's name as reason (or
``RiskNameNotCompatibleWithReasonProperty``) and its message; several, ``MultipleReasons`` and each
message; none found but an error, ``Upgradeable=Unknown`` (``EvaluationFailed``).  The older
``Upgradeable*`` sub-conditions are removed.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cvo.cluster.api import Ref
from cvo.gates.risks.adminack import ADMIN_ACK, admin_ack_risks
from cvo.gates.risks.aggregate import combine
from cvo.gates.risks.cluster_version import OVERRIDES, UPDATING, overrides_risks, updating_risks
from cvo.gates.risks.deletion import DELETION, deletion_risks
from cvo.gates.risks.operatorconditions import (
    OPERATOR_CONDITION_UPGRADEABLE,
    Conditions,
    operator_condition_risks,
)
from cvo.gates.risks.reads import Read
from cvo.gates.risks.upgradeable import CLUSTER_OPERATOR_UPGRADEABLE, Operators, cluster_operator_risks
from cvo.objects import ClusterVersion
from cvo.payload.conditions import set_condition
from cvo.payload.fields import entries
from cvo.updates.model import Risk
from cvo.updates.sources import SourcedRisks

UPGRADEABLE = "Upgradeable"
# pkg/internal/constants.go: the sub-conditions of the classic aggregation, removed now; and cvo's own.
OBSOLETE = ("UpgradeableAdminAckRequired", "UpgradeableDeletesInProgress", "UpgradeableClusterOperators",
            "UpgradeableClusterVersionOverrides", "UpgradeableUpgradeInProgress", "UpgradeableOperatorConditions")
# The sources, in pkg/cvo/cvo.go's order, cvo's OperatorConditions last.
SOURCES = (UPDATING, OVERRIDES, DELETION, ADMIN_ACK, CLUSTER_OPERATOR_UPGRADEABLE, OPERATOR_CONDITION_UPGRADEABLE)
REASON_PATTERN = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")  # pkg/cvo/availableupdates.go reasonPattern
INCOMPATIBLE_REASON = "RiskNameNotCompatibleWithReasonProperty"
MULTIPLE_REASONS = "MultipleReasons"
EVALUATION_FAILED = "EvaluationFailed"


@dataclass(frozen=True)
class ClusterState:
    """What the sources read, at one moment (the CVO's listers): the ClusterVersion (``None``: none yet), the
    ClusterOperators, the OperatorConditions, the deletions in progress, and the admin-gates and admin-acks
    ConfigMaps.  ``assume_synced`` judges OperatorConditions as they are once their spec.conditions are
    copied to status (what a dry run predicts; a sweep runs the copy itself)."""

    cluster_version: ClusterVersion | None
    cluster_operators: Operators = ()
    operator_conditions: Conditions = ()
    deletes_in_progress: Sequence[Ref] = ()
    admin_gates: Read = None
    admin_acks: Read = None
    assume_synced: bool = False

    @property
    def current_version(self) -> str:
        """The version the cluster runs or goes to (the CVO's ``currentVersion()``, its own release)."""
        return self.cluster_version.status.desired.version if self.cluster_version is not None else ""


def upgradeable_risks(state: ClusterState, versions: Sequence[str]) -> SourcedRisks:
    """``optr.upgradeable.Risks``: what every source finds now, aggregated (nothing without a ClusterVersion: the
    CVO always has one, and its own release's version)."""
    if state.cluster_version is None:
        return SourcedRisks()
    current = state.current_version
    return combine([
        (UPDATING, updating_risks(UPDATING, state.cluster_version, versions)),
        (OVERRIDES, overrides_risks(OVERRIDES, state.cluster_version, versions)),
        (DELETION, deletion_risks(DELETION, current, state.deletes_in_progress, versions)),
        (ADMIN_ACK, admin_ack_risks(ADMIN_ACK, current, state.admin_gates, state.admin_acks, versions)),
        (CLUSTER_OPERATOR_UPGRADEABLE, cluster_operator_risks(CLUSTER_OPERATOR_UPGRADEABLE, current,
                                                              state.cluster_operators, versions)),
        (OPERATOR_CONDITION_UPGRADEABLE, operator_condition_risks(OPERATOR_CONDITION_UPGRADEABLE, current,
                                                                  state.operator_conditions, versions,
                                                                  state.assume_synced)),
    ])


class UpgradeableRisks:
    """``optr.upgradeable`` as a :class:`cvo.updates.sources.RiskSource`: ``read`` gives the cluster's state."""

    def __init__(self, read: Callable[[], Awaitable[ClusterState]]) -> None:
        self.read = read
        self.name = f"Aggregate({', '.join(SOURCES)})"

    async def risks(self, versions: Sequence[str]) -> SourcedRisks:
        return upgradeable_risks(await self.read(), versions)


def update_versions(status: Mapping[str, Any]) -> list[str]:
    """Every update's version in a status: ``availableUpdates``, then ``conditionalUpdates``."""
    out = [str(r.get("version", "")) for r in entries(status.get("availableUpdates"))]
    for update in entries(status.get("conditionalUpdates")):
        release = update.get("release")
        out.append(str(release.get("version", "")) if isinstance(release, Mapping) else "")
    return out


def applies(risk: Risk) -> bool:
    """Whether a risk counts for ``Upgradeable``: its ``Applies`` condition is not False; without one, its
    rules matched or could not be evaluated here (``setUpgradeableCondition`` keeps both)."""
    for cond in risk.conditions:
        if cond.get("type") == "Applies":
            return cond.get("status") != "False"
    return True


def set_upgradeable(status: Mapping[str, Any], found: SourcedRisks, now: datetime) -> dict[str, Any]:
    """``status`` (a ClusterVersion's, as JSON) with ``Upgradeable`` set from ``found``."""
    risks = [r for r in found.risks if applies(r)]
    conditions = [dict(c) for c in entries(status.get("conditions")) if c.get("type") not in OBSOLETE]
    if not risks:
        if found.error:
            set_condition(conditions, UPGRADEABLE, "Unknown", EVALUATION_FAILED, found.error, now)
        else:
            conditions = [c for c in conditions if c.get("type") != UPGRADEABLE]
    else:
        reason = risks[0].name if REASON_PATTERN.match(risks[0].name) else INCOMPATIBLE_REASON
        message = risks[0].message
        if len(risks) > 1:
            reason = MULTIPLE_REASONS
            message = ("Cluster should not be upgraded between minor or major versions for multiple reasons:\n* "
                       + "\n* ".join(r.message for r in risks))
        set_condition(conditions, UPGRADEABLE, "False", reason, message, now)
    return {**status, "conditions": conditions}
