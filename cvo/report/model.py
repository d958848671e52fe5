"""The timeline of a sweep, built from its events: sweeps, attempts, nodes, tasks, waits, back-offs, marks.

Pure functions over lists of the catalogue's events (:mod:`cvo.runner.sweep_events`).  Times are seconds
from the first event (the sweep's clock: simulated time on the embedded cluster).  Events come from files
anyone may have written: the reader has checked every field's type (a field of the wrong type reads as
absent), texts are cut to :data:`TEXT_LIMIT`, events out of order are taken in time order, and whatever is
still open when the events end is closed there.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from cvo.runner.sweep_events import (
    AttemptFailed,
    AttemptStarted,
    AttemptWoken,
    ClusterRequests,
    Event,
    NodeDone,
    NodeError,
    NodeFailed,
    NodeStarted,
    OperatorDegraded,
    OperatorReady,
    SweepBlocked,
    SweepCancelled,
    SweepCompleted,
    SweepStarted,
    SweepTimeout,
    TaskApplied,
    TaskDependency,
    TaskDone,
    TaskFailed,
    TaskRetry,
    TaskSkipped,
    TaskStarted,
    TaskWaiting,
)

_OPERATOR_TASK = re.compile(r'^clusteroperator "([^"]+)" \(\d+ of \d+\)$')
TEXT_LIMIT = 2000  # characters of a message kept (a report shows them on hover)


def _text(value: str) -> str:
    return value[:TEXT_LIMIT]


@dataclass
class Mark:
    """A failure, a retry or another moment worth marking on the timeline, with its message."""

    at: float
    kind: str  # retry, dependency, failed (a task), error (not an API error), degraded, attempt
    what: str  # the task, node or attempt it concerns
    reason: str
    message: str
    attempt: int | None = None
    node: int | None = None


@dataclass
class Wait:
    """A ClusterOperator task waiting for its operator: from the first "not yet" to ready (or the end)."""

    operator: str
    start: float
    end: float
    ready: bool = False
    reason: str = ""
    message: str = ""
    attempt: int | None = None

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class TaskSpan:
    task: str
    node: int | None
    start: float
    end: float
    outcome: str = "running"  # done, failed, skipped, cut (the attempt ended first), running
    applied: float | None = None
    action: str = ""
    file: str = ""
    wait: Wait | None = None

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class NodeSpan:
    node: int
    attempt: int
    start: float
    end: float
    outcome: str = "running"  # done, failed, cut
    runlevel: str | None = None
    component: str | None = None
    after: tuple[int, ...] | None = None  # the nodes it ran after; None: the events do not say
    tasks: list[TaskSpan] = field(default_factory=list)
    message: str = ""
    size: int = 0  # tasks in the node (node.started)

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def label(self) -> str:
        first = self.tasks[0].task if self.tasks else ""
        return f"node {self.node}" + (f": {first}" if first else "") + (
            f" +{len(self.tasks) - 1}" if len(self.tasks) > 1 else "")


@dataclass
class Backoff:
    start: float
    end: float
    planned: float | None = None  # retry_in
    woken: bool = False  # ended early by a ClusterOperator change


@dataclass
class AttemptSpan:
    number: int
    start: float
    end: float
    outcome: str = "running"  # completed, failed, cut (the sweep ended), running
    reason: str = ""
    message: str = ""
    backoff: Backoff | None = None  # after this attempt failed
    nodes: list[NodeSpan] = field(default_factory=list)
    loose: list[TaskSpan] = field(default_factory=list)  # tasks whose node the events do not name


@dataclass(frozen=True)
class MachineSpan:
    """One node's update in a MachineConfigPool: picked, drained, done (``None``: not seen, the update goes on)."""

    name: str
    start: float
    drained: float | None
    end: float | None


@dataclass
class PoolSpan:
    """A MachineConfigPool's part of an update: its nodes, ``width`` at a time (the records' ``pools``)."""

    name: str
    width: int
    size: int
    nodes: list[MachineSpan] = field(default_factory=list)

    @property
    def start(self) -> float:
        return min(n.start for n in self.nodes)

    @property
    def end(self) -> float | None:
        """When its last node was done; None while one is not."""
        ends = [n.end for n in self.nodes]
        return None if any(e is None for e in ends) else max(e for e in ends if e is not None)


