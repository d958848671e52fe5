"""Who may write what on an OperatorCondition, on the real test API server (RBAC and admission are real).

One control plane for the module, bootstrapped with ``cvo bootstrap`` (the CRDs, cvo's RBAC, and the
ValidatingAdmissionPolicy that keeps ``spec.overrides`` for admins).  cvo's OLM part then prepares
the two operator Deployments of one ClusterOperator, ``etcd``, as a sweep does before applying them:
one OperatorCondition, its Role and RoleBinding.  An admin puts an override on it, and every test
starts from that state.  Requests are made as each identity: service accounts through
impersonation (``kubectl --as``) or their own token (a TokenRequest), the admin with the control
plane's token.

* the OperatorCondition lists both Deployments and both service accounts; its Role and
  RoleBinding are owned by it as OLM owns them (the control plane runs no garbage collector, so
  the references are checked, not the collection);
* each operator service account reports through ``spec.conditions`` with :mod:`cvo.operators.library.conditions`,
  and cannot write the status subresource;
* no service account, the operator's own, ``cvo sim-operators``' or one bound to cluster-admin,
  can add, remove or change ``spec.overrides`` (the issue's ``kubectl --as=…:etcd-operator patch …
  remove /spec/overrides``); the admin's ``cvo override`` can, and so can cvo's own service
  account (``cvo override`` inside the cluster), except on an OperatorCondition that is its own;
* ``cvo sim-operators``' ClusterRole reads the ClusterVersion singleton only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from cvo.cli.main import main
from cvo.clock import run_real
from cvo.cluster.api import ApiError, ApiErrorKind, Ref
from cvo.cluster.kube import KubeCluster
from cvo.gates.olm import OC_GROUP, OC_KIND
from cvo.operators.library.conditions import OperatorConditions
from cvo.payload.loader import Release, load_release
from cvo.runner.operator_conditions import OperatorConditionManager

from .conftest import run_with
from .controlplane import ControlPlane
from .identities import impersonating, request, service_account_kubeconfig, username

NS = "openshift-etcd-operator"
OPERATOR, BACKUP, OTHER = "etcd-operator", "etcd-backup", "other"  # service accounts in NS
CVO_NS = "openshift-cluster-version"
CVO, SIM = username(CVO_NS, "cluster-version-operator"), username(CVO_NS, "cvo-sim-operators")
POLICY = "operatorcondition-overrides.cvo.openshift.io"
OC_REF = Ref(OC_GROUP, OC_KIND, NS, "etcd")
RBAC = "rbac.authorization.k8s.io"


def oc_path(version: str = "v2", namespace: str = NS, name: str = "etcd") -> str:
    return f"/apis/operators.coreos.com/{version}/namespaces/{namespace}/operatorconditions/{name}"


HOLD = {"type": "Upgradeable", "status": "False", "reason": "Hold", "message": "wait for the maintenance window",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}
REMOVE_OVERRIDES = [{"op": "remove", "path": "/spec/overrides"}]
JSON_PATCH = "application/json-patch+json"
DENIED = "spec.overrides is for cluster admins"


@dataclass
class Server:
    cp: ControlPlane
    release: Release
    workdir: Path
    prepared: dict[str, Any]  # the OperatorCondition as the two sweeps left it


def write_release(root: Path) -> Release:
    """A payload component with two operator Deployments (their own service accounts) and its ClusterOperator."""
    manifests = root / "release-manifests"
    manifests.mkdir(parents=True)
    (manifests / "release-metadata").write_text(json.dumps({"kind": "cincinnati-metadata-v0", "version": "4.16.0"}))
    (manifests / "image-references").write_text(json.dumps(
        {"kind": "ImageStream", "apiVersion": "image.openshift.io/v1", "metadata": {"name": "4.16.0"},
         "spec": {"tags": []}}))
    annotations = {"include.release.openshift.io/self-managed-high-availability": "true"}

    def deployment(name: str, account: str) -> dict[str, Any]:
        labels = {"app": name}
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": NS, "annotations": annotations},
                "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
                    "serviceAccountName": account, "containers": [{"name": "operator", "image": "quay.io/x"}]}}}}

    docs = {
        "0000_20_etcd-operator_04_deployment.yaml": deployment("etcd-operator", OPERATOR),
        "0000_20_etcd-operator_05_deployment.yaml": deployment("etcd-backup-operator", BACKUP),
        "0000_20_etcd-operator_06_clusteroperator.yaml": {
            "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
            "metadata": {"name": "etcd", "annotations": annotations}, "spec": {},
            "status": {"versions": [{"name": "operator", "version": "4.16.0"}]}},
    }
    for name, doc in docs.items():
        (manifests / name).write_text(yaml.safe_dump(doc))
    return load_release(root)


async def prepare(cluster: KubeCluster, release: Release) -> None:
    """What a sweep does before it applies each operator Deployment (twice: a second sweep changes nothing)."""
    manager = OperatorConditionManager(cluster, release.manifests)
    for _ in range(2):
        for m in release.manifests:
            await manager.prepare(m)


def wait_for_policy(cp: ControlPlane, timeout: float = 30.0) -> None:
    """The API server enforces a new policy once its admission plugin has loaded it: probe with a
    dry-run request it must deny (nothing is written) until it does."""
    deadline = time.monotonic() + timeout
    while True:
        code, answer = request(cp, "PATCH", oc_path(), REMOVE_OVERRIDES, as_user=username(NS, OPERATOR),
                               content_type=JSON_PATCH, query="dryRun=All")
        if code == 403 and DENIED in answer.get("message", ""):
            return
        assert code == 200, (code, answer)
        if time.monotonic() > deadline:
            pytest.fail(f"the ValidatingAdmissionPolicy {POLICY} was not in force after {timeout:g}s")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def server(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    cp = ControlPlane()
    try:
        cp.start()
    except Exception as err:
        pytest.fail(f"the module's control plane did not start:\n{err}", pytrace=False)
    try:
        workdir = tmp_path_factory.mktemp("operator-condition-access")
        assert main(["bootstrap", "--kubeconfig", cp.kubeconfig_path]) == 0
        release = write_release(workdir / "release")

        async def setup(cluster: KubeCluster) -> dict[str, Any]:
            await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
            for account in (OPERATOR, BACKUP, OTHER):
                await cluster.create({"apiVersion": "v1", "kind": "ServiceAccount",
                                      "metadata": {"name": account, "namespace": NS}})
            await cluster.create({"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
                                  "metadata": {"name": "e2e-other-is-cluster-admin"},
                                  "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
                                  "subjects": [{"kind": "ServiceAccount", "name": OTHER, "namespace": NS}]})
            await prepare(cluster, release)
            prepared = await cluster.get(OC_REF)
            assert prepared is not None
            return prepared

        prepared = run_with(cp, setup)
        reset(cp)
        wait_for_policy(cp)
        yield Server(cp, release, workdir, prepared)
    finally:
        cp.stop()


def reset(cp: ControlPlane) -> dict[str, Any]:
    """The admin's override on, no report from the operator: each test starts here."""
    code, answer = request(cp, "PATCH", oc_path(), {"spec": {"overrides": [HOLD], "conditions": None}},
                           content_type="application/merge-patch+json")
    assert code == 200, (code, answer)
    return answer


