"""The sync worker end to end on the simulated cluster (pkg/cvo/sync_worker.go, pkg/payload/task.go): retries, back-off,
timeouts, ClusterOperator waits, progress and ClusterVersion status, cancellation and modes.

Everything runs on the virtual clock; event timestamps are simulated seconds since ``EPOCH``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import CLUSTER_OPERATOR, ApiErrorKind, Ref, co_ref, cv_ref
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.operators.behaviour import Behaviour, Behaviours, Window
from cvo.operators.library.clusteroperator import Condition, report_status
from cvo.operators.simulated import OperatorSimulator
from cvo.payload.filters import ApplyFilter
from cvo.payload.graph import Mode
from cvo.payload.loader import Release, load_release
from cvo.runner.backoff import INSTALL_BACKOFF, UPDATE_BACKOFF, Backoff
from cvo.runner.events import Event, Recorder
from cvo.runner.sweep import SweepOptions, SweepResult, WrongRelease
from cvo.runner.worker import Worker
from tests.support.helpers import PAYLOADS, ReleaseFactory, cluster_operator, obj

EPOCH = datetime(2025, 6, 1, 0, 0, 0, tzinfo=UTC)
CM = Ref("", "ConfigMap", "ns", "cm")
OLD, NEW = "4.16.0", "4.17.0"


# --- harness ------------------------------------------------------------------------------------------


def secs(event: Event) -> float:
    return (event.time - EPOCH).total_seconds()


def named(rec: Recorder, name: str, **match: Any) -> list[Event]:
    return [e for e in rec.events if e.name == name and all(e.fields.get(k) == v for k, v in match.items())]


def first(rec: Recorder, name: str, **match: Any) -> Event:
    found = named(rec, name, **match)
    assert found, f"no {name} event with {match}"
    return found[0]


def conditions(cv: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (cv.get("status") or {}).get("conditions") or []}


def condition_events(rec: Recorder, type_: str) -> list[Event]:
    return [e for e in rec.events if e.name == "condition.changed" and e.fields["type"] == type_]


def new_cluster(clock: Clock) -> SimCluster:
    return SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))


def release_of(make_release: ReleaseFactory, version: str, files: dict[str, object]) -> Release:
    return load_release(make_release(files, version=version, name=f"r-{version}"))


def options(**kw: Any) -> SweepOptions:
    kw.setdefault("timeout", 4 * 3600.0)
    return SweepOptions(**kw)


async def sweep(cluster: SimCluster, clock: Clock, release: Release, mode: Mode, rec: Recorder | None = None,
                **kw: Any) -> tuple[SweepResult, Recorder]:
    rec = rec or Recorder()
    result = await Worker(cluster, release, mode, rec, clock, options(**kw)).run()
    return result, rec


async def start_sim(cluster: SimCluster, clock: Clock, releases: list[Release],
                    behaviours: Behaviours | None = None) -> OperatorSimulator:
    sim = OperatorSimulator(cluster, clock, behaviours or Behaviours(default=Behaviour(delay=10)))
    for release in releases:
        sim.register_release(release)
    await sim.start()
    return sim


def virtual(main: Callable[[], Awaitable[Any]]) -> Any:
    return run_virtual(main)


def operator_deployment(component: str, version: str, namespace: str = "ns") -> dict[str, Any]:
    return obj("Deployment", f"{component}-operator", namespace, api="apps/v1", spec={
        "replicas": 1,
        "selector": {"matchLabels": {"app": component}},
        "template": {"metadata": {"labels": {"app": component}}, "spec": {"containers": [{
            "name": "operator", "image": f"quay.io/demo/{component}:{version}",
            "env": [{"name": "RELEASE_VERSION", "value": version}]}]}},
    })


def operator_payload(version: str, extra: dict[str, object] | None = None) -> dict[str, object]:
    """foo at run level 10 (Deployment, then ClusterOperator), then a ConfigMap at run level 20."""
    files: dict[str, object] = {
        "0000_10_foo_05_deployment.yaml": operator_deployment("foo", version),
        "0000_10_foo_06_clusteroperator.yaml": cluster_operator("foo", version),
        "0000_20_bar_01_configmap.yaml": obj("ConfigMap", "after-foo", "ns", data={"v": version}),
    }
    files.update(extra or {})
    return files


async def write_co(cluster: SimCluster, clock: Clock, name: str, version: str | None, available: str = "True",
                   degraded: str = "False", **extra: str) -> None:
    conds = [Condition("Available", available, "A", f"available={available}"),
             Condition("Degraded", degraded, "D", f"degraded={degraded}" if degraded == "True" else "")]
    conds += [Condition(t, s, "X") for t, s in extra.items()]
    await report_status(cluster, name, clock.now(), versions=None if version is None else {"operator": version},
                        conditions=conds)


# --- Backoff.schedule ---------------------------------------------------------------------------------


def test_update_backoff_schedule_is_two_calls() -> None:
    assert Backoff(10.0, 1.3, 3, 15.0) == UPDATE_BACKOFF
    assert UPDATE_BACKOFF.schedule() == (2, [10.0, 13.0])


def test_install_backoff_schedule_is_four_calls() -> None:
    assert Backoff(1.0, 2.0, 4, 15.0) == INSTALL_BACKOFF
    assert INSTALL_BACKOFF.schedule() == (4, [1.0, 2.0, 4.0])


@pytest.mark.parametrize(("backoff", "expected"), [
    (Backoff(1.0, 2.0, 1, 15.0), (1, [])),
    (Backoff(5.0, 1.0, 3, 0.0), (3, [5.0, 5.0])),
    (Backoff(10.0, 2.0, 5, 15.0), (1, [10.0])),  # 20 > cap after the first step: steps drop to 0
    (Backoff(1.0, 2.0, 0, 15.0), (0, [])),
])
def test_backoff_schedule_edge_cases(backoff: Backoff, expected: tuple[int, list[float]]) -> None:
    assert backoff.schedule() == expected


# --- per-task retries ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "failures", "retry_times", "applied_at"), [
    (Mode.UPDATE, 1, [0.0], 10.0),
    (Mode.INSTALL, 3, [0.0, 1.0, 3.0], 7.0),
])
def test_transient_errors_are_retried_then_succeed(make_release: ReleaseFactory, mode: Mode, failures: int,
                                                   retry_times: list[float], applied_at: float) -> None:
    release = release_of(make_release, NEW, {"0000_10_a_cm.yaml": obj("ConfigMap", "cm", "ns", data={"a": "1"})})

    async def main() -> tuple[SweepResult, Recorder, SimCluster]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        cluster.inject_failure(CM, ApiErrorKind.TIMEOUT, count=failures)
        result, rec = await sweep(cluster, clock, release, mode)
        return result, rec, cluster

    result, rec, _cluster = virtual(main)
    assert result.ok and result.attempts == 1
    assert [secs(e) for e in named(rec, "task.retry")] == retry_times
    assert all(e.fields["error"] == "Timeout" for e in named(rec, "task.retry"))
    assert secs(first(rec, "task.applied")) == applied_at
    assert named(rec, "task.failed") == []


REASONS = [
    (ApiErrorKind.NOT_FOUND, "UpdatePayloadResourceNotFound", ": resource may have been deleted"),
    (ApiErrorKind.ALREADY_EXISTS, "UpdatePayloadResourceNotFound", ": resource may have been deleted"),
    (ApiErrorKind.CONFLICT, "UpdatePayloadResourceConflict", ""),
    (ApiErrorKind.TIMEOUT, "UpdatePayloadClusterDown", ""),
    (ApiErrorKind.INTERNAL, "UpdatePayloadClusterError", ""),
    (ApiErrorKind.INVALID, "UpdatePayloadResourceInvalid", ""),
    (ApiErrorKind.UNAUTHORIZED, "UpdatePayloadClusterUnauthorized", ""),
    (ApiErrorKind.FORBIDDEN, "UpdatePayloadResourceForbidden", ": the server has forbidden updates to this resource"),
    (ApiErrorKind.SERVER_TIMEOUT, "UpdatePayloadClusterOverloaded", ""),
    (ApiErrorKind.OTHER, "UpdatePayloadFailed", ""),
]


@pytest.mark.parametrize(("kind", "reason", "cause"), REASONS)
def test_persistent_errors_are_wrapped_with_the_reason_table(make_release: ReleaseFactory, kind: ApiErrorKind,
                                                             reason: str, cause: str) -> None:
    release = release_of(make_release, NEW, {"0000_10_a_cm.yaml": obj("ConfigMap", "cm", "ns", data={"a": "1"})})

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        cluster.inject_failure(CM, kind, count=2)  # both calls of the update back-off fail
        return await sweep(cluster, clock, release, Mode.UPDATE)

    result, rec = virtual(main)
    failed = first(rec, "task.failed")
    message = f'Could not update configmap "ns/cm" (1 of 1){cause}'
    assert failed.fields["reason"] == reason
    assert failed.fields["message"] == message
    # Two calls 10 s apart, then the trailing 13 s wait before giving up.
    assert [secs(e) for e in named(rec, "task.retry")] == [0.0, 10.0]
    assert secs(failed) == 23.0
    attempt_failed = first(rec, "attempt.failed")
    assert attempt_failed.fields["reason"] == reason
    assert attempt_failed.fields["message"] == message
    failing = [e for e in condition_events(rec, "Failing") if e.fields["status"] == "True"]
    assert failing and failing[0].fields["reason"] == reason and failing[0].fields["message"] == message
    progressing = [e for e in condition_events(rec, "Progressing") if e.fields["reason"] == reason]
    assert progressing[0].fields["message"] == f"Unable to apply {NEW}: the update could not be applied"
    # The second attempt, after the back-off, succeeds: the injected failures are used up.
    assert result.ok and result.attempts == 2
    assert conditions(result.cluster_version)["Failing"]["status"] == "False"


def test_failed_attempt_is_retried_after_the_backoff(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, {"0000_10_a_cm.yaml": obj("ConfigMap", "cm", "ns")})

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        cluster.inject_failure(CM, ApiErrorKind.FORBIDDEN, count=2)
        return await sweep(cluster, clock, release, Mode.UPDATE, interval=160.0)

    result, rec = virtual(main)
    started = named(rec, "attempt.started")
    assert len(started) == 2 and result.ok
    failed = first(rec, "attempt.failed")
    # interval/16 * 2 = interval/8, with up to 20 % jitter.
    assert 20.0 <= failed.fields["retry_in"] <= 24.0
    assert secs(started[1]) == pytest.approx(secs(failed) + failed.fields["retry_in"], abs=0.1)
    assert named(rec, "attempt.woken") == []


def test_backoff_grows_interval_8_4_2_then_interval(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, {"0000_10_a_cm.yaml": obj("ConfigMap", "cm", "ns")})

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        cluster.inject_failure(CM, ApiErrorKind.FORBIDDEN, count=10)  # five failed attempts
        return await sweep(cluster, clock, release, Mode.UPDATE, interval=160.0)

    result, rec = virtual(main)
    waits = [e.fields["retry_in"] for e in named(rec, "attempt.failed")]
    assert len(waits) == 5 and result.ok
    for wait, base in zip(waits, [20.0, 40.0, 80.0, 160.0, 160.0], strict=True):
        assert base <= wait <= base * 1.2 + 0.1


def test_backoff_is_woken_early_by_a_cluster_operator_change(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, {
        "0000_10_a_cm.yaml": obj("ConfigMap", "cm", "ns"),
        "0000_20_foo_co.yaml": cluster_operator("foo", NEW),
    })

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", OLD, available="False")
        cluster.inject_failure(CM, ApiErrorKind.FORBIDDEN, count=2)

        async def operator() -> None:
            await asyncio.sleep(100)  # long after the first attempt failed (t=23), inside its back-off
            await write_co(cluster, clock, "foo", NEW)

        helper = asyncio.create_task(operator())
        result = await sweep(cluster, clock, release, Mode.UPDATE, interval=1600.0)  # back-off >= 200 s
        await helper
        return result

    result, rec = virtual(main)
    assert result.ok
    started = named(rec, "attempt.started")
    assert len(started) == 2
    assert secs(first(rec, "attempt.failed")) == 23.0
    assert first(rec, "attempt.failed").fields["retry_in"] >= 200
    assert named(rec, "attempt.woken")
    assert secs(started[1]) == 100.0


def test_backoff_is_not_woken_by_an_irrelevant_cluster_operator_change(make_release: ReleaseFactory) -> None:
    """pkg/cvo/sync_worker.go `NotifyAboutManagedResourceActivity` (PR #818): only changes to versions[name=operator], Available or Degraded wake the worker."""
    release = release_of(make_release, NEW, {
        "0000_10_a_cm.yaml": obj("ConfigMap", "cm", "ns"),
        "0000_20_foo_co.yaml": cluster_operator("foo", NEW),
    })

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", NEW)
        cluster.inject_failure(CM, ApiErrorKind.FORBIDDEN, count=2)

        async def operator() -> None:
            await asyncio.sleep(100)
            # Only Upgradeable and relatedObjects change.
            await report_status(cluster, "foo", clock.now(), conditions=[Condition("Upgradeable", "False", "Busy")],
                                related_objects=[{"group": "", "resource": "namespaces", "name": "x"}])

        helper = asyncio.create_task(operator())
        result = await sweep(cluster, clock, release, Mode.UPDATE, interval=1600.0)
        await helper
        return result

    result, rec = virtual(main)
    assert result.ok
    failed = first(rec, "attempt.failed")
    assert named(rec, "attempt.woken") == []
    assert secs(named(rec, "attempt.started")[1]) == pytest.approx(secs(failed) + failed.fields["retry_in"], abs=0.1)


# --- timeouts -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "factor"), [(Mode.INSTALL, 1), (Mode.UPDATE, 2), (Mode.RECONCILE, 2)])
def test_the_apply_timeout_ends_an_attempt(make_release: ReleaseFactory, mode: Mode, factor: int) -> None:
    release = release_of(make_release, NEW, {"0000_20_foo_co.yaml": cluster_operator("foo", NEW)})

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", NEW, available="False")  # never becomes available
        return await sweep(cluster, clock, release, mode, interval=100.0, timeout=1000.0)

    result, rec = virtual(main)
    started, failed = named(rec, "attempt.started"), named(rec, "attempt.failed")
    assert secs(started[0]) == 0.0
    assert secs(failed[0]) == 100.0 * factor
    assert failed[0].fields["reason"] == "ClusterOperatorNotAvailable"
    assert failed[0].fields["message"] == "Cluster operator foo is not available"
    assert not result.ok


def test_the_sweep_timeout_returns_the_failing_message(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, {"0000_20_foo_co.yaml": cluster_operator("foo", NEW)})

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", NEW, available="False")
        return await sweep(cluster, clock, release, Mode.UPDATE, interval=100.0, timeout=1000.0)

    result, rec = virtual(main)
    assert result.ok is False and result.completed is False
    assert result.message == "Cluster operator foo is not available"
    assert result.failure is not None and result.failure.reason == "ClusterOperatorNotAvailable"
    assert (result.finished - result.started).total_seconds() == pytest.approx(1000.0, abs=0.01)
    assert named(rec, "sweep.timeout")
    cv = conditions(result.cluster_version)
    assert cv["Failing"]["status"] == "True"
    assert cv["Failing"]["reason"] == "ClusterOperatorNotAvailable"
    assert cv["Progressing"]["message"] == f"Unable to apply {NEW}: the cluster operator foo is not available"
    assert cv["Available"]["status"] == "False"


def test_a_cluster_operator_without_versions_fails(make_release: ReleaseFactory) -> None:
    co = cluster_operator("foo", NEW)
    co["status"] = {}
    release = release_of(make_release, NEW, {"0000_20_foo_co.yaml": co})

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", NEW)
        return await sweep(cluster, clock, release, Mode.UPDATE, interval=100.0, timeout=600.0)

    result, rec = virtual(main)
    assert not result.ok
    assert result.message == "Cluster operator foo does not declare expected versions"
    assert first(rec, "task.failed").fields["reason"] == "ClusterOperatorNoVersions"


# --- event-driven ClusterOperator waits ---------------------------------------------------------------


def _watch_ready(cluster: SimCluster, clock: Clock, name: str, version: str, seen: dict[str, float]) -> asyncio.Task:
    async def watch() -> None:
        async for event in cluster.watch(*CLUSTER_OPERATOR):
            if (event.obj.get("metadata") or {}).get("name") != name or "ready" in seen:
                continue
            status = event.obj.get("status") or {}
            versions = {v["name"]: v["version"] for v in status.get("versions") or []}
            conds = {c["type"]: c["status"] for c in status.get("conditions") or []}
            if versions.get("operator") == version and conds.get("Available") == "True" \
                    and conds.get("Degraded") == "False":
                seen["ready"] = asyncio.get_running_loop().time()

    return asyncio.create_task(watch())


def test_a_dependent_task_starts_as_soon_as_the_operator_is_ready(make_release: ReleaseFactory) -> None:
    old = release_of(make_release, OLD, operator_payload(OLD))
    new = release_of(make_release, NEW, operator_payload(NEW))

    async def main() -> tuple[SweepResult, Recorder, dict[str, float], float]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        sim = await start_sim(cluster, clock, [old, new], Behaviours(default=Behaviour(delay=37.3)))
        installed, _ = await sweep(cluster, clock, old, Mode.INSTALL)
        assert installed.ok
        seen: dict[str, float] = {}
        watcher = _watch_ready(cluster, clock, "foo", NEW, seen)
        begin = asyncio.get_running_loop().time()
        result, rec = await sweep(cluster, clock, new, Mode.UPDATE)
        watcher.cancel()
        await sim.stop()
        return result, rec, seen, begin

    result, rec, seen, begin = virtual(main)
    assert result.ok and result.attempts == 1
    ready = (seen["ready"] - 0.0)
    applied = first(rec, "task.applied", task='configmap "ns/after-foo" (3 of 3)')
    waiting = first(rec, "task.waiting", operator="foo")
    assert waiting.fields["reason"] == "ClusterOperatorUpdating"
    # The operator rolled out 37.3 s after its Deployment was applied, and the dependent task started
    # within 0 simulated seconds of that (no polling, no back-off).
    deployment_applied = first(rec, "task.applied", task='deployment "ns/foo-operator" (1 of 3)')
    assert ready == pytest.approx(secs(deployment_applied) + 37.3, abs=1e-6)
    assert secs(applied) == pytest.approx(ready, abs=1e-6)
    assert secs(first(rec, "operator.ready", operator="foo")) == pytest.approx(ready, abs=1e-6)
    assert first(rec, "operator.ready", operator="foo").fields["waited"] == pytest.approx(37.3, abs=1e-6)
    assert begin <= secs(deployment_applied)


class CountingReads:
    """The cluster as the worker sees it, counting its reads (the simulated operators use the cluster itself)."""

    def __init__(self, inner: SimCluster) -> None:
        self.inner = inner
        self.gets: list[Ref] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def get(self, ref: Ref) -> dict[str, Any] | None:
        self.gets.append(ref)
        return await self.inner.get(ref)


def test_a_cluster_operator_wait_reads_nothing_while_the_watch_runs(make_release: ReleaseFactory) -> None:
    """Its checks use what the ClusterOperator watch delivered (as the CVO's informer cache), not a GET per
    report; the dependent still starts the moment the operator is ready."""
    old = release_of(make_release, OLD, operator_payload(OLD))
    new = release_of(make_release, NEW, operator_payload(NEW))

    async def main() -> tuple[SweepResult, Recorder, list[Ref], list[Ref]]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        sim = await start_sim(cluster, clock, [old, new], Behaviours(default=Behaviour(delay=37.3)))
        counting = CountingReads(cluster)
        installed = await Worker(counting, old, Mode.INSTALL, Recorder(), clock, options()).run()  # type: ignore[arg-type]
        assert installed.ok
        at_install = list(counting.gets)
        counting.gets.clear()
        rec = Recorder()
        result = await Worker(counting, new, Mode.UPDATE, rec, clock, options()).run()  # type: ignore[arg-type]
        await sim.stop()
        return result, rec, at_install, counting.gets

    result, rec, at_install, at_update = virtual(main)
    assert result.ok and result.attempts == 1
    assert first(rec, "task.waiting", operator="foo") and first(rec, "operator.ready", operator="foo")
    assert [r for r in at_install if r.kind == "ClusterOperator"] == []
    # The update mode reads the ClusterOperator in the precreate pass and to apply it (get, then merge),
    # never to check it.
    assert [r for r in at_update if r.kind == "ClusterOperator"] == [co_ref("foo")] * 2
    applied = first(rec, "task.applied", task='configmap "ns/after-foo" (3 of 3)')
    assert secs(applied) == pytest.approx(secs(first(rec, "operator.ready", operator="foo")), abs=1e-6)


# --- progress and ClusterVersion conditions -----------------------------------------------------------


def test_progress_and_conditions_while_waiting_then_on_completion(make_release: ReleaseFactory) -> None:
    files = {
        "0000_05_a_cm.yaml": [obj("ConfigMap", "c1", "ns"), obj("ConfigMap", "c2", "ns"), obj("ConfigMap", "c3", "ns")],
        "0000_10_foo_co.yaml": cluster_operator("foo", NEW),
        "0000_20_b_cm.yaml": obj("ConfigMap", "c4", "ns"),
    }
    release = release_of(make_release, NEW, files)
    snapshot: dict[str, Any] = {}

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", OLD)  # available, not degraded, old version

        async def operator() -> None:
            await asyncio.sleep(300)
            snapshot["cv"] = await cluster.get(cv_ref())
            snapshot["c4"] = await cluster.get(Ref("", "ConfigMap", "ns", "c4"))
            await write_co(cluster, clock, "foo", NEW)

        helper = asyncio.create_task(operator())
        result = await sweep(cluster, clock, release, Mode.UPDATE, interval=600.0)
        await helper
        return result

    result, _rec = virtual(main)
    assert result.ok and result.attempts == 1
    waiting_cv = conditions(snapshot["cv"])
    assert waiting_cv["Progressing"]["status"] == "True"
    assert waiting_cv["Progressing"]["reason"] == "ClusterOperatorUpdating"
    assert waiting_cv["Progressing"]["message"] == f"Working towards {NEW}: 3 of 5 done (60% complete), waiting on foo"
    assert waiting_cv["Failing"]["status"] == "False"
    assert waiting_cv["Available"]["status"] == "False"
    assert snapshot["cv"]["status"]["history"][0]["state"] == "Partial"
    assert snapshot["c4"] is None  # behind the operator
    assert result.done == result.total == 5
    cv = result.cluster_version
    history = cv["status"]["history"]
    assert len(history) == 1
    assert history[0]["state"] == "Completed" and history[0]["version"] == NEW
    assert history[0]["completionTime"] == "2025-06-01T00:05:00Z"
    assert cv["status"]["desired"]["version"] == NEW
    conds = conditions(cv)
    assert conds["Available"]["status"] == "True"
    assert conds["Available"]["message"] == f"Done applying {NEW}"
    assert conds["Progressing"]["status"] == "False"
    assert conds["Progressing"]["message"] == f"Cluster version is {NEW}"
    assert conds["Failing"]["status"] == "False"


def test_skipped_tasks_are_not_counted_in_done(make_release: ReleaseFactory) -> None:
    console = obj("ConfigMap", "console", "ns", annotations={
        "include.release.openshift.io/self-managed-high-availability": "true",
        "capability.openshift.io/name": "Console"})
    release = release_of(make_release, NEW, {
        "0000_10_a_cm.yaml": obj("ConfigMap", "c1", "ns"),
        "0000_10_b_console.yaml": console,
        "0000_10_c_cm.yaml": obj("ConfigMap", "c2", "ns"),
    })
    no_console = ApplyFilter(enabled_capabilities=frozenset())

    async def main() -> tuple[SweepResult, Recorder, SimCluster]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        result, rec = await sweep(cluster, clock, release, Mode.INSTALL, capabilities=no_console)
        return result, rec, cluster

    result, rec, _cluster = virtual(main)
    assert result.ok
    assert result.total == 3
    assert result.done == 2
    assert [e.fields["task"] for e in named(rec, "task.skipped")] == ['configmap "ns/console" (2 of 3)']
    assert named(rec, "task.applied", task='configmap "ns/console" (2 of 3)') == []


def test_progress_percentage_excludes_skipped_tasks(make_release: ReleaseFactory) -> None:
    console = obj("ConfigMap", "console", "ns", annotations={
        "include.release.openshift.io/self-managed-high-availability": "true",
        "capability.openshift.io/name": "Console"})
    release = release_of(make_release, NEW, {
        "0000_05_a_cm.yaml": [obj("ConfigMap", "c1", "ns"), console],
        "0000_10_foo_co.yaml": cluster_operator("foo", NEW),
    })
    snapshot: dict[str, Any] = {}

    async def main() -> SweepResult:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", OLD)

        async def operator() -> None:
            await asyncio.sleep(60)
            snapshot["cv"] = await cluster.get(cv_ref())
            await write_co(cluster, clock, "foo", NEW)

        helper = asyncio.create_task(operator())
        result, _ = await sweep(cluster, clock, release, Mode.UPDATE, capabilities=ApplyFilter(
            enabled_capabilities=frozenset()))
        await helper
        return result

    result = virtual(main)
    assert result.ok
    assert conditions(snapshot["cv"])["Progressing"]["message"] == (
        f"Working towards {NEW}: 1 of 3 done (33% complete), waiting on foo")


def test_install_of_the_demo_payload_completes(tmp_path: Path) -> None:
    release = load_release(PAYLOADS / "demo-4.16.0")

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock)
        sim = await start_sim(cluster, clock, [release], Behaviours(default=Behaviour(delay=60)))
        result, rec = await sweep(cluster, clock, release, Mode.INSTALL)
        await sim.stop()
        return result, rec

    result, _rec = virtual(main)
    assert result.ok and result.completed and result.attempts == 1
    assert result.done == result.total == len(release.manifests)
    cv = result.cluster_version
    assert [h["state"] for h in cv["status"]["history"]] == ["Completed"]
    conds = conditions(cv)
    assert conds["Available"]["message"] == "Done applying 4.16.0"
    assert (conds["Progressing"]["status"], conds["Progressing"]["message"]) == ("False", "Cluster version is 4.16.0")
    assert conds["Failing"]["status"] == "False"
    assert conds["ReleaseAccepted"]["reason"] == "PayloadLoaded"


