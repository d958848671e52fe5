"""``cvo run``'s feature gates (cvo.controller.start, after pkg/start/start.go ``processInitialFeatureGate``): read
once at start from the FeatureGate ``cluster``; when this account may not read it (a least-privilege ClusterRole
on a real cluster), the ``--feature-set``/``--feature-gates`` flags' gates, with a warning.

On the embedded cluster with the FeatureGate CRD served and a FeatureGate of the Default feature set: the
flags ask for TechPreviewNoUpgrade, so the gates show which source won.  The Forbidden answer is the server's:
a read hook on the FeatureGate raises it inside the embedded API server's ``get``, as a kube-apiserver answers
an account without the ``get`` verb."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cvo.clock import Clock
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref, cv_ref
from cvo.cluster.embedded.server import SimCluster
from cvo.controller import start
from cvo.log import configure
from cvo.operators.behaviour import Behaviours
from cvo.payload.filters import LoadFilter
from cvo.runner.available_updates import RefreshOptions
from cvo.runner.events import Recorder
from cvo.updates.featuregates import FEATURE_GATE
from cvo.updates.graph import ConditionalEdges, Graph, Node
from cvo.updates.model import MatchingRule, Risk
from tests.controller.test_controller_loop import completed, run, until
from tests.controller.test_controller_updates import set_spec, settled
from tests.support.controller_harness import EPOCH, SHORT
from tests.support.helpers import PAYLOADS

GROUP, KIND, NAME = FEATURE_GATE
GATE_REF = Ref(GROUP, KIND, "", NAME)
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "featuregates.config.openshift.io"},
       "spec": {"group": GROUP, "scope": "Cluster",
                "names": {"kind": KIND, "plural": "featuregates", "singular": "featuregate", "listKind": "FeatureGateList"},
                "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                              "schema": {"openAPIV3Schema": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}
DEFAULT_SET = {"apiVersion": f"{GROUP}/v1", "kind": KIND, "metadata": {"name": NAME}, "spec": {"featureSet": ""}}
WARNING = "the FeatureGate is not readable; the feature gates are the flags'"


@dataclass
class Opened:
    cluster: Cluster
    description: str = "embedded simulated cluster (in memory)"


@pytest.fixture
def logs() -> Iterator[list[MutableMapping[str, Any]]]:
    import structlog.testing

    configure("text", 1)
    try:
        with structlog.testing.capture_logs() as captured:
            yield captured
    finally:
        configure("text", 0)


def graph(path: Path) -> str:
    """4.16.0 -> 4.17.0 under an Always risk: the conditional update every gate setting lists."""
    nodes = tuple(Node(v, (PAYLOADS / f"demo-{v}").as_uri()) for v in ("4.16.0", "4.17.0"))
    risk = Risk("EtcdMigration", "etcd may lose its leader.", "https://example.com/etcd", (MatchingRule("Always"),))
    path.write_bytes(Graph(nodes, (), (ConditionalEdges((("4.16.0", "4.17.0"),), (risk,)),)).dumps())
    return path.as_uri()


def controller_status(forbidden: bool, upstream: str) -> dict[str, Any]:
    """The ClusterVersion's status once the controller, started with ``--feature-set TechPreviewNoUpgrade`` on a
    cluster whose FeatureGate says Default (and which refuses to show it when ``forbidden``), has installed
    4.16.0 and evaluated the graph's conditional update."""
    async def body() -> dict[str, Any]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock)
        await cluster.create(CRD)
        await cluster.create(DEFAULT_SET)
        reads: list[Ref] = []

        def refuse(ref: Ref) -> None:
            if ref == GATE_REF:
                reads.append(ref)
                if forbidden:
                    raise ApiError(ApiErrorKind.FORBIDDEN, f'featuregates.config.openshift.io "{NAME}" is forbidden: '
                                   'User "system:serviceaccount:openshift-cluster-version:cvo" cannot get resource '
                                   '"featuregates" in API group "config.openshift.io" at the cluster scope', ref)

        cluster.on_read(refuse)

        @asynccontextmanager
        async def open_cluster() -> AsyncIterator[Opened]:
            yield Opened(cluster)

        options = start.Options(identity="a", interval=60.0, timings=SHORT, own_release=PAYLOADS / "demo-4.16.0",
                                releases=PAYLOADS, load_filter=LoadFilter(feature_set="TechPreviewNoUpgrade"),
                                updates=RefreshOptions(minimum_interval=300, runtime_arch="amd64",
                                                       default_update_service=""))
        context = start.Context(clock, open_cluster, Recorder(), simulate=Behaviours())
        task = asyncio.create_task(start.run(options, context))
        try:
            await until(completed(cluster, "4.16.0"), 3600)
            assert reads, "the controller never asked for the FeatureGate"
            await set_spec(cluster, upstream=upstream, channel="stable-4.16")

            async def evaluated() -> bool:
                cv = await cluster.get(cv_ref())
                return bool(((cv or {}).get("status") or {}).get("conditionalUpdates"))

            await settled(evaluated)
            cv = await cluster.get(cv_ref())
            assert cv is not None
            status: dict[str, Any] = cv["status"]
            return status
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    result: dict[str, Any] = run(body)
    return result


def test_a_forbidden_feature_gate_leaves_the_flags_gates_and_says_so(tmp_path: Path,
                                                                    logs: list[MutableMapping[str, Any]]) -> None:
    status = controller_status(True, graph(tmp_path / "graph.json"))
    # the flags' TechPreviewNoUpgrade: the ClusterUpdateAcceptRisks family is written
    assert [r["name"] for r in status["conditionalUpdateRisks"]] == ["EtcdMigration"]
    assert status["conditionalUpdates"][0]["riskNames"] == ["EtcdMigration"]
    [warning] = [e for e in logs if e["event"] == WARNING]
    assert warning["log_level"] == "warning" and "is forbidden" in warning["error"]


def test_a_readable_feature_gate_wins_over_the_flags(tmp_path: Path, logs: list[MutableMapping[str, Any]]) -> None:
    status = controller_status(False, graph(tmp_path / "graph.json"))
    # the cluster's Default feature set: nothing of the gated family
    assert "conditionalUpdateRisks" not in status
    assert "riskNames" not in status["conditionalUpdates"][0]
    assert not [e for e in logs if e["event"] == WARNING]
