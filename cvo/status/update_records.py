"""The update-duration records cvo keeps on the cluster: their storage format, written and read.

The ConfigMap :data:`RECORDS_NAMESPACE`/:data:`RECORDS_NAME`, key :data:`RECORDS_KEY`, holds a JSON list
of records, one per sweep (an update, or an install), oldest first: how long each ClusterOperator took to
reach the new version, counted from the sweep's start, and (cvo 0.3 on) the sweep's mode, attempts and
end.  The runner writes them (:mod:`cvo.runner.durations`); ``cvo upgrade status`` and the live display
forecast from them (:mod:`cvo.status.forecast`), ``cvo plan --recorded`` and ``cvo report`` read them
(``docs/upgrade-status.md``, ``docs/report.md``).  One record::

    {"version": "4.17.0", "startedAt": "2026-01-01T00:00:00Z", "mode": "update",
     "operators": {"etcd": {"started": 12.5, "done": 310.0}, "dns": {"started": 400.0, "done": 3550.2}},
     "attemptCount": 2, "attempts": [{"attempt": 0, "started": 0.0, "ended": 600.0, "reason": "…",
     "message": "…"}, {"attempt": 1, "started": 620.0}],
     "endedAt": "2026-01-01T01:00:00Z", "result": "completed",
     "pools": {"worker": {"maxUnavailable": 1, "size": 2, "started": 3400.0, "done": 4100.0,
                          "nodes": {"worker-0": [3400.0, 3460.0, 3700.0], "worker-1": [3700.0, 3790.0, 4100.0]}}}}

``pools`` (cvo 0.4 on): the machine-config operator's part, after the ClusterOperators' (or beside them): per
MachineConfigPool, when its first node began to update and when its last was done, and per node the three
moments :class:`cvo.runner.node_durations.NodeRecorder` saw: the node was picked (``desiredConfig``), its
drain was done, it was at the new config again (``Done``); the last two are absent while not seen yet.

Anyone with access to the namespace can write the ConfigMap: :func:`parse_records` takes whatever it
holds, leaving out what does not parse (a record is a hint, never an error).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

RECORDS_NAMESPACE = "openshift-cluster-version"
RECORDS_NAME = "cvo-update-durations"
RECORDS_KEY = "records.json"
MAX_RECORDS = 20  # the most recent completed sweeps kept (and the current update's partial record) ...
MAX_RECORDS_BYTES = 256 * 1024  # ... and fewer when they would not fit (a ConfigMap holds at most 1 MiB)
MAX_ATTEMPTS_KEPT = 16  # per record: the first 4 and the last 12 attempts (attemptCount says how many)
FIRST_ATTEMPTS_KEPT = 4
MAX_MESSAGE = 200  # characters of an attempt's failure message kept
UPDATE, INSTALL = "update", "install"  # a record's mode (records without one are updates: cvo before 0.3)


@dataclass(frozen=True)
class OperatorTime:
    """When, counted from the update's start, a ClusterOperator was first waited on and when it was done."""

    started: float  # seconds
    done: float | None = None

    @property
    def duration(self) -> float | None:
        return None if self.done is None else max(0.0, self.done - self.started)


@dataclass(frozen=True)
class AttemptTime:
    """One attempt of a recorded sweep, counted from its start: when it began and ended, and why it failed."""

    number: int
    started: float  # seconds
    ended: float | None = None
    reason: str = ""  # empty: it did not fail (the last attempt of a completed sweep)
    message: str = ""


@dataclass(frozen=True)
class NodeTime:
    """One node's update, counted from the update's start: picked, drained (cordoned and every pod evicted),
    done (rebooted into the new config)."""

    started: float
    drained: float | None = None
    done: float | None = None

    @property
    def drain(self) -> float | None:
        """Seconds from being picked to drained: a PodDisruptionBudget that holds the drain makes it long."""
        return None if self.drained is None else max(0.0, self.drained - self.started)

    @property
    def reboot(self) -> float | None:
        """Seconds from drained to done: the config written, the reboot, the node ready and uncordoned."""
        return None if self.drained is None or self.done is None else max(0.0, self.done - self.drained)


@dataclass
class PoolTime:
    """One MachineConfigPool's part of an update: its nodes' times, how many at once, how many nodes."""

    max_unavailable: int = 1
    size: int = 0  # nodes in the pool
    started: float | None = None  # its first node picked
    done: float | None = None  # every node at the new config
    nodes: dict[str, NodeTime] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"maxUnavailable": self.max_unavailable, "size": self.size,
                **({"started": _round(self.started)} if self.started is not None else {}),
                **({"done": _round(self.done)} if self.done is not None else {}),
                "nodes": {name: [_round(t.started), *([_round(t.drained)] if t.drained is not None else []),
                                 *([_round(t.done)] if t.drained is not None and t.done is not None else [])]
                          for name, t in sorted(self.nodes.items())}}