def test_install_with_a_degraded_operator_completes_with_failing(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, operator_payload(NEW))
    behaviours = Behaviours(default=Behaviour(delay=10),
                            operators={"foo": Behaviour(delay=10, degraded=Window(0.0, None),
                                                        degraded_message="disk is full")})

    async def main() -> tuple[SweepResult, Recorder, SimCluster]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        sim = await start_sim(cluster, clock, [release], behaviours)
        result, rec = await sweep(cluster, clock, release, Mode.INSTALL)
        await sim.stop()
        return result, rec, cluster

    result, rec, _cluster = virtual(main)
    assert result.completed is True
    assert result.ok is False
    assert result.attempts == 1
    assert [e.reason for e in result.report_errors] == ["ClusterOperatorDegraded"]
    # The Report effect does not block the graph: the ConfigMap after foo was applied.
    assert named(rec, "task.applied", task='configmap "ns/after-foo" (3 of 3)')
    conds = conditions(result.cluster_version)
    assert conds["Failing"]["status"] == "True"
    assert conds["Failing"]["reason"] == "ClusterOperatorDegraded"
    assert conds["Failing"]["message"] == "Cluster operator foo is degraded"
    assert result.message == "Cluster operator foo is degraded"
    # pkg/cvo/internal/operatorstatus.go, the Report effect: Progressing "Unable to apply V: Cluster operator X is degraded" (the report of the
    # install's own, non-reconciling status).
    assert conds["Progressing"]["status"] == "True"
    assert conds["Progressing"]["message"] == f"Unable to apply {NEW}: Cluster operator foo is degraded"