@dataclass
class SweepSpan:
    index: int
    version: str
    mode: str
    start: float
    end: float
    result: str = "running"  # completed, timeout, cancelled, blocked, running
    attempts: list[AttemptSpan] = field(default_factory=list)
    total_tasks: int | None = None
    message: str = ""
    # how many attempts a record says there were; None: len(attempts) (events), 0: not known (records)
    attempt_count: int | None = None
    note: str = ""  # what the sweep's times come from, when not from its events
    from_zero: bool = False  # its events count attempts from 0 (an older cvo): shown from 1
    pools: list[PoolSpan] = field(default_factory=list)  # the machine-config operator's part (records only)

    @property
    def drawn_end(self) -> float:
        """Where its chart ends: its own end, or its pools' last node (worker pools go on after an update)."""
        return max([self.end, *(n.end if n.end is not None else n.drained if n.drained is not None else n.start
                                for pool in self.pools for n in pool.nodes)])

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def attempts_text(self) -> str:
        """``3 attempts``, ``1 attempt``, or ``attempts not recorded``."""
        n = self.attempt_count if self.attempt_count is not None else len(self.attempts)
        return f"{n} attempt{'s' if n != 1 else ''}" if n else (
            "attempts not recorded" if self.attempt_count == 0 else "0 attempts")


@dataclass
class Timeline:
    origin: datetime | None
    end: float
    sweeps: list[SweepSpan] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    requests: dict[str, int] = field(default_factory=dict)
    events: int = 0
    estimated: bool = False  # a plan's estimate, not a record
    from_records: bool = False  # from the records on the cluster (cvo.report.records), not from events
    basis: str = ""  # what the times come from, when not from events

    def waits(self) -> list[Wait]:
        return [t.wait for s in self.sweeps for a in s.attempts for n in a.nodes for t in n.tasks if t.wait] + [
            t.wait for s in self.sweeps for a in s.attempts for t in a.loose if t.wait]


