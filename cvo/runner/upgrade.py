"""Accepting an upgrade: preconditions first, then the sweep (pkg/cvo/sync_worker.go `SyncWorker.syncPayload`).

The target release is accepted only when no precondition blocks (or ``force`` turns blocking
failures into an accepted risk).  While it is blocked, ClusterVersion says so —
``ReleaseAccepted=False``, reason ``PreconditionChecks``, naming every blocker — the cluster keeps
reconciling the release it runs, and the checks run again whenever a ClusterOperator, an
OperatorCondition, the ClusterVersion or the admin-gates and admin-acks ConfigMaps change: when the
blocker clears, or an admin overrides or acknowledges it, the upgrade proceeds by itself.

A command (``write_spec``: it holds the request in memory, not in ``spec.desiredUpdate``) does not wait on a
block only ``--force`` passes (a rollback, a giant hop: :attr:`cvo.gates.preconditions.Verdict.force_only`),
and its end (``--timeout``, a signal, such a block) withdraws the request: ``ReleaseAccepted`` is True for
the running release again, so nobody is shown a request that nothing pursues.  A controller waits as the CVO
does, until the admin changes ``spec.desiredUpdate``.

None of this is the sweep, so none of it follows the sweep's back-off: the gate checks, the
ClusterVersion's status and spec writes and the watches' first lists ride out a failing server
within the command's budget (:mod:`cvo.cluster.persist`).  A ``Conflict`` on the ClusterVersion
means reading it again and re-applying the intent, which is not written again when it is already
there (an earlier write that landed although its answer was lost).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from cvo.clock import Clock, pace, wall_seconds
from cvo.cluster.api import (
    CLUSTER_OPERATOR,
    CLUSTER_VERSION,
    ApiError,
    ApiErrorKind,
    Cluster,
    ReadOnlyCluster,
    cv_ref,
)
from cvo.cluster.informer import Informer
from cvo.cluster.landed import contains
from cvo.cluster.persist import Budget, reread_on_conflict, steady
from cvo.gates.olm import OC_API_VERSION, OC_GROUP, OC_KIND
from cvo.gates.preconditions import Verdict, run_checks
from cvo.gates.risks.adminack import ADMIN_ACKS, ADMIN_GATES
from cvo.gates.upgradeable import applies, set_upgradeable, update_versions, upgradeable_risks
from cvo.log import get_logger
from cvo.objects import ClusterVersion
from cvo.payload.capabilities import implicitly_enabled_by_update, still_enabled
from cvo.payload.fields import dig, entries
from cvo.payload.filters import ApplyFilter, Override
from cvo.payload.graph import Mode
from cvo.payload.loader import Release
from cvo.runner.blockers import read_cluster_state
from cvo.runner.events import Progress, Reporter
from cvo.runner.operator_conditions import OperatorConditionManager
from cvo.runner.status_writer import StatusWriter
from cvo.runner.sweep import SweepOptions, SweepResult
from cvo.runner.sweep_events import Kind, P, PreconditionBlocked, PreconditionPassed, SweepBlocked
from cvo.runner.worker import Worker, payload_loaded
from cvo.status.godur import SECOND, short_duration
from cvo.status.parts import Accepted, Upgradeable
from cvo.updates.model import Risk
from cvo.updates.sources import SourcedRisks

log = get_logger("cvo.runner.upgrade")


@dataclass
class Preflight:
    verdict: Verdict
    risks: SourcedRisks  # what Upgradeable is derived from (those that apply block minor and major updates)
    current: str
    target: str

    @property
    def blockers(self) -> list[Risk]:
        """The risks behind ``Upgradeable=False``."""
        return [r for r in self.risks.risks if applies(r)]


async def preflight(cluster: ReadOnlyCluster, target: Release, force: bool, now: datetime) -> Preflight:
    """Evaluate every gate now (reads only: nothing is written).  Pass a cluster that retries
    (:func:`cvo.cluster.persist.steady`): one failed read must not fail the checks."""
    state = await read_cluster_state(cluster, assume_synced=True)
    cv = state.cluster_version or ClusterVersion.read({})
    status = cv.section("status")
    found = upgradeable_risks(state, update_versions(status))
    cv = cv.replaced(status=set_upgradeable(status, found, now))
    return Preflight(run_checks(cv, target.version, force), found, cv.status.desired.version, target.version)


class UpgradeController:
    """``status``: the writer its sweeps and its own verdicts report to (by default one of its own)."""

    def __init__(self, cluster: Cluster, current: Release, target: Release, reporter: Reporter, clock: Clock,
                 options: SweepOptions, force: bool = False, write_spec: bool = True,
                 status: StatusWriter | None = None) -> None:
        self.cluster = cluster
        # The command sets spec.desiredUpdate itself; a controller acts on the one the admin set (and never
        # writes the spec, as the CVO does not).
        self.write_spec = write_spec
        self.current = current
        self.target = target
        self.reporter = reporter
        self.clock = clock
        self.options = options
        self.force = force
        self.steady = steady(cluster, options.budget)  # gate checks, ClusterVersion reads and writes
        self.blocked_message = ""
        self.withdrawn = False  # the command's request was withdrawn (ReleaseAccepted=True for the current release)
        self.worker: Worker | None = None  # the sweep now running (reconcile while blocked, then the update)
        # One statusWrapper across them, as the CVO's sync worker keeps one.
        self.status = status or StatusWriter(cluster, clock, throttle=options.status_throttle, reporter=reporter,
                                             budget=options.budget)

    @property
    def progress(self) -> Progress:
        """The running sweep's (cvo.runner.decide.Runner)."""
        return self.worker.progress if self.worker is not None else Progress()

    @property
    def blocked(self) -> str:
        """Why the update waits for its preconditions; "" once it runs (cvo.runner.decide.Runner)."""
        return "" if self.worker is not None and self.worker.release is self.target else self.blocked_message

    def emit(self, kind: Kind[P], /, *args: P.args, **fields: P.kwargs) -> None:
        self.reporter.emit(kind(self.clock.now(), *args, **fields))

    def _accepted_message(self) -> str:
        return (f'Preconditions failed for payload loaded version="{self.target.version}" '
                f'image="{self.target.image}": {self.blocked_message}')

    def _blocked_accepted(self) -> Accepted:
        return Accepted("False", "PreconditionChecks", self._accepted_message())

    async def _write_blocked(self, check: Preflight) -> None:
        await self.status.report(Upgradeable(check.risks), self._blocked_accepted(), force=True, must_land=True)

    async def run(self) -> SweepResult:
        try:
            return await self._run()
        finally:
            if self.write_spec and not self.started and not self.withdrawn:
                await self._withdraw()

    @property
    def started(self) -> bool:
        """Whether the target got through its gates (from then on its sweep reports ReleaseAccepted)."""
        return self.worker is not None and self.worker.release is self.target

    async def _withdraw(self) -> None:
        """The command's request ends without the update: ReleaseAccepted=True for the running release, as the
        CVO reports once ``spec.desiredUpdate`` no longer asks for another (``oc adm upgrade --clear``)."""
        self.withdrawn = True
        try:
            await self.status.report(payload_loaded(self.current), force=True, must_land=True)
        except ApiError as err:  # the command's own error says more; this one must not replace it
            log.warning("upgrade.withdraw_failed", version=self.target.version, error=str(err))

    async def _run(self) -> SweepResult:
        loop = asyncio.get_running_loop()
        deadline = None if self.options.timeout is None else loop.time() + self.options.timeout
        begun = wall_seconds()
        watchers = [Informer(self.steady, *CLUSTER_OPERATOR), Informer(self.steady, *CLUSTER_VERSION),
                    # an admin's acknowledgement lets the update through at once (pkg/risk/adminack's informers)
                    Informer(self.steady, "", "ConfigMap", name=ADMIN_GATES),
                    Informer(self.steady, "", "ConfigMap", name=ADMIN_ACKS)]
        if await self.steady.serves(OC_API_VERSION, OC_KIND):
            watchers.append(Informer(self.steady, OC_GROUP, OC_KIND))
        syncer = OperatorConditionManager(self.cluster, self.current.manifests)
        for w in watchers:
            await w.start()
        await syncer.start_sync()
        last_reconcile: float | None = None
        try:
            while True:
                marks = [w.mark() for w in watchers]
                check = await preflight(self.steady, self.target, self.force, self.clock.now())
                if not check.verdict.blocked:
                    self.emit(PreconditionPassed, version=self.target.version,
                              warnings=check.verdict.message, forced=check.verdict.forced)
                    return await self._update(check, deadline)
                if check.verdict.message != self.blocked_message:
                    self.blocked_message = check.verdict.message
                    self.emit(PreconditionBlocked, version=self.target.version, message=check.verdict.message,
                              blockers=[r.name for r in check.blockers])
                if self.write_spec and check.verdict.force_only:
                    return await self._blocked_result(self._force_only(check))
                await self._write_blocked(check)
                now = loop.time()
                if deadline is not None and now >= deadline:
                    return await self._blocked_result(self._timed_out(wall_seconds() - begun))
                if last_reconcile is None or now - last_reconcile >= self.options.interval:
                    last_reconcile = now
                    await self._reconcile_current(deadline)
                    await self._write_blocked(check)
                    continue
                wait = self.options.interval - (now - last_reconcile)
                if deadline is not None:
                    wait = min(wait, deadline - now)
                await first_change(watchers, marks, wait)
        finally:
            await syncer.stop_sync()
            for w in watchers:
                await w.stop()

    async def _reconcile_current(self, deadline: float | None) -> None:
        """While blocked the cluster keeps reconciling what it runs (one pass per interval)."""
        loop = asyncio.get_running_loop()
        timeout = self.options.interval
        if deadline is not None:
            timeout = min(timeout, max(0.0, deadline - loop.time()))
        if timeout <= 0:
            return
        options = SweepOptions(interval=self.options.interval, timeout=timeout,
                               capabilities=self.options.capabilities,
                               release_accepted=self._blocked_accepted(), budget=self.options.budget)
        self.worker = Worker(self.cluster, self.current, Mode.RECONCILE, self.reporter, self.clock, options,
                             status=self.status)
        await self.worker.run()

    async def _update(self, check: Preflight, deadline: float | None) -> SweepResult:
        loop = asyncio.get_running_loop()
        remaining = None if deadline is None else max(0.0, deadline - loop.time())
        options = SweepOptions(interval=self.options.interval, timeout=remaining,
                               max_workers=self.options.max_workers, capabilities=self.options.capabilities,
                               accepted_risks="\n".join(r for r in (self.options.accepted_risks,
                                                                     check.verdict.accepted_risks) if r),
                               verified=self.options.verified, budget=self.options.budget,
                               implicit_capabilities=await self._implicit_capabilities())
        if self.write_spec:
            await set_desired_update(self.steady, desired_update(self.target, self.force), self.options.budget)
        # the worker records how long each ClusterOperator took (cvo.runner.durations)
        self.worker = Worker(self.cluster, self.target, Mode.UPDATE, self.reporter, self.clock, options,
                             status=self.status)
        return await self.worker.run()

    async def _implicit_capabilities(self) -> frozenset[str]:
        """Capabilities the update must keep enabled: those the cluster has implicitly enabled already, and
        those the target would otherwise disable under resources the current release applies
        (``GetImplicitlyEnabledCapabilities``, lib/manifest/manifest.go)."""
        cv = await self.steady.get(cv_ref()) or {}
        base = self.options.capabilities or ApplyFilter()
        previous = dig(cv, "status", "capabilities", "enabledCapabilities")
        previous = [c for c in previous if isinstance(c, str)] if isinstance(previous, list) else []
        current = still_enabled(base.enabled_capabilities, base.known_capabilities, previous)
        overrides = tuple(Override.from_dict(o) for o in entries(dig(cv, "spec", "overrides")))
        settings = ApplyFilter(enabled_capabilities=current.enabled, known_capabilities=base.known_capabilities,
                               overrides=overrides, feature_gates=base.feature_gates)
        return implicitly_enabled_by_update(self.target.manifests, self.current.manifests, settings, current.implicit)

    def _force_only(self, check: Preflight) -> str:
        names = ", ".join(dict.fromkeys(e.name for e in check.verdict.force_only))
        return (f"{names} blocks for good: waiting would not clear it, only --force passes it (or choose another "
                f"target); the cluster keeps {self.current.version}")

    def _timed_out(self, wall: float) -> str:
        """Which timeout ended the wait, on which clock, and how to wait longer.  (``options.timeout`` is what was
        left of the command's ``--timeout`` when the wait began: its budget runs from the command's start.)"""
        waited = short_duration(round(self.options.timeout or 0.0) * SECOND)
        clock = pace()
        if not clock.simulated:
            on = "on the wall clock"
        elif clock.speed:
            on = f"on the simulated cluster's clock (at --speed {clock.speed:g}: {wall:.1f}s of real time)"
        else:
            on = f"on the simulated cluster's clock (as fast as it runs: {wall:.1f}s of real time)"
        if not self.write_spec:  # a controller's request stays in spec.desiredUpdate
            return f"the timeout ended the wait after {waited} {on}"
        return (f"the command's --timeout ended the wait after {waited} {on}; the cluster keeps "
                f"{self.current.version}. To wait longer: a longer --timeout, or --timeout 0 for no limit")

    async def _blocked_result(self, why: str) -> SweepResult:
        now = self.clock.now()
        if self.write_spec:
            await self._withdraw()  # before the report reads the ClusterVersion
        cv = await self.steady.get(cv_ref()) or {}
        self.emit(SweepBlocked, version=self.target.version, message=self.blocked_message)
        return SweepResult(ok=False, completed=False, attempts=0, failure=None,
                           message=f"upgrade to {self.target.version} is blocked: {self.blocked_message}\n{why}",
                           started=now, finished=now, cluster_version=cv, blocked=True)