# --- cancellation ---------------------------------------------------------------------------------------


def test_cancelling_the_worker_leaves_a_consistent_state_and_a_new_worker_resumes(
        make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, operator_payload(NEW))

    async def main() -> dict[str, Any]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        sim = await start_sim(cluster, clock, [release], Behaviours(default=Behaviour(delay=120)))
        subscribers = cluster.subscriber_count()
        rec = Recorder()
        worker = Worker(cluster, release, Mode.INSTALL, rec, clock, options())
        runner = asyncio.create_task(worker.run())
        await asyncio.sleep(30)  # waiting on foo (ready at 120 s)
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner
        await asyncio.sleep(0)
        out: dict[str, Any] = {
            "cancelled": runner.cancelled(),
            "subscribers": (subscribers, cluster.subscriber_count()),
            "cv": await cluster.get(cv_ref()),
            "co": await cluster.get(co_ref("foo")),
            "after": await cluster.get(Ref("", "ConfigMap", "ns", "after-foo")),
            "worker_tasks": [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith(("node", "watch"))],
        }
        rec2 = Recorder()
        out["result"] = (await Worker(cluster, release, Mode.INSTALL, rec2, clock, options()).run())
        out["rec2"] = rec2
        await sim.stop()
        return out

    out = virtual(main)
    assert out["cancelled"]
    assert out["subscribers"][0] == out["subscribers"][1]  # the worker's watches are gone
    assert out["worker_tasks"] == []  # no node or watch task left behind
    cv = out["cv"]
    assert [h["state"] for h in cv["status"]["history"]] == ["Partial"]
    assert conditions(cv)["Progressing"]["status"] == "True"
    assert conditions(cv)["Available"]["status"] == "False"
    assert out["co"] is not None  # precreated before the cancel
    assert out["after"] is not None  # install is flattened: run level 20 did not wait for foo
    result = out["result"]
    assert result.ok and result.attempts == 1
    history = result.cluster_version["status"]["history"]
    assert len(history) == 1
    assert history[0]["state"] == "Completed" and history[0]["version"] == NEW
    assert history[0]["startedTime"] == "2025-06-01T00:00:00Z"


