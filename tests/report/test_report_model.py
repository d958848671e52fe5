"""The report's model: a timeline from events, the critical path and the summary tables.

Hand-built event streams check each rule; replays of real scenarios check that the path names the
operator a scenario made slow; a property checks that any stream gives links covering each sweep."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.report.critical import attempt_chain, causes, critical_path
from cvo.report.model import build_timeline
from cvo.report.summary import longest_waits, retries_by_reason, slowest_operators, summarize
from cvo.runner.sweep_events import Event, decode
from cvo.scenario.model import load_scenario
from cvo.scenario.replay import replay
from tests.support.helpers import REPO

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Stream:
    """Events at given seconds, as the worker emits them."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def at(self, seconds: float, name: str, **fields: Any) -> Stream:
        self.events.append(decode(T0 + timedelta(seconds=seconds), name, fields))
        return self

    def node(self, start: float, end: float, node: int, *tasks: tuple[str, float, float, str | None],
             after: list[int] | None = None, outcome: str = "done", runlevel: str = "50") -> Stream:
        fields: dict[str, Any] = {"node": node, "tasks": len(tasks), "runlevel": runlevel, "component": f"c{node}"}
        if after is not None:
            fields["after"] = after
        self.at(start, "node.started", **fields)
        for name, t_start, t_end, operator in tasks:
            self.at(t_start, "task.started", task=name, node=node)
            self.at(t_start, "task.applied", task=name, node=node, action="create", file="f.yaml")
            if operator:
                self.at(t_start, "task.waiting", task=name, node=node, operator=operator, reason="Updating",
                        message=f"Cluster operator {operator} is updating versions")
                if outcome == "done":
                    self.at(t_end, "operator.ready", operator=operator, waited=t_end - t_start, task=name, node=node)
            if outcome == "done":
                self.at(t_end, "task.done", task=name, node=node)
        if outcome == "done":
            self.at(end, "node.done", node=node)
        return self


def test_the_chain_follows_what_each_node_ran_after() -> None:
    s = Stream().at(0, "sweep.started", version="2.0", mode="update", total=4).at(0, "attempt.started", attempt=0)
    s.node(0, 10, 0, ("configmap a (1 of 4)", 0, 10, None), after=[])
    s.node(0, 50, 1, ('clusteroperator "slow" (2 of 4)', 0, 50, "slow"), after=[])
    s.node(50, 60, 2, ('clusteroperator "next" (3 of 4)', 50, 60, "next"), after=[0, 1])
    s.node(50, 55, 3, ("configmap b (4 of 4)", 50, 55, None), after=[0, 1])
    s.at(60, "sweep.completed", version="2.0", attempts=1)
    sweep = build_timeline(s.events).sweeps[0]
    assert [n.node for n in attempt_chain(sweep.attempts[0])] == [1, 2]
    links = critical_path(sweep)
    assert [(link.kind, link.node, round(link.share, 3)) for link in links] == [
        ("node", 1, round(50 / 60, 3)), ("node", 2, round(10 / 60, 3))]
    assert links[0].operators == (("slow", 50.0),) and "waited 50s for clusteroperator slow (ready)" in links[0].what
    assert [(c.name, c.seconds) for c in causes(links, sweep.duration)] == [
        ("clusteroperator slow", 50.0), ("clusteroperator next", 10.0)]


def test_without_after_the_node_that_ended_last_before_the_start_is_taken() -> None:
    s = Stream().at(0, "sweep.started", mode="update").at(0, "attempt.started", attempt=0)
    s.node(0, 10, 0, ("a", 0, 10, None))
    s.node(0, 30, 1, ("b", 0, 30, None))
    s.node(30, 35, 2, ("c", 30, 35, None))
    s.node(40, 45, 3, ("d", 40, 45, None))  # started late: waited for a worker, not for a node
    s.at(47, "sweep.completed")
    sweep = build_timeline(s.events).sweeps[0]
    links = critical_path(sweep)
    assert [(link.kind, link.node, link.start, link.end) for link in links] == [
        ("node", 1, 0, 30), ("node", 2, 30, 35), ("gap", None, 35, 40), ("node", 3, 40, 45), ("gap", None, 45, 47)]
    assert sum(link.share for link in links) == pytest.approx(1.0)


