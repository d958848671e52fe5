"""What blocks minor and major updates, read from the cluster: the state the risk sources of ``Upgradeable``
judge (:class:`cvo.gates.upgradeable.ClusterState`), kept up to date from a sweep's watches.

The ClusterOperators that report ``Upgradeable=False`` are kept from the ClusterOperator watch's events
(as the CVO's listers are), not listed on every report: the status is reported on every edge, and
listing every operator each time made large payloads quadratic.  The sweep hands the result to the
status writer as a :class:`cvo.status.parts.UpgradeableInputs` (pkg/cvo/status.go ``setUpgradeableCondition``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cvo.cluster.api import CLUSTER_OPERATOR, ApiError, Cluster, ReadOnlyCluster, Ref, cv_ref, is_transient
from cvo.cluster.informer import Informer
from cvo.gates.olm import OC_API_VERSION, OC_GROUP, OC_KIND
from cvo.gates.risks.adminack import ADMIN_ACKS_REF, ADMIN_GATES_REF
from cvo.gates.risks.alert import AlertReader, AlertRisks
from cvo.gates.risks.reads import Failed, Read
from cvo.gates.upgradeable import UPGRADEABLE, ClusterState, UpgradeableRisks
from cvo.objects import ClusterOperator, ClusterVersion, OperatorCondition
from cvo.payload.conditions import find_condition
from cvo.payload.fields import dig, entries
from cvo.runner.apply import DeleteTracker
from cvo.runner.operator_conditions import OperatorConditionManager
from cvo.status.parts import UpgradeableInputs
from cvo.updates.sources import RiskSource


def _blocks(co: dict[str, Any]) -> bool:
    cond = find_condition(entries(dig(co, "status", "conditions")), UPGRADEABLE)
    return cond is not None and cond.get("status") == "False"


async def read_config_map(cluster: ReadOnlyCluster, ref: Ref, last: Read = None) -> Read:
    """The ConfigMap, ``None`` when it does not exist; a transient failure gives ``last`` (what was read before,
    as the CVO's informer cache would; nothing before the first read), any other failure :class:`Failed`."""
    try:
        return await cluster.get(ref)
    except ApiError as err:
        if is_transient(err):
            return last
        return Failed(str(err))


async def read_cluster_state(cluster: ReadOnlyCluster, deletes: Sequence[Ref] = (),
                             assume_synced: bool = False) -> ClusterState:
    """Everything :func:`cvo.gates.upgradeable.upgradeable_risks` judges, read now (pass a cluster that
    retries, :func:`cvo.cluster.persist.steady`: one failed read must not fail the checks)."""
    cv = await cluster.get(cv_ref())
    cos = [ClusterOperator.read(o) for o in await cluster.list(*CLUSTER_OPERATOR)]
    served = await cluster.serves(OC_API_VERSION, OC_KIND)
    ocs = [OperatorCondition.read(o) for o in await cluster.list(OC_GROUP, OC_KIND)] if served else []
    return ClusterState(ClusterVersion.read(cv) if cv is not None else None, tuple(cos), tuple(ocs), tuple(deletes),
                        await read_config_map(cluster, ADMIN_GATES_REF), await read_config_map(cluster, ADMIN_ACKS_REF),
                        assume_synced)


def upgradeable_source(cluster: ReadOnlyCluster, deletes: Callable[[], Sequence[Ref]] = tuple) -> UpgradeableRisks:
    """pkg/cvo/cvo.go's ``optr.upgradeable`` on ``cluster``: each ``risks()`` reads the cluster's state again."""
    return UpgradeableRisks(lambda: read_cluster_state(cluster, deletes()))


def risk_sources(cluster: ReadOnlyCluster, alerts: AlertReader | None = None,
                 deletes: Callable[[], Sequence[Ref]] = tuple) -> tuple[RiskSource, ...]:
    """``optr.risks``: the firing alerts (when there is a Prometheus to ask), then ``optr.upgradeable`` — what
    the update evaluation merges into the conditional updates (``risk.Merge``)."""
    upgradeable = upgradeable_source(cluster, deletes)
    return (upgradeable,) if alerts is None else (AlertRisks(alerts), upgradeable)


class UpgradeBlockers:
    def __init__(self, cluster: Cluster, operators: Informer, olm: OperatorConditionManager,
                 deletes: DeleteTracker) -> None:
        self.cluster = cluster
        self.operators = operators
        self.olm = olm
        self.deletes = deletes
        self._blocking: dict[str, dict[str, Any]] = {}  # ClusterOperators with Upgradeable=False, from the watch
        self._gates: Read = None
        self._acks: Read = None
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
        self._gates = await read_config_map(self.cluster, ADMIN_GATES_REF, self._gates)
        self._acks = await read_config_map(self.cluster, ADMIN_ACKS_REF, self._acks)
        return UpgradeableInputs(tuple(cos), tuple(await self.olm.conditions()), tuple(self.deletes.in_progress()),
                                 self._gates, self._acks)
