"""The simulated operators: rollouts driven by Deployments, timing, misbehaviours, restarts, namespaces,
and how ClusterOperator conditions keep their lastTransitionTime.

Everything runs on the virtual clock.  A :class:`SpinGuard` turns a scenario whose simulated time stops
advancing while the cluster keeps being read (a busy loop) into a test failure instead of a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cvo.clock import Clock, run_virtual, to_rfc3339
from cvo.cluster.api import CLUSTER_OPERATOR, Ref, co_ref
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.operators.behaviour import Behaviour, Behaviours, Window
from cvo.operators.library.clusteroperator import Condition, merge_conditions, report_status
from cvo.operators.simulated import OperatorSimulator
from cvo.payload.graph import Mode
from cvo.payload.loader import Release, load_release
from cvo.runner.events import Recorder
from cvo.runner.sweep import SweepOptions
from cvo.runner.worker import Worker
from tests.support.helpers import ReleaseFactory, cluster_operator, obj

EPOCH = datetime(2025, 7, 1, tzinfo=UTC)
OLD, NEW = "4.16.0", "4.17.0"
FOO_DEPLOY = Ref("apps", "Deployment", "ns", "foo-operator")


# --- harness ------------------------------------------------------------------------------------------


class SpinGuard:
    """Trips when the cluster is read more than ``limit`` times without simulated time advancing.

    Registered before the simulator, so once tripped it raises in every reader before the
    simulator's own read hook runs, which ends a busy loop instead of letting it spin forever.
    """

    def __init__(self, cluster: SimCluster, limit: int = 5000) -> None:
        self.limit = limit
        self.count = 0
        self.at: float | None = None
        self.tripped: str | None = None
        self.task: asyncio.Task[Any] | None = None
        cluster.on_read(self._hook)

    def _hook(self, ref: Ref) -> None:
        if self.tripped is not None:
            raise RuntimeError(self.tripped)
        now = asyncio.get_running_loop().time()
        if now != self.at:
            self.at, self.count = now, 0
        self.count += 1
        if self.count > self.limit:
            self.tripped = (f"busy loop: {self.count} reads at simulated t={now:g}s without time advancing "
                            f"(last read: {ref})")
            if self.task is not None:
                self.task.cancel()
            raise RuntimeError(self.tripped)


Scenario = Callable[[SimCluster, Clock, OperatorSimulator], Awaitable[Any]]


def scenario(test: Scenario, releases: list[Release], behaviours: Behaviours | None = None,
             cluster_options: dict[str, Any] | None = None) -> Any:
    """Run ``test`` with a fresh cluster and an unstarted simulator that knows ``releases``."""

    async def main() -> Any:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock, **(cluster_options or {"namespaces": (*DEFAULT_NAMESPACES, "ns")}))
        guard = SpinGuard(cluster)
        loop = asyncio.get_running_loop()
        # Once the guard tripped, the readers it stopped die with its error: nothing to log about them.
        loop.set_exception_handler(
            lambda lp, context: None if guard.tripped else lp.default_exception_handler(context))
        sim = OperatorSimulator(cluster, clock, behaviours or Behaviours(default=Behaviour(delay=50)))
        for release in releases:
            sim.register_release(release)
        task = asyncio.create_task(test(cluster, clock, sim))
        guard.task = task
        try:
            return await task
        except asyncio.CancelledError:
            if guard.tripped:
                pytest.fail(guard.tripped)
            raise
        finally:
            await sim.stop()
            if guard.tripped:
                pytest.fail(guard.tripped)

    return run_virtual(main)


class Timeline:
    """Every state a ClusterOperator went through, with the simulated time it was written."""

    def __init__(self, cluster: SimCluster, name: str = "foo") -> None:
        self.states: list[tuple[float, dict[str, Any]]] = []
        self._stream = cluster.watch(*CLUSTER_OPERATOR, name=name)
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for event in self._stream:
            if event.obj.get("status"):  # an operator creates its ClusterOperator, then writes its status
                self.states.append((asyncio.get_running_loop().time(), event.obj))

    async def stop(self) -> None:
        for _ in range(5):  # let the watcher take events written at this same instant
            await asyncio.sleep(0)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def condition(self, type_: str) -> list[tuple[float, str]]:
        """(time, status) each time the condition's status changed."""
        out: list[tuple[float, str]] = []
        for t, o in self.states:
            status = conds(o).get(type_, {}).get("status")
            if status is not None and (not out or out[-1][1] != status):
                out.append((t, status))
        return out

    def versions(self) -> list[tuple[float, dict[str, str]]]:
        """(time, versions) each time the reported versions changed."""
        out: list[tuple[float, dict[str, str]]] = []
        for t, o in self.states:
            v = versions(o)
            if not out or out[-1][1] != v:
                out.append((t, v))
        return out


