"""A cluster that goes down in the middle of a sweep, on the embedded cluster and virtual time.

Inside the sweep the CVO's rules hold (tasks back off and fail with ``UpdatePayloadClusterDown``,
attempts are retried); the ClusterVersion status writes that fail meanwhile do not stop it.  When
the cluster comes back, the sweep completes and the status is written; when it stays down until
the budget runs out, the sweep fails with the CVO's reason.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import ApiError, ApiErrorKind, Object, Ref, cv_ref
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.cluster.persist import Budget
from cvo.payload.graph import Mode
from cvo.payload.loader import load_release
from cvo.runner.events import Recorder
from cvo.runner.sweep import SweepOptions, SweepResult
from cvo.runner.worker import Worker
from tests.support.helpers import ReleaseFactory, obj

EPOCH = datetime(2025, 6, 1, tzinfo=UTC)


class Outage:
    """The embedded cluster, refusing every request for ``duration`` seconds from the sweep's first
    read of a ConfigMap (the first task) on."""

    def __init__(self, cluster: SimCluster, duration: float) -> None:
        self.cluster, self.duration = cluster, duration
        self.start: float | None = None
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        verb = getattr(self.cluster, name)
        if name not in ("get", "list", "create", "update", "update_status", "delete", "serves"):
            return verb

        async def call(*args: Any, **kwargs: Any) -> Any:
            now = asyncio.get_running_loop().time()
            if self.start is None and args and isinstance(args[0], Ref) and args[0].kind == "ConfigMap":
                self.start = now
            if self.start is not None and now < self.start + self.duration:
                self.refused += 1
                raise ApiError(ApiErrorKind.TIMEOUT, f"{name}: the API server is unreachable (connection refused)")
            return await verb(*args, **kwargs)

        return call


def sweep(make_release: ReleaseFactory, duration: float) -> tuple[SweepResult, Recorder, Object | None, int]:
    files = {f"0000_{10 + i}_c{i}_cm.yaml": obj("ConfigMap", f"cm{i}", "ns", data={"v": "2"}) for i in range(5)}
    release = load_release(make_release(files, version="4.17.0", name="r"))

    async def main() -> tuple[SweepResult, Recorder, Object | None, int]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        down = Outage(cluster, duration)
        rec = Recorder()
        options = SweepOptions(interval=60.0, timeout=600.0, budget=Budget.of(600.0))
        result = await Worker(down, release, Mode.UPDATE, rec, clock, options).run()  # type: ignore[arg-type]
        return result, rec, await cluster.get(cv_ref()), down.refused

    return run_virtual(main)


def test_the_sweep_rides_out_an_outage_and_records_its_result_when_the_cluster_is_back(
        make_release: ReleaseFactory) -> None:
    result, rec, cv, refused = sweep(make_release, duration=100.0)
    assert refused > 0
    assert result.ok and result.completed
    failed = [e for e in rec.events if e.name == "attempt.failed"]
    assert failed and failed[0].fields["reason"] == "UpdatePayloadClusterDown"  # the CVO's reason, meanwhile
    assert any(e.name == "task.failed" and e.fields["reason"] == "UpdatePayloadClusterDown" for e in rec.events)
    assert cv is not None
    assert [(h["version"], h["state"]) for h in cv["status"]["history"]] == [("4.17.0", "Completed")]


def test_a_cluster_that_stays_down_fails_the_sweep_with_the_cvos_reason(make_release: ReleaseFactory) -> None:
    result, rec, _, _ = sweep(make_release, duration=10_000.0)
    assert not result.ok and not result.completed
    assert result.failure is not None and result.failure.reason == "UpdatePayloadClusterDown"
    assert 'Could not update configmap "ns/cm0"' in result.message
    assert any(e.name == "status.unwritten" for e in rec.events)
    assert any(e.name == "sweep.timeout" for e in rec.events)
