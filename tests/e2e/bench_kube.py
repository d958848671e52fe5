"""Throughput of KubeCluster on the test control plane: N ConfigMaps created (then read, updated) by W workers.

    .venv/bin/python -m tests.e2e.bench_kube [--objects 500] [--workers 16] [--pool 32]

(from the repository root).  Prints requests/s per verb; the control plane runs on the same machine,
so the numbers include the API server's and etcd's share of the CPUs.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable

from cvo.cluster.api import Ref
from cvo.cluster.kube import KubeCluster


async def measure(cluster: KubeCluster, objects: int, workers: int) -> dict[str, float]:
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    names = [f"cm-{i:05d}" for i in range(objects)]
    live: dict[str, dict] = {}

    async def fan_out(op: Callable[[str], Awaitable[object]]) -> float:
        queue = list(names)

        async def worker() -> None:
            while queue:
                await op(queue.pop())

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(workers)))
        return objects / (time.perf_counter() - started)

    async def create(name: str) -> None:
        live[name] = await cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": name, "namespace": namespace},
                                           "data": {"key": "value " * 20, "name": name}})

    async def get(name: str) -> None:
        await cluster.get(Ref("", "ConfigMap", namespace, name))

    async def update(name: str) -> None:
        await cluster.update({**live[name], "data": {"key": "changed", "name": name}})

    rates = {"create": await fan_out(create), "get": await fan_out(get), "update": await fan_out(update)}
    started = time.perf_counter()
    listed = await cluster.list("", "ConfigMap", namespace)
    rates["list_seconds"] = time.perf_counter() - started
    assert len(listed) == objects
    return rates


def main() -> None:
    from tests.e2e.controlplane import ControlPlane

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=500)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--pool", type=int, default=32, help="KubeCluster(workers=...): threads and connections")
    args = parser.parse_args()
    with ControlPlane() as cp:
        async def run() -> dict[str, float]:
            cluster = KubeCluster.from_kubeconfig(cp.kubeconfig_path, workers=args.pool)
            try:
                return await measure(cluster, args.objects, args.workers)
            finally:
                await cluster.close()

        rates = asyncio.run(run())
    print(f"{args.objects} ConfigMaps, {args.workers} concurrent workers, pool {args.pool}: "
          f"create {rates['create']:.0f}/s, get {rates['get']:.0f}/s, update {rates['update']:.0f}/s, "
          f"list of all {rates['list_seconds'] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
