"""The libraries an operator uses, and cvo's OLM part, against the embedded simulated cluster.

* :class:`cvo.operators.library.conditions.OperatorConditions` — operator-lib's ``conditions`` package
  (operator-lib conditions/conditions.go): the name from ``OPERATOR_CONDITION_NAME``, ``spec.conditions`` read and written,
  ``lastTransitionTime`` moving only on a status change, a no-op where the API is not served.
* :func:`cvo.operators.library.clusteroperator.report_status` — atomic ClusterOperator status (openshift/enhancements dev-guide/cluster-version-operator/dev/clusteroperator.md).
* :class:`cvo.runner.operator_conditions.OperatorConditionManager` — the generator (A4) and the
  status sync (A2).

Everything runs on the virtual clock: ``asyncio.sleep`` here takes no real time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cvo.clock import Clock, run_virtual, to_rfc3339
from cvo.cluster.api import CLUSTER_OPERATOR, OPERATOR_CONDITION, ApiError, ApiErrorKind, Ref, co_ref
from cvo.cluster.embedded import kinds
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.gates.olm import ENV_NAME, OC_GROUP, OC_KIND, upgradeable_verdict
from cvo.log import configure
from cvo.operators.library.clusteroperator import Condition, report_status
from cvo.operators.library.conditions import (
    ConditionNameMissing,
    ConditionNotFound,
    ConditionValue,
    NamespaceMissing,
    OperatorConditions,
)
from cvo.payload.loader import Release, load_release
from cvo.payload.manifest import Manifest
from cvo.runner.operator_conditions import RESYNC_DELAY, OperatorConditionManager
from tests.support.helpers import ReleaseFactory, cluster_operator, obj

EPOCH = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
NS = "openshift-etcd-operator"
OC_REF = Ref(OC_GROUP, OC_KIND, NS, "etcd")
MISSING_ENV = ("get operator condition name: could not determine operator condition name: environment variable "
               "OPERATOR_CONDITION_NAME not set")

Test = Callable[[SimCluster, Clock], Awaitable[Any]]


def run(test: Test) -> Any:
    async def main() -> Any:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, NS))
        try:
            return await test(cluster, clock)
        finally:
            await cluster.close()

    return run_virtual(main)


def at(seconds: float) -> str:
    return to_rfc3339(EPOCH + timedelta(seconds=seconds))


async def create_oc(cluster: SimCluster, name: str = "etcd", **spec: Any) -> dict[str, Any]:
    """What cvo (or OLM) creates before the operator runs."""
    return await cluster.create({"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
                                 "metadata": {"name": name, "namespace": NS},
                                 "spec": {"deployments": ["etcd-operator"], "serviceAccounts": ["etcd-operator"],
                                          **spec}})


async def settle() -> None:
    """Let watchers take what was written at this instant (no time passes)."""
    for _ in range(10):
        await asyncio.sleep(0)


@pytest.fixture
def operator_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_NAME, "etcd")
    monkeypatch.setenv("POD_NAMESPACE", NS)
    monkeypatch.delenv("OPERATOR_NAMESPACE", raising=False)


@pytest.fixture
def oc_api_not_served(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster without OLM: OperatorCondition is one of the simulated server's bootstrapped kinds, and
    ``served_groups`` cannot switch those off, so the kind is taken out of the bootstrap table."""
    monkeypatch.delitem(kinds.BOOTSTRAP_KINDS, OPERATOR_CONDITION)


@pytest.fixture
def info_logs() -> Iterator[list[dict[str, Any]]]:
    import structlog.testing  # here, not at collection: see test_cli_sweep._forget_structlog

    configure("text", 1)
    try:
        with structlog.testing.capture_logs() as logs:
            yield logs
    finally:
        configure("text", 0)


# --- OperatorConditions: finding the object --------------------------------------------------------------


def test_missing_env_is_operator_libs_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_NAME, raising=False)
    with pytest.raises(ConditionNameMissing) as err:
        OperatorConditions(SimCluster(), namespace=NS)
    assert str(err.value) == MISSING_ENV
    monkeypatch.setenv(ENV_NAME, "")
    with pytest.raises(ConditionNameMissing, match="environment variable OPERATOR_CONDITION_NAME not set"):
        OperatorConditions(SimCluster(), namespace=NS)


def test_name_from_env_and_namespace(operator_env: None) -> None:
    conditions = OperatorConditions(SimCluster())
    assert conditions.ref == OC_REF
    explicit = OperatorConditions(SimCluster(), name="dns", namespace="openshift-dns-operator")
    assert explicit.ref == Ref(OC_GROUP, OC_KIND, "openshift-dns-operator", "dns")


