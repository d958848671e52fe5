"""The controller: level-triggered, continuously reconciling, never giving up.

Every turn decides the sweep afresh from the ClusterVersion (:func:`cvo.runner.decide.decide`, the
states of the CVO's ``pkg/cvo/sync_worker.go``) — nothing is remembered that the cluster does not say:

    Initializing ─ success ─► Reconciling ◄─ success ─ Updating
    Reconciling ─ spec.desiredUpdate / overrides / capabilities change ─► (decide again)

* **Level-triggered.** A watch on the ClusterVersion wakes the loop when its spec changes
  (``desiredUpdate``, ``overrides``, ``capabilities``); the running sweep is cancelled (requests in
  flight finish) and the next one is decided from what the cluster says now.  So a new target in
  the middle of an update *retargets* it, and a replica that takes over in the middle of an update
  resumes it (the history entry for the target is reused, not duplicated).
* **Never exits on API errors.** Reads and writes around the sweep retry transient errors without
  a budget; anything else (a Forbidden, a sweep that raised) is logged and retried after the CVO's
  back-off: interval/8, /4, /2, then the interval, with 20 % jitter, woken early by a spec change.
* **A desired release that cannot be found** is reported as the CVO reports a payload it cannot
  retrieve: ``ReleaseAccepted=False`` with the step as reason (``RetrievePayload``,
  ``LoadPayload``, ``VerifyPayloadVersion``) and its message; the loop backs off and looks again.
* **After completion** the release is reconciled every ``interval``: drift is repaired within one.
* **Available updates** are polled beside the sweeps (``availableUpdatesSync``): at once, then every
  ``minimum_interval``, at once when spec.upstream, spec.channel, spec.clusterID or spec.desiredUpdate change
  or another release is reconciled (status.desired: the CVO restarts into it),
  and after a second while a conditional update's Recommended is neither True nor False (the CVO's
  requeue); written through the same status writer.

Only the replica holding the lease runs this loop, and only through a
:class:`~cvo.controller.fence.FencedCluster`: see :mod:`cvo.controller.replica`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import orjson

from cvo.clock import Clock
from cvo.cluster.api import CLUSTER_VERSION, ApiError, Cluster, cv_ref
from cvo.cluster.informer import Informer
from cvo.cluster.persist import Budget, steady
from cvo.log import get_logger
from cvo.operators.workloads import WorkloadReporter
from cvo.payload.filters import ApplyFilter
from cvo.payload.loader import Release
from cvo.payload.workloads import specs_of
from cvo.runner.available_updates import NoMonitoring, RefreshOptions, reevaluate_soon, refresh_updates
from cvo.runner.backoff import attempt_backoff
from cvo.runner.decide import Plan, Runner, decide, desired_update_work, runner_for
from cvo.runner.events import Progress, Reporter
from cvo.runner.node_durations import NodeRecorder
from cvo.runner.releases import Releases, RetrieveFailed
from cvo.runner.status_writer import StatusWriter
from cvo.runner.sweep import SweepOptions, SweepResult, WrongRelease
from cvo.runner.sweep_events import (
    ControllerError,
    ControllerIdle,
    ControllerNext,
    ControllerRetarget,
    ControllerRetrieveFailed,
    ControllerStarted,
    ControllerSweep,
    Kind,
    P,
)
from cvo.status.parts import Accepted
from cvo.updates.poll import PollState
from cvo.updates.rules import ConditionRegistry
from cvo.updates.sources import RiskSource

log = get_logger("cvo.controller")


def updates_key(cv: dict[str, Any]) -> Hashable:
    """What of a ClusterVersion the available updates depend on (``syncAvailableUpdates``' inputs): the spec's
    upstream, channel, clusterID and desiredUpdate, and the release being reconciled (the CVO's own)."""
    spec = cv.get("spec") if isinstance(cv.get("spec"), dict) else {}
    status = cv.get("status") if isinstance(cv.get("status"), dict) else {}
    assert isinstance(spec, dict) and isinstance(status, dict)
    desired = status.get("desired") if isinstance(status.get("desired"), dict) else {}
    assert isinstance(desired, dict)
    return orjson.dumps([*(spec.get(k) for k in ("upstream", "channel", "clusterID", "desiredUpdate")),
                         desired.get("version"), desired.get("architecture")], option=orjson.OPT_SORT_KEYS)


def work_key(cv: dict[str, Any]) -> Hashable:
    """What in a ClusterVersion's spec is work for the controller (the CVO's ``SyncWork`` inputs)."""
    spec = cv.get("spec") if isinstance(cv.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    return orjson.dumps([desired_update_work(spec.get("desiredUpdate")), spec.get("overrides") or None,
                         spec.get("capabilities") or None],
                        option=orjson.OPT_SORT_KEYS)


@dataclass
class ControllerOptions:
    """How the loop runs (:class:`cvo.controller.start.Options` makes them from ``cvo run``'s flags)."""

    interval: float = 180.0  # the reconcile interval (the CVO: random in [2m, 4m))
    capabilities: ApplyFilter | None = None  # what the sweeps apply (None: every known capability)
    own_image: str = ""  # the release to install into a cluster without one (the CVO's own payload)
    seed: int | None = None  # for the back-off jitter
    updates: RefreshOptions | None = None  # how the update service is polled (None: not polled)
    registry: ConditionRegistry = field(default_factory=NoMonitoring)  # evaluates conditional updates' risks
    risk_sources: tuple[RiskSource, ...] = ()  # pkg/risk's sources, merged into the conditional updates
    gated: bool = False  # the ClusterUpdateAcceptRisks family of the status (riskNames, conditionalUpdateRisks)
    on_updates: Callable[[PollState], None] | None = None  # told after every poll (the metrics' retrieval time)
    reevaluate_after: float = 1.0  # the CVO's requeue while a Recommended is neither True nor False


@dataclass
class ControllerState:
    """What the controller is doing, for /readyz, /metrics and tests."""

    plan: Plan | None = None
    runner: Runner | None = None
    sweeps: int = 0
    completed: int = 0
    errors: list[str] = field(default_factory=list)  # the last few loop errors (not the sweep's)

    @property
    def progress(self) -> Progress:
        return self.runner.progress if self.runner is not None else Progress()


class Controller:
    def __init__(self, cluster: Cluster, clock: Clock, releases: Releases, reporter: Reporter,
                 options: ControllerOptions | None = None,
                 on_release: Callable[[Release], None] | None = None) -> None:
        self.cluster = cluster
        self.clock = clock
        self.releases = releases
        self.reporter = reporter
        self.options = options or ControllerOptions()
        self.on_release = on_release or (lambda release: None)
        self.budget: Budget | None = None
        self.status: StatusWriter | None = None  # the one writer of the ClusterVersion's status, made by run()
        self.state = ControllerState()
        self._rng = random.Random(self.options.seed)
        self._idle_logged = False
        self._mark = 0  # the spec watch's mark the current decision was taken at
        self.updates = PollState()  # the available updates kept between polls
        self._workloads: WorkloadReporter | None = None  # between sweeps: the derived ClusterOperators' writer
        self._nodes: NodeRecorder | None = None  # after an update: its worker pools' nodes, recorded

    def emit(self, kind: Kind[P], /, *args: P.args, **fields: P.kwargs) -> None:
        self.reporter.emit(kind(self.clock.now(), *args, **fields))

    def _backoff(self, consecutive: int) -> float:
        return attempt_backoff(self.options.interval, consecutive, self._rng)

    # --- deciding ---------------------------------------------------------------------------

    def _runner(self, plan: Plan) -> Runner:
        options = SweepOptions(interval=self.options.interval, timeout=None, capabilities=self.options.capabilities,
                               budget=self.budget)
        return runner_for(plan, self.cluster, self.reporter, self.clock, options, self.on_release, status=self.status)

    # --- reporting what cannot be retrieved ---------------------------------------------------

    async def report_unaccepted(self, failure: RetrieveFailed) -> None:
        """``ReleaseAccepted=False`` with the step's reason and message (the rest of the status stays)."""
        assert self.status is not None
        await self.status.report(Accepted("False", failure.reason, failure.message), force=True, must_land=True)

    # --- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled."""
        self.budget = Budget.of(None)  # the controller rides out any outage
        self.status = StatusWriter(self.cluster, self.clock, reporter=self.reporter, budget=self.budget,
                                   gated=self.options.gated)
        cluster = steady(self.cluster, self.budget)
        spec = Informer(cluster, *CLUSTER_VERSION, key=work_key)
        await spec.start()
        consecutive = 0
        self.emit(ControllerStarted, interval=self.options.interval)
        polling = None if self.options.updates is None else \
            asyncio.create_task(self._poll_updates(self.options.updates), name="available updates")
        try:
            while True:
                mark = self._mark = spec.mark()
                try:
                    cv = await cluster.get(cv_ref())
                    key = work_key(cv or {})
                    await self.releases.prepare_trust(cluster, cv)
                    plan = decide(cv, self.releases, self.options.own_image, gated=self.options.gated)
                    if plan is None:
                        if not self._idle_logged:
                            self.emit(ControllerIdle, message="no release to install: waiting for a "
                                      "ClusterVersion spec.desiredUpdate (or start with --release DIR)")
                            self._idle_logged = True
                        await spec.wait_change(None, mark, self.options.interval)
                        continue
                    await self._stop_workloads()  # the sweep writes them while it runs
                    result = await self._sweep(plan, spec, mark, key)
                except RetrieveFailed as failure:
                    consecutive += 1
                    self.emit(ControllerRetrieveFailed, reason=failure.reason, message=failure.message)
                    try:
                        await self.report_unaccepted(failure)
                    except ApiError as err:
                        self._error(f"cannot report {failure.reason}: {err}")
                    await spec.wait_change(None, mark, self._backoff(consecutive))
                    continue
                except (ApiError, WrongRelease) as err:
                    consecutive += 1
                    delay = self._backoff(consecutive)
                    self._error(str(err))
                    self.emit(ControllerError, error=str(err), retry_in=round(delay, 1))
                    await spec.wait_change(None, mark, delay)
                    continue
                if result is None:  # the spec changed: decide again at once
                    consecutive = 0
                    continue
                if result.completed:
                    consecutive = 0
                    self.state.completed += 1
                    delay = self.options.interval
                    await self._start_workloads(cluster, plan.release)
                    # an update's worker pools go on after it completed (a reconcile's too, when the controller
                    # started late): their nodes' times still go into the update's record
                    self._nodes = NodeRecorder(cluster, self.clock)
                    await self._nodes.start()
                else:
                    consecutive += 1
                    delay = self._backoff(consecutive)
                self.emit(ControllerNext, after=round(delay, 1), completed=result.completed)
                await spec.wait_change(None, self._mark, delay)
        finally:
            self.state.runner = None
            await self._stop_workloads()
            if polling is not None:
                polling.cancel()
                await asyncio.gather(polling, return_exceptions=True)
            await spec.stop()

    async def _start_workloads(self, cluster: Cluster, release: Release) -> None:
        """Between sweeps, the release's ClusterOperators derived from workloads stay written on every change of
        their workloads (cvo/operators/workloads.py), as their operators would keep them."""
        specs, broken = specs_of(release.manifests)
        if specs or broken:
            self._workloads = WorkloadReporter(cluster, self.clock, specs, broken)
            await self._workloads.start()

    async def _stop_workloads(self) -> None:
        if self._workloads is not None:
            reporter, self._workloads = self._workloads, None
            await reporter.stop()
        if self._nodes is not None:
            nodes, self._nodes = self._nodes, None
            await nodes.stop()

    async def _poll_updates(self, options: RefreshOptions) -> None:
        """``availableUpdatesSync`` until cancelled: never ends on an error (it is logged, and polled again)."""
        assert self.status is not None
        cluster = steady(self.cluster, self.budget)
        watch = Informer(cluster, *CLUSTER_VERSION, key=updates_key)
        await watch.start()
        try:
            while True:
                mark = watch.mark()
                try:
                    await refresh_updates(cluster, self.clock, options, self.updates, self.options.risk_sources,
                                          self.options.registry, self.options.gated, writer=self.status)
                    if self.options.on_updates is not None:
                        self.options.on_updates(self.updates)
                except ApiError as err:
                    self._error(f"available updates: {err}")
                    log.warning("available updates not synced", error=str(err))
                delay = self.options.reevaluate_after if reevaluate_soon(self.updates) else options.minimum_interval
                await watch.wait_change(None, mark, delay)
        finally:
            await watch.stop()

    def _error(self, message: str) -> None:
        self.state.errors = [*self.state.errors[-9:], message]

    async def _sweep(self, plan: Plan, spec: Informer, mark: int, key: Hashable) -> SweepResult | None:
        """Run ``plan`` until it ends, or until the spec changes (``None``: cancelled for new work)."""
        runner = self._runner(plan)
        self.state.plan, self.state.runner = plan, runner
        self.state.sweeps += 1
        self.emit(ControllerSweep, state=plan.state, version=plan.release.version, image=plan.release.image,
                  what=plan.describe())
        task = asyncio.create_task(runner.run(), name=f"sweep {plan.describe()}")
        changed: asyncio.Task[bool] | None = None
        try:
            while True:
                changed = asyncio.create_task(spec.wait_change(None, mark, None))
                done, _ = await asyncio.wait({task, changed}, return_when=asyncio.FIRST_COMPLETED)
                if task in done:
                    return task.result()
                mark = self._mark = spec.mark()
                cv = await steady(self.cluster, self.budget).get(cv_ref())
                if work_key(cv or {}) != key:  # a restarted watch wakes us too: look at what changed
                    self.emit(ControllerRetarget, what=plan.describe())
                    return None
        finally:
            for pending in (task, changed):
                if pending is not None and not pending.done():
                    pending.cancel()
                    await asyncio.gather(pending, return_exceptions=True)