def test_failed_attempt_back_off_and_retry_are_on_the_path() -> None:
    s = Stream().at(0, "sweep.started", version="2.0", mode="update").at(0, "attempt.started", attempt=0)
    s.node(0, 0, 0, ("a", 0, 0, None), after=[])
    s.node(0, 100, 1, ('clusteroperator "slow" (2 of 2)', 0, 100, "slow"), after=[0], outcome="cut")
    s.at(100, "attempt.failed", attempt=0, reason="ClusterOperatorUpdating", message="slow is updating", retry_in=30.0)
    s.at(110, "attempt.woken", reason="ClusterOperator changed")
    s.at(110, "attempt.started", attempt=1)
    s.node(110, 110, 0, ("a", 110, 110, None), after=[])
    s.node(110, 150, 1, ('clusteroperator "slow" (2 of 2)', 110, 150, "slow"), after=[0])
    s.at(150, "sweep.completed")
    timeline = build_timeline(s.events)
    sweep = timeline.sweeps[0]
    first = sweep.attempts[0]
    assert (first.outcome, first.backoff.start, first.backoff.end, first.backoff.woken, first.backoff.planned) == (
        "failed", 100, 110, True, 30.0)
    assert first.nodes[1].outcome == "cut" and first.nodes[1].tasks[0].outcome == "cut"
    assert first.nodes[1].tasks[0].wait.ready is False
    links = critical_path(sweep)
    assert [(link.kind, link.start, link.end) for link in links] == [("node", 0, 100), ("backoff", 100, 110),
                                                                      ("node", 110, 150)]
    assert "woken" in links[1].label and "ClusterOperatorUpdating" in links[1].what
    top = causes(links, sweep.duration)[0]
    assert (top.name, top.seconds, round(top.share, 3)) == ("clusteroperator slow", 140.0, round(140 / 150, 3))
    row = slowest_operators(timeline)[0]
    assert (row.operator, row.waits, row.waited, row.ready_at) == ("slow", 2, 150.0, 150.0)
    assert [w.duration for w in longest_waits(timeline)] == [100.0, 40.0]


def test_failures_and_retries_keep_their_messages() -> None:
    s = Stream().at(0, "sweep.started", mode="install").at(0, "attempt.started", attempt=0)
    s.at(0, "node.started", node=0, tasks=1, after=[])
    s.at(0, "task.started", task="deployment x (1 of 1)", node=0)
    s.at(1, "task.retry", task="deployment x (1 of 1)", node=0, error="InternalError", message="etcd <leader> lost", call=1)
    s.at(3, "task.retry", task="deployment x (1 of 1)", node=0, error="InternalError", message="again", call=2)
    s.at(7, "task.failed", task="deployment x (1 of 1)", node=0, reason="UpdatePayloadFailed",
         message="Could not update deployment x", nested="InternalError")
    s.at(7, "node.failed", node=0, reason="UpdatePayloadFailed", message="Could not update deployment x")
    s.at(7, "attempt.failed", attempt=0, reason="UpdatePayloadFailed", message="Could not update deployment x",
         retry_in=22.5)
    s.at(9, "sweep.timeout", attempts=1, message="gave up")
    timeline = build_timeline(s.events)
    sweep = timeline.sweeps[0]
    assert sweep.result == "timeout" and sweep.end == 9
    assert sweep.attempts[0].backoff.end == 9  # the sweep ended during its back-off
    node = sweep.attempts[0].nodes[0]
    assert (node.outcome, node.end, node.message) == ("failed", 7, "Could not update deployment x")
    assert [(m.kind, m.reason, m.message) for m in timeline.marks] == [
        ("retry", "InternalError", "etcd <leader> lost"), ("retry", "InternalError", "again"),
        ("failed", "UpdatePayloadFailed", "Could not update deployment x"),
        ("attempt", "UpdatePayloadFailed", "Could not update deployment x")]
    assert [(r.kind, r.reason, r.count) for r in retries_by_reason(timeline)] == [
        ("retry", "InternalError", 2), ("attempt", "UpdatePayloadFailed", 1), ("failed", "UpdatePayloadFailed", 1)]


def test_requests_by_verb_add_up_and_bad_counts_are_ignored() -> None:
    s = Stream().at(0, "cluster.requests", verbs={"get": 3, "create": 1, "bad": "x", "neg": -1})
    s.at(1, "cluster.requests", verbs={"get": 2})
    assert summarize(build_timeline(s.events)).requests == [("get", 5), ("create", 1)]