def desired_update(target: Release, force: bool = False) -> dict[str, object]:
    """``spec.desiredUpdate`` naming ``target`` (``configv1.Update``: version, image, force)."""
    return {"version": target.version, "image": target.image, "force": force}


async def set_desired_update(cluster: Cluster, wanted: dict[str, object], budget: Budget | None) -> bool:
    """Write ``spec.desiredUpdate`` (what ``oc adm upgrade --to-image`` does); False when it was set already.

    ``cluster`` should retry transient errors (:func:`cvo.cluster.persist.steady`); a Conflict reads the
    ClusterVersion again.  An earlier write whose answer was lost is not written again.
    """
    wrote: list[bool] = []

    async def write() -> None:
        cv = await cluster.get(cv_ref())
        if cv is None:
            raise ApiError(ApiErrorKind.NOT_FOUND, "the ClusterVersion 'version' does not exist", cv_ref())
        desired = (cv.get("spec") or {}).get("desiredUpdate") or {}
        if contains(wanted, desired):
            return  # already asked for (by this command's earlier write, whose answer may have been lost)
        await cluster.update({**cv, "spec": {**(cv.get("spec") or {}), "desiredUpdate": wanted}})
        wrote.append(True)

    await reread_on_conflict(write, budget, "set the ClusterVersion's spec.desiredUpdate")
    return bool(wrote)


async def first_change(watchers: list[Informer], marks: list[int], timeout: float | None = None) -> None:
    """Return when any watcher saw a change after its mark, or after ``timeout`` (None: no limit)."""
    tasks = [asyncio.create_task(w.wait_change(None, m, timeout)) for w, m in zip(watchers, marks, strict=True)]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