@pytest.fixture
def held(server: Server) -> dict[str, Any]:
    return reset(server.cp)


def live_oc(cp: ControlPlane) -> dict[str, Any]:
    code, answer = request(cp, "GET", oc_path())
    assert code == 200, (code, answer)
    return answer


# --- item 6: the OperatorCondition and its RBAC, as OLM makes them -------------------------------------------------


def test_one_operator_condition_lists_both_deployments_and_owns_its_rbac(server: Server) -> None:
    """OLM's generator lists every deployment and service account of the operator in one object
    (operator-lifecycle-manager: pkg/controller/operators/operatorconditiongenerator_controller.go), and
    its reconciler makes the Role and RoleBinding with ``ownerutil.AddOwner(obj, operatorCondition,
    false, true)`` (pkg/controller/operators/operatorcondition_controller.go, pkg/lib/ownerutil/util.go),
    so that the garbage collector deletes them with the OperatorCondition.  Here the server validated
    and stored those references; the two Deployments prepared twice wrote the object once."""

    async def body(cluster: KubeCluster) -> list[dict[str, Any] | None]:
        return [await cluster.get(ref) for ref in (Ref(RBAC, "Role", NS, "etcd"), Ref(RBAC, "RoleBinding", NS, "etcd"))]

    role, binding = run_with(server.cp, body)
    assert role is not None and binding is not None
    oc = server.prepared
    assert oc["spec"] == {"deployments": ["etcd-operator", "etcd-backup-operator"],
                          "serviceAccounts": [OPERATOR, BACKUP]}
    assert oc["metadata"]["generation"] == 1  # created, never updated
    assert not oc["metadata"].get("ownerReferences")  # OLM's is owned by its CSV; a payload has none
    owner = [{"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition", "name": "etcd",
              "uid": oc["metadata"]["uid"], "controller": True, "blockOwnerDeletion": False}]
    assert role["metadata"]["ownerReferences"] == owner
    assert binding["metadata"]["ownerReferences"] == owner
    assert [(s["kind"], s["name"], s["namespace"]) for s in binding["subjects"]] == [
        ("ServiceAccount", OPERATOR, NS), ("ServiceAccount", BACKUP, NS)]
    assert role["rules"] == [{"verbs": ["get", "update", "patch"], "apiGroups": [OC_GROUP],
                              "resources": ["operatorconditions"], "resourceNames": ["etcd"]}]


