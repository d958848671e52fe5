"""The simulated machine-config operator's pools and nodes: the behaviour keys, the objects it creates, and an
update's order (maxUnavailable at a time, the master pool first done, a PodDisruptionBudget holding a drain, a
paused pool, a failing node), all on the virtual clock."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from cvo.cli.main import main
from cvo.clock import Clock, run_virtual
from cvo.cluster.api import ApiErrorKind, Ref
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.cluster.intercept import Interceptor
from cvo.objects import ClusterVersion, MachineConfig, MachineConfigPool, Node
from cvo.operators.behaviour import Behaviours
from cvo.operators.library.clusteroperator import Condition as LibCondition
from cvo.operators.library.clusteroperator import report_status
from cvo.operators.machine_behaviour import MachinesBehaviour, PoolBehaviour, parse_machines
from cvo.operators.machine_config import MachineConfigSimulator, node_ref, pool_ref, rendered_name
from cvo.status.node_state import CURRENT_CONFIG, DESIRED_CONFIG, STATE
from cvo.status.upgrade_nodes import Machines, assess_pools

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
OLD, NEW = "4.16.0", "4.16.3"
MANIFESTS = Path(__file__).resolve().parents[2] / "payloads" / "demo-4.16.0" / "release-manifests"
CRDS = ("0000_80_machine-config_00_machineconfigpools.crd.yaml", "0000_80_machine-config_00_machineconfigs.crd.yaml")


# --- the behaviour keys -------------------------------------------------------------------------------


def test_machine_config_behaviour_reads_nodes_and_pools() -> None:
    b = Behaviours.parse({"machine-config": {"delay": "2m", "nodes": {"drain": "30s", "reboot": "1m30s",
                                                                       "fail": ["infra-1"]},
                                             "pools": {"master": 3, "worker": {"nodes": 5, "max-unavailable": "40%"},
                                                       "infra": {"nodes": 2, "paused": True}}}})
    machines = b.for_operator("machine-config").machines
    assert machines == MachinesBehaviour(
        (PoolBehaviour("master", 3), PoolBehaviour("worker", 5, "40%"), PoolBehaviour("infra", 2, 1, True)),
        drain=30.0, reboot=90.0, fail=frozenset({"infra-1"}))
    assert b.for_operator("machine-config").delay == 120.0
    assert b.for_operator("etcd").machines is None  # only asked of machine-config


def test_nodes_alone_gives_the_default_pools() -> None:
    machines = parse_machines({"drain": 5}, None, "x")
    assert [(p.name, p.nodes) for p in machines.pools] == [("master", 3), ("worker", 3)]
    assert (machines.drain, machines.reboot) == (5.0, 90.0)


@pytest.mark.parametrize(("nodes", "pools", "message"), [
    (None, {"worker": {"nodes": 3, "max-unavailable": 0}}, "x.pools.worker.max-unavailable: 0 is not a number of nodes"),
    (None, {"worker": {"max-unavailable": "150%"}}, "x.pools.worker.max-unavailable: '150%' is not a number"),
    (None, {"worker": {"nodes": -1}}, "x.pools.worker.nodes: expected an integer from 0 to 1,000"),
    (None, {"worker": {"nodes": 2, "surge": 1}}, "x.pools.worker: unknown key 'surge'"),
    (None, {"Worker Pool": 2}, "x.pools: 'Worker Pool' is not a pool name"),
    (None, {"worker": {"paused": "yes"}}, "x.pools.worker.paused: expected true or false"),
    (None, [], "x.pools: expected a mapping of pool name to its nodes"),
    ({"drain": "soon"}, None, "x.nodes.drain: 'soon' is not a duration"),
    ({"fail": ["worker-9"]}, None, "x.nodes.fail: no node is named 'worker-9'"),
    ({"reboots": 1}, None, "x.nodes: unknown key 'reboots'"),
])
def test_bad_machines_are_one_line_naming_the_key(nodes: Any, pools: Any, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_machines(nodes, pools, "x")
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


@given(st.recursive(st.none() | st.booleans() | st.integers(-5, 2000) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=10),
       st.recursive(st.none() | st.booleans() | st.integers(-5, 2000) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=10))
def test_any_machines_input_is_read_or_refused_in_one_line(nodes: Any, pools: Any) -> None:
    try:
        parse_machines(nodes, pools, "x")
    except ValueError as err:
        assert "\n" not in str(err)


# --- the simulation -----------------------------------------------------------------------------------


Test = Callable[[SimCluster, MachineConfigSimulator], Awaitable[Any]]


def simulate(test: Test, behaviour: MachinesBehaviour) -> Any:
    async def main() -> Any:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "app"))
        for crd in CRDS:
            await cluster.create(yaml.safe_load((MANIFESTS / crd).read_text()))
        machines = MachineConfigSimulator(cluster, clock, behaviour)
        try:
            return await test(cluster, machines)
        finally:
            await machines.stop()

    return run_virtual(main)


async def annotations(cluster: SimCluster, name: str) -> dict[str, str]:
    node = await cluster.get(node_ref(name))
    assert node is not None
    return dict(node["metadata"]["annotations"])


async def pool_status(cluster: SimCluster, name: str) -> dict[str, Any]:
    pool = await cluster.get(pool_ref(name))
    assert pool is not None
    return dict(pool.get("status") or {})


def condition(status: dict[str, Any], type_: str) -> str:
    return next(c["status"] for c in status["conditions"] if c["type"] == type_)


class Watcher:
    """How many nodes were away from their desired config at once, per pool, across the whole update."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.most: dict[str, int] = {}
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for _event in self.cluster.watch("", "Node"):
            for pool in ("master", "worker"):
                nodes = [n for n in await self.cluster.list("", "Node")
                         if n["metadata"]["name"].startswith(f"{pool}-")]
                away = sum(1 for n in nodes if n["metadata"]["annotations"][CURRENT_CONFIG]
                           != n["metadata"]["annotations"][DESIRED_CONFIG])
                self.most[pool] = max(self.most.get(pool, 0), away)


