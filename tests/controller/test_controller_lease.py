"""Leader election on a Lease with client-go's semantics, on the embedded cluster and the virtual clock;
the fenced cluster; the probes' and flags' parsers."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.clock import run_virtual
from cvo.cluster.api import ApiErrorKind, Ref
from cvo.controller.fence import FencedCluster
from cvo.controller.http import ListenError, parse_listen
from cvo.controller.lease import LeaderElector, LeaseLost, LeaseTimings, lease_is_held, lease_ref
from cvo.runner.releases import Desired
from tests.support.controller_harness import new_cluster

T = LeaseTimings(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": {"a": "1"}}


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    return run_virtual(body)


def test_the_defaults_are_the_cvos_and_client_go_refuses_what_it_refuses() -> None:
    assert (LeaseTimings().lease_duration, LeaseTimings().renew_deadline, LeaseTimings().retry_period) == (137, 107, 26)
    assert LeaseTimings().problem() is None
    assert LeaseTimings(10, 10, 2).problem() == "the lease duration must be greater than the renew deadline"
    assert "1.2 × the retry period" in (LeaseTimings(10, 6, 5).problem() or "")


def test_one_leads_the_other_waits_a_lease_duration_after_the_leader_stops_renewing() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = LeaderElector(cluster, clock, "a", T, rng=random.Random(1))
        b = LeaderElector(cluster, clock, "b", T, rng=random.Random(2))
        await a.acquire()
        hold_a = asyncio.create_task(a.hold())
        acquire_b = asyncio.create_task(b.acquire())
        await asyncio.sleep(100)  # a renews every 2 s: b never gets it
        assert a.may_write() and not b.may_write() and not acquire_b.done() and b.leader == "a"
        loop = asyncio.get_running_loop()
        hold_a.cancel()  # a stops (no release)
        await asyncio.gather(hold_a, return_exceptions=True)
        stopped = loop.time()
        await acquire_b
        took = loop.time() - stopped
        assert T.lease_duration - T.retry_period <= took <= T.lease_duration + T.retry_period * 1.2
        lease = await cluster.get(lease_ref())
        assert lease is not None
        assert lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1
        assert lease["spec"]["leaseDurationSeconds"] == 15
        assert lease["spec"]["renewTime"].endswith("Z") and "." in lease["spec"]["renewTime"]  # MicroTime
        # a's clock says its lease is stale: it must not write, and a fenced write sends nothing
        assert not a.may_write()
        fenced = FencedCluster(cluster, a)
        before = cluster.stats.writes
        with pytest.raises(LeaseLost):
            await fenced.create(CM)
        assert await cluster.get(Ref("", "ConfigMap", "default", "cm")) is None
        assert fenced.refused == 1 and cluster.stats.writes == before

    run(body)


def test_a_released_lease_is_taken_at_the_next_retry() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = LeaderElector(cluster, clock, "a", T)
        b = LeaderElector(cluster, clock, "b", T)
        await a.acquire()
        acquire_b = asyncio.create_task(b.acquire())
        await asyncio.sleep(5)
        loop = asyncio.get_running_loop()
        assert await a.release()
        released = loop.time()
        lease = await cluster.get(lease_ref())
        assert lease is not None and lease["spec"]["holderIdentity"] == "" and lease["spec"]["leaseDurationSeconds"] == 1
        await acquire_b
        assert loop.time() - released <= T.retry_period * 1.2
        assert not await a.release()  # a no longer holds it: nothing written

    run(body)


def test_the_leader_that_cannot_renew_stops_writing_at_the_renew_deadline() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = LeaderElector(cluster, clock, "a", T)
        await a.acquire()
        loop = asyncio.get_running_loop()
        changes: list[bool] = []
        a.on_change.append(changes.append)
        cluster.inject_failure(lease_ref(), ApiErrorKind.TIMEOUT, count=1000, verbs=("update",))
        renewed = loop.time()
        fenced = FencedCluster(cluster, a)
        await fenced.create(CM)  # still the leader: the write goes through
        await a.hold()  # returns when lost
        assert T.renew_deadline <= loop.time() - renewed <= T.renew_deadline + T.retry_period
        assert changes == [False] and not a.may_write()
        with pytest.raises(LeaseLost):
            await fenced.update({**CM, "data": {"a": "2"}})
        live = await cluster.get(Ref("", "ConfigMap", "default", "cm"))
        assert live is not None and live["data"] == {"a": "1"}

    run(body)


def test_two_candidates_racing_for_a_free_lease_get_one_leader() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        electors = [LeaderElector(cluster, clock, f"r{i}", T) for i in range(3)]
        results = await asyncio.gather(*(e.try_acquire_or_renew() for e in electors))
        assert results.count(True) == 1
        lease = await cluster.get(lease_ref())
        assert lease is not None and lease["spec"]["holderIdentity"] == f"r{results.index(True)}"

    run(body)


def test_a_client_sees_a_fresh_lease_by_its_renew_time() -> None:
    lease = {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 137, "renewTime": "2025-06-01T00:00:00.000000Z"}}
    at = 1748736000.0  # 2025-06-01T00:00:00Z
    assert lease_is_held(lease, at + 100) == "a"
    assert lease_is_held(lease, at + 138) == ""
    assert lease_is_held({"spec": {**lease["spec"], "holderIdentity": ""}}, at) == ""
    assert lease_is_held(None, at) == ""


@given(st.text(max_size=40))
def test_listen_is_host_port_or_a_one_line_error(text: str) -> None:
    try:
        host, port = parse_listen(text)
    except ListenError as err:
        assert str(err).startswith("--listen: ") and "\n" not in str(err)
    else:
        assert 0 <= port <= 65535 and host and not any(c.isspace() for c in host)


def test_listen_examples() -> None:
    assert parse_listen("127.0.0.1:9099") == ("127.0.0.1", 9099)
    assert parse_listen(":9099") == ("0.0.0.0", 9099)
    assert parse_listen("[::1]:0") == ("::1", 0)
    for bad in ("9099", "host:", "h:99999", "h:+1", "a b:1"):
        with pytest.raises(ListenError):
            parse_listen(bad)


@given(st.one_of(st.none(), st.dictionaries(st.sampled_from(["version", "image", "force", "x"]),
                                            st.one_of(st.text(max_size=5), st.booleans(), st.integers()))))
def test_desired_update_of_any_shape_is_a_desire_or_none(update: Any) -> None:
    desired = Desired.of(update)
    if desired is not None:
        assert isinstance(desired.version, str) and isinstance(desired.image, str)
        assert desired.version or desired.image
        assert desired.force is (update.get("force") is True)
