"""``run_graph`` (the CVO's pkg/payload/task_graph.go ``RunGraph``): ordering, parallelism, failures and deadlines.

Every test runs on the virtual clock: node functions sleep simulated seconds, and the tests compare
the simulated times at which nodes start and finish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import networkx as nx
import orjson
import pytest

from cvo.clock import run_virtual
from cvo.payload.graph import Mode, Task, build_graph, make_tasks
from cvo.payload.loader import load_release
from cvo.payload.manifest import Manifest
from cvo.runner.graph_runner import GraphResult, run_graph
from tests.support.helpers import obj


def task(index: int, name: str, total: int = 99) -> Task:
    """A ConfigMap task named ``name`` (``configmap "ns/name" (index of total)``)."""
    body = obj("ConfigMap", name, "ns")
    manifest = Manifest(file=f"0000_10_comp_{name}.yaml", path=f"release-manifests/0000_10_comp_{name}.yaml",
                        document=1, api_version="v1", kind="ConfigMap", name=name, namespace="ns",
                        annotations=dict(body["metadata"]["annotations"]), raw=orjson.dumps(body))
    return Task(index=index, total=total, manifest=manifest, runlevel="10", component="comp")


def graph_of(nodes: dict[int, list[Task]], edges: list[tuple[int, int]]) -> nx.DiGraph:
    g = nx.DiGraph()
    for n, tasks in sorted(nodes.items()):
        g.add_node(n, tasks=tasks)
    g.add_edges_from(edges)
    return g


class Trace:
    """Records, per node, the simulated start and end times and the concurrency."""

    def __init__(self) -> None:
        self.start: dict[int, float] = {}
        self.end: dict[int, float] = {}
        self.order: list[int] = []
        self.running = 0
        self.max_running = 0
        self.cancelled: list[int] = []

    def fn(self, durations: dict[int, float] | None = None, fail: set[int] | frozenset[int] = frozenset(),
           ) -> Callable[[int, list[Task]], Awaitable[None]]:
        durations = durations or {}

        async def run(node: int, tasks: list[Task]) -> None:
            loop = asyncio.get_running_loop()
            self.start[node] = loop.time()
            self.order.append(node)
            self.running += 1
            self.max_running = max(self.max_running, self.running)
            try:
                await asyncio.sleep(durations.get(node, 10.0))
                if node in fail:
                    raise RuntimeError(f"node {node} failed")
            except asyncio.CancelledError:
                self.cancelled.append(node)
                raise
            finally:
                self.running -= 1
                self.end[node] = loop.time()

        return run


def run(graph: nx.DiGraph, max_parallel: int, fn: Callable[[int, list[Task]], Awaitable[None]],
        deadline: float | None = None) -> tuple[GraphResult, float]:
    """Run the graph on a fresh virtual loop; returns the result and the simulated time it took."""

    async def main() -> tuple[GraphResult, float]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        result = await run_graph(graph, max_parallel, fn, None if deadline is None else start + deadline)
        return result, loop.time() - start

    return run_virtual(main)


# --- happens-before -------------------------------------------------------------------------------


def test_a_node_never_starts_before_all_its_predecessors_completed() -> None:
    # A diamond with uneven branches, plus a join of three: 0 -> {1, 2} -> 3, {3, 4, 5} -> 6.
    nodes = {n: [task(n + 1, f"t{n}")] for n in range(7)}
    edges = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 6), (4, 6), (5, 6)]
    g = graph_of(nodes, edges)
    durations = {0: 5, 1: 50, 2: 7, 3: 3, 4: 100, 5: 1, 6: 2}
    trace = Trace()
    result, elapsed = run(g, 16, trace.fn(durations))
    assert result.completed == set(range(7))
    assert not result.errors and not result.incomplete and not result.cancelled
    for src, dst in edges:
        assert trace.start[dst] >= trace.end[src], f"node {dst} started before predecessor {src} finished"
    # And not later than needed: each node starts as soon as its last predecessor finished.
    assert trace.start[3] == trace.end[1] == 55
    assert trace.start[6] == max(trace.end[3], trace.end[4], trace.end[5]) == 100
    assert elapsed == 102


def test_build_graph_barrier_holds_for_an_update_graph(make_release: Any) -> None:
    """Run a real update-mode graph: every step starts only after the previous one finished."""
    root = make_release({
        "0000_10_a_x.yaml": [obj("ConfigMap", "a1", "ns"), obj("ConfigMap", "a2", "ns")],
        "0000_20_b_x.yaml": obj("ConfigMap", "b1", "ns"),
        "0000_20_c_x.yaml": obj("ConfigMap", "c1", "ns"),
        "0000_30_d_x.yaml": obj("ConfigMap", "d1", "ns"),
    })
    release = load_release(root)
    g = build_graph(make_tasks(release.manifests, Mode.UPDATE), Mode.UPDATE)
    trace = Trace()
    result, _ = run(g, 16, trace.fn({n: 10.0 for n in g.nodes}))
    assert result.completed == set(g.nodes)
    for src, dst in g.edges:
        assert trace.start[dst] >= trace.end[src]
    start_by_name = {t.manifest.name: trace.start[n] for n in g.nodes for t in g.nodes[n]["tasks"]}
    assert start_by_name["b1"] == start_by_name["c1"] > start_by_name["a1"]
    assert start_by_name["d1"] > start_by_name["b1"]


# --- parallelism ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("limit", "expected_max", "expected_elapsed"), [(3, 3, 40.0), (1, 1, 100.0),
                                                                          (0, 1, 100.0), (-5, 1, 100.0),
                                                                          (64, 10, 10.0)])
def test_max_parallel_bounds_the_number_of_running_nodes(limit: int, expected_max: int,
                                                         expected_elapsed: float) -> None:
    nodes = {n: [task(n + 1, f"t{n}")] for n in range(10)}
    g = graph_of(nodes, [])
    trace = Trace()
    result, elapsed = run(g, limit, trace.fn({n: 10.0 for n in range(10)}))
    assert result.completed == set(range(10))
    assert trace.max_running == expected_max
    assert elapsed == expected_elapsed


def test_concurrency_is_observed_with_events_not_only_timing() -> None:
    """Three nodes block on an event; with max_parallel=2 the third cannot start until one is released."""

    async def main() -> tuple[list[int], GraphResult]:
        gates = {n: asyncio.Event() for n in range(3)}
        started: list[int] = []

        async def fn(node: int, tasks: list[Task]) -> None:
            started.append(node)
            await gates[node].wait()

        g = graph_of({n: [task(n + 1, f"t{n}")] for n in range(3)}, [])
        runner = asyncio.create_task(run_graph(g, 2, fn))
        await asyncio.sleep(100)  # virtual: nothing else can happen while the gates are closed
        seen_before_release = list(started)
        gates[1].set()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await asyncio.sleep(1)
        assert started == [0, 1, 2]
        gates[0].set()
        gates[2].set()
        result = await runner
        return seen_before_release, result

    before, result = run_virtual(main)
    assert before == [0, 1]
    assert result.completed == {0, 1, 2}


# --- dispatch order ---------------------------------------------------------------------------------


def test_the_lowest_index_ready_node_is_dispatched_first() -> None:
    # 3 -> 1: node 1 is not ready at first; once 3 finished, 1 (lower index) goes before 4.
    nodes = {n: [task(n + 1, f"t{n}")] for n in range(5)}
    g = graph_of(nodes, [(3, 1)])
    trace = Trace()
    result, _ = run(g, 1, trace.fn())
    assert result.completed == set(range(5))
    assert trace.order == [0, 2, 3, 1, 4]


def test_dispatch_order_is_by_index_not_by_insertion_order() -> None:
    g = nx.DiGraph()
    for n in (4, 2, 0, 3, 1):  # inserted out of order
        g.add_node(n, tasks=[task(n + 1, f"t{n}")])
    trace = Trace()
    run(g, 1, trace.fn())
    assert trace.order == [0, 1, 2, 3, 4]


# --- failures ---------------------------------------------------------------------------------------


def test_a_failing_node_blocks_only_its_descendants() -> None:
    # 0 -> 1 -> 2 -> 3 (1 fails: 2 and 3 never run), 0 -> 4, and an independent 5 -> 6.
    nodes = {n: [task(n + 1, f"t{n}")] for n in range(7)}
    g = graph_of(nodes, [(0, 1), (1, 2), (2, 3), (0, 4), (5, 6)])
    trace = Trace()
    result, _ = run(g, 16, trace.fn({5: 30.0, 6: 30.0}, fail={1}))
    assert set(result.errors) == {1}
    assert isinstance(result.errors[1], RuntimeError)
    assert str(result.errors[1]) == "node 1 failed"
    assert result.completed == {0, 4, 5, 6}
    assert 2 not in trace.start and 3 not in trace.start
    assert result.incomplete == [2, 3]
    assert result.cancelled is False


def test_an_independent_branch_keeps_running_after_a_failure() -> None:
    # The failure happens early (t=1); the other branch needs 100 s and still completes.
    nodes = {n: [task(n + 1, f"t{n}")] for n in range(4)}
    g = graph_of(nodes, [(0, 1), (2, 3)])
    trace = Trace()
    result, elapsed = run(g, 16, trace.fn({0: 1.0, 2: 50.0, 3: 50.0}, fail={0}))
    assert set(result.errors) == {0}
    assert result.completed == {2, 3}
    assert result.incomplete == [1]
    assert elapsed == 100.0
    assert trace.cancelled == []


def test_a_join_waits_for_every_predecessor_even_when_one_failed() -> None:
    nodes = {n: [task(n + 1, f"t{n}")] for n in range(3)}
    g = graph_of(nodes, [(0, 2), (1, 2)])
    trace = Trace()
    result, _ = run(g, 16, trace.fn(fail={1}))
    assert result.completed == {0}
    assert set(result.errors) == {1}
    assert 2 not in trace.start
    assert result.incomplete == [2]


# --- deadline and cancellation ----------------------------------------------------------------------


def test_deadline_cancels_running_nodes_and_reports_incomplete() -> None:
    # 3 (long) -> 0 (empty anchor) -> 1; 2 finishes before the deadline.
    t1, t2, t3 = task(1, "first"), task(2, "second"), task(3, "third")
    g = graph_of({0: [], 1: [t1], 2: [t2], 3: [t3]}, [(3, 0), (0, 1)])
    trace = Trace()
    result, elapsed = run(g, 16, trace.fn({2: 10.0, 3: 1000.0}), deadline=50.0)
    assert result.cancelled is True
    assert elapsed == 50.0
    assert trace.cancelled == [3]
    assert trace.end[3] == 50.0
    assert result.completed == {2}
    assert result.errors == {}
    # Interrupted and never-run nodes, empty ones included, in node order.
    assert result.incomplete == [0, 1, 3]
    # The count includes the empty node; "beginning with" names the first incomplete node with tasks.
    assert result.incomplete_message(g) == f"3 incomplete task nodes, beginning with {t1}"
    assert result.incomplete_message(g) == (
        '3 incomplete task nodes, beginning with configmap "ns/first" (1 of 99)')


def test_deadline_not_reached_is_not_cancelled() -> None:
    g = graph_of({0: [task(1, "a")], 1: [task(2, "b")]}, [(0, 1)])
    trace = Trace()
    result, elapsed = run(g, 16, trace.fn(), deadline=1000.0)
    assert result.cancelled is False
    assert result.completed == {0, 1}
    assert result.incomplete == []
    assert elapsed == 20.0


def test_cancelling_the_caller_cancels_running_nodes() -> None:
    async def main() -> tuple[Trace, bool]:
        g = graph_of({0: [task(1, "a")], 1: [task(2, "b")], 2: [task(3, "c")]}, [(0, 2)])
        trace = Trace()
        runner = asyncio.create_task(run_graph(g, 16, trace.fn({0: 100.0, 1: 100.0})))
        await asyncio.sleep(30)
        runner.cancel()
        try:
            await runner
        except asyncio.CancelledError:
            raised = True
        else:
            raised = False
        await asyncio.sleep(0)
        assert trace.running == 0
        return trace, raised

    trace, raised = run_virtual(main)
    assert raised
    assert sorted(trace.cancelled) == [0, 1]
    assert 2 not in trace.start


def test_graph_runner_real_cvo_message_for_an_update_graph(make_release: Any, tmp_path: Path) -> None:
    """On a real graph the message names the first incomplete task in node order."""
    root = make_release({
        "0000_10_a_x.yaml": obj("ConfigMap", "a1", "ns"),
        "0000_20_b_x.yaml": obj("ConfigMap", "b1", "ns"),
        "0000_20_c_x.yaml": obj("ConfigMap", "c1", "ns"),
    })
    release = load_release(root)
    tasks = make_tasks(release.manifests, Mode.UPDATE)
    g = build_graph(tasks, Mode.UPDATE)
    first = next(n for n in sorted(g.nodes) if g.nodes[n]["tasks"] and g.nodes[n]["tasks"][0].manifest.name == "a1")
    trace = Trace()
    result, _ = run(g, 16, trace.fn({first: 500.0}), deadline=100.0)
    assert result.cancelled
    incomplete_with_tasks = [n for n in result.incomplete if g.nodes[n]["tasks"]]
    assert len(incomplete_with_tasks) == 3
    assert result.incomplete_message(g) == (
        f"{len(result.incomplete)} incomplete task nodes, beginning with configmap \"ns/a1\" (1 of 3)")
