"""The CVO's metrics, from what the controller watches (``pkg/cvo/metrics.go``, ``pkg/payload/task.go``).

Families, names and labels as the CVO exports them:

| metric | labels | value |
|---|---|---|
| ``cluster_version`` | ``type``, ``version``, ``image``, ``from_version`` | a time (seconds since the epoch) per type: ``current`` (the release applied; cvo has no release creation date: 0), ``cluster`` (the first history entry; the ClusterVersion's creation), ``completed`` (the last completed entry; ``from_version`` the one before it), ``desired`` (``spec.desiredUpdate`` not yet the current image; the latest status change), ``updating`` (history[0] Partial; its start), ``failure`` (``Failing=True``; its transition) |
| ``cluster_version_available_updates`` | ``upstream``, ``channel`` | ``len(status.availableUpdates)``, only when an upstream, updates or ``RetrievedUpdates=True`` are there (cvo has no update service: normally absent) |
| ``cluster_operator_up`` | ``name``, ``version``, ``reason`` | 1 when ``Available=True``; ``version`` the ``operator`` entry, ``reason`` the Available reason or ``NoAvailableCondition`` |
| ``cluster_operator_conditions`` | ``name``, ``condition``, ``reason`` | 1 True, 0 False (Unknown is left out, as the CVO does) |
| ``cluster_operator_payload_errors`` | ``version`` | task failures while applying that version (counted by this process) |
| ``cluster_version_payload`` | ``version``, ``type`` | ``applied`` and ``pending`` tasks of the sweep running now |

Values are computed when scraped, from the latest objects the watches delivered (a
:class:`Snapshot` the event loop keeps up to date and the HTTP thread reads under a lock), so
every replica, leader or not, answers with what the cluster says.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cvo.payload.fields import dig
from cvo.runner.sweep_events import Event, SweepStarted, TaskFailed


def _time(text: Any) -> float:
    if not isinstance(text, str) or not text:
        return 0.0
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


@dataclass
class Snapshot:
    """The objects and counters the metrics are made from; written by the loop, read by scrapes."""

    cluster_version: dict[str, Any] | None = None
    cluster_operators: dict[str, dict[str, Any]] = field(default_factory=dict)
    payload: tuple[str, int, int] | None = None  # (version, done, total) of the sweep now running
    payload_errors: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def set_cluster_version(self, name: str, obj: dict[str, Any] | None) -> None:
        with self.lock:
            self.cluster_version = obj if name == "version" else self.cluster_version

    def set_cluster_operator(self, name: str, obj: dict[str, Any] | None) -> None:
        with self.lock:
            if obj is None:
                self.cluster_operators.pop(name, None)
            else:
                self.cluster_operators[name] = obj

    def copy(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]], tuple[str, int, int] | None, dict[str, int]]:
        with self.lock:
            return (self.cluster_version, [self.cluster_operators[n] for n in sorted(self.cluster_operators)],
                    self.payload, dict(self.payload_errors))


def _conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in dig(obj, "status", "conditions") or [] if isinstance(c, dict)]


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in _conditions(obj) if c.get("type") == type_), None)


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


class CvoCollector(Collector):
    """The families above, from a :class:`Snapshot`."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        cv, cos, payload, errors = self.snapshot.copy()
        yield from self._cluster_version(cv or {})
        up = GaugeMetricFamily("cluster_operator_up", "1 if a cluster operator is Available=True.  0 otherwise, "
                               "including if a cluster operator sets no Available condition.  The 'version' label "
                               "tracks the 'operator' version.  The 'reason' label is passed through from the "
                               "Available condition, unless the cluster operator sets no Available condition, in "
                               "which case NoAvailableCondition is used.", labels=["name", "version", "reason"])
        conditions = GaugeMetricFamily("cluster_operator_conditions", "Report the conditions for active cluster "
                                       "operators. 0 is False and 1 is True.", labels=["name", "condition", "reason"])
        for co in cos:
            name = _s(dig(co, "metadata", "name"))
            versions = [v for v in dig(co, "status", "versions") or [] if isinstance(v, dict)]
            version = next((_s(v.get("version")) for v in versions if v.get("name") == "operator"), "")
            available = _condition(co, "Available")
            reason = _s(available.get("reason")) if available is not None else "NoAvailableCondition"
            up.add_metric([name, version, reason], 1.0 if available and available.get("status") == "True" else 0.0)
            for c in _conditions(co):
                if c.get("status") in ("True", "False"):
                    conditions.add_metric([name, _s(c.get("type")), _s(c.get("reason"))],
                                          1.0 if c.get("status") == "True" else 0.0)
        yield up
        yield conditions
        payload_errors = GaugeMetricFamily("cluster_operator_payload_errors", "Report the number of errors "
                                           "encountered applying the payload.", labels=["version"])
        for version, count in sorted(errors.items()):
            payload_errors.add_metric([version], float(count))
        yield payload_errors
        entries = GaugeMetricFamily("cluster_version_payload", "Report the number of entries in the payload.",
                                    labels=["version", "type"])
        if payload is not None:
            version, done, total = payload
            entries.add_metric([version, "applied"], float(done))
            entries.add_metric([version, "pending"], float(max(0, total - done)))
        yield entries

    def _cluster_version(self, cv: dict[str, Any]) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "cluster_version", "Reports the version of the cluster in terms of seconds since the epoch. Type "
            "'current' is the version being applied, 'desired' is spec.desiredUpdate while the operator has not "
            "updated yet, 'failure' is set if an error is preventing sync or upgrade, 'completed' is when the last "
            "image was applied, 'cluster' is the creation of the cluster version object and the initial version, "
            "'updating' is when the update in progress started. The from_version label is the last completed "
            "version.", labels=["type", "version", "image", "from_version"])
        updates = GaugeMetricFamily("cluster_version_available_updates",
                                    "Report the count of available versions for an upstream and channel.",
                                    labels=["upstream", "channel"])
        history = [h for h in dig(cv, "status", "history") or [] if isinstance(h, dict)]
        desired = dig(cv, "status", "desired") or {}
        current = (_s(desired.get("version")), _s(desired.get("image"))) if isinstance(desired, dict) else ("", "")
        completed: dict[str, Any] = {}
        for i, entry in enumerate(history):
            if entry.get("state") == "Completed":
                completed = entry
                previous = next((h for h in history[i + 1:] if h.get("state") == "Completed"), {})
                family.add_metric(["completed", _s(entry.get("version")), _s(entry.get("image")),
                                   _s(previous.get("version"))], _time(entry.get("completionTime")))
                break
        from_version = _s(completed.get("version"))
        if cv:
            initial = history[-1] if history else {}
            family.add_metric(["cluster", _s(initial.get("version")), _s(initial.get("image")), ""],
                              _time(dig(cv, "metadata", "creationTimestamp")))
            failing = _condition(cv, "Failing")
            failed = failing is not None and failing.get("status") == "True"
            update = dig(cv, "spec", "desiredUpdate")
            if isinstance(update, dict) and _s(update.get("image")) != current[1]:
                family.add_metric(["desired", _s(update.get("version")), _s(update.get("image")), from_version],
                                  _most_recent(cv, history))
                if failed and failing is not None:
                    family.add_metric(["failure", _s(update.get("version")), _s(update.get("image")), from_version],
                                      _time(failing.get("lastTransitionTime")))
            if failed and failing is not None:
                family.add_metric(["failure", current[0], current[1], from_version],
                                  _time(failing.get("lastTransitionTime")))
            if history and history[0].get("state") == "Partial":
                family.add_metric(["updating", _s(history[0].get("version")), _s(history[0].get("image")),
                                   from_version], _time(history[0].get("startedTime")))
            available = dig(cv, "status", "availableUpdates")
            upstream = _s(dig(cv, "spec", "upstream"))
            retrieved = _condition(cv, "RetrievedUpdates")
            if upstream or available or (retrieved is not None and retrieved.get("status") == "True"):
                updates.add_metric([upstream or "<default>", _s(dig(cv, "spec", "channel"))],
                                   float(len(available) if isinstance(available, list) else 0))
        family.add_metric(["current", current[0], current[1], from_version], 0.0)
        yield family
        yield updates


def _most_recent(cv: dict[str, Any], history: list[dict[str, Any]]) -> float:
    """``mostRecentTimestamp``: the latest of history[0]'s start and completion, the conditions' transitions
    and the object's creation."""
    times = [_time(dig(cv, "metadata", "creationTimestamp"))]
    if history:
        times += [_time(history[0].get("startedTime")), _time(history[0].get("completionTime"))]
    times += [_time(c.get("lastTransitionTime")) for c in _conditions(cv)]
    return max(times)


class MetricsReporter:
    """Counts the sweep's task failures per version (``cluster_operator_payload_errors``), from its events."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.version = ""

    def emit(self, event: Event) -> None:
        if isinstance(event, SweepStarted):
            self.version = event.version
        elif isinstance(event, TaskFailed):
            with self.snapshot.lock:
                self.snapshot.payload_errors[self.version] += 1
