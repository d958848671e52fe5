"""OperatorConditions the way OLM treats them (operator-lifecycle-manager pkg/controller/operators/, operator-framework/enhancements enhancements/operator-conditions.md).

``upgradeable_verdict`` is OLM's ``isOperatorUpgradeable`` in its exact order; ``synced_status``
is the operatorcondition controller's status copy; ``operator_condition``, ``rbac_objects`` and
``inject_env`` are what OLM's generator and reconciler create per CSV (here per ClusterOperator and
namespace).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cvo.gates.olm import (
    ENV_NAME,
    OC_API_VERSION,
    OC_GROUP,
    OC_KIND,
    Verdict,
    inject_env,
    is_owned_by,
    operator_condition,
    rbac_objects,
    service_account,
    synced_status,
    unsupported_conditions,
    upgradeable_verdict,
)
from cvo.objects import OperatorCondition


def condition(status: str, reason: str = "migration", message: str = "The operator is performing a migration.",
              type_: str = "Upgradeable", **extra: Any) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2020-08-24T23:15:55Z", **extra}


def oc(generation: int = 1, spec_conditions: list[dict[str, Any]] | None = None,
       status_conditions: list[dict[str, Any]] | None = None,
       overrides: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": OC_API_VERSION, "kind": OC_KIND,
                           "metadata": {"name": "foo-operator", "namespace": "operators", "generation": generation},
                           "spec": {"deployments": ["foo-operator"], "serviceAccounts": ["foo-operator"]}}
    if spec_conditions is not None:
        obj["spec"]["conditions"] = spec_conditions
    if overrides is not None:
        obj["spec"]["overrides"] = overrides
    if status_conditions is not None:
        obj["status"] = {"conditions": status_conditions}
    return obj


def observed(cond: dict[str, Any], generation: int) -> dict[str, Any]:
    return {**cond, "observedGeneration": generation}


# --- upgradeable_verdict: isOperatorUpgradeable, in OLM's order ----------------------------------------------


def test_no_object_is_upgradeable() -> None:
    assert upgradeable_verdict(None) == Verdict(True)


def test_override_true_wins_over_a_false_status_without_a_generation_check() -> None:
    """Seed 001's example: the admin overrides an operator that always says it cannot be upgraded."""
    override = condition("True", "upgradeIsSafe", "This is a known issue with the operator")
    stale_false = observed(condition("False"), 1)  # generation 5: outdated as well as False
    verdict = upgradeable_verdict(oc(5, status_conditions=[stale_false], overrides=[override]))
    assert verdict.upgradeable
    assert verdict.source == "override"


@pytest.mark.parametrize("status", ["False", "Unknown"])
def test_override_false_or_unknown_blocks_with_its_message(status: str) -> None:
    override = condition(status, "Hold", "wait for the maintenance window")
    ok_status = observed(condition("True", "AsExpected", ""), 1)
    verdict = upgradeable_verdict(oc(1, status_conditions=[ok_status], overrides=[override]))
    assert not verdict.upgradeable
    assert verdict.message == "the operator is not upgradeable: wait for the maintenance window"
    assert verdict.source == "override"


def test_override_of_another_type_is_ignored() -> None:
    verdict = upgradeable_verdict(oc(1, overrides=[condition("False", type_="Foo")]))
    assert verdict.upgradeable


@pytest.mark.parametrize("status", ["True", "False", "Unknown"])
def test_outdated_status_blocks_even_when_true(status: str) -> None:
    verdict = upgradeable_verdict(oc(3, status_conditions=[observed(condition(status), 2)]))
    assert not verdict.upgradeable
    assert verdict.message == f'the operatorcondition status "Upgradeable"="{status}" is outdated'


def test_status_without_observed_generation_is_outdated() -> None:
    """A v1-style write of status.conditions must carry observedGeneration (A2, inference)."""
    verdict = upgradeable_verdict(oc(1, status_conditions=[condition("True")]))
    assert not verdict.upgradeable
    assert "is outdated" in verdict.message