@dataclass
class UpdateRecord:
    """One sweep (an update, or an install): its target version, when it started, each operator's times,
    and (cvo 0.3 on) its mode, its attempts and how it ended.  ``partial``: the update is still running (the
    runner rewrites this record as operators finish, and replaces it at the end)."""

    version: str
    started_at: str
    operators: dict[str, OperatorTime] = field(default_factory=dict)
    partial: bool = False
    mode: str = UPDATE
    attempts: list[AttemptTime] = field(default_factory=list)  # at most MAX_ATTEMPTS_KEPT of them
    attempt_count: int = 0  # how many attempts there were (0: not recorded)
    ended_at: str = ""
    result: str = ""  # completed, timeout; empty: not recorded
    pools: dict[str, PoolTime] = field(default_factory=dict)  # the nodes' part (cvo 0.4 on)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "version": self.version, "startedAt": self.started_at, "mode": self.mode,
            **({"partial": True} if self.partial else {}),
            "operators": {name: {"started": _round(t.started), **({"done": _round(t.done)} if t.done is not None else {})}
                          for name, t in sorted(self.operators.items())}}
        if self.attempt_count:
            doc["attemptCount"] = self.attempt_count
            doc["attempts"] = [{"attempt": a.number, "started": _round(a.started),
                                **({"ended": _round(a.ended)} if a.ended is not None else {}),
                                **({"reason": a.reason, "message": a.message} if a.reason else {})}
                               for a in self.attempts]
        if self.ended_at:
            doc["endedAt"], doc["result"] = self.ended_at, self.result
        if self.pools:
            doc["pools"] = {name: pool.to_json() for name, pool in sorted(self.pools.items())}
        return doc

    def took(self) -> dict[str, float]:
        """How long each operator that is done took, in seconds."""
        return {name: d for name, t in self.operators.items() if (d := t.duration) is not None}


def _round(seconds: float) -> float:
    return round(seconds, 3)  # milliseconds: the clock's resolution that matters, and shorter records


def _text(value: object, limit: int = MAX_MESSAGE) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _number(value: object) -> float | None:
    """A finite number of a sane size (not a bool), as a float; None for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value == value and abs(value) < 1e12:
        return float(value)
    return None


def _count(value: object) -> int | None:
    """A whole number (``3`` or ``3.0``), as an int; None for anything else."""
    number = _number(value)
    return int(number) if number is not None and number.is_integer() else None


def _attempts(value: object) -> list[AttemptTime]:
    out: list[AttemptTime] = []
    for item in value[:MAX_ATTEMPTS_KEPT] if isinstance(value, list) else []:
        if isinstance(item, Mapping) and (started := _number(item.get("started"))) is not None:
            number = _count(item.get("attempt"))
            out.append(AttemptTime(number if number is not None else len(out), started,
                                   _number(item.get("ended")), _text(item.get("reason")), _text(item.get("message"))))
    return out


def _operators(value: Mapping[Any, Any]) -> dict[str, OperatorTime]:
    operators = {}
    for name, times in value.items():
        if isinstance(name, str) and isinstance(times, Mapping) and (started := _number(times.get("started"))) is not None:
            operators[name] = OperatorTime(started, _number(times.get("done")))
    return operators


def _node_time(value: object) -> NodeTime | None:
    """``[started, drained, done]`` (the last two optional); None for anything else."""
    times = [_number(v) for v in value[:3]] if isinstance(value, list) else []
    started = times[0] if times else None
    if started is None or None in times:
        return None
    return NodeTime(started, times[1] if len(times) > 1 else None, times[2] if len(times) > 2 else None)


def _pools(value: object) -> dict[str, PoolTime]:
    pools: dict[str, PoolTime] = {}
    for name, item in value.items() if isinstance(value, Mapping) else ():
        if not isinstance(name, str) or not isinstance(item, Mapping):
            continue
        nodes = item.get("nodes")
        times = {n: t for n, raw in (nodes.items() if isinstance(nodes, Mapping) else ())
                 if isinstance(n, str) and (t := _node_time(raw)) is not None}
        width, size = _count(item.get("maxUnavailable")), _count(item.get("size"))
        pools[name] = PoolTime(width if width is not None and width > 0 else 1,
                               size if size is not None and size >= 0 else len(times),
                               _number(item.get("started")), _number(item.get("done")), times)
    return pools


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
        count = _count(item.get("attemptCount"))
        records.append(UpdateRecord(
            str(item.get("version", "")), str(item.get("startedAt", "")), _operators(item["operators"]),
            item.get("partial") is True, mode=INSTALL if item.get("mode") == INSTALL else UPDATE,
            attempts=_attempts(item.get("attempts")), attempt_count=count if count is not None and count > 0 else 0,
            ended_at=_text(item.get("endedAt"), 64), result=_text(item.get("result"), 32),
            pools=_pools(item.get("pools"))))
    return records


def records_configmap(records: Sequence[UpdateRecord]) -> dict[str, Any]:
    """The ConfigMap holding the most recent :data:`MAX_RECORDS` completed records and the last partial one
    (fewer completed ones when they would take more than :data:`MAX_RECORDS_BYTES`; the newest always)."""
    complete = [r for r in records if not r.partial][-MAX_RECORDS:]
    partial = [r for r in records if r.partial][-1:]
    raw = orjson.dumps([r.to_json() for r in [*complete, *partial]])
    while len(raw) > MAX_RECORDS_BYTES and len(complete) > 1:
        complete = complete[1:]
        raw = orjson.dumps([r.to_json() for r in [*complete, *partial]])
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": RECORDS_NAME, "namespace": RECORDS_NAMESPACE,
                         "annotations": {"cvo.openshift.io/what": "how long each ClusterOperator took to reach "
                                                                  "the new version in each update and install "
                                                                  "(cvo upgrade status, cvo report, cvo plan)"}},
            "data": {RECORDS_KEY: raw.decode()}}


def of_mode(records: Iterable[UpdateRecord], mode: str = UPDATE) -> list[UpdateRecord]:
    """The records of updates (or of installs): what a forecast of that kind of sweep learns from."""
    return [r for r in records if r.mode == mode]