def test_install_creates_pools_nodes_and_rendered_configs_of_the_release() -> None:
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        await machines.install(OLD)  # again: what is there is kept
        pools = [MachineConfigPool.read(o) for o in await cluster.list("machineconfiguration.openshift.io",
                                                                          "MachineConfigPool")]
        nodes = [Node.read(o) for o in await cluster.list("", "Node")]
        configs = [MachineConfig.read(o) for o in await cluster.list("machineconfiguration.openshift.io",
                                                                      "MachineConfig")]
        assert sorted(p.name for p in pools) == ["master", "worker"]
        assert sorted(n.name for n in nodes) == ["master-0", "master-1", "worker-0", "worker-1"]
        assert {c.name: c.release_version for c in configs} == {rendered_name("master", OLD): OLD,
                                                                rendered_name("worker", OLD): OLD}
        worker = next(p for p in pools if p.name == "worker")
        assert (worker.status.machine_count, worker.status.updated_machine_count) == (2, 2)
        assert worker.status.configuration.name == rendered_name("worker", OLD)
        updated = worker.status.condition("Updated")
        assert updated is not None and updated.status == "True"
        cv = ClusterVersion.read({"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
                                  "metadata": {"name": "version"},
                                  "status": {"history": [{"version": OLD, "state": "Completed"}]}})
        assessed = assess_pools(cv, Machines(pools, nodes, configs), False, 0)
        assert assessed.control_plane is not None and assessed.control_plane.completion == 100.0
        assert [(w.name, w.assessment) for w in assessed.workers] == [("worker", "Completed")]

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 2), PoolBehaviour("worker", 2))))


def test_update_rolls_max_unavailable_nodes_at_a_time_and_returns_when_the_masters_are_done() -> None:
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        watcher = Watcher(cluster)
        loop = asyncio.get_running_loop()
        start = loop.time()
        await machines.update(NEW)
        masters_done = loop.time() - start
        # 3 masters one at a time, each 10s drain + 20s reboot: 90 s; the 7 workers (40%: 2 at a time) are not done
        assert masters_done == pytest.approx(90.0, abs=1.0)
        for i in range(3):
            assert (await annotations(cluster, f"master-{i}"))[CURRENT_CONFIG] == rendered_name("master", NEW)
        worker = await pool_status(cluster, "worker")
        assert worker["updatedMachineCount"] < 7 and condition(worker, "Updating") == "True"
        await asyncio.sleep(60)  # workers: ceil(7 / 2) rounds of 30 s = 120 s in all
        worker = await pool_status(cluster, "worker")
        assert worker["updatedMachineCount"] == 7 and condition(worker, "Updated") == "True"
        assert worker["configuration"]["name"] == rendered_name("worker", NEW)
        assert watcher.most == {"master": 1, "worker": 2}
        watcher.task.cancel()
        node = await cluster.get(node_ref("worker-6"))
        assert node is not None and "unschedulable" not in node["spec"]

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 3), PoolBehaviour("worker", 7, "40%")),
                                     drain=10.0, reboot=20.0))