# --- modes ----------------------------------------------------------------------------------------------


def test_reconcile_mode_repairs_a_deleted_object(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, operator_payload(NEW))

    async def main() -> tuple[SweepResult, SweepResult, Recorder, SimCluster]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        sim = await start_sim(cluster, clock, [release])
        installed, _ = await sweep(cluster, clock, release, Mode.INSTALL)
        ref = Ref("", "ConfigMap", "ns", "after-foo")
        edited = await cluster.get(ref)
        assert edited is not None
        await cluster.delete(ref)
        result, rec = await sweep(cluster, clock, release, Mode.RECONCILE)
        await sim.stop()
        return installed, result, rec, cluster

    installed, result, rec, _cluster = virtual(main)
    assert installed.ok and result.ok
    assert first(rec, "task.applied", task='configmap "ns/after-foo" (3 of 3)').fields["action"] == "created"
    assert {e.fields["action"] for e in named(rec, "task.applied")} == {"created", "unchanged"}
    assert first(rec, "attempt.started").fields["workers"] == 2
    history = result.cluster_version["status"]["history"]
    assert len(history) == 1 and history[0]["state"] == "Completed"
    conds = conditions(result.cluster_version)
    assert (conds["Progressing"]["status"], conds["Progressing"]["message"]) == ("False", f"Cluster version is {NEW}")


