"""``cvo run`` keeps the ClusterOperators derived from workloads (docs/workload-status.md) written between its
sweeps, on every change of their workloads, as their operators would keep them: here a Deployment of the example
release fails an hour before the next reconcile, and its ClusterOperator says so at once."""

from __future__ import annotations

import asyncio
from typing import Any

from cvo.clock import run_virtual
from cvo.cluster.api import Ref, co_ref
from cvo.runner.releases import FILE_SCHEME
from tests.support.controller_harness import Harness, completed, new_cluster, until
from tests.support.helpers import PAYLOADS

WEB = Ref("apps", "Deployment", "shop", "web")
MESSAGE = 'ReplicaSet "web-5d8f" has timed out progressing.'


def test_between_sweeps_a_failing_workload_degrades_its_cluster_operator_at_once() -> None:
    async def body() -> dict[str, Any]:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a", interval=3600.0)
        a.own = FILE_SCHEME + str((PAYLOADS / "apps-1.0.0").resolve())
        task = asyncio.create_task(a.replica.run())
        try:
            await until(completed(cluster, "1.0.0"), 3600)
            await asyncio.sleep(10)  # the next sweep is an hour away
            web = await cluster.get(WEB)
            assert web is not None
            await cluster.update_status({**web, "status": {
                **web["status"], "availableReplicas": 0, "readyReplicas": 0,
                "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
                               {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                                "message": MESSAGE}]}})
            await asyncio.sleep(2)
            co = await cluster.get(co_ref("shop"))
            assert co is not None
            assert a.replica.controller is not None and a.replica.controller.state.sweeps == 1
            return {c["type"]: (c["status"], c.get("message", "")) for c in co["status"]["conditions"]}
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    conditions = run_virtual(body)
    assert conditions["Degraded"] == ("True", f"deployment shop/web: {MESSAGE}")
    assert conditions["Available"] == ("False", f"deployment shop/web: {MESSAGE}")
