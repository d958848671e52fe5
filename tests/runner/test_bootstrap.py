"""``cvo bootstrap`` and the manifests it installs: the CRDs (against OpenShift's and OLM's own), the RBAC,
idempotent applies, waiting for Established, and whether the CRD schemas accept real objects and what cvo
writes.  Everything runs on the embedded cluster and its virtual clock."""

from __future__ import annotations

import asyncio
import copy
import shutil
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from cvo.cli.main import main
from cvo.clock import Clock, run_virtual
from cvo.cluster.api import ApiErrorKind, Ref
from cvo.cluster.embedded.server import SimCluster
from cvo.runner.bootstrap import (
    HASH_ANNOTATION,
    BootstrapResult,
    bootstrap,
    find_manifests,
    load_manifests,
    schema_problems,
)
from tests.support.helpers import HA, PAYLOADS, REPO, state_objects, state_resource_version

EPOCH = datetime(2025, 7, 1, tzinfo=UTC)
MANIFESTS = REPO / "manifests"
CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
CRD_NAMES = ["clusteroperators.config.openshift.io", "clusterversions.config.openshift.io",
             "operatorconditions.operators.coreos.com"]
OBJECTS = [
    "namespace/openshift-cluster-version",
    "customresourcedefinition.apiextensions.k8s.io/clusteroperators.config.openshift.io",
    "customresourcedefinition.apiextensions.k8s.io/clusterversions.config.openshift.io",
    "customresourcedefinition.apiextensions.k8s.io/operatorconditions.operators.coreos.com",
    "serviceaccount/cluster-version-operator",
    "clusterrolebinding.rbac.authorization.k8s.io/cluster-version-operator",
    "serviceaccount/cvo-sim-operators",
    "clusterrole.rbac.authorization.k8s.io/cvo-sim-operators",
    "clusterrolebinding.rbac.authorization.k8s.io/cvo-sim-operators",
    "validatingadmissionpolicy.admissionregistration.k8s.io/operatorcondition-overrides.cvo.openshift.io",
    "validatingadmissionpolicybinding.admissionregistration.k8s.io/operatorcondition-overrides.cvo.openshift.io",
]
SIM_ROLE = Ref("rbac.authorization.k8s.io", "ClusterRole", "", "cvo-sim-operators")


