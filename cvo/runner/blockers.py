"""What blocks minor updates while a sweep runs, kept up to date from its watches.

The ClusterOperators that report ``Upgradeable=False`` are kept from the ClusterOperator watch's events
(as the CVO's listers are), not listed on every report: the status is reported on every edge, and
listing every operator each time made large payloads quadratic.  The sweep hands the result to the
status writer as a :class:`cvo.status.parts.UpgradeableInputs` (pkg/cvo/upgradeable.go ``syncUpgradeable``).
"""

from __future__ import annotations

from typing import Any

from cvo.cluster.api import CLUSTER_OPERATOR, Cluster
from cvo.cluster.informer import Informer
from cvo.gates.upgradeable import UPGRADEABLE
from cvo.payload.conditions import find_condition
from cvo.payload.fields import dig, entries
from cvo.runner.apply import DeleteTracker
from cvo.runner.operator_conditions import OperatorConditionManager
from cvo.status.parts import UpgradeableInputs


def _blocks(co: dict[str, Any]) -> bool:
    cond = find_condition(entries(dig(co, "status", "conditions")), UPGRADEABLE)
    return cond is not None and cond.get("status") == "False"


class UpgradeBlockers:
    def __init__(self, cluster: Cluster, operators: Informer, olm: OperatorConditionManager,
                 deletes: DeleteTracker) -> None:
        self.cluster = cluster
        self.operators = operators
        self.olm = olm
        self.deletes = deletes
        self._blocking: dict[str, dict[str, Any]] = {}  # ClusterOperators with Upgradeable=False, from the watch
        operators.listeners.append(self._track)

    def _track(self, name: str, co: dict[str, Any] | None) -> None:
        if co is not None and _blocks(co):
            self._blocking[name] = co
        else:
            self._blocking.pop(name, None)

    async def inputs(self) -> UpgradeableInputs:
        """What blocks now (the watch's view while it runs; a list of the ClusterOperators otherwise)."""
        if self.operators.running:
            cos = list(self._blocking.values())
        else:
            cos = [co for co in await self.cluster.list(*CLUSTER_OPERATOR) if _blocks(co)]
        return UpgradeableInputs(tuple(cos), tuple(await self.olm.conditions()), tuple(self.deletes.in_progress()))