def conds(co: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in ((co or {}).get("status") or {}).get("conditions") or []}


def versions(co: dict[str, Any] | None) -> dict[str, str]:
    return {v["name"]: v["version"] for v in ((co or {}).get("status") or {}).get("versions") or []}


def deployment(version: str, env: bool = True, image: str | None = None, namespace: str = "ns",
               component: str = "foo") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "operator", "image": image or f"quay.io/demo/{component}:{version}"}
    if env:
        container["env"] = [{"name": "RELEASE_VERSION", "value": version}]
    return obj("Deployment", f"{component}-operator", namespace, api="apps/v1", spec={
        "replicas": 1, "selector": {"matchLabels": {"app": component}},
        "template": {"metadata": {"labels": {"app": component}}, "spec": {"containers": [container]}}})


def payload(make_release: ReleaseFactory, version: str, env: bool = True, image: str | None = None,
            extra: dict[str, object] | None = None) -> Release:
    files: dict[str, object] = {
        "0000_10_foo_05_deployment.yaml": deployment(version, env, image),
        "0000_10_foo_06_clusteroperator.yaml": cluster_operator("foo", version, foo_operand=f"1.{version}"),
    }
    files.update(extra or {})
    return load_release(make_release(files, version=version, name=f"r-{version}"))


def expected_versions(version: str) -> dict[str, str]:
    return {"operator": version, "foo_operand": f"1.{version}"}