@pytest.mark.parametrize("account", [OPERATOR, BACKUP])
def test_every_operator_service_account_reports_through_spec_conditions(server: Server, held: dict[str, Any],
                                                                       account: str) -> None:
    """The RoleBinding binds the service accounts of both Deployments (OLM's
    ``ensureOperatorConditionRoleBinding``: one subject per ``spec.serviceAccounts`` entry,
    pkg/controller/operators/operatorcondition_controller.go), so each operator reports with the
    library, as with operator-lib's ``conditions.Set`` (operator-lib: conditions/conditions.go)."""

    async def body(cluster: KubeCluster) -> tuple[str, str]:
        conditions = OperatorConditions(cluster, name="etcd", namespace=NS)
        assert await conditions.set("Upgradeable", "False", reason="Migrating", message=f"{account} migrates")
        got = await conditions.get("Upgradeable")
        return got.status, got.message

    async def as_account() -> tuple[str, str]:
        cluster = impersonating(server.cp, username(NS, account))
        try:
            return await body(cluster)
        finally:
            await cluster.close()

    assert run_real(as_account) == ("False", f"{account} migrates")
    oc = live_oc(server.cp)
    assert oc["spec"]["overrides"] == [HOLD]  # the library never touches the admin's part


def test_the_operator_cannot_write_the_status_subresource(server: Server, held: dict[str, Any]) -> None:
    """v2 ``spec.conditions`` is the only channel: OLM's Role has allowed no ``operatorconditions/status``
    since commit 86eda229a (pkg/controller/operators/operatorcondition_controller.go), and cvo's Role is
    the same, so a v1-style write of ``status.conditions`` by the operator is refused."""
    status = {"conditions": [{**HOLD, "status": "True", "reason": "Fine", "observedGeneration": 1}]}
    code, answer = request(server.cp, "PUT", oc_path() + "/status", {**held, "status": status},
                           as_user=username(NS, OPERATOR))
    assert code == 403, (code, answer)
    assert 'cannot update resource "operatorconditions/status"' in answer["message"]


# --- item 7: overrides only an admin can set -------------------------------------------------------------------------


def turn_true(spec: dict[str, Any]) -> None:
    spec["overrides"][0]["status"] = "True"


CHANGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "remove the overrides": lambda spec: spec.pop("overrides"),
    "empty the overrides": lambda spec: spec.update(overrides=[]),
    "turn the override to True": turn_true,
    "add another override": lambda spec: spec["overrides"].append({**HOLD, "type": "Other", "status": "True"}),
    "replace the overrides and report at once": lambda spec: spec.update(
        overrides=[{**HOLD, "status": "True"}], conditions=[{**HOLD, "status": "True", "reason": "AsExpected"}]),
}
SERVICE_ACCOUNTS = {"operator": username(NS, OPERATOR), "second-operator": username(NS, BACKUP),
                    "sim-operators": SIM, "cluster-admin-service-account": username(NS, OTHER)}


def assert_denied(code: int, answer: dict[str, Any], who: str, what: str) -> None:
    assert code == 403, (what, code, answer)
    assert answer["reason"] == "Forbidden", (what, answer)
    assert f"ValidatingAdmissionPolicy '{POLICY}'" in answer["message"], (what, answer)
    assert f"{DENIED}: {who} may change spec.conditions of OperatorCondition {NS}/etcd, not spec.overrides" in \
        answer["message"], (what, answer)


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_the_operator_cannot_patch_away_an_admins_override(server: Server, held: dict[str, Any], version: str) -> None:
    """The issue's reproduction: ``kubectl --as=system:serviceaccount:openshift-etcd-operator:etcd-operator
    patch operatorcondition etcd --type=json -p '[{"op":"remove","path":"/spec/overrides"}]'`` lifted an
    admin's Upgradeable=False, since OLM's Role (operator-lifecycle-manager:
    pkg/controller/operators/operatorcondition_controller.go) allows update and patch of the whole object.
    The ValidatingAdmissionPolicy cvo bootstraps (manifests/0000_00_cvo_03_operatorcondition-overrides.yaml,
    enforced by kubernetes: staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/)
    refuses it, through either served version."""
    who = username(NS, OPERATOR)
    code, answer = request(server.cp, "PATCH", oc_path(version), REMOVE_OVERRIDES, as_user=who,
                           content_type=JSON_PATCH)
    assert_denied(code, answer, who, "remove /spec/overrides")
    assert live_oc(server.cp)["metadata"]["resourceVersion"] == held["metadata"]["resourceVersion"]