def test_missing_namespace_is_operator_libs_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without a namespace, operator-lib's ``InClusterFactory.NewCondition`` (operator-lib:
    conditions/factory.go) fails with ``get operator condition namespace: `` and ErrNoNamespace
    ("namespace not found for current environment", internal/utils/utils.go) instead of looking
    in no namespace."""
    monkeypatch.setenv(ENV_NAME, "etcd")
    for variable in ("OPERATOR_NAMESPACE", "POD_NAMESPACE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr("cvo.operators.library.conditions.NAMESPACE_FILE", str(tmp_path / "no-such-file"))
    with pytest.raises(NamespaceMissing) as err:
        OperatorConditions(SimCluster())
    assert str(err.value).startswith("get operator condition namespace: namespace not found for current environment")
    assert isinstance(err.value, ConditionNameMissing)  # what callers caught before


def test_namespace_from_the_environment_or_the_service_account_file(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """operator-lib's ``GetOperatorNamespace`` (internal/utils/utils.go): ``OPERATOR_NAMESPACE``
    first, then the service account's namespace file; cvo also reads ``POD_NAMESPACE`` between them."""
    monkeypatch.setenv(ENV_NAME, "etcd")
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    monkeypatch.delenv("OPERATOR_NAMESPACE", raising=False)
    (tmp_path / "namespace").write_text(NS + "\n")
    monkeypatch.setattr("cvo.operators.library.conditions.NAMESPACE_FILE", str(tmp_path / "namespace"))
    assert OperatorConditions(SimCluster()).ref == OC_REF
    monkeypatch.setenv("POD_NAMESPACE", "from-pod-namespace")
    assert OperatorConditions(SimCluster()).namespace == "from-pod-namespace"
    monkeypatch.setenv("OPERATOR_NAMESPACE", " from-operator-namespace ")
    assert OperatorConditions(SimCluster()).namespace == "from-operator-namespace"


def test_constructing_makes_no_api_call(operator_env: None) -> None:
    cluster = SimCluster()
    OperatorConditions(cluster)
    assert sum(cluster.stats.verbs.values()) == 0


# --- OperatorConditions: get and set ------------------------------------------------------------------------


def test_get_set_round_trip(operator_env: None) -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster)
        conditions = OperatorConditions(cluster, clock=clock)
        assert await conditions.set("Upgradeable", "False", reason="migration",
                                    message="The operator is performing a migration.")
        got = await conditions.get("Upgradeable")
        assert got == ConditionValue("Upgradeable", "False", "migration", "The operator is performing a migration.",
                                     at(0))
        live = await cluster.get(OC_REF)
        assert live is not None
        assert live["spec"]["conditions"] == [{"type": "Upgradeable", "status": "False", "reason": "migration",
                                               "message": "The operator is performing a migration.",
                                               "lastTransitionTime": at(0)}]
        assert live["spec"]["deployments"] == ["etcd-operator"]  # the rest of spec is kept
        assert live["metadata"]["generation"] == 2  # a spec write: OLM's staleness guard sees it
        assert "status" not in live  # the operator writes spec; the status copy is OLM's (cvo's)
        # A second type sits beside the first.
        assert await conditions.set("Foo", "True", reason="Fine")
        assert [c["type"] for c in (await cluster.get(OC_REF))["spec"]["conditions"]] == ["Upgradeable", "Foo"]

    run(test)


def test_get_of_a_condition_never_set_is_operator_libs_error(operator_env: None) -> None:
    """operator-lib's ``condition.Get`` (operator-lib: conditions/conditions.go) returns
    ``fmt.Errorf("conditionType %v not found", c.condType)`` when ``spec.conditions`` has no such
    type, rather than a nil condition a caller could mistake for "not blocking"."""

    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster)
        conditions = OperatorConditions(cluster, clock=clock)
        with pytest.raises(ConditionNotFound) as err:
            await conditions.get("Upgradeable")
        assert str(err.value) == "conditionType Upgradeable not found"
        await conditions.set("Foo", "True", reason="Fine")
        with pytest.raises(ConditionNotFound):  # another type set does not count
            await conditions.get("Upgradeable")
        assert (await conditions.get("Foo")).status == "True"

    run(test)


def test_last_transition_time_moves_only_on_a_status_change(operator_env: None) -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster)
        conditions = OperatorConditions(cluster, clock=clock)
        await conditions.set("Upgradeable", "False", reason="Starting", message="checking")
        await asyncio.sleep(60)
        await conditions.set("Upgradeable", "False", reason="migration", message="migrating")
        got = await conditions.get("Upgradeable")
        assert (got.reason, got.message, got.last_transition_time) == ("migration", "migrating", at(0))
        await asyncio.sleep(60)
        await conditions.set("Upgradeable", "True", reason="AsExpected")
        got = await conditions.get("Upgradeable")
        assert (got.status, got.last_transition_time) == ("True", at(120))

    run(test)


def test_setting_the_same_condition_again_writes_nothing(operator_env: None) -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster)
        conditions = OperatorConditions(cluster, clock=clock)
        await conditions.set("Upgradeable", "True", reason="AsExpected", message="ok")
        writes, generation = cluster.stats.writes, (await cluster.get(OC_REF))["metadata"]["generation"]
        await asyncio.sleep(30)
        assert await conditions.set("Upgradeable", "True", reason="AsExpected", message="ok")
        assert cluster.stats.writes == writes
        assert (await cluster.get(OC_REF))["metadata"]["generation"] == generation

    run(test)


