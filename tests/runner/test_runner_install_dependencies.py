"""Install mode: an object whose CRD or Namespace another node of the same attempt applies waits for
it (driven by watches) instead of failing after the short back-off; install creates before it reads.

Everything runs on the virtual clock; event timestamps are simulated seconds since ``EPOCH``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cvo.clock import Clock
from cvo.cluster.api import ApiError, ApiErrorKind, Ref
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.payload.graph import Mode
from cvo.payload.loader import Release
from cvo.runner.events import Recorder
from cvo.runner.sweep import SweepOptions, SweepResult
from cvo.runner.worker import Worker
from tests.runner.test_runner_worker import EPOCH, first, named, release_of, secs, virtual
from tests.support.helpers import HA, ReleaseFactory, obj

CRD_NAME = "widgets.example.com"
CRD_REF = Ref("apiextensions.k8s.io", "CustomResourceDefinition", "", CRD_NAME)


def crd() -> dict[str, Any]:
    return obj("CustomResourceDefinition", CRD_NAME, api="apiextensions.k8s.io/v1", spec={
        "group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True}]})


def widget(namespace: str = "ns") -> dict[str, Any]:
    return obj("Widget", "w", namespace, api="example.com/v1", spec={"size": 1})


def widget_payload() -> dict[str, object]:
    # Two components of one run level: two nodes that install mode runs side by side.
    return {"0000_10_a_widget.yaml": widget(), "0000_10_b_crd.yaml": crd()}


async def sweep(cluster: SimCluster, clock: Clock, release: Release, mode: Mode,
                rec: Recorder | None = None) -> tuple[SweepResult, Recorder]:
    rec = rec or Recorder()
    result = await Worker(cluster, release, mode, rec, clock, SweepOptions(timeout=3600.0, interval=180.0)).run()
    return result, rec


def cluster_with(clock: Clock, **kw: Any) -> SimCluster:
    return SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns"), **kw)


def test_a_custom_resource_waits_for_its_crd_to_be_established(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, "4.17.0", widget_payload())

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        # Established 12 s after it is created: longer than the install back-off's 1 + 2 + 4 s.
        return await sweep(cluster_with(clock, crd_establish_delay=12.0), clock, release, Mode.INSTALL)

    result, rec = virtual(main)
    assert result.ok and result.attempts == 1, result.message
    dependency = first(rec, "task.dependency")
    assert dependency.fields["kind"] == "CustomResourceDefinition" and dependency.fields["dependency"] == CRD_NAME
    assert dependency.fields["error"] == "NoKindMatch" and secs(dependency) == 0.0
    applied = first(rec, "task.applied", task='widget "ns/w" (1 of 2)')
    assert secs(applied) == 12.0  # the moment the CRD was Established: no polling, no back-off
    assert named(rec, "task.retry") == [] and named(rec, "task.failed") == []


class Establishing(SimCluster):
    """A cluster that can be asked to establish a CRD (as the Kubernetes backend can): records when and what."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns"), crd_establish_delay=12.0)
        self.asked: list[tuple[float, str]] = []

    async def establish(self, crd_name: str) -> bool:
        self.asked.append((asyncio.get_running_loop().time(), crd_name))
        return False


def test_a_custom_resource_waiting_for_its_crd_asks_the_cluster_to_establish_it(make_release: ReleaseFactory) -> None:
    """Discovery (``serves``) is only read; while the kind is not served, the wait asks the cluster to establish
    the CRD, an explicit write (the Kubernetes backend nudges a CRD the server left unestablished)."""
    release = release_of(make_release, "4.17.0", widget_payload())

    async def main() -> tuple[SweepResult, list[tuple[float, str]]]:
        clock = Clock(EPOCH)
        cluster = Establishing(clock)
        result, _ = await sweep(cluster, clock, release, Mode.INSTALL)
        return result, cluster.asked

    result, asked = virtual(main)
    assert result.ok, result.message
    assert asked and {name for _, name in asked} == {CRD_NAME}
    assert all(t < 12.0 for t, _ in asked)  # only while the kind is not served