async def at(t: float) -> None:
    """Sleep until simulated time ``t``."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, t - loop.time()))


async def install_foo(cluster: SimCluster, version: str, at_time: float = 0.0) -> None:
    """What the sweep does for foo: apply its Deployment."""
    await at(at_time)
    await cluster.create(deployment(version))


async def upgrade_foo(cluster: SimCluster, version: str, at_time: float) -> None:
    await at(at_time)
    live = await cluster.get(FOO_DEPLOY)
    assert live is not None
    live["spec"] = deployment(version)["spec"]
    await cluster.update(live)


# --- rollouts -----------------------------------------------------------------------------------------


def test_rolls_out_when_its_deployment_appears_with_release_version_env(make_release: ReleaseFactory) -> None:
    release = payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        timeline = Timeline(cluster)
        await at(20)
        assert await cluster.get(co_ref("foo")) is None  # nothing to do without its Deployment
        await install_foo(cluster, NEW, at_time=30)
        await at(500)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [release])
    assert timeline.states[0][0] == 30.0
    first = timeline.states[0][1]
    assert versions(first) == {}
    assert conds(first)["Available"]["status"] == "False"
    assert conds(first)["Available"]["reason"] == "Starting"
    assert conds(first)["Progressing"]["status"] == "True"
    assert conds(first)["Degraded"]["status"] == "False"
    # The versions appear after the behaviour's delay (50 s), together with Available=True.
    assert timeline.versions() == [(30.0, {}), (80.0, expected_versions(NEW))]
    assert timeline.condition("Available") == [(30.0, "False"), (80.0, "True")]
    assert timeline.condition("Progressing") == [(30.0, "True"), (80.0, "False")]
    assert timeline.condition("Degraded") == [(30.0, "False")]


def test_rolls_out_when_its_deployment_runs_the_release_images(make_release: ReleaseFactory) -> None:
    release = payload(make_release, NEW, env=False, image="quay.io/demo/foo@sha256:new")

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> dict[str, Any] | None:
        await sim.start()
        await cluster.create(deployment(NEW, env=False, image="quay.io/demo/foo@sha256:other"))
        await at(200)
        assert await cluster.get(co_ref("foo")) is None  # other images: not this release
        live = await cluster.get(FOO_DEPLOY)
        assert live is not None
        live["spec"] = deployment(NEW, env=False, image="quay.io/demo/foo@sha256:new")["spec"]
        await cluster.update(live)
        await at(249)
        assert versions(await cluster.get(co_ref("foo"))) == {}
        await at(250)
        return await cluster.get(co_ref("foo"))

    co = scenario(test, [release])
    assert versions(co) == expected_versions(NEW)
    assert conds(co)["Available"]["status"] == "True"


def test_a_deployment_at_another_release_version_does_not_roll_out(make_release: ReleaseFactory) -> None:
    release = payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> dict[str, Any] | None:
        await sim.start()
        await cluster.create(deployment("4.99.0"))
        await at(1000)
        return await cluster.get(co_ref("foo"))

    assert scenario(test, [release]) is None


def test_an_update_reports_the_new_versions_only_after_the_delay(make_release: ReleaseFactory) -> None:
    old, new = payload(make_release, OLD), payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        await install_foo(cluster, OLD)
        await at(100)
        assert versions(await cluster.get(co_ref("foo"))) == expected_versions(OLD)
        timeline = Timeline(cluster)
        await upgrade_foo(cluster, NEW, at_time=200)
        await at(600)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [old, new])
    assert timeline.versions() == [(200.0, expected_versions(OLD)), (250.0, expected_versions(NEW))]
    # During an update the previous operands keep serving: Available stays True.
    assert timeline.condition("Available") == [(200.0, "True")]
    assert timeline.condition("Progressing") == [(200.0, "True"), (250.0, "False")]
    assert conds(timeline.states[0][1])["Progressing"]["reason"] == "Upgrading"


# --- misbehaviours ------------------------------------------------------------------------------------


def test_never_available(make_release: ReleaseFactory) -> None:
    old, new = payload(make_release, OLD), payload(make_release, NEW)
    behaviours = Behaviours(default=Behaviour(delay=50, never_available=True))

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        timeline = Timeline(cluster)
        await install_foo(cluster, NEW, at_time=10)
        await at(5000)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [old, new], behaviours)
    assert timeline.condition("Available") == [(10.0, "False")]
    assert conds(timeline.states[-1][1])["Available"]["reason"] == "OperandsUnavailable"


def test_degraded_window(make_release: ReleaseFactory) -> None:
    behaviours = Behaviours(default=Behaviour(delay=60, degraded=Window(20.0, 30.0), degraded_message="disk full"))
    release = payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        timeline = Timeline(cluster)
        await install_foo(cluster, NEW, at_time=100)
        await at(1000)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [release], behaviours)
    assert timeline.condition("Degraded") == [(100.0, "False"), (120.0, "True"), (150.0, "False")]
    degraded = next(o for t, o in timeline.states if t == 120.0)
    assert conds(degraded)["Degraded"]["message"] == "disk full"
    assert timeline.condition("Available") == [(100.0, "False"), (160.0, "True")]


def test_degraded_forever_after_the_rollout(make_release: ReleaseFactory) -> None:
    behaviours = Behaviours(default=Behaviour(delay=60, degraded=Window(90.0, None)))
    release = payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        timeline = Timeline(cluster)
        await install_foo(cluster, NEW)
        await at(10_000)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [release], behaviours)
    assert timeline.condition("Degraded") == [(0.0, "False"), (90.0, "True")]


def test_flapping(make_release: ReleaseFactory) -> None:
    behaviours = Behaviours(default=Behaviour(delay=10, flapping=5, flaps=2))
    release = payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        timeline = Timeline(cluster)
        await install_foo(cluster, NEW)
        await at(1000)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [release], behaviours)
    assert timeline.condition("Available") == [(0.0, "False"), (10.0, "True"), (15.0, "False"), (20.0, "True"),
                                               (25.0, "False"), (30.0, "True")]
    flapped = next(o for t, o in timeline.states if t == 15.0)
    assert conds(flapped)["Available"]["reason"] == "Flapping"
    assert timeline.states[-1][0] == 30.0  # and then it stays up


def test_upgradeable_window_from_simulation_start(make_release: ReleaseFactory) -> None:
    behaviours = Behaviours(default=Behaviour(delay=10, upgradeable=Window(0.0, 100.0),
                                              upgradeable_reason="Migrating", upgradeable_message="busy"))
    release = payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        timeline = Timeline(cluster)
        await at(5)
        await sim.start()
        await install_foo(cluster, NEW, at_time=20)
        await at(1000)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [release], behaviours)
    assert timeline.condition("Upgradeable") == [(5.0, "False"), (105.0, "True")]
    blocked = timeline.states[0][1]
    assert conds(blocked)["Upgradeable"]["reason"] == "Migrating"
    assert conds(blocked)["Upgradeable"]["message"] == "busy"
    # The rollout's writes keep the Upgradeable condition.
    during = next(o for t, o in timeline.states if t == 30.0)
    assert conds(during)["Upgradeable"]["status"] == "False"
    assert conds(during)["Available"]["status"] == "True"


def test_upgradeable_window_that_starts_later_and_never_ends(make_release: ReleaseFactory) -> None:
    behaviours = Behaviours(default=Behaviour(delay=10, upgradeable=Window(300.0, None)))
    release = payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        timeline = Timeline(cluster)
        await install_foo(cluster, NEW)
        await at(5000)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [release], behaviours)
    assert timeline.condition("Upgradeable") == [(300.0, "False")]


def test_upgrading_condition(make_release: ReleaseFactory) -> None:
    old, new = payload(make_release, OLD), payload(make_release, NEW)
    behaviours = Behaviours(default=Behaviour(delay=40, upgrading_condition=True))

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        await install_foo(cluster, OLD)
        await at(50)
        timeline = Timeline(cluster)
        await upgrade_foo(cluster, NEW, at_time=100)
        await at(1000)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [old, new], behaviours)
    assert timeline.condition("Upgrading") == [(100.0, "True"), (140.0, "False")]
    assert timeline.versions() == [(100.0, expected_versions(OLD)), (140.0, expected_versions(NEW))]


def test_version_early(make_release: ReleaseFactory) -> None:
    old, new = payload(make_release, OLD), payload(make_release, NEW)
    behaviours = Behaviours(default=Behaviour(delay=40, version_early=True))

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        await install_foo(cluster, OLD)
        await at(50)
        timeline = Timeline(cluster)
        await upgrade_foo(cluster, NEW, at_time=100)
        await at(1000)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [old, new], behaviours)
    # The new versions at the start of the rollout, while the operands are still rolling out.
    assert timeline.versions() == [(100.0, expected_versions(NEW))]
    assert timeline.condition("Progressing") == [(100.0, "True"), (140.0, "False")]


def test_never_versions(make_release: ReleaseFactory) -> None:
    old, new = payload(make_release, OLD), payload(make_release, NEW)
    behaviours = Behaviours(default=Behaviour(delay=40, never_versions=True))

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        sim.behaviours = Behaviours(default=Behaviour(delay=40))  # the install is normal
        await sim.start()
        await install_foo(cluster, OLD)
        await at(50)
        sim.behaviours = behaviours
        timeline = Timeline(cluster)
        await upgrade_foo(cluster, NEW, at_time=100)
        await at(5000)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [old, new], behaviours)
    assert timeline.versions() == [(100.0, expected_versions(OLD))]
    assert timeline.condition("Available") == [(100.0, "True")]
    assert timeline.condition("Progressing") == [(100.0, "True"), (140.0, "False")]


# --- operators without Deployments ----------------------------------------------------------------------


def test_an_operator_without_deployments_starts_when_its_cluster_operator_is_first_read(
        make_release: ReleaseFactory) -> None:
    release = load_release(make_release({"0000_10_bar_co.yaml": cluster_operator("bar", NEW)}, version=NEW))

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> tuple[Timeline, Any, Any]:
        # The ClusterOperator exists already (precreated), without status.
        await cluster.create({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                              "metadata": {"name": "bar"}, "spec": {}})
        await sim.start()
        timeline = Timeline(cluster, "bar")
        # The sweep says what it works towards ...
        cv = await cluster.create({"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
                                   "metadata": {"name": "version"}, "spec": {}})
        cv["status"] = {"desired": {"version": NEW, "image": "x"}}
        await cluster.update_status(cv)
        await at(100)
        assert timeline.states == []  # nobody read it yet: the operator has not started
        # ... and the operator starts when the sweep first reads its ClusterOperator.
        await cluster.get(co_ref("bar"))
        await at(149)
        at_149 = await cluster.get(co_ref("bar"))
        await at(150)
        at_150 = await cluster.get(co_ref("bar"))
        await timeline.stop()
        return timeline, at_149, at_150

    timeline, at_149, at_150 = scenario(test, [release])
    assert timeline.states[0][0] == 100.0
    assert versions(at_149) == {}
    assert conds(at_149)["Available"]["status"] == "False"
    assert versions(at_150) == {"operator": NEW}
    assert conds(at_150)["Available"]["status"] == "True"
    assert timeline.condition("Available") == [(100.0, "False"), (150.0, "True")]


def test_a_sweep_over_an_operator_without_deployments_completes(make_release: ReleaseFactory) -> None:
    release = load_release(make_release({"0000_10_bar_co.yaml": cluster_operator("bar", NEW)}, version=NEW))

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Any:
        await sim.start()
        return await Worker(cluster, release, Mode.INSTALL, Recorder(), clock, SweepOptions(timeout=3600)).run()

    result = scenario(test, [release])
    assert result.ok
    assert (result.finished - result.started).total_seconds() == pytest.approx(50.0, abs=1.0)


# --- restarts -----------------------------------------------------------------------------------------


def test_a_restarted_simulator_does_not_roll_out_again(make_release: ReleaseFactory) -> None:
    release = payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> tuple[Any, Any, int, Timeline]:
        await sim.start()
        await install_foo(cluster, NEW)
        await at(100)
        await sim.stop()
        before = await cluster.get(co_ref("foo"))
        assert versions(before) == expected_versions(NEW)
        writes = cluster.stats.verbs["update_status"]
        timeline = Timeline(cluster)
        restarted = OperatorSimulator(cluster, clock, Behaviours(default=Behaviour(delay=50)))
        restarted.register_release(release)
        await restarted.start()
        await at(1000)
        await restarted.stop()
        await timeline.stop()
        return before, await cluster.get(co_ref("foo")), cluster.stats.verbs["update_status"] - writes, timeline

    before, after, writes, timeline = scenario(test, [release])
    assert writes == 0
    assert timeline.states == []
    assert after == before


def test_a_restarted_simulator_finishes_an_interrupted_rollout(make_release: ReleaseFactory) -> None:
    old, new = payload(make_release, OLD), payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        await install_foo(cluster, OLD)
        await upgrade_foo(cluster, NEW, at_time=100)
        await at(120)  # halfway through the rollout
        await sim.stop()
        timeline = Timeline(cluster)
        restarted = OperatorSimulator(cluster, clock, Behaviours(default=Behaviour(delay=50)))
        restarted.register_release(old)
        restarted.register_release(new)
        await at(130)
        await restarted.start()
        await at(1000)
        await restarted.stop()
        await timeline.stop()
        return timeline

    timeline = scenario(test, [old, new])
    assert timeline.versions()[-1] == (180.0, expected_versions(NEW))


# --- operand namespaces ---------------------------------------------------------------------------------


def test_operand_namespaces_the_payload_never_creates_are_created(make_release: ReleaseFactory) -> None:
    files = {
        "0000_10_foo_05_deployment.yaml": deployment(NEW, namespace="openshift-foo"),
        "0000_10_foo_06_clusteroperator.yaml": cluster_operator("foo", NEW),
        "0000_20_bar_00_namespace.yaml": obj("Namespace", "openshift-bar"),
        "0000_20_bar_01_cm.yaml": obj("ConfigMap", "bar-config", "openshift-bar"),
    }
    release = load_release(make_release(files, version=NEW))

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> dict[str, bool]:
        await sim.start()
        return {ns: await cluster.get(Ref("", "Namespace", "", ns)) is not None
                for ns in ("openshift-foo", "openshift-bar")}

    assert scenario(test, [release]) == {"openshift-foo": True, "openshift-bar": False}


def test_an_install_of_the_demo_payload_needs_the_simulated_namespaces(make_release: ReleaseFactory) -> None:
    from tests.support.helpers import PAYLOADS

    release = load_release(PAYLOADS / "demo-4.16.0")
    created = {m.name for m in release.manifests if m.kind == "Namespace"}
    used = {m.namespace for m in release.manifests if m.namespace}

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> set[str]:
        await sim.start()
        return {ns for ns in used - created if await cluster.get(Ref("", "Namespace", "", ns)) is not None}

    missing_from_payload = used - created - set(DEFAULT_NAMESPACES)
    present = scenario(test, [release], cluster_options={})
    assert missing_from_payload <= present


# --- lastTransitionTime -----------------------------------------------------------------------------------


T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_merge_conditions_keeps_the_transition_time_when_the_status_does_not_change() -> None:
    current = [{"type": "Available", "status": "True", "lastTransitionTime": to_rfc3339(T0), "reason": "Old"}]
    later = T0 + timedelta(hours=1)
    merged = merge_conditions(current, [Condition("Available", "True", "New", "still up")], later)
    assert merged == [{"type": "Available", "status": "True", "lastTransitionTime": to_rfc3339(T0),
                       "reason": "New", "message": "still up"}]


def test_merge_conditions_moves_the_transition_time_when_the_status_changes() -> None:
    current = [{"type": "Available", "status": "True", "lastTransitionTime": to_rfc3339(T0)}]
    later = T0 + timedelta(hours=1)
    merged = merge_conditions(current, [Condition("Available", "False", "Down")], later)
    assert merged[0]["lastTransitionTime"] == to_rfc3339(later)
    assert merged[0]["status"] == "False"


def test_merge_conditions_keeps_other_conditions_and_sorts_by_type() -> None:
    current = [{"type": "Upgradeable", "status": "False", "lastTransitionTime": to_rfc3339(T0), "reason": "X"},
               {"type": "Available", "status": "True", "lastTransitionTime": to_rfc3339(T0)}]
    merged = merge_conditions(current, [Condition("Degraded", "False")], T0 + timedelta(minutes=5))
    assert [c["type"] for c in merged] == ["Available", "Degraded", "Upgradeable"]
    assert merged[2] == current[0]
    assert merged[1]["lastTransitionTime"] == to_rfc3339(T0 + timedelta(minutes=5))


def test_simulated_operator_keeps_transition_times_across_writes(make_release: ReleaseFactory) -> None:
    old, new = payload(make_release, OLD), payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> tuple[Any, Any]:
        await sim.start()
        await install_foo(cluster, OLD, at_time=10)
        await at(100)
        installed = await cluster.get(co_ref("foo"))
        await upgrade_foo(cluster, NEW, at_time=1000)
        await at(2000)
        return installed, await cluster.get(co_ref("foo"))

    installed, updated = scenario(test, [old, new])
    stamp = lambda s: to_rfc3339(EPOCH + timedelta(seconds=s))  # noqa: E731
    assert conds(installed)["Available"]["lastTransitionTime"] == stamp(60)
    assert conds(installed)["Degraded"]["lastTransitionTime"] == stamp(10)
    # Through the whole update Available and Degraded never changed status: their times stay.
    assert conds(updated)["Available"]["lastTransitionTime"] == stamp(60)
    assert conds(updated)["Degraded"]["lastTransitionTime"] == stamp(10)
    assert conds(updated)["Progressing"]["lastTransitionTime"] == stamp(1050)
    assert versions(updated) == expected_versions(NEW)


def test_report_status_writes_versions_and_conditions_together() -> None:
    async def main() -> tuple[int, dict[str, Any], int]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock)
        events: list[dict[str, Any]] = []
        stream = cluster.watch(*CLUSTER_OPERATOR)

        async def collect() -> None:
            async for e in stream:
                events.append(e.obj)

        task = asyncio.create_task(collect())
        await report_status(cluster, "foo", clock.now(), versions={"operator": NEW},
                            conditions=[Condition("Available", "True"), Condition("Degraded", "False")])
        writes = cluster.stats.writes
        # The same status again is not a write.
        await report_status(cluster, "foo", clock.now(), versions={"operator": NEW},
                            conditions=[Condition("Available", "True"), Condition("Degraded", "False")])
        await asyncio.sleep(1)
        task.cancel()
        return writes, await cluster.get(co_ref("foo")) or {}, cluster.stats.writes - writes

    writes, co, extra = run_virtual(main)
    assert writes == 2  # create, then one status write with both versions and conditions
    assert extra == 0
    assert versions(co) == {"operator": NEW}
    assert set(conds(co)) == {"Available", "Degraded"}



def test_a_release_registered_while_running_gets_its_namespaces_and_upgradeable_windows(
        make_release: ReleaseFactory) -> None:
    behaviours = Behaviours(default=Behaviour(delay=10), operators={
        "bar": Behaviour(delay=10, upgradeable=Window(0.0, 100.0), upgradeable_reason="Migrating")})
    first = payload(make_release, OLD)
    later = load_release(make_release({
        "0000_20_bar_05_deployment.yaml": deployment(NEW, namespace="openshift-bar", component="bar"),
        "0000_20_bar_06_clusteroperator.yaml": cluster_operator("bar", NEW),
    }, version=NEW, name="later"))

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> tuple[bool, bool, list, dict]:
        await sim.start()
        before = await cluster.get(Ref("", "Namespace", "", "openshift-bar")) is not None
        await at(50)
        timeline = Timeline(cluster, "bar")
        sim.register_release(later)
        await at(51)
        after = await cluster.get(Ref("", "Namespace", "", "openshift-bar")) is not None
        await cluster.create(deployment(NEW, namespace="openshift-bar", component="bar"))
        await at(500)
        await timeline.stop()
        return before, after, timeline.condition("Upgradeable"), versions(await cluster.get(co_ref("bar")))

    before, after, upgradeable, reported = scenario(test, [first], behaviours)
    assert (before, after) == (False, True)
    # Blocked from its registration until the window's end, measured (as every window) from the start.
    assert upgradeable == [(50.0, "False"), (100.0, "True")]
    assert reported == {"operator": NEW}


# --- API errors: the simulated operators outlive them, as real operators' reconcile loops do ---------------


def test_a_report_that_fails_is_written_again_until_it_lands(make_release: ReleaseFactory) -> None:
    from cvo.cluster.api import ApiErrorKind

    release = payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await sim.start()
        timeline = Timeline(cluster)
        await install_foo(cluster, NEW, at_time=30)
        await at(79)  # the rollout reported Progressing; its Available report (at 80) fails three times
        cluster.inject_failure(co_ref("foo"), ApiErrorKind.FORBIDDEN, count=3, verbs=["update_status"])
        await at(500)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [release])
    # Written again after 1, 2 and 4 s: the rollout did not stop half-way.
    assert timeline.versions() == [(30.0, {}), (87.0, expected_versions(NEW))]
    assert timeline.condition("Available") == [(30.0, "False"), (87.0, "True")]


def test_a_broken_watch_is_opened_again_after_a_back_off_and_every_operator_looks_again(
        make_release: ReleaseFactory) -> None:
    """The Deployment watch breaks as foo's Deployment is created (that event is lost): the operators' informer
    opens it again 1 s later, and every operator looks at the cluster then, as a restarted informer would."""
    from cvo.cluster.api import ApiError, ApiErrorKind

    release = payload(make_release, NEW)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        real_watch = cluster.watch
        breaks = [1]

        def watch(group: str, kind: str, namespace: str | None = None, name: str | None = None) -> Any:
            stream = real_watch(group, kind, namespace, name)
            if (group, kind) != ("apps", "Deployment") or not breaks[0]:
                return stream
            breaks[0] -= 1

            async def broken() -> Any:
                async for _ in stream:
                    raise ApiError(ApiErrorKind.TIMEOUT, "the watch broke")
                yield

            return broken()

        cluster.watch = watch  # type: ignore[method-assign]
        await sim.start()
        timeline = Timeline(cluster)
        await install_foo(cluster, NEW, at_time=30)
        await at(500)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [release])
    assert timeline.versions() == [(31.0, {}), (81.0, expected_versions(NEW))]


def test_a_decision_that_cannot_read_the_cluster_is_made_again_later(make_release: ReleaseFactory) -> None:
    from cvo.cluster.api import ApiError, ApiErrorKind

    release = payload(make_release, NEW)

    class Unreadable:
        """The cluster, with reads of foo's Deployment refused until ``until``."""

        def __init__(self, cluster: SimCluster, until: float) -> None:
            self.cluster, self.until = cluster, until

        def __getattr__(self, name: str) -> Any:
            return getattr(self.cluster, name)

        async def get(self, ref: Ref) -> dict[str, Any] | None:
            if ref == FOO_DEPLOY and asyncio.get_running_loop().time() < self.until:
                raise ApiError(ApiErrorKind.FORBIDDEN, "deployments.apps is forbidden (for a while)", ref)
            return await self.cluster.get(ref)

    async def test(cluster: SimCluster, clock: Clock, sim: OperatorSimulator) -> Timeline:
        await install_foo(cluster, NEW)  # there before the operator starts: it decides at start
        sim.cluster = Unreadable(cluster, until=20.0)  # type: ignore[assignment]
        await sim.start()
        timeline = Timeline(cluster)
        await at(500)
        await timeline.stop()
        return timeline

    timeline = scenario(test, [release])
    first_report = timeline.states[0][0]
    assert 20.0 <= first_report <= 30.0  # retried with back-off (1, 2, 4, 8, 10 s …) until the read worked
    assert timeline.versions()[-1] == (first_report + 50, expected_versions(NEW))