@pytest.mark.parametrize(("value", "most", "updated"), [
    ("10%", 1, 10), ("33%", 3, 10), ("50%", 5, 10), (0, 1, 10), ("0%", 1, 10), (None, 1, 10), (4, 4, 10),
    (-1, 0, 0), ("-10%", 0, 0),  # negative: the controller never finds room
    ("5", 0, 0), ("abc%", 0, 0), (1.5, 0, 0), ([1], 0, 0),  # refused (node_controller.go ``maxUnavailable``'s error)
])
def test_a_pools_max_unavailable_as_the_node_controller_scales_it(value: Any, most: int, updated: int) -> None:
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        pool = await cluster.get(pool_ref("worker"))
        assert pool is not None
        pool["spec"]["maxUnavailable"] = value
        await cluster.update(pool)
        watcher = Watcher(cluster)
        await machines.update(NEW)
        await asyncio.sleep(600)
        watcher.task.cancel()
        assert watcher.most.get("worker", 0) == most
        status = await pool_status(cluster, "worker")
        assert status["updatedMachineCount"] == updated and status["machineCount"] == 10
        assert condition(status, "Updated" if updated else "Updating") == "True"

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 1), PoolBehaviour("worker", 10)), drain=5.0, reboot=5.0))


async def held_by_a_budget(cluster: SimCluster) -> None:
    """worker-0 runs the only replica of a database whose budget allows no disruption."""
    await cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "db-0", "namespace": "app", "labels": {"app": "db"}}, "spec": {"nodeName": "worker-0"}})
    await cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {
        "name": "db", "namespace": "app"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}})


def test_a_pod_whose_budget_allows_no_disruption_holds_the_drain_until_the_budget_goes() -> None:
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        await held_by_a_budget(cluster)
        await machines.update(NEW)
        await asyncio.sleep(1800)  # half an hour: still draining
        a = await annotations(cluster, "worker-0")
        assert a["machineconfiguration.openshift.io/desiredDrain"] != a["machineconfiguration.openshift.io/lastAppliedDrain"]
        assert a[STATE] == "Working" and a[CURRENT_CONFIG] == rendered_name("worker", OLD)
        assert (await annotations(cluster, "worker-1"))[CURRENT_CONFIG] == rendered_name("worker", OLD)  # waits its turn
        await cluster.delete(Ref("policy", "PodDisruptionBudget", "app", "db"))
        # failing for more than 10 minutes: attempts of 90 s five minutes apart; then 2 nodes x 20 s
        await asyncio.sleep(90 + 300 + 60)
        assert await cluster.get(Ref("", "Pod", "app", "db-0")) is None
        assert (await pool_status(cluster, "worker"))["updatedMachineCount"] == 2

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 1), PoolBehaviour("worker", 2)), drain=10.0, reboot=10.0))


