"""Retrying transient API errors until a command's time budget (its ``--timeout``) runs out.

Inside a sweep the CVO's semantics rule: a task retries with the CVO's back-off and then fails with
the CVO's reason (``UpdatePayloadClusterDown`` …), and the attempt is retried after the attempt
back-off (pkg/payload/task.go `Task.Run`, pkg/cvo/sync_worker.go `SyncWorker.Start`).  Everything around the sweep must not end a command on one
transient error: connecting and discovery, the reads a command makes, the upgrade's gate checks,
the ClusterVersion's spec writes and the status writes that must land, the simulated operators.
Those retry with a capped exponential back-off (0.5 s doubling to 5 s, 20 % jitter, or the server's
``Retry-After``) until the :class:`Budget` runs out, and then fail with the last error
(:class:`GaveUp`, exit 1).

Transient is :data:`cvo.cluster.api.TRANSIENT`: TIMEOUT (503/504, connection refused or reset,
timeouts), SERVER_TIMEOUT (429, ServerTimeout) and INTERNAL (500).  The Kubernetes backend already
retries each request for about 6 s (:class:`cvo.cluster.kube.RetryPolicy`); this layer sits above
it, for longer outages.

A ``Conflict`` is not transient: the same write with the same resourceVersion cannot succeed.
:func:`reread_on_conflict` is the other loop, deliberately: it retries a write that reads the
object again, re-applies its intent and skips the write when the intent is already there.  A write
whose answer was lost may have landed, so after a transient failure :class:`PersistentCluster`
treats an ``AlreadyExists`` or a ``Conflict`` as a question (:mod:`cvo.cluster.landed`), not as an error.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar, overload

from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Object, ReadOnlyCluster, Ref, is_transient
from cvo.cluster.intercept import Call, Interceptor, ReadInterceptor
from cvo.cluster.landed import LANDED_KINDS, intent_landed
from cvo.log import get_logger

log = get_logger("cvo.retry")
T = TypeVar("T")

INITIAL_DELAY = 0.5  # seconds
MAX_DELAY = 5.0
RETRY_AFTER_CAP = 30.0
JITTER = 0.2
WARN_EVERY = 5  # a warning on the first failure and then every fifth; debug in between


# The deadline of the innermost persist() running in this task: a backend's own retries of one
# request stop there too, so that a command never overruns its budget by a backend's schedule.
_DEADLINE: ContextVar[float | None] = ContextVar("cvo_retry_deadline", default=None)


def retry_deadline() -> float | None:
    """The loop time at which the caller's budget runs out (``None``: no :func:`persist` is running)."""
    return _DEADLINE.get()


@dataclass(frozen=True)
class Budget:
    """Until when a command keeps retrying, on the running loop's clock; ``deadline=None``: for ever."""

    started: float
    deadline: float | None

    @classmethod
    def of(cls, seconds: float | None) -> Budget:
        """A budget of ``seconds`` from now (``None``: unlimited).  Call it with the command's loop running."""
        now = asyncio.get_running_loop().time()
        return cls(now, None if seconds is None else now + max(0.0, seconds))

    def remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - asyncio.get_running_loop().time()

    def elapsed(self) -> float:
        return asyncio.get_running_loop().time() - self.started


class GaveUp(ApiError):
    """A transient error that lasted longer than the command's budget; its kind and ref are the last error's."""

    def __init__(self, last: ApiError, what: str, elapsed: float) -> None:
        super().__init__(last.kind, f"{what}: still failing after {_seconds(elapsed)} of retries: {last}", last.ref,
                         last.retry_after, namespace_missing=last.namespace_missing)
        self.last = last
        self.elapsed = elapsed


def _seconds(value: float) -> str:
    value = max(0.0, value)
    if value < 120:
        return f"{value:.0f}s"
    return f"{int(value // 60)}m{int(value % 60):02d}s"