def test_set_retries_conflicts(operator_env: None) -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster)
        conditions = OperatorConditions(cluster, clock=clock)
        cluster.inject_failure(OC_REF, ApiErrorKind.CONFLICT, count=2, verbs=["update"])
        assert await conditions.set("Upgradeable", "False", reason="migration", message="m")
        assert cluster.stats.verbs["update"] == 3
        assert (await conditions.get("Upgradeable")).status == "False"

    run(test)


def test_set_retries_a_real_conflict_with_a_concurrent_writer(operator_env: None) -> None:
    """Somebody (an admin adding an override) writes between the operator's read and its update."""

    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster)
        conditions = OperatorConditions(cluster, clock=clock)
        stale = await cluster.get(OC_REF)
        real_get = cluster.get
        calls = 0

        async def get_once_stale(ref: Ref) -> dict[str, Any] | None:
            nonlocal calls
            calls += 1
            if calls == 1:  # the operator reads, then the admin writes before the operator's update
                admin = await real_get(ref)
                admin["spec"]["overrides"] = [{"type": "Upgradeable", "status": "True", "reason": "Admin",
                                               "message": "ok", "lastTransitionTime": at(0)}]
                await cluster.update(admin)
                return stale
            return await real_get(ref)

        cluster.get = get_once_stale  # type: ignore[method-assign]
        assert await conditions.set("Upgradeable", "False", reason="migration", message="m")
        live = await real_get(OC_REF)
        assert live["spec"]["overrides"][0]["reason"] == "Admin"  # the admin's write survived
        assert live["spec"]["conditions"][0]["status"] == "False"

    run(test)


def test_set_gives_up_after_repeated_conflicts(operator_env: None) -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster)
        conditions = OperatorConditions(cluster, clock=clock)
        cluster.inject_failure(OC_REF, ApiErrorKind.CONFLICT, count=100, verbs=["update"])
        with pytest.raises(ApiError) as err:
            await conditions.set("Upgradeable", "False")
        assert err.value.kind is ApiErrorKind.CONFLICT
        assert "conditions" not in (await cluster.get(OC_REF))["spec"]

    run(test)


def test_other_errors_are_not_retried(operator_env: None) -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster)
        conditions = OperatorConditions(cluster, clock=clock)
        cluster.inject_failure(OC_REF, ApiErrorKind.FORBIDDEN, count=1, verbs=["update"])
        with pytest.raises(ApiError) as err:
            await conditions.set("Upgradeable", "False")
        assert err.value.kind is ApiErrorKind.FORBIDDEN
        assert cluster.stats.verbs["update"] == 1

    run(test)


def test_missing_object_is_not_found(operator_env: None) -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        conditions = OperatorConditions(cluster, clock=clock)
        for call in (conditions.get("Upgradeable"), conditions.set("Upgradeable", "True")):
            with pytest.raises(ApiError) as err:
                await call
            assert err.value.kind is ApiErrorKind.NOT_FOUND
            assert "etcd" in str(err.value)
        assert cluster.stats.writes == 0

    run(test)


def test_api_not_served_is_a_no_op_with_one_log_line(operator_env: None, oc_api_not_served: None,
                                                      info_logs: list[dict[str, Any]]) -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        assert not await cluster.serves("operators.coreos.com/v2", "OperatorCondition")
        conditions = OperatorConditions(cluster, clock=clock)
        assert await conditions.set("Upgradeable", "False", reason="migration") is False
        with pytest.raises(ConditionNotFound, match="conditionType Upgradeable not found"):
            await conditions.get("Upgradeable")
        assert await conditions.set("Upgradeable", "True") is False
        assert cluster.stats.writes == 0
        assert cluster.stats.reads == 0

    run(test)
    lines = [e for e in info_logs if "OperatorCondition" in e["event"]]
    assert len(lines) == 1, info_logs
    assert "not served" in lines[0]["event"]


# --- report_status: atomic ClusterOperator status ------------------------------------------------------------


HEALTHY = [Condition("Available", "True", "AsExpected", "Operands are available at 4.16.0"),
           Condition("Degraded", "False", "AsExpected"),
           Condition("Progressing", "False", "AsExpected", "Deployed 4.16.0")]