def test_a_drain_held_for_an_hour_marks_the_node_degraded_and_it_carries_on_once_drained() -> None:
    """pkg/daemon/drain.go ``performDrain``: after an hour the daemon fails the update, the node goes Degraded
    (its pool Degraded, the ClusterOperator Upgradeable=False); the drain controller keeps trying
    (drain_controller.go ``drainNode``), and once the budget allows it the node updates and is Done."""
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        await held_by_a_budget(cluster)
        loop = asyncio.get_running_loop()
        start = loop.time()
        await machines.update(NEW)  # the master: 20 s; worker-0 cordoned at once
        await asyncio.sleep(3600 - (loop.time() - start) - 5)
        assert (await annotations(cluster, "worker-0"))[STATE] == "Working"
        await asyncio.sleep(10)
        a = await annotations(cluster, "worker-0")
        assert a[STATE] == "Degraded"
        assert a["machineconfiguration.openshift.io/reason"] == (
            "failed to drain node: worker-0 after 1 hour. Please see machine-config-controller logs for more information")
        await asyncio.sleep(5)
        status = await pool_status(cluster, "worker")
        assert (condition(status, "NodeDegraded"), condition(status, "Degraded")) == ("True", "True")
        assert (await co_conditions(cluster))["Upgradeable"]["reason"] == "DegradedPool"
        await cluster.delete(Ref("policy", "PodDisruptionBudget", "app", "db"))
        await asyncio.sleep(90 + 300 + 60)  # the next attempt at most 6.5 minutes away; then 2 nodes x 20 s
        a = await annotations(cluster, "worker-0")
        assert (a[STATE], a["machineconfiguration.openshift.io/reason"]) == ("Done", "")
        status = await pool_status(cluster, "worker")
        assert status["updatedMachineCount"] == 2 and condition(status, "Degraded") == "False"
        assert (await co_conditions(cluster))["Upgradeable"]["status"] == "True"

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 1), PoolBehaviour("worker", 2)), drain=10.0, reboot=10.0))


