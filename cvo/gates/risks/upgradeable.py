"""ClusterOperators that report ``Upgradeable=False`` (pkg/risk/upgradeable/upgradeable.go): one risk
each, named ``ClusterOperatorUpgradeable-NAME``, with the operator's message, for the major and minor
updates."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from cvo.gates.risks.reads import Failed
from cvo.gates.risks.versions import ALWAYS_RULES, DOCS, for_major_and_minor, updating_docs
from cvo.objects import ClusterOperator
from cvo.payload import semver
from cvo.updates.model import Risk
from cvo.updates.sources import SourcedRisks

CLUSTER_OPERATOR_UPGRADEABLE = "ClusterOperatorUpgradeable"

Operators = Sequence[ClusterOperator] | Failed


def blocking(cos: Sequence[ClusterOperator]) -> list[ClusterOperator]:
    """The ClusterOperators with ``Upgradeable=False``, by name."""
    out = []
    for co in cos:
        cond = co.status.condition("Upgradeable")
        if cond is not None and cond.status == "False":
            out.append(co)
    return sorted(out, key=lambda co: co.name)


def cluster_operator_risks(name: str, current_version: str, cos: Operators, versions: Sequence[str]) -> SourcedRisks:
    """``upgradeable.Risks``."""
    try:
        current = semver.parse(current_version)
    except semver.SemverError as err:
        return for_major_and_minor(semver.Version(0, 0, 0), SourcedRisks((Risk(
            f"{name}Unknown", f"Failed to parse cluster version to check Upgradeable conditions: {err}", DOCS,
            ALWAYS_RULES),), error=str(err)), versions)
    if isinstance(cos, Failed):
        return for_major_and_minor(current, SourcedRisks((Risk(
            f"{name}Unknown", f"Failed to retrieve ClusterOperators to check Upgradeable conditions: {cos.message}",
            updating_docs(current), ALWAYS_RULES),), error=cos.message), versions)
    risks = []
    for co in blocking(cos):
        cond = co.status.condition("Upgradeable")
        risks.append(Risk(f"{name}-{co.name}", cond.message if cond else "", updating_docs(current), ALWAYS_RULES))
    return for_major_and_minor(current, SourcedRisks(tuple(risks)), versions)


class ClusterOperatorUpgradeable:
    def __init__(self, current_version: Callable[[], Awaitable[str]], cluster_operators: Callable[[], Awaitable[Operators]],
                 name: str = CLUSTER_OPERATOR_UPGRADEABLE) -> None:
        self.name = name
        self.current_version = current_version
        self.cluster_operators = cluster_operators

    async def risks(self, versions: Sequence[str]) -> SourcedRisks:
        return cluster_operator_risks(self.name, await self.current_version(), await self.cluster_operators(),
                                      versions)
