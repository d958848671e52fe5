"""A report from what cvo keeps on the cluster, when no events were kept: coarser than events, but always there.

Three records, read from any cluster (or saved objects):

- the ClusterVersion's ``status.history``: each entry is a sweep (the oldest one the install), its span from
  ``startedTime`` to ``completionTime`` (the newest one, still running, to now);
- the sweep records ``openshift-cluster-version/cvo-update-durations`` (:mod:`cvo.runner.durations`): for each
  recent install and update, when the sweep first waited on each ClusterOperator and when it was done, its
  attempts and their failures;
- the ClusterOperators' conditions: for the newest sweep when it has no record (a cluster run by the CVO, or
  an update still running), an operator at the sweep's version was done when its ``Progressing`` last turned
  ``False``, one still updating has been since ``Progressing`` turned ``True``; ``Degraded=True`` is marked.

From these a :class:`~cvo.report.model.Timeline` the same pages draw: each sweep one attempt holding a node
of the release's task graph (the history entry's ``file://`` image, read as :mod:`cvo.runner.durations`
reads it) per node with recorded ClusterOperator waits, each wait a bar from its first wait to done.  A node
runs after its nearest ancestors with waits, so the critical path walks the graph's edges through the
recorded times; what the records do not hold (applying, back-offs, workers) is the path's gaps.  The
attempts a record keeps are marks on the sweep's row with their failure.

Objects come from a cluster anyone may write to: the ClusterVersion and the ClusterOperators are read into
views (:mod:`cvo.objects`: a field of the wrong type counts as absent), the records by their own reader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cvo.objects import ClusterOperator, ClusterVersion, Time
from cvo.objects.times import to_ns
from cvo.report.model import (
    TEXT_LIMIT,
    AttemptSpan,
    MachineSpan,
    Mark,
    NodeSpan,
    PoolSpan,
    SweepSpan,
    TaskSpan,
    Timeline,
    Wait,
)
from cvo.status.forecast import OperatorGraph
from cvo.status.godur import parse_datetime
from cvo.status.update_records import INSTALL, UPDATE, UpdateRecord

# (image, mode) -> the release's task graph reduced to its ClusterOperator waits; None when it cannot be read
GraphOf = Callable[[str, str], OperatorGraph | None]
MATCH_SLACK = 120.0  # seconds: a record belongs to a history entry that started this close to it
MAX_SWEEPS = 200  # history entries (the CVO keeps 100) and records without one


@dataclass
class ClusterRecords:
    """What was read from the cluster (objects not read into views yet are read by :func:`records_timeline`)."""

    cluster_version: ClusterVersion | Mapping[str, Any] | None
    cluster_operators: Sequence[ClusterOperator | Mapping[str, Any]]
    records: Sequence[UpdateRecord]
    now: datetime
    where: str = ""  # the cluster, as the page names it


@dataclass
class _Entry:
    version: str
    image: str
    state: str  # Completed, Partial; "" for a record without a history entry
    start: datetime
    end: datetime | None
    from_history: bool = True
    record: UpdateRecord | None = None
    operators: dict[str, tuple[float, float | None, str]] = field(default_factory=dict)  # seconds from start


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value or len(value) > 64:
        return None
    when = parse_datetime(value)
    if when is None:
        return None
    try:
        return when.astimezone(UTC)
    except (OverflowError, ValueError):
        return None


def _str(value: Any, limit: int = 200) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _when(when: Time | None) -> datetime | None:
    """A timestamp as a datetime; ``None`` without one, or outside the years a datetime holds."""
    if when is None:
        return None
    at = when.when
    return None if to_ns(at) != when.ns // 1000 * 1000 else at


def _history(cv: ClusterVersion | None) -> list[_Entry]:
    entries = []
    for item in cv.status.history[:MAX_SWEEPS] if cv is not None else ():
        start = _when(item.started_time)
        if start is None:
            continue
        end = _when(item.completion_time)
        entries.append(_Entry(_str(item.version), _str(item.image, 1000), _str(item.state, 40),
                              start, end if end is not None and end >= start else None))
    entries.sort(key=lambda e: e.start)  # the history is newest first; a sweep report reads oldest first
    return entries


def _match(entries: list[_Entry], records: Sequence[UpdateRecord], now: datetime) -> list[_Entry]:
    """Each record to the history entry of its version that started closest to it; the others as entries."""
    loose = []
    for record in records:
        start = _time(record.started_at)
        if start is None:
            continue
        best: _Entry | None = None
        for entry in entries:
            if entry.version != record.version or entry.record is not None:
                continue
            until = entry.end or now
            if entry.start.timestamp() - MATCH_SLACK <= start.timestamp() <= until.timestamp() + MATCH_SLACK and (
                    best is None or abs((entry.start - start).total_seconds())
                    < abs((best.start - start).total_seconds())):
                best = entry
        if best is not None:
            best.record = record
        else:
            end = _time(record.ended_at)
            loose.append(_Entry(record.version, "", record.result, start, end if end and end >= start else None,
                                from_history=False, record=record))
    return sorted([*entries, *loose], key=lambda e: e.start)[-MAX_SWEEPS:]


def _from_conditions(entry: _Entry, cos: Sequence[ClusterOperator], end: datetime,
                     graph: OperatorGraph | None) -> dict[str, tuple[float, float | None, str]]:
    """The newest sweep's operator times from the ClusterOperators' conditions (no record of it): done when
    ``Progressing`` turned False (the start: when the graph let the sweep reach it), updating since it turned True."""
    span = (end - entry.start).total_seconds()
    done: dict[str, float] = {}
    updating: dict[str, float] = {}
    for co in cos:
        name = _str(co.name)
        progressing = co.status.condition("Progressing")
        since = _when(progressing.last_transition_time) if progressing is not None else None
        at = (since - entry.start).total_seconds() if since is not None else None
        if not name:
            continue
        if co.status.version() == entry.version:
            if progressing is not None and progressing.status == "False" and at is not None and 0 <= at <= span:
                done[name] = at
        elif progressing is not None and progressing.status == "True":
            updating[name] = min(max(0.0, at if at is not None else 0.0), span)
    how = "from the ClusterOperator's Progressing condition"
    out: dict[str, tuple[float, float | None, str]] = {
        name: (since, None, f"updating since Progressing turned True ({how})") for name, since in updating.items()}
    if graph is None:
        for name, at in done.items():
            out[name] = (0.0, at, f"done when Progressing turned False; when it was first waited on is not known ({how})")
        return out
    # the start of each wait: when the graph let the sweep reach it (its node's predecessors done, the
    # operators before it in its node done)
    finish: dict[int, float] = {}
    for node in graph.order:
        cursor = max((finish.get(p, 0.0) for p in graph.predecessors.get(node, ())), default=0.0)
        for name in graph.operators.get(node, ()):
            if name in done:
                start = min(cursor, done[name])
                out[name] = (start, done[name], f"done when Progressing turned False; first waited on when the "
                                                f"task graph reached it, estimated ({how})")
                cursor = max(cursor, done[name])
            elif name in updating:
                cursor = span
        finish[node] = cursor
    return out


def _degraded_marks(entry: _Entry, cos: Sequence[ClusterOperator], origin: datetime, end: datetime) -> list[Mark]:
    marks = []
    for co in cos:
        name = _str(co.name)
        degraded = co.status.condition("Degraded")
        if not name or degraded is None or degraded.status != "True":
            continue
        since = _when(degraded.last_transition_time)
        if since is not None and entry.start <= since <= end:
            marks.append(Mark((since - origin).total_seconds(), "degraded", name, _str(degraded.reason),
                              _str(degraded.message, TEXT_LIMIT)))
    return marks


def _nodes(times: dict[str, tuple[float, float | None, str]], graph: OperatorGraph | None, offset: float,
           span: tuple[float, float], source: str) -> list[NodeSpan]:
    """A node per graph node with recorded waits (each after its nearest such ancestors); without a graph, a node
    per operator, in the order they were first waited on.  Times are kept within the sweep's ``span``."""
    begin, end = span

    def task(name: str, node: int) -> TaskSpan:
        start, done, message = times[name]
        a = min(max(begin, offset + start), end)
        b = min(max(a, offset + done), end) if done is not None else end
        span = TaskSpan(f'clusteroperator "{name}"', node, a, b, "done" if done is not None else "cut")
        span.wait = Wait(name, a, b, ready=done is not None, reason=source, message=message)
        return span

    nodes: list[NodeSpan] = []
    placed: set[str] = set()
    if graph is not None:
        nearest: dict[int, set[int]] = {}
        included: set[int] = set()
        for node in graph.order:
            ancestors: set[int] = set()
            for pred in graph.predecessors.get(node, ()):
                ancestors |= {pred} if pred in included else nearest.get(pred, set())
            nearest[node] = ancestors
            tasks = [task(name, node) for name in graph.operators.get(node, ()) if name in times and name not in placed]
            if not tasks:
                continue
            included.add(node)
            placed.update(t.wait.operator for t in tasks if t.wait is not None)
            runlevel, component = graph.places.get(node, (None, None))
            nodes.append(NodeSpan(node, 0, min(t.start for t in tasks), max(t.end for t in tasks),
                                  "done" if all(t.outcome == "done" for t in tasks) else "cut", runlevel, component,
                                  tuple(sorted(ancestors)), tasks, size=len(graph.operators.get(node, ()))))
    first = max((n.node for n in nodes), default=-1) + 1
    rest = sorted((name for name in times if name not in placed), key=lambda n: (times[n][0], n))
    for i, name in enumerate(rest):  # not in the graph (or no graph): a node of its own
        alone = task(name, first + i)
        nodes.append(NodeSpan(first + i, 0, alone.start, alone.end, alone.outcome, None, None, None, [alone], size=1))
    nodes.sort(key=lambda n: n.node)
    return nodes


