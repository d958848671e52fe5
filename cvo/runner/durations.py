"""How long each ClusterOperator took to reach the new version in a sweep, recorded on the cluster.

:class:`DurationRecorder` is a reporter: it keeps, from an update's (or an install's) events, when the sweep
first waited on each ClusterOperator and when it was done (``operator.done``; an operator waited on and never
done has no ``done``), counted from the sweep's start, and its attempts (when each began and ended, why it
failed: the first :data:`~cvo.status.update_records.FIRST_ATTEMPTS_KEPT` and the last ones, at most
:data:`~cvo.status.update_records.MAX_ATTEMPTS_KEPT`) and how it ended.  :func:`save_record` appends that record
to the ConfigMap ``openshift-cluster-version/cvo-update-durations`` (:mod:`cvo.status.update_records`: key
``records.json``, the :data:`~cvo.status.update_records.MAX_RECORDS` most recent sweeps, at most
:data:`~cvo.status.update_records.MAX_RECORDS_BYTES`), from which ``cvo upgrade status`` and the live display
forecast the next update's end, ``cvo plan -o html --recorded`` estimates a plan's critical path and
``cvo report`` draws the sweeps (``docs/report.md``).  The records are a hint: a write that fails is logged,
never an error of the sweep.  While an update runs, :func:`record_progress` keeps a *partial* record of it
there too (rewritten as operators finish, replaced by the complete one at the end), so that
``cvo upgrade status`` knows how long the operators already done took.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from cvo.clock import Clock, parse_rfc3339, to_rfc3339
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref
from cvo.images.pull import cached_directory
from cvo.log import get_logger
from cvo.payload.filters import LoadFilter
from cvo.payload.graph import Mode, build_graph, make_tasks
from cvo.payload.loader import LoadError, Release, load_release
from cvo.runner.events import Progress
from cvo.runner.sweep_events import (
    AttemptFailed,
    AttemptStarted,
    Event,
    OperatorDone,
    SweepCompleted,
    SweepTimeout,
    TaskWaiting,
)
from cvo.status.forecast import Forecast, OperatorGraph, co_state, duration_model, forecast, operator_graph
from cvo.status.godur import SECOND, to_ns
from cvo.status.node_forecast import PoolProgress, node_model, pools_progress
from cvo.status.update_records import (
    FIRST_ATTEMPTS_KEPT,
    MAX_ATTEMPTS_KEPT,
    MAX_MESSAGE,
    RECORDS_NAME,
    RECORDS_NAMESPACE,
    UPDATE,
    AttemptTime,
    OperatorTime,
    UpdateRecord,
    of_mode,
    parse_records,
    records_configmap,
)
from cvo.status.upgrade_nodes import Machines

FILE_SCHEME = "file://"

log = get_logger("cvo.durations")
RECORDS_REF = Ref("", "ConfigMap", RECORDS_NAMESPACE, RECORDS_NAME)


class DurationRecorder:
    """Collects the record of one sweep (``mode``: update or install) from its events."""

    def __init__(self, version: str, started: datetime, mode: str = UPDATE) -> None:
        self.started = started
        self.record = UpdateRecord(version, to_rfc3339(started), mode=mode)
        self.changed = asyncio.Event()  # set when an operator is done: record_progress saves the partial record

    def _at(self, when: datetime) -> float:
        return max(0.0, (when - self.started).total_seconds())

    def emit(self, event: Event) -> None:
        record = self.record
        match event:
            case OperatorDone(operator=operator):
                if operator in record.operators and record.operators[operator].done is not None:
                    return
                record.operators[operator] = OperatorTime(self._at(_began(event)), self._at(event.time))
                self.changed.set()
            case TaskWaiting(operator=operator):
                if operator and operator not in record.operators:
                    record.operators[operator] = OperatorTime(self._at(event.time))  # done when operator.done says
            case AttemptStarted(attempt=number):
                self._close_attempt(event)
                record.attempt_count += 1
                record.attempts.append(AttemptTime(number if number is not None else record.attempt_count,
                                                   self._at(event.time)))
                if len(record.attempts) > MAX_ATTEMPTS_KEPT:  # keep the first ones and the last ones
                    del record.attempts[FIRST_ATTEMPTS_KEPT]
            case AttemptFailed(reason=reason, message=message):
                self._close_attempt(event, reason or "Failed", message)
            case SweepCompleted() | SweepTimeout():
                self._close_attempt(event)
                record.ended_at = to_rfc3339(event.time)
                record.result = "completed" if isinstance(event, SweepCompleted) else "timeout"

    def _close_attempt(self, event: Event, reason: str = "", message: str = "") -> None:
        attempts = self.record.attempts
        if attempts and attempts[-1].ended is None:
            last = attempts[-1]
            attempts[-1] = AttemptTime(last.number, last.started, self._at(event.time), reason[:MAX_MESSAGE],
                                       message[:MAX_MESSAGE])


def _began(event: OperatorDone) -> datetime:
    """When the sweep first waited on the operator (when it was done, if the event does not say)."""
    try:
        return parse_rfc3339(event.started)
    except ValueError:
        return event.time


async def record_progress(cluster: Cluster, recorder: DurationRecorder) -> None:
    """Until cancelled: after each operator done, save the running update's partial record (one write at a
    time; operators done meanwhile go into the next)."""
    while True:
        await recorder.changed.wait()
        recorder.changed.clear()
        record = recorder.record
        await save_record(cluster, UpdateRecord(record.version, record.started_at, dict(record.operators),
                                                partial=True, mode=record.mode))


async def save_record(cluster: Cluster, record: UpdateRecord) -> None:
    """Append ``record`` to the ConfigMap, replacing an earlier record of the same update (whose pools it keeps
    where ``record`` has none: :class:`cvo.runner.node_durations.NodeRecorder` writes those); a complete record
    also drops every partial one (their updates are over)."""
    if not record.operators:
        return

    def change(records: list[UpdateRecord]) -> list[UpdateRecord]:
        same = next((r for r in records if (r.version, r.started_at) == (record.version, record.started_at)), None)
        kept = [r for r in records if r is not same and not (r.partial and not record.partial)]
        pools = {**same.pools, **record.pools} if same is not None else record.pools
        return [*kept, dataclasses.replace(record, pools=pools)]

    if await write_records(cluster, change, mode=record.mode) and not record.partial:
        # a partial record is rewritten after every operator: not news
        log.info("durations recorded", mode=record.mode, version=record.version, operators=len(record.operators))


async def write_records(cluster: Cluster, change: Callable[[list[UpdateRecord]], list[UpdateRecord] | None],
                        mode: str = UPDATE, tries: int = 3) -> bool:
    """Rewrite the records ConfigMap with ``change`` of the records it holds (``None``: nothing to write); a
    Conflict (another writer of the same process or cluster got there first) reads them again, ``tries``
    times.  Whether it was written: a failure is logged, never raised (the records are a hint)."""
    for attempt in range(tries):
        try:
            live = await cluster.get(RECORDS_REF)
            records = change(parse_records(live))
            if records is None:
                return False
            wanted = records_configmap(records)
            if live is None:
                await cluster.create(wanted)
            else:
                await cluster.update({**live, "data": wanted["data"],
                                      "metadata": _merged_metadata(live.get("metadata"), wanted["metadata"])})
            return True
        except ApiError as err:
            if err.kind in (ApiErrorKind.CONFLICT, ApiErrorKind.ALREADY_EXISTS) and attempt + 1 < tries:
                continue
            level = log.info if err.kind in (ApiErrorKind.NOT_FOUND, ApiErrorKind.FORBIDDEN) else log.warning
            level("durations not recorded", mode=mode, error=str(err))
            return False
    return False


def _merged_metadata(live: object, wanted: Mapping[str, object]) -> dict[str, object]:
    meta: dict[str, object] = dict(live) if isinstance(live, Mapping) else {}
    old, new = meta.get("annotations"), wanted.get("annotations")
    meta["annotations"] = {**(old if isinstance(old, Mapping) else {}), **(new if isinstance(new, Mapping) else {})}
    return meta


_GRAPHS: dict[tuple[str, LoadFilter, Mode], OperatorGraph] = {}


def release_graph(image: str, load_filter: LoadFilter | None = None, mode: Mode = Mode.UPDATE) -> OperatorGraph | None:
    """The graph (update mode, or ``mode``) of the release a ``file://`` image names, or a pull spec by digest
    already in the image cache (cached); ``None`` for another image or a release that does not load."""
    if image.startswith(FILE_SCHEME):
        directory: Path | None = Path(image[len(FILE_SCHEME):])
    else:
        directory = cached_directory(image)
    if directory is None:
        return None
    key = (image, load_filter or LoadFilter(), mode)
    if key not in _GRAPHS:
        try:
            release = load_release(directory, release_image=image, load_filter=key[1])
            _GRAPHS[key] = release_operator_graph(release, mode)
        except (LoadError, OSError, ValueError):
            return None
    return _GRAPHS[key]


def cluster_forecast(cv: Mapping[str, Any] | None, cos: list[dict[str, Any]], records: Mapping[str, Any] | None,
                     now: int, load_filter: LoadFilter | None = None, machines: Machines | None = None,
                     ) -> Forecast | None:
    """The forecast for what the saved or live objects show: ``None`` without records, or when the target
    release is not a directory cvo can read.  ``machines``: the pools and nodes, whose part is forecast from
    the nodes the records saw (:mod:`cvo.status.node_forecast`)."""
    every = parse_records(records)
    parsed = of_mode(every)
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
    running = next((r for r in reversed(parsed) if r.version == version), None)
    current = running if running is not None and running.partial else None
    pools = pools_progress(machines, version, running) if machines is not None else []
    return forecast(graph, model, done, updating, now, took=current.took() if current else None, pools=pools,
                    nodes=node_model(parsed))


def no_forecast_reason(cv: Mapping[str, Any] | None, records: Mapping[str, Any] | None,
                       load_filter: LoadFilter | None = None) -> str:
    """Why :func:`cluster_forecast` has no forecast, in words for the ``Forecast:`` line ("" when it is not one of
    the reasons a person can act on)."""
    if not duration_model(of_mode(parse_records(records))).usual:
        return ("no install or update of this cluster was recorded (openshift-cluster-version/cvo-update-durations): "
                "the estimate above is oc's, from the last completed update's duration (an hour without one)")
    desired = ((cv or {}).get("status") or {}).get("desired") or {}
    image = str(desired.get("image") or "") if isinstance(desired, Mapping) else ""
    if release_graph(image, load_filter) is None:
        return f"the target release {image or '(none)'} is not a release cvo can read here: its task graph is unknown"
    return ""


class LiveForecast:
    """The forecast of a running update, for the live display: a reporter (it learns which operators are done
    from ``operator.done``) and a callable (the forecast now, from the sweep's waits).  With
    :meth:`follow_machines` running beside the sweep, the pools' nodes are in it too."""

    REFRESH = 5 * SECOND  # the same state is forecast again at most this often (the display redraws 8 times a second)
    MACHINES_EVERY = 15.0  # seconds between two looks at the pools, their nodes and the update's record

    def __init__(self, graph: OperatorGraph, records: list[UpdateRecord], progress: Callable[[], Progress],
                 now: Callable[[], datetime], version: str = "") -> None:
        self.graph, self.model = graph, duration_model(records)
        self.records, self.version = records, version
        self.progress, self.now = progress, now
        self.took: dict[str, float] = {}  # the operators done, and how long they took (seconds)
        self.last: tuple[object, int, Forecast | None] | None = None
        self.pools: list[PoolProgress] = []  # as follow_machines last saw them
        self.nodes = node_model(records)
        self._looks = 0

    def emit(self, event: Event) -> None:
        if isinstance(event, OperatorDone):
            self.took.setdefault(event.operator, max(0.0, (event.time - _began(event)).total_seconds()))

    async def follow_machines(self, cluster: Cluster, clock: Clock) -> None:
        """Until cancelled: the pools, their nodes and configs, and the update's record, every
        :data:`MACHINES_EVERY` seconds (nothing when the cluster serves no MachineConfigPools)."""
        from cvo.objects import MachineConfig, MachineConfigPool, Node, Refused
        from cvo.objects.machineconfig import GROUP

        def views(kind: type[Any], objects: list[dict[str, Any]]) -> list[Any]:
            out = []
            for obj in objects:
                with contextlib.suppress(Refused):
                    out.append(kind.read(obj))
            return out

        while True:
            with contextlib.suppress(ApiError):
                if await cluster.serves(f"{GROUP}/v1", "MachineConfigPool"):
                    machines = Machines(views(MachineConfigPool, await cluster.list(GROUP, "MachineConfigPool")),
                                        views(Node, await cluster.list("", "Node")),
                                        views(MachineConfig, await cluster.list(GROUP, "MachineConfig")))
                    running = next((r for r in reversed(of_mode(parse_records(await cluster.get(RECORDS_REF))))
                                    if r.version == self.version), None)
                    self.pools = pools_progress(machines, self.version, running)
                    self.nodes = node_model([*self.records, *([running] if running is not None else [])])
                    self._looks += 1
            await clock.sleep(self.MACHINES_EVERY)

    def __call__(self) -> Forecast | None:
        if not self.model.usual:
            return None
        waiting = {name: to_ns(wait.since) for name, wait in self.progress().waiting.items()}
        now = to_ns(self.now())
        state = (frozenset(self.took), tuple(sorted(waiting.items())), self._looks)
        if self.last is not None and self.last[0] == state and 0 <= now - self.last[1] < self.REFRESH:
            return self.last[2]
        result = forecast(self.graph, self.model, self.took, waiting, now, took=self.took, pools=self.pools,
                          nodes=self.nodes)
        self.last = (state, now, result)
        return result


def release_operator_graph(release: Release, mode: Mode = Mode.UPDATE) -> OperatorGraph:
    return operator_graph(build_graph(make_tasks(release.manifests, mode), mode), mode)
