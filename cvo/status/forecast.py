"""A forecast of an update's end that knows the task graph (beyond oc's estimate).

oc estimates the remaining time from the previous update's total duration and the share of
ClusterOperators already updated.  cvo records, on the cluster, how long each ClusterOperator took to
reach the new version in each update (:data:`RECORDS_NAMESPACE`/:data:`RECORDS_NAME`, a ConfigMap the
upgrade writes, ``docs/upgrade-status.md``), and walks the release's task graph: every node runs its
ClusterOperator waits in order, after its predecessors, so the update ends when the longest remaining
path does.  An operator's expected duration is the mean of its recorded durations; one already
updating is expected to need what is left of that, and never less than a quarter of it (an operator
that overran its mean is not about to finish just because it should have).

Pure functions: the records, the graph's shape, which operators are done and which are updating since
when, and ``now`` (nanoseconds) go in; a :class:`Forecast` comes out, or ``None`` without records.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import orjson

from cvo.payload.graph import Mode, wait_for
from cvo.status.godur import SECOND, parse_time, rfc3339, short_duration

RECORDS_NAMESPACE = "openshift-cluster-version"
RECORDS_NAME = "cvo-update-durations"
RECORDS_KEY = "records.json"
MAX_RECORDS = 10  # the most recent updates kept
MIN_SHARE_LEFT = 0.25  # an updating operator still needs at least this share of its expected duration


@dataclass(frozen=True)
class OperatorTime:
    """When, counted from the update's start, a ClusterOperator was first waited on and when it was done."""

    started: float  # seconds
    done: float | None = None

    @property
    def duration(self) -> float | None:
        return None if self.done is None else max(0.0, self.done - self.started)


@dataclass
class UpdateRecord:
    """One update: its target version, when it started, and each operator's times."""

    version: str
    started_at: str
    operators: dict[str, OperatorTime] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "startedAt": self.started_at,
                "operators": {name: {"started": t.started, **({"done": t.done} if t.done is not None else {})}
                              for name, t in sorted(self.operators.items())}}


def parse_records(configmap: Mapping[str, Any] | None) -> list[UpdateRecord]:
    """The records of a ConfigMap; whatever does not parse is left out (a forecast is a hint, never an error)."""
    data = (configmap or {}).get("data")
    raw = data.get(RECORDS_KEY) if isinstance(data, Mapping) else None
    if not isinstance(raw, str):
        return []
    try:
        items = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return []
    records = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping) or not isinstance(item.get("operators"), Mapping):
            continue
        operators = {}
        for name, times in item["operators"].items():
            if isinstance(name, str) and isinstance(times, Mapping) and _number(times.get("started")):
                done = times.get("done")
                operators[name] = OperatorTime(float(times["started"]), float(done) if _number(done) else None)
        records.append(UpdateRecord(str(item.get("version", "")), str(item.get("startedAt", "")), operators))
    return records


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value and abs(value) < 1e12


def records_configmap(records: Sequence[UpdateRecord]) -> dict[str, Any]:
    """The ConfigMap holding the most recent :data:`MAX_RECORDS` records."""
    kept = list(records)[-MAX_RECORDS:]
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": RECORDS_NAME, "namespace": RECORDS_NAMESPACE,
                         "annotations": {"cvo.openshift.io/what": "how long each ClusterOperator took to reach "
                                                                  "the new version in each update (cvo upgrade status)"}},
            "data": {RECORDS_KEY: orjson.dumps([r.to_json() for r in kept]).decode()}}


def expected_durations(records: Iterable[UpdateRecord]) -> dict[str, float]:
    """Each operator's mean recorded duration, in seconds."""
    samples: dict[str, list[float]] = {}
    for record in records:
        for name, times in record.operators.items():
            if times.duration is not None:
                samples.setdefault(name, []).append(times.duration)
    return {name: statistics.fmean(values) for name, values in samples.items()}


@dataclass(frozen=True)
class OperatorGraph:
    """The task graph reduced to what the forecast needs: each node's ClusterOperator waits, in order."""

    operators: dict[int, tuple[str, ...]]
    predecessors: dict[int, tuple[int, ...]]
    order: tuple[int, ...]  # topological


