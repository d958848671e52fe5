"""Simulated operators on a cluster whose controllers act (cvo/operators/rollouts.py): a ClusterOperator
reports its release's versions only once its Deployment has rolled out by kstatus's rules, says what it waits on
in Progressing, and is Degraded with the Deployment's own message when the rollout fails.  Here the controller's
part (writing the Deployment's status) is played by the test, on the embedded cluster and the virtual clock; the
e2e test (tests/e2e/test_sim_rollouts.py) has a real kube-controller-manager and kwok do it."""

from __future__ import annotations

from typing import Any

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import co_ref
from cvo.cluster.embedded.server import SimCluster
from cvo.operators.rollouts import DEFAULT_SERVICE_ACCOUNT, Progress, controllers_act, progress
from cvo.operators.simulated import OperatorSimulator
from tests.operators.test_sim_operators import (
    EPOCH,
    FOO_DEPLOY,
    NEW,
    OLD,
    Timeline,
    at,
    conds,
    expected_versions,
    install_foo,
    payload,
    scenario,
    upgrade_foo,
    versions,
)
from tests.support.helpers import ReleaseFactory


async def controller_writes(cluster: SimCluster, *, rolled_out: bool = True, deadline: str = "") -> None:
    """What kube-controller-manager's deployment controller writes for foo-operator's current spec."""
    live = await cluster.get(FOO_DEPLOY)
    assert live is not None
    generation = live["metadata"].get("generation", 1)
    count = 1 if rolled_out else 0
    status: dict[str, Any] = {"observedGeneration": generation, "replicas": 1, "updatedReplicas": count,
                              "readyReplicas": count, "availableReplicas": count,
                              "conditions": [{"type": "Available", "status": "True" if rolled_out else "False"}]}
    if deadline:
        status["conditions"].append({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                                     "message": deadline})
    await cluster.update_status({**live, "status": status})


def test_versions_wait_on_the_deployments_rollout(make_release: ReleaseFactory) -> None:
    old, new = payload(make_release, OLD), payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> tuple[Timeline, dict[str, Any]]:
        sim.rollouts = True
        await sim.start()
        timeline = Timeline(cluster)
        await install_foo(cluster, OLD)
        await at(100)  # past the behaviour's 50 s: still nothing rolled out
        waiting = await cluster.get(co_ref("foo"))
        assert waiting is not None
        await controller_writes(cluster)  # at 100
        await upgrade_foo(cluster, NEW, at_time=200)
        await at(300)
        await controller_writes(cluster)  # the new ReplicaSet is up at 300
        await at(400)
        await timeline.stop()
        return timeline, waiting

    timeline, waiting = scenario(test, [old, new])
    assert versions(waiting) == {}
    assert conds(waiting)["Progressing"]["message"] == f"Moving to {OLD}: deployment ns/foo-operator: Replicas: 0/1"
    assert timeline.versions() == [(0.0, {}), (100.0, expected_versions(OLD)), (300.0, expected_versions(NEW))]
    assert timeline.condition("Available") == [(0.0, "False"), (100.0, "True")]
    assert timeline.condition("Degraded") == [(0.0, "False")]


def test_a_deployment_past_its_progress_deadline_degrades_the_operator_until_it_rolls_out(
        make_release: ReleaseFactory) -> None:
    old, new = payload(make_release, OLD), payload(make_release, NEW)
    message = 'ReplicaSet "foo-operator-2" has timed out progressing.'

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        sim.rollouts = True
        await sim.start()
        await install_foo(cluster, OLD)
        await controller_writes(cluster)
        await at(100)
        timeline = Timeline(cluster)
        await upgrade_foo(cluster, NEW, at_time=200)
        await at(260)
        await controller_writes(cluster, rolled_out=False, deadline=message)
        await at(500)
        await controller_writes(cluster)
        await at(600)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [old, new])
    assert timeline.condition("Degraded") == [(200.0, "False"), (260.0, "True"), (500.0, "False")]
    degraded = next(o for t, o in timeline.states if t == 260.0)
    assert conds(degraded)["Degraded"]["message"] == f"deployment ns/foo-operator: {message}"
    assert conds(degraded)["Available"]["status"] == "True"  # the old operands still serve
    assert timeline.versions()[-1] == (500.0, expected_versions(NEW))


def test_without_rollouts_the_behaviour_alone_decides(make_release: ReleaseFactory) -> None:
    """The embedded cluster's default: no controller writes a Deployment's status, and none is waited for."""
    release = payload(make_release, OLD)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> dict[str, str]:
        assert sim.rollouts is False
        await sim.start()
        await install_foo(cluster, OLD)
        await at(60)
        return versions(await cluster.get(co_ref("foo")))

    assert scenario(test, [release]) == expected_versions(OLD)


def test_controllers_act_where_the_default_service_account_exists() -> None:
    async def main() -> tuple[bool, bool]:
        cluster = SimCluster(clock=Clock(EPOCH))
        before = await controllers_act(cluster)
        await cluster.create({"apiVersion": "v1", "kind": "ServiceAccount",
                              "metadata": {"name": DEFAULT_SERVICE_ACCOUNT.name,
                                           "namespace": DEFAULT_SERVICE_ACCOUNT.namespace}})
        return before, await controllers_act(cluster)

    assert run_virtual(main) == (False, True)


def test_progress_names_the_first_failure_then_the_first_that_waits() -> None:
    from cvo.cluster.api import Ref
    a, b = Ref("apps", "Deployment", "ns", "a"), Ref("apps", "Deployment", "ns", "b")
    done = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 0},
            "status": {"conditions": [{"type": "Available", "status": "True"}]}}
    failed = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 1},
              "status": {"conditions": [{"type": "Progressing", "status": "False",
                                         "reason": "ProgressDeadlineExceeded", "message": "timed out"}]}}
    assert progress({a: done, b: done}) == Progress(True)
    assert progress({a: None, b: done}) == Progress(False, waiting="deployment ns/a: not found")
    assert progress({a: None, b: failed}) == Progress(False, failed="deployment ns/b: timed out")
