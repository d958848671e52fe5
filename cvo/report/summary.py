"""The summary tables of a report: slowest operators, longest waits, retries by reason, requests by verb."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from cvo.report.model import Timeline, Wait

TOP = 15


@dataclass
class OperatorRow:
    operator: str
    first_wait: float  # seconds from the start of the events
    ready_at: float | None  # None: never ready in these events
    waited: float  # first wait to ready (or to the end of its last wait): across attempts
    waits: int  # how many waits (one per attempt that waited on it)
    last_reason: str
    last_message: str


@dataclass
class ReasonRow:
    kind: str
    reason: str
    count: int
    example: str  # the first message with this reason
    where: str  # the first task or attempt


@dataclass
class Summary:
    operators: list[OperatorRow]
    waits: list[Wait]
    reasons: list[ReasonRow]
    requests: list[tuple[str, int]]


def slowest_operators(timeline: Timeline, top: int = TOP) -> list[OperatorRow]:
    by_operator: dict[tuple[int, str], list[Wait]] = defaultdict(list)
    for sweep in timeline.sweeps:
        for attempt in sweep.attempts:
            for task in [t for n in attempt.nodes for t in n.tasks] + attempt.loose:
                if task.wait is not None:
                    by_operator[(sweep.index, task.wait.operator)].append(task.wait)
    rows = []
    for (_, operator), waits in by_operator.items():
        waits.sort(key=lambda w: w.start)
        ready = next((w.end for w in waits if w.ready), None)
        end = ready if ready is not None else waits[-1].end
        last = waits[-1]
        rows.append(OperatorRow(operator, waits[0].start, ready, end - waits[0].start, len(waits), last.reason,
                                last.message))
    rows.sort(key=lambda r: (-r.waited, r.operator, r.first_wait))
    return rows[:top]


def longest_waits(timeline: Timeline, top: int = TOP) -> list[Wait]:
    return sorted(timeline.waits(), key=lambda w: (-w.duration, w.start, w.operator))[:top]


def retries_by_reason(timeline: Timeline) -> list[ReasonRow]:
    rows: dict[tuple[str, str], ReasonRow] = {}
    for mark in timeline.marks:
        key = (mark.kind, mark.reason)
        if key in rows:
            rows[key].count += 1
        else:
            rows[key] = ReasonRow(mark.kind, mark.reason, 1, mark.message, mark.what)
    return sorted(rows.values(), key=lambda r: (-r.count, r.kind, r.reason))


def summarize(timeline: Timeline) -> Summary:
    requests = sorted(timeline.requests.items(), key=lambda kv: (-kv[1], kv[0]))
    return Summary(slowest_operators(timeline), longest_waits(timeline), retries_by_reason(timeline), requests)
