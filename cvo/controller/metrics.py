"""The CVO's metrics, from what the controller watches (``pkg/cvo/metrics.go``, ``pkg/cvo/sync_worker.go``,
``pkg/payload/task.go``).  ``docs/metrics.md`` lists every family, its labels and values, and where cvo differs.

Values are computed when scraped, from the latest objects the watches delivered (a :class:`Snapshot` the
event loop keeps up to date and the HTTP thread reads under a lock), so every replica, leader or not,
answers with what the cluster says.  The families of the ClusterVersion are in
:mod:`cvo.controller.metrics_version`.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cvo.controller.metrics_version import (
    VersionInputs,
    cluster_version_families,
    condition,
    conditions,
    dicts,
    text,
)
from cvo.payload.fields import dig
from cvo.runner.sweep_events import Event, SweepStarted, TaskFailed


@dataclass
class Snapshot:
    """The objects and counters the metrics are made from; written by the loop, read by scrapes."""

    cluster_version: dict[str, Any] | None = None
    cluster_operators: dict[str, dict[str, Any]] = field(default_factory=dict)
    payload: tuple[str, int, int] | None = None  # (version, done, total) of the sweep now running
    payload_errors: Counter[str] = field(default_factory=Counter)
    # ``clusterOperatorChanged``: (ClusterOperator, condition type) -> times its status changed
    transitions: Counter[tuple[str, str]] = field(default_factory=Counter)
    update_service: str = ""  # the CVO's --update-service: the upstream label when set
    # ``availableUpdates.LastSyncOrConfigChange`` (seconds since the epoch) of the updates kept between
    # syncs; None while none were computed (the CVO's ``availableUpdates`` is nil)
    update_retrieval: float | None = None
    accept_risks: bool = False  # ``shouldReconcileAcceptRisks``: the ClusterUpdateAcceptRisks gate is on
    lock: threading.Lock = field(default_factory=threading.Lock)

    def set_cluster_version(self, name: str, obj: dict[str, Any] | None) -> None:
        with self.lock:
            self.cluster_version = obj if name == "version" else self.cluster_version

    def set_cluster_operator(self, name: str, obj: dict[str, Any] | None) -> None:
        with self.lock:
            if obj is None:
                self.cluster_operators.pop(name, None)
                return
            older = self.cluster_operators.get(name)
            if older is not None:  # an update, not an add: the CVO's informer counts UpdateFunc only
                self.transitions.update((name, t) for t in changed_conditions(older, obj))
            self.cluster_operators[name] = obj

    def set_update_retrieval(self, when: float | None) -> None:
        with self.lock:
            self.update_retrieval = when

    def copy(self) -> _Copy:
        with self.lock:
            return _Copy(self.cluster_version, [self.cluster_operators[n] for n in sorted(self.cluster_operators)],
                         self.payload, dict(self.payload_errors), dict(self.transitions),
                         VersionInputs(self.update_service, self.accept_risks), self.update_retrieval)


@dataclass(frozen=True)
class _Copy:
    cluster_version: dict[str, Any] | None
    cluster_operators: list[dict[str, Any]]
    payload: tuple[str, int, int] | None
    payload_errors: dict[str, int]
    transitions: dict[tuple[str, str], int]
    inputs: VersionInputs
    update_retrieval: float | None


def changed_conditions(older: dict[str, Any], newer: dict[str, Any]) -> list[str]:
    """The condition types whose status changed from ``older`` to ``newer``, each once
    (``pkg/cvo/metrics.go`` ``clusterOperatorChanged``): gone, another status, or new."""
    seen: set[str] = set()
    changed: list[str] = []
    after = conditions(newer)
    for old in conditions(older):
        type_ = text(old.get("type"))
        if type_ in seen:
            continue
        seen.add(type_)
        new = next((c for c in after if c.get("type") == type_), None)
        if new is None or new.get("status") != old.get("status"):
            changed.append(type_)
    for new in after:
        type_ = text(new.get("type"))
        if type_ not in seen:
            seen.add(type_)
            changed.append(type_)
    return changed


UP_HELP = ("1 if a cluster operator is Available=True.  0 otherwise, including if a cluster operator sets no "
           "Available condition.  The 'version' label tracks the 'operator' version.  The 'reason' label is "
           "passed through from the Available condition, unless the cluster operator sets no Available "
           "condition, in which case NoAvailableCondition is used.")
CONDITIONS_HELP = "Report the conditions for active cluster operators. 0 is False and 1 is True."


class CvoCollector(Collector):
    """The families of ``docs/metrics.md``, from a :class:`Snapshot` (``operatorMetrics.Collect``)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        now = self.snapshot.copy()
        up = GaugeMetricFamily("cluster_operator_up", UP_HELP, labels=["name", "version", "reason"])
        conds = GaugeMetricFamily("cluster_operator_conditions", CONDITIONS_HELP,
                                  labels=["name", "condition", "reason"])
        yield from cluster_version_families(now.cluster_version, now.inputs, up, conds)
        for co in now.cluster_operators:
            _operator(co, up, conds)
        yield up
        yield conds
        transitions = GaugeMetricFamily("cluster_operator_condition_transitions", "Reports the number of times "
                                        "that a condition on a cluster operator changes status",
                                        labels=["name", "condition"])
        for (name, type_), count in sorted(now.transitions.items()):
            transitions.add_metric([name, type_], float(count))
        yield transitions
        timestamp = GaugeMetricFamily("cluster_version_operator_update_retrieval_timestamp_seconds",
                                      "Reports when updates were last successfully retrieved.", labels=["name"])
        if now.update_retrieval is not None:
            timestamp.add_metric([""], float(int(now.update_retrieval)))  # Go's time.Unix(): whole seconds
        yield timestamp
        payload_errors = GaugeMetricFamily("cluster_operator_payload_errors", "Report the number of errors "
                                           "encountered applying the payload.", labels=["version"])
        for version, count in sorted(now.payload_errors.items()):
            payload_errors.add_metric([version], float(count))
        yield payload_errors
        entries = GaugeMetricFamily("cluster_version_payload", "Report the number of entries in the payload.",
                                    labels=["version", "type"])
        if now.payload is not None:
            version, done, total = now.payload
            entries.add_metric([version, "applied"], float(done))
            entries.add_metric([version, "pending"], float(max(0, total - done)))
        yield entries


def _operator(co: dict[str, Any], up: GaugeMetricFamily, conds: GaugeMetricFamily) -> None:
    """A ClusterOperator's ``cluster_operator_up`` and ``cluster_operator_conditions`` (True/False only)."""
    name = text(dig(co, "metadata", "name"))
    version = next((text(v.get("version")) for v in dicts(dig(co, "status", "versions")) if v.get("name") == "operator"), "")
    available = condition(co, "Available")
    reason = text(available.get("reason")) if available is not None else "NoAvailableCondition"
    up.add_metric([name, version, reason], 1.0 if available and available.get("status") == "True" else 0.0)
    for c in conditions(co):
        if c.get("status") in ("True", "False"):
            conds.add_metric([name, text(c.get("type")), text(c.get("reason"))],
                             1.0 if c.get("status") == "True" else 0.0)


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
