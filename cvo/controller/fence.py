"""A cluster that writes only while this replica leads: the controller's guarantee of one writer.

Every create, update, status update and delete first asks the :class:`~cvo.controller.lease.LeaderElector`
whether its last renewal is younger than the renew deadline, and raises
:class:`~cvo.controller.lease.LeaseLost` otherwise — before anything is sent.  The check is made at
each call, by the replica's monotonic clock, so a replica that was stopped (SIGSTOP, a long pause,
a partition) and comes back after another replica took over sends nothing: its clock says the
lease is stale before its renew loop has even run.  Reads and watches pass through (a follower may read).

A write that was sent finishes even if its caller is cancelled (it runs shielded); :meth:`drain`
waits for those, so that a replica shutting down releases the lease only after its last request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from cvo.cluster.api import Cluster, Object, Ref, WatchEvent
from cvo.controller.lease import LeaderElector

T = TypeVar("T")


class FencedCluster:
    """:class:`cvo.cluster.api.Cluster` whose writes need the lease."""

    def __init__(self, cluster: Cluster, elector: LeaderElector) -> None:
        self.inner = cluster
        self.elector = elector
        self.refused = 0  # writes refused because the lease was not held
        self._in_flight: set[asyncio.Future[object]] = set()

    def _check(self) -> None:
        if not self.elector.may_write():
            self.refused += 1
        self.elector.check()

    async def _send(self, call: Awaitable[T]) -> T:
        future = asyncio.ensure_future(call)
        self._in_flight.add(future)  # type: ignore[arg-type]
        future.add_done_callback(self._in_flight.discard)  # type: ignore[arg-type]
        return await asyncio.shield(future)

    async def drain(self) -> None:
        """Wait for the writes already sent (their callers may have been cancelled)."""
        while self._in_flight:
            await asyncio.gather(*list(self._in_flight), return_exceptions=True)

    async def get(self, ref: Ref) -> Object | None:
        return await self.inner.get(ref)

    async def list(self, group: str, kind: str, namespace: str | None = None) -> list[Object]:
        return await self.inner.list(group, kind, namespace)

    async def create(self, obj: Object) -> Object:
        self._check()
        return await self._send(self.inner.create(obj))

    async def update(self, obj: Object) -> Object:
        self._check()
        return await self._send(self.inner.update(obj))

    async def update_status(self, obj: Object) -> Object:
        self._check()
        return await self._send(self.inner.update_status(obj))

    async def delete(self, ref: Ref) -> bool:
        self._check()
        return await self._send(self.inner.delete(ref))

    async def serves(self, api_version: str, kind: str) -> bool:
        return await self.inner.serves(api_version, kind)

    def watch(self, group: str, kind: str, namespace: str | None = None, name: str | None = None,
              ) -> AsyncIterator[WatchEvent]:
        return self.inner.watch(group, kind, namespace, name)

    async def close(self) -> None:
        """The inner cluster belongs to whoever opened it."""

    @property
    def on_read(self) -> object:
        """The embedded cluster's read hooks (its simulated operators use them), when the inner cluster has them."""
        return getattr(self.inner, "on_read", None)