@pytest.mark.parametrize("who", SERVICE_ACCOUNTS.values(), ids=SERVICE_ACCOUNTS.keys())
def test_no_service_account_changes_an_admins_override(server: Server, held: dict[str, Any], who: str) -> None:
    """Whatever its RBAC allows (the operator's Role, ``cvo sim-operators``' ClusterRole, cluster-admin),
    no service account gets an update of ``spec.overrides`` through (the policy's CEL compares
    ``oldObject.spec.overrides`` with ``object.spec.overrides``; kubernetes:
    staging/src/k8s.io/api/admissionregistration/v1/types.go)."""
    for what, change in CHANGES.items():
        oc = live_oc(server.cp)
        change(oc["spec"])
        code, answer = request(server.cp, "PUT", oc_path(), oc, as_user=who)
        assert_denied(code, answer, who, what)
    oc = live_oc(server.cp)
    assert oc["spec"]["overrides"] == [HOLD]
    assert oc["metadata"]["resourceVersion"] == held["metadata"]["resourceVersion"]  # nothing was written


def test_service_accounts_may_still_change_everything_but_the_overrides(server: Server, held: dict[str, Any]) -> None:
    """The policy leaves ``spec.conditions`` to the operator and ``cvo sim-operators`` (whose ClusterRole
    updates any OperatorCondition to report for the simulated operators), and the rest of the object
    (labels: the garbage collector's and OLM's own writes) to whoever RBAC lets."""
    for who, reason in ((username(NS, OPERATOR), "Migrating"), (SIM, "Simulated")):
        oc = live_oc(server.cp)
        oc["spec"]["conditions"] = [{**HOLD, "reason": reason}]
        code, answer = request(server.cp, "PUT", oc_path(), oc, as_user=who)  # the library's update
        assert code == 200, (who, code, answer)
        assert answer["spec"]["conditions"][0]["reason"] == reason
        assert answer["spec"]["overrides"] == [HOLD]
    code, answer = request(server.cp, "PATCH", oc_path(), {"metadata": {"labels": {"e2e": "yes"}}},
                           as_user=username(NS, OTHER), content_type="application/merge-patch+json")
    assert code == 200, (code, answer)


def test_a_service_account_cannot_create_an_operator_condition_with_overrides(server: Server) -> None:
    """cvo keeps the overrides of an OperatorCondition it finds (as OLM's ``ensureOperatorCondition``
    does, pkg/controller/operators/operatorconditiongenerator_controller.go), so an override created in
    advance would be one too: creates are checked as updates are."""
    body = {"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
            "metadata": {"name": "dns", "namespace": NS}, "spec": {"overrides": [{**HOLD, "status": "True"}]}}
    path = f"/apis/operators.coreos.com/v2/namespaces/{NS}/operatorconditions"
    code, answer = request(server.cp, "POST", path, body, as_user=username(NS, OTHER))
    assert code == 403 and DENIED in answer["message"], (code, answer)
    code, answer = request(server.cp, "POST", path, {**body, "spec": {}}, as_user=username(NS, OTHER), query="dryRun=All")
    assert code == 201, (code, answer)


