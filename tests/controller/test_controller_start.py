"""``cvo run``'s wiring (cvo.controller.start), in-process on the virtual clock: typed options and context in,
one replica that installs its release, with the simulated operators and the sweep lock while it leads."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest

from cvo.clock import Clock
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref, cv_ref
from cvo.cluster.embedded.server import SimCluster
from cvo.controller import start
from cvo.controller.lease import LeaderElector
from cvo.operators.behaviour import Behaviours
from cvo.runner.events import Recorder
from tests.controller.test_controller_loop import completed, run, until
from tests.support.controller_harness import EPOCH, SHORT, history
from tests.support.helpers import PAYLOADS


@dataclass
class Opened:
    cluster: Cluster
    description: str = "embedded simulated cluster (in memory)"


class Lock:
    def __init__(self, elector: LeaderElector) -> None:
        self.taken_while_leading = elector.may_write()
        self.released = False

    def release(self) -> None:
        self.released = True


def test_a_replica_installs_its_release_with_the_simulated_operators_while_it_holds_the_lock() -> None:
    locks: list[Lock] = []
    opened: list[SimCluster] = []

    async def body() -> None:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock)  # no openshift-cluster-version namespace: run creates it

        @asynccontextmanager
        async def open_cluster() -> AsyncIterator[Opened]:
            opened.append(cluster)
            yield Opened(cluster)

        async def take_lock(elector: LeaderElector) -> Lock:
            locks.append(Lock(elector))
            return locks[-1]

        options = start.Options(identity="a", interval=60.0, timings=SHORT, own_release=PAYLOADS / "demo-4.16.0",
                                releases=PAYLOADS)
        events = Recorder()
        context = start.Context(clock, open_cluster, events, simulate=Behaviours(), take_lock=take_lock)
        task = asyncio.create_task(start.run(options, context))
        await until(completed(cluster, "4.16.0"), 3600)  # only the simulated operators make it complete
        assert next(e.fields["state"] for e in events.events if e.name == "controller.sweep") == "Initializing"
        assert await cluster.get(Ref("", "Namespace", "", "openshift-cluster-version")) is not None
        assert [(lock.taken_while_leading, lock.released) for lock in locks] == [(True, False)]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert history(await cluster.get(cv_ref())) == [("4.16.0", "Completed")]

    run(body)
    assert len(opened) == 1 and [lock.released for lock in locks] == [True]  # released when the term ended


def test_without_the_simulated_operators_an_install_waits_for_real_ones() -> None:
    async def body() -> None:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock)

        @asynccontextmanager
        async def open_cluster() -> AsyncIterator[Opened]:
            yield Opened(cluster)

        options = start.Options(identity="a", interval=60.0, timings=SHORT, own_release=PAYLOADS / "demo-4.16.0")
        task = asyncio.create_task(start.run(options, start.Context(clock, open_cluster, Recorder())))
        await asyncio.sleep(1800)
        assert history(await cluster.get(cv_ref())) == [("4.16.0", "Partial")]  # nobody reports its operators
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run(body)


def test_an_address_in_use_fails_before_the_cluster_is_opened() -> None:
    opened: list[bool] = []

    @asynccontextmanager
    async def open_cluster() -> AsyncIterator[Opened]:
        opened.append(True)
        yield Opened(SimCluster(clock=Clock(EPOCH)))

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        options = start.Options(identity="a", listen=("127.0.0.1", port))
        with pytest.raises(start.EndpointFailed, match="in use"):
            asyncio.run(start.run(options, start.Context(Clock(EPOCH), open_cluster, Recorder())))
    assert opened == []


class Refusing(SimCluster):
    """A least-privilege service account: it may not read or create Namespaces."""

    async def get(self, ref: Ref) -> dict | None:  # type: ignore[type-arg]
        if ref.kind == "Namespace":
            raise ApiError(ApiErrorKind.FORBIDDEN, "namespaces is forbidden", ref)
        return await super().get(ref)


def test_the_lease_namespace_is_created_unless_the_account_may_not() -> None:
    async def body() -> None:
        cluster = SimCluster(clock=Clock(EPOCH))
        await start.ensure_namespace(cluster, "elsewhere")
        await start.ensure_namespace(cluster, "elsewhere")  # there already: nothing to do
        assert await cluster.get(Ref("", "Namespace", "", "elsewhere")) is not None
        await start.ensure_namespace(Refusing(clock=Clock(EPOCH)), "elsewhere")  # Forbidden: the manifests' job

    run(body)
