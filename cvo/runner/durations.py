"""How long each ClusterOperator took to reach the new version in an update, recorded on the cluster.

:class:`DurationRecorder` is a reporter: it keeps, from the update sweep's ``operator.done`` events, when
the sweep first waited on each ClusterOperator and when it was done, counted from the update's start.
:func:`save_record` appends that record to the ConfigMap ``openshift-cluster-version/cvo-update-durations``
(:mod:`cvo.status.forecast`: key ``records.json``, the :data:`~cvo.status.forecast.MAX_RECORDS` most recent
updates), from which ``cvo upgrade status`` and the live display forecast the next update's end.  The
records are a hint: a write that fails is logged, never an error of the update.
"""

from __future__ import annotations

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
    expected_durations,
    forecast,
    operator_graph,
    parse_records,
    records_configmap,
)
from cvo.status.godur import to_ns

FILE_SCHEME = "file://"

log = get_logger("cvo.durations")
RECORDS_REF = Ref("", "ConfigMap", RECORDS_NAMESPACE, RECORDS_NAME)


class DurationRecorder:
    """Collects the record of one update from the sweep's events."""

    def __init__(self, version: str, started: datetime) -> None:
        self.started = started
        self.record = UpdateRecord(version, to_rfc3339(started))

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


async def save_record(cluster: Cluster, record: UpdateRecord) -> None:
    """Append ``record`` (replacing an earlier record of the same update) to the ConfigMap."""
    if not record.operators:
        return
    try:
        live = await cluster.get(RECORDS_REF)
        records = [r for r in parse_records(live)
                   if (r.version, r.started_at) != (record.version, record.started_at)]
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
    if not parsed or not isinstance(desired, Mapping):
        return None
    graph = release_graph(str(desired.get("image") or ""), load_filter)
    if graph is None:
        return None
    done, updating = co_state(cos, str(desired.get("version") or ""))
    return forecast(graph, expected_durations(parsed), done, updating, now, len(parsed))


class LiveForecast:
    """The forecast of a running update, for the live display: a reporter (it learns which operators are done
    from ``operator.done``) and a callable (the forecast now, from the sweep's waits)."""

    def __init__(self, graph: OperatorGraph, records: list[UpdateRecord], progress: Callable[[], Progress],
                 now: Callable[[], datetime]) -> None:
        self.graph, self.expected, self.count = graph, expected_durations(records), len(records)
        self.progress, self.now = progress, now
        self.done: set[str] = set()

    def emit(self, event: Event) -> None:
        if event.name == "operator.done" and isinstance(event.fields.get("operator"), str):
            self.done.add(event.fields["operator"])

    def __call__(self) -> Forecast | None:
        if not self.expected:
            return None
        waiting = {name: to_ns(wait.since) for name, wait in self.progress().waiting.items()}
        return forecast(self.graph, self.expected, self.done, waiting, to_ns(self.now()), self.count)


def release_operator_graph(release: Release) -> OperatorGraph:
    return operator_graph(build_graph(make_tasks(release.manifests, Mode.UPDATE), Mode.UPDATE))