def test_the_admins_cvo_override_and_cvos_own_service_account_may(server: Server, held: dict[str, Any],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``cvo override`` as an admin (a user: the control plane's token) and as cvo inside the cluster
    (its own service account, bound to cluster-admin by manifests/0000_00_cvo_02_rbac.yaml, with a real
    token): both change the override; OLM's ``isOperatorUpgradeable`` then reads it
    (pkg/controller/operators/olm/operatorconditions.go)."""
    admin = server.cp.kubeconfig_path
    assert main(["override", "etcd", "Upgradeable=True", "--reason", "Reviewed", "--message", "ok",
                 "--kubeconfig", admin]) == 0
    assert "spec.overrides Upgradeable=True (Reviewed)" in capsys.readouterr().out
    assert [(o["type"], o["status"], o["reason"]) for o in live_oc(server.cp)["spec"]["overrides"]] == [
        ("Upgradeable", "True", "Reviewed")]

    in_cluster = service_account_kubeconfig(server.cp, CVO_NS, "cluster-version-operator",
                                            server.workdir / "cvo.kubeconfig")
    assert main(["override", "etcd", "--clear", "--kubeconfig", str(in_cluster)]) == 0
    assert "removed the Upgradeable override" in capsys.readouterr().out
    assert main(["override", "etcd", "Upgradeable=False", "--reason", "Hold", "--message", "later",
                 "--kubeconfig", str(in_cluster)]) == 0
    assert [(o["status"], o["reason"]) for o in live_oc(server.cp)["spec"]["overrides"]] == [("False", "Hold")]


def test_cvos_service_account_is_refused_where_it_is_the_operator(server: Server) -> None:
    """The exception for cvo's own account does not cover an OperatorCondition that lists it among its
    ``spec.serviceAccounts``: there it is the operator, and the operator never sets its own override."""
    body = {"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
            "metadata": {"name": "version", "namespace": CVO_NS},
            "spec": {"serviceAccounts": ["cluster-version-operator"], "overrides": [HOLD]}}
    code, answer = request(server.cp, "POST", f"/apis/operators.coreos.com/v2/namespaces/{CVO_NS}/operatorconditions",
                           body, as_user=CVO, query="dryRun=All")
    assert code == 403 and DENIED in answer["message"], (code, answer)
    code, answer = request(server.cp, "POST", f"/apis/operators.coreos.com/v2/namespaces/{CVO_NS}/operatorconditions",
                           {**body, "spec": {"serviceAccounts": ["somebody-else"], "overrides": [HOLD]}},
                           as_user=CVO, query="dryRun=All")
    assert code == 201, (code, answer)


def test_sim_operators_read_only_the_clusterversion_singleton(server: Server) -> None:
    """``cvo sim-operators``' ClusterRole names the one ClusterVersion it reads and watches; a list or
    watch is authorized against ``resourceNames`` only with ``fieldSelector=metadata.name=…``, which is
    how cvo's watch asks for one object (kubernetes:
    staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go)."""
    path = "/apis/config.openshift.io/v1/clusterversions"
    code, answer = request(server.cp, "GET", path, as_user=SIM)
    assert code == 403, (code, answer)
    code, answer = request(server.cp, "GET", path, as_user=SIM, query="fieldSelector=metadata.name%3Dversion")
    assert code == 200, (code, answer)
    code, answer = request(server.cp, "GET", path + "/other", as_user=SIM)
    assert code == 403, (code, answer)


def test_deleting_is_left_to_rbac(server: Server) -> None:
    """Deletes are not matched by the policy (a namespace's deletion must go through); the operator's
    Role has no delete verb, so the operator cannot drop the object with the override either."""
    code, answer = request(server.cp, "DELETE", oc_path(), as_user=username(NS, OPERATOR), query="dryRun=All")
    assert code == 403 and 'cannot delete resource "operatorconditions"' in answer["message"], (code, answer)


def test_the_library_reports_a_refused_override_as_forbidden(server: Server, held: dict[str, Any]) -> None:
    """What an operator sees when it tries anyway through cvo's client: ``ApiError`` ``FORBIDDEN``."""

    async def as_operator() -> None:
        cluster = impersonating(server.cp, username(NS, OPERATOR))
        try:
            oc = await cluster.get(OC_REF)
            assert oc is not None
            with pytest.raises(ApiError) as err:
                await cluster.update({**oc, "spec": {**oc["spec"], "overrides": []}})
            assert err.value.kind is ApiErrorKind.FORBIDDEN
            assert DENIED in str(err.value)
        finally:
            await cluster.close()

    run_real(as_operator)


def test_cvo_override_as_another_service_account_is_refused_and_says_why(
        server: Server, held: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """``cvo override`` run with the token of a service account that is not cvo's (here one bound to
    cluster-admin, so RBAC lets it list and update) fails with the policy's message, exit 1."""
    kubeconfig = service_account_kubeconfig(server.cp, NS, OTHER, server.workdir / "other.kubeconfig")
    assert main(["override", "etcd", "Upgradeable=True", "--reason", "R", "--message", "M",
                 "--kubeconfig", str(kubeconfig)]) == 1
    err = capsys.readouterr().err
    assert f"{DENIED}: {username(NS, OTHER)} may change spec.conditions" in err, err
    assert live_oc(server.cp)["spec"]["overrides"] == [HOLD]
