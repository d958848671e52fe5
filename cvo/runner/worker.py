"""The sync worker's attempt loop: apply a payload's task graph until it is done (pkg/cvo/sync_worker.go).

One *attempt* walks the whole graph with the mode's parallelism under the apply timeout (install:
1× the reconcile interval, update and reconcile: 2×).  A failed attempt is retried after the CVO's
back-off (:func:`cvo.runner.backoff.attempt_backoff`), woken early when a ClusterOperator changes; every
attempt re-applies everything, which is cheap for unchanged objects.  A task is applied and retried by
:mod:`cvo.runner.tasks` and waited on by :mod:`cvo.runner.waits`; the worker reports its progress to the
one status writer (:mod:`cvo.runner.status_writer`) as ``SyncWorkerStatus`` is reported to ``syncStatus``.

    sweep.started → attempt.started → nodes … → ok ──► Completed (install: Reconciling) → sweep.completed
                          ▲                  └─ failed ─► back-off (woken by a ClusterOperator) ─┐
                          └──────────────────────────────────────────────────────────────────────┘
                                                  deadline ─► sweep.timeout
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from datetime import datetime

import networkx as nx

from cvo.clock import Clock
from cvo.cluster.api import ApiError, Cluster, is_transient
from cvo.cluster.persist import steady
from cvo.operators.workloads import WorkloadReporter
from cvo.payload.arch import go_arch
from cvo.payload.capabilities import Capabilities, still_enabled
from cvo.payload.conditions import find_condition
from cvo.payload.errors import UpdateError, summarize
from cvo.payload.fields import dig, entries
from cvo.payload.filters import ApplyFilter, Override
from cvo.payload.graph import Mode, Task, build_graph, make_tasks, max_workers
from cvo.payload.loader import Release
from cvo.payload.workloads import specs_of
from cvo.runner.apply import ApplyOutcome, DeleteTracker, precreate_cluster_operator
from cvo.runner.attempt import CONTEXT_REASON, Attempt
from cvo.runner.backoff import attempt_backoff
from cvo.runner.blockers import UpgradeBlockers
from cvo.runner.durations import DurationRecorder, record_progress, save_record
from cvo.runner.early_crds import start_early_applies
from cvo.runner.events import Fanout, Progress, Reporter
from cvo.runner.graph_runner import run_graph
from cvo.runner.node_durations import NodeRecorder
from cvo.runner.operator_conditions import OperatorConditionManager
from cvo.runner.reasons import wrap_apply_error
from cvo.runner.report_filter import Report
from cvo.runner.status_writer import StatusWriter
from cvo.runner.sweep import SweepOptions, SweepResult, WrongRelease
from cvo.runner.sweep_events import (
    AttemptFailed,
    AttemptStarted,
    AttemptWoken,
    Kind,
    NodeBlocked,
    NodeDone,
    NodeError,
    NodeFailed,
    NodeStarted,
    P,
    StatusUnwritten,
    SweepCompleted,
    SweepStarted,
    SweepTimeout,
    TaskSkipped,
)
from cvo.runner.tasks import TaskRunner
from cvo.runner.waits import Waits
from cvo.status.clusterversion import SyncStatus
from cvo.status.parts import Accepted, StatusPart, Sync


async def _cancel_all(futures: list[asyncio.Future[ApplyOutcome]]) -> None:
    """Cancel what is still running and collect every outcome (nobody else will)."""
    for future in futures:
        future.cancel()
    await asyncio.gather(*futures, return_exceptions=True)


class Worker:
    """``status``: the writer this sweep reports to (an upgrade shares one across its sweeps, as the CVO's
    sync worker keeps one ``statusWrapper``); by default a writer of its own."""

    blocked = ""  # a sweep never waits for preconditions (cvo.runner.decide.Runner; an upgrade's may)

    def __init__(self, cluster: Cluster, release: Release, mode: Mode, reporter: Reporter, clock: Clock,
                 options: SweepOptions | None = None, status: StatusWriter | None = None) -> None:
        self.cluster = cluster
        self.release = release
        self.mode = mode
        self.reporter = reporter
        self.clock = clock
        self.options = options or SweepOptions()
        base = self.options.capabilities or ApplyFilter()
        self.capabilities = Capabilities(base.enabled_capabilities, frozenset(), base.known_capabilities)
        self.progress = Progress(version=release.version, mode=str(mode))
        self.deletes = DeleteTracker()
        self.status = status or StatusWriter(cluster, clock, throttle=self.options.status_throttle, reporter=reporter,
                                             budget=self.options.budget)
        self.olm = OperatorConditionManager(cluster, release.manifests, create_first=mode is Mode.INSTALL)
        watched = steady(cluster, self.options.budget)  # the watches' first lists ride out an outage
        self.waits = Waits(cluster, watched, release, mode, clock, self.progress, self.emit,
                           lambda: self._report(force=True))
        self.tasks = TaskRunner(cluster, release, mode, self.waits, self.olm, self.deletes, self.emit)
        self.blockers = UpgradeBlockers(cluster, self.waits.operators, self.olm, self.deletes)
        self._rng = random.Random(self.options.seed)
        self._failure: UpdateError | None = None
        self._failure_errors: list[UpdateError] = []  # what ``_failure`` summarises
        self._completed = 0

    def emit(self, kind: Kind[P], /, *args: P.args, **fields: P.kwargs) -> None:
        self.reporter.emit(kind(self.clock.now(), *args, **fields))

    # --- reporting --------------------------------------------------------------------------

    async def _report(self, force: bool = False, failure: UpdateError | None = None, completed: int | None = None,
                      must_land: bool = False, summarised: list[UpdateError] | None = None) -> None:
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
        if not self.status.filter.accept(report, self.clock.now()):
            return  # keep showing the earlier failure as it was written
        self.progress.last_progress = self.status.filter.last_progress
        if not failed and self._failure is not None:
            self._failure, self._failure_errors = None, []
        if not force and failure is None and not self.status.due():
            return  # throttled: do not even summarise the waits (a thousand tasks, a thousand calls)
        waiting = [w.error for w in self.progress.waiting.values()]
        current: UpdateError | None
        if failure is not None:
            current, errors = failure, list(summarised) if summarised else [failure]
        elif waiting:
            current, errors = summarize(waiting), waiting
        else:
            current, errors = None, []
        accepted = self.options.release_accepted or self.release_accepted()
        parts: list[StatusPart] = [accepted, Sync(SyncStatus(
            version=self.release.version, image=self.release.image, done=self.progress.done,
            total=self.progress.total, completed=completed, reconciling=self.mode is Mode.RECONCILE,
            failure=current, errors=errors, initial=self.mode is Mode.INSTALL,
            co_start_times=dict(self.waits.co_start_times), accepted_risks=self.options.accepted_risks,
            verified=self.options.verified,
            capabilities=self.capabilities, version_hash=self.release.manifest_hash,
            channels=self.release.metadata.channels if self.release.metadata else (),
            url=self.release.metadata.url if self.release.metadata else ""))]
        if force or must_land:
            parts.append(await self.blockers.inputs())  # what blocks upgrades, on every edge
        await self.status.report(*parts, force=force, must_land=must_land)

    def release_accepted(self) -> Accepted:
        return payload_loaded(self.release)

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
        # and its nodes' part (the machine-config operator's pools), into the same record
        nodes = NodeRecorder(self.cluster, self.clock, (recorder.record.version, recorder.record.started_at)) \
            if self.mode is Mode.UPDATE else None
        try:
            if nodes is not None:
                await nodes.start()
            result = await self._sweep()
        finally:
            self.reporter = reporter
            if progress is not None:
                progress.cancel()
                await asyncio.gather(progress, return_exceptions=True)
            if nodes is not None:
                await nodes.stop()
        await save_record(self.cluster, recorder.record)
        return result

    async def _sweep(self) -> SweepResult:
        loop = asyncio.get_running_loop()
        started = self.clock.now()
        if self.mode in (Mode.RECONCILE, Mode.INSTALL):
            await self._check_current_release()
        deadline = None if self.options.timeout is None else loop.time() + self.options.timeout
        await self.status.ensure()
        self.capabilities = await self._capabilities()
        await self.waits.start()
        await self.olm.start_sync()
        workloads = self._workload_reporter()
        if workloads is not None:
            await workloads.start()
        attempt_no = self.options.attempt
        attempts = 0
        consecutive_errors = 0
        self.emit(SweepStarted, version=self.release.version, image=self.release.image, mode=str(self.mode),
                  total=len(self.release.manifests))
        try:
            while True:
                attempts += 1
                attempt = await self._run_attempt(attempt_no, deadline)
                if not attempt.errors:
                    return await self._completed_sweep(attempt, attempts, started)
                real = [e for e in attempt.errors.values() if e.reason != CONTEXT_REASON]
                if real or self._failure is None:
                    # Cancellation and timeouts alone do not replace the failure (summarizeTaskGraphErrors).
                    self._failure_errors = real or list(attempt.errors.values())
                    self._failure = summarize(self._failure_errors)
                    await self._report(force=True, failure=self._failure, summarised=self._failure_errors)
                consecutive_errors += 1
                attempt_no += 1
                if deadline is not None and loop.time() >= deadline:
                    return await self._timed_out(attempts, started)
                delay = attempt_backoff(self.options.interval, consecutive_errors, self._rng)
                if deadline is not None:
                    delay = min(delay, max(0.0, deadline - loop.time()))
                self.emit(AttemptFailed, attempt=attempt.number + 1, reason=self._failure.reason if self._failure else "",
                          message=self._failure.message if self._failure else "", retry_in=round(delay, 1))
                mark = self.waits.operators.mark()
                if await self.waits.operators.wait_change(None, mark, delay):
                    self.emit(AttemptWoken, reason="ClusterOperator changed")
                if deadline is not None and loop.time() >= deadline:
                    return await self._timed_out(attempts, started)
        finally:
            if workloads is not None:
                await workloads.stop()
            await self.waits.stop()
            await self.olm.stop_sync()

    def _workload_reporter(self) -> WorkloadReporter | None:
        """The release's ClusterOperators derived from workloads (cvo/operators/workloads.py), written while the
        sweep runs; None when it has none."""
        specs, broken = specs_of(self.release.manifests)
        return WorkloadReporter(self.cluster, self.clock, specs, broken) if specs or broken else None

    async def _completed_sweep(self, attempt: Attempt, attempts: int, started: datetime) -> SweepResult:
        self._completed += 1
        self._failure, self._failure_errors = None, []
        await self._report(force=True, must_land=True)
        if attempt.report_errors:
            # Complete() then Errors(): the install is recorded as done, then the reported (Degraded)
            # errors show with Completed=0, still in install mode.
            failure = summarize(attempt.report_errors)
            await self._report(force=True, failure=failure, completed=0, must_land=True,
                               summarised=list(attempt.report_errors))
            self._failure, self._failure_errors = failure, list(attempt.report_errors)
        else:
            # As in the CVO, success moves the worker to Reconciling: "Cluster version is V".
            self.mode = Mode.RECONCILE
            await self._report(force=True, must_land=True)
        self.emit(SweepCompleted, version=self.release.version, attempts=attempts,
                  elapsed=(self.clock.now() - started).total_seconds())
        return await self._result(True, attempts, started, attempt.report_errors)

    async def _timed_out(self, attempts: int, started: datetime) -> SweepResult:
        self.emit(SweepTimeout, attempts=attempts, message=self._failure.message if self._failure else "")
        return await self._result(False, attempts, started, [])

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
        running = dig(cv, "status", "desired", "version")
        what = "reconcile" if self.mode is Mode.RECONCILE else "install"
        if self.mode is Mode.INSTALL:
            history = entries(dig(cv, "status", "history"))
            completed = next((h.get("version") for h in history if h.get("state") == "Completed"), None)
            running = completed or (history[0].get("version") if history else None)
        if running and running != self.release.version:
            raise WrongRelease(f"{what} of {self.release.version} refused: the cluster runs {running}, and "
                               f"only an upgrade (through its preconditions) may change the release")

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
            self.emit(StatusUnwritten, error=str(err))
        cv = await self.status.current()
        failing = find_condition(entries(dig(cv, "status", "conditions")), "Failing") or {}
        failure = self._failure
        message = str(failing.get("message", "")) if failing.get("status") == "True" and recorded else ""
        if not ok and not message:
            message = failure.message if failure else "the sweep did not finish"
        return SweepResult(
            ok=ok and not report, completed=ok, attempts=attempts, failure=failure, message=message,
            started=started, finished=self.clock.now(), cluster_version=cv, report_errors=report,
            done=self.progress.done, total=self.progress.total, last_progress=self.status.filter.last_progress,
        )

    async def _overrides(self) -> tuple[Override, ...]:
        cv = await self.status.current()
        return tuple(Override.from_dict(o) for o in entries(dig(cv, "spec", "overrides")))

    # --- one attempt ------------------------------------------------------------------------

    async def _run_attempt(self, number: int, deadline: float | None) -> Attempt:
        loop = asyncio.get_running_loop()
        attempt = Attempt(number)
        base = self.options.capabilities or ApplyFilter()
        apply_filter = ApplyFilter(enabled_capabilities=self.capabilities.enabled,
                                   known_capabilities=base.known_capabilities,
                                   overrides=await self._overrides(), feature_gates=base.feature_gates)
        tasks = make_tasks(self.release.manifests, self.mode, apply_filter)
        # What this attempt will not create (skipped, or deleted rather than applied): nobody waits for it.
        attempt.unapplied.update(id(t.manifest) for t in tasks if t.skip is not None or t.delete)
        graph = build_graph(tasks, self.mode, number)
        if number == self.options.attempt:
            self.waits.co_start_times.clear()  # payload.InitCOUpdateStartTimes at Attempt 0
        workers = self.options.max_workers or max_workers(self.mode, graph)
        self.progress.attempt = number
        self.progress.done = 0
        self.progress.total = len(tasks)
        self.progress.waiting.clear()
        self.emit(AttemptStarted, attempt=number + 1, nodes=graph.number_of_nodes(), workers=workers)
        await self._report(force=True)
        timeout = self.options.interval * (1 if self.mode is Mode.INSTALL else 2)
        attempt_deadline = loop.time() + timeout
        if deadline is not None:
            attempt_deadline = min(attempt_deadline, deadline)

        async def node_fn(node: int, node_tasks: list[Task]) -> None:
            await self._run_node(node, node_tasks, attempt, sorted(graph.predecessors(node)))

        if self.mode is Mode.INSTALL:
            attempt.early = start_early_applies(tasks, self.waits.crd_index(), self.tasks.apply)
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
                self.emit(NodeError, node=node, task=task, error=f"{type(error).__name__}: {error}")
        if result.cancelled or result.incomplete:
            for i, err in enumerate(attempt.interrupted_waits.values()):
                attempt.errors[-1 - i] = err
            if not attempt.errors:
                attempt.errors[-10**6] = UpdateError(
                    CONTEXT_REASON, f"update context deadline exceeded at {self.progress.done} of "
                    f"{self.progress.total}: {result.incomplete_message(graph)}")
        self._log_blocked(graph, result.errors)
        return attempt

    def _log_blocked(self, graph: nx.DiGraph[int], errors: dict[int, BaseException]) -> None:
        for node in errors:
            blocked = [n for n in nx.descendants(graph, node) if graph.nodes[n]["tasks"]]
            if blocked:
                self.emit(NodeBlocked, node=node, dependents=len(blocked))

    async def _run_node(self, node: int, tasks: list[Task], attempt: Attempt, after: list[int]) -> None:
        # runlevel, component and the nodes it ran after: what a timeline report needs (cvo report)
        first = tasks[0] if tasks else None
        self.emit(NodeStarted, node=node, tasks=len(tasks), runlevel=first.runlevel if first else None,
                  component=first.component if first else None, after=after)
        await self._precreate_cluster_operators(tasks, attempt)
        position = 0
        try:
            for index, task in enumerate(tasks):
                position = index
                self.progress.running[node] = str(task)
                if task.skip is not None:
                    self.emit(TaskSkipped, task=str(task), reason=task.skip, node=node)
                    continue
                await self.tasks.run(task, attempt, node)
                self.progress.done += 1
                await self._report()
        except UpdateError as err:
            self.emit(NodeFailed, node=node, reason=err.reason, message=err.message, nested=err.nested)
            self.waits.unapplied(tasks[position:], attempt)
            raise
        finally:
            self.progress.running.pop(node, None)
        self.emit(NodeDone, node=node)

    async def _precreate_cluster_operators(self, tasks: list[Task], attempt: Attempt) -> None:
        """The node's ClusterOperators, created before its tasks run (``precreateClusterOperators``); errors
        are ignored.  At install the created object is the task's outcome: it needs no read (the CVO's
        Initializing mode writes nothing there; its health check reads)."""
        for task in tasks:
            if task.skip is None and task.manifest.kind == "ClusterOperator" and not task.delete:
                with contextlib.suppress(ApiError, UpdateError):
                    created = await precreate_cluster_operator(self.cluster, task,
                                                               create_first=self.mode is Mode.INSTALL)
                    if created is not None and self.mode is Mode.INSTALL:
                        attempt.precreated[id(task)] = created


def payload_loaded(release: Release) -> Accepted:
    """``ReleaseAccepted=True`` for ``release`` (pkg/cvo/sync_worker.go ``loadUpdatedPayload``'s ``PayloadLoaded``)."""
    arch = (release.metadata.architecture if release.metadata else "") or go_arch()
    return Accepted("True", "PayloadLoaded",
                    f'Payload loaded version="{release.version}" image="{release.image}" architecture="{arch}"')