def _pools(record: UpdateRecord, base: float) -> list[PoolSpan]:
    """The record's pools with nodes, each node's times moved to the timeline's zero (``base``: the record's)."""
    pools = []
    for name, pool in sorted(record.pools.items()):
        nodes = [MachineSpan(node, base + t.started, None if t.drained is None else base + t.drained,
                             None if t.done is None else base + t.done)
                 for node, t in sorted(pool.nodes.items(), key=lambda item: (item[1].started, item[0]))]
        if nodes:
            pools.append(PoolSpan(name, pool.max_unavailable, pool.size, nodes))
    return pools


def _result(entry: _Entry, newest: bool, progressing: bool) -> str:
    if entry.state == "Completed":
        return "completed"
    if not entry.from_history:
        return entry.state or "recorded"
    if newest and entry.end is None:
        return "running" if progressing else "partial"
    return "partial"


def records_timeline(found: ClusterRecords, graph_of: GraphOf) -> Timeline:
    """The sweeps the cluster's records describe, oldest first."""
    cv = None if found.cluster_version is None else ClusterVersion.of(found.cluster_version)
    cos = [ClusterOperator.of(co) for co in found.cluster_operators]
    entries = _match(_history(cv), found.records, found.now)
    sources = (f"the ClusterVersion's history ({sum(e.from_history for e in entries)} entries), "
               f"{len(found.records)} sweep record(s) (openshift-cluster-version/cvo-update-durations), "
               f"{len(found.cluster_operators)} ClusterOperators")
    if not entries:
        return Timeline(None, 0.0, basis=f"from the cluster's records: {sources}", from_records=True)
    origin = entries[0].start
    timeline = Timeline(origin, 0.0, basis=f"from the cluster's records: {sources}", from_records=True)
    cv_progressing = cv.status.condition("Progressing") if cv is not None else None
    progressing = cv_progressing is not None and cv_progressing.status == "True"
    for i, entry in enumerate(entries):
        newest = i == len(entries) - 1
        following = entries[i + 1].start if not newest else None
        end = entry.end or following or max(found.now, entry.start)
        record = entry.record
        mode = record.mode if record is not None else (INSTALL if i == 0 and entry.from_history else UPDATE)
        graph = graph_of(entry.image, mode) if entry.image else None
        start_s, end_s = (entry.start - origin).total_seconds(), (end - origin).total_seconds()
        recorded = _time(record.started_at) if record is not None else None
        base = (recorded - origin).total_seconds() if recorded is not None else start_s  # the record's times' zero
        if record is not None and record.operators:
            source = "recorded"
            times = {name: (t.started, t.done, "first waited on and done: the sweep's record")
                     for name, t in record.operators.items()}
        elif newest and entry.from_history:
            source, base = "from conditions", start_s
            times = _from_conditions(entry, cos, end, graph)
        else:
            source, times = "", {}
        sweep = SweepSpan(i, entry.version, mode, start_s, end_s, _result(entry, newest, progressing))
        if times:
            attempt = AttemptSpan(1, start_s, end_s, outcome=sweep.result)
            attempt.nodes = _nodes(times, graph, base, (start_s, end_s), source)
            sweep.attempts.append(attempt)
            sweep.note = ("per-operator times from the sweep's record" if source == "recorded" else
                          "no record of this sweep: per-operator times from the ClusterOperators' conditions")
            if graph is None:
                sweep.note += "; the release's task graph is not readable here (not a file:// image), so the " \
                              "critical path follows the order the operators were waited on"
        else:
            sweep.note = "no per-operator times recorded for this sweep: only its span (the ClusterVersion's history)"
        sweep.attempt_count = record.attempt_count if record is not None else 0  # 0: not recorded
        if record is not None:
            sweep.pools = _pools(record, base)
            pool_end = max((e for pool in sweep.pools for n in pool.nodes
                            for e in (n.start, n.drained, n.end) if e is not None), default=end_s)
            timeline.end = max(timeline.end, pool_end)
        if record is not None:
            for a in record.attempts:
                if a.reason and a.ended is not None:
                    timeline.marks.append(Mark(base + a.ended, "attempt", f"attempt {a.number}", a.reason,
                                               a.message))
        if newest:
            timeline.marks.extend(_degraded_marks(entry, cos, origin, end))
        timeline.sweeps.append(sweep)
        timeline.end = max(timeline.end, end_s)
    timeline.marks.sort(key=lambda m: m.at)
    return timeline