def _demo_update() -> tuple[Recorder, Recorder, SweepResult, SweepResult]:
    old = load_release(PAYLOADS / "demo-4.16.0")
    new = load_release(PAYLOADS / "demo-4.17.0")

    async def main() -> tuple[Recorder, Recorder, SweepResult, SweepResult]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock)
        sim = await start_sim(cluster, clock, [old, new], Behaviours(default=Behaviour(delay=90)))
        installed, rec_install = await sweep(cluster, clock, old, Mode.INSTALL)
        updated, rec_update = await sweep(cluster, clock, new, Mode.UPDATE)
        await sim.stop()
        return rec_install, rec_update, installed, updated

    return virtual(main)


def _is_co_task(event: Event, name: str) -> bool:
    return str(event.fields.get("task", "")).startswith(f'clusteroperator "{name}" ')


def test_update_mode_waits_for_each_run_level_and_install_does_not() -> None:
    rec_install, rec_update, installed, updated = _demo_update()
    assert installed.ok and updated.ok
    # Update: kube-apiserver (run level 20) is ready before any run-level-50 task is applied.
    events = rec_update.events
    kas_done = next(i for i, e in enumerate(events) if e.name == "task.done" and _is_co_task(e, "kube-apiserver"))
    level50 = [i for i, e in enumerate(events)
               if e.name == "task.applied" and Path(e.fields["file"]).name.startswith("0000_50_")]
    assert level50, "no run-level-50 task in the update"
    assert kas_done < min(level50)
    assert secs(events[kas_done]) <= min(secs(events[i]) for i in level50)
    assert secs(events[kas_done]) > secs(first(rec_update, "sweep.started"))  # it had to wait for the rollout
    level25 = [i for i, e in enumerate(events)
               if e.name == "task.applied" and Path(e.fields["file"]).name.startswith("0000_25_")]
    assert level25 and kas_done < min(level25)
    # Install: run levels are flattened (only the Job at run level 30 is a barrier), so run level 25
    # is applied at once, long before kube-apiserver (run level 20) is ready after 90 s.
    ievents = rec_install.events
    kas_ready = next(e for e in ievents if e.name == "task.done" and _is_co_task(e, "kube-apiserver"))
    first25 = next(e for e in ievents
                   if e.name == "task.applied" and Path(e.fields["file"]).name.startswith("0000_25_"))
    assert secs(first25) == secs(first(rec_install, "sweep.started"))
    assert secs(kas_ready) - secs(first25) >= 90.0


