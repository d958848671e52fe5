"""Retrying within a budget (cvo.cluster.persist) and recognising writes that landed (cvo.cluster.landed).

On the embedded cluster and virtual time: a budget of minutes runs out in milliseconds.  The faults
come from :class:`Faulty`, a layer over the embedded cluster that fails the next calls the way a
network or an API server does: transiently before a write reaches the server, or after it landed
(the answer lost).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from datetime import UTC, datetime
from typing import Any

import pytest

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import ApiError, ApiErrorKind, Object, Ref, cv_ref
from cvo.cluster.embedded.server import SimCluster
from cvo.cluster.landed import intent_landed
from cvo.cluster.persist import Budget, GaveUp, PersistentCluster, persist, reread_on_conflict, steady
from cvo.runner.status_writer import StatusWriter
from cvo.status.clusterversion import SyncStatus, cluster_version_object
from cvo.status.parts import Sync

EPOCH = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
CM = Ref("", "ConfigMap", "default", "cm")


def configmap(**data: str) -> Object:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
            "data": dict(data)}


class Faulty:
    """The embedded cluster, with the next calls of a verb failing: ``before`` (the request never
    arrived) or ``after`` (it was processed; the answer is lost)."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.plan: dict[str, deque[tuple[str, ApiError]]] = {}
        self.calls: dict[str, int] = {}

    def fail(self, verb: str, when: str, kind: ApiErrorKind = ApiErrorKind.TIMEOUT, count: int = 1,
             retry_after: float | None = None) -> None:
        for _ in range(count):
            self.plan.setdefault(verb, deque()).append(
                (when, ApiError(kind, f"{verb}: injected {kind.value}", retry_after=retry_after)))

    async def _call(self, verb: str, *args: Any) -> Any:
        self.calls[verb] = self.calls.get(verb, 0) + 1
        queue = self.plan.get(verb)
        if queue:
            when, error = queue.popleft()
            if when == "after":
                await getattr(self.cluster, verb)(*args)
            raise error
        return await getattr(self.cluster, verb)(*args)

    async def get(self, ref: Ref) -> Object | None:
        return await self._call("get", ref)

    async def list(self, group: str, kind: str, namespace: str | None = None) -> list[Object]:
        return await self._call("list", group, kind, namespace)

    async def create(self, obj: Object) -> Object:
        return await self._call("create", obj)

    async def update(self, obj: Object) -> Object:
        return await self._call("update", obj)

    async def update_status(self, obj: Object) -> Object:
        return await self._call("update_status", obj)

    async def delete(self, ref: Ref) -> bool:
        return await self._call("delete", ref)

    async def serves(self, api_version: str, kind: str) -> bool:
        return await self._call("serves", api_version, kind)

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        return self.cluster.watch(*args, **kwargs)

    async def close(self) -> None:
        await self.cluster.close()


def run(test: Any) -> Any:
    async def main() -> Any:
        return await test(Faulty(SimCluster(Clock(EPOCH))))

    return run_virtual(main)


# --- persist -----------------------------------------------------------------------------------------------


def test_transient_errors_are_retried_with_back_off_until_the_call_succeeds() -> None:
    async def test(cluster: Faulty) -> tuple[Object | None, float]:
        await cluster.cluster.create(configmap(a="1"))
        cluster.fail("get", "before", ApiErrorKind.TIMEOUT, count=3)
        cluster.fail("get", "before", ApiErrorKind.SERVER_TIMEOUT, retry_after=7.0)
        cluster.fail("get", "before", ApiErrorKind.INTERNAL)
        loop = asyncio.get_running_loop()
        started = loop.time()
        live = await persist(lambda: cluster.get(CM), Budget.of(600), "get cm")
        return live, loop.time() - started

    live, waited = run(test)
    assert live is not None and live["data"] == {"a": "1"}
    # 0.5, 1, 2 (±20 %), then the server's Retry-After (7 s), then 8 (capped at 5, ±20 %)
    assert 0.8 * (0.5 + 1 + 2 + 5) + 7 <= waited <= 1.2 * (0.5 + 1 + 2 + 5) + 7


def test_when_the_budget_runs_out_the_last_error_is_raised_with_how_long_it_was_tried() -> None:
    async def test(cluster: Faulty) -> tuple[GaveUp, float, int]:
        cluster.fail("get", "before", ApiErrorKind.TIMEOUT, count=1000)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(GaveUp) as raised:
            await persist(lambda: cluster.get(CM), Budget.of(60), "get cm")
        return raised.value, loop.time() - started, cluster.calls["get"]

    error, waited, calls = run(test)
    assert waited == pytest.approx(60)  # the last try is at the deadline
    assert error.kind is ApiErrorKind.TIMEOUT and error.elapsed == pytest.approx(60)
    assert str(error) == "get cm: still failing after 60s of retries: get: injected Timeout"
    assert 14 <= calls <= 18  # 0.5, 1, 2, 4, then every 5 s (±20 %)