def test_report_status_writes_versions_and_conditions_in_one_status_update() -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        stream = cluster.watch(*CLUSTER_OPERATOR, name="etcd")
        seen: list[dict[str, Any]] = []

        async def watch() -> None:
            async for event in stream:
                seen.append(event.obj.get("status") or {})

        task = asyncio.create_task(watch())
        await settle()
        before = cluster.stats.verbs["update_status"]
        live = await report_status(cluster, "etcd", clock.now(),
                                   versions={"operator": "4.16.0", "etcd": "3.5.13"}, conditions=HEALTHY)
        assert cluster.stats.verbs["update_status"] - before == 1
        assert cluster.stats.verbs["update"] == 0
        assert live["status"]["versions"] == [{"name": "operator", "version": "4.16.0"},
                                              {"name": "etcd", "version": "3.5.13"}]
        assert [c["type"] for c in live["status"]["conditions"]] == ["Available", "Degraded", "Progressing"]
        # An update: new versions and new conditions, still one write.
        await asyncio.sleep(60)
        await report_status(cluster, "etcd", clock.now(), versions={"operator": "4.17.0", "etcd": "3.5.14"},
                            conditions=[Condition("Available", "True", "AsExpected", "at 4.17.0"),
                                        Condition("Progressing", "False", "AsExpected", "Deployed 4.17.0")])
        assert cluster.stats.verbs["update_status"] - before == 2
        await settle()
        task.cancel()
        # No watcher ever saw versions without conditions, or new versions with old conditions.
        with_status = [s for s in seen if s]
        assert len(with_status) == 2
        for status in with_status:
            assert status["versions"] and status["conditions"]
        assert with_status[1]["versions"][0]["version"] == "4.17.0"
        available = next(c for c in with_status[1]["conditions"] if c["type"] == "Available")
        assert available["message"] == "at 4.17.0"

    run(test)


def test_report_status_keeps_transition_times_and_skips_no_op_writes() -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        await report_status(cluster, "etcd", clock.now(), versions={"operator": "4.16.0"}, conditions=HEALTHY)
        await asyncio.sleep(120)
        writes = cluster.stats.verbs["update_status"]
        same = await report_status(cluster, "etcd", clock.now(), versions={"operator": "4.16.0"},
                                   conditions=HEALTHY)
        assert cluster.stats.verbs["update_status"] == writes  # nothing changed: nothing written
        assert {c["type"]: c["lastTransitionTime"] for c in same["status"]["conditions"]} == {
            "Available": at(0), "Degraded": at(0), "Progressing": at(0)}
        live = await report_status(cluster, "etcd", clock.now(), conditions=[
            Condition("Available", "True", "AsExpected", "a new message"),  # same status: time kept
            Condition("Degraded", "True", "DiskPressure", "etcd is low on disk"),  # flipped: new time
        ])
        conds = {c["type"]: c for c in live["status"]["conditions"]}
        assert conds["Available"]["lastTransitionTime"] == at(0)
        assert conds["Available"]["message"] == "a new message"
        assert conds["Degraded"]["lastTransitionTime"] == at(120)
        assert conds["Progressing"] == {"type": "Progressing", "status": "False", "lastTransitionTime": at(0),
                                        "reason": "AsExpected", "message": "Deployed 4.16.0"}  # untouched
        assert live["status"]["versions"] == [{"name": "operator", "version": "4.16.0"}]  # versions=None keeps

    run(test)


def test_report_status_retries_conflicts_and_can_refuse_to_create() -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        with pytest.raises(ApiError) as err:
            await report_status(cluster, "etcd", clock.now(), conditions=HEALTHY, create=False)
        assert err.value.kind is ApiErrorKind.NOT_FOUND
        await report_status(cluster, "etcd", clock.now(), versions={"operator": "4.16.0"}, conditions=HEALTHY)
        cluster.inject_failure(co_ref("etcd"), ApiErrorKind.CONFLICT, count=2, verbs=["update_status"])
        live = await report_status(cluster, "etcd", clock.now(), versions={"operator": "4.16.3"},
                                   conditions=HEALTHY)
        assert live["status"]["versions"] == [{"name": "operator", "version": "4.16.3"}]

    run(test)


# --- OperatorConditionManager: the generator ------------------------------------------------------------------


def etcd_release(make_release: ReleaseFactory, account: str | None = "etcd-operator") -> Release:
    pod: dict[str, Any] = {"containers": [{"name": "operator", "image": "quay.io/etcd-operator",
                                           "env": [{"name": "RELEASE_VERSION", "value": "4.16.0"}]}]}
    if account:
        pod["serviceAccountName"] = account
    files = {
        "0000_20_etcd-operator_00_namespace.yaml": obj("Namespace", NS),
        "0000_20_etcd-operator_05_deployment.yaml": obj("Deployment", "etcd-operator", NS, api="apps/v1",
                                                        spec={"template": {"spec": pod}}),
        "0000_20_etcd-operator_06_clusteroperator.yaml": cluster_operator("etcd", "4.16.0", etcd="3.5.13"),
        "0000_30_other_05_deployment.yaml": obj("Deployment", "other", NS, api="apps/v1",
                                                spec={"template": {"spec": {"containers": []}}}),
    }
    return load_release(make_release(files))


def manifest(release: Release, kind: str, name: str) -> Manifest:
    return next(m for m in release.manifests if m.kind == kind and m.name == name)


ROLE_REF = Ref("rbac.authorization.k8s.io", "Role", NS, "etcd")
BINDING_REF = Ref("rbac.authorization.k8s.io", "RoleBinding", NS, "etcd")


def owner_of(oc: dict[str, Any]) -> list[dict[str, Any]]:
    """The ownerReferences OLM gives the Role and RoleBinding: ``ownerutil.AddOwner(obj, oc, false, true)``."""
    return [{"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition", "name": oc["metadata"]["name"],
             "uid": oc["metadata"]["uid"], "controller": True, "blockOwnerDeletion": False}]


