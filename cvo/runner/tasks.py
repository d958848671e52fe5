"""Running one task: apply its manifest with the CVO's per-task back-off, then wait until it is done.

``Task.Run`` (pkg/payload/task.go) calls the builder up to the back-off's steps; an ``UpdateError`` (a
ClusterOperator that is not ready, a health check's verdict) ends the task at once, an API error is
retried.  cvo adds the install's dependency waits (:meth:`cvo.runner.waits.Waits.dependency`): an error
caused by a Namespace or CRD that another node of the same attempt applies waits for it instead of using
up a retry.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cvo.cluster.api import ApiError, ApiErrorKind, Cluster
from cvo.payload.errors import UpdateError
from cvo.payload.graph import Mode, Task
from cvo.payload.loader import Release
from cvo.payload.schema import fill_required, required_zero_values
from cvo.runner.apply import ApplyOutcome, DeleteTracker, Mutator, apply_task
from cvo.runner.attempt import Attempt
from cvo.runner.backoff import task_backoff
from cvo.runner.operator_conditions import OperatorConditionManager
from cvo.runner.reasons import wrap_apply_error
from cvo.runner.sweep_events import (
    Emit,
    TaskApplied,
    TaskDependency,
    TaskDone,
    TaskFailed,
    TaskRetry,
    TaskStarted,
)
from cvo.runner.waits import DEPENDENCY_WAITS, Waits


class TaskRunner:
    def __init__(self, cluster: Cluster, release: Release, mode: Mode, waits: Waits, olm: OperatorConditionManager,
                 deletes: DeleteTracker, emit: Emit) -> None:
        self.cluster = cluster
        self.mode = mode
        self.waits = waits
        self.olm = olm
        self.deletes = deletes
        self.emit = emit
        self._zero_values = required_zero_values(release.manifests)

    async def apply(self, task: Task, inject: Mutator | None = None) -> ApplyOutcome:
        """One apply of ``task``'s manifest (a delete as it is; anything else with what cvo adds to it)."""
        mutate = None if task.delete else self._mutator(inject, task)
        return await apply_task(self.cluster, task, self.mode, self.deletes, mutate)

    async def run(self, task: Task, attempt: Attempt, node: int | None = None) -> None:
        calls, delays = task_backoff(self.mode).schedule()
        last: Exception | None = None
        index = waits = 0
        self.emit(TaskStarted, task=str(task), node=node)
        namespace = self.waits.missing_namespace(task, attempt)
        while index < calls:
            try:
                if namespace is not None:
                    # The namespace watch says the payload's namespace is not there yet: wait for it
                    # instead of sending a create that can only fail (NotFound) and then waiting.
                    waits += 1
                    self.emit(TaskDependency, task=str(task), kind=namespace.kind, dependency=namespace.name,
                              error=ApiErrorKind.NOT_FOUND.value, seen="watch", node=node)
                    await self.waits.dependency_ready(namespace, attempt, task)
                    namespace = None
                outcome = await self._outcome(task, attempt)
                self.emit(TaskApplied, task=str(task), action=outcome.action, file=task.manifest.path, node=node)
                await self.waits.healthy(task, outcome.live, attempt, node)
                self.emit(TaskDone, task=str(task), node=node)
                return
            except UpdateError as err:
                self.emit(TaskFailed, task=str(task), reason=err.reason, message=err.message, nested=err.nested,
                          node=node)
                raise
            except ApiError as err:
                last = err
                dependency = self.waits.dependency(task, err) if waits < DEPENDENCY_WAITS else None
                if dependency is not None:
                    waits += 1
                    self.emit(TaskDependency, task=str(task), kind=dependency.kind, dependency=dependency.name,
                              error=err.kind.value, node=node)
                    if await self.waits.dependency_ready(dependency, attempt, task):
                        continue  # it is there now: apply again, without using up a retry
                index += 1
                self.emit(TaskRetry, task=str(task), error=err.kind.value, message=str(err), call=index, node=node)
                if index - 1 < len(delays):
                    await asyncio.sleep(delays[index - 1])
        assert last is not None
        error = wrap_apply_error(last, str(task), task.manifest.path)
        self.emit(TaskFailed, task=str(task), reason=error.reason, message=error.message, nested=error.nested,
                  node=node)
        raise error

    async def _outcome(self, task: Task, attempt: Attempt) -> ApplyOutcome:
        """The task's apply: the ClusterOperator this attempt just created, the CRD's early apply (its failure
        counts as this call's), or an apply now."""
        inject = None if task.delete else await self.olm.prepare(task.manifest)
        precreated = attempt.precreated.pop(id(task), None)
        if precreated is not None:
            return ApplyOutcome("created", precreated)
        early = attempt.early.pop(id(task), None)
        if early is not None:
            return await early
        return await self.apply(task, inject)

    def _mutator(self, inject: Mutator | None, task: Task) -> Mutator | None:
        """What cvo adds to the manifest: OPERATOR_CONDITION_NAME, and the zero values Go would send."""
        zeros = self._zero_values.get((task.manifest.group, task.manifest.kind))
        if zeros is None:
            return inject

        def mutate(obj: dict[str, Any]) -> dict[str, Any]:
            obj = fill_required(obj, zeros)
            return inject(obj) if inject is not None else obj

        return mutate