def test_a_namespaced_object_waits_for_its_namespace(make_release: ReleaseFactory) -> None:
    files = {
        "0000_10_a_cm.yaml": obj("ConfigMap", "cm", "late", data={"k": "v"}),
        "0000_10_b_slow.yaml": obj("ConfigMap", "slow", "ns"),
        "0000_10_b_zns.yaml": obj("Namespace", "late"),
    }
    release = release_of(make_release, "4.17.0", files)

    async def main() -> tuple[SweepResult, Recorder, ReadCounting]:
        clock = Clock(EPOCH)
        cluster = cluster_with(clock)
        # The node that creates the namespace is held up by 3 failures (1 + 2 + 4 s of retries).
        cluster.inject_failure(Ref("", "ConfigMap", "ns", "slow"), ApiErrorKind.TIMEOUT, count=3)
        counting = ReadCounting(cluster)
        result, rec = await sweep(counting, clock, release, Mode.INSTALL)  # type: ignore[arg-type]
        return result, rec, counting

    result, rec, counting = virtual(main)
    assert result.ok and result.attempts == 1, result.message
    assert counting.reads.get("Namespace", 0) == 0  # the namespace watch says when it is there: no reads of it
    dependency = first(rec, "task.dependency")
    assert (dependency.fields["kind"], dependency.fields["dependency"], dependency.fields["error"]) == (
        "Namespace", "late", "NotFound")
    # The watch said the namespace was not there yet: no create was sent into it before it was.
    assert dependency.fields["seen"] == "watch" and secs(dependency) == 0.0
    assert counting.creates[Ref("", "ConfigMap", "late", "cm")] == 1
    namespace = first(rec, "task.applied", task='namespace "late" (3 of 3)')
    assert secs(namespace) == 7.0
    assert secs(first(rec, "task.applied", task='configmap "late/cm" (1 of 3)')) == 7.0
    assert [e.fields["task"] for e in named(rec, "task.retry")] == ['configmap "ns/slow" (2 of 3)'] * 3