def test_prepare_creates_the_operator_condition_role_and_binding_once(make_release: ReleaseFactory) -> None:
    release = etcd_release(make_release)
    deployment = manifest(release, "Deployment", "etcd-operator")

    async def test(cluster: SimCluster, clock: Clock) -> None:
        manager = OperatorConditionManager(cluster, release.manifests)
        assert manager.operator_for(deployment) == "etcd"
        mutate = await manager.prepare(deployment)
        assert mutate is not None
        assert cluster.stats.verbs["create"] == 3
        oc = await cluster.get(OC_REF)
        assert oc is not None
        assert oc["spec"] == {"deployments": ["etcd-operator"], "serviceAccounts": ["etcd-operator"]}
        role = await cluster.get(ROLE_REF)
        assert role is not None and role["rules"] == [
            {"verbs": ["get", "update", "patch"], "apiGroups": ["operators.coreos.com"],
             "resources": ["operatorconditions"], "resourceNames": ["etcd"]}]
        binding = await cluster.get(BINDING_REF)
        assert binding is not None
        assert [s["name"] for s in binding["subjects"]] == ["etcd-operator"]
        assert binding["roleRef"]["name"] == "etcd"
        assert role["metadata"]["ownerReferences"] == binding["metadata"]["ownerReferences"] == owner_of(oc)
        # The mutator injects OPERATOR_CONDITION_NAME into the Deployment about to be applied.
        injected = mutate(deployment.copy_obj())
        env = injected["spec"]["template"]["spec"]["containers"][0]["env"]
        assert env == [{"name": "RELEASE_VERSION", "value": "4.16.0"}, {"name": ENV_NAME, "value": "etcd"}]
        # Again (every apply of the Deployment): nothing is written.
        writes = cluster.stats.writes
        assert await manager.prepare(deployment) is not None
        assert cluster.stats.writes == writes

    run(test)


def two_deployments_release(make_release: ReleaseFactory, version: str = "4.16.0") -> Release:
    """A ClusterOperator whose component runs two operator Deployments, each with its own service account."""

    def deployment(name: str, account: str) -> dict[str, Any]:
        pod = {"serviceAccountName": account, "containers": [
            {"name": "operator", "image": f"quay.io/{name}", "env": [{"name": "RELEASE_VERSION", "value": version}]}]}
        return obj("Deployment", name, NS, api="apps/v1", spec={"template": {"spec": pod}})

    files = {
        "0000_20_etcd-operator_00_namespace.yaml": obj("Namespace", NS),
        "0000_20_etcd-operator_04_deployment.yaml": deployment("etcd-operator", "etcd-operator"),
        "0000_20_etcd-operator_05_deployment.yaml": deployment("etcd-backup-operator", "etcd-backup"),
        "0000_20_etcd-operator_06_clusteroperator.yaml": cluster_operator("etcd", version),
    }
    return load_release(make_release(files, version=version, name=f"two-{version}"))


def test_two_operator_deployments_share_one_operator_condition_written_once(make_release: ReleaseFactory) -> None:
    """OLM's generator (operator-lifecycle-manager: pkg/controller/operators/operatorconditiongenerator_controller.go,
    ``getDeploymentNames``/``getServiceAccountNames`` and ``ensureOperatorCondition``) lists every
    deployment and service account of the operator in its one OperatorCondition, and writes it only
    when they drift.  Built per Deployment, the second Deployment replaced the first one's lists
    (whose service account then lost its RoleBinding) and every apply bumped the generation, which
    makes the operator's last report "outdated" and blocks upgrades until the status copy catches up."""
    release = two_deployments_release(make_release)
    deployments = [manifest(release, "Deployment", n) for n in ("etcd-operator", "etcd-backup-operator")]

    async def test(cluster: SimCluster, clock: Clock) -> None:
        manager = OperatorConditionManager(cluster, release.manifests)
        assert [manager.operator_for(d) for d in deployments] == ["etcd", "etcd"]
        events: list[str] = []

        async def follow() -> None:
            async for event in cluster.watch(OC_GROUP, OC_KIND):
                events.append(event.type)

        follower = asyncio.create_task(follow())
        await settle()
        for _ in range(2):  # two sweeps, or a task retried: each Deployment is applied again
            for d in deployments:
                mutate = await manager.prepare(d)
                assert mutate is not None
                env = mutate(d.copy_obj())["spec"]["template"]["spec"]["containers"][0]["env"]
                assert {"name": ENV_NAME, "value": "etcd"} in env
        oc = await cluster.get(OC_REF)
        assert oc["spec"] == {"deployments": ["etcd-operator", "etcd-backup-operator"],
                              "serviceAccounts": ["etcd-operator", "etcd-backup"]}
        assert oc["metadata"]["generation"] == 1
        binding = await cluster.get(BINDING_REF)
        assert [(s["name"], s["namespace"]) for s in binding["subjects"]] == [
            ("etcd-operator", NS), ("etcd-backup", NS)]
        await settle()
        follower.cancel()
        assert events == ["ADDED"]  # written once: no update, no second generation

    run(test)