def test_update_history_has_the_new_completed_entry_on_top() -> None:
    _, rec_update, _installed, updated = _demo_update()
    history = updated.cluster_version["status"]["history"]
    assert [(h["version"], h["state"]) for h in history] == [("4.17.0", "Completed"), ("4.16.0", "Completed")]
    assert history[1]["completionTime"] is not None
    progressing = [e.fields["message"] for e in condition_events(rec_update, "Progressing")]
    assert any(m.startswith("Working towards 4.17.0") for m in progressing)
    assert progressing[-1] == "Cluster version is 4.17.0"
    available = [e.fields["message"] for e in condition_events(rec_update, "Available")]
    assert available == ["Done applying 4.17.0"]  # it kept "Done applying 4.16.0" until completion


# --- long waits: the 40-minute Degraded interval and slow operators ---------------------------------------


def _snapshots(cluster: SimCluster, at: list[float], out: dict[float, dict[str, Any]]) -> asyncio.Task:
    async def take() -> None:
        loop = asyncio.get_running_loop()
        for t in at:
            await asyncio.sleep(max(0.0, t - loop.time()))
            out[t] = conditions(await cluster.get(cv_ref()) or {})

    return asyncio.create_task(take())


def test_a_degraded_operator_is_tolerated_for_40_minutes_during_an_update(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, {"0000_20_foo_co.yaml": cluster_operator("foo", NEW)})
    seen: dict[float, dict[str, Any]] = {}

    async def main() -> SweepResult:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", NEW, degraded="True")
        snaps = _snapshots(cluster, [600.0, 2300.0, 3600.0], seen)
        result, _ = await sweep(cluster, clock, release, Mode.UPDATE, interval=180.0, timeout=3700.0)
        await snaps
        return result

    result = virtual(main)
    assert not result.ok
    early = seen[600.0]
    assert early["Failing"]["status"] == "False"
    assert early["Progressing"]["status"] == "True"
    assert early["Progressing"]["reason"] == "ClusterOperatorDegraded"
    assert early["Progressing"]["message"] == f"Working towards {NEW}: waiting up to 40 minutes on foo"
    assert seen[2300.0]["Failing"]["status"] == "False"  # 38 minutes
    late = seen[3600.0]
    assert late["Failing"]["status"] == "True"
    assert late["Failing"]["reason"] == "ClusterOperatorDegraded"
    assert late["Failing"]["message"] == "Cluster operator foo is degraded"
    assert late["Progressing"]["message"] == (
        f"Unable to apply {NEW}: wait has exceeded 40 minutes for these operators: foo")


