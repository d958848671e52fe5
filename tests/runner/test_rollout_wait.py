"""A manifest's ``release.cvo.dev/wait-for-rollout`` (cvo/runner/health.py ``check_for_manifest``): "true" makes the
sweep wait until the workload has rolled out by kstatus's rules, in every mode, on the kind's watch; "false" skips
even the CVO's own Deployment check.  The deployment controller's part (writing the status) is the test's, on the
embedded cluster and the virtual clock."""

from __future__ import annotations

import asyncio
from typing import Any

from cvo.clock import Clock
from cvo.cluster.api import Ref
from cvo.cluster.embedded.server import SimCluster
from cvo.payload.graph import Mode
from cvo.runner.health import WAIT_FOR_ROLLOUT, check_rollout
from tests.runner.test_runner_worker import EPOCH, new_cluster, release_of, sweep, virtual
from tests.support.helpers import HA, ReleaseFactory, obj

APP = Ref("apps", "Deployment", "ns", "app")


def app(wait: str | None, version: str = "1") -> dict[str, Any]:
    annotations = dict(HA) | ({WAIT_FOR_ROLLOUT: wait} if wait is not None else {})
    return obj("Deployment", "app", "ns", api="apps/v1", annotations=annotations, spec={
        "replicas": 2, "selector": {"matchLabels": {"app": "app"}},
        "template": {"metadata": {"labels": {"app": "app"}},
                     "spec": {"containers": [{"name": "app", "image": f"example.com/app:{version}"}]}}})


async def controller_writes(cluster: SimCluster, ready: int, deadline: bool = False) -> None:
    live = await cluster.get(APP)
    assert live is not None
    conditions = [{"type": "Available", "status": "True" if ready == 2 else "False"}]
    if deadline:
        conditions.append({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                           "message": 'ReplicaSet "app-1" has timed out progressing.'})
    await cluster.update_status({**live, "status": {
        "observedGeneration": live["metadata"].get("generation", 1), "replicas": 2, "updatedReplicas": 2,
        "readyReplicas": ready, "availableReplicas": ready, "conditions": conditions}})


def test_the_sweep_waits_for_a_rollout_the_manifest_asks_for_even_at_install(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, "4.16.0", {"0000_50_app_01_deployment.yaml": app("true")})

    async def main() -> Any:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        task = asyncio.create_task(sweep(cluster, clock, release, Mode.INSTALL))
        await asyncio.sleep(30)
        assert not task.done()  # nothing rolled out: the sweep waits
        await controller_writes(cluster, ready=1)
        await asyncio.sleep(30)
        assert not task.done()
        await controller_writes(cluster, ready=2)
        result, _ = await asyncio.wait_for(task, 120)  # the next change is the one it waits for
        return result

    assert virtual(main).ok


def test_without_the_annotation_an_install_does_not_wait(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, "4.16.0", {"0000_50_app_01_deployment.yaml": app(None)})

    async def main() -> Any:
        clock = Clock(EPOCH)
        result, _ = await asyncio.wait_for(sweep(new_cluster(clock), clock, release, Mode.INSTALL), 5)
        return result

    assert virtual(main).ok


def test_false_opts_out_of_the_cvos_own_deployment_check(make_release: ReleaseFactory) -> None:
    """A Deployment past its progress deadline fails an update's task (lib/resourcebuilder/apps.go); the
    opted-out one does not."""

    def reconcile(wait: str | None) -> Any:
        release = release_of(make_release, "4.16.1" if wait else "4.16.0",
                             {"0000_50_app_01_deployment.yaml": app(wait)})

        async def main() -> Any:
            clock = Clock(EPOCH)
            cluster = new_cluster(clock)
            first, _ = await sweep(cluster, clock, release, Mode.INSTALL)
            assert first.ok
            await controller_writes(cluster, ready=0, deadline=True)
            result, _ = await asyncio.wait_for(sweep(cluster, clock, release, Mode.RECONCILE, timeout=600.0), 3600)
            return result

        return virtual(main)

    assert not reconcile(None).ok
    assert reconcile("false").ok


def test_check_rollout_messages() -> None:
    live = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app", "namespace": "ns"},
            "spec": {"replicas": 2}, "status": {"replicas": 2, "updatedReplicas": 1}}
    error = check_rollout(live)
    assert error is not None and str(error) == "deployment ns/app is rolling out: Updated: 1/2"
    live["status"] = {"conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                                      "message": "timed out"}]}
    error = check_rollout(live)
    assert error is not None and error.reason == "WorkloadNotProgressing" and error.nested == "timed out"
