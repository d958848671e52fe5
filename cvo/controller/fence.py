"""A cluster that writes only while this replica leads: the controller's guarantee of one writer.

Every write (create, update, status update, delete, and the CRD nudge ``establish``) first asks the
:class:`~cvo.controller.lease.LeaderElector` whether its last renewal is younger than the renew deadline,
and raises :class:`~cvo.controller.lease.LeaseLost` otherwise — before anything is sent.  The check is
made at each call, by the replica's monotonic clock, so a replica that was stopped (SIGSTOP, a long
pause, a partition) and comes back after another replica took over sends nothing: its clock says
the lease is stale before its renew loop has even run.  It is made again before every try a backend
makes of the same request (its own retries of a transient error, or the requests of a nudge), through
the write guard (:func:`cvo.cluster.intercept.guarding_writes`): a write the Kubernetes backend retries
for seconds stops as soon as the lease is stale.  Reads and watches pass through (a follower may read).

A write that was sent finishes even if its caller is cancelled (it runs shielded); :meth:`drain`
waits for those, so that a replica shutting down releases the lease only after its last request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from cvo.cluster.api import Cluster
from cvo.cluster.intercept import Call, Interceptor, guarding_writes
from cvo.controller.lease import LeaderElector

T = TypeVar("T")


class FencedCluster(Interceptor):
    """:class:`cvo.cluster.api.Cluster` whose writes need the lease."""

    def __init__(self, cluster: Cluster, elector: LeaderElector) -> None:
        super().__init__(cluster)
        self.elector = elector
        self.refused = 0  # writes (or tries of one) refused because the lease was not held
        self._in_flight: set[asyncio.Future[Any]] = set()

    def _check(self) -> None:
        if not self.elector.may_write():
            self.refused += 1
        self.elector.check()

    async def intercept_write(self, call: Call, send: Callable[[], Awaitable[T]]) -> T:
        self._check()
        with guarding_writes(self._check):  # the task copies the context: the backend's retries see the guard
            future = asyncio.ensure_future(send())
        self._in_flight.add(future)
        future.add_done_callback(self._in_flight.discard)
        return await asyncio.shield(future)

    async def drain(self) -> None:
        """Wait for the writes already sent (their callers may have been cancelled)."""
        while self._in_flight:
            await asyncio.gather(*list(self._in_flight), return_exceptions=True)