def operator_graph(graph: nx.DiGraph, mode: Mode = Mode.UPDATE) -> OperatorGraph:
    operators = {}
    for node, attrs in graph.nodes(data=True):
        names = []
        for task in attrs.get("tasks") or []:
            wait = wait_for(task.manifest, mode)
            if wait is not None and wait.kind == "ClusterOperator":
                names.append(wait.name)
        operators[node] = tuple(names)
    predecessors = {node: tuple(sorted(graph.predecessors(node))) for node in graph.nodes}
    return OperatorGraph(operators, predecessors, tuple(nx.lexicographical_topological_sort(graph)))


@dataclass(frozen=True)
class Step:
    """An operator on the critical path: done, updating or pending, its expected duration, when it ends."""

    name: str
    state: str
    expected: int  # nanoseconds
    finish: int  # nanoseconds since the epoch


@dataclass
class Forecast:
    finish: int  # nanoseconds since the epoch
    remaining: int  # nanoseconds
    critical_path: list[Step]
    records: int

    def summary(self, now: int) -> str:
        remaining = short_duration(max(0, self.finish - now) // SECOND * SECOND)
        count = f"{self.records} recorded update" + ("" if self.records == 1 else "s")
        return f"{remaining} remaining on the critical path, done at {rfc3339(self.finish)} (from {count})"

    def to_data(self, now: int) -> dict[str, Any]:
        return {"estimatedCompletedAt": rfc3339(self.finish), "remaining": short_duration(max(0, self.remaining)),
                "remainingSeconds": round(self.remaining / SECOND), "records": self.records,
                "criticalPath": [{"name": s.name, "state": s.state, "expectedSeconds": round(s.expected / SECOND),
                                  "finishAt": rfc3339(s.finish)} for s in self.critical_path]}


def forecast(og: OperatorGraph, expected: Mapping[str, float], done: Iterable[str], updating: Mapping[str, int],
             now: int, records: int) -> Forecast | None:
    """When the update ends: the longest path through the nodes still to run.

    ``expected``: seconds per operator (an operator without a record gets the median of the others);
    ``done``: operators at the new version; ``updating``: operators being waited on, and since when.
    """
    if not expected:
        return None
    done_set = set(done)
    default = statistics.median(expected.values())
    finish: dict[int, int] = {}
    via: dict[int, int | None] = {}
    steps: dict[int, list[Step]] = {}
    for node in og.order:
        preds = og.predecessors.get(node, ())
        start, via[node] = now, None
        for pred in preds:
            if finish[pred] > start:
                start, via[node] = finish[pred], pred
        t = start
        node_steps = []
        for name in og.operators.get(node, ()):
            if name in done_set:
                continue
            mean = int(expected.get(name, default) * SECOND)
            if name in updating:
                left = max(mean - (now - updating[name]), int(mean * MIN_SHARE_LEFT))
                state = "updating"
            else:
                left, state = mean, "pending"
            t += left
            node_steps.append(Step(name, state, mean, t))
        finish[node], steps[node] = t, node_steps
    if not finish:
        return None
    last = max(og.order, key=lambda n: (finish[n], -n))
    path: list[Step] = []
    node: int | None = last
    while node is not None:
        path[:0] = steps[node]
        node = via[node]
    return Forecast(finish[last], finish[last] - now, path, records)


def co_state(cos: Sequence[Mapping[str, Any]], target: str) -> tuple[set[str], dict[str, int]]:
    """From ClusterOperators: which are at ``target``, and which are updating (Progressing=True) since when."""
    done, updating = set(), {}
    for co in cos:
        meta = co.get("metadata") or {}
        name = meta.get("name") if isinstance(meta, Mapping) else None
        status = co.get("status") or {}
        if not isinstance(name, str) or not isinstance(status, Mapping):
            continue
        versions = status.get("versions") if isinstance(status.get("versions"), list) else []
        if any(isinstance(v, Mapping) and v.get("name") == "operator" and v.get("version") == target for v in versions):
            done.add(name)
            continue
        for c in status.get("conditions") if isinstance(status.get("conditions"), list) else []:
            if isinstance(c, Mapping) and c.get("type") == "Progressing" and c.get("status") == "True":
                since = parse_time(c.get("lastTransitionTime"))
                if since is not None:
                    updating[name] = since
    return done, updating
