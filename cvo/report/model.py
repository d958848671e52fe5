"""The timeline of a sweep, built from its events: sweeps, attempts, nodes, tasks, waits, back-offs, marks.

Pure functions over :class:`cvo.runner.events.Event` lists.  Times are seconds from the first event
(the sweep's clock: simulated time on the embedded cluster).  Events come from files anyone may have
written, so every field is checked for its type and a field of the wrong type counts as absent; events
out of order are taken in time order; whatever is still open when the events end is closed there.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cvo.runner.events import Event

_OPERATOR_TASK = re.compile(r'^clusteroperator "([^"]+)" \(\d+ of \d+\)$')
TEXT_LIMIT = 2000  # characters of a message kept (a report shows them on hover)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53 else None


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    return text[:TEXT_LIMIT]


def _ints(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, list):
        return None
    out = tuple(v for v in (_int(x) for x in value[:10_000]) if v is not None)
    return out if len(out) == len(value) else None


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

    def open_sweep(self, t: float, f: dict[str, Any]) -> SweepSpan:
        if self.sweep is not None:
            self.close_sweep(t, "running")
        self.sweep = SweepSpan(len(self.timeline.sweeps), _text(f.get("version")), _text(f.get("mode")), t, t,
                               total_tasks=_int(f.get("total")))
        self.timeline.sweeps.append(self.sweep)
        return self.sweep

    def current_sweep(self, t: float) -> SweepSpan:
        return self.sweep if self.sweep is not None else self.open_sweep(t, {})

    def open_attempt(self, t: float, number: int | None) -> AttemptSpan:
        sweep = self.current_sweep(t)
        if self.attempt is not None:
            self.close_attempt(t, "cut")
        if sweep.attempts and sweep.attempts[-1].backoff is not None:
            backoff = sweep.attempts[-1].backoff
            backoff.end = max(backoff.start, min(backoff.end, t)) if backoff.woken else max(backoff.start, t)
        if number is None:
            number = sweep.attempts[-1].number + 1 if sweep.attempts else 0
        self.attempt = AttemptSpan(number, t, t)
        sweep.attempts.append(self.attempt)
        return self.attempt

    def current_attempt(self, t: float) -> AttemptSpan:
        return self.attempt if self.attempt is not None else self.open_attempt(t, None)

    def task(self, t: float, f: dict[str, Any], create: bool = False) -> TaskSpan | None:
        name = _text(f.get("task"))
        if not name:
            return None
        span = self.tasks.get(name)
        if span is None and create:
            attempt = self.current_attempt(t)
            node_id = _int(f.get("node"))
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

    def mark(self, t: float, kind: str, what: str, reason: Any, message: Any, node: int | None = None) -> None:
        number = self.attempt.number if self.attempt is not None else None
        self.timeline.marks.append(Mark(t, kind, what, _text(reason), _text(message), number, node))

    # --- events ---------------------------------------------------------------------------------

    def take(self, event: Event) -> None:
        t, f, name = self.at(event), event.fields, event.name
        self.timeline.end = max(self.timeline.end, t)
        if name == "sweep.started":
            self.open_sweep(t, f)
        elif name == "attempt.started":
            self.open_attempt(t, _int(f.get("attempt")))
        elif name == "node.started":
            node_id = _int(f.get("node"))
            if node_id is None:
                return
            attempt = self.current_attempt(t)
            runlevel, component = f.get("runlevel"), f.get("component")
            span = NodeSpan(node_id, attempt.number, t, t, runlevel=runlevel if isinstance(runlevel, str) else None,
                            component=component if isinstance(component, str) else None,
                            after=_ints(f.get("after")), size=_int(f.get("tasks")) or 0)
            attempt.nodes.append(span)
            self.nodes[node_id] = span
        elif name in ("node.done", "node.failed"):
            node_id = _int(f.get("node"))
            span = self.nodes.pop(node_id, None) if node_id is not None else None
            if span is not None:
                span.end = max(span.start, t)
                span.outcome = "done" if name == "node.done" else "failed"
                span.message = _text(f.get("message"))
        elif name == "node.error":
            self.mark(t, "error", _text(f.get("task")) or f"node {f.get('node')}", "", f.get("error"), _int(f.get("node")))
        elif name == "task.started":
            self.task(t, f, create=True)
        elif name == "task.skipped":
            span = self.task(t, f, create=True)
            if span is not None:
                self.close_task(span, t, "skipped")
        elif name == "task.applied":
            span = self.task(t, f, create=True)
            if span is not None:
                span.applied, span.action, span.file = t, _text(f.get("action")), _text(f.get("file"))
        elif name == "task.waiting":
            span = self.task(t, f, create=True)
            operator = _text(f.get("operator"))
            if span is not None and operator:
                if span.wait is None:
                    number = self.attempt.number if self.attempt is not None else None
                    span.wait = Wait(operator, t, t, attempt=number)
                span.wait.reason, span.wait.message = _text(f.get("reason")), _text(f.get("message"))
        elif name in ("operator.ready", "operator.degraded"):
            span = self.task(t, f) or next((s for s in self.tasks.values() if s.wait is not None
                                            and s.wait.operator == _text(f.get("operator"))), None)
            if name == "operator.degraded":
                self.mark(t, "degraded", _text(f.get("operator")), "Degraded", f.get("message"), _int(f.get("node")))
            if span is not None and span.wait is not None:
                span.wait.end, span.wait.ready = max(span.wait.start, t), name == "operator.ready"
        elif name in ("task.retry", "task.dependency"):
            span = self.task(t, f, create=True)
            kind = "retry" if name == "task.retry" else "dependency"
            reason = f.get("error")
            message = f.get("message") if kind == "retry" else f"waits for {_text(f.get('kind'))} {_text(f.get('dependency'))}"
            self.mark(t, kind, span.task if span else "", reason, message, span.node if span else None)
        elif name == "task.done":
            span = self.task(t, f, create=True)
            if span is not None:
                self.close_task(span, t, "done")
        elif name == "task.failed":
            span = self.task(t, f, create=True)
            if span is not None:
                self.mark(t, "failed", span.task, f.get("reason"), f.get("message"), span.node)
                self.close_task(span, t, "failed")
        elif name == "attempt.failed":
            attempt = self.current_attempt(t)
            attempt.reason, attempt.message = _text(f.get("reason")), _text(f.get("message"))
            self.mark(t, "attempt", f"attempt {attempt.number}", f.get("reason"), f.get("message"))
            retry_in = f.get("retry_in")
            planned = float(retry_in) if isinstance(retry_in, int | float) and not isinstance(retry_in, bool) \
                and 0 <= retry_in < 1e9 else None
            self.close_attempt(t, "failed")
            attempt.backoff = Backoff(t, t + (planned or 0.0), planned)
        elif name == "attempt.woken":
            sweep = self.sweep
            if sweep is not None and sweep.attempts and sweep.attempts[-1].backoff is not None:
                backoff = sweep.attempts[-1].backoff
                backoff.end, backoff.woken = max(backoff.start, t), True
        elif name in ("sweep.completed", "sweep.timeout", "sweep.cancelled", "sweep.blocked"):
            result = name.split(".", 1)[1]
            if self.sweep is None and result in ("blocked", "cancelled"):
                return  # an upgrade blocked before its sweep started, a cancel with nothing running
            sweep = self.current_sweep(t)
            sweep.message = _text(f.get("message") or f.get("reason"))
            self.close_sweep(t, result)
        elif name == "cluster.requests":
            verbs = f.get("verbs")
            if isinstance(verbs, dict):
                for verb, count in verbs.items():
                    if isinstance(verb, str) and (n := _int(count)) is not None and n >= 0:
                        self.requests[verb[:40]] += n

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
