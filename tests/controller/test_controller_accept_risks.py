"""``spec.desiredUpdate.acceptRisks`` as the CVO's sync takes it (lib/validation ``ValidateClusterVersion``,
pkg/cvo/cvo.go ``sync``, pkg/cvo/status.go): without the ClusterUpdateAcceptRisks gate the desiredUpdate that
carries them is invalid (the Invalid condition, no update); with it they are no work for the sweep."""

from __future__ import annotations

import asyncio

from cvo.clock import run_virtual
from cvo.cluster.api import cv_ref
from tests.support.controller_harness import (
    Harness,
    completed,
    condition,
    history,
    new_cluster,
    set_desired,
    until,
)

RISKS = [{"name": "EtcdMigration"}]


def test_accept_risks_without_the_gate_void_the_update_until_they_are_withdrawn() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a", gated=False)
        task = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        await set_desired(cluster, version="4.16.3", acceptRisks=RISKS)

        async def invalid() -> bool:
            return condition(await cluster.get(cv_ref()), "Invalid").get("status") == "True"

        await until(invalid, 600)
        await asyncio.sleep(600)  # ten minutes on: still no update
        cv = await cluster.get(cv_ref())
        assert history(cv) == [("4.16.0", "Completed")]
        assert condition(cv, "Invalid")["message"] == ("The cluster version is invalid: spec.desiredUpdate.acceptRisks: "
                                                       "Forbidden: acceptRisks must not be specified")
        assert (condition(cv, "Progressing")["reason"], condition(cv, "Progressing")["message"]) == (
            "InvalidClusterVersion", "Stopped at 4.16.0: the cluster version is invalid")
        await set_desired(cluster, version="4.16.3")  # withdrawn: the update goes ahead
        await until(completed(cluster, "4.16.3"), 3 * 3600)
        assert condition(await cluster.get(cv_ref()), "Invalid") == {}
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run_virtual(body)


def test_with_the_gate_another_accepted_risk_does_not_restart_the_update() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a", gated=True)
        task = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        await set_desired(cluster, acceptRisks=RISKS)  # risks alone: no update
        await asyncio.sleep(300)
        cv = await cluster.get(cv_ref())
        assert history(cv) == [("4.16.0", "Completed")] and condition(cv, "Invalid") == {}
        await set_desired(cluster, version="4.16.3", acceptRisks=RISKS)

        async def updating() -> bool:
            return history(await cluster.get(cv_ref()))[:1] == [("4.16.3", "Partial")]

        await until(updating, 600)
        await set_desired(cluster, version="4.16.3", acceptRisks=[*RISKS, {"name": "AlertFiring"}])
        await until(completed(cluster, "4.16.3"), 3 * 3600)
        assert not [e for e in a.events.events if e.name == "controller.retarget"]
        assert history(await cluster.get(cv_ref())) == [("4.16.3", "Completed"), ("4.16.0", "Completed")]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run_virtual(body)