def crds() -> dict[str, dict[str, Any]]:
    return {m.name: m.obj for m in load_manifests(MANIFESTS) if (m.group, m.kind) == CRD}


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["bootstrap", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def on_sim(test: Callable[[SimCluster], Awaitable[Any]], **options: Any) -> Any:
    async def run() -> Any:
        return await test(SimCluster(Clock(EPOCH), **options))

    return run_virtual(run)


def state(path: Path) -> dict[str, Any]:
    return {"resource_version": state_resource_version(path), "objects": state_objects(path)}


def strip_descriptions(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_descriptions(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [strip_descriptions(v) for v in value]
    return value


# --- the manifests ---------------------------------------------------------------------------------------


def test_manifests_are_found_beside_the_package_and_load_as_a_plain_directory() -> None:
    assert find_manifests() == MANIFESTS
    manifests = load_manifests(MANIFESTS)
    assert [f"{m.kind.lower()}/{m.name}" for m in manifests] == [o.replace(".apiextensions.k8s.io", "").replace(
        ".rbac.authorization.k8s.io", "").replace(".admissionregistration.k8s.io", "") for o in OBJECTS]
    assert all(m.annotations.get(k) == v for m in manifests for k, v in HA.items())


def test_manifests_lint_and_plan_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", str(MANIFESTS), "--release-version", "1.0.0"]) == 0
    out = capsys.readouterr().out
    # manifests/controller/ (cvo run's Deployment, applied with kubectl, never by cvo bootstrap) is the one
    # thing lint reports: a sub-directory the loader does not read, as intended.
    assert "0 errors, 1 warnings" in out
    assert "controller: warning: sub-directory (not read)" in out
    assert main(["plan", str(MANIFESTS), "--release-version", "0.0.0"]) == 0
    assert f"{len(OBJECTS)} tasks" in capsys.readouterr().out


def test_manifests_directory_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "m"
    shutil.copytree(MANIFESTS, copy)
    monkeypatch.setenv("CVO_MANIFESTS", str(copy))
    assert find_manifests() == copy


# The ClusterUpdateAcceptRisks gate's fields, which cvo's ClusterVersion CRD takes from the TechPreviewNoUpgrade
# variant (docs/updates.md, "Risks"): (path of the parent's properties, field).
ACCEPT_RISKS_FIELDS = (
    (("spec", "desiredUpdate"), "acceptRisks"), (("status",), "conditionalUpdateRisks"),
    (("status", "conditionalUpdates", "*"), "riskNames"), (("status", "conditionalUpdates", "*", "risks", "*"), "conditions"))


def _properties(crd: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    node = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for step in path:
        node = node["items"] if step == "*" else node["properties"][step]
    return node["properties"]  # type: ignore[no-any-return]


def test_clusterversion_and_clusteroperator_crds_are_openshifts(corpus: Path) -> None:
    ours = crds()
    for name, source in (("clusterversions.config.openshift.io", "clusterversions-Default"),
                         ("clusteroperators.config.openshift.io", "clusteroperators")):
        theirs = yaml.safe_load((corpus / "manifests" / f"0000_00_cluster-version-operator_01_{source}.crd.yaml")
                                .read_text())
        mine = copy.deepcopy(ours[name])
        if source == "clusterversions-Default":
            preview = yaml.safe_load((corpus / "manifests" / "0000_00_cluster-version-operator_01_clusterversions-"
                                      "TechPreviewNoUpgrade.crd.yaml").read_text())
            for path, field in ACCEPT_RISKS_FIELDS:
                assert field not in _properties(theirs, path)
                assert _properties(mine, path).pop(field) == _properties(preview, path)[field], field
        assert mine["spec"] == theirs["spec"], name
        assert ours[name]["spec"]["scope"] == "Cluster"
        (version,) = ours[name]["spec"]["versions"]
        assert (version["name"], version["served"], version["storage"], version["subresources"]) == (
            "v1", True, True, {"status": {}})


def test_operatorcondition_crd_has_olms_versions_names_and_schema(corpus: Path) -> None:
    ours = crds()["operatorconditions.operators.coreos.com"]["spec"]
    assert ours["scope"] == "Namespaced"
    assert ours["names"]["shortNames"] == ["condition"] and ours["names"]["categories"] == ["olm"]
    assert "conversion" not in ours
    assert [(v["name"], v["served"], v["storage"], v["subresources"]) for v in ours["versions"]] == [
        ("v1", True, False, {"status": {}}), ("v2", True, True, {"status": {}})]
    specs = {v["name"]: v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] for v in ours["versions"]}
    assert sorted(specs["v1"]) == ["deployments", "overrides", "serviceAccounts"]
    assert sorted(specs["v2"]) == ["conditions", "deployments", "overrides", "serviceAccounts"]
    olm = yaml.safe_load((corpus / "release-manifests" / "0000_50_olm_00-operatorconditions.crd.yaml").read_text())
    assert ours["names"] == olm["spec"]["names"]
    for mine, theirs in zip(ours["versions"], olm["spec"]["versions"], strict=True):
        assert strip_descriptions(mine["schema"]) == strip_descriptions(theirs["schema"]), mine["name"]


def test_rbac_binds_cvo_to_cluster_admin_and_sim_operators_to_what_they_use() -> None:
    objs = {(m.kind, m.name): m.obj for m in load_manifests(MANIFESTS)}
    cvo = objs[("ClusterRoleBinding", "cluster-version-operator")]
    assert cvo["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}
    assert cvo["subjects"] == [{"kind": "ServiceAccount", "name": "cluster-version-operator",
                                "namespace": "openshift-cluster-version"}]
    assert objs[("ServiceAccount", "cluster-version-operator")]["metadata"]["namespace"] == "openshift-cluster-version"
    rules = {(g, r): sorted(rule["verbs"]) for rule in objs[("ClusterRole", "cvo-sim-operators")]["rules"]
             for g in rule["apiGroups"] for r in rule["resources"]}
    names = {(g, r): rule.get("resourceNames") for rule in objs[("ClusterRole", "cvo-sim-operators")]["rules"]
             for g in rule["apiGroups"] for r in rule["resources"]}
    assert rules == {
        ("apps", "deployments"): ["get", "list", "watch"],
        ("config.openshift.io", "clusterversions"): ["get", "list", "watch"],
        ("config.openshift.io", "clusteroperators"): ["create", "get", "list", "watch"],
        ("config.openshift.io", "clusteroperators/status"): ["get", "update"],
        ("operators.coreos.com", "operatorconditions"): ["get", "update"],
        ("", "namespaces"): ["create", "get"],
    }
    assert all("*" not in v for verbs in rules.values() for v in verbs)
    # The singleton ClusterVersion only (read and watched by name); any ClusterOperator, OperatorCondition,
    # Deployment and Namespace: the payload names them.  What RBAC cannot narrow (spec.overrides of the
    # OperatorConditions it updates) the admission policy does.
    assert {k: v for k, v in names.items() if v} == {("config.openshift.io", "clusterversions"): ["version"]}


def test_operatorcondition_overrides_policy_and_binding() -> None:
    """Beyond OLM: its Role (operator-lifecycle-manager: pkg/controller/operators/operatorcondition_controller.go)
    lets the operator update its whole OperatorCondition, overrides included, since RBAC cannot
    restrict fields.  cvo ships a ValidatingAdmissionPolicy (CEL, admissionregistration.k8s.io/v1;
    kubernetes: staging/src/k8s.io/api/admissionregistration/v1/types.go) bound with Deny for every
    version of operatorconditions cvo serves, on create and update; tests/e2e/test_overrides_admission.py
    checks what it lets through on a real API server."""
    objs = {(m.kind, m.name): m.obj for m in load_manifests(MANIFESTS)}
    name = "operatorcondition-overrides.cvo.openshift.io"
    policy = objs[("ValidatingAdmissionPolicy", name)]["spec"]
    oc_crd = crds()["operatorconditions.operators.coreos.com"]["spec"]
    assert policy["matchConstraints"]["resourceRules"] == [{
        "apiGroups": [oc_crd["group"]], "apiVersions": [v["name"] for v in oc_crd["versions"] if v["served"]],
        "operations": ["CREATE", "UPDATE"], "resources": [oc_crd["names"]["plural"]]}]
    assert policy["failurePolicy"] == "Fail"
    assert [c["expression"] for c in policy["matchConditions"]] == [
        "request.userInfo.username.startsWith('system:serviceaccount:')"]
    cvo_account = objs[("ServiceAccount", "cluster-version-operator")]["metadata"]
    variables = {v["name"]: v["expression"] for v in policy["variables"]}
    assert variables["cvo"] == (f"request.userInfo.username == 'system:serviceaccount:{cvo_account['namespace']}:"
                                f"{cvo_account['name']}'")
    (validation,) = policy["validations"]
    assert validation["expression"] == "(variables.cvo && !variables.operator) || variables.before == variables.after"
    assert validation["reason"] == "Forbidden"
    binding = objs[("ValidatingAdmissionPolicyBinding", name)]["spec"]
    assert binding == {"policyName": name, "validationActions": ["Deny"]}


# --- cvo bootstrap -----------------------------------------------------------------------------------------


def test_bootstrap_twice_the_second_run_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "state.json"
    code, lines, err = cli(capsys, "--state", str(path))
    assert code == 0
    assert lines == [f"{o} created" for o in OBJECTS]
    assert f"Established: {', '.join(CRD_NAMES)}" in err
    first = state(path)

    code, lines, err = cli(capsys, "--state", str(path))
    assert code == 0
    assert lines == [f"{o} unchanged" for o in OBJECTS]
    second = state(path)
    assert second["resource_version"] == first["resource_version"]  # not one write
    assert second["objects"] == first["objects"]

    cluster = SimCluster.load(path)
    for name in CRD_NAMES:
        live = on_sim(lambda _c, n=name: cluster.get(Ref(*CRD, "", n)))
        assert {c["type"]: c["status"] for c in live["status"]["conditions"]}["Established"] == "True"
        assert HASH_ANNOTATION in live["metadata"]["annotations"]


def test_bootstrap_puts_back_what_drifted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "state.json"
    assert cli(capsys, "--state", str(path))[0] == 0

    async def drift(cluster: SimCluster) -> None:
        role = await cluster.get(SIM_ROLE)
        assert role is not None
        role["rules"] = role["rules"][:1]
        await cluster.update(role)
        ns = await cluster.get(Ref("", "Namespace", "", "openshift-cluster-version"))
        assert ns is not None
        ns["metadata"]["labels"]["extra"] = "kept"  # not the manifest's: left alone
        await cluster.update(ns)

    cluster = SimCluster.load(path)
    on_sim(lambda _c: drift(cluster))
    on_sim(lambda _c: cluster.close())  # every write is already in the store; this only closes it

    code, lines, _ = cli(capsys, "--state", str(path))
    assert code == 0
    assert lines == [f"{o} {'configured' if o.endswith('clusterrole.rbac.authorization.k8s.io/cvo-sim-operators') else 'unchanged'}"
                     for o in OBJECTS]
    cluster = SimCluster.load(path)
    role = on_sim(lambda _c: cluster.get(SIM_ROLE))
    assert len(role["rules"]) == 6
    ns = on_sim(lambda _c: cluster.get(Ref("", "Namespace", "", "openshift-cluster-version")))
    assert ns["metadata"]["labels"]["extra"] == "kept"


def test_bootstrap_notices_a_field_removed_from_a_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, copy = tmp_path / "state.json", tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy)
    assert cli(capsys, "--state", str(path), "--manifests", str(copy))[0] == 0
    rbac = copy / "0000_00_cvo_02_rbac.yaml"
    docs = list(yaml.safe_load_all(rbac.read_text()))
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    del role["rules"][-1]  # the live object still contains everything the manifest sets now
    rbac.write_text(yaml.safe_dump_all(docs))

    code, lines, _ = cli(capsys, "--state", str(path), "--manifests", str(copy))
    assert code == 0
    assert "clusterrole.rbac.authorization.k8s.io/cvo-sim-operators configured" in lines
    cluster = SimCluster.load(path)
    assert len(on_sim(lambda _c: cluster.get(SIM_ROLE))["rules"]) == 5
    assert cli(capsys, "--state", str(path), "--manifests", str(copy))[1] == [f"{o} unchanged" for o in OBJECTS]


def test_bootstrap_on_a_cluster_that_already_serves_the_kinds_and_runs_a_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The embedded cluster serves ClusterVersion and friends without CRDs; after an install, the payload's
    own CRDs and namespace replaced ours: bootstrap puts its own back and is idempotent again."""
    path = tmp_path / "state.json"
    assert main(["install", str(PAYLOADS / "demo-4.16.0"), "--state", str(path)]) == 0
    capsys.readouterr()
    code, lines, _ = cli(capsys, "--state", str(path))
    assert code == 0
    assert all(line.rsplit(" ", 1)[1] in ("created", "configured") for line in lines)
    code, lines, _ = cli(capsys, "--state", str(path))
    assert code == 0 and lines == [f"{o} unchanged" for o in OBJECTS]
    assert main(["status", "--state", str(path)]) == 0
    assert "4.16.0" in capsys.readouterr().out


def test_bootstrap_waits_for_the_crds_to_be_established() -> None:
    async def test(cluster: SimCluster) -> tuple[BootstrapResult, float]:
        start = asyncio.get_running_loop().time()
        result = await bootstrap(cluster, load_manifests(MANIFESTS), timeout=60)
        return result, asyncio.get_running_loop().time() - start

    result, took = on_sim(test, crd_establish_delay=20)
    assert result.ok and result.established == CRD_NAMES
    assert took == pytest.approx(20)


def test_bootstrap_gives_up_on_crds_that_do_not_become_established() -> None:
    async def test(cluster: SimCluster) -> tuple[BootstrapResult, float]:
        start = asyncio.get_running_loop().time()
        result = await bootstrap(cluster, load_manifests(MANIFESTS), timeout=60)
        return result, asyncio.get_running_loop().time() - start

    result, took = on_sim(test, crd_establish_delay=600)
    assert not result.ok and took == pytest.approx(60)
    assert sorted(result.not_established) == CRD_NAMES
    assert all(why.startswith("Established=False (Installing)") for why in result.not_established.values())


def test_a_failed_apply_does_not_stop_the_others() -> None:
    async def test(cluster: SimCluster) -> BootstrapResult:
        cluster.inject_failure(SIM_ROLE, ApiErrorKind.FORBIDDEN, message="clusterroles is forbidden")
        return await bootstrap(cluster, load_manifests(MANIFESTS))

    result = on_sim(test)
    assert not result.ok
    assert [(a.name, a.action or a.error) for a in result.applied if not a.action] == [
        ("clusterrole.rbac.authorization.k8s.io/cvo-sim-operators", "clusterroles is forbidden")]
    assert sum(1 for a in result.applied if a.action == "created") == len(OBJECTS) - 1


def test_bootstrap_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "--state", "none", "--manifests", str(tmp_path / "missing"))
    assert code == 2 and "not a directory" in err
    code, _, err = cli(capsys, "--state", "none", "--timeout", "soon")
    assert code == 2 and "--timeout" in err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "0000_00_x.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    code, _, err = cli(capsys, "--state", "none", "--manifests", str(tmp_path / "bad"))
    assert code == 2 and "excluded" in err


# --- what the CRDs accept ------------------------------------------------------------------------------------

# As `oc get clusterversion version -o yaml` shows it on a 4.16 cluster (trimmed to a short history).
REAL_CLUSTER_VERSION: dict[str, Any] = {
    "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
    "metadata": {"name": "version"},
    "spec": {"channel": "stable-4.16", "clusterID": "4a1f6c2e-6f0e-4a3b-9d84-2d0b5f6c7e81",
             "upstream": "https://api.openshift.com/api/upgrades_info/v1/graph"},
    "status": {
        "availableUpdates": None,
        "capabilities": {"enabledCapabilities": ["Build", "CSISnapshot", "CloudControllerManager",
                                                 "CloudCredential", "Console", "DeploymentConfig", "ImageRegistry",
                                                 "Ingress", "Insights", "MachineAPI", "NodeTuning",
                                                 "OperatorLifecycleManager", "Storage", "baremetal", "marketplace",
                                                 "openshift-samples"],
                         "knownCapabilities": ["Build", "CSISnapshot", "Console", "Insights", "Storage",
                                               "openshift-samples"]},
        "conditions": [
            {"lastTransitionTime": "2024-07-02T09:12:41Z", "message": "The update channel has not been configured.",
             "reason": "NoChannel", "status": "False", "type": "RetrievedUpdates"},
            {"lastTransitionTime": "2024-07-02T09:12:41Z", "message": "Capabilities match configured spec",
             "reason": "AsExpected", "status": "False", "type": "ImplicitlyEnabledCapabilities"},
            {"lastTransitionTime": "2024-07-02T09:12:41Z",
             "message": 'Payload loaded version="4.16.3" image="quay.io/openshift-release-dev/ocp-release@sha256:'
                        'aa" architecture="amd64"', "reason": "PayloadLoaded", "status": "True",
             "type": "ReleaseAccepted"},
            {"lastTransitionTime": "2024-07-02T09:41:08Z", "message": "Done applying 4.16.3", "status": "True",
             "type": "Available"},
            {"lastTransitionTime": "2024-07-02T09:40:53Z", "status": "False", "type": "Failing"},
            {"lastTransitionTime": "2024-07-02T09:41:08Z", "message": "Cluster version is 4.16.3", "status": "False",
             "type": "Progressing"},
        ],
        "desired": {"channels": ["candidate-4.16", "fast-4.16", "stable-4.16"],
                    "image": "quay.io/openshift-release-dev/ocp-release@sha256:aa", "version": "4.16.3",
                    "url": "https://access.redhat.com/errata/RHSA-2024:4316"},
        "history": [
            {"completionTime": "2024-07-02T09:41:08Z", "image": "quay.io/openshift-release-dev/ocp-release@sha256:aa",
             "startedTime": "2024-07-02T09:12:41Z", "state": "Completed", "verified": True, "version": "4.16.3",
             "acceptedRisks": ""},
            {"completionTime": None, "image": "quay.io/openshift-release-dev/ocp-release@sha256:bb",
             "startedTime": "2024-07-01T08:00:00Z", "state": "Partial", "verified": False, "version": "4.16.0"},
        ],
        "observedGeneration": 2,
        "versionHash": "8ZQbTO9kyq4=",
    },
}

REAL_CLUSTER_OPERATOR: dict[str, Any] = {
    "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
    "metadata": {"name": "etcd", "annotations": HA},
    "spec": {},
    "status": {
        "conditions": [
            {"lastTransitionTime": "2024-07-02T09:20:00Z", "message": "NodeControllerDegraded: All master nodes are "
             "ready\nEtcdMembersDegraded: No unhealthy members found", "reason": "AsExpected", "status": "False",
             "type": "Degraded"},
            {"lastTransitionTime": "2024-07-02T09:30:00Z", "message": "NodeInstallerProgressing: 3 nodes are at "
             "revision 8", "reason": "AsExpected", "status": "False", "type": "Progressing"},
            {"lastTransitionTime": "2024-07-02T09:10:00Z", "message": "StaticPodsAvailable: 3 nodes are active",
             "reason": "AsExpected", "status": "True", "type": "Available"},
            {"lastTransitionTime": "2024-07-02T09:10:00Z", "reason": "AsExpected", "status": "True",
             "type": "Upgradeable"},
            {"lastTransitionTime": "2024-07-02T09:10:00Z", "reason": "NoData", "status": "Unknown",
             "type": "EvaluationConditionsDetected"},
        ],
        "extension": None,
        "relatedObjects": [
            {"group": "operator.openshift.io", "name": "cluster", "resource": "etcds"},
            {"group": "", "name": "openshift-config", "resource": "namespaces"},
            {"group": "", "name": "openshift-etcd-operator", "resource": "namespaces"},
        ],
        "versions": [{"name": "raw-internal", "version": "4.16.3"}, {"name": "etcd", "version": "4.16.3"},
                     {"name": "operator", "version": "4.16.3"}],
    },
}

REAL_OPERATOR_CONDITION: dict[str, Any] = {
    "apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
    "metadata": {"name": "etcd", "namespace": "openshift-etcd-operator"},
    "spec": {"deployments": ["etcd-operator"], "serviceAccounts": ["etcd-operator"],
             "conditions": [{"type": "Upgradeable", "status": "False", "reason": "StorageMigration",
                             "message": "migrating", "lastTransitionTime": "2024-07-02T09:10:00Z"}],
             "overrides": [{"type": "Upgradeable", "status": "True", "reason": "AdminAcknowledged", "message": ""}]},
    "status": {"conditions": [{"type": "Upgradeable", "status": "False", "reason": "StorageMigration",
                               "message": "migrating", "lastTransitionTime": "2024-07-02T09:10:00Z",
                               "observedGeneration": 1}]},
}


@pytest.mark.parametrize("obj", [REAL_CLUSTER_VERSION, REAL_CLUSTER_OPERATOR, REAL_OPERATOR_CONDITION],
                         ids=["clusterversion", "clusteroperator", "operatorcondition"])
def test_crd_schemas_accept_real_objects_applied_through_the_cluster(obj: dict[str, Any]) -> None:
    by_kind = {c["spec"]["names"]["kind"]: c for c in crds().values()}

    async def test(cluster: SimCluster) -> dict[str, Any]:
        result = await bootstrap(cluster, load_manifests(MANIFESTS))
        assert result.ok
        ns = obj["metadata"].get("namespace")
        if ns:
            await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        created = await cluster.create(obj)
        return await cluster.update_status({**created, "status": obj["status"]})

    live = on_sim(test)
    assert live["status"] == obj["status"]
    check = schema_problems(by_kind[obj["kind"]], live)
    assert (check.errors, check.pruned) == ([], [])


def test_schema_problems_finds_what_a_server_rejects_or_prunes() -> None:
    by_kind = {c["spec"]["names"]["kind"]: c for c in crds().values()}
    cv = orjson.loads(orjson.dumps(REAL_CLUSTER_VERSION))
    del cv["spec"]["clusterID"]
    del cv["status"]["versionHash"]
    cv["status"]["history"][0]["verified"] = "yes"
    cv["status"]["conditions"].append(dict(cv["status"]["conditions"][0]))
    cv["status"]["shiny"] = True
    check = schema_problems(by_kind["ClusterVersion"], cv)
    assert sorted(check.errors) == [
        "spec.clusterID: Required value",
        "status.conditions[6]: Duplicate value: map[type:RetrievedUpdates]",
        'status.history[0].verified: Invalid value: "yes": status.history[0].verified in body must be of type boolean',
        "status.versionHash: Required value",
    ]
    assert check.pruned == ["status.shiny"]

    co = orjson.loads(orjson.dumps(REAL_CLUSTER_OPERATOR))
    del co["status"]["conditions"][0]["lastTransitionTime"]
    co["status"]["conditions"][1]["lastTransitionTime"] = "yesterday"
    assert schema_problems(by_kind["ClusterOperator"], co).errors == [
        "status.conditions[0].lastTransitionTime: Required value",
        'status.conditions[1].lastTransitionTime: Invalid value: "yesterday": '
        "status.conditions[1].lastTransitionTime in body must be of type date-time",
    ]

    oc = orjson.loads(orjson.dumps(REAL_OPERATOR_CONDITION))
    oc["spec"]["conditions"][0].update(status="Maybe", reason="")
    errors = schema_problems(by_kind["OperatorCondition"], oc).errors
    assert any(e.startswith('spec.conditions[0].status: Unsupported value: "Maybe"') for e in errors)
    assert any(e.startswith("spec.conditions[0].reason: Invalid value") for e in errors)
    v1 = {**REAL_OPERATOR_CONDITION, "apiVersion": "operators.coreos.com/v1"}
    assert schema_problems(by_kind["OperatorCondition"], v1).pruned == ["spec.conditions"]  # v2 only


def _cvo_written(tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    path = tmp_path / "state.json"
    assert main(["install", str(PAYLOADS / "demo-4.16.0"), "--state", str(path),
                 "--operators", str(PAYLOADS / "demo-operators.yaml")]) == 0
    assert main(["override", "etcd", "Upgradeable=True", "--state", str(path)]) == 0
    out: dict[str, list[dict[str, Any]]] = {}
    for o in state(path)["objects"]:
        out.setdefault(o["kind"], []).append(o)
    return out


def test_clusteroperators_and_operatorconditions_cvo_writes_pass_the_crds(tmp_path: Path) -> None:
    by_kind = {c["spec"]["names"]["kind"]: c for c in crds().values()}
    written = _cvo_written(tmp_path)
    assert len(written["ClusterOperator"]) == 15 and len(written["OperatorCondition"]) == 15
    for kind in ("ClusterOperator", "OperatorCondition"):
        for o in written[kind]:
            check = schema_problems(by_kind[kind], o)
            assert (check.errors, check.pruned) == ([], []), (kind, o["metadata"]["name"])


def test_the_clusterversion_cvo_writes_passes_the_crd(tmp_path: Path) -> None:
    by_kind = {c["spec"]["names"]["kind"]: c for c in crds().values()}
    (cv,) = _cvo_written(tmp_path)["ClusterVersion"]
    assert schema_problems(by_kind["ClusterVersion"], cv).errors == []

