"""cvo's own source, which the CVO does not have: OperatorConditions that block (OLM's
``isOperatorUpgradeable``, :func:`cvo.gates.olm.upgradeable_verdict`: an admin's ``spec.overrides``
entry wins, an outdated report blocks).  One risk each, named ``OperatorConditionUpgradeable-NAMESPACE.NAME``,
for the major and minor updates, built as pkg/risk/upgradeable/upgradeable.go builds the ClusterOperators'."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from cvo.gates.olm import Verdict, synced_status, upgradeable_verdict
from cvo.gates.risks.reads import Failed
from cvo.gates.risks.versions import ALWAYS_RULES, DOCS, for_major_and_minor
from cvo.objects import OperatorCondition
from cvo.payload import semver
from cvo.updates.model import Risk
from cvo.updates.sources import SourcedRisks

OPERATOR_CONDITION_UPGRADEABLE = "OperatorConditionUpgradeable"
OLM_DOCS = "https://olm.operatorframework.io/docs/concepts/crds/operatorcondition/"

Conditions = Sequence[OperatorCondition] | Failed


def effective(oc: OperatorCondition) -> OperatorCondition:
    """The OperatorCondition as OLM's controller, which keeps copying spec.conditions into status,
    leaves it: evaluating the stored object alone would call a report stale just because nobody
    has copied it yet (e.g. right after an admin edited spec.overrides)."""
    status = synced_status(dict(oc.body))
    return oc if status is None else oc.replaced(status=status)


def blocking(ocs: Sequence[OperatorCondition], assume_synced: bool = False) -> list[tuple[OperatorCondition, Verdict]]:
    """The OperatorConditions that block, by namespace and name, with OLM's verdict on each."""
    out = []
    for oc in sorted(ocs, key=lambda o: (o.namespace, o.name)):
        verdict = upgradeable_verdict(effective(oc) if assume_synced else oc)
        if not verdict.upgradeable:
            out.append((oc, verdict))
    return out


def risk_name(name: str, oc: OperatorCondition) -> str:
    return f"{name}-{oc.namespace}.{oc.name}"


def operator_condition_risks(name: str, current_version: str, ocs: Conditions, versions: Sequence[str],
                             assume_synced: bool = False) -> SourcedRisks:
    """``assume_synced``: judge each as it is once spec.conditions are copied to status (:func:`effective`)."""
    try:
        current = semver.parse(current_version)
    except semver.SemverError as err:
        return for_major_and_minor(semver.Version(0, 0, 0), SourcedRisks((Risk(
            f"{name}Unknown", f"Failed to parse cluster version to check OperatorConditions: {err}", DOCS,
            ALWAYS_RULES),), error=str(err)), versions)
    if isinstance(ocs, Failed):
        return for_major_and_minor(current, SourcedRisks((Risk(
            f"{name}Unknown", f"Failed to retrieve OperatorConditions to check Upgradeable conditions: {ocs.message}",
            OLM_DOCS, ALWAYS_RULES),), error=ocs.message), versions)
    risks = tuple(Risk(risk_name(name, oc), f"Operator {oc.name} should not be upgraded between minor or major versions: "
                                            f"{verdict.message} (OperatorCondition {oc.namespace}/{oc.name})",
                       OLM_DOCS, ALWAYS_RULES)
                  for oc, verdict in blocking(ocs, assume_synced))
    return for_major_and_minor(current, SourcedRisks(risks), versions)


class OperatorConditionUpgradeable:
    def __init__(self, current_version: Callable[[], Awaitable[str]],
                 operator_conditions: Callable[[], Awaitable[Conditions]], name: str = OPERATOR_CONDITION_UPGRADEABLE,
                 assume_synced: bool = False) -> None:
        self.name = name
        self.current_version = current_version
        self.operator_conditions = operator_conditions
        self.assume_synced = assume_synced

    async def risks(self, versions: Sequence[str]) -> SourcedRisks:
        return operator_condition_risks(self.name, await self.current_version(), await self.operator_conditions(),
                                        versions, self.assume_synced)
