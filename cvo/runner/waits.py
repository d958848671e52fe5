"""What the sync worker waits for, each wait driven by a watch: an applied object's health, a ClusterOperator
reaching its release, and (install) the payload's Namespace or CRD that another node applies.

The applying side is :mod:`cvo.runner.tasks`; this is the waiting side (kapp's ``waiting_changes.go`` beside
``applying_changes.go``).  Health checks come from the registry of :mod:`cvo.runner.health`.

A ClusterOperator wait is driven by the watch until the operator reports the expected versions,
``Available=True`` and ``Degraded=False``: deliberately better than the CVO, which fails the round and
re-checks after a back-off (pkg/cvo/sync_worker.go, PR #560); here dependents start as soon as the
operator is ready.  A dependency wait is cvo's too (see :meth:`Waits.dependency`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from cvo.clock import Clock, to_rfc3339
from cvo.cluster.api import CLUSTER_OPERATOR, ApiError, ApiErrorKind, Cluster, Ref
from cvo.cluster.informer import Informer, established_key, operator_health_key
from cvo.cluster.intercept import crd_establisher
from cvo.payload.errors import Effect, UpdateError
from cvo.payload.graph import Mode, Task, operator_versions
from cvo.payload.loader import Release
from cvo.payload.manifest import Manifest
from cvo.payload.operators import operator_deployments
from cvo.runner.attempt import Attempt
from cvo.runner.early_crds import CRD, CrdIndex, payload_crds
from cvo.runner.events import Progress, Waiting
from cvo.runner.health import HealthCheck, check_for_manifest, check_operator_health, no_versions_error
from cvo.runner.sweep_events import Emit, OperatorDegraded, OperatorDone, OperatorReady, TaskWaiting

# How long an install task waits for a CRD or Namespace of the same payload that the attempt has not
# applied yet (it runs in parallel, in another node), before the error counts as a normal failure.
DEPENDENCY_WAIT = 60.0
DEPENDENCY_WAITS = 5  # per task and attempt: a dependency that "appears" and still fails is not waited for again
CRD_RECHECK = 2.0  # seconds between looks at discovery while a custom resource waits for its CRD
NAMESPACE = ("", "Namespace")

Report = Callable[[], Awaitable[None]]  # a forced status report (a wait started or changed)


def _exists(obj: dict[str, Any]) -> bool:
    return True  # a Namespace watch wakes waiters when one appears (or goes), not on each change


class Waits:
    """The watches of one sweep (ClusterOperators, CRDs, and at install Namespaces) and the waits on them.

    ``cluster`` should ride out an outage for the watches' first lists (:func:`cvo.cluster.persist.steady`)."""

    def __init__(self, cluster: Cluster, watched: Cluster, release: Release, mode: Mode, clock: Clock,
                 progress: Progress, emit: Emit, report: Report) -> None:
        self.cluster = cluster
        self.release = release
        self.mode = mode
        self.clock = clock
        self.progress = progress
        self.emit = emit
        self.report = report
        # It keeps the ClusterOperators it delivers: their waits check them as the CVO does, from an
        # informer's cache, instead of reading the operator on each report.
        self.operators = Informer(watched, *CLUSTER_OPERATOR, key=operator_health_key, keep_objects=True)
        # No baseline list: it would decode every CRD at once (the CRD waits mark, then read).
        self.crds = Informer(watched, *CRD, key=established_key, baseline=False)
        self.namespace_events = Informer(watched, *NAMESPACE, key=_exists)
        # Namespaces there now, from the watch (and its baseline list): an object waiting for its namespace
        # learns from it, as the CVO's informers would tell it, instead of reading the namespace each time.
        self._namespaces: set[str] = set()
        self.namespace_events.listeners.append(
            lambda name, obj: self._namespaces.add(name) if obj is not None else self._namespaces.discard(name))
        self._payload_namespaces = {m.name: m for m in release.manifests if (m.group, m.kind) == NAMESPACE}
        self._payload_crds: CrdIndex | None = None  # built on first need
        self._operator_deployments = operator_deployments(release.manifests)
        self._index = {id(m): i for i, m in enumerate(release.manifests, start=1)}
        self.co_start_times: dict[str, datetime] = {}  # the CVO's COUpdateStartTimes
        self._watched = watched
        self._watches: dict[tuple[str, str], Informer] = {}  # other kinds whose health checks wait

    async def start(self) -> None:
        await self.operators.start()
        await self.crds.start()
        if self.mode is Mode.INSTALL:
            await self.namespace_events.start()

    async def stop(self) -> None:
        for notifier in (self.operators, self.crds, self.namespace_events, *self._watches.values()):
            await notifier.stop()
        self._watches.clear()

    def crd_index(self) -> CrdIndex:
        if self._payload_crds is None:
            self._payload_crds = payload_crds(self.release.manifests)
        return self._payload_crds

    # --- install: objects that need a CRD or Namespace the same attempt applies --------------------

    def missing_namespace(self, task: Task, attempt: Attempt) -> Manifest | None:
        """Install mode: the payload's Namespace that ``task``'s object goes into, when the namespace watch
        (listed at start, then followed) says it is not there yet and this attempt applies it; ``None``
        otherwise."""
        m = task.manifest
        if self.mode is not Mode.INSTALL or task.delete or not m.namespace or not self.namespace_events.running \
                or m.namespace in self._namespaces:
            return None
        namespace = self._payload_namespaces.get(m.namespace)
        return namespace if namespace is not None and namespace is not m and id(namespace) not in attempt.unapplied \
            else None

    def dependency(self, task: Task, err: ApiError) -> Manifest | None:
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
            dependency = self.crd_index().get((m.group, m.kind, m.version))
        elif err.kind is ApiErrorKind.NOT_FOUND and m.namespace and err.namespace_missing == m.namespace:
            dependency = self._payload_namespaces.get(m.namespace)
        return dependency if dependency is not m else None

    async def dependency_ready(self, dependency: Manifest, attempt: Attempt, task: Task) -> bool:
        """Wait until ``dependency`` is there (a CRD: Established, so that ``task``'s kind is served);
        False if it will not be in this attempt.

        For a CRD the question is asked of discovery (``serves``), which the CRD watch keeps current
        on a real cluster: no read of the CRD for every object that waits for it."""
        crd = (dependency.group, dependency.kind) == CRD
        notifier = self.crds if crd else self.namespace_events
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
                if (establisher := crd_establisher(self.cluster)) is not None:
                    await establisher.establish(dependency.name)  # a write: through the fence
            elif self.namespace_events.running:
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

    def unapplied(self, tasks: list[Task], attempt: Attempt) -> None:
        """A node stopped: its remaining tasks will not run; wake whoever waits on one of them."""
        for task in tasks:
            attempt.unapplied.add(id(task.manifest))
            m = task.manifest
            if (m.group, m.kind) == CRD:
                self.crds.poke(m.name)
            elif (m.group, m.kind) == NAMESPACE:
                self.namespace_events.poke(m.name)

    # --- health -----------------------------------------------------------------------------------

    async def healthy(self, task: Task, live: dict[str, Any] | None, attempt: Attempt, node: int | None) -> None:
        """Until the applied object is done: a ClusterOperator at its release, or what the object's health
        check (:func:`cvo.runner.health.check_for_manifest`) says; raises the check's error."""
        m = task.manifest
        if task.delete or (task.create_only and m.kind != "ClusterOperator"):
            return
        if (m.group, m.kind) == CLUSTER_OPERATOR:
            await self.cluster_operator(task, attempt, node, live)
            return
        check, always = check_for_manifest(m)
        if check is None or (self.mode is Mode.INSTALL and not always) or live is None:
            return
        await self._until_healthy(task, live, check)

    async def _until_healthy(self, task: Task, live: dict[str, Any], check: HealthCheck) -> None:
        """One look, or (a check that waits) until healthy on the kind's watch, at most ``check.wait`` between
        changes."""
        error = check.check(live)
        if error is None:
            return
        if check.wait is None:
            raise error
        m = task.manifest
        watch = await self._watch_of(m.group, m.kind)
        ref = Ref(m.group, m.kind, m.namespace or "", m.name)
        while True:
            # Mark, then read: ``live`` (the apply's answer) may be older than the watch event that
            # said it is healthy, and a wait from a mark taken after that event would never end.
            mark = watch.mark(m.name)
            error = check.check(await self.cluster.get(ref) or {})
            if error is None:
                return
            if not await watch.wait_change(m.name, mark, check.wait):
                raise error

    async def _watch_of(self, group: str, kind: str) -> Informer:
        """The watch of a kind whose health check waits (started on first need, stopped with the others)."""
        if (group, kind) == CRD:
            return self.crds
        watch = self._watches.get((group, kind))
        if watch is None:
            watch = self._watches[(group, kind)] = Informer(self._watched, group, kind, baseline=False)
            await watch.start()
        return watch

    def _trap_hint(self, task: Task) -> str:
        """The operator that must report this ClusterOperator is applied after it: the wait cannot end."""
        later = [d for d in self._operator_deployments.get(task.manifest.name, [])
                 if self._index.get(id(d), 0) > task.index]
        if not later:
            return ""
        d = later[0]
        return (f"its operator's Deployment {d.namespace}/{d.name} ({d.path}) is task {self._index[id(d)]}, after "
                f"this one: it is never applied while the sweep waits here, so this wait cannot end "
                f"(cvo lint: clusteroperator-before-operator)")

    async def cluster_operator(self, task: Task, attempt: Attempt, node: int | None = None,
                               applied: Mapping[str, Any] | None = None) -> None:
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
                mark = self.operators.mark(name)
                live = self.operators.cached(name)
                if live is None and applied is not None and self.operators.running \
                        and not self.operators.delivered(name):
                    live = dict(applied)  # nothing newer can have been delivered: a change now wakes the wait
                applied = None
                if live is None:
                    live = await self.cluster.get(ref)
                if live is None:
                    raise ApiError(ApiErrorKind.NOT_FOUND, f'clusteroperators.config.openshift.io "{name}" not found', ref)
                error = check_operator_health(name, versions, live, self.mode)
                if error is not None and (hint := self._trap_hint(task)):
                    error.nested = f"{error.nested}; {hint}"
                if error is None:
                    self._operator_done(name, task, node)
                    return
                if error.effect is Effect.REPORT:
                    attempt.report_errors.append(error)
                    self.emit(OperatorDegraded, operator=name, message=error.message, nested=error.nested,
                              task=str(task), node=node)
                    return
                await self._waiting(name, task, node, error)
                await self.operators.wait_change(name, mark, None)
        except asyncio.CancelledError:
            if name in self.progress.waiting:
                attempt.interrupted_waits[name] = self.progress.waiting[name].error
            raise
        finally:
            self.progress.waiting.pop(name, None)

    def _operator_done(self, name: str, task: Task, node: int | None) -> None:
        if name in self.progress.waiting:
            waited = self.clock.now() - self.progress.waiting[name].since
            self.emit(OperatorReady, operator=name, waited=waited.total_seconds(), task=str(task), node=node)
        started = self.co_start_times.pop(name, None)
        self.emit(OperatorDone, operator=name,  # for the update-duration records
                  started=to_rfc3339(started or self.clock.now()))

    async def _waiting(self, name: str, task: Task, node: int | None, error: UpdateError) -> None:
        """Record why ``name`` is waited on; a new or changed reason is reported at once."""
        previous = self.progress.waiting.get(name)
        if previous is not None and previous.error.reason == error.reason and previous.error.nested == error.nested:
            return
        since = previous.since if previous else self.clock.now()
        self.progress.waiting[name] = Waiting(str(task), name, since, error)
        self.emit(TaskWaiting, task=str(task), operator=name, reason=error.reason,
                  message=error.message, nested=error.nested, node=node)
        await self.report()