def test_false_blocks_with_the_operators_message() -> None:
    verdict = upgradeable_verdict(oc(2, status_conditions=[observed(condition("False"), 2)]))
    assert not verdict.upgradeable
    assert verdict.message == "the operator is not upgradeable: The operator is performing a migration."
    assert verdict.reason == "migration"
    assert verdict.source == "status"


@pytest.mark.parametrize("status", ["True", "Unknown"])
def test_true_or_unknown_pass(status: str) -> None:
    assert upgradeable_verdict(oc(2, status_conditions=[observed(condition(status), 2)])).upgradeable


def test_no_upgradeable_condition_passes() -> None:
    assert upgradeable_verdict(oc()).upgradeable
    assert upgradeable_verdict(oc(1, status_conditions=[])).upgradeable
    other = observed(condition("False", type_="Foo"), 1)
    assert upgradeable_verdict(oc(1, status_conditions=[other])).upgradeable


def test_spec_conditions_are_not_read_only_the_status_copy() -> None:
    """OLM reads status.conditions (its observed copy), never spec.conditions directly."""
    verdict = upgradeable_verdict(oc(2, spec_conditions=[condition("False")]))
    assert verdict.upgradeable


# --- synced_status: syncOperatorConditionStatus -------------------------------------------------------------


def test_sync_copies_spec_conditions_with_the_generation() -> None:
    obj = oc(4, spec_conditions=[condition("False"), condition("True", "Fine", "", type_="Foo")])
    status = synced_status(obj)
    assert status == {"conditions": [observed(condition("False"), 4),
                                     observed(condition("True", "Fine", "", type_="Foo"), 4)]}


def test_sync_nothing_to_do() -> None:
    assert synced_status(oc(4)) is None
    assert synced_status(oc(4, spec_conditions=[])) is None
    same = oc(4, spec_conditions=[condition("False")], status_conditions=[observed(condition("False"), 4)])
    assert synced_status(same) is None


def test_sync_updates_a_stale_generation_status_or_message() -> None:
    stale = oc(5, spec_conditions=[condition("False")], status_conditions=[observed(condition("False"), 4)])
    assert synced_status(stale) == {"conditions": [observed(condition("False"), 5)]}
    flipped = oc(5, spec_conditions=[condition("True", "Done", "")],
                 status_conditions=[observed(condition("False"), 5)])
    assert synced_status(flipped) == {"conditions": [observed(condition("True", "Done", ""), 5)]}


def test_sync_only_upserts() -> None:
    """A condition removed from spec keeps its (now stale) status copy, which then blocks as outdated."""
    obj = oc(6, spec_conditions=[condition("True", type_="Foo")],
             status_conditions=[observed(condition("True"), 5), observed(condition("True", type_="Foo"), 5)])
    status = synced_status(obj)
    assert status is not None
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["Upgradeable"] == observed(condition("True"), 5)  # kept, stale
    assert by_type["Foo"]["observedGeneration"] == 6
    synced = {**obj, "status": status}
    assert not upgradeable_verdict(synced).upgradeable  # the staleness guard


def test_sync_keeps_other_status_fields_and_does_not_modify_its_input() -> None:
    obj = oc(2, spec_conditions=[condition("False")])
    obj["status"] = {"conditions": [], "extra": "kept"}
    before = copy.deepcopy(obj)
    status = synced_status(obj)
    assert status is not None and status["extra"] == "kept"
    assert obj == before


def test_sync_then_verdict() -> None:
    obj = oc(7, spec_conditions=[condition("False")])
    assert upgradeable_verdict(obj).upgradeable  # nothing observed yet
    obj["status"] = synced_status(obj)
    assert not upgradeable_verdict(obj).upgradeable
    assert upgradeable_verdict(obj).message == "the operator is not upgradeable: The operator is performing a migration."


# --- unsupported_conditions ---------------------------------------------------------------------------------


