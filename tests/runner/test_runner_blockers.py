"""What blocks minor and major updates, read from a cluster (cvo/runner/blockers.py): the state the risk sources of
``Upgradeable`` judge, read failures of the admin-ack ConfigMaps, and the sources as the update evaluation gets them
(pkg/cvo/cvo.go ``optr.upgradeable``, ``optr.risks``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cvo.clock import Clock
from cvo.cluster.api import ApiError, ApiErrorKind, Ref
from cvo.cluster.embedded.server import SimCluster
from cvo.gates.risks.adminack import ADMIN_ACKS_REF, ADMIN_GATES_REF
from cvo.gates.risks.reads import Failed
from cvo.runner.blockers import read_cluster_state, read_config_map, risk_sources, upgradeable_source
from cvo.status.clusterversion import cluster_version_object


def cv(progressing: str = "False") -> dict[str, Any]:
    obj = cluster_version_object("version")
    obj["status"] = {"desired": {"version": "4.16.0", "image": "img"},
                     "conditions": [{"type": "Progressing", "status": progressing}]}
    return obj


def co(name: str, upgradeable: str) -> dict[str, Any]:
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": name},
            "status": {"conditions": [{"type": "Upgradeable", "status": upgradeable, "message": f"{name} says no"}]}}


async def _cluster(*objects: dict[str, Any]) -> SimCluster:
    cluster = SimCluster(clock=Clock())
    for obj in objects:
        created = await cluster.create({k: v for k, v in obj.items() if k != "status"})
        if "status" in obj:
            await cluster.update_status({**created, "status": obj["status"]})
    return cluster


GATES = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "admin-gates",
                                                               "namespace": "openshift-config-managed"},
         "data": {"ack-4.16-x": "Check x first."}}


def test_the_state_read_from_a_cluster() -> None:
    async def main() -> None:
        cluster = await _cluster(cv(), co("etcd", "False"), co("dns", "True"), GATES)
        state = await read_cluster_state(cluster, [Ref("", "Namespace", "", "old")], assume_synced=True)
        assert state.current_version == "4.16.0"
        assert sorted(c.name for c in state.cluster_operators) == ["dns", "etcd"]  # type: ignore[union-attr]
        assert state.admin_gates is not None and state.admin_acks is None
        assert state.deletes_in_progress == (Ref("", "Namespace", "", "old"),) and state.assume_synced
        found = await upgradeable_source(cluster, lambda: [Ref("", "Namespace", "", "old")]).risks(["4.17.0"])
        assert [r.name for r in found.risks] == ["ResourceDeletionInProgress", "AdminAck-ack-4.16-x",
                                                 "ClusterOperatorUpgradeable-etcd"]
        assert set(found.versions.values()) == {("4.17.0",)}
        await cluster.close()

    asyncio.run(main())


@dataclass
class Reads:
    """A cluster whose reads of one object fail as told."""

    errors: list[ApiError]
    answer: dict[str, Any] | None = None
    asked: list[Ref] = field(default_factory=list)

    async def get(self, ref: Ref) -> dict[str, Any] | None:
        self.asked.append(ref)
        if self.errors:
            raise self.errors.pop(0)
        return self.answer


def test_a_config_map_read_that_fails() -> None:
    down = ApiError(ApiErrorKind.TIMEOUT, "the server is down", ADMIN_ACKS_REF)
    forbidden = ApiError(ApiErrorKind.FORBIDDEN, 'configmaps "admin-acks" is forbidden', ADMIN_ACKS_REF)
    last = {"data": {"k": "true"}}

    async def main() -> None:
        assert await read_config_map(Reads([down]), ADMIN_ACKS_REF, last) is last  # transient: what was read
        assert await read_config_map(Reads([down]), ADMIN_ACKS_REF) is None  # nothing read yet
        assert await read_config_map(Reads([forbidden]), ADMIN_ACKS_REF, last) == Failed(
            'configmaps "admin-acks" is forbidden')
        assert await read_config_map(Reads([], {"data": {}}), ADMIN_GATES_REF) == {"data": {}}

    asyncio.run(main())


@dataclass(frozen=True)
class Alert:
    labels: dict[str, str]
    annotations: dict[str, str]
    state: str = "firing"
    active_at: str = "2026-01-01T00:00:00Z"
    value: str = "1e+00"


class Alerts:
    async def alerts(self) -> Sequence[Alert]:
        return [Alert({"alertname": "KubeNodeNotReady", "severity": "warning"}, {"summary": "A node is not ready."})]


def test_the_sources_the_update_evaluation_merges() -> None:
    async def main() -> None:
        cluster = await _cluster(cv(progressing="True"))
        only = risk_sources(cluster)
        assert [s.name.split("(")[0] for s in only] == ["Aggregate"]
        alert, upgradeable = risk_sources(cluster, Alerts())
        assert alert.name == "Alert"
        found = await alert.risks(["4.16.1", "4.17.0"])
        assert [r.name for r in found.risks] == ["KubeNodeNotReady"]
        assert found.versions == {"KubeNodeNotReady": ("4.16.1", "4.17.0")}  # every update
        found = await upgradeable.risks(["4.16.1", "4.17.0"])
        assert found.versions == {"ClusterVersionUpdating": ("4.17.0",)}  # the minor one only
        await cluster.close()

    asyncio.run(main())
