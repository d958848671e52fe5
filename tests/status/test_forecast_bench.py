"""The forecast benchmark's simulation: list scheduling of the graph, and oc's estimate from its state."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.forecast_bench import Shape, Update, bound_forecast, oc_estimate, simulate
from cvo.status.forecast import OperatorGraph

TASKS = {0: ["a", None], 1: ["b"], 2: ["c"]}
PREDS = {0: (), 1: (), 2: (0, 1)}


def shape(workers: int) -> Shape:
    return Shape(TASKS, PREDS, workers, ["a", "b", "c"],
                 OperatorGraph({0: ("a",), 1: ("b",), 2: ("c",)}, PREDS, (0, 1, 2)))


def test_parallel_nodes_run_together_and_the_join_waits_for_both() -> None:
    update = simulate(shape(16), {"a": 100.0, "b": 300.0, "c": 50.0})
    assert update.times == {"a": (0.0, 100.0), "b": (0.0, 300.0), "c": (300.0, 350.0)}
    assert update.total == 350.0


def test_one_worker_runs_the_lowest_numbered_ready_node_first() -> None:
    update = simulate(shape(1), {"a": 100.0, "b": 300.0, "c": 50.0})
    assert update.times["b"] == (100.5, 400.5)  # after node 0: a, then an apply of 0.5 s
    assert update.total == 450.5


def test_ocs_estimate_uses_the_baseline_before_five_minutes_of_progress() -> None:
    update = Update({"a": (0.0, 100.0), "b": (0.0, 3000.0), "c": (3000.0, 3600.0)}, 3600.0)
    history = [{"state": "Partial"}, {"state": "Completed", "startedTime": "2026-01-01T00:00:00Z",
                                      "completionTime": "2026-01-01T01:40:00Z"}, {"state": "Completed"}]
    # at 200 s: one of three updated, last progress at 100 s (under 5 minutes): (6000 - 200) * 1.2 = 6960 s
    assert oc_estimate(update, 200.0, history) == 6960.0


def test_the_bound_knows_which_operator_stalls() -> None:
    means = {"a": 100.0, "b": 300.0, "c": 50.0}
    # at 200 s, a has been waited on for twice its longest usual time: it is the one stalling (20-40 minutes
    # more), b and c take their usual time: about 100 + 1800 - 200 s for a, then c's 50 s
    update = Update({"a": (0.0, 2000.0), "b": (0.0, 400.0), "c": (2000.0, 2050.0)}, 2050.0)
    assert 1650.0 < bound_forecast(shape(16), means, update, 200.0, samples=600) < 1900.0
    # at the start, a stall of 20-40 minutes is still ahead, on an operator chosen at random
    fresh = Update({"a": (0.0, 100.0), "b": (0.0, 300.0), "c": (300.0, 350.0)}, 350.0)
    assert bound_forecast(shape(16), means, fresh, 0.0, samples=200) > 1200.0


def test_a_pool_rolls_max_unavailable_at_a_time_the_next_node_when_one_is_done() -> None:
    from bench.forecast_bench import roll_pool

    run = roll_pool(["a", "b", "c"], 2, 100.0, [(10.0, 20.0), (5.0, 5.0), (1.0, 1.0)])
    assert run.nodes == {"a": (100.0, 110.0, 130.0), "b": (100.0, 105.0, 110.0), "c": (110.0, 111.0, 112.0)}


def test_the_pools_state_says_which_nodes_drain_and_which_reboot() -> None:
    from bench.forecast_bench import NodeUpdate, PoolRun, pool_state
    from cvo.status.godur import SECOND
    from cvo.status.node_forecast import DRAINING, REBOOTING, NodeProgress

    run = NodeUpdate(Update({}, 0.0), {"worker": PoolRun(2, {"a": (0.0, 10.0, 30.0), "b": (0.0, 5.0, 10.0),
                                                             "c": (10.0, 11.0, 12.0), "d": (30.0, 40.0, 50.0)})})
    (state,) = pool_state(run, 10.5)
    assert state.running == (NodeProgress("a", REBOOTING, 10 * SECOND), NodeProgress("c", DRAINING, 10 * SECOND))
    assert (state.pending, state.started, run.total) == (1, True, 50.0)


def test_ocs_node_estimate_is_ten_minutes_draining_five_rebooting_and_fifteen_per_pending_node() -> None:
    from bench.forecast_bench import NodeUpdate, PoolRun, oc_node_estimate

    history = [{"state": "Partial"}, {"state": "Completed"}]
    run = NodeUpdate(Update({"a": (0.0, 100.0)}, 100.0),
                     {"worker": PoolRun(1, {"w0": (100.0, 200.0, 400.0), "w1": (400.0, 500.0, 700.0)})})
    # at 150 s the control plane is done; w0 drains (+10m), then w1 is pending (+15m): 25 minutes
    assert oc_node_estimate(run, 150.0, history) == 1500.0
