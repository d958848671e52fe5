"""A controller replica on the embedded cluster, in-process on the virtual clock, for the controller's tests."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cvo.clock import Clock
from cvo.cluster.api import Cluster, cv_ref
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.controller.lease import LeaderElector, LeaseTimings
from cvo.controller.loop import Controller, ControllerOptions
from cvo.controller.replica import Replica
from cvo.operators.behaviour import Behaviours
from cvo.operators.simulated import OperatorSimulator
from cvo.payload.loader import Release
from cvo.runner.available_updates import RefreshOptions
from cvo.runner.events import Recorder
from cvo.runner.releases import FILE_SCHEME, Catalogue, Releases, default_loader
from tests.support.helpers import PAYLOADS

EPOCH = datetime(2025, 6, 1, tzinfo=UTC)
SHORT = LeaseTimings(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)
LOADER = default_loader()
RELEASES: dict[str, Release] = {}


def image(version: str) -> str:
    return FILE_SCHEME + str((PAYLOADS / f"demo-{version}").resolve())


def releases() -> Releases:
    """One loader per test session: the demo payloads are read once."""
    def load(directory: Path, img: str) -> Release:
        if img not in RELEASES:
            RELEASES[img] = LOADER(directory, img)
        return RELEASES[img]
    return Releases(Catalogue(PAYLOADS), load)


def new_cluster() -> tuple[SimCluster, Clock]:
    """An embedded cluster with the Lease's namespace (``cvo bootstrap``'s, or ``cvo run``'s on the embedded one)."""
    clock = Clock(EPOCH)
    return SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "openshift-cluster-version")), clock


class Harness:
    """One replica: its elector, its controller (made when it leads), simulated operators while it leads."""

    def __init__(self, cluster: SimCluster, clock: Clock, identity: str, *, interval: float = 60.0,
                 own: str = "4.16.0", timings: LeaseTimings = SHORT, release_on_cancel: bool = True,
                 behaviours: Behaviours | None = None, updates: RefreshOptions | None = None,
                 gated: bool = False) -> None:
        self.cluster, self.clock = cluster, clock
        self.gated = gated  # the ClusterUpdateAcceptRisks gate
        self.events = Recorder()
        self.elector = LeaderElector(cluster, clock, identity, timings, rng=random.Random(identity))
        self.interval = interval
        self.updates = updates  # how the update service is polled (None: not polled)
        self.own = image(own) if own else ""
        self.known: list[Release] = []
        self.sim: OperatorSimulator | None = None
        self.behaviours = behaviours or Behaviours()
        self.releases = releases()
        self.replica = Replica(cluster, self.elector, self.make_controller, on_leading=self.on_leading,
                               on_stopped=self.on_stopped, release_on_cancel=release_on_cancel)

    def on_release(self, release: Release) -> None:
        if release not in self.known:
            self.known.append(release)
            if self.sim is not None:
                self.sim.register_release(release)

    def make_controller(self, fenced: Cluster) -> Controller:
        return Controller(fenced, self.clock, self.releases, self.events,
                          ControllerOptions(interval=self.interval, own_image=self.own, seed=1, updates=self.updates,
                                            gated=self.gated),
                          on_release=self.on_release)

    async def on_leading(self, fenced: Cluster) -> None:
        self.sim = OperatorSimulator(fenced, self.clock, self.behaviours)
        for release in self.known:
            self.sim.register_release(release)
        await self.sim.start()

    async def on_stopped(self) -> None:
        if self.sim is not None:
            await self.sim.stop()
            self.sim = None


async def set_desired(cluster: Cluster, **desired: Any) -> None:
    """``kubectl patch clusterversion version --type merge -p '{"spec":{"desiredUpdate":…}}'``."""
    cv = await cluster.get(cv_ref())
    assert cv is not None
    await cluster.update({**cv, "spec": {**cv["spec"], "desiredUpdate": desired}})


def history(cv: dict[str, Any] | None) -> list[tuple[str, str]]:
    return [(h["version"], h["state"]) for h in ((cv or {}).get("status") or {}).get("history") or []]


def condition(cv: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    return next((c for c in ((cv or {}).get("status") or {}).get("conditions") or [] if c["type"] == type_), {})


async def until(check: Callable[[], Awaitable[bool]], limit: float, step: float = 1.0) -> float:
    """Virtual seconds until ``check()`` holds; fails after ``limit``."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not await check():
        assert loop.time() - start < limit, f"not within {limit}s"
        await asyncio.sleep(step)
    return loop.time() - start


def completed(cluster: Cluster, version: str) -> Callable[[], Awaitable[bool]]:
    """Whether ``version`` is the completed head of the history and the cluster no longer progresses."""
    async def check() -> bool:
        cv = await cluster.get(cv_ref())
        h = history(cv)
        return bool(h) and h[0] == (version, "Completed") and condition(cv, "Progressing").get("status") == "False"
    return check