def test_other_errors_are_raised_at_once() -> None:
    async def test(cluster: Faulty) -> int:
        cluster.fail("get", "before", ApiErrorKind.FORBIDDEN)
        with pytest.raises(ApiError) as raised:
            await persist(lambda: cluster.get(CM), Budget.of(60), "get cm")
        assert raised.value.kind is ApiErrorKind.FORBIDDEN and not isinstance(raised.value, GaveUp)
        return cluster.calls["get"]

    assert run(test) == 1


def test_an_unlimited_budget_retries_for_as_long_as_it_takes() -> None:
    async def test(cluster: Faulty) -> float:
        await cluster.cluster.create(configmap())
        cluster.fail("get", "before", count=40)
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await PersistentCluster(cluster, Budget.of(None)).get(CM) is not None  # type: ignore[arg-type]
        return loop.time() - started

    assert run(test) > 150  # 40 failures, most of them 5 s apart


# --- writes whose answer was lost ----------------------------------------------------------------------------


def test_a_create_whose_answer_was_lost_is_found_to_have_landed() -> None:
    async def test(cluster: Faulty) -> tuple[Object, dict[str, int]]:
        cluster.fail("create", "after")  # created, but the client never hears so
        steady_cluster = PersistentCluster(cluster, Budget.of(60))  # type: ignore[arg-type]
        created = await steady_cluster.create(configmap(a="1"))
        return created, cluster.calls

    created, calls = run(test)
    assert created["data"] == {"a": "1"} and created["metadata"]["resourceVersion"]
    assert calls == {"create": 2, "get": 1}  # the retry met AlreadyExists, and the object was read


def test_an_update_whose_answer_was_lost_is_found_to_have_landed_and_not_written_twice() -> None:
    async def test(cluster: Faulty) -> tuple[Object, Object | None, dict[str, int]]:
        live = await cluster.cluster.create(configmap(a="1"))
        cluster.fail("update", "after")  # the retry sends the old resourceVersion: Conflict
        updated = await PersistentCluster(cluster, Budget.of(60)).update({**live, "data": {"a": "2"}})  # type: ignore[arg-type]
        return updated, await cluster.cluster.get(CM), cluster.calls

    updated, stored, calls = run(test)
    assert updated["data"] == {"a": "2"} and stored is not None
    assert updated["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert calls == {"update": 2, "get": 1}


def test_an_already_exists_that_is_not_the_lost_write_is_still_an_error() -> None:
    async def test(cluster: Faulty) -> ApiErrorKind:
        await cluster.cluster.create(configmap(a="someone else's"))
        cluster.fail("create", "before")  # it never arrived; the object is another writer's
        with pytest.raises(ApiError) as raised:
            await PersistentCluster(cluster, Budget.of(60)).create(configmap(a="1"))  # type: ignore[arg-type]
        return raised.value.kind

    assert run(test) is ApiErrorKind.ALREADY_EXISTS


def test_intent_landed_compares_what_the_write_sets_as_the_server_applies_it() -> None:
    sent = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}, "binaryData": {},
            "metadata": {"name": "x", "namespace": "ns", "resourceVersion": "5", "labels": {"l": "1"}},
            "status": {"phase": "ignored on a create"}}
    live = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1", "b": "server"},
            "metadata": {"name": "x", "namespace": "ns", "resourceVersion": "9", "uid": "u", "labels": {"l": "1"}}}
    assert intent_landed("create", sent, live)
    assert intent_landed("update", sent, live)
    assert not intent_landed("update", sent, live, status_subresource=False)  # then status is written too
    assert not intent_landed("update", {**sent, "data": {"a": "2"}}, live)
    assert not intent_landed("update", {**sent, "metadata": {**sent["metadata"], "labels": {"l": "2"}}}, live)
    assert not intent_landed("create", sent, None)
    status_write = {**live, "status": {"conditions": [{"type": "Available", "status": "True"}]}}
    assert intent_landed("update_status", status_write, {**live, "data": {}, "status": status_write["status"]})
    assert not intent_landed("update_status", status_write, live)
    with pytest.raises(ValueError):
        intent_landed("get", sent, live)


# --- re-reading after a Conflict ------------------------------------------------------------------------------