class EvictionApi(SimCluster):
    """The embedded cluster with an Eviction API, as a real server's: a Pod is evicted unless ``refuse`` names it
    (the 429 of a PodDisruptionBudget); every eviction asked is recorded."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "app"))
        self.refuse: set[str] = set()
        self.asked: list[str] = []

    async def evict(self, ref: Ref) -> bool:
        self.asked.append(ref.name)
        if ref.name in self.refuse:
            return False
        await self.delete(ref)
        return True


def test_a_cluster_with_an_eviction_api_drains_through_it_and_its_refusal_holds_the_drain() -> None:
    async def main() -> None:
        clock = Clock(EPOCH)
        sim = EvictionApi(clock)
        for crd in CRDS:
            await sim.create(yaml.safe_load((MANIFESTS / crd).read_text()))
        cluster = Interceptor(sim)  # as sim-operators' wrappers: the eviction goes through them
        machines = MachineConfigSimulator(cluster, clock, MachinesBehaviour(
            (PoolBehaviour("master", 1), PoolBehaviour("worker", 1)), drain=10.0, reboot=10.0))
        try:
            await machines.install(OLD)
            for name, node, owner in (("db-0", "worker-0", None), ("agent-x", "worker-0", "DaemonSet"),
                                      ("web-0", "master-0", None)):
                meta: dict[str, Any] = {"name": name, "namespace": "app"}
                if owner:
                    meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "agent", "uid": "1"}]
                await cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"nodeName": node}})
            sim.refuse.add("db-0")
            await machines.update(NEW)  # the master's Pod was evicted; it returns when the master is done
            await asyncio.sleep(600)
            assert (await annotations(sim, "worker-0"))[STATE] == "Working"
            # each attempt asks every 5 s for 90 s (kubectl's drain, the controller's DrainHelperTimeout), the next a
            # minute later: 4 attempts of 19 asks, and the 5th begun, in the 10 minutes and some since the cordon
            assert 4 * 19 < sim.asked.count("db-0") < 5 * 19
            assert "agent-x" not in sim.asked and "web-0" in sim.asked  # a DaemonSet's Pod stays (the daemon drains ignoring them)
            sim.refuse.clear()
            await asyncio.sleep(30)
            assert await sim.get(Ref("", "Pod", "app", "db-0")) is None
            assert await sim.get(Ref("", "Pod", "app", "agent-x")) is not None
            assert (await pool_status(sim, "worker"))["updatedMachineCount"] == 1
        finally:
            await machines.stop()

    run_virtual(main)


def test_pools_that_select_the_clusters_own_nodes_take_them_and_others_get_their_own() -> None:
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        for name in ("cp-a", "cp-b"):  # a compact cluster's nodes: every role
            await cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                "node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": ""}}, "spec": {}})
        await machines.install(OLD)
        await machines.install(OLD)  # again: nothing more
        nodes = {n["metadata"]["name"]: n for n in await cluster.list("", "Node")}
        assert sorted(nodes) == ["cp-a", "cp-b", "worker-0", "worker-1"]  # no master-N: master took cp-a and cp-b
        assert {n: nodes[n]["metadata"]["annotations"][CURRENT_CONFIG] for n in nodes} == {
            "cp-a": rendered_name("master", OLD), "cp-b": rendered_name("master", OLD),
            "worker-0": rendered_name("worker", OLD), "worker-1": rendered_name("worker", OLD)}
        assert (await pool_status(cluster, "master"))["machineCount"] == 2
        await machines.update(NEW)
        assert (await annotations(cluster, "cp-b"))[CURRENT_CONFIG] == rendered_name("master", NEW)

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 3), PoolBehaviour("worker", 2)), drain=5.0, reboot=5.0))


def test_a_paused_pool_waits_until_unpaused() -> None:
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        await machines.update(NEW)
        await asyncio.sleep(600)
        assert (await annotations(cluster, "worker-0"))[DESIRED_CONFIG] == rendered_name("worker", OLD)
        status = await pool_status(cluster, "worker")
        assert status["updatedMachineCount"] == 0 and condition(status, "Updating") == "False"
        pool = await cluster.get(pool_ref("worker"))
        assert pool is not None and pool["spec"]["configuration"]["name"] == rendered_name("worker", NEW)
        pool["spec"]["paused"] = False
        await cluster.update(pool)
        await asyncio.sleep(60)  # seen within 30 s, then 2 nodes x 10 s
        assert (await pool_status(cluster, "worker"))["updatedMachineCount"] == 2

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 1), PoolBehaviour("worker", 2, paused=True)),
                                     drain=5.0, reboot=5.0))


def test_a_failing_node_goes_degraded_and_holds_its_pool() -> None:
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        update = asyncio.create_task(machines.update(NEW))
        await asyncio.sleep(600)
        a = await annotations(cluster, "worker-0")
        assert a[STATE] == "Degraded" and "worker-0" in a["machineconfiguration.openshift.io/reason"]
        assert (await annotations(cluster, "worker-1"))[DESIRED_CONFIG] == rendered_name("worker", OLD)  # held
        status = await pool_status(cluster, "worker")
        assert status["degradedMachineCount"] == 1
        assert (condition(status, "NodeDegraded"), condition(status, "Degraded"), condition(status, "Updated")) == (
            "True", "True", "False")
        reason = f"failed to update node worker-0 to {rendered_name('worker', NEW)}: unexpected on-disk state (simulated)"
        degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
        assert degraded["message"] == f'Node worker-0 is reporting: "{reason}"'  # calculateStatus: NodeDegraded's
        # a degraded pool, even a worker one, holds the operator's sync: the version is not reported
        assert not update.done()
        update.cancel()

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 2), PoolBehaviour("worker", 2)), drain=5.0, reboot=5.0,
                                     fail=frozenset({"worker-0"})))


async def co_conditions(cluster: SimCluster) -> dict[str, dict[str, Any]]:
    live = await cluster.get(Ref("config.openshift.io", "ClusterOperator", "", "machine-config"))
    return {c["type"]: c for c in ((live or {}).get("status") or {}).get("conditions", [])}


async def machine_config_co(cluster: SimCluster, version: str, progressing: str) -> None:
    """The machine-config ClusterOperator as the simulated operators write it (at ``version``)."""
    await report_status(cluster, "machine-config", EPOCH, versions={"operator": version}, conditions=[
        LibCondition("Available", "True", "AsExpected"), LibCondition("Degraded", "False", "AsExpected"),
        LibCondition("Progressing", progressing, "Upgrading")])


def test_a_degraded_master_pool_makes_the_operator_degraded_after_ten_minutes_a_master() -> None:
    """pkg/operator/sync.go ``syncRequiredMachineConfigPools``: Upgradeable=False at once, Degraded when the poll
    (10 minutes per required node: 30 for 3 masters) times out; the version is never reported."""
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        await machine_config_co(cluster, OLD, "True")
        update = asyncio.create_task(machines.update(NEW))
        await asyncio.sleep(120)  # master-0 updated (40 s), master-1 degraded (80 s)
        assert (await annotations(cluster, "master-1"))[STATE] == "Degraded"
        conditions = await co_conditions(cluster)
        assert (conditions["Upgradeable"]["status"], conditions["Upgradeable"]["reason"]) == ("False", "DegradedPool")
        assert conditions["Upgradeable"]["message"].startswith("One or more machine config pools are degraded")
        assert conditions["Degraded"]["status"] == "False"
        await asyncio.sleep(1800 - 120 - 5)
        assert (await co_conditions(cluster))["Degraded"]["status"] == "False"  # 30 minutes not yet over
        await asyncio.sleep(10)
        conditions = await co_conditions(cluster)
        reason = f"failed to update node master-1 to {rendered_name('master', NEW)}: unexpected on-disk state (simulated)"
        assert conditions["Degraded"] == {**conditions["Degraded"], "status": "True", "reason": "RequiredPoolsFailed",
                                          "message": (
            f"Unable to apply {NEW}: during syncRequiredMachineConfigPools: [context deadline exceeded, "
            "MachineConfigPool master is not ready, retrying. Status: (pool degraded: true total: 3, ready 1, "
            f'updated: 1, unavailable: 1, reason: Node master-1 is reporting: "{reason}")]')}
        # "Unable to apply" for a second, then the next sync's syncProgressingStatus (as oc's ocpbugs-60768 shows)
        assert conditions["Progressing"]["message"] == f"Working towards {NEW}"
        assert not update.done()
        update.cancel()

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 3), PoolBehaviour("worker", 1)), drain=20.0, reboot=20.0,
                                     fail=frozenset({"master-1"})))


def test_a_degraded_worker_pool_after_the_masters_makes_the_operator_degraded_until_it_recovers() -> None:
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        await machine_config_co(cluster, OLD, "True")
        await machines.update(NEW)  # the master, 10 s; worker-1 degrades at 20 s
        await machine_config_co(cluster, NEW, "False")  # the simulated operators report the version then
        await asyncio.sleep(60)
        conditions = await co_conditions(cluster)
        assert (conditions["Upgradeable"]["status"], conditions["Degraded"]["status"]) == ("False", "False")
        await asyncio.sleep(600)  # 10 minutes for the one master
        conditions = await co_conditions(cluster)
        assert conditions["Degraded"]["reason"] == "RequiredPoolsFailed"
        assert conditions["Degraded"]["message"].startswith(
            f"Failed to resync {NEW} because: during syncRequiredMachineConfigPools: [context deadline exceeded, "
            "MachineConfigPool worker is not ready, retrying. Status: (pool degraded: true total: 2, ready 1, updated: 1,")
        # "Error while reconciling" for a second, then the next sync's syncProgressingStatus
        assert conditions["Progressing"] == {**conditions["Progressing"], "status": "False",
                                             "message": f"Cluster version is {NEW}"}
        node = await cluster.get(node_ref("worker-1"))  # the admin fixes the node: the daemon finishes
        assert node is not None
        node["metadata"]["annotations"].update({CURRENT_CONFIG: rendered_name("worker", NEW), STATE: "Done"})
        await cluster.update(node)
        await asyncio.sleep(60)
        conditions = await co_conditions(cluster)
        assert (conditions["Degraded"]["status"], conditions["Upgradeable"]["status"]) == ("False", "True")
        assert conditions["Progressing"]["message"] == f"Cluster version is {NEW}"

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 1), PoolBehaviour("worker", 2)), drain=5.0, reboot=5.0,
                                     fail=frozenset({"worker-1"})))


def test_a_restarted_operator_carries_on_with_the_nodes_half_way() -> None:
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        await machines.update(NEW)  # 20 s: the master and worker-0 are done; worker-1 starts its drain
        await asyncio.sleep(5)
        await machines.stop()
        assert (await annotations(cluster, "worker-1"))[STATE] == "Working"
        await asyncio.sleep(600)  # nothing moves while no operator runs
        assert (await pool_status(cluster, "worker"))["updatedMachineCount"] == 1
        again = MachineConfigSimulator(cluster, machines.clock, machines.behaviour)
        try:
            await again.install(NEW)  # as an operator restarting finds its release there
            await asyncio.sleep(60)  # worker-1 again from its drain: 10 s + 10 s
            assert (await pool_status(cluster, "worker"))["updatedMachineCount"] == 2
        finally:
            await again.stop()

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 1), PoolBehaviour("worker", 2)), drain=10.0, reboot=10.0))


def test_cvo_upgrade_status_shows_the_workers_still_updating_after_cvo_upgrade(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    payloads = MANIFESTS.parents[1]
    state, operators = tmp_path / "state.db", tmp_path / "operators.yaml"
    operators.write_text("default: {delay: 10s}\nmachine-config:\n  nodes: {drain: 1m, reboot: 2m}\n"
                         "  pools: {master: 3, worker: 4}\n")
    assert main(["install", str(payloads / "demo-4.16.0"), "--state", str(state), "--operators", str(operators)]) == 0
    assert main(["upgrade", "--to", str(payloads / "demo-4.16.3"), "--state", str(state),
                 "--operators", str(operators)]) == 0
    capsys.readouterr()
    assert main(["upgrade", "status", "--state", str(state), "--details", "all"]) == 0
    out = capsys.readouterr().out
    assert "All control plane nodes successfully updated to 4.16.3\n" in out
    assert "worker        Progressing   75% (3/4)    3 Available, 1 Progressing, 1 Draining\n" in out
    assert "worker-3   Progressing   Draining   4.16.0    +10m   \n" in out


def test_api_errors_are_retried_and_leave_nothing_half_made() -> None:
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        cluster.inject_failure(("", "Node"), ApiErrorKind.SERVER_TIMEOUT, count=3, verbs=["update_status"])
        cluster.inject_failure(pool_ref("worker"), ApiErrorKind.CONFLICT, count=2, verbs=["update", "update_status"])
        await machines.install(OLD)
        for name in ("master-0", "worker-0"):
            node = await cluster.get(node_ref(name))
            assert node is not None and [c["type"] for c in node["status"]["conditions"]] == [
                "Ready", "MemoryPressure", "DiskPressure", "PIDPressure"]
        await machines.update(NEW)
        await asyncio.sleep(60)
        assert (await pool_status(cluster, "worker"))["updatedMachineCount"] == 1

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 1), PoolBehaviour("worker", 1)), drain=5.0, reboot=5.0))


# --- odd shapes -----------------------------------------------------------------------------------------


def test_a_rendered_config_that_names_no_release_holds_the_version_and_degrades_the_operator() -> None:
    """status.go ``isMachineConfigPoolConfigurationValid``: the master pool at a config without the
    release-image-version annotation is not at the release; after 10 minutes (one master) the operator says so."""
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await machines.install(OLD)
        config = rendered_name("master", NEW)
        await cluster.create({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                              "metadata": {"name": config}, "spec": {}})  # rendered before, naming no release
        update = asyncio.create_task(machines.update(NEW))
        await asyncio.sleep(700)
        assert (await pool_status(cluster, "master"))["configuration"]["name"] == config  # the node is there
        assert not update.done()
        degraded = (await co_conditions(cluster))["Degraded"]
        assert degraded["message"] == (
            f"Unable to apply {NEW}: during syncRequiredMachineConfigPools: [context deadline exceeded, "
            f"MachineConfigPool master has not progressed to latest configuration: unable to access annotation "
            f"machineconfiguration.openshift.io/release-image-version for {config} expected: {NEW}, retrying]")
        update.cancel()

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 1), PoolBehaviour("worker", 1)), drain=5.0, reboot=5.0))


def test_pools_and_nodes_of_odd_shapes_leave_the_operator_running() -> None:
    """A node two pools select (master wins), a node without annotations, a custom pool selecting no node, an
    invalid maxUnavailable: the update goes on where it can, and nothing ends in an exception."""
    async def test(cluster: SimCluster, machines: MachineConfigSimulator) -> None:
        await cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "both", "labels": {
            "node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": ""}}, "spec": {}})
        await cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare", "labels": {
            "node-role.kubernetes.io/infra": ""}}, "spec": {}})
        await cluster.create({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
                              "metadata": {"name": "empty"}, "spec": {
                                  "nodeSelector": {"matchLabels": {"no-node-has": "this"}}, "maxUnavailable": "abc%"}})
        await machines.install(OLD)
        await machines.update(NEW)  # the master pool took "both" and is done
        await asyncio.sleep(600)
        assert (await annotations(cluster, "both"))[CURRENT_CONFIG] == rendered_name("master", NEW)
        assert (await pool_status(cluster, "infra"))["updatedMachineCount"] == 1  # "bare", adopted and updated
        for task in machines._pools.values():
            assert not task.done() or task.cancelled() or task.exception() is None

    simulate(test, MachinesBehaviour((PoolBehaviour("master", 2), PoolBehaviour("worker", 1), PoolBehaviour("infra", 1)),
                                     drain=5.0, reboot=5.0))
