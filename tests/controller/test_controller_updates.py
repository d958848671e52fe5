"""``cvo run`` polls the update service beside its sweeps (``availableUpdatesSync``): on the embedded cluster
on the virtual clock, against a real update service on 127.0.0.1.

The exchange runs in a thread, in real time, while the virtual clock jumps from timer to timer: the tests
wait for what the service answered in small virtual steps, bounded in real seconds (:func:`settled`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from cvo.clock import run_virtual, wall_seconds
from cvo.cluster.api import cv_ref
from cvo.cluster.embedded.server import SimCluster
from cvo.runner.available_updates import RefreshOptions
from cvo.status.clusterversion import cluster_version_object
from cvo.updates.client import UpdateServiceOptions
from tests.controller.test_controller_loop import completed, until
from tests.support.controller_harness import Harness, condition, new_cluster, set_desired
from tests.support.update_service import Answer, UpdateService, node

GRAPH = {"nodes": [node("4.16.0"), node("4.16.3"), node("4.17.0")], "edges": [[0, 1], [0, 2], [1, 2]]}


async def set_spec(cluster: SimCluster, **spec: Any) -> None:
    cv = await cluster.get(cv_ref())
    assert cv is not None
    await cluster.update({**cv, "spec": {**cv["spec"], **spec}})


async def available(cluster: SimCluster) -> list[str] | None:
    cv = await cluster.get(cv_ref())
    updates = ((cv or {}).get("status") or {}).get("availableUpdates")
    return None if updates is None else [u["version"] for u in updates]


def test_the_controller_polls_the_update_service_and_follows_the_spec() -> None:
    with UpdateService() as service:
        service.graph = GRAPH

        async def body() -> None:
            cluster, clock = new_cluster()
            options = RefreshOptions(minimum_interval=300, client=UpdateServiceOptions(timeout=5), runtime_arch="amd64",
                                     default_update_service="")
            a = Harness(cluster, clock, "a", interval=60.0, updates=options)
            task = asyncio.create_task(a.replica.run())
            await until(completed(cluster, "4.16.0"), 3600)
            # no upstream on the embedded cluster: the CVO's NoUpstream
            no_upstream = condition(await cluster.get(cv_ref()), "RetrievedUpdates")
            assert (no_upstream["status"], no_upstream["reason"]) == ("False", "NoUpstream")
            assert not service.requests

            await set_spec(cluster, upstream=service.url, channel="stable-4.16")  # the watch wakes the poll
            await settled(lambda: _versions_are(cluster, ["4.17.0", "4.16.3"]))
            (request,) = service.requests
            cv = await cluster.get(cv_ref())
            assert request.query["channel"] == ["stable-4.16"] and request.query["version"] == ["4.16.0"]
            assert request.query["id"] == [cv["spec"]["clusterID"]]  # type: ignore[index]
            uuid.UUID(request.query["id"][0])  # the ClusterVersion cvo created has a random UUID, as the CVO's bootstrap
            assert condition(cv, "RetrievedUpdates")["status"] == "True"

            service.graph = {**GRAPH, "edges": [[0, 1]]}
            await asyncio.sleep(200)
            assert len(service.requests) == 1  # within the minimum interval: not asked again
            await asyncio.sleep(100)  # the minimum interval has passed: asked again
            await settled(lambda: _versions_are(cluster, ["4.16.3"]))
            assert len(service.requests) == 2

            service.answer = Answer(status=502, body=b"<html>bad gateway</html>")
            await set_spec(cluster, channel="fast-4.16")
            await settled(lambda: _retrieved_reason(cluster, "ResponseFailed"))
            assert await available(cluster) is None  # another channel: nothing kept
            assert a.replica.controller is not None and a.replica.controller.state.completed >= 1
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        run_virtual(body)


async def settled(check: Callable[[], Awaitable[bool]], seconds: float = 20.0) -> None:
    """Until ``check()`` holds, in virtual steps of 10 ms; fails after ``seconds`` of real time."""
    start = wall_seconds()
    while not await check():
        assert wall_seconds() - start < seconds, f"not within {seconds}s of real time"
        await asyncio.sleep(0.01)


async def _versions_are(cluster: SimCluster, versions: list[str]) -> bool:
    return await available(cluster) == versions


async def _retrieved_reason(cluster: SimCluster, reason: str) -> bool:
    return condition(await cluster.get(cv_ref()), "RetrievedUpdates").get("reason") == reason


def test_an_update_to_another_release_asks_for_that_releases_updates() -> None:
    with UpdateService() as service:
        service.graph = GRAPH

        async def body() -> None:
            cluster, clock = new_cluster()
            options = RefreshOptions(minimum_interval=3600, client=UpdateServiceOptions(timeout=5),
                                     runtime_arch="amd64", default_update_service="")
            a = Harness(cluster, clock, "a", interval=60.0, updates=options)
            task = asyncio.create_task(a.replica.run())
            await until(completed(cluster, "4.16.0"), 3600)
            await set_spec(cluster, upstream=service.url, channel="stable-4.16")
            await settled(lambda: _versions_are(cluster, ["4.17.0", "4.16.3"]))
            await set_desired(cluster, version="4.16.3")
            await until(completed(cluster, "4.16.3"), 3 * 3600)
            await settled(lambda: _versions_are(cluster, ["4.17.0"]))
            assert [r.query["version"] for r in service.requests] == [["4.16.0"], ["4.16.3"]]
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        run_virtual(body)


def test_a_stalled_update_service_holds_up_no_sweep() -> None:
    with UpdateService() as service:
        service.answer = Answer(stall="before-headers")  # never answers while the test runs

        async def body() -> None:
            cluster, clock = new_cluster()
            cv = cluster_version_object(cluster_id=str(uuid.uuid4()))
            cv["spec"].update(upstream=service.url, channel="stable-4.16")
            await cluster.create(cv)
            options = RefreshOptions(minimum_interval=300, client=UpdateServiceOptions(timeout=600),
                                     runtime_arch="amd64", default_update_service="")
            a = Harness(cluster, clock, "a", interval=60.0, updates=options)
            task = asyncio.create_task(a.replica.run())
            await settled(lambda: _asked(service))  # the fetch has begun, and will not end before the test
            await until(completed(cluster, "4.16.0"), 3600)  # the install went on regardless
            assert condition(await cluster.get(cv_ref()), "RetrievedUpdates").get("reason") == "NoCurrentVersion"
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        run_virtual(body)


async def _asked(service: UpdateService) -> bool:
    return bool(service.requests)
