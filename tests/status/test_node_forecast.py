"""The nodes' part of the forecast (cvo/status/node_forecast.py) and of the records (update_records.py ``pools``)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.objects import MachineConfig, MachineConfigPool, Node
from cvo.status.forecast import DurationModel, OperatorGraph, forecast
from cvo.status.godur import SECOND, parse_time
from cvo.status.node_forecast import (
    DONE,
    DRAINING,
    PENDING,
    REBOOTING,
    NodeModel,
    NodeProgress,
    PoolProgress,
    node_model,
    node_phase,
    pool_width,
    pools_progress,
    sample_pool,
)
from cvo.status.update_records import (
    NodeTime,
    OperatorTime,
    PoolTime,
    UpdateRecord,
    parse_records,
    records_configmap,
)
from cvo.status.upgrade_nodes import Machines
from tests.support.machines import node, pool, rendered

OLD, NEW = "4.16.0", "4.16.3"
T0 = "2026-01-01T00:00:00Z"


def ns(seconds: float) -> int:
    start = parse_time(T0)
    assert start is not None
    return start + round(seconds * SECOND)


def test_a_pools_width_is_the_node_controllers_or_none_at_all() -> None:
    assert pool_width(None, 10) == 1
    assert pool_width(3, 10) == 3
    assert pool_width("10%", 397) == 39
    assert pool_width("10%", 5) == 1  # 0.5 rounds down to 0: at least one
    assert pool_width(-1, 5) == 0  # no node is ever picked
    assert pool_width("abc", 5) == 0  # the controller refuses it and leaves the pool


def test_a_nodes_phase_follows_the_daemons_annotations() -> None:
    target = f"rendered-worker-{NEW}"

    def phase(obj: dict[str, Any]) -> str:
        return node_phase(Node.read(obj), target)

    assert phase(node("w", "worker", OLD)) == PENDING
    assert phase(node("w", "worker", OLD, NEW, state="Working", drain=(f"drain-{target}", "uncordon-x"))) == DRAINING
    assert phase(node("w", "worker", OLD, NEW, state="Working",
                      drain=(f"drain-{target}", f"drain-{target}"))) == REBOOTING
    assert phase(node("w", "worker", NEW)) == DONE


def test_a_pool_of_one_at_a_time_takes_the_sum_of_its_nodes() -> None:
    model = NodeModel((60.0,), (120.0,))
    pool_ = PoolProgress("worker", 1, False, (), 4, started=False)
    assert sample_pool(random.Random(1), pool_, model, ns(0)) == 4 * 180.0


def test_nodes_go_max_unavailable_at_a_time_and_a_node_under_way_finishes_its_phase() -> None:
    model = NodeModel((60.0,), (120.0,))
    # two slots: one node 30 s into its drain (30 + 120 left), one free; three to go of 180 each
    pool_ = PoolProgress("worker", 2, False, (NodeProgress("w0", DRAINING, ns(0)),), 3, started=True)
    # slot A: 150, then 150 + 180 = 330; slot B: 180, 360 → the last ends at 360
    assert sample_pool(random.Random(1), pool_, model, ns(30)) == 360.0


def test_a_drain_past_every_recorded_one_takes_as_long_again() -> None:
    model = NodeModel((60.0, 80.0, 100.0), (120.0,))
    pool_ = PoolProgress("worker", 1, False, (NodeProgress("w0", DRAINING, ns(0)),), 0, started=True)
    # held 30 minutes (a PodDisruptionBudget, never seen before): 30 minutes more, then a reboot
    assert sample_pool(random.Random(1), pool_, model, ns(1800)) == 1800.0 + 120.0
    # just past the longest recorded one: at least a quarter of the median drain (80 s)
    assert sample_pool(random.Random(1), pool_, model, ns(10)) < 100.0 + 120.0
    assert sample_pool(random.Random(1), pool_, NodeModel((5.0,), (120.0,)), ns(6)) == 6.0 + 120.0


def record(pools: dict[str, PoolTime], version: str = NEW, partial: bool = False) -> UpdateRecord:
    return UpdateRecord(version, T0, {"etcd": OperatorTime(0.0, 60.0), "machine-config": OperatorTime(60.0, 600.0)},
                        partial=partial, pools=pools)


def test_the_model_takes_every_node_seen_through_both_phases() -> None:
    pools = {"worker": PoolTime(1, 3, 60.0, 600.0, {"w0": NodeTime(60.0, 120.0, 300.0), "w1": NodeTime(300.0, 400.0),
                                                     "w2": NodeTime(400.0)})}
    assert node_model([record(pools)]) == NodeModel((60.0,), (180.0,))


def test_pools_survive_the_configmap_and_odd_entries_are_left_out() -> None:
    pools = {"worker": PoolTime(2, 5, 10.0, 900.0, {"w0": NodeTime(10.0, 20.0, 30.0), "w1": NodeTime(12.0)})}
    back = parse_records(records_configmap([record(pools)]))
    assert back[0].pools == pools
    cm = records_configmap([record(pools)])
    raw = cm["data"]["records.json"]
    assert '"w1":[12.0]' in raw
    cm["data"]["records.json"] = raw.replace('"w1":[12.0]', '"w1":["x"],"w2":[1,null],"w3":{"a":1}')
    assert set(parse_records(cm)[0].pools["worker"].nodes) == {"w0"}


ANY = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats() | st.text(max_size=5),
                   lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                   max_leaves=20)
POOL_SHAPED = st.dictionaries(st.text(max_size=5), st.fixed_dictionaries(
    {}, optional={"maxUnavailable": ANY, "size": ANY, "started": ANY, "done": ANY,
                  "nodes": st.dictionaries(st.text(max_size=5), st.lists(ANY, max_size=4) | ANY, max_size=4)}),
    max_size=3)


@settings(max_examples=300, deadline=None)
@given(ANY | POOL_SHAPED)
def test_pools_of_any_shape_parse_or_are_left_out(value: Any) -> None:
    import json

    raw = json.dumps([{"version": NEW, "startedAt": T0, "operators": {}, "pools": value}])
    for parsed in parse_records({"data": {"records.json": raw}}):
        for p in parsed.pools.values():
            assert p.max_unavailable >= 1 and p.size >= 0
            assert all(isinstance(t.started, float) for t in p.nodes.values())
        model = node_model([parsed])  # never raises
        if model.usable:
            sample_pool(random.Random(0), PoolProgress("p", 2, False, (NodeProgress("n", DRAINING, None),), 3, True),
                        model, 0)


def machines_at(nodes: list[dict[str, Any]], worker_target: str = NEW, paused: bool = False) -> Machines:
    pools = [pool("master", NEW), pool("worker", worker_target, paused=paused)]
    nodes = [node("m0", "master", NEW), *nodes]
    configs = [rendered(p, v) for p in ("master", "worker") for v in (OLD, NEW)]
    return Machines([MachineConfigPool.read(p) for p in pools], [Node.read(n) for n in nodes],
                    [MachineConfig.read(c) for c in configs])


def test_a_pool_whose_config_is_the_old_release_has_every_node_to_go() -> None:
    m = machines_at([node(f"w{i}", "worker", OLD) for i in range(4)], worker_target=OLD)
    worker = {p.name: p for p in pools_progress(m, NEW, None)}["worker"]
    assert (worker.pending, worker.running, worker.started) == (4, (), False)


def test_a_pool_under_way_knows_when_its_nodes_began_from_the_record() -> None:
    target = f"rendered-worker-{NEW}"
    nodes = [node("w0", "worker", NEW), node("w1", "worker", OLD, NEW, state="Working", drain=(f"drain-{target}", "")),
             node("w2", "worker", OLD)]
    pools = {"worker": PoolTime(1, 3, 100.0, None, {"w0": NodeTime(100.0, 160.0, 280.0), "w1": NodeTime(280.0)})}
    worker = {p.name: p for p in pools_progress(machines_at(nodes), NEW, record(pools))}["worker"]
    assert worker.running == (NodeProgress("w1", DRAINING, ns(280.0)),)
    assert (worker.pending, worker.started) == (1, True)


def graph() -> OperatorGraph:
    return OperatorGraph({0: ("etcd",), 1: ("machine-config",)}, {0: (), 1: (0,)}, (0, 1))


def test_the_update_ends_with_the_last_pool_and_a_paused_pool_is_not_counted() -> None:
    model = DurationModel({"etcd": 60.0, "machine-config": 600.0}, 0.0, float("inf"), (), (), 1)
    nodes = NodeModel((60.0,), (120.0,))
    worker = PoolProgress("worker", 1, False, (), 10, started=False)
    infra = PoolProgress("infra", 1, True, (), 3, started=False)
    result = forecast(graph(), model, [], {}, ns(0), pools=[worker, infra], nodes=nodes)
    assert result is not None
    # the pools start with machine-config, after etcd's 60 s: 60 + 10 × 180 s
    assert result.remaining == (60 + 1800) * SECOND
    assert result.control_plane == 660 * SECOND
    assert [(p.name, p.nodes_left, p.remaining) for p in result.pools] == [
        ("worker", 10, 1860 * SECOND), ("infra", 3, None)]
    assert result.summary(ns(0)) == (
        "31m remaining, done at 2026-01-01T00:31:00Z when pool worker is done (10 nodes to go; control plane 11m)"
        "; paused pool infra not counted (from 1 recorded update)")
    data = result.to_data(ns(0))
    assert data["controlPlaneRemainingSeconds"] == 660
    assert data["pools"][1] == {"name": "infra", "nodesLeft": 3, "paused": True, "remainingSeconds": None}


def test_without_recorded_nodes_the_pools_are_left_out() -> None:
    model = DurationModel({"etcd": 60.0, "machine-config": 600.0}, 0.0, float("inf"), (), (), 1)
    worker = PoolProgress("worker", 1, False, (), 10, started=False)
    result = forecast(graph(), model, [], {}, ns(0), pools=[worker], nodes=NodeModel((), ()))
    assert result is not None and result.remaining == 660 * SECOND and result.pools == []
    assert result.summary(ns(0)).startswith("11m remaining on the critical path")


def test_a_pool_whose_max_unavailable_lets_no_node_update_is_not_counted() -> None:
    model = DurationModel({"etcd": 60.0, "machine-config": 600.0}, 0.0, float("inf"), (), (), 1)
    m = machines_at([node(f"w{i}", "worker", OLD) for i in range(2)], worker_target=OLD)
    worker = MachineConfigPool.read({**pool("worker", OLD, max_unavailable="5")})  # no %: the controller refuses it
    m = Machines([m.pools[0], worker], m.nodes, m.configs)
    progress = pools_progress(m, NEW, None)
    assert [(p.name, p.width) for p in progress] == [("master", 1), ("worker", 0)]
    result = forecast(graph(), model, [], {}, ns(0), pools=progress, nodes=NodeModel((60.0,), (120.0,)))
    assert result is not None and result.remaining == 660 * SECOND
    assert result.summary(ns(0)).endswith(
        "when the control plane is done; pool worker not counted: its maxUnavailable lets no node update "
        "(from 1 recorded update)")
