"""The nodes' times recorded into an update's record (cvo/runner/node_durations.py), on the embedded cluster."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import Ref
from cvo.cluster.embedded.server import SimCluster
from cvo.runner.durations import RECORDS_REF, save_record
from cvo.runner.node_durations import NodeRecorder, observe
from cvo.status.node_forecast import DONE, DRAINING, PENDING, REBOOTING
from cvo.status.update_records import NodeTime, OperatorTime, PoolTime, UpdateRecord, parse_records
from tests.support.machines import node, pool

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
OLD, NEW = "4.16.0", "4.16.3"
TARGET = f"rendered-worker-{NEW}"
MANIFESTS = Path(__file__).resolve().parents[2] / "payloads" / "demo-4.16.0" / "release-manifests"


def test_a_node_seen_through_its_phases_gets_three_times() -> None:
    p, late = PoolTime(), set[str]()
    assert observe(p, "w0", PENDING, 5.0, late, first_look=False) is False
    assert observe(p, "w0", DRAINING, 10.0, late, first_look=False)
    assert observe(p, "w0", DRAINING, 20.0, late, first_look=False) is False  # still draining: nothing new
    assert observe(p, "w0", REBOOTING, 70.0, late, first_look=False)
    assert observe(p, "w0", DONE, 190.0, late, first_look=False)
    assert p.nodes == {"w0": NodeTime(10.0, 70.0, 190.0)} and p.started == 10.0


def test_a_node_already_under_way_when_the_recorder_starts_keeps_no_times() -> None:
    p, late = PoolTime(), set[str]()
    assert observe(p, "w0", DRAINING, 10.0, late, first_look=True) is False
    assert observe(p, "w1", REBOOTING, 10.0, late, first_look=False) is False  # its drain was never seen
    for phase in (REBOOTING, DONE):
        observe(p, "w0", phase, 100.0, late, first_look=False)
    assert p.nodes == {} and late == {"w0", "w1"}


def worker(name: str, phase: str) -> dict[str, Any]:
    if phase == PENDING:
        return node(name, "worker", OLD)
    if phase == DONE:
        return node(name, "worker", NEW)
    applied = f"drain-{TARGET}" if phase == REBOOTING else ""
    return node(name, "worker", OLD, NEW, state="Working", drain=(f"drain-{TARGET}", applied))


def test_the_recorder_writes_what_it_saw_into_the_updates_record() -> None:
    async def main() -> list[UpdateRecord]:
        clock = Clock(EPOCH)
        c = SimCluster(clock, namespaces=("default", "openshift-cluster-version"))
        await c.create(yaml.safe_load((MANIFESTS / "0000_80_machine-config_00_machineconfigpools.crd.yaml").read_text()))
        await c.create(pool("worker", NEW))
        for name, phase in (("w0", DRAINING), ("w1", PENDING), ("w2", DONE)):
            await c.create(worker(name, phase))
        record = UpdateRecord(NEW, "2026-01-01T00:00:00Z", {"etcd": OperatorTime(0.0, 30.0)}, partial=True)
        await save_record(c, record)
        recorder = NodeRecorder(c, clock, (record.version, record.started_at), save_every=30.0)
        await recorder.start()

        async def step(name: str, phase: str, after: float) -> None:
            await asyncio.sleep(after)
            live = await c.get(Ref("", "Node", "", name))
            assert live is not None
            wanted = worker(name, phase)
            await c.update({**live, "metadata": {**live["metadata"], "annotations": wanted["metadata"]["annotations"]}})

        await step("w0", REBOOTING, 60.0)  # w0 was draining before the recorder looked: late
        await step("w0", DONE, 60.0)
        await step("w1", DRAINING, 10.0)
        await step("w1", REBOOTING, 50.0)
        await step("w1", DONE, 100.0)
        await recorder.stop()
        return parse_records(await c.get(RECORDS_REF))

    records = run_virtual(main)
    pools = records[-1].pools
    assert set(pools) == {"worker"}
    w = pools["worker"]
    assert w.nodes == {"w1": NodeTime(130.0, 180.0, 280.0)}
    assert (w.size, w.max_unavailable, w.started, w.done) == (3, 1, 130.0, 280.0)
    assert records[-1].operators == {"etcd": OperatorTime(0.0, 30.0)}  # the rest of the record is kept


def test_a_cluster_without_machine_config_pools_is_left_alone() -> None:
    async def main() -> None:
        clock = Clock(EPOCH)
        c = SimCluster(clock, openshift_apis=False)
        recorder = NodeRecorder(c, clock, (NEW, "2026-01-01T00:00:00Z"))
        await recorder.start()
        await recorder.stop()
        assert await c.get(RECORDS_REF) is None

    run_virtual(main)


def test_the_live_forecast_follows_the_pools_beside_the_sweep() -> None:
    """``cvo upgrade``'s live display: the forecast ends with the worker pool once it has looked at the pools."""
    from cvo.runner.durations import LiveForecast
    from cvo.runner.events import Progress
    from cvo.status.forecast import OperatorGraph
    from cvo.status.godur import to_ns
    from tests.support.machines import rendered

    graph = OperatorGraph({0: ("etcd",), 1: ("machine-config",)}, {0: (), 1: (0,)}, (0, 1))
    earlier = UpdateRecord(OLD, "2025-12-01T00:00:00Z", {"etcd": OperatorTime(0.0, 60.0),
                                                         "machine-config": OperatorTime(60.0, 600.0)},
                           pools={"worker": PoolTime(1, 2, 60.0, 420.0, {"w0": NodeTime(60.0, 120.0, 240.0),
                                                                          "w1": NodeTime(240.0, 300.0, 420.0)})})

    async def main() -> tuple[str, str]:
        clock = Clock(EPOCH)
        c = SimCluster(clock, namespaces=("default", "openshift-cluster-version"))
        for crd in ("0000_80_machine-config_00_machineconfigpools.crd.yaml",
                    "0000_80_machine-config_00_machineconfigs.crd.yaml"):
            await c.create(yaml.safe_load((MANIFESTS / crd).read_text()))
        await c.create(pool("worker", OLD))
        for version in (OLD, NEW):
            await c.create(rendered("worker", version))
        for i in range(4):
            await c.create(worker(f"w{i}", PENDING))
        live = LiveForecast(graph, [earlier], Progress, clock.now, NEW)
        before = live()
        follow = asyncio.create_task(live.follow_machines(c, clock))
        await asyncio.sleep(1)
        after = live()
        follow.cancel()
        await asyncio.gather(follow, return_exceptions=True)
        assert before is not None and after is not None
        now = to_ns(clock.now())
        return before.summary(now), after.summary(now)

    before, after = run_virtual(main)
    assert "on the critical path" in before
    # etcd 60 s, then machine-config (540 s) starts the pool: 4 nodes of 60 + 120 s, one at a time: 60 + 720 s
    assert after.startswith("13m remaining, done at 2026-01-01T00:13:01Z when pool worker is done (4 nodes to go; "
                            "control plane 10m)")
