"""The leader's fence covers every try of a write, against the real API server through the fault proxy.

The Kubernetes backend retries a write that fails transiently for about 6 s (``RetryPolicy``); with short
lease timings another replica may take the lease 2 s after this one's renew deadline has passed.  The
fence is asked again before every try the backend makes (the write guard), so a write whose lease went
stale while it was being retried is not sent again.

The fault is certain: the proxy answers the write's first try with a 503, and holds that answer until the
replica's lease is stale (nobody renews it), so the backend's next try is due after the lease went stale.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from cvo.clock import WallClock
from cvo.cluster.api import Ref
from cvo.cluster.kube import KubeCluster
from cvo.controller.fence import FencedCluster
from cvo.controller.lease import LeaderElector, LeaseLost, LeaseTimings, lease_ref
from tests.support.faultproxy import Decision, Fault, FaultPlan, FaultProxy

from .conftest import make_namespace
from .controlplane import ControlPlane

TIMINGS = LeaseTimings(lease_duration=3.0, renew_deadline=2.0, retry_period=1.0)


class HoldingProxy(FaultProxy):
    """The fault proxy, holding the answer to a request it fails with 503 until :attr:`release` is set."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.holding = threading.Event()  # a request is being held
        self.release = threading.Event()

    def decide(self, method: str, path: str, watch: bool) -> Decision:
        decision = super().decide(method, path, watch)
        if decision.fault is Fault.UNAVAILABLE:
            self.holding.set()
            self.release.wait(30)
        return decision


def configmap(namespace: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": namespace},
            "data": dict(data)}


def test_a_write_the_backend_retries_is_not_tried_again_once_the_lease_is_stale(
        control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cm"
    with HoldingProxy(control_plane.server_url, upstream_ca=control_plane.ca_path, plan=FaultPlan(rate=0.0)) as proxy:
        kubeconfig = proxy.write_kubeconfig(control_plane.kubeconfig_path, tmp_path / "proxy.kubeconfig")

        async def body() -> tuple[int, float]:
            cluster = KubeCluster.from_kubeconfig(str(kubeconfig))
            try:
                await make_namespace(cluster, namespace)
                elector = LeaderElector(cluster, WallClock(), "a", TIMINGS, ref=lease_ref(namespace, "fence"))
                await elector.acquire()
                fenced = FencedCluster(cluster, elector)
                created = await fenced.create(configmap(namespace, k="1"))
                proxy.fail_next("PUT", path, Fault.UNAVAILABLE, count=6)  # every try the backend would make
                write = asyncio.create_task(fenced.update({**created, "data": {"k": "2"}}))
                assert await asyncio.to_thread(proxy.holding.wait, 30), "the write never reached the proxy"
                async with asyncio.timeout(10):
                    while elector.may_write():  # nobody renews: stale once the renew deadline has passed
                        await asyncio.sleep(0.05)
                loop = asyncio.get_running_loop()
                stale_at = loop.time()
                proxy.release.set()  # the 503 reaches the backend only now
                with pytest.raises(LeaseLost):
                    await write
                assert (await cluster.get(Ref("", "ConfigMap", namespace, "cm")) or {}).get("data") == {"k": "1"}
                return fenced.refused, loop.time() - stale_at
            finally:
                await cluster.close()

        refused, took = asyncio.run(body())
        puts = [r for r in proxy.records if (r.method, r.path) == ("PUT", path)]
    assert [r.fault for r in puts] == [Fault.UNAVAILABLE.value]  # one try reached the proxy; none after it
    assert refused == 1  # by the guard: the fence's own check before the write passed
    print(f"refused {took:.2f}s after the lease went stale (the backend's first retry waits 0.25 s)")