def test_deleting_the_operator_condition_garbage_collects_its_role_and_binding(make_release: ReleaseFactory) -> None:
    """The Role and RoleBinding are owned by the OperatorCondition (OLM: operatorcondition_controller.go,
    ``ownerutil.AddOwner(role, operatorCondition, false, true)``), so the garbage collector deletes
    them with it; the embedded cluster does what the collector does, at once.  The next sweep
    creates all three again, the RBAC owned by the new object."""
    release = etcd_release(make_release)
    deployment = manifest(release, "Deployment", "etcd-operator")

    async def test(cluster: SimCluster, clock: Clock) -> None:
        manager = OperatorConditionManager(cluster, release.manifests)
        await manager.prepare(deployment)
        first = await cluster.get(OC_REF)
        assert await cluster.delete(OC_REF)
        assert await cluster.get(ROLE_REF) is None and await cluster.get(BINDING_REF) is None
        await manager.prepare(deployment)
        second = await cluster.get(OC_REF)
        assert second["metadata"]["uid"] != first["metadata"]["uid"]
        for ref in (ROLE_REF, BINDING_REF):
            assert (await cluster.get(ref))["metadata"]["ownerReferences"] == owner_of(second)

    run(test)


def test_prepare_takes_over_rbac_it_does_not_own(make_release: ReleaseFactory) -> None:
    """A Role without an owner (made by an older cvo, or by hand) or owned by an OperatorCondition
    that is gone (a server without a garbage collector) gets the live one as its only owner, as OLM's
    ``ensureOperatorConditionRole`` replaces ``OwnerReferences`` when ``IsOwnedBy`` is false."""
    release = etcd_release(make_release)
    deployment = manifest(release, "Deployment", "etcd-operator")

    async def test(cluster: SimCluster, clock: Clock) -> None:
        manager = OperatorConditionManager(cluster, release.manifests)
        await manager.prepare(deployment)
        oc = await cluster.get(OC_REF)
        role = await cluster.get(ROLE_REF)
        role["metadata"]["ownerReferences"] = []
        await cluster.update(role)
        binding = await cluster.get(BINDING_REF)
        binding["metadata"]["ownerReferences"][0]["uid"] = "an-operatorcondition-that-is-gone"
        await cluster.update(binding)
        writes = cluster.stats.writes
        await manager.prepare(deployment)
        assert cluster.stats.writes == writes + 2
        for ref in (ROLE_REF, BINDING_REF):
            assert (await cluster.get(ref))["metadata"]["ownerReferences"] == owner_of(oc)

    run(test)


def test_prepare_ignores_other_manifests(make_release: ReleaseFactory) -> None:
    release = etcd_release(make_release)

    async def test(cluster: SimCluster, clock: Clock) -> None:
        manager = OperatorConditionManager(cluster, release.manifests)
        for m in (manifest(release, "Namespace", NS), manifest(release, "Deployment", "other"),
                  manifest(release, "ClusterOperator", "etcd")):
            assert await manager.prepare(m) is None
        assert cluster.stats.writes == 0

    run(test)


def test_prepare_default_service_account(make_release: ReleaseFactory) -> None:
    release = etcd_release(make_release, account=None)

    async def test(cluster: SimCluster, clock: Clock) -> None:
        await OperatorConditionManager(cluster, release.manifests).prepare(
            manifest(release, "Deployment", "etcd-operator"))
        assert (await cluster.get(OC_REF))["spec"]["serviceAccounts"] == ["default"]
        assert (await cluster.get(BINDING_REF))["subjects"][0]["name"] == "default"

    run(test)


def test_prepare_keeps_conditions_and_overrides_and_repairs_drift(make_release: ReleaseFactory) -> None:
    release = etcd_release(make_release)
    deployment = manifest(release, "Deployment", "etcd-operator")
    reported = [{"type": "Upgradeable", "status": "False", "reason": "migration", "message": "m",
                 "lastTransitionTime": at(0)}]
    override = [{"type": "Upgradeable", "status": "True", "reason": "upgradeIsSafe", "message": "known issue",
                 "lastTransitionTime": at(0)}]

    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster, conditions=reported, overrides=override)
        drifted = await cluster.get(OC_REF)
        drifted["spec"]["deployments"] = ["something-else"]
        drifted["spec"]["serviceAccounts"] = []
        await cluster.update(drifted)
        await OperatorConditionManager(cluster, release.manifests).prepare(deployment)
        oc = await cluster.get(OC_REF)
        assert oc["spec"] == {"deployments": ["etcd-operator"], "serviceAccounts": ["etcd-operator"],
                              "conditions": reported, "overrides": override}
        # A Role somebody widened is put back.
        role = await cluster.get(ROLE_REF)
        role["rules"][0]["verbs"].append("delete")
        await cluster.update(role)
        await OperatorConditionManager(cluster, release.manifests).prepare(deployment)
        assert (await cluster.get(ROLE_REF))["rules"][0]["verbs"] == ["get", "update", "patch"]

    run(test)


