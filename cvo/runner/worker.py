"""The sync worker: apply a payload's task graph until it is done, as ``pkg/cvo/sync_worker.go`` does.

One *attempt* walks the whole graph with the mode's parallelism under the apply timeout (install:
1× the reconcile interval, update and reconcile: 2×).  A failed attempt is retried after the CVO's
back-off (interval/8, /4, /2, then the interval, with 20 % jitter), woken early when a
ClusterOperator changes; every attempt re-applies everything, which is cheap for unchanged objects.
Inside an attempt, tasks retry transient API errors with the CVO's per-mode back-off, and a
ClusterOperator task waits, driven by a watch, until the operator reports the expected versions,
``Available=True`` and ``Degraded=False`` (deliberately better than the CVO, which fails the round
and re-checks after a back-off: here dependents start as soon as the operator is ready).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass, field
from datetime import datetime

import networkx as nx

from cvo.clock import Clock, to_rfc3339
from cvo.cluster.api import CLUSTER_OPERATOR, ApiError, ApiErrorKind, Cluster, Ref
from cvo.cluster.persist import Budget, is_transient, steady
from cvo.gates.upgradeable import UPGRADEABLE, Blocker
from cvo.gates.upgradeable import blockers as upgradeable_blockers
from cvo.payload.arch import go_arch
from cvo.payload.capabilities import Capabilities, still_enabled
from cvo.payload.conditions import find_condition
from cvo.payload.errors import Effect, UpdateError, summarize
from cvo.payload.fields import dig, mapping
from cvo.payload.filters import ApplyFilter, Override
from cvo.payload.graph import Mode, Task, build_graph, make_tasks, max_workers, operator_versions
from cvo.payload.loader import Release
from cvo.payload.manifest import Manifest
from cvo.payload.operators import operator_deployments
from cvo.payload.schema import fill_required, required_zero_values
from cvo.runner.apply import ApplyOutcome, DeleteTracker, Mutator, apply_task, precreate_cluster_operator
from cvo.runner.durations import DurationRecorder, record_progress, save_record
from cvo.runner.events import Event, Fanout, Progress, Reporter, Waiting
from cvo.runner.graph_runner import run_graph
from cvo.runner.health import check_crd, check_deployment, check_job, check_operator_health, no_versions_error
from cvo.runner.notify import Notifier, established_key, operator_health_key
from cvo.runner.operator_conditions import OperatorConditionManager
from cvo.runner.reasons import wrap_apply_error
from cvo.runner.report_filter import Report, ReportFilter
from cvo.runner.status_writer import StatusWriter


@dataclass(frozen=True)
class Backoff:
    """``wait.Backoff`` as the vendored apimachinery steps it (vendor/k8s.io/apimachinery/pkg/util/wait/backoff.go `Backoff.Step`)."""

    duration: float
    factor: float
    steps: int
    cap: float

    def schedule(self) -> tuple[int, list[float]]:
        """How many calls ``wait.ExponentialBackoff`` makes, and the sleeps after each failed one."""
        calls, sleeps = 0, []
        duration, steps = self.duration, self.steps
        while steps > 0:
            calls += 1
            if steps == 1:
                break
            steps -= 1
            sleeps.append(duration)
            duration *= self.factor
            if self.cap > 0 and duration > self.cap:
                duration = self.cap
                steps = 0
        return calls, sleeps


# How long an install task waits for a CRD or Namespace of the same payload that the attempt has not
# applied yet (it runs in parallel, in another node), before the error counts as a normal failure.
DEPENDENCY_WAIT = 60.0
DEPENDENCY_WAITS = 5  # per task and attempt: a dependency that "appears" and still fails is not waited for again
CONTEXT_REASON = "UpdatePayloadFailed"  # an attempt cut short by its deadline (the CVO's errContext)
INSTALL_BACKOFF = Backoff(1.0, 2.0, 4, 15.0)  # 4 calls, waits 1, 2, 4 s
UPDATE_BACKOFF = Backoff(10.0, 1.3, 3, 15.0)  # 2 calls, waits 10 s then a trailing 13 s


@dataclass
class SweepOptions:
    interval: float = 180.0  # the CVO picks [2m, 4m); cvo uses the middle, deterministically
    timeout: float | None = 2 * 3600.0  # the whole sweep, on the sweep's clock; None: no limit
    max_workers: int | None = None  # default: the mode's (install unbounded, update 16, reconcile 2)
    attempt: int = 0
    seed: int = 0  # for the back-off jitter
    status_throttle: float = 15.0
    capabilities: ApplyFilter | None = None
    accepted_risks: str = ""  # recorded on the history entry (warnings the update went ahead with)
    implicit_capabilities: frozenset[str] = frozenset()  # kept enabled by an upgrade (GetImplicitlyEnabledCapabilities)
    release_accepted: tuple[str, str, str] | None = None  # default: True/PayloadLoaded for this release
    # How long the reads and writes around the walk (the ClusterVersion, the watches' first lists)
    # ride out a failing server; None: the backend's own retries only (cvo.cluster.persist).
    budget: Budget | None = None


@dataclass
class SweepResult:
    ok: bool
    completed: bool
    attempts: int
    failure: UpdateError | None
    message: str
    started: datetime
    finished: datetime
    cluster_version: dict = field(default_factory=dict)
    report_errors: list[UpdateError] = field(default_factory=list)
    done: int = 0
    total: int = 0
    blocked: bool = False  # an upgrade its preconditions never let start
    last_progress: datetime | None = None  # when a report last got further (the CVO's LastProgress)


def _exists(obj: dict) -> bool:
    return True  # a Namespace watch wakes waiters when one appears (or goes), not on each change


def payload_crds(manifests: list[Manifest]) -> dict[tuple[str, str, str], Manifest]:
    """(group, kind, version) -> the payload's CRD that serves it."""
    out: dict[tuple[str, str, str], Manifest] = {}
    for m in manifests:
        if (m.group, m.kind) != ("apiextensions.k8s.io", "CustomResourceDefinition"):
            continue
        # Any shape at all (the CRD's own task reports a malformed one): only strings are taken.
        spec = mapping(m.copy_obj().get("spec"))  # not m.obj: that would keep every CRD decoded
        group, kind = spec.get("group"), mapping(spec.get("names")).get("kind")
        if not isinstance(group, str) or not isinstance(kind, str) or not kind:
            continue
        versions = spec.get("versions")
        for v in versions if isinstance(versions, list) else []:
            if isinstance(v, dict) and v.get("served", True) and isinstance(v.get("name"), str) and v["name"]:
                out.setdefault((group, kind, v["name"]), m)
        if isinstance(spec.get("version"), str) and spec["version"]:  # apiextensions v1beta1
            out.setdefault((group, kind, spec["version"]), m)
    return out


