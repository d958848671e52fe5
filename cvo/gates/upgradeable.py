"""The ClusterVersion ``Upgradeable`` condition, aggregated from everything that can block.

cvo follows the classic aggregation (pkg/cvo/upgradeable.go `setUpgradeableConditions` up to release-4.22): each source
that blocks becomes a sub-condition; one blocker sets ``Upgradeable=False`` with its reason and
message; several keep their sub-conditions and set ``MultipleReasons``.  Sources, in order:
ClusterVersion overrides, ClusterOperators, resource deletions in progress, and — cvo's addition,
from the OperatorCondition enhancement — OperatorConditions (an admin's override wins).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cvo.cluster.api import Ref
from cvo.gates.olm import synced_status, upgradeable_verdict
from cvo.gates.preconditions import OVERRIDES_MESSAGE
from cvo.objects import ClusterOperator, ClusterVersion, OperatorCondition
from cvo.payload.conditions import set_condition
from cvo.payload.fields import entries


def effective(oc: OperatorCondition) -> OperatorCondition:
    """The OperatorCondition as OLM's controller, which keeps copying spec.conditions into status,
    leaves it: evaluating the stored object alone would call a report stale just because nobody
    has copied it yet (e.g. right after an admin edited spec.overrides)."""
    status = synced_status(dict(oc.body))
    return oc if status is None else oc.replaced(status=status)


UPGRADEABLE = "Upgradeable"
OVERRIDES_TYPE = "UpgradeableClusterVersionOverrides"
OPERATORS_TYPE = "UpgradeableClusterOperators"
DELETES_TYPE = "UpgradeableDeletesInProgress"
CONDITIONS_TYPE = "UpgradeableOperatorConditions"
SUB_TYPES = (OVERRIDES_TYPE, OPERATORS_TYPE, DELETES_TYPE, CONDITIONS_TYPE)


@dataclass(frozen=True)
class Blocker:
    type: str  # the sub-condition type
    reason: str
    message: str
    who: tuple[str, ...] = ()  # the ClusterOperators or OperatorConditions that block
    override: str = ""  # the command that would let it through, for `cvo upgrade --dry-run`


def _cluster_operators(cos: Sequence[ClusterOperator]) -> Blocker | None:
    blocking = []
    for co in sorted(cos, key=lambda o: o.name):
        cond = co.status.condition(UPGRADEABLE)
        if cond is not None and cond.status == "False":
            blocking.append((co.name, cond))
    if not blocking:
        return None
    names = tuple(n for n, _ in blocking)
    if len(blocking) == 1:
        name, cond = blocking[0]
        return Blocker(OPERATORS_TYPE, cond.reason or "ClusterOperatorNotUpgradeable",
                       f"Cluster operator {name} should not be upgraded between minor versions: {cond.message}", names)
    lines = [f"Cluster operator {name} should not be upgraded between minor versions: {cond.reason}: {cond.message}"
             for name, cond in blocking]
    return Blocker(OPERATORS_TYPE, "ClusterOperatorsNotUpgradeable",
                   "Multiple cluster operators should not be upgraded between minor versions:\n* " + "\n* ".join(lines),
                   names)


def operator_condition_owner(oc: OperatorCondition) -> str:
    """The ClusterOperator an OperatorCondition speaks for (cvo names them after it)."""
    return oc.name


def _operator_conditions(ocs: Sequence[OperatorCondition], assume_synced: bool) -> Blocker | None:
    blocking = []
    for oc in sorted(ocs, key=lambda o: (o.namespace, o.name)):
        verdict = upgradeable_verdict(effective(oc) if assume_synced else oc)
        if not verdict.upgradeable:
            blocking.append((oc, verdict))
    if not blocking:
        return None

    def line(oc: OperatorCondition, reason: str, message: str) -> str:
        return (f"Operator {operator_condition_owner(oc)} should not be upgraded between minor versions: "
                f"{reason + ': ' if reason else ''}{message} (OperatorCondition {oc.namespace}/{oc.name})")

    names = tuple(operator_condition_owner(oc) for oc, _ in blocking)
    if len(blocking) == 1:
        oc, verdict = blocking[0]
        return Blocker(CONDITIONS_TYPE, verdict.reason, line(oc, "", verdict.message), names)
    return Blocker(CONDITIONS_TYPE, "OperatorConditionsNotUpgradeable",
                   "Multiple operators should not be upgraded between minor versions:\n* "
                   + "\n* ".join(line(oc, v.reason, v.message) for oc, v in blocking), names)


def blockers(cv: ClusterVersion | Mapping[str, Any], cos: Sequence[ClusterOperator | Mapping[str, Any]],
             ocs: Sequence[OperatorCondition | Mapping[str, Any]], deletes_in_progress: Sequence[Ref] = (),
             assume_synced: bool = False) -> list[Blocker]:
    """Every source that blocks minor and major updates now, in the CVO's order.

    ``assume_synced`` evaluates OperatorConditions as they are once their spec.conditions have been
    copied to status (what a dry run predicts; a sweep runs the copy itself).  Objects not read into
    views yet are read here (:meth:`cvo.objects.Object.of`)."""
    out: list[Blocker] = []
    if any(o.unmanaged for o in ClusterVersion.of(cv).spec.overrides):
        out.append(Blocker(OVERRIDES_TYPE, "ClusterVersionOverridesSet", OVERRIDES_MESSAGE))
    if (b := _cluster_operators([ClusterOperator.of(co) for co in cos])) is not None:
        out.append(b)
    if deletes_in_progress:
        resources = ",".join(f'{r.kind} "{r.namespace + "/" if r.namespace else ""}{r.name}"' for r in deletes_in_progress)
        out.append(Blocker(DELETES_TYPE, "ResourceDeletesInProgress",
                           "Cluster minor or major version upgrades are not allowed while resource deletions are in "
                           f"progress; resources={resources}"))
    if (b := _operator_conditions([OperatorCondition.of(oc) for oc in ocs], assume_synced)) is not None:
        out.append(b)
    return out


def apply_upgradeable(status: Mapping[str, Any], found: Sequence[Blocker], now: datetime) -> dict[str, Any]:
    """``status`` (a ClusterVersion's, as JSON: the writers' input) with the Upgradeable condition and its
    sub-conditions set from ``found``; conditions of the wrong shape are dropped."""
    new = dict(status)
    conditions = [dict(c) for c in entries(status.get("conditions"))]
    keep_subs = len(found) >= 2
    present = {b.type for b in found}
    conditions = [c for c in conditions if c.get("type") not in SUB_TYPES or (keep_subs and c.get("type") in present)]
    if not found:
        conditions = [c for c in conditions if c.get("type") != UPGRADEABLE]
    elif len(found) == 1:
        set_condition(conditions, UPGRADEABLE, "False", found[0].reason, found[0].message, now)
    else:
        for b in found:
            set_condition(conditions, b.type, "False", b.reason, b.message, now)
        set_condition(conditions, UPGRADEABLE, "False", "MultipleReasons",
                      "Cluster should not be upgraded between minor versions for multiple reasons: "
                      + ",".join(b.reason for b in found) + "\n* " + "\n* ".join(b.message for b in found), now)
    new["conditions"] = conditions
    return new