class _Builder:
    def __init__(self, origin: datetime) -> None:
        self.origin = origin
        self.timeline = Timeline(origin, 0.0)
        self.sweep: SweepSpan | None = None
        self.attempt: AttemptSpan | None = None
        self.nodes: dict[int, NodeSpan] = {}
        self.tasks: dict[str, TaskSpan] = {}
        self.requests: Counter[str] = Counter()

    def at(self, event: Event) -> float:
        return (event.time - self.origin).total_seconds()

    # --- opening --------------------------------------------------------------------------------

    def open_sweep(self, t: float, version: str = "", mode: str = "", total: int | None = None) -> SweepSpan:
        if self.sweep is not None:
            self.close_sweep(t, "running")
        self.sweep = SweepSpan(len(self.timeline.sweeps), _text(version), _text(mode), t, t, total_tasks=total)
        self.timeline.sweeps.append(self.sweep)
        return self.sweep

    def current_sweep(self, t: float) -> SweepSpan:
        return self.sweep if self.sweep is not None else self.open_sweep(t)

    def open_attempt(self, t: float, number: int | None) -> AttemptSpan:
        sweep = self.current_sweep(t)
        if self.attempt is not None:
            self.close_attempt(t, "cut")
        if sweep.attempts and sweep.attempts[-1].backoff is not None:
            backoff = sweep.attempts[-1].backoff
            backoff.end = max(backoff.start, min(backoff.end, t)) if backoff.woken else max(backoff.start, t)
        if number is None:
            number = sweep.attempts[-1].number + 1 if sweep.attempts else 1
        elif number == 0 or sweep.from_zero:  # events of a cvo that counted attempts from 0: shown from 1
            sweep.from_zero = True
            number += 1
        self.attempt = AttemptSpan(number, t, t)
        sweep.attempts.append(self.attempt)
        return self.attempt

    def current_attempt(self, t: float) -> AttemptSpan:
        return self.attempt if self.attempt is not None else self.open_attempt(t, None)

    def task(self, t: float, task: str, node_id: int | None, create: bool = True) -> TaskSpan | None:
        """The span of the task still open under this name; a new one (unless not ``create``)."""
        name = _text(task)
        if not name:
            return None
        span = self.tasks.get(name)
        if span is None and create:
            attempt = self.current_attempt(t)
            span = TaskSpan(name, node_id, t, t)
            node = self.nodes.get(node_id) if node_id is not None else None
            (node.tasks if node is not None else attempt.loose).append(span)
            self.tasks[name] = span
        return span

    # --- closing --------------------------------------------------------------------------------

    def close_task(self, span: TaskSpan, t: float, outcome: str) -> None:
        span.end = max(span.start, t)
        span.outcome = outcome
        if span.wait is None and outcome == "done" and (match := _OPERATOR_TASK.match(span.task)):
            # ready at the first look: a wait of no time (the summary then knows it was ready)
            start = span.applied if span.applied is not None else span.start
            number = self.attempt.number if self.attempt is not None else None
            span.wait = Wait(match.group(1), start, max(start, t), ready=True, attempt=number)
        if span.wait is not None and span.wait.end <= span.wait.start:
            span.wait.end = max(span.wait.start, t)
            span.wait.ready = outcome == "done"
        self.tasks.pop(span.task, None)

    def close_attempt(self, t: float, outcome: str) -> None:
        attempt = self.attempt
        if attempt is None:
            return
        for span in list(self.tasks.values()):
            self.close_task(span, t, "cut")
        for node in self.nodes.values():
            node.end = max(node.start, t)
            node.outcome = "cut"
        self.nodes.clear()
        attempt.end = max(attempt.start, t)
        attempt.outcome = outcome
        self.attempt = None

    def close_sweep(self, t: float, result: str) -> None:
        if self.attempt is not None:
            self.close_attempt(t, "completed" if result == "completed" else "cut")
        sweep = self.sweep
        if sweep is None:
            return
        if sweep.attempts and sweep.attempts[-1].backoff is not None:
            backoff = sweep.attempts[-1].backoff
            backoff.end = max(backoff.start, min(backoff.end, t) if backoff.woken else t)
        sweep.end = max(sweep.start, t)
        sweep.result = result
        self.sweep = None

    def mark(self, t: float, kind: str, what: str, reason: str, message: str, node: int | None = None) -> None:
        number = self.attempt.number if self.attempt is not None else None
        self.timeline.marks.append(Mark(t, kind, what, _text(reason), _text(message), number, node))

    # --- events ---------------------------------------------------------------------------------

    def take(self, event: Event) -> None:
        t = self.at(event)
        self.timeline.end = max(self.timeline.end, t)
        match event:
            case SweepStarted(version=version, mode=mode, total=total):
                self.open_sweep(t, version, mode, total)
            case AttemptStarted(attempt=number):
                self.open_attempt(t, number)
            case NodeStarted(node=node_id) if node_id is not None:
                attempt = self.current_attempt(t)
                node = NodeSpan(node_id, attempt.number, t, t, runlevel=event.runlevel, component=event.component,
                                after=tuple(event.after) if event.after is not None else None, size=event.tasks)
                attempt.nodes.append(node)
                self.nodes[node_id] = node
            case NodeDone(node=node_id) | NodeFailed(node=node_id) if node_id is not None:
                if (node_span := self.nodes.pop(node_id, None)) is not None:
                    node_span.end = max(node_span.start, t)
                    node_span.outcome = "done" if isinstance(event, NodeDone) else "failed"
                    node_span.message = _text(event.message) if isinstance(event, NodeFailed) else ""
            case NodeError(node=node_id, task=task, error=error):
                self.mark(t, "error", _text(task) or f"node {node_id}", "", error, node_id)
            case TaskStarted(task=task, node=node_id):
                self.task(t, task, node_id)
            case TaskSkipped(task=task, node=node_id):
                if (span := self.task(t, task, node_id)) is not None:
                    self.close_task(span, t, "skipped")
            case TaskApplied(task=task, node=node_id, action=action, file=file):
                if (span := self.task(t, task, node_id)) is not None:
                    span.applied, span.action, span.file = t, _text(action), _text(file)
            case TaskWaiting(task=task, node=node_id, operator=operator):
                span = self.task(t, task, node_id)
                if span is not None and operator:
                    if span.wait is None:
                        number = self.attempt.number if self.attempt is not None else None
                        span.wait = Wait(_text(operator), t, t, attempt=number)
                    span.wait.reason, span.wait.message = _text(event.reason), _text(event.message)
            case OperatorReady(task=task, node=node_id, operator=operator) | OperatorDegraded(
                    task=task, node=node_id, operator=operator):
                span = self.task(t, task, node_id, create=False) or next(
                    (s for s in self.tasks.values() if s.wait is not None and s.wait.operator == _text(operator)), None)
                if isinstance(event, OperatorDegraded):
                    self.mark(t, "degraded", _text(operator), "Degraded", event.message, node_id)
                if span is not None and span.wait is not None:
                    span.wait.end, span.wait.ready = max(span.wait.start, t), isinstance(event, OperatorReady)
            case TaskRetry(task=task, node=node_id, error=error, message=message):
                span = self.task(t, task, node_id)
                self.mark(t, "retry", span.task if span else "", error, message, span.node if span else None)
            case TaskDependency(task=task, node=node_id, error=error, kind=kind, dependency=dependency):
                span = self.task(t, task, node_id)
                self.mark(t, "dependency", span.task if span else "", error,
                          f"waits for {_text(kind)} {_text(dependency)}", span.node if span else None)
            case TaskDone(task=task, node=node_id):
                if (span := self.task(t, task, node_id)) is not None:
                    self.close_task(span, t, "done")
            case TaskFailed(task=task, node=node_id, reason=reason, message=message):
                if (span := self.task(t, task, node_id)) is not None:
                    self.mark(t, "failed", span.task, reason, message, span.node)
                    self.close_task(span, t, "failed")
            case AttemptFailed(reason=reason, message=message, retry_in=retry_in):
                attempt = self.current_attempt(t)
                attempt.reason, attempt.message = _text(reason), _text(message)
                self.mark(t, "attempt", f"attempt {attempt.number}", reason, message)
                planned = float(retry_in) if retry_in is not None and 0 <= retry_in < 1e9 else None
                self.close_attempt(t, "failed")
                attempt.backoff = Backoff(t, t + (planned or 0.0), planned)
            case AttemptWoken():
                sweep = self.sweep
                if sweep is not None and sweep.attempts and sweep.attempts[-1].backoff is not None:
                    backoff = sweep.attempts[-1].backoff
                    backoff.end, backoff.woken = max(backoff.start, t), True
            case SweepCompleted() | SweepTimeout():
                self.end_sweep(t, "completed" if isinstance(event, SweepCompleted) else "timeout",
                               event.message if isinstance(event, SweepTimeout) else "")
            case SweepCancelled(reason=message) | SweepBlocked(message=message) if self.sweep is not None:
                # (one before its sweep started: an upgrade blocked at once, a cancel with nothing running)
                self.end_sweep(t, "cancelled" if isinstance(event, SweepCancelled) else "blocked", message)
            case ClusterRequests(verbs=verbs):
                for verb, count in verbs.items():
                    if count >= 0:
                        self.requests[verb[:40]] += count

    def end_sweep(self, t: float, result: str, message: str) -> None:
        sweep = self.current_sweep(t)
        sweep.message = _text(message)
        self.close_sweep(t, result)

    def finish(self) -> Timeline:
        end = self.timeline.end
        if self.sweep is not None:
            self.close_sweep(end, "running")
        self.timeline.requests = dict(self.requests)
        return self.timeline


def build_timeline(events: list[Event]) -> Timeline:
    """The timeline the events describe (empty for no events)."""
    if not events:
        return Timeline(None, 0.0)
    ordered = sorted(events, key=lambda e: e.time)  # stable: equal times keep their order
    builder = _Builder(ordered[0].time)
    for event in ordered:
        builder.take(event)
    builder.timeline.events = len(ordered)
    return builder.finish()


def select_sweep(timeline: Timeline, number: int) -> Timeline:
    """The timeline of one of its sweeps: ``number`` from 1, or from the end (-1 the last); :class:`IndexError`
    when there is no such sweep."""
    count = len(timeline.sweeps)
    index = number - 1 if number > 0 else count + number
    if number == 0 or not 0 <= index < count:
        raise IndexError(number)
    sweep = timeline.sweeps[index]
    marks = [m for m in timeline.marks if sweep.start <= m.at <= sweep.end]
    return dataclasses.replace(timeline, sweeps=[sweep], marks=marks)