class WrongRelease(Exception):
    """A reconcile was asked to apply a release other than the one the cluster runs.

    Only an upgrade, through its preconditions, may move the cluster to another release; a reconcile
    of another release would bypass every gate.
    """


CRD_RECHECK = 2.0  # seconds between looks at discovery while a custom resource waits for its CRD
EARLY_CRD_APPLIES = 8  # install: how many of the payload's CRDs are applied at once ahead of their nodes
CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")


async def _cancel_all(futures: list[asyncio.Future[ApplyOutcome]]) -> None:
    """Cancel what is still running and collect every outcome (nobody else will)."""
    for future in futures:
        future.cancel()
    await asyncio.gather(*futures, return_exceptions=True)


class _Attempt:
    """State of one walk over the graph."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.errors: dict[int, UpdateError] = {}
        self.report_errors: list[UpdateError] = []
        self.interrupted_waits: dict[str, UpdateError] = {}  # ClusterOperator waits cut by the deadline
        self.unapplied: set[int] = set()  # id() of manifests this attempt will not apply (skipped, or a failed node's)
        self.precreated: dict[int, dict] = {}  # id() of tasks -> the ClusterOperator this attempt just created
        self.early: dict[int, asyncio.Future[ApplyOutcome]] = {}  # id() of CRD tasks -> their apply, started early


class Worker:
    def __init__(self, cluster: Cluster, release: Release, mode: Mode, reporter: Reporter, clock: Clock,
                 options: SweepOptions | None = None, reports: ReportFilter | None = None) -> None:
        self.cluster = cluster
        self.release = release
        # statusWrapper.Report; shared by the sweeps of one upgrade (its reconciles and its update)
        self.reports = reports or ReportFilter()
        self.mode = mode
        self.reporter = reporter
        self.clock = clock
        self.options = options or SweepOptions()
        base = self.options.capabilities or ApplyFilter()
        self.capabilities = Capabilities(base.enabled_capabilities, frozenset(), base.known_capabilities)
        self.progress = Progress(version=release.version, mode=str(mode))
        self.deletes = DeleteTracker()
        self.co_start_times: dict[str, datetime] = {}
        self.status = StatusWriter(cluster, clock, throttle=self.options.status_throttle, reporter=reporter,
                                   budget=self.options.budget)
        watched = steady(cluster, self.options.budget)  # the watches' first lists ride out an outage
        # It keeps the ClusterOperators it delivers: their waits check them as the CVO does, from an
        # informer's cache, instead of reading the operator on each report.
        self.co_notifier = Notifier(watched, *CLUSTER_OPERATOR, key=operator_health_key, keep_objects=True)
        # No baseline list: it would decode every CRD at once (the CRD waits mark, then read).
        self.crd_notifier = Notifier(watched, "apiextensions.k8s.io", "CustomResourceDefinition", key=established_key,
                                     baseline=False)
        self.ns_notifier = Notifier(watched, "", "Namespace", key=_exists)
        # Namespaces there now, from the watch (and its baseline list): an object waiting for its namespace
        # learns from it, as the CVO's informers would tell it, instead of reading the namespace each time.
        self._namespaces: set[str] = set()
        self.ns_notifier.listeners.append(
            lambda name, obj: self._namespaces.add(name) if obj is not None else self._namespaces.discard(name))
        self._payload_crds: dict[tuple[str, str, str], Manifest] | None = None  # built on first need
        self._payload_namespaces = {m.name: m for m in release.manifests if (m.group, m.kind) == ("", "Namespace")}
        self.olm = OperatorConditionManager(cluster, release.manifests, create_first=mode is Mode.INSTALL)
        self._operator_deployments = operator_deployments(release.manifests)
        self._zero_values = required_zero_values(release.manifests)
        self._index = {id(m): i for i, m in enumerate(release.manifests, start=1)}
        self.status.upgradeable = self.blockers
        self.status.accepted_risks = self.options.accepted_risks
        self._rng = random.Random(self.options.seed)
        self._failure: UpdateError | None = None
        self._failure_errors: list[UpdateError] = []  # what ``_failure`` summarises
        self._completed = 0
        self._tasks: list[Task] = []
        self._blocking_cos: dict[str, dict] = {}  # ClusterOperators with Upgradeable=False, from the watch
        self.co_notifier.listeners.append(self._track_upgradeable)

    # --- reporting ------------------------------------------------------------------------

    def emit(self, name: str, **fields: object) -> None:
        self.reporter.emit(Event(self.clock.now(), name, dict(fields)))

    async def _write_status(self, force: bool = False, failure: UpdateError | None = None,
                            completed: int | None = None, must_land: bool = False,
                            summarised: list[UpdateError] | None = None) -> None:
        """Report progress.  Waits of this attempt are the failure; otherwise an earlier attempt's
        failure stays until this walk gets further than it did (``statusWrapper.Report`` drops a
        report that clears a failure with a lower fraction).  A report that fails transiently
        is made again later (:class:`StatusWriter`); ``must_land`` (the sweep's result) retries
        within the budget instead.

        ``summarised``: the task errors ``failure`` was summarised from.  The Failing condition is
        made from them without their ``None``-effect errors (``filterErrorForFailingCondition`` in
        pkg/cvo/status.go), so an operator still updating next to a real failure shows the failure."""
        completed = self._completed if completed is None else completed
        failed = failure is not None or bool(self.progress.waiting)
        report = Report(self.release.image, self.progress.done, self.progress.total, completed, failed)
        if not self.reports.accept(report, self.clock.now()):
            return  # keep showing the earlier failure as it was written
        self.progress.last_progress = self.reports.last_progress
        if not failed and self._failure is not None:
            self._failure, self._failure_errors = None, []
        if not force and failure is None and not self.status.due():
            return  # throttled: do not even summarise the waits (a thousand tasks, a thousand calls)
        waiting = [w.error for w in self.progress.waiting.values()]
        if failure is not None:
            current, errors = failure, list(summarised) if summarised else [failure]
        elif waiting:
            current, errors = summarize(waiting), waiting
        else:
            current, errors = None, []
        await self.status.write(
            version=self.release.version, image=self.release.image, done=self.progress.done,
            total=self.progress.total, completed=completed,
            reconciling=self.mode is Mode.RECONCILE, initial=self.mode is Mode.INSTALL, failure=current,
            co_start_times=self.co_start_times, errors=errors, force=force, must_land=must_land,
        )

    # --- the sweep --------------------------------------------------------------------------

    async def run(self) -> SweepResult:
        """The sweep.  An install's and an update's operator times are recorded on the cluster when it ends
        (completed or timed out; :mod:`cvo.runner.durations`)."""
        if self.mode not in (Mode.INSTALL, Mode.UPDATE):
            return await self._sweep()
        recorder = DurationRecorder(self.release.version, self.clock.now(), str(self.mode))
        reporter, self.reporter = self.reporter, Fanout(self.reporter, recorder)
        # an update's partial record, as it grows: cvo upgrade status forecasts from what is already done
        progress = asyncio.create_task(record_progress(self.cluster, recorder)) if self.mode is Mode.UPDATE else None
        try:
            result = await self._sweep()
        finally:
            self.reporter = reporter
            if progress is not None:
                progress.cancel()
                await asyncio.gather(progress, return_exceptions=True)
        await save_record(self.cluster, recorder.record)
        return result

    async def _sweep(self) -> SweepResult:
        loop = asyncio.get_running_loop()
        started = self.clock.now()
        if self.mode in (Mode.RECONCILE, Mode.INSTALL):
            await self._check_current_release()
        deadline = None if self.options.timeout is None else loop.time() + self.options.timeout
        await self.status.ensure(self.release.version, self.release.image,
                                 self.options.release_accepted or self.release_accepted())
        self.capabilities = await self._capabilities()
        self.status.capabilities = self.capabilities
        self.status.version_hash = self.release.manifest_hash  # SyncWorkerStatus.VersionHash
        await self.co_notifier.start()
        await self.crd_notifier.start()
        if self.mode is Mode.INSTALL:
            await self.ns_notifier.start()
        await self.olm.start_sync()
        attempt_no = self.options.attempt
        attempts = 0
        consecutive_errors = 0
        self.emit("sweep.started", version=self.release.version, image=self.release.image, mode=str(self.mode),
                  total=len(self.release.manifests))
        try:
            while True:
                attempts += 1
                attempt = await self._run_attempt(attempt_no, deadline)
                if not attempt.errors:
                    self._completed += 1
                    self._failure, self._failure_errors = None, []
                    await self._write_status(force=True, must_land=True)
                    if attempt.report_errors:
                        # Complete() then Errors(): the install is recorded as done, then the
                        # reported (Degraded) errors show with Completed=0, still in install mode.
                        failure = summarize(attempt.report_errors)
                        await self._write_status(force=True, failure=failure, completed=0, must_land=True,
                                                 summarised=list(attempt.report_errors))
                        self._failure, self._failure_errors = failure, list(attempt.report_errors)
                    else:
                        # As in the CVO, success moves the worker to Reconciling: "Cluster version is V".
                        self.mode = Mode.RECONCILE
                        await self._write_status(force=True, must_land=True)
                    self.emit("sweep.completed", version=self.release.version, attempts=attempts,
                              elapsed=(self.clock.now() - started).total_seconds())
                    return await self._result(True, attempts, started, attempt.report_errors)
                real = [e for e in attempt.errors.values() if e.reason != CONTEXT_REASON]
                if real or self._failure is None:
                    # Cancellation and timeouts alone do not replace the failure (summarizeTaskGraphErrors).
                    self._failure_errors = real or list(attempt.errors.values())
                    self._failure = summarize(self._failure_errors)
                    await self._write_status(force=True, failure=self._failure, summarised=self._failure_errors)
                consecutive_errors += 1
                attempt_no += 1
                if deadline is not None and loop.time() >= deadline:
                    self.emit("sweep.timeout", attempts=attempts, message=self._failure.message if self._failure else "")
                    return await self._result(False, attempts, started, [])
                delay = self._backoff(consecutive_errors)
                if deadline is not None:
                    delay = min(delay, max(0.0, deadline - loop.time()))
                self.emit("attempt.failed", attempt=attempt.number, reason=self._failure.reason if self._failure else "",
                          message=self._failure.message if self._failure else "", retry_in=round(delay, 1))
                mark = self.co_notifier.mark()
                woke = await self.co_notifier.wait_change(None, mark, delay)
                if woke:
                    self.emit("attempt.woken", reason="ClusterOperator changed")
                if deadline is not None and loop.time() >= deadline:
                    self.emit("sweep.timeout", attempts=attempts, message=self._failure.message if self._failure else "")
                    return await self._result(False, attempts, started, [])
        finally:
            await self.co_notifier.stop()
            await self.crd_notifier.stop()
            await self.ns_notifier.stop()
            await self.olm.stop_sync()

    async def _capabilities(self) -> Capabilities:
        """The configured capabilities, and those the cluster keeps enabled: every capability it had
        enabled before (``SetCapabilities``) and any an upgrade implicitly enables."""
        base = self.options.capabilities or ApplyFilter()
        cv = await self.status.current()
        previous = dig(cv, "status", "capabilities", "enabledCapabilities")
        previous = [c for c in previous if isinstance(c, str)] if isinstance(previous, list) else []
        return still_enabled(base.enabled_capabilities, base.known_capabilities, previous,
                             self.options.implicit_capabilities)

    async def _check_current_release(self) -> None:
        """A reconcile re-applies what the cluster runs; an install goes only into a cluster that runs nothing
        else (it may resume its own).  Anything else would move the version past every gate."""
        cv = await self.status.current()
        status = cv.get("status") or {}
        running = (status.get("desired") or {}).get("version")
        what = "reconcile" if self.mode is Mode.RECONCILE else "install"
        if self.mode is Mode.INSTALL:
            history = status.get("history") or []
            completed = next((h.get("version") for h in history if h.get("state") == "Completed"), None)
            running = completed or (history[0].get("version") if history else None)
        if running and running != self.release.version:
            raise WrongRelease(f"{what} of {self.release.version} refused: the cluster runs {running}, and "
                               f"only an upgrade (through its preconditions) may change the release")

    async def blockers(self, cv: dict | None = None) -> list[Blocker]:
        """What blocks minor and major updates now (the ClusterVersion's Upgradeable condition).

        While the watches run, the ClusterOperators and OperatorConditions that block are kept up
        to date from their events (as the CVO's listers are): the status is written on every edge,
        and listing every operator each time made large payloads quadratic.
        """
        if cv is None:
            cv = await self.status.current()
        if self.co_notifier.running:
            cos = list(self._blocking_cos.values())
        else:
            cos = await self.cluster.list(*CLUSTER_OPERATOR)
        return upgradeable_blockers(cv, cos, await self.olm.conditions(), self.deletes.in_progress())

    def _track_upgradeable(self, name: str, co: dict | None) -> None:
        cond = find_condition(((co or {}).get("status") or {}).get("conditions") or [], UPGRADEABLE)
        if co is not None and cond is not None and cond.get("status") == "False":
            self._blocking_cos[name] = co
        else:
            self._blocking_cos.pop(name, None)

    def _backoff(self, consecutive: int) -> float:
        interval = self.options.interval
        base = interval / 16 * 2**consecutive if consecutive <= 3 else interval
        return base * (1 + 0.2 * self._rng.random())

    def release_accepted(self) -> tuple[str, str, str]:
        arch = (self.release.metadata.architecture if self.release.metadata else "") or go_arch()
        return ("True", "PayloadLoaded",
                f'Payload loaded version="{self.release.version}" image="{self.release.image}" '
                f'architecture="{arch}"')

    async def _result(self, ok: bool, attempts: int, started: datetime, report: list[UpdateError]) -> SweepResult:
        recorded = True
        try:
            await self.status.flush()  # a report the server did not take during the walk must be there at the end
        except ApiError as err:
            # A sweep that completed must be recorded: without it the command fails (the last error).
            # A sweep that failed (the cluster stayed down) reports its own failure, the CVO's reason.
            if ok or not is_transient(err):
                raise
            recorded = False
            self.emit("status.unwritten", error=str(err))
        cv = await self.status.current()
        failing = next((c for c in (cv.get("status") or {}).get("conditions") or [] if c.get("type") == "Failing"), {})
        failure = self._failure
        message = failing.get("message", "") if failing.get("status") == "True" and recorded else ""
        if not ok and not message:
            message = failure.message if failure else "the sweep did not finish"
        return SweepResult(
            ok=ok and not report, completed=ok, attempts=attempts, failure=failure, message=message,
            started=started, finished=self.clock.now(), cluster_version=cv, report_errors=report,
            done=self.progress.done, total=self.progress.total, last_progress=self.reports.last_progress,
        )

    async def _overrides(self) -> tuple[Override, ...]:
        cv = await self.status.current()
        return tuple(Override.from_dict(o) for o in (cv.get("spec") or {}).get("overrides") or [])

    async def _run_attempt(self, number: int, deadline: float | None) -> _Attempt:
        loop = asyncio.get_running_loop()
        attempt = _Attempt(number)
        base = self.options.capabilities or ApplyFilter()
        apply_filter = ApplyFilter(enabled_capabilities=self.capabilities.enabled,
                                   known_capabilities=base.known_capabilities,
                                   overrides=await self._overrides(), feature_gates=base.feature_gates)
        tasks = make_tasks(self.release.manifests, self.mode, apply_filter)
        self._tasks = tasks
        # What this attempt will not create (skipped, or deleted rather than applied): nobody waits for it.
        attempt.unapplied.update(id(t.manifest) for t in tasks if t.skip is not None or t.delete)
        graph = build_graph(tasks, self.mode, number)
        if number == self.options.attempt or not self.co_start_times:
            self.co_start_times = {}
        workers = self.options.max_workers or max_workers(self.mode, graph)
        self.progress.attempt = number
        self.progress.done = 0
        self.progress.total = len(tasks)
        self.progress.waiting.clear()
        self.emit("attempt.started", attempt=number, nodes=graph.number_of_nodes(), workers=workers)
        await self._write_status(force=True)
        timeout = self.options.interval * (1 if self.mode is Mode.INSTALL else 2)
        attempt_deadline = loop.time() + timeout
        if deadline is not None:
            attempt_deadline = min(attempt_deadline, deadline)

        async def node_fn(node: int, node_tasks: list[Task]) -> None:
            await self._run_node(node, node_tasks, attempt, sorted(graph.predecessors(node)))

        self._apply_crds_early(tasks, attempt)
        try:
            result = await run_graph(graph, workers, node_fn, attempt_deadline)
        finally:
            await _cancel_all(list(attempt.early.values()))
            attempt.early.clear()
        for node, error in result.errors.items():
            if isinstance(error, UpdateError):
                attempt.errors[node] = error
            else:
                task = str(graph.nodes[node]["tasks"][0])
                attempt.errors[node] = wrap_apply_error(error if isinstance(error, Exception) else Exception(str(error)),
                                                        task)
                # Not an API error: a bug or an unexpected condition.  Say what it was.
                self.emit("node.error", node=node, task=task, error=f"{type(error).__name__}: {error}")
        if result.cancelled or result.incomplete:
            for i, err in enumerate(attempt.interrupted_waits.values()):
                attempt.errors[-1 - i] = err
            if not attempt.errors:
                attempt.errors[-10**6] = UpdateError(
                    CONTEXT_REASON, f"update context deadline exceeded at {self.progress.done} of "
                    f"{self.progress.total}: {result.incomplete_message(graph)}")
        self._log_blocked(graph, result.errors)
        return attempt

    def _apply_crds_early(self, tasks: list[Task], attempt: _Attempt) -> None:
        """Install: start applying the payload's CRDs now, a few at a time; each CRD's task takes the
        outcome of its early apply (or, if that failed, applies it again itself).

        A custom resource of the payload waits for its CRD to be Established, and the API server
        establishes CRDs one after another, in the order they come; a CRD deep in a long node was
        created seconds after the first object waiting for it, and the install's tail was such chains.
        So the CRDs whose kinds the payload applies go first, in the order of their first custom
        resource, then the others (most of the payload's CRDs: nothing in the install waits for them).
        The objects and the requests are the same; only when the CRDs are sent changes."""
        if self.mode is not Mode.INSTALL:
            return
        if self._payload_crds is None:
            self._payload_crds = payload_crds(self.release.manifests)
        applied = [t for t in tasks if t.skip is None and not t.delete]
        first_need: dict[int, int] = {}  # id() of a CRD manifest -> index of the first task of its kinds
        for index, task in enumerate(applied):
            m = task.manifest
            crd = self._payload_crds.get((m.group, m.kind, m.version))
            if crd is not None and crd is not m:
                first_need.setdefault(id(crd), index)
        crds = [(first_need.get(id(t.manifest), len(applied) + i), t)
                for i, t in enumerate(applied) if (t.manifest.group, t.manifest.kind) == CRD]
        crds.sort(key=lambda pair: pair[0])
        gate = asyncio.Semaphore(EARLY_CRD_APPLIES)

        async def apply(task: Task) -> ApplyOutcome:
            async with gate:  # (no OperatorCondition to prepare: that is for operator Deployments)
                outcome = await apply_task(self.cluster, task, self.mode, self.deletes, self._mutator(None, task))
            # Not the CRD as the server answered: an install checks no CRD's health, and until its node
            # comes to it the answer would be held (the payload's CRDs are its largest objects).
            return ApplyOutcome(outcome.action)

        for _, task in crds:  # the semaphore's waiters go in this order
            attempt.early[id(task)] = asyncio.ensure_future(apply(task))

    def _log_blocked(self, graph: nx.DiGraph, errors: dict[int, BaseException]) -> None:
        for node in errors:
            blocked = [n for n in nx.descendants(graph, node) if graph.nodes[n]["tasks"]]
            if blocked:
                self.emit("node.blocked", node=node, dependents=len(blocked))

    async def _run_node(self, node: int, tasks: list[Task], attempt: _Attempt, after: list[int] | None = None) -> None:
        # runlevel, component and the nodes it ran after: what a timeline report needs (cvo report)
        first = tasks[0] if tasks else None
        self.emit("node.started", node=node, tasks=len(tasks), runlevel=first.runlevel if first else None,
                  component=first.component if first else None, after=after or [])
        for task in tasks:  # the precreate pass: errors are ignored
            if task.skip is None and task.manifest.kind == "ClusterOperator" and not task.delete:
                with contextlib.suppress(ApiError, UpdateError):
                    created = await precreate_cluster_operator(self.cluster, task, create_first=self.mode is Mode.INSTALL)
                    if created is not None and self.mode is Mode.INSTALL:
                        # Its task needs no read: in install mode it would only find what was just created
                        # (the CVO's Initializing mode writes nothing there; its health check reads).
                        attempt.precreated[id(task)] = created
        position = 0
        try:
            for index, task in enumerate(tasks):
                position = index
                self.progress.running[node] = str(task)
                if task.skip is not None:
                    self.emit("task.skipped", task=str(task), reason=task.skip, node=node)
                    continue
                await self._run_task(task, attempt, node)
                self.progress.done += 1
                await self._write_status()
        except UpdateError as err:
            self.emit("node.failed", node=node, reason=err.reason, message=err.message, nested=err.nested)
            self._unapplied(tasks[position:], attempt)
            raise
        finally:
            self.progress.running.pop(node, None)
        self.emit("node.done", node=node)

    async def _run_task(self, task: Task, attempt: _Attempt, node: int | None = None) -> None:
        calls, delays = (INSTALL_BACKOFF if self.mode is Mode.INSTALL else UPDATE_BACKOFF).schedule()
        last: Exception | None = None
        index = waits = 0
        self.emit("task.started", task=str(task), node=node)
        namespace = self._missing_namespace(task, attempt)
        while index < calls:
            try:
                if namespace is not None:
                    # The namespace watch says the payload's namespace is not there yet: wait for it
                    # instead of sending a create that can only fail (NotFound) and then waiting.
                    waits += 1
                    self.emit("task.dependency", task=str(task), kind=namespace.kind, dependency=namespace.name,
                              error=ApiErrorKind.NOT_FOUND.value, seen="watch", node=node)
                    await self._await_dependency(namespace, attempt, task)
                    namespace = None
                mutate = None if task.delete else self._mutator(await self.olm.prepare(task.manifest), task)
                precreated = attempt.precreated.pop(id(task), None)
                early = attempt.early.pop(id(task), None)
                if precreated is not None:
                    outcome = ApplyOutcome("created", precreated)
                elif early is not None:
                    outcome = await early  # its failure counts as this task's first call
                else:
                    outcome = await apply_task(self.cluster, task, self.mode, self.deletes, mutate)
                self.emit("task.applied", task=str(task), action=outcome.action, file=task.manifest.path, node=node)
                await self._health(task, outcome.live, attempt, node)
                self.emit("task.done", task=str(task), node=node)
                return
            except UpdateError as err:
                self.emit("task.failed", task=str(task), reason=err.reason, message=err.message, nested=err.nested, node=node)
                raise
            except ApiError as err:
                last = err
                dependency = self._dependency(task, err) if waits < DEPENDENCY_WAITS else None
                if dependency is not None:
                    waits += 1
                    self.emit("task.dependency", task=str(task), kind=dependency.kind, dependency=dependency.name,
                              error=err.kind.value, node=node)
                    if await self._await_dependency(dependency, attempt, task):
                        continue  # it is there now: apply again, without using up a retry
                index += 1
                self.emit("task.retry", task=str(task), error=err.kind.value, message=str(err), call=index, node=node)
                if index - 1 < len(delays):
                    await asyncio.sleep(delays[index - 1])
        assert last is not None
        error = wrap_apply_error(last, str(task), task.manifest.path)
        self.emit("task.failed", task=str(task), reason=error.reason, message=error.message, nested=error.nested, node=node)
        raise error

    # --- install mode: objects that need a CRD or Namespace the same attempt applies ------------------

    def _missing_namespace(self, task: Task, attempt: _Attempt) -> Manifest | None:
        """Install mode: the payload's Namespace that ``task``'s object goes into, when the namespace watch
        (listed at start, then followed) says it is not there yet and this attempt applies it; ``None``
        otherwise."""
        m = task.manifest
        if self.mode is not Mode.INSTALL or task.delete or not m.namespace or not self.ns_notifier.running \
                or m.namespace in self._namespaces:
            return None
        namespace = self._payload_namespaces.get(m.namespace)
        return namespace if namespace is not None and namespace is not m and id(namespace) not in attempt.unapplied \
            else None

    def _dependency(self, task: Task, err: ApiError) -> Manifest | None:
        """The payload's CRD or Namespace whose absence caused ``err``, if this install applies it.

        The CVO applies an install's manifests all at once and lets an object that needs a CRD
        (NoKindMatch) or a Namespace (NotFound) from another node fail after its short back-off
        (1, 2, 4 s), and the whole attempt is then retried after the attempt back-off; on a loaded
        API server that routinely costs an attempt.  cvo waits for the dependency instead (driven
        by the CRD and Namespace watches, at most :data:`DEPENDENCY_WAIT`), a deliberate improvement.
        """
        if self.mode is not Mode.INSTALL:
            return None
        m = task.manifest
        dependency: Manifest | None = None
        if err.kind is ApiErrorKind.NO_KIND_MATCH:
            if self._payload_crds is None:
                self._payload_crds = payload_crds(self.release.manifests)
            dependency = self._payload_crds.get((m.group, m.kind, m.version))
        elif err.kind is ApiErrorKind.NOT_FOUND and m.namespace and f'namespaces "{m.namespace}" not found' in str(err):
            dependency = self._payload_namespaces.get(m.namespace)
        return dependency if dependency is not m else None

    async def _await_dependency(self, dependency: Manifest, attempt: _Attempt, task: Task) -> bool:
        """Wait until ``dependency`` is there (a CRD: Established, so that ``task``'s kind is served);
        False if it will not be in this attempt.

        For a CRD the question is asked of discovery (``serves``), which the CRD watch keeps current
        on a real cluster: no read of the CRD for every object that waits for it."""
        crd = dependency.kind == "CustomResourceDefinition"
        notifier = self.crd_notifier if crd else self.ns_notifier
        ref = Ref(dependency.group, dependency.kind, "", dependency.name)
        loop = asyncio.get_running_loop()
        end = loop.time() + DEPENDENCY_WAIT
        while True:
            mark = notifier.mark(dependency.name)
            if id(dependency) in attempt.unapplied:
                return False
            if crd:
                if await self.cluster.serves(task.manifest.api_version, task.manifest.kind):
                    return True
            elif self.ns_notifier.running:
                if dependency.name in self._namespaces:
                    return True
            elif await self.cluster.get(ref) is not None:
                return True
            remaining = end - loop.time()
            if remaining <= 0:
                return False
            if crd:
                # Woken by the CRD's events, and every few seconds to ask discovery again: the event can
                # come before discovery serves the kind (a real server's discovery lags Established).
                await notifier.wait_change(dependency.name, mark, min(remaining, CRD_RECHECK))
            elif not await notifier.wait_change(dependency.name, mark, remaining):
                return False

    def _unapplied(self, tasks: list[Task], attempt: _Attempt) -> None:
        """A node stopped: its remaining tasks will not run; wake whoever waits on one of them."""
        for task in tasks:
            attempt.unapplied.add(id(task.manifest))
            m = task.manifest
            if (m.group, m.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
                self.crd_notifier.poke(m.name)
            elif (m.group, m.kind) == ("", "Namespace"):
                self.ns_notifier.poke(m.name)

    async def _health(self, task: Task, live: dict | None, attempt: _Attempt, node: int | None = None) -> None:
        m = task.manifest
        if task.delete or (task.create_only and m.kind != "ClusterOperator"):
            return
        if m.kind == "ClusterOperator" and m.group == "config.openshift.io":
            await self._wait_cluster_operator(task, attempt, node, live)
            return
        if self.mode is Mode.INSTALL or live is None:
            return
        if m.kind == "CustomResourceDefinition" and m.group == "apiextensions.k8s.io":
            await self._wait_crd(task, live)
            return
        checks = {("apps", "Deployment"): check_deployment, ("batch", "Job"): check_job}
        check = checks.get((m.group, m.kind))
        if check is not None and (err := check(live)) is not None:
            raise err

    async def _wait_crd(self, task: Task, live: dict) -> None:
        name = task.manifest.name
        ref = Ref(task.manifest.group, task.manifest.kind, "", name)
        while check_crd(live) is not None:
            # Mark, then read: ``live`` (the apply's answer) may be older than the watch event that
            # said Established, and a wait from a mark taken after that event would never end.
            mark = self.crd_notifier.mark(name)
            live = await self.cluster.get(ref) or {}
            if check_crd(live) is None:
                return
            if not await self.crd_notifier.wait_change(name, mark, 30.0):
                raise ApiError(ApiErrorKind.TIMEOUT, f"CustomResourceDefinition {name} is not Established", ref)
            live = await self.cluster.get(ref) or {}

    def _mutator(self, inject: Mutator | None, task: Task) -> Mutator | None:
        """What cvo adds to the manifest: OPERATOR_CONDITION_NAME, and the zero values Go would send."""
        zeros = self._zero_values.get((task.manifest.group, task.manifest.kind))
        if zeros is None:
            return inject

        def mutate(obj: dict) -> dict:
            obj = fill_required(obj, zeros)
            return inject(obj) if inject is not None else obj

        return mutate

    def _trap_hint(self, task: Task) -> str:
        """The trap openshift/enhancements dev-guide/cluster-version-operator/dev/clusteroperator.md warns of: the operator that must report this ClusterOperator is applied after it."""
        later = [d for d in self._operator_deployments.get(task.manifest.name, [])
                 if self._index.get(id(d), 0) > task.index]
        if not later:
            return ""
        d = later[0]
        return (f"its operator's Deployment {d.namespace}/{d.name} ({d.path}) is task {self._index[id(d)]}, after "
                f"this one: it is never applied while the sweep waits here, so this wait cannot end "
                f"(cvo lint: clusteroperator-before-operator)")

    async def _wait_cluster_operator(self, task: Task, attempt: _Attempt, node: int | None = None,
                                     applied: dict | None = None) -> None:
        """Until the operator is done (or only reports a Degraded that an install tolerates).

        Each check uses the ClusterOperator as the watch delivered it (an informer's cache, as the CVO's
        checks do); before the watch has delivered anything of it, the object the apply just created or
        read (``applied``), once; otherwise it reads it."""
        name = task.manifest.name
        versions = operator_versions(task.manifest)
        if not versions:
            raise no_versions_error(name)
        ref = Ref(*CLUSTER_OPERATOR, "", name)
        self.co_start_times.setdefault(name, self.clock.now())
        try:
            while True:
                mark = self.co_notifier.mark(name)
                live = self.co_notifier.cached(name)
                if live is None and applied is not None and self.co_notifier.running \
                        and not self.co_notifier.delivered(name):
                    live = applied  # nothing newer can have been delivered: a change now wakes the wait
                applied = None
                if live is None:
                    live = await self.cluster.get(ref)
                if live is None:
                    raise ApiError(ApiErrorKind.NOT_FOUND, f'clusteroperators.config.openshift.io "{name}" not found', ref)
                error = check_operator_health(name, versions, live, self.mode)
                if error is not None and (hint := self._trap_hint(task)):
                    error.nested = f"{error.nested}; {hint}"
                if error is None:
                    if name in self.progress.waiting:
                        waited = self.clock.now() - self.progress.waiting[name].since
                        self.emit("operator.ready", operator=name, waited=waited.total_seconds(), task=str(task),
                                  node=node)
                    started = self.co_start_times.pop(name, None)
                    self.emit("operator.done", operator=name,  # for the update-duration records
                              started=to_rfc3339(started or self.clock.now()))
                    return
                if error.effect is Effect.REPORT:
                    attempt.report_errors.append(error)
                    self.emit("operator.degraded", operator=name, message=error.message, nested=error.nested,
                              task=str(task), node=node)
                    return
                previous = self.progress.waiting.get(name)
                if previous is None or previous.error.reason != error.reason or previous.error.nested != error.nested:
                    since = previous.since if previous else self.clock.now()
                    self.progress.waiting[name] = Waiting(str(task), name, since, error)
                    self.emit("task.waiting", task=str(task), operator=name, reason=error.reason,
                              message=error.message, nested=error.nested, node=node)
                    await self._write_status(force=True)
                await self.co_notifier.wait_change(name, mark, None)
        except asyncio.CancelledError:
            if name in self.progress.waiting:
                attempt.interrupted_waits[name] = self.progress.waiting[name].error
            raise
        finally:
            self.progress.waiting.pop(name, None)