def test_prepare_tolerates_a_concurrent_create(make_release: ReleaseFactory) -> None:
    release = etcd_release(make_release)
    deployment = manifest(release, "Deployment", "etcd-operator")

    async def test(cluster: SimCluster, clock: Clock) -> None:
        """Another writer creates the OperatorCondition between cvo's read and its create: cvo's
        create gets AlreadyExists, and cvo takes the object that is there (its RBAC is owned by it)."""
        real_get = cluster.get
        reads = 0

        async def get_before_the_other_create(ref: Ref) -> dict[str, Any] | None:
            nonlocal reads
            if ref == OC_REF:
                reads += 1
                if reads == 1:
                    return None  # cvo's first read: not there yet
            return await real_get(ref)

        theirs = await create_oc(cluster, overrides=[{"type": "Upgradeable", "status": "True", "reason": "R",
                                                      "message": "M", "lastTransitionTime": at(0)}])
        cluster.get = get_before_the_other_create  # type: ignore[method-assign]
        assert await OperatorConditionManager(cluster, release.manifests).prepare(deployment) is not None
        assert reads == 2
        assert (await cluster.get(OC_REF))["spec"]["overrides"] == theirs["spec"]["overrides"]
        assert (await cluster.get(ROLE_REF))["metadata"]["ownerReferences"] == owner_of(theirs)

    run(test)


@pytest.mark.parametrize("kind", [ApiErrorKind.TIMEOUT, ApiErrorKind.FORBIDDEN])
def test_prepare_does_not_swallow_a_failed_create(make_release: ReleaseFactory, kind: ApiErrorKind) -> None:
    """Only AlreadyExists means "somebody else created it".  Any other failure must reach the task's
    retry loop: otherwise the Deployment gets OPERATOR_CONDITION_NAME for an object that does not exist."""
    release = etcd_release(make_release)
    deployment = manifest(release, "Deployment", "etcd-operator")

    async def test(cluster: SimCluster, clock: Clock) -> None:
        cluster.inject_failure(OC_REF, kind, count=1, verbs=["create"])
        with pytest.raises(ApiError) as err:
            await OperatorConditionManager(cluster, release.manifests).prepare(deployment)
        assert err.value.kind is kind

    run(test)


def test_prepare_without_the_api_creates_nothing(make_release: ReleaseFactory, oc_api_not_served: None,
                                                 info_logs: list[dict[str, Any]]) -> None:
    release = etcd_release(make_release)
    deployment = manifest(release, "Deployment", "etcd-operator")

    async def test(cluster: SimCluster, clock: Clock) -> None:
        manager = OperatorConditionManager(cluster, release.manifests)
        assert await manager.prepare(deployment) is None
        assert await manager.prepare(deployment) is None
        assert cluster.stats.writes == 0
        await manager.start_sync()  # nothing to sync either
        assert cluster.subscriber_count() == 0
        await manager.stop_sync()

    run(test)
    assert len([e for e in info_logs if "OperatorCondition" in e["event"]]) == 1


# --- OperatorConditionManager: the status sync -----------------------------------------------------------------


def test_status_sync_copies_spec_conditions_with_the_generation(make_release: ReleaseFactory,
                                                               operator_env: None) -> None:
    release = etcd_release(make_release)

    async def test(cluster: SimCluster, clock: Clock) -> None:
        manager = OperatorConditionManager(cluster, release.manifests)
        await manager.prepare(manifest(release, "Deployment", "etcd-operator"))
        subscribers = cluster.subscriber_count()
        await manager.start_sync()
        operator = OperatorConditions(cluster, clock=clock)
        await operator.set("Upgradeable", "False", reason="migration", message="migrating")
        await settle()
        oc = await cluster.get(OC_REF)
        assert oc["status"]["conditions"] == [{**oc["spec"]["conditions"][0],
                                               "observedGeneration": oc["metadata"]["generation"]}]
        verdict = upgradeable_verdict(oc)
        assert not verdict.upgradeable and verdict.message == "the operator is not upgradeable: migrating"

        await asyncio.sleep(30)
        await operator.set("Upgradeable", "True", reason="AsExpected")
        await settle()
        oc = await cluster.get(OC_REF)
        assert oc["status"]["conditions"][0]["status"] == "True"
        assert oc["status"]["conditions"][0]["observedGeneration"] == oc["metadata"]["generation"]
        assert upgradeable_verdict(oc).upgradeable

        # Any spec edit bumps the generation and is re-stamped: an admin's override, say.
        oc["spec"]["overrides"] = [{"type": "Upgradeable", "status": "False", "reason": "Hold", "message": "h",
                                    "lastTransitionTime": at(30)}]
        await cluster.update(oc)
        await settle()
        oc = await cluster.get(OC_REF)
        assert oc["status"]["conditions"][0]["observedGeneration"] == oc["metadata"]["generation"]
        await manager.stop_sync()
        assert cluster.subscriber_count() == subscribers

    run(test)