def test_reread_on_conflict_writes_the_intent_again_on_what_it_reads() -> None:
    async def test(cluster: Faulty) -> tuple[Object | None, int]:
        await cluster.cluster.create(configmap(a="1"))
        writes = 0

        async def add_b() -> None:  # read, re-apply the intent, skip when it is there
            nonlocal writes
            live = await cluster.get(CM) or {}
            if (live.get("data") or {}).get("b") == "2":
                return
            if writes < 2:  # another writer gets in first, twice
                await cluster.cluster.update({**live, "data": {**live["data"], "c": str(writes)}})
            writes += 1
            await cluster.update({**live, "data": {**live["data"], "b": "2"}})

        await reread_on_conflict(add_b, Budget.of(60), "add b")
        return await cluster.cluster.get(CM), writes

    stored, writes = run(test)
    assert stored is not None and stored["data"] == {"a": "1", "b": "2", "c": "1"}
    assert writes == 3


def test_without_a_budget_a_conflict_is_read_again_twice() -> None:
    async def test(cluster: Faulty) -> int:
        calls = 0

        async def always_conflicts() -> None:
            nonlocal calls
            calls += 1
            raise ApiError(ApiErrorKind.CONFLICT, "conflict")

        with pytest.raises(ApiError):
            await reread_on_conflict(always_conflicts, None, "x")
        return calls

    assert run(test) == 3


def test_steady_wraps_once_and_leaves_a_cluster_without_budget_alone() -> None:
    async def test(cluster: Faulty) -> None:
        budget = Budget.of(10)
        wrapped = steady(cluster, budget)  # type: ignore[arg-type]
        assert isinstance(wrapped, PersistentCluster) and steady(wrapped, budget) is wrapped
        assert steady(cluster, None) is cluster  # type: ignore[arg-type]

    run(test)


# --- the ClusterVersion status writer -------------------------------------------------------------------------


def writer(cluster: Faulty, budget: Budget | None) -> StatusWriter:
    return StatusWriter(cluster, Clock(EPOCH), throttle=15.0, budget=budget)  # type: ignore[arg-type]


def sync(done: int = 1, total: int = 2) -> Sync:
    """The sync worker's report (a part for the one writer)."""
    return Sync(SyncStatus(version="1.0.0", image="file:///r", done=done, total=total, initial=True))


def test_a_status_report_the_server_does_not_take_is_made_again_later_and_must_land_at_the_end() -> None:
    async def test(cluster: Faulty) -> tuple[Object | None, Object | None, dict[str, int]]:
        w = writer(cluster, Budget.of(600))
        await w.ensure()
        cluster.fail("update_status", "before", count=2)
        await w.report(sync(), force=True)  # fails: remembered, the sweep goes on
        before = await cluster.cluster.get(cv_ref())
        assert w.due()  # owed: the next report is not throttled away
        cluster.fail("update_status", "before", count=3)
        await w.flush()  # must land: retried (1 left over + 3 more failures)
        return before, await cluster.cluster.get(cv_ref()), cluster.calls

    before, after, calls = run(test)
    assert before is not None and not (before.get("status") or {}).get("history")
    assert after is not None and [h["state"] for h in after["status"]["history"]] == ["Partial"]
    assert calls["update_status"] == 6


def test_a_status_write_whose_answer_was_lost_is_not_written_again() -> None:
    async def test(cluster: Faulty) -> tuple[int, int]:
        w = writer(cluster, Budget.of(600))
        await w.ensure()
        cluster.fail("update_status", "after")  # landed; the answer is lost
        await w.report(sync(), force=True, must_land=True)
        generation = cluster.cluster.stats.verbs["update_status"]
        await w.report(sync(), force=True)  # same report: nothing to write
        return cluster.calls["update_status"], cluster.cluster.stats.verbs["update_status"] - generation

    calls, again = run(test)
    assert calls == 1 and again == 0  # the retry read the ClusterVersion: the report was there already


def test_when_the_server_does_not_answer_the_last_clusterversion_read_is_used() -> None:
    async def test(cluster: Faulty) -> Object:
        await cluster.cluster.create(cluster_version_object("version"))
        w = writer(cluster, Budget.of(600))
        first = await w.current()
        cluster.fail("get", "before", count=6)
        assert await w.current() == first
        return first

    assert run(test)["metadata"]["name"] == "version"


