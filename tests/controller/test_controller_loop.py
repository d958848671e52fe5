"""``cvo run``'s loop on the embedded cluster, in-process on the virtual clock: install, reconcile every
interval, update through spec.desiredUpdate, retarget, a release that cannot be found, drift, failover."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from cvo.clock import run_virtual
from cvo.cluster.api import Ref, cv_ref
from cvo.controller.lease import lease_ref
from tests.support.controller_harness import (
    Harness,
    completed,
    condition,
    history,
    image,
    new_cluster,
    set_desired,
    until,
)


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    return run_virtual(body)


def test_installs_its_release_then_reconciles_every_interval() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a", interval=60.0)
        task = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        sweeps = a.replica.controller.state.sweeps if a.replica.controller else 0
        await asyncio.sleep(60 * 5 + 1)
        assert a.replica.controller is not None
        assert a.replica.controller.state.sweeps - sweeps in (5, 6)  # one reconcile per interval
        states = [e.fields["state"] for e in a.events.events if e.name == "controller.sweep"]
        assert states[0] == "Initializing" and set(states[1:]) == {"Reconciling"}
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run(body)


def test_desired_update_starts_the_upgrade_and_a_new_one_retargets_it() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a")
        task = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        await set_desired(cluster, version="4.16.3")  # found in the catalogue (payloads/)

        async def updating() -> bool:
            return history(await cluster.get(cv_ref()))[:1] == [("4.16.3", "Partial")]

        await until(updating, 600)
        await asyncio.sleep(30)  # in the middle of the update
        assert history(await cluster.get(cv_ref()))[0] == ("4.16.3", "Partial")
        await set_desired(cluster, image=image("4.17.0"))
        await until(completed(cluster, "4.17.0"), 3 * 3600)
        cv = await cluster.get(cv_ref())
        assert history(cv) == [("4.17.0", "Completed"), ("4.16.3", "Partial"), ("4.16.0", "Completed")]
        assert any(e.name == "controller.retarget" for e in a.events.events)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run(body)


def test_a_desired_release_it_cannot_find_is_release_accepted_false_and_it_keeps_running() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a")
        task = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        await set_desired(cluster, version="4.99.0")

        async def refused() -> bool:
            return condition(await cluster.get(cv_ref()), "ReleaseAccepted").get("status") == "False"

        await until(refused, 600)
        accepted = condition(await cluster.get(cv_ref()), "ReleaseAccepted")
        assert accepted["reason"] == "RetrievePayload"
        assert accepted["message"].startswith('Retrieving payload failed version="4.99.0" image="" failure=no release '
                                              "4.99.0 in the releases catalogue")
        await set_desired(cluster, image="file:///nowhere/4.17.0")

        async def missing_dir() -> bool:
            return "file:///nowhere" in condition(await cluster.get(cv_ref()), "ReleaseAccepted").get("message", "")

        await until(missing_dir, 600)
        assert not task.done()
        await set_desired(cluster, version="4.16.3")
        await until(completed(cluster, "4.16.3"), 3 * 3600)
        assert condition(await cluster.get(cv_ref()), "ReleaseAccepted")["reason"] == "PayloadLoaded"
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run(body)


def test_drift_after_completion_is_repaired_within_one_interval() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a", interval=120.0)
        task = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        await asyncio.sleep(1)
        victim = next(r for r in cluster.refs() if r.kind == "ConfigMap" and r.namespace.startswith("openshift-"))
        await cluster.delete(victim)

        async def back() -> bool:
            return await cluster.get(victim) is not None

        assert await until(back, 120 + 60, step=0.5) <= 120 + 30  # the next reconcile, plus its walk
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run(body)


def test_failover_mid_upgrade_resumes_with_one_history_entry_and_the_old_leader_writes_nothing() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a", release_on_cancel=False)  # killed: it cannot release
        b = Harness(cluster, clock, "b")
        ta = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        tb = asyncio.create_task(b.replica.run())
        await asyncio.sleep(5)
        assert a.elector.may_write() and not b.elector.may_write()
        await set_desired(cluster, version="4.16.3")

        async def updating() -> bool:
            return history(await cluster.get(cv_ref()))[:1] == [("4.16.3", "Partial")]

        await until(updating, 600)
        await asyncio.sleep(20)
        loop = asyncio.get_running_loop()
        lease = await cluster.get(lease_ref())
        assert lease is not None and lease["spec"]["holderIdentity"] == "a"
        ta.cancel()  # the leader dies without releasing the lease
        await asyncio.gather(ta, return_exceptions=True)
        killed = loop.time()

        async def b_leads() -> bool:
            return b.elector.may_write()

        await until(b_leads, 60, step=0.1)
        took = loop.time() - killed
        # The follower counts the lease duration from when it *saw* the last renewal (up to one jittered retry
        # period after it), then takes over at its next try: at most a lease duration and two retry periods.
        assert took <= 15.0 + 2 * 2.0 * 1.2
        await until(completed(cluster, "4.16.3"), 3 * 3600)
        assert [h for h in history(await cluster.get(cv_ref())) if h[0] == "4.16.3"] == [("4.16.3", "Completed")]
        lease = await cluster.get(lease_ref())
        assert lease is not None and lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1
        tb.cancel()
        await asyncio.gather(tb, return_exceptions=True)
        lease = await cluster.get(lease_ref())
        assert lease is not None and lease["spec"]["holderIdentity"] == ""  # b released it on its way out

    run(body)


def test_the_controller_refuses_nothing_to_install_and_waits() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a", own="")
        task = asyncio.create_task(a.replica.run())
        await asyncio.sleep(600)
        assert await cluster.get(cv_ref()) is None
        assert [e.name for e in a.events.events].count("controller.idle") == 1
        assert not task.done()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert await cluster.get(Ref("coordination.k8s.io", "Lease", "openshift-cluster-version", "version")) is not None

    run(body)
