"""One replica of the controller: observe always, lead when elected, write only while leading.

    candidate ──acquire──► leader ──lease lost──► candidate   (writes stop at once: fenced)
        ▲                    │
        └── cancelled ◄──────┘  (SIGTERM: the sweep is cancelled, requests in flight finish,
                                 then the lease is released and the replica ends)

Every replica watches the ClusterVersion and the ClusterOperators for its metrics and probes
(reads only).  The one holding the lease runs :class:`~cvo.controller.loop.Controller` over a
:class:`~cvo.controller.fence.FencedCluster`, and whatever else writes for it (the embedded
cluster's simulated operators: ``on_leading``/``on_stopped``).  When the lease is lost the loop is
cancelled and the replica becomes a candidate again (the CVO exits instead and lets its pod
restart: ``docs/sweep.md``, "Where cvo differs").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from cvo.cluster.api import CLUSTER_OPERATOR, CLUSTER_VERSION, Cluster
from cvo.cluster.informer import Informer
from cvo.cluster.persist import Budget, steady
from cvo.controller.fence import FencedCluster
from cvo.controller.http import Health
from cvo.controller.lease import LeaderElector
from cvo.controller.loop import Controller
from cvo.controller.metrics import Snapshot
from cvo.log import get_logger

log = get_logger("cvo.controller")
TICK = 1.0  # seconds between updates of the probes and the payload gauge

Hook = Callable[[Cluster], Awaitable[None]]


async def _nothing(cluster: Cluster | None = None) -> None:
    return None


class Replica:
    def __init__(self, cluster: Cluster, elector: LeaderElector, make_controller: Callable[[Cluster], Controller],
                 snapshot: Snapshot | None = None, health: Health | None = None,
                 on_leading: Hook | None = None, on_stopped: Callable[[], Awaitable[None]] | None = None,
                 release_on_cancel: bool = True) -> None:
        self.cluster = cluster
        self.elector = elector
        self.make_controller = make_controller
        self.snapshot = snapshot or Snapshot()
        self.health = health or Health()
        self.on_leading = on_leading or _nothing
        self.on_stopped = on_stopped or _nothing
        self.controller: Controller | None = None
        self.terms = 0  # how many times this replica became the leader
        self.release_on_cancel = release_on_cancel  # client-go's ReleaseOnCancel (the CVO sets it)

    async def run(self) -> None:
        """Until cancelled; on cancellation the lease is released after the last write finished."""
        watched = steady(self.cluster, Budget.of(None))
        observers = [Informer(watched, *CLUSTER_VERSION), Informer(watched, *CLUSTER_OPERATOR)]
        observers[0].listeners.append(self.snapshot.set_cluster_version)
        observers[1].listeners.append(self.snapshot.set_cluster_operator)
        ticker = asyncio.create_task(self._tick(), name="probes")
        try:
            for observer in observers:
                await observer.start()
            self.health.ready, self.health.why_not = True, ""
            while True:
                await self.elector.acquire()
                await self._lead()
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
            if self.release_on_cancel:
                await self.elector.release()
            for observer in observers:
                await observer.stop()

    async def _lead(self) -> None:
        """One term: run the controller until the lease is lost (or this task is cancelled)."""
        self.terms += 1
        self.health.leader = True
        fenced = FencedCluster(self.cluster, self.elector)
        controller = self.controller = self.make_controller(fenced)
        work: asyncio.Task[None] | None = None
        hold = asyncio.create_task(self.elector.hold(), name="renew lease")
        try:
            await self.on_leading(fenced)
            work = asyncio.create_task(controller.run(), name="controller")
            done, _ = await asyncio.wait({work, hold}, return_when=asyncio.FIRST_COMPLETED)
            if work in done and not work.cancelled() and work.exception() is not None:
                log.error("controller.crashed", error=f"{type(work.exception()).__name__}: {work.exception()}")
        finally:
            for task in (work, hold):
                if task is not None and not task.done():
                    task.cancel()
            await asyncio.gather(*(t for t in (work, hold) if t is not None), return_exceptions=True)
            await fenced.drain()  # the requests in flight finish before anything else
            await self.on_stopped()
            self.health.leader = False
            self.snapshot.payload = None

    async def _tick(self) -> None:
        while True:
            self.health.tick()
            controller = self.controller
            if controller is not None and self.health.leader and controller.state.plan is not None:
                progress = controller.state.progress
                if progress.total:
                    self.snapshot.payload = (progress.version, progress.done, progress.total)
            await asyncio.sleep(TICK)