def test_status_sync_catches_up_at_start() -> None:
    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster, conditions=[{"type": "Upgradeable", "status": "False", "reason": "migration",
                                              "message": "m", "lastTransitionTime": at(0)}])
        manager = OperatorConditionManager(cluster, [])
        await manager.start_sync()
        await settle()
        oc = await cluster.get(OC_REF)
        assert oc["status"]["conditions"][0]["observedGeneration"] == oc["metadata"]["generation"] == 1
        writes = cluster.stats.writes
        await manager.sync_all()  # already in sync: nothing written
        assert cluster.stats.writes == writes
        await manager.stop_sync()

    run(test)


def test_status_sync_stamps_before_the_gate_reads_it(make_release: ReleaseFactory, tmp_path: Path) -> None:
    """Until the copy is made the operator's report is invisible; right after, it blocks (A2)."""

    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster)
        oc = await cluster.get(OC_REF)
        oc["spec"]["conditions"] = [{"type": "Upgradeable", "status": "False", "reason": "r", "message": "m",
                                     "lastTransitionTime": at(0)}]
        await cluster.update(oc)
        assert upgradeable_verdict(await cluster.get(OC_REF)).upgradeable  # nothing observed yet
        await OperatorConditionManager(cluster, []).sync_all()
        assert not upgradeable_verdict(await cluster.get(OC_REF)).upgradeable

    run(test)


def break_next_watch(cluster: SimCluster, group: str, kind: str) -> None:
    """The next watch of ``group``/``kind`` on ``cluster`` breaks when its first event arrives (the event is lost)."""
    real_watch = cluster.watch
    breaks = [1]

    def watch(g: str, k: str, namespace: str | None = None, name: str | None = None) -> Any:
        stream = real_watch(g, k, namespace, name)
        if (g, k) != (group, kind) or not breaks[0]:
            return stream
        breaks[0] -= 1

        async def broken() -> Any:
            async for _ in stream:
                raise ApiError(ApiErrorKind.TIMEOUT, "the watch broke")
            yield

        return broken()

    cluster.watch = watch  # type: ignore[method-assign]


def test_status_sync_lists_again_after_its_watch_broke() -> None:
    """OLM's loop is an informer: a change its broken watch did not deliver is synced when the watch is opened
    again (after the pause), from the list made then."""

    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster)
        break_next_watch(cluster, OC_GROUP, OC_KIND)
        manager = OperatorConditionManager(cluster, [])
        await manager.start_sync()
        await settle()
        oc = await cluster.get(OC_REF)
        oc["spec"]["conditions"] = [{"type": "Upgradeable", "status": "False", "reason": "migration", "message": "m",
                                     "lastTransitionTime": at(0)}]
        await cluster.update(oc)  # the event breaks the watch: not synced now
        await settle()
        assert not ((await cluster.get(OC_REF)).get("status") or {}).get("conditions")
        assert await manager.conditions() == []  # what the watch had, as it had it
        await asyncio.sleep(RESYNC_DELAY + 0.5)
        oc = await cluster.get(OC_REF)
        assert oc["status"]["conditions"][0]["observedGeneration"] == oc["metadata"]["generation"]
        assert [c["metadata"]["name"] for c in await manager.conditions()] == ["etcd"]
        await manager.stop_sync()

    run(test)


def test_status_sync_outlives_an_api_error_and_syncs_again() -> None:
    """A status copy that fails (the server down longer than the backend's retries) does not end
    OLM's loop: it syncs everything again after a pause."""

    async def test(cluster: SimCluster, clock: Clock) -> None:
        await create_oc(cluster, conditions=[{"type": "Upgradeable", "status": "False", "reason": "migration",
                                              "message": "m", "lastTransitionTime": at(0)}])
        cluster.inject_failure(OC_REF, ApiErrorKind.TIMEOUT, count=1, verbs=["update_status"])
        manager = OperatorConditionManager(cluster, [])
        await manager.start_sync()
        await settle()
        oc = await cluster.get(OC_REF)
        assert not (oc.get("status") or {}).get("conditions")  # the first copy failed
        await asyncio.sleep(5)  # past the pause before the loop syncs again
        oc = await cluster.get(OC_REF)
        assert oc["status"]["conditions"][0]["observedGeneration"] == oc["metadata"]["generation"]
        await manager.stop_sync()

    run(test)


def test_install_then_upgrade_keep_one_generation_of_a_shared_operator_condition(
        make_release: ReleaseFactory, tmp_path: Path) -> None:
    """The same through whole sweeps (an install, a patch upgrade): each sweep applies both
    Deployments, and the OperatorCondition stays at generation 1 (OLM's ``ensureOperatorCondition``
    writes only what drifted, operatorconditiongenerator_controller.go)."""
    from cvo.cli.main import main
    from tests.support.helpers import state_kind

    old, new = two_deployments_release(make_release), two_deployments_release(make_release, "4.16.1")
    path = tmp_path / "state.db"
    assert main(["install", str(old.directory), "--state", str(path)]) == 0
    assert main(["upgrade", "--to", str(new.directory), "--state", str(path)]) == 0
    (oc,) = state_kind(path, OC_KIND)
    assert oc["spec"] == {"deployments": ["etcd-operator", "etcd-backup-operator"],
                          "serviceAccounts": ["etcd-operator", "etcd-backup"]}
    assert oc["metadata"]["generation"] == 1