def test_events_out_of_order_and_fields_of_the_wrong_type() -> None:
    s = Stream().at(10, "node.done", node=0).at(0, "sweep.started", version=["x"], total="many")
    s.at(0, "attempt.started", attempt="zero").at(0, "node.started", node=0, after="1,2", runlevel=5)
    s.at(1, "task.started", task={"a": 1}, node=0).at(1, "task.started", task="t", node=True)
    timeline = build_timeline(s.events)
    sweep = timeline.sweeps[0]
    assert (sweep.version, sweep.total_tasks, sweep.attempts[0].number) == ("", None, 1)  # each read as absent (the first attempt: 1)
    node = sweep.attempts[0].nodes[0]
    assert (node.end, node.after, node.runlevel, node.outcome) == (10, None, None, "done")
    # a task without a name is no task; a node that is not a number leaves the task without one
    assert node.tasks == [] and [(t.task, t.node) for t in sweep.attempts[0].loose] == [("t", None)]


NAMES = ["sweep.started", "attempt.started", "node.started", "node.done", "node.failed", "task.started",
         "task.applied", "task.waiting", "operator.ready", "operator.degraded", "task.retry", "task.done",
         "task.failed", "task.skipped", "attempt.failed", "attempt.woken", "sweep.completed", "sweep.timeout",
         "sweep.cancelled", "sweep.blocked", "cluster.requests", "node.error", "task.dependency", "other"]
values = st.none() | st.integers(-3, 5) | st.sampled_from(["a", "b", 'clusteroperator "x" (1 of 2)']) | st.lists(
    st.integers(-1, 5), max_size=3) | st.floats(allow_nan=True) | st.dictionaries(st.sampled_from(["get", "x"]),
                                                                                   st.integers(-5, 5))
events = st.builds(lambda s, n, f: decode(T0 + timedelta(seconds=s), n, f), st.integers(0, 500), st.sampled_from(NAMES),
                   st.dictionaries(st.sampled_from(["node", "task", "operator", "after", "attempt", "retry_in",
                                                    "verbs", "message", "reason", "runlevel"]), values, max_size=5))


@settings(max_examples=400, deadline=None)
@given(st.lists(events, max_size=40))
def test_any_stream_gives_links_that_cover_each_sweep(stream: list[Event]) -> None:
    timeline = build_timeline(stream)
    for sweep in timeline.sweeps:
        links = critical_path(sweep)
        assert all(link.end > link.start for link in links)
        assert all(a.end == pytest.approx(b.start) for a, b in itertools.pairwise(links))
        if sweep.duration > 1e-6:
            assert links[0].start == pytest.approx(sweep.start) and links[-1].end == pytest.approx(sweep.end)
            assert sum(link.share for link in links) == pytest.approx(1.0)
            assert sum(c.share for c in causes(links, sweep.duration)) == pytest.approx(1.0)
    summarize(timeline)


def replayed(name: str) -> list[Event]:
    return replay(load_scenario(REPO / "scenarios" / name)).events


def test_the_slow_operator_of_a_replay_decides_its_critical_path() -> None:
    timeline = build_timeline(replayed("upgrade-slow-operator.yaml"))
    sweep = next(s for s in timeline.sweeps if s.mode == "update")
    top = causes(critical_path(sweep), sweep.duration)[0]
    assert top.name == "clusteroperator dns" and top.share > 0.5
    assert slowest_operators(timeline)[0].operator == "dns"
    assert len(sweep.attempts) > 3 and sweep.result == "completed"


def test_parallel_components_replay_path_is_a_chain_of_nodes_in_order() -> None:
    timeline = build_timeline(replayed("upgrade-parallel-components.yaml"))
    for sweep in timeline.sweeps:
        links = critical_path(sweep)
        nodes = [link for link in links if link.kind == "node"]
        assert nodes and all(a.end <= b.start + 1e-6 for a, b in itertools.pairwise(nodes))
        assert sum(link.share for link in links) == pytest.approx(1.0)


def test_replay_with_a_failed_branch_marks_its_failure(tmp_path: Path) -> None:
    timeline = build_timeline(replayed("failed-branch-independent-finish.yaml"))
    failed = [m for m in timeline.marks if m.kind == "failed"]
    assert failed and all(m.message for m in failed)
    assert any(n.outcome == "failed" for s in timeline.sweeps for a in s.attempts for n in a.nodes)