class NamespaceGone(SimCluster):
    """The first create of ``late/cm`` fails with a NotFound that names ``missing`` (None: names none) as the
    missing namespace, whatever its message says."""

    def __init__(self, clock: Clock, message: str, missing: str | None) -> None:
        super().__init__(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns", "late"))
        self.message, self.missing, self.failed = message, missing, False

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        if Ref.of(obj) == Ref("", "ConfigMap", "late", "cm") and not self.failed:
            self.failed = True
            raise ApiError(ApiErrorKind.NOT_FOUND, self.message, Ref.of(obj), namespace_missing=self.missing)
        return await super().create(obj)


@pytest.mark.parametrize(("message", "missing", "waits"), [
    ("the namespace went away", "late", True),  # the field says so: the message does not matter
    ('namespaces "late" not found', None, False),  # the text alone is not matched
])
def test_a_missing_namespace_is_told_by_the_errors_field(make_release: ReleaseFactory, message: str,
                                                          missing: str | None, waits: bool) -> None:
    files = {"0000_10_a_cm.yaml": obj("ConfigMap", "cm", "late", data={"k": "v"}),
             "0000_10_b_zns.yaml": obj("Namespace", "late")}
    release = release_of(make_release, "4.17.0", files)

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        return await sweep(NamespaceGone(clock, message, missing), clock, release, Mode.INSTALL)

    result, rec = virtual(main)
    assert result.ok, result.message
    dependencies = [(e.fields["dependency"], e.fields["error"]) for e in named(rec, "task.dependency")]
    assert dependencies == ([("late", "NotFound")] if waits else [])
    assert len(named(rec, "task.retry")) == (0 if waits else 1)


def test_a_namespace_the_install_does_not_create_is_not_waited_for(make_release: ReleaseFactory) -> None:
    """A payload Namespace the attempt skips (here: it is to be deleted, which install mode does not do)
    will not appear: an object that goes into it gets the CVO's NotFound and back-off at once."""
    files = {
        "0000_10_a_cm.yaml": obj("ConfigMap", "cm", "gone", data={"k": "v"}),
        "0000_10_b_ns.yaml": obj("Namespace", "gone", annotations={**HA, "release.openshift.io/delete": "true"}),
    }
    release = release_of(make_release, "4.17.0", files)

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        return await sweep(cluster_with(clock), clock, release, Mode.INSTALL)

    _result, rec = virtual(main)
    failed = first(rec, "task.failed", task='configmap "gone/cm" (1 of 2)')
    assert secs(failed) == 7.0  # 1 + 2 + 4 s: no 60-second wait for a namespace that never comes
    assert all(e.fields.get("seen") != "watch" for e in named(rec, "task.dependency"))


def test_a_dependency_whose_node_fails_is_not_waited_for(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, "4.17.0", widget_payload())

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        cluster = cluster_with(clock)
        cluster.inject_failure(CRD_REF, ApiErrorKind.FORBIDDEN, count=4)  # every call of the first attempt
        return await sweep(cluster, clock, release, Mode.INSTALL)

    result, rec = virtual(main)
    crd_failed = first(rec, "task.failed", task=f'customresourcedefinition "{CRD_NAME}" (2 of 2)')
    assert secs(crd_failed) == 7.0
    # The widget stopped waiting when the CRD's node failed, then used its own back-off (1, 2, 4 s).
    widget_failed = first(rec, "task.failed", task='widget "ns/w" (1 of 2)')
    assert widget_failed.fields["reason"] == "UpdatePayloadResourceTypeMissing"
    assert secs(widget_failed) == 7.0 + 7.0
    attempt_failed = first(rec, "attempt.failed")
    assert secs(attempt_failed) == 14.0
    # The next attempt finds the CRD's failures used up, and the install completes.
    assert result.ok and result.attempts == 2


def test_update_mode_does_not_wait_for_a_crd(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, "4.17.0", widget_payload())

    async def main() -> tuple[SweepResult, Recorder]:
        clock = Clock(EPOCH)
        return await sweep(cluster_with(clock, crd_establish_delay=30.0), clock, release, Mode.UPDATE)

    _result, rec = virtual(main)
    assert named(rec, "task.dependency") == []
    failed = first(rec, "task.failed", task='widget "ns/w" (1 of 2)')
    assert failed.fields["reason"] == "UpdatePayloadResourceTypeMissing" and secs(failed) == 23.0


def configmaps(n: int) -> dict[str, object]:
    return {f"0000_10_c{i:03}_cm.yaml": obj("ConfigMap", f"cm{i}", "ns", data={"i": str(i)}) for i in range(n)}


def test_install_creates_without_reading_first(make_release: ReleaseFactory) -> None:
    def requests(n: int) -> tuple[dict[str, int], dict[str, int]]:
        release = release_of(make_release, f"4.17.{n}", configmaps(n))

        async def main() -> tuple[dict[str, int], dict[str, int]]:
            clock = Clock(EPOCH)
            cluster = cluster_with(clock)
            result, _ = await sweep(cluster, clock, release, Mode.INSTALL)
            assert result.ok
            fresh = dict(cluster.stats.verbs)
            result, rec = await sweep(cluster, clock, release, Mode.INSTALL)  # everything exists now
            assert result.ok
            assert {e.fields["action"] for e in named(rec, "task.applied")} == {"unchanged"}
            again = {k: v - fresh.get(k, 0) for k, v in cluster.stats.verbs.items()}
            return fresh, again

        return virtual(main)

    small, small_again = requests(5)
    large, large_again = requests(25)
    # Into an empty cluster: one create per object and no extra reads.
    assert large["create"] - small["create"] == 20
    assert large.get("get", 0) == small.get("get", 0)
    # Into a cluster that has them: the create is refused, then the object is read and compared.
    assert large_again["create"] - small_again["create"] == 20
    assert large_again["get"] - small_again["get"] == 20
    assert large_again.get("update", 0) == small_again.get("update", 0)



class ReadCounting:
    """The embedded cluster, counting reads of each kind and creates of each object (it serves everything
    else unchanged)."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.reads: dict[str, int] = {}
        self.creates: dict[Ref, int] = {}

    async def get(self, ref: Ref) -> Any:
        self.reads[ref.kind] = self.reads.get(ref.kind, 0) + 1
        return await self.cluster.get(ref)

    async def create(self, obj: dict[str, Any]) -> Any:
        ref = Ref.of(obj)
        self.creates[ref] = self.creates.get(ref, 0) + 1
        return await self.cluster.create(obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster, name)


def test_install_reads_no_operator_object_before_its_health_check(make_release: ReleaseFactory) -> None:
    """An install creates the ClusterOperator in its node's precreate pass and the OperatorCondition, Role
    and RoleBinding for the operator's Deployment: none is read first (the cluster is empty), and the
    ClusterOperator task checks its health on what it created, then on what the watch delivers (as the
    CVO's Initializing mode checks it from its informer's cache): no read at all."""
    from tests.runner.test_runner_worker import operator_payload, start_sim

    release = release_of(make_release, "4.17.0", operator_payload("4.17.0"))

    async def main() -> tuple[SweepResult, dict[str, int], int]:
        clock = Clock(EPOCH)
        cluster = cluster_with(clock)
        sim = await start_sim(cluster, clock, [release])
        counting = ReadCounting(cluster)
        rec = Recorder()
        result, _ = await sweep(counting, clock, release, Mode.INSTALL, rec)  # type: ignore[arg-type]
        await sim.stop()
        return result, counting.reads, len(named(rec, "task.waiting", operator="foo"))

    result, reads, waits = virtual(main)
    assert result.ok, result.message
    assert reads.get("OperatorCondition", 0) == 0 and reads.get("Role", 0) == 0 and reads.get("RoleBinding", 0) == 0
    assert waits >= 1  # it did wait for the operator
    assert reads.get("ClusterOperator", 0) == 0


class SlowConfigMaps(ReadCounting):
    """The embedded cluster, where creating a ConfigMap takes ``delay`` simulated seconds."""

    def __init__(self, cluster: SimCluster, delay: float) -> None:
        super().__init__(cluster)
        self.delay = delay

    async def create(self, obj: dict[str, Any]) -> Any:
        if obj.get("kind") == "ConfigMap":
            await asyncio.sleep(self.delay)
        return await super().create(obj)


def slow_node_payload() -> dict[str, object]:
    # Node "a": the widget, which needs the CRD.  Node "b": two slow ConfigMaps, then the CRD.
    return {"0000_10_a_widget.yaml": widget(), "0000_10_b_0cm.yaml": obj("ConfigMap", "one", "ns"),
            "0000_10_b_1cm.yaml": obj("ConfigMap", "two", "ns"), "0000_10_b_crd.yaml": crd()}


def test_install_applies_the_payloads_crds_ahead_of_their_nodes(make_release: ReleaseFactory) -> None:
    """The CRD is sent when the attempt starts, not after the 20 s its node spends on the ConfigMaps before
    it: the widget waiting for it applies once it is Established (5 s), not at 25 s.  Its own task still
    runs in its node's order, takes that apply's outcome, and the CRD is created once."""
    release = release_of(make_release, "4.17.0", slow_node_payload())

    async def main() -> tuple[SweepResult, Recorder, SlowConfigMaps]:
        clock = Clock(EPOCH)
        cluster = SlowConfigMaps(cluster_with(clock, crd_establish_delay=5.0), delay=10.0)
        result, rec = await sweep(cluster, clock, release, Mode.INSTALL)  # type: ignore[arg-type]
        return result, rec, cluster

    result, rec, cluster = virtual(main)
    assert result.ok and result.attempts == 1, result.message
    assert secs(first(rec, "task.applied", task='widget "ns/w" (1 of 4)')) == 5.0
    crd_task = f'customresourcedefinition "{CRD_NAME}" (4 of 4)'
    assert secs(first(rec, "task.started", task=crd_task)) == 20.0  # after the ConfigMaps, as before
    assert first(rec, "task.applied", task=crd_task).fields["action"] == "created"
    assert cluster.creates[CRD_REF] == 1


def test_update_mode_applies_crds_in_their_nodes(make_release: ReleaseFactory) -> None:
    release = release_of(make_release, "4.17.0", slow_node_payload())

    async def main() -> Recorder:
        clock = Clock(EPOCH)
        cluster = SlowConfigMaps(cluster_with(clock), delay=10.0)
        _result, rec = await sweep(cluster, clock, release, Mode.UPDATE)  # type: ignore[arg-type]
        return rec

    rec = virtual(main)
    crd_created = first(rec, "task.applied", task=f'customresourcedefinition "{CRD_NAME}" (4 of 4)')
    assert secs(crd_created) == 20.0


def test_a_failed_early_crd_apply_is_the_tasks_first_call(make_release: ReleaseFactory) -> None:
    """The early apply fails: its task applies the CRD again after the first back-off (1 s), in its node."""
    release = release_of(make_release, "4.17.0", slow_node_payload())

    async def main() -> tuple[SweepResult, Recorder, SlowConfigMaps]:
        clock = Clock(EPOCH)
        sim = cluster_with(clock)
        sim.inject_failure(CRD_REF, ApiErrorKind.FORBIDDEN, count=1)
        cluster = SlowConfigMaps(sim, delay=10.0)
        result, rec = await sweep(cluster, clock, release, Mode.INSTALL)  # type: ignore[arg-type]
        return result, rec, cluster

    result, rec, cluster = virtual(main)
    assert result.ok and result.attempts == 1, result.message
    crd_task = f'customresourcedefinition "{CRD_NAME}" (4 of 4)'
    retry = first(rec, "task.retry", task=crd_task)
    assert secs(retry) == 20.0 and retry.fields["call"] == 1 and retry.fields["error"] == "Forbidden"
    assert secs(first(rec, "task.applied", task=crd_task)) == 21.0
    assert secs(first(rec, "task.applied", task='widget "ns/w" (1 of 4)')) == 21.0
    assert cluster.creates[CRD_REF] == 2


class CreateOrder(ReadCounting):
    """The embedded cluster, recording the order of creates."""

    def __init__(self, cluster: SimCluster) -> None:
        super().__init__(cluster)
        self.order: list[Ref] = []

    async def create(self, obj: dict[str, Any]) -> Any:
        self.order.append(Ref.of(obj))
        return await super().create(obj)


def test_install_sends_the_crds_its_custom_resources_need_first(make_release: ReleaseFactory,
                                                                 monkeypatch: Any) -> None:
    """The API server establishes CRDs in the order they come: the one the widget waits for goes before a
    CRD nothing in the payload uses, although the payload has it after that one."""
    import cvo.runner.early_crds as early_crds

    monkeypatch.setattr(early_crds, "EARLY_CRD_APPLIES", 1)
    gadgets = obj("CustomResourceDefinition", "gadgets.example.com", api="apiextensions.k8s.io/v1", spec={
        "group": "example.com", "scope": "Cluster", "names": {"plural": "gadgets", "kind": "Gadget"},
        "versions": [{"name": "v1", "served": True, "storage": True}]})
    files = {"0000_10_a_widget.yaml": widget(), "0000_10_b_0gadgets.yaml": gadgets, "0000_10_b_1widgets.yaml": crd()}
    release = release_of(make_release, "4.17.0", files)

    async def main() -> tuple[SweepResult, CreateOrder]:
        clock = Clock(EPOCH)
        cluster = CreateOrder(cluster_with(clock))
        result, _ = await sweep(cluster, clock, release, Mode.INSTALL)  # type: ignore[arg-type]
        return result, cluster

    result, cluster = virtual(main)
    assert result.ok, result.message
    crds = [ref.name for ref in cluster.order if ref.kind == "CustomResourceDefinition"]
    assert crds == [CRD_NAME, "gadgets.example.com"]