def test_unsupported_conditions_are_listed_once() -> None:
    foo = condition("True", type_="Foo")
    obj = oc(1, spec_conditions=[condition("False"), foo, condition("False", type_="Upgrading")],
             status_conditions=[observed(condition("False"), 1), observed(foo, 1)])
    types = [c.type for c in unsupported_conditions(OperatorCondition.read(obj))]
    assert types == ["Foo", "Upgrading"]
    assert unsupported_conditions(OperatorCondition.read(oc())) == []


# --- operator_condition and rbac_objects: what the generator and the reconciler create -------------------


def deployment(name: str = "etcd-operator", namespace: str = "openshift-etcd-operator",
               account: str | None = "etcd-operator", init: bool = False,
               envs: list[list[dict[str, Any]] | None] | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [
        {"name": f"c{i}", "image": "img", **({"env": env} if env is not None else {})}
        for i, env in enumerate(envs if envs is not None else [None])]}
    if account is not None:
        pod["serviceAccountName"] = account
    if init:
        pod["initContainers"] = [{"name": "init", "image": "img", "env": [{"name": "A", "value": "1"}]}]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"spec": pod}}}


def live(obj: dict[str, Any], uid: str = "6f1c9e1a-0000-4000-8000-000000000001") -> dict[str, Any]:
    """``obj`` as the server returns it after the create: with a uid."""
    return {**obj, "metadata": {**obj["metadata"], "uid": uid, "generation": 1}}


def test_operator_condition() -> None:
    oc_obj = operator_condition("etcd", "openshift-etcd-operator", [deployment()])
    assert oc_obj["apiVersion"] == "operators.coreos.com/v2" and oc_obj["kind"] == "OperatorCondition"
    assert (oc_obj["metadata"]["name"], oc_obj["metadata"]["namespace"]) == ("etcd", "openshift-etcd-operator")
    assert oc_obj["spec"] == {"deployments": ["etcd-operator"], "serviceAccounts": ["etcd-operator"]}
    assert "conditions" not in oc_obj["spec"] and "overrides" not in oc_obj["spec"]
    assert "ownerReferences" not in oc_obj["metadata"]  # OLM's is owned by its CSV; cvo's has no owner


def test_operator_condition_lists_every_deployment_and_service_account() -> None:
    """OLM's generator (operator-lifecycle-manager: pkg/controller/operators/operatorconditiongenerator_controller.go,
    ``getDeploymentNames`` and ``getServiceAccountNames``) lists every deployment of the CSV and every
    service account of its permissions in one OperatorCondition.  cvo used to build it from one
    Deployment, so the last Deployment applied replaced the others."""
    deployments = [deployment("olm-operator", account="olm-operator-serviceaccount"),
                   deployment("catalog-operator", account="catalog-sa"),
                   deployment("package-server-manager", account="olm-operator-serviceaccount")]
    oc_obj = operator_condition("olm", "openshift-etcd-operator", deployments)
    assert oc_obj["spec"] == {"deployments": ["olm-operator", "catalog-operator", "package-server-manager"],
                              "serviceAccounts": ["olm-operator-serviceaccount", "catalog-sa"]}
    _, binding = rbac_objects(live(oc_obj))
    assert [(s["kind"], s["name"], s["namespace"]) for s in binding["subjects"]] == [
        ("ServiceAccount", "olm-operator-serviceaccount", "openshift-etcd-operator"),
        ("ServiceAccount", "catalog-sa", "openshift-etcd-operator")]


