"""How long each ClusterOperator took to reach the new version in an update, recorded on the cluster.

:class:`DurationRecorder` is a reporter: it keeps, from the update sweep's ``operator.done`` events, when
the sweep first waited on each ClusterOperator and when it was done, counted from the update's start.
:func:`save_record` appends that record to the ConfigMap ``openshift-cluster-version/cvo-update-durations``
(:mod:`cvo.status.forecast`: key ``records.json``, the :data:`~cvo.status.forecast.MAX_RECORDS` most recent
updates), from which ``cvo upgrade status`` and the live display forecast the next update's end.  While the
update runs, :func:`record_progress` keeps a *partial* record of it there too (rewritten as operators finish,
replaced by the complete one at the end), so that ``cvo upgrade status`` knows how long the operators
already done took.  The records are a hint: a write that fails is logged, never an error of the update.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from cvo.clock import parse_rfc3339, to_rfc3339
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref
from cvo.log import get_logger
from cvo.payload.filters import LoadFilter
from cvo.payload.graph import Mode, build_graph, make_tasks
from cvo.payload.loader import LoadError, Release, load_release
from cvo.runner.events import Event, Progress
from cvo.status.forecast import (
    RECORDS_NAME,
    RECORDS_NAMESPACE,
    Forecast,
    OperatorGraph,
    OperatorTime,
    UpdateRecord,
    co_state,
    duration_model,
    forecast,
    operator_graph,
    parse_records,
    records_configmap,
)
from cvo.status.godur import SECOND, to_ns

FILE_SCHEME = "file://"

log = get_logger("cvo.durations")
RECORDS_REF = Ref("", "ConfigMap", RECORDS_NAMESPACE, RECORDS_NAME)


class DurationRecorder:
    """Collects the record of one update from the sweep's events."""

    def __init__(self, version: str, started: datetime) -> None:
        self.started = started
        self.record = UpdateRecord(version, to_rfc3339(started))
        self.changed = asyncio.Event()  # set when an operator is done: record_progress saves the partial record

    def emit(self, event: Event) -> None:
        if event.name != "operator.done":
            return
        name = event.fields.get("operator")
        if not isinstance(name, str) or name in self.record.operators:
            return
        try:
            began = parse_rfc3339(str(event.fields.get("started")))
        except ValueError:
            began = event.time
        self.record.operators[name] = OperatorTime(max(0.0, (began - self.started).total_seconds()),
                                                   max(0.0, (event.time - self.started).total_seconds()))
        self.changed.set()


async def record_progress(cluster: Cluster, recorder: DurationRecorder) -> None:
    """Until cancelled: after each operator done, save the running update's partial record (one write at a
    time; operators done meanwhile go into the next)."""
    while True:
        await recorder.changed.wait()
        recorder.changed.clear()
        await save_record(cluster, UpdateRecord(recorder.record.version, recorder.record.started_at,
                                                dict(recorder.record.operators), partial=True))


async def save_record(cluster: Cluster, record: UpdateRecord) -> None:
    """Append ``record`` to the ConfigMap, replacing an earlier record of the same update; a complete record
    also drops every partial one (their updates are over)."""
    if not record.operators:
        return
    try:
        live = await cluster.get(RECORDS_REF)
        records = [r for r in parse_records(live)
                   if (r.version, r.started_at) != (record.version, record.started_at)
                   and not (r.partial and not record.partial)]
        wanted = records_configmap([*records, record])
        if live is None:
            await cluster.create(wanted)
        else:
            await cluster.update({**live, "data": wanted["data"],
                                  "metadata": _merged_metadata(live.get("metadata"), wanted["metadata"])})
        log.info("update durations recorded", version=record.version, operators=len(record.operators))
    except ApiError as err:
        level = log.info if err.kind in (ApiErrorKind.NOT_FOUND, ApiErrorKind.FORBIDDEN) else log.warning
        level("update durations not recorded", error=str(err))


def _merged_metadata(live: object, wanted: Mapping[str, object]) -> dict[str, object]:
    meta = dict(live) if isinstance(live, Mapping) else {}
    annotations = dict(meta.get("annotations") or {})  # type: ignore[call-overload]
    annotations.update(wanted.get("annotations") or {})  # type: ignore[call-overload]
    meta["annotations"] = annotations
    return meta


_GRAPHS: dict[tuple[str, LoadFilter], OperatorGraph] = {}


def release_graph(image: str, load_filter: LoadFilter | None = None) -> OperatorGraph | None:
    """The update-mode graph of the release a ``file://`` image names (cached); ``None`` for another image or a
    release that does not load."""
    if not image.startswith(FILE_SCHEME):
        return None
    key = (image, load_filter or LoadFilter())
    if key not in _GRAPHS:
        try:
            release = load_release(Path(image[len(FILE_SCHEME):]), release_image=image, load_filter=key[1])
            _GRAPHS[key] = release_operator_graph(release)
        except (LoadError, OSError, ValueError):
            return None
    return _GRAPHS[key]


def cluster_forecast(cv: Mapping[str, Any] | None, cos: list[dict[str, Any]], records: Mapping[str, Any] | None,
                     now: int, load_filter: LoadFilter | None = None) -> Forecast | None:
    """The forecast for what the saved or live objects show: ``None`` without records, or when the target
    release is not a directory cvo can read."""
    parsed = parse_records(records)
    desired = ((cv or {}).get("status") or {}).get("desired") or {}
    if not isinstance(desired, Mapping):
        return None
    model = duration_model(parsed)
    if not model.usual:
        return None
    graph = release_graph(str(desired.get("image") or ""), load_filter)
    if graph is None:
        return None
    version = str(desired.get("version") or "")
    done, updating = co_state(cos, version)
    current = next((r for r in reversed(parsed) if r.partial and r.version == version), None)
    return forecast(graph, model, done, updating, now, took=current.took() if current else None)


class LiveForecast:
    """The forecast of a running update, for the live display: a reporter (it learns which operators are done
    from ``operator.done``) and a callable (the forecast now, from the sweep's waits)."""

    REFRESH = 5 * SECOND  # the same state is forecast again at most this often (the display redraws 8 times a second)

    def __init__(self, graph: OperatorGraph, records: list[UpdateRecord], progress: Callable[[], Progress],
                 now: Callable[[], datetime]) -> None:
        self.graph, self.model = graph, duration_model(records)
        self.progress, self.now = progress, now
        self.took: dict[str, float] = {}  # the operators done, and how long they took (seconds)
        self.last: tuple[object, int, Forecast | None] | None = None

    def emit(self, event: Event) -> None:
        name = event.fields.get("operator")
        if event.name != "operator.done" or not isinstance(name, str):
            return
        try:
            began = parse_rfc3339(str(event.fields.get("started")))
        except ValueError:
            began = event.time
        self.took.setdefault(name, max(0.0, (event.time - began).total_seconds()))

    def __call__(self) -> Forecast | None:
        if not self.model.usual:
            return None
        waiting = {name: to_ns(wait.since) for name, wait in self.progress().waiting.items()}
        now = to_ns(self.now())
        state = (frozenset(self.took), tuple(sorted(waiting.items())))
        if self.last is not None and self.last[0] == state and 0 <= now - self.last[1] < self.REFRESH:
            return self.last[2]
        result = forecast(self.graph, self.model, self.took, waiting, now, took=self.took)
        self.last = (state, now, result)
        return result


def release_operator_graph(release: Release) -> OperatorGraph:
    return operator_graph(build_graph(make_tasks(release.manifests, Mode.UPDATE), Mode.UPDATE))
