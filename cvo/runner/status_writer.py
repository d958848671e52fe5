"""The one writer of the ClusterVersion's status, throttled like the CVO's status notifier.

Producers hand it typed parts (:mod:`cvo.status.parts`): the sync worker its report (``Sync``, as
``statusWrapper.Report`` hands ``SyncWorkerStatus`` to ``syncStatus`` in pkg/cvo/sync_worker.go and
pkg/cvo/status.go) and what blocks upgrades, the upgrade its preconditions' verdict, the controller a
release it could not load.  It keeps the latest part of each slot and applies them all, in order, to
the status it reads; nothing else writes the ClusterVersion's status.  The report filter
(``statusWrapper.Report``) is the writer's: the sweeps that share a writer share it.

A write happens at once on an edge (a failure appears, changes or clears; a ClusterOperator wait
starts; completion) and otherwise at most every ``throttle`` seconds; edges that come while a write
is under way are written together, with the newest state, once it is done.

Faults, as the CVO absorbs them (its status is written by the operator's sync loop, apart from the
sync worker, which a failed write never stops):

* A ``Conflict`` means someone else wrote the ClusterVersion: read it again and recompute the
  status from what was read; when it already says what this write would say (an earlier write
  landed although its answer was lost), nothing is written.
* A transient error during the sweep does not stop the sweep: the write is remembered and made
  again at the next report (or :meth:`StatusWriter.flush`).  A write that must land (the sweep's
  last) retries within the command's budget and raises the last error when it runs out.
* Reads fall back to the last ClusterVersion read when the server does not answer, as the CVO
  reads its informer's cache.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from cvo.clock import Clock
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, cv_ref, is_transient
from cvo.cluster.persist import Budget, persist, reread_on_conflict, steady
from cvo.log import get_logger
from cvo.objects import ClusterVersion
from cvo.runner.report_filter import ReportFilter
from cvo.status.clusterversion import cluster_version_object
from cvo.status.parts import StatusPart, merge

if TYPE_CHECKING:  # a command that only lists updates writes no sweep events: it need not import their catalogue
    from cvo.runner.events import Reporter

Parts = dict[str, StatusPart]

log = get_logger("cvo.status")


def _condition_key(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c.get("type", ""): (c.get("status", ""), c.get("reason", ""), c.get("message", ""))
            for c in status.get("conditions") or [] if isinstance(c, dict)}


class StatusWriter:
    """``budget``: how long writes that must land, and the first read, ride out a failing server
    (``None``: no retries beyond the backend's own, and a write's failure is raised).  ``gated``: the
    ClusterUpdateAcceptRisks gate, for the ``Invalid`` condition (:func:`cvo.status.parts.merge`)."""

    def __init__(self, cluster: Cluster, clock: Clock, throttle: float = 15.0, reporter: Reporter | None = None,
                 name: str = "version", budget: Budget | None = None, gated: bool | None = None) -> None:
        self.cluster = cluster
        # The ClusterUpdateAcceptRisks gate when the writer's owner knows it (the controller): then every write
        # validates the spec into the Invalid condition, as the CVO's sync does; None leaves that condition be.
        self.gated = gated
        self.clock = clock
        self.throttle = throttle
        self.reporter = reporter
        self.ref = cv_ref(name)
        self.budget = budget
        self.filter = ReportFilter()  # statusWrapper.Report: which sync reports are written
        self._parts: Parts = {}  # the latest part of each slot
        self._last_write: float | None = None
        self._cv: dict[str, Any] | None = None
        # Whether ``_cv`` is the newest ClusterVersion this writer knows of (the answer to its own last
        # write, or its last read): a write then starts from it instead of reading first.  Any other
        # write since carries a newer resourceVersion, so this one gets a Conflict, and reads again.
        self._cv_current = False
        self._pending: Parts | None = None  # a write that failed transiently, to be made again
        self._lock = asyncio.Lock()  # one write at a time: parallel nodes report through one object
        self._calls = 0  # report() calls so far, numbered in call order
        self._forced: dict[int, Parts] = {}  # forced calls whose state is not written yet, by number
        self._must_land: set[int] = set()  # numbers of the calls that must land, not yet written
        self._written = 0  # calls up to this number are written (or remembered, if the write failed)

    async def current(self) -> dict[str, Any]:
        """The ClusterVersion now; the last one read when the server does not answer (and one was read)."""
        try:
            cv = await self.cluster.get(self.ref)
        except ApiError as err:
            if not is_transient(err):
                raise
            if self._cv is None:
                cv = await steady(self.cluster, self.budget).get(self.ref)
            else:
                log.debug("ClusterVersion not readable; using the last one read", error=str(err))
                return self._cv
        if cv is not None:
            self._cv, self._cv_current = cv, True
        return self._cv or {}

    async def ensure(self) -> dict[str, Any]:
        """The ClusterVersion, created if missing (a fresh install)."""
        cluster = steady(self.cluster, self.budget)
        cv = await cluster.get(self.ref)
        if cv is None:
            try:
                cv = await cluster.create(cluster_version_object(self.ref.name))
            except ApiError as err:
                if err.kind is not ApiErrorKind.ALREADY_EXISTS:
                    raise
                cv = await cluster.get(self.ref) or {}
        self._cv, self._cv_current = cv, bool(cv)
        return cv

    def due(self) -> bool:
        """Whether an unforced write would happen now (the throttle has passed, or a write is owed)."""
        return (self._pending is not None or self._last_write is None
                or self.clock.monotonic() - self._last_write >= self.throttle)

    async def report(self, *parts: StatusPart, force: bool = False, must_land: bool = False) -> None:
        """Take ``parts`` (each replaces the earlier part of its slot) and write the status; serialised,
        and recomputed from a fresh read after a Conflict.  Unforced, it writes only when :meth:`due`.

        A transient error is remembered (the next write, or :meth:`flush`, makes it) unless
        ``must_land``: then the write retries within the budget and raises when it runs out.

        Writes wait their turn in call order, and are coalesced: a write whose turn comes writes the
        newest state a forced call has asked for since (each call's state is every slot's latest part, so
        a newer one carries everything an older one would have written), though never one asked for
        after a write that must land and has not been made yet (that would be written over with older
        state); a call whose state, or a newer one, has been written meanwhile returns at once.  A write
        that must land is never skipped and writes its own state.  The CVO's status is likewise written
        from its sync worker's latest report, not from each one: when thirty ClusterOperator waits start
        at once, that is two writes instead of thirty, and the last of those waits does not start thirty
        writes late.
        """
        for part in parts:
            self._parts[part.slot] = part
        state = dict(self._parts)
        self._calls += 1
        call = number = self._calls
        if must_land:
            self._must_land.add(call)
        elif force:
            self._forced[call] = state
        try:
            async with self._lock:
                if not must_land:
                    if number <= self._written:
                        return  # a write made since this call carried its state or a newer one
                    limit = min((n for n in self._must_land if n > number), default=self._calls + 1)
                    newest = max((n for n in self._forced if number < n < limit), default=number)
                    if newest != number:
                        number, state = newest, self._forced[newest]  # the newest state, on this call's turn
                written, self._written = self._written, max(self._written, number)
                for n in [n for n in self._forced if n <= number]:
                    del self._forced[n]
                try:
                    await self._write_turn(state, force or must_land, must_land)
                except BaseException:
                    self._written = written  # not written: the calls it would have carried write their own
                    raise
        finally:
            self._must_land.discard(call)

    async def _write_turn(self, state: Parts, force: bool, must_land: bool) -> None:
        """One write, holding the lock: retried on a Conflict; a transient error remembered or raised."""
        forced = force

        async def write_once() -> None:
            nonlocal forced
            try:
                await self._write(state, forced)
            except ApiError as err:
                if err.kind is ApiErrorKind.CONFLICT:
                    self._cv_current = False  # someone else wrote: read before the next try
                raise
            finally:
                forced = True  # a write made again is not throttled away

        async def once() -> None:
            await reread_on_conflict(write_once, self.budget, "write the ClusterVersion status")

        try:
            if must_land and self.budget is not None:
                await persist(once, self.budget, "write the ClusterVersion status")
            else:
                await once()
        except ApiError as err:
            if must_land or not is_transient(err):
                raise
            self._pending = state
            log.warning("ClusterVersion status not written; will write it again", error=str(err))
            return
        self._pending = None

    async def flush(self) -> None:
        """Make the write that failed transiently (if any), within the budget: it must land now."""
        if self._pending is not None:
            await self.report(must_land=True)  # the latest parts: they hold at least what failed

    async def _write(self, state: Parts, force: bool) -> None:
        now_mono = self.clock.monotonic()
        if not force and not self.due():
            return
        # No read before the write when this writer's last answer is the newest it knows of (the
        # resourceVersion it sends makes the server refuse the write if anything changed since).
        cv = self._cv if self._cv_current and self._cv is not None else await self.current()
        if not cv:
            return  # no ClusterVersion to report on (until a sweep creates it: :meth:`ensure`)
        old_status = ClusterVersion.read(cv).section("status")  # a field of the wrong shape: absent, one warning
        new_status = merge(state, dict(old_status), cv, self.clock.now(), self.gated)
        if new_status == old_status:
            self._last_write = now_mono
            return
        updated = dict(cv)
        updated["status"] = new_status
        self._cv_current = False  # until the answer is in: a write whose answer is lost may have landed
        self._cv = await self.cluster.update_status(updated)
        self._cv_current = True
        self._last_write = now_mono
        if self.reporter is not None:
            from cvo.runner.sweep_events import ConditionChanged

            before, after = _condition_key(old_status), _condition_key(new_status)
            for type_, value in after.items():
                if before.get(type_) != value:
                    self.reporter.emit(ConditionChanged(self.clock.now(), type=type_, status=value[0],
                                                        reason=value[1], message=value[2]))