def test_an_operator_updating_for_over_30_minutes_is_slow(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, {"0000_20_foo_co.yaml": cluster_operator("foo", NEW)})
    seen: dict[float, dict[str, Any]] = {}

    async def main() -> SweepResult:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", OLD)
        snaps = _snapshots(cluster, [600.0, 2700.0], seen)
        result, _ = await sweep(cluster, clock, release, Mode.UPDATE, interval=180.0, timeout=2800.0)
        await snaps
        return result

    result = virtual(main)
    assert not result.ok
    assert seen[600.0]["Failing"]["status"] == "False"
    assert seen[600.0]["Progressing"]["message"] == f"Working towards {NEW}: waiting on foo"
    slow = seen[2700.0]["Failing"]
    assert (slow["status"], slow["reason"]) == ("Unknown", "SlowClusterOperator")
    assert slow["message"] == "waiting on foo over 30 minutes which is longer than expected"


def test_reconcile_reports_a_degraded_operator_as_failing_at_once(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, {"0000_20_foo_co.yaml": cluster_operator("foo", NEW)})
    seen: dict[float, dict[str, Any]] = {}

    async def main() -> SweepResult:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", NEW, degraded="True")
        snaps = _snapshots(cluster, [60.0], seen)
        result, _ = await sweep(cluster, clock, release, Mode.RECONCILE, interval=180.0, timeout=400.0)
        await snaps
        return result

    result = virtual(main)
    assert not result.ok
    conds = seen[60.0]
    assert conds["Failing"]["status"] == "True"
    assert conds["Failing"]["reason"] == "ClusterOperatorDegraded"
    assert conds["Progressing"]["status"] == "False"
    assert conds["Progressing"]["message"] == f"Error while reconciling {NEW}: the cluster operator foo is degraded"


# --- fail-fast errors and several failures -----------------------------------------------------------------


