"""``cvo run`` records an update's nodes after the ClusterVersion completed: the worker pool goes on (one node at a
time here, after the masters), and every worker's drain and reboot still goes into the update's record."""

from __future__ import annotations

import asyncio

from cvo.clock import run_virtual
from cvo.operators.behaviour import Behaviours
from cvo.runner.durations import RECORDS_REF
from cvo.status.update_records import NodeTime, UpdateRecord, parse_records
from tests.support.controller_harness import Harness, completed, new_cluster, set_desired, until

MACHINES = {"default": {"delay": "10s"},
            "machine-config": {"nodes": {"drain": "1m", "reboot": "2m"}, "pools": {"master": 3, "worker": 4}}}


def test_the_worker_pools_nodes_are_recorded_after_the_update_completed() -> None:
    async def body() -> tuple[UpdateRecord, float]:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a", interval=3600.0, behaviours=Behaviours.parse(MACHINES))
        task = asyncio.create_task(a.replica.run())
        try:
            await until(completed(cluster, "4.16.0"), 3600)
            await set_desired(cluster, version="4.16.3")
            await until(completed(cluster, "4.16.3"), 3600)
            done_at = asyncio.get_running_loop().time()

            async def workers_recorded() -> bool:
                records = parse_records(await cluster.get(RECORDS_REF))
                pool = records[-1].pools.get("worker") if records else None
                return pool is not None and pool.done is not None

            waited = await until(workers_recorded, 3600, step=10.0)
            return parse_records(await cluster.get(RECORDS_REF))[-1], waited + done_at - done_at
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    record, waited = run_virtual(body)
    assert record.version == "4.16.3" and not record.partial
    worker = record.pools["worker"]
    assert waited > 0  # the workers were done after the ClusterVersion completed
    assert sorted(worker.nodes) == [f"worker-{i}" for i in range(4)]
    assert all(t == NodeTime(t.started, t.started + 60.0, t.started + 180.0) for t in worker.nodes.values())
    assert worker.done == max(t.done or 0.0 for t in worker.nodes.values())
