"""The controller: level-triggered, continuously reconciling, never giving up.

States, as the CVO's sync worker has them (pkg/cvo/sync_worker.go `SyncWorker.Update`, `calculateNextFrom`), decided
afresh from the ClusterVersion at every turn — nothing is remembered that the cluster does not say:

    no Completed history ──────────────► Initializing (install: the release being installed, else
                                         spec.desiredUpdate, else the controller's own --release)
    desired == history[0], Completed ──► Reconciling  (one pass, then again every --interval)
    anything else ─────────────────────► Updating     (through the gates: runner.upgrade)

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

Only the replica holding the lease runs this loop, and only through a
:class:`~cvo.controller.fence.FencedCluster`: see :mod:`cvo.controller.run`.
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
from cvo.cluster.persist import Budget, reread_on_conflict, steady
from cvo.controller.releases import Desired, Releases, RetrieveFailed
from cvo.log import get_logger
from cvo.payload.conditions import set_condition
from cvo.payload.fields import dig
from cvo.payload.filters import ApplyFilter
from cvo.payload.graph import Mode
from cvo.payload.loader import Release
from cvo.runner.events import Event, Progress, Reporter
from cvo.runner.notify import Notifier
from cvo.runner.start import has_completed
from cvo.runner.upgrade import UpgradeController
from cvo.runner.worker import SweepOptions, SweepResult, Worker, WrongRelease

log = get_logger("cvo.controller")


def work_key(cv: dict[str, Any]) -> Hashable:
    """What in a ClusterVersion's spec is work for the controller (the CVO's ``SyncWork`` inputs)."""
    spec = cv.get("spec") if isinstance(cv.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    return orjson.dumps([spec.get("desiredUpdate") or None, spec.get("overrides") or None,
                         spec.get("capabilities") or None],
                        option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True)
class Plan:
    """One sweep the controller decided on."""

    state: str  # Initializing, Updating, Reconciling (the CVO's payload states)
    release: Release  # the release applied (the target of an update)
    current: Release | None = None  # an update's current release
    force: bool = False

    def describe(self) -> str:
        if self.state == "Updating" and self.current is not None and self.current.version != self.release.version:
            return f"update {self.current.version} → {self.release.version}"
        return f"{self.state.lower()} {self.release.version}"


@dataclass
class ControllerOptions:
    interval: float = 180.0  # the reconcile interval (the CVO: random in [2m, 4m))
    capabilities: ApplyFilter | None = None
    own_image: str = ""  # the release to install into a cluster without one (the CVO's own payload)
    seed: int | None = None  # for the back-off jitter


@dataclass
class ControllerState:
    """What the controller is doing, for /readyz, /metrics and tests."""

    plan: Plan | None = None
    runner: Worker | UpgradeController | None = None
    sweeps: int = 0
    completed: int = 0
    errors: list[str] = field(default_factory=list)  # the last few loop errors (not the sweep's)

    @property
    def progress(self) -> Progress:
        runner = self.runner
        if isinstance(runner, Worker):
            return runner.progress
        if isinstance(runner, UpgradeController) and runner.worker is not None:
            return runner.worker.progress
        return Progress()


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
        self.state = ControllerState()
        self._rng = random.Random(self.options.seed)
        self._idle_logged = False
        self._mark = 0  # the spec watch's mark the current decision was taken at

    def emit(self, name: str, **fields: object) -> None:
        self.reporter.emit(Event(self.clock.now(), name, dict(fields)))

    def _backoff(self, consecutive: int) -> float:
        """The sync worker's back-off after ``consecutive`` failures (pkg/cvo/sync_worker.go `SyncWorker.Start`)."""
        interval = self.options.interval
        base = interval / 16 * 2**consecutive if consecutive <= 3 else interval
        return base * (1 + 0.2 * self._rng.random())

    # --- deciding ---------------------------------------------------------------------------

    async def decide(self, cv: dict[str, Any] | None) -> Plan | None:
        """The sweep the ClusterVersion calls for now; ``None``: nothing to do (no release known)."""
        return decide(cv, self.releases, self.options.own_image)

    def _runner(self, plan: Plan) -> Worker | UpgradeController:
        options = SweepOptions(interval=self.options.interval, timeout=None, capabilities=self.options.capabilities,
                               budget=self.budget)
        return runner_for(plan, self.cluster, self.reporter, self.clock, options, self.on_release)

    # --- reporting what cannot be retrieved ---------------------------------------------------

    async def report_unaccepted(self, failure: RetrieveFailed) -> None:
        """``ReleaseAccepted=False`` with the step's reason and message (the rest of the status stays)."""
        cluster = steady(self.cluster, self.budget)

        async def write() -> None:
            cv = await cluster.get(cv_ref())
            if cv is None:
                return
            status = dict(cv.get("status") or {})
            conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, dict)]
            set_condition(conditions, "ReleaseAccepted", "False", failure.reason, failure.message, self.clock.now())
            if conditions != status.get("conditions"):
                await cluster.update_status({**cv, "status": {**status, "conditions": conditions}})

        await reread_on_conflict(write, self.budget, "write the ClusterVersion status")

    # --- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled."""
        self.budget = Budget.of(None)  # the controller rides out any outage
        cluster = steady(self.cluster, self.budget)
        spec = Notifier(cluster, *CLUSTER_VERSION, key=work_key)
        await spec.start()
        consecutive = 0
        self.emit("controller.started", interval=self.options.interval)
        try:
            while True:
                mark = self._mark = spec.mark()
                try:
                    cv = await cluster.get(cv_ref())
                    key = work_key(cv or {})
                    plan = await self.decide(cv)
                    if plan is None:
                        if not self._idle_logged:
                            self.emit("controller.idle", message="no release to install: waiting for a "
                                      "ClusterVersion spec.desiredUpdate (or start with --release DIR)")
                            self._idle_logged = True
                        await spec.wait_change(None, mark, self.options.interval)
                        continue
                    result = await self._sweep(plan, spec, mark, key)
                except RetrieveFailed as failure:
                    consecutive += 1
                    self.emit("controller.retrieve_failed", reason=failure.reason, message=failure.message)
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
                    self.emit("controller.error", error=str(err), retry_in=round(delay, 1))
                    await spec.wait_change(None, mark, delay)
                    continue
                if result is None:  # the spec changed: decide again at once
                    consecutive = 0
                    continue
                if result.completed:
                    consecutive = 0
                    self.state.completed += 1
                    delay = self.options.interval
                else:
                    consecutive += 1
                    delay = self._backoff(consecutive)
                self.emit("controller.next", after=round(delay, 1), completed=result.completed)
                await spec.wait_change(None, self._mark, delay)
        finally:
            self.state.runner = None
            await spec.stop()

    def _error(self, message: str) -> None:
        self.state.errors = [*self.state.errors[-9:], message]

    async def _sweep(self, plan: Plan, spec: Notifier, mark: int, key: Hashable) -> SweepResult | None:
        """Run ``plan`` until it ends, or until the spec changes (``None``: cancelled for new work)."""
        runner = self._runner(plan)
        self.state.plan, self.state.runner = plan, runner
        self.state.sweeps += 1
        self.emit("controller.sweep", state=plan.state, version=plan.release.version, image=plan.release.image,
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
                    self.emit("controller.retarget", what=plan.describe())
                    return None
        finally:
            for pending in (task, changed):
                if pending is not None and not pending.done():
                    pending.cancel()
                    await asyncio.gather(pending, return_exceptions=True)


def decide(cv: dict[str, Any] | None, releases: Releases, own_image: str = "") -> Plan | None:
    """The sweep a ClusterVersion calls for now; ``None``: nothing to do (no release known).

    The one decision: the controller takes it at every turn, and ``cvo install``/``cvo upgrade`` take
    it once, in process, when no controller runs (:mod:`cvo.cli.sweep_cmd`).  Raises
    :class:`~cvo.controller.releases.RetrieveFailed` for a release that cannot be found.
    """
    cv = cv or {}
    desired = Desired.of(dig(cv, "spec", "desiredUpdate"))
    history = [h for h in dig(cv, "status", "history") or [] if isinstance(h, dict)]
    running = str(dig(cv, "status", "desired", "image") or "")
    if not has_completed(cv):
        if history and running:  # an install in progress goes on with its release
            release = releases.by_image(running)  # (the CVO ignores a version change meanwhile)
        elif desired is not None:
            release = releases.resolve(desired)
        elif own_image:
            release = releases.by_image(own_image)
        else:
            return None
        return Plan("Initializing", release)
    target = releases.resolve(desired) if desired is not None else releases.by_image(running)
    head = history[0] if history else {}
    if target.image == running and head.get("image") == running and head.get("state") == "Completed":
        return Plan("Reconciling", target)
    current = target if target.image == running else releases.by_image(running)
    return Plan("Updating", target, current, force=bool(desired and desired.force))


def runner_for(plan: Plan, cluster: Cluster, reporter: Reporter, clock: Clock, options: SweepOptions,
               on_release: Callable[[Release], None] | None = None, *, write_spec: bool = False,
               ) -> Worker | UpgradeController:
    """What runs ``plan``: the sync worker in the plan's mode, or the upgrade through its gates.

    ``write_spec``: the upgrade sets ``spec.desiredUpdate`` itself once its gates pass (a command run
    without a controller, which holds the intent in memory until then); the controller never writes
    the spec, as the CVO does not.
    """
    for release in (plan.current, plan.release):
        if release is not None and on_release is not None:
            on_release(release)
    if plan.state == "Updating":
        assert plan.current is not None
        return UpgradeController(cluster, plan.current, plan.release, reporter, clock, options,
                                 force=plan.force, write_spec=write_spec)
    mode = Mode.INSTALL if plan.state == "Initializing" else Mode.RECONCILE
    return Worker(cluster, plan.release, mode, reporter, clock, options)