async def persist(call: Callable[[], Awaitable[T]], budget: Budget, what: str) -> T:
    """``call()``, again after a back-off while it fails with a transient error, until ``budget`` runs out.

    The last attempt is made at the deadline at the latest; its error, as :class:`GaveUp`, is raised.
    Other errors are raised at once.
    """
    delay = INITIAL_DELAY
    failures = 0
    while True:
        token = _DEADLINE.set(budget.deadline)
        try:
            return await call()
        except ApiError as err:
            if not is_transient(err):
                raise
            failures += 1
            remaining = budget.remaining()
            if remaining is not None and remaining <= 0:
                raise GaveUp(err, what, budget.elapsed()) from None
            wait = delay * (1 + JITTER * (2 * random.random() - 1))
            if err.retry_after is not None:
                wait = min(err.retry_after, RETRY_AFTER_CAP)
            if remaining is not None:
                wait = min(wait, remaining)
            fields = {"request": what, "error": str(err), "kind": err.kind.value, "failures": failures,
                      "retry_in": round(wait, 2)}
            if failures % WARN_EVERY == 1:
                log.warning("the cluster is not answering; retrying", **fields)
            else:
                log.debug("the cluster is not answering; retrying", **fields)
            await asyncio.sleep(wait)
            delay = min(delay * 2, MAX_DELAY)
        finally:
            _DEADLINE.reset(token)


async def reread_on_conflict(write: Callable[[], Awaitable[T]], budget: Budget | None, what: str) -> T:
    """``write()`` again after a Conflict, until ``budget`` runs out (``None``: three tries in all).

    ``write`` must read the object, re-apply its intent to what it read, and skip the write when
    the intent is already there (a write that landed although its answer was lost).  Only a Conflict
    is read again here: a transient error is :func:`persist`'s (or the backend's) to retry.
    """
    conflicts = 0
    while True:
        try:
            return await write()
        except ApiError as err:
            if err.kind is not ApiErrorKind.CONFLICT:
                raise
            conflicts += 1
            remaining = budget.remaining() if budget is not None else (None if conflicts < 3 else 0.0)
            if remaining is not None and remaining <= 0:
                raise
            log.debug("write conflicted; reading again", request=what, conflicts=conflicts)
            if conflicts > 1:  # someone keeps writing: do not spin
                wait = min(0.05 * 2 ** min(conflicts, 6), 2.0)
                await asyncio.sleep(wait if remaining is None else min(wait, remaining))


class PersistentReader(ReadInterceptor):
    """A :class:`~cvo.cluster.api.ReadOnlyCluster` whose reads ride out transient errors within a
    :class:`Budget`.  Watches pass through (the backends resume their own watches)."""

    def __init__(self, cluster: ReadOnlyCluster, budget: Budget) -> None:
        super().__init__(cluster)
        self.budget = budget

    async def intercept_read(self, call: Call, send: Callable[[], Awaitable[T]]) -> T:
        return await persist(send, self.budget, call.what)


class PersistentCluster(Interceptor):
    """A :class:`~cvo.cluster.api.Cluster` whose calls ride out transient errors within a :class:`Budget`.

    Watches pass through (the backends resume their own watches).  A write that failed
    transiently and then gets AlreadyExists or Conflict is checked: if the live object holds what
    was sent, the earlier attempt landed and the live object is the result.
    """

    def __init__(self, cluster: Cluster, budget: Budget) -> None:
        super().__init__(cluster)
        self.budget = budget

    async def intercept_read(self, call: Call, send: Callable[[], Awaitable[T]]) -> T:
        return await persist(send, self.budget, call.what)

    async def intercept_write(self, call: Call, send: Callable[[], Awaitable[T]]) -> T:
        return await persist(send, self.budget, call.what)

    async def intercept_object_write(self, call: Call, obj: Object, send: Callable[[], Awaitable[Object]]) -> Object:
        ref = Ref.of(obj)
        uncertain = False  # an earlier attempt failed in a way that may have let it land

        async def attempt() -> Object:
            nonlocal uncertain
            try:
                return await send()
            except ApiError as err:
                # After a transient failure, AlreadyExists or Conflict may be the lost write itself.
                if uncertain and err.kind in LANDED_KINDS:
                    live = await self.get(ref)
                    if intent_landed(call.verb, obj, live):
                        assert live is not None
                        log.info("a write whose answer was lost had landed", request=call.what)
                        return live
                if is_transient(err):
                    uncertain = True
                raise

        return await persist(attempt, self.budget, call.what)


@overload
def steady(cluster: Cluster, budget: Budget | None) -> Cluster: ...


@overload
def steady(cluster: ReadOnlyCluster, budget: Budget | None) -> ReadOnlyCluster: ...


def steady(cluster: Cluster | ReadOnlyCluster, budget: Budget | None) -> Cluster | ReadOnlyCluster:
    """``cluster`` retrying within ``budget`` (``None``: as it is, one call each).  A read-only cluster
    stays read-only."""
    if budget is None or isinstance(cluster, PersistentCluster | PersistentReader):
        return cluster
    if isinstance(cluster, Cluster):
        return PersistentCluster(cluster, budget)
    return PersistentReader(cluster, budget)