def test_rbac_objects_are_owned_by_the_operator_condition() -> None:
    """OLM's reconciler (operator-lifecycle-manager: pkg/controller/operators/operatorcondition_controller.go,
    ``ensureOperatorConditionRole``/``ensureOperatorConditionRoleBinding``) calls
    ``ownerutil.AddOwner(role, operatorCondition, false, true)`` (pkg/lib/ownerutil/util.go): one
    owner reference, ``controller: true``, ``blockOwnerDeletion: false``, so that deleting the
    OperatorCondition garbage-collects both."""
    oc_obj = live(operator_condition("etcd", "openshift-etcd-operator", [deployment()]))
    role, binding = rbac_objects(oc_obj)
    owner = {"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition", "name": "etcd",
             "uid": "6f1c9e1a-0000-4000-8000-000000000001", "controller": True, "blockOwnerDeletion": False}
    for obj in (role, binding):
        assert obj["metadata"]["ownerReferences"] == [owner]
        assert is_owned_by(obj, oc_obj)
        assert not is_owned_by(obj, live(oc_obj, uid="another"))
    role["metadata"]["ownerReferences"][0]["name"] = "changed"  # each object has its own copy
    assert binding["metadata"]["ownerReferences"] == [owner]

    assert (role["kind"], role["metadata"]["name"], role["metadata"]["namespace"]) == (
        "Role", "etcd", "openshift-etcd-operator")
    assert role["apiVersion"] == "rbac.authorization.k8s.io/v1"
    assert role["rules"] == [{"verbs": ["get", "update", "patch"], "apiGroups": [OC_GROUP],
                              "resources": ["operatorconditions"], "resourceNames": ["etcd"]}]
    assert (binding["kind"], binding["metadata"]["name"], binding["metadata"]["namespace"]) == (
        "RoleBinding", "etcd", "openshift-etcd-operator")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "etcd"}
    assert [(s["kind"], s["name"]) for s in binding["subjects"]] == [("ServiceAccount", "etcd-operator")]


def test_role_grants_no_status_list_watch_create_or_delete() -> None:
    """v2 is the only channel: OLM's Role lost ``operatorconditions/status`` in commit 86eda229a
    (pkg/controller/operators/operatorcondition_controller.go, "Operator can create/update/patch
    OperatorCondition but not its status"), so an operator cannot write ``status.conditions``."""
    role, _ = rbac_objects(live(operator_condition("etcd", "openshift-etcd-operator", [deployment()])))
    (rule,) = role["rules"]
    assert sorted(rule["verbs"]) == ["get", "patch", "update"]
    assert rule["resources"] == ["operatorconditions"]  # not operatorconditions/status


def test_default_service_account() -> None:
    oc_obj = operator_condition("dns", "openshift-dns-operator",
                                [deployment("dns-operator", "openshift-dns-operator", account=None)])
    assert oc_obj["spec"]["serviceAccounts"] == ["default"]
    assert rbac_objects(live(oc_obj))[1]["subjects"][0]["name"] == "default"
    assert service_account(deployment(account=None)) == "default"
    legacy = deployment(account=None)
    legacy["spec"]["template"]["spec"]["serviceAccount"] = "legacy-sa"
    assert service_account(legacy) == "legacy-sa"


# --- inject_env ----------------------------------------------------------------------------------------------


def test_inject_env_appends_to_every_container_keeping_order() -> None:
    d = deployment(envs=[[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}], None])
    out = inject_env(d, "etcd")
    containers = out["spec"]["template"]["spec"]["containers"]
    assert containers[0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"},
                                    {"name": ENV_NAME, "value": "etcd"}]
    assert containers[1]["env"] == [{"name": ENV_NAME, "value": "etcd"}]


def test_inject_env_overrides_an_existing_value_in_place() -> None:
    d = deployment(envs=[[{"name": "A", "value": "1"}, {"name": ENV_NAME, "value": "stale"},
                          {"name": "B", "value": "2"}]])
    env = inject_env(d, "etcd")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "A", "value": "1"}, {"name": ENV_NAME, "value": "etcd"}, {"name": "B", "value": "2"}]


def test_inject_env_is_idempotent() -> None:
    once = inject_env(deployment(envs=[[{"name": "A", "value": "1"}]]), "etcd")
    twice = inject_env(copy.deepcopy(once), "etcd")
    assert twice == once


def test_inject_env_leaves_init_containers_alone() -> None:
    out = inject_env(deployment(init=True), "etcd")
    assert out["spec"]["template"]["spec"]["initContainers"] == [
        {"name": "init", "image": "img", "env": [{"name": "A", "value": "1"}]}]


def test_inject_env_without_containers() -> None:
    bare = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "y"}}
    assert inject_env(copy.deepcopy(bare), "x") == bare