def test_an_unhealthy_deployment_fails_the_task_without_retries_in_update_mode(make_release: ReleaseFactory) -> None:
    deploy = obj("Deployment", "web", "ns", api="apps/v1", spec={
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "quay.io/x/web:2"}]}}})
    release = release_of(make_release, NEW, {"0000_10_a_deploy.yaml": deploy,
                                             "0000_20_b_cm.yaml": obj("ConfigMap", "cm", "ns")})

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        old = obj("Deployment", "web", "ns", api="apps/v1", spec={**deploy["spec"], "template": {
            "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "quay.io/x/web:1"}]}}})
        live = await cluster.create(old)
        live["status"] = {"conditions": [
            {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "0 of 1"},
            {"type": "Progressing", "status": "False", "reason": "NewReplicaSetAvailable"}]}
        await cluster.update_status(live)
        return await sweep(cluster, clock, release, Mode.UPDATE, interval=100.0, timeout=150.0)

    result, rec = virtual(main)
    assert not result.ok
    failed = named(rec, "task.failed")
    assert failed[0].fields["reason"] == "WorkloadNotAvailable"
    assert secs(failed[0]) == 0.0  # an UpdateError is not retried
    assert named(rec, "task.retry") == []
    # The ConfigMap behind it (update mode: the next run level) never ran.
    assert named(rec, "task.applied", task='configmap "ns/cm" (2 of 2)') == []


def test_several_failed_nodes_are_summarised_as_multiple_errors(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, NEW, {"0000_10_a_cm.yaml": obj("ConfigMap", "a", "ns"),
                                             "0000_10_b_cm.yaml": obj("ConfigMap", "b", "ns")})

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        cluster.inject_failure(Ref("", "ConfigMap", "ns", "a"), ApiErrorKind.FORBIDDEN, count=2)
        cluster.inject_failure(Ref("", "ConfigMap", "ns", "b"), ApiErrorKind.CONFLICT, count=2)
        return await sweep(cluster, clock, release, Mode.UPDATE, interval=160.0)

    result, rec = virtual(main)
    assert result.ok and result.attempts == 2
    failed = first(rec, "attempt.failed")
    assert failed.fields["reason"] == "MultipleErrors"
    assert failed.fields["message"] == (
        "Multiple errors are preventing progress:\n"
        '* Could not update configmap "ns/a" (1 of 2): the server has forbidden updates to this resource\n'
        '* Could not update configmap "ns/b" (2 of 2)')
    failing = next(e for e in condition_events(rec, "Failing") if e.fields["status"] == "True")
    assert failing.fields["reason"] == "MultipleErrors"
    progressing = next(e for e in condition_events(rec, "Progressing") if e.fields["reason"] == "MultipleErrors")
    assert progressing.fields["message"] == f"Unable to apply {NEW}: an unknown error has occurred: MultipleErrors"


def test_a_reconcile_or_install_of_another_release_is_refused_by_the_worker_itself(make_release: ReleaseFactory) -> None:
    """Defence in depth: whatever path builds it, a reconcile of a release the cluster does not run, or an
    install over one, is refused before it applies anything (only an upgrade, through its preconditions,
    moves the version)."""
    old = release_of(make_release, OLD, {"0000_50_a_cm.yaml": obj("ConfigMap", "cm", "ns")})
    new = release_of(make_release, NEW, {"0000_50_a_cm.yaml": obj("ConfigMap", "cm", "ns", data={"v": NEW})})

    async def test() -> None:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        result, _ = await sweep(cluster, clock, old, Mode.INSTALL)
        assert result.completed
        before = await cluster.get(CM)
        with pytest.raises(WrongRelease, match=r"reconcile of 4\.17\.0 refused: the cluster runs 4\.16\.0"):
            await sweep(cluster, clock, new, Mode.RECONCILE)
        with pytest.raises(WrongRelease, match=r"install of 4\.17\.0 refused: the cluster runs 4\.16\.0"):
            await sweep(cluster, clock, new, Mode.INSTALL)
        assert await cluster.get(CM) == before
        cv = await cluster.get(cv_ref())
        assert cv is not None and cv["status"]["desired"]["version"] == OLD

    run_virtual(test)


def test_failing_shows_the_real_failure_not_an_operator_still_updating(make_release: ReleaseFactory) -> None:
    """An attempt that ends with a real failure (a Forbidden ConfigMap) and an operator still updating (a
    ``None``-effect wait cut by the deadline) is summarised as MultipleErrors; the Failing condition is made
    from the summarised errors without the ``None`` ones, so it shows the one real failure, as the CVO's
    ``filterErrorForFailingCondition`` does (pkg/cvo/status.go).  cvo used to pass the summary alone and
    showed MultipleErrors with both messages."""
    release = release_of(make_release, NEW, {"0000_10_a_cm.yaml": obj("ConfigMap", "a", "ns"),
                                             "0000_10_foo_co.yaml": cluster_operator("foo", NEW)})
    seen: dict[float, dict[str, Any]] = {}

    async def main() -> Recorder:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        await write_co(cluster, clock, "foo", OLD)  # never reports NEW: updating versions (effect None)
        cluster.inject_failure(Ref("", "ConfigMap", "ns", "a"), ApiErrorKind.FORBIDDEN, count=2)
        snaps = _snapshots(cluster, [365.0], seen)  # attempt 1 ends at 360 s (2 × interval), the next starts later
        _, rec = await sweep(cluster, clock, release, Mode.UPDATE, interval=180.0, timeout=420.0)
        await snaps
        return rec

    rec = virtual(main)
    failed = first(rec, "attempt.failed")
    assert failed.fields["reason"] == "MultipleErrors"  # the attempt's summary keeps both
    failing = seen[365.0]["Failing"]
    assert (failing["status"], failing["reason"]) == ("True", "UpdatePayloadResourceForbidden")
    assert failing["message"] == ('Could not update configmap "ns/a" (1 of 2): the server has forbidden updates '
                                  "to this resource")


def test_a_new_attempt_that_gets_as_far_as_the_failed_one_clears_the_failure(make_release: ReleaseFactory) -> None:
    """statusWrapper.Report drops a report only when it gets *less* far than the failed one
    (pkg/cvo/sync_worker.go): the second attempt's report after task 1 (1 of 2, as far as the first attempt
    got before it failed) clears Failing; cvo used to keep the failure until the attempt got further."""
    release = release_of(make_release, NEW, {"0000_10_a_cm.yaml": obj("ConfigMap", "a", "ns"),
                                             "0000_20_b_cm.yaml": obj("ConfigMap", "b", "ns")})

    async def main() -> Recorder:
        clock = Clock(EPOCH)
        cluster = new_cluster(clock)
        cluster.inject_failure(Ref("", "ConfigMap", "ns", "b"), ApiErrorKind.FORBIDDEN, count=3)
        _, rec = await sweep(cluster, clock, release, Mode.UPDATE, interval=180.0, timeout=3600.0)
        return rec

    rec = virtual(main)
    failing = condition_events(rec, "Failing")
    true_at = secs(next(e for e in failing if e.fields["status"] == "True"))
    cleared = [e for e in failing if e.fields["status"] == "False" and secs(e) > true_at]
    second = first(rec, "attempt.started", attempt=1)
    b_done = first(rec, "task.done", task='configmap "ns/b" (2 of 2)')
    assert cleared and secs(second) <= secs(cleared[0]) < secs(b_done)  # at 1 of 2, before b is applied