def test_a_status_write_starts_from_its_last_answer_and_reads_only_after_a_conflict() -> None:
    """The writer's last answer is the newest ClusterVersion it knows of: the next write needs no read.
    A write by someone else in between makes the server refuse the stale one; it reads, and writes
    its report onto what the other wrote (the other's change stays)."""

    async def test(cluster: Faulty) -> tuple[int, int, Object]:
        w = writer(cluster, Budget.of(600))
        await w.ensure()
        reads = cluster.calls.get("get", 0)
        await w.report(sync(), force=True)
        await w.report(sync(2), force=True)
        quiet_reads = cluster.calls.get("get", 0) - reads
        other = await cluster.cluster.get(cv_ref())
        assert other is not None
        other["spec"] = {**(other.get("spec") or {}), "channel": "stable-1.0"}
        await cluster.cluster.update(other)  # another writer: the spec changes, so does the resourceVersion
        reads = cluster.calls.get("get", 0)
        await w.report(sync(3), force=True)
        final = await cluster.cluster.get(cv_ref())
        assert final is not None
        return quiet_reads, cluster.calls.get("get", 0) - reads, final

    quiet_reads, conflict_reads, final = run(test)
    assert quiet_reads == 0
    assert conflict_reads == 1
    assert final["spec"]["channel"] == "stable-1.0"
    assert "3 of 2" in next(c["message"] for c in final["status"]["conditions"] if c["type"] == "Progressing")


class SlowStatus(Faulty):
    """Every status write takes a simulated second; the ``done`` count of each one sent is recorded."""

    def __init__(self, cluster: SimCluster) -> None:
        super().__init__(cluster)
        self.sent: list[int] = []

    async def update_status(self, obj: Object) -> Object:
        self.sent.append(progress_done(obj))
        await asyncio.sleep(1.0)
        return await super().update_status(obj)


def progress_done(cv: Object) -> int:
    message = next(c["message"] for c in cv["status"]["conditions"] if c["type"] == "Progressing")
    return int(message.split(": ")[1].split(" of ")[0])


def run_slow(test: Any) -> Any:
    async def main() -> Any:
        return await test(SlowStatus(SimCluster(Clock(EPOCH))))

    return run_virtual(main)


def report(done: int) -> Sync:
    return sync(done, 20)


def test_forced_status_writes_queued_behind_one_under_way_are_coalesced_into_the_newest() -> None:
    """Ten ClusterOperator waits start while a write is under way: one more write, with the newest state,
    and no call returns before the ClusterVersion holds its state or a newer one."""

    async def test(cluster: SlowStatus) -> tuple[list[int], list[int]]:
        w = writer(cluster, Budget.of(600))
        await w.ensure()
        seen: list[int] = []

        async def write(done: int) -> None:
            await w.report(report(done), force=True)
            cv = await cluster.cluster.get(cv_ref())
            assert cv is not None
            seen.append(progress_done(cv) - done)  # how far the ClusterVersion is ahead of this call

        first = asyncio.ensure_future(write(1))
        await asyncio.sleep(0)  # the first write is under way
        await asyncio.gather(first, *(write(done) for done in range(2, 12)))
        return cluster.sent, seen

    sent, seen = run_slow(test)
    assert sent == [1, 11]
    assert min(seen) >= 0


def test_a_cancelled_newer_write_does_not_lose_the_older_ones() -> None:
    """The newest caller gives up while it waits its turn (its wait was cancelled): the write whose turn
    comes still writes, and writes the newest state asked for."""

    async def test(cluster: SlowStatus) -> list[int]:
        w = writer(cluster, Budget.of(600))
        await w.ensure()
        first = asyncio.ensure_future(w.report(report(1), force=True))
        await asyncio.sleep(0)
        older = asyncio.ensure_future(w.report(report(2), force=True))
        newer = asyncio.ensure_future(w.report(report(3), force=True))
        await asyncio.sleep(0.5)
        newer.cancel()
        await asyncio.gather(first, older, newer, return_exceptions=True)
        return cluster.sent

    assert run_slow(test) == [1, 3]


def test_a_status_write_that_must_land_is_never_coalesced_away() -> None:
    async def test(cluster: SlowStatus) -> tuple[list[int], list[str]]:
        w = writer(cluster, Budget.of(600))
        await w.ensure()
        first = asyncio.ensure_future(w.report(report(1), force=True))
        await asyncio.sleep(0)
        final = Sync(dataclasses.replace(report(5).status, completed=1))
        await asyncio.gather(first, w.report(report(4), force=True), w.report(final, force=True, must_land=True),
                             w.report(report(6), force=True))
        cv = await cluster.cluster.get(cv_ref())
        assert cv is not None
        return cluster.sent, [h["state"] for h in cv["status"]["history"]]

    sent, history = run_slow(test)
    assert sent == [1, 4, 5, 6]  # the must-land write (5, the completion) is made, and in its turn
    assert history == ["Completed"]
