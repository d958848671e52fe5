"""The ClusterVersion ``Upgradeable`` condition (classic aggregation: pkg/cvo/upgradeable.go `setUpgradeableConditions`, release-4.22).

``blockers()`` finds every source that blocks minor and major updates, in the CVO's order
(ClusterVersion overrides, ClusterOperators, deletions in progress, then cvo's OperatorConditions);
``apply_upgradeable()`` turns them into conditions: none, one ``Upgradeable=False``, or
``MultipleReasons`` with the sub-conditions kept.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from freezegun import freeze_time

from cvo.clock import to_rfc3339
from cvo.cluster.api import Ref
from cvo.gates.upgradeable import (
    CONDITIONS_TYPE,
    DELETES_TYPE,
    OPERATORS_TYPE,
    OVERRIDES_TYPE,
    Blocker,
    apply_upgradeable,
    blockers,
)

T0 = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
MINOR = "should not be upgraded between minor versions"


def co(name: str, upgradeable: str | None = None, reason: str = "", message: str = "") -> dict[str, Any]:
    conditions = [{"type": "Available", "status": "True"}, {"type": "Degraded", "status": "False"}]
    if upgradeable is not None:
        cond: dict[str, Any] = {"type": "Upgradeable", "status": upgradeable}
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        conditions.append(cond)
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": name},
            "status": {"conditions": conditions, "versions": [{"name": "operator", "version": "4.16.0"}]}}


def oc(name: str, namespace: str = "openshift-etcd-operator", status: str | None = None, reason: str = "",
       message: str = "", generation: int = 2, observed: int | None = None,
       override: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
                           "metadata": {"name": name, "namespace": namespace, "generation": generation},
                           "spec": {"deployments": [f"{name}-operator"], "serviceAccounts": [f"{name}-operator"]}}
    if override is not None:
        obj["spec"]["overrides"] = [override]
    if status is not None:
        cond = {"type": "Upgradeable", "status": status, "reason": reason, "message": message,
                "observedGeneration": generation if observed is None else observed}
        obj["spec"]["conditions"] = [{k: v for k, v in cond.items() if k != "observedGeneration"}]
        obj["status"] = {"conditions": [cond]}
    return obj


def cv(overrides: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
            "spec": {"overrides": overrides or []}, "status": {"desired": {"version": "4.16.0"}}}


UNMANAGED = {"kind": "Deployment", "group": "apps", "namespace": "ns", "name": "x", "unmanaged": True}


# --- ClusterOperators ------------------------------------------------------------------------------------


def test_one_cluster_operator_not_upgradeable() -> None:
    found = blockers(cv(), [co("etcd", "False", "StorageMigration", "migrating to 3.5.14"), co("dns")], [])
    assert found == [Blocker(OPERATORS_TYPE, "StorageMigration",
                             f"Cluster operator etcd {MINOR}: migrating to 3.5.14", ("etcd",))]


def test_several_cluster_operators_not_upgradeable_sorted_by_name() -> None:
    cos = [co("kube-apiserver", "False", "AdmissionPlugins", "remove the deprecated plugin"),
           co("dns", "True"),
           co("etcd", "False", "StorageMigration", "migrating")]
    found = blockers(cv(), cos, [])
    assert len(found) == 1
    b = found[0]
    assert (b.type, b.reason, b.who) == (OPERATORS_TYPE, "ClusterOperatorsNotUpgradeable", ("etcd", "kube-apiserver"))
    assert b.message == (
        f"Multiple cluster operators {MINOR}:\n"
        f"* Cluster operator etcd {MINOR}: StorageMigration: migrating\n"
        f"* Cluster operator kube-apiserver {MINOR}: AdmissionPlugins: remove the deprecated plugin")


@pytest.mark.parametrize("status", ["True", "Unknown", None])
def test_cluster_operators_upgradeable_true_unknown_or_absent_do_not_block(status: str | None) -> None:
    assert blockers(cv(), [co("etcd", status, "R", "m"), co("dns")], []) == []


def test_no_cluster_operators_no_blockers() -> None:
    assert blockers(cv(), [], []) == []
    assert blockers({}, [], []) == []


# --- ClusterVersion overrides -----------------------------------------------------------------------------


def test_unmanaged_overrides_block() -> None:
    found = blockers(cv([UNMANAGED]), [], [])
    assert len(found) == 1
    assert (found[0].type, found[0].reason) == (OVERRIDES_TYPE, "ClusterVersionOverridesSet")
    assert found[0].message == ("Disabling ownership via cluster version overrides prevents upgrades between minor "
                                "or major versions. Please remove overrides before requesting a minor or major "
                                "version update.")


def test_managed_overrides_do_not_block() -> None:
    assert blockers(cv([{**UNMANAGED, "unmanaged": False}]), [], []) == []


# --- deletions in progress ----------------------------------------------------------------------------------


def test_deletes_in_progress_block() -> None:
    deletes = [Ref("apps", "Deployment", "openshift-cluster-samples-operator", "cluster-samples-operator"),
               Ref("", "Namespace", "", "old-namespace")]
    found = blockers(cv(), [], [], deletes)
    assert len(found) == 1
    b = found[0]
    assert (b.type, b.reason) == (DELETES_TYPE, "ResourceDeletesInProgress")
    assert "resource deletions are in progress" in b.message
    assert 'resources=Deployment "openshift-cluster-samples-operator/cluster-samples-operator"' in b.message
    assert 'Namespace "old-namespace"' in b.message


# --- OperatorConditions -----------------------------------------------------------------------------------


def test_one_operator_condition_not_upgradeable() -> None:
    found = blockers(cv(), [], [oc("etcd", status="False", reason="StorageMigration", message="migrating")])
    assert found == [Blocker(
        CONDITIONS_TYPE, "StorageMigration",
        f"Operator etcd {MINOR}: the operator is not upgradeable: migrating "
        "(OperatorCondition openshift-etcd-operator/etcd)", ("etcd",))]


def test_several_operator_conditions() -> None:
    ocs = [oc("kube-apiserver", "openshift-kube-apiserver-operator", status="False", reason="Busy", message="b"),
           oc("etcd", status="False", reason="StorageMigration", message="migrating"),
           oc("dns", "openshift-dns-operator", status="True")]
    found = blockers(cv(), [], ocs)
    assert len(found) == 1
    b = found[0]
    assert (b.type, b.reason, b.who) == (CONDITIONS_TYPE, "OperatorConditionsNotUpgradeable",
                                         ("etcd", "kube-apiserver"))
    assert b.message == (
        f"Multiple operators {MINOR}:\n"
        f"* Operator etcd {MINOR}: StorageMigration: the operator is not upgradeable: migrating "
        "(OperatorCondition openshift-etcd-operator/etcd)\n"
        f"* Operator kube-apiserver {MINOR}: Busy: the operator is not upgradeable: b "
        "(OperatorCondition openshift-kube-apiserver-operator/kube-apiserver)")


def test_operator_condition_admin_override_true_unblocks() -> None:
    override = {"type": "Upgradeable", "status": "True", "reason": "upgradeIsSafe", "message": "known issue"}
    assert blockers(cv(), [], [oc("etcd", status="False", reason="R", message="m", override=override)]) == []


def test_operator_condition_admin_override_false_blocks() -> None:
    override = {"type": "Upgradeable", "status": "False", "reason": "Hold", "message": "wait for the window"}
    found = blockers(cv(), [], [oc("etcd", override=override)])
    assert len(found) == 1
    assert found[0].reason == "Hold"
    assert "the operator is not upgradeable: wait for the window" in found[0].message


def test_operator_condition_outdated_status_blocks() -> None:
    found = blockers(cv(), [], [oc("etcd", status="True", generation=3, observed=2)])
    assert len(found) == 1
    assert found[0].type == CONDITIONS_TYPE
    assert 'the operatorcondition status "Upgradeable"="True" is outdated' in found[0].message


def test_operator_conditions_that_pass() -> None:
    assert blockers(cv(), [], [oc("etcd"), oc("dns", status="True"), oc("x", status="Unknown")]) == []


# --- the order of sources --------------------------------------------------------------------------------


def test_blockers_come_in_the_cvos_order() -> None:
    found = blockers(cv([UNMANAGED]), [co("etcd", "False", "R", "m")],
                     [oc("etcd", status="False", reason="S", message="n")],
                     [Ref("apps", "Deployment", "ns", "old")])
    assert [b.type for b in found] == [OVERRIDES_TYPE, OPERATORS_TYPE, DELETES_TYPE, CONDITIONS_TYPE]


# --- apply_upgradeable -------------------------------------------------------------------------------------


def by_type(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


OTHER = [{"type": "Available", "status": "True", "lastTransitionTime": "2025-06-01T00:00:00Z",
          "message": "Done applying 4.16.0"},
         {"type": "Failing", "status": "False", "lastTransitionTime": "2025-06-01T00:00:00Z"}]
B_CO = Blocker(OPERATORS_TYPE, "StorageMigration", f"Cluster operator etcd {MINOR}: migrating", ("etcd",))
B_OV = Blocker(OVERRIDES_TYPE, "ClusterVersionOverridesSet", "Disabling ownership ...")
B_DEL = Blocker(DELETES_TYPE, "ResourceDeletesInProgress", "deletions ...; resources=x")


def test_no_blockers_removes_upgradeable_and_its_sub_conditions() -> None:
    status = {"history": [{"version": "4.16.0"}], "conditions": [
        *OTHER,
        {"type": "Upgradeable", "status": "False", "reason": "MultipleReasons", "message": "m"},
        {"type": OPERATORS_TYPE, "status": "False", "reason": "R", "message": "m"},
        {"type": OVERRIDES_TYPE, "status": "False", "reason": "R", "message": "m"},
    ]}
    new = apply_upgradeable(status, [], T0)
    assert new["conditions"] == OTHER
    assert new["history"] == status["history"]


def test_one_blocker_sets_only_upgradeable_false() -> None:
    status = {"conditions": [*OTHER, {"type": OVERRIDES_TYPE, "status": "False", "reason": "X", "message": "y"}]}
    new = apply_upgradeable(status, [B_CO], T0)
    conds = by_type(new)
    assert set(conds) == {"Available", "Failing", "Upgradeable"}
    assert conds["Upgradeable"] == {"type": "Upgradeable", "status": "False", "reason": "StorageMigration",
                                    "message": f"Cluster operator etcd {MINOR}: migrating",
                                    "lastTransitionTime": to_rfc3339(T0)}


def test_several_blockers_keep_sub_conditions_and_say_multiple_reasons() -> None:
    new = apply_upgradeable({"conditions": list(OTHER)}, [B_OV, B_CO, B_DEL], T0)
    conds = by_type(new)
    for b in (B_OV, B_CO, B_DEL):
        assert conds[b.type]["status"] == "False"
        assert (conds[b.type]["reason"], conds[b.type]["message"]) == (b.reason, b.message)
        assert conds[b.type]["lastTransitionTime"] == to_rfc3339(T0)
    up = conds["Upgradeable"]
    assert (up["status"], up["reason"]) == ("False", "MultipleReasons")
    assert up["message"] == (
        "Cluster should not be upgraded between minor versions for multiple reasons: "
        "ClusterVersionOverridesSet,StorageMigration,ResourceDeletesInProgress\n"
        "* Disabling ownership ...\n"
        f"* Cluster operator etcd {MINOR}: migrating\n"
        "* deletions ...; resources=x")
    assert conds["Available"] == OTHER[0]


def test_going_from_several_to_one_drops_the_sub_conditions() -> None:
    several = apply_upgradeable({"conditions": []}, [B_OV, B_CO], T0)
    one = apply_upgradeable(several, [B_CO], T0 + timedelta(minutes=2))
    assert set(by_type(one)) == {"Upgradeable"}
    assert by_type(one)["Upgradeable"]["reason"] == "StorageMigration"


def test_last_transition_time_is_kept_while_the_status_stays_false() -> None:
    first = apply_upgradeable({"conditions": list(OTHER)}, [B_CO], T0)
    later = T0 + timedelta(minutes=10)
    second = apply_upgradeable(first, [B_OV, B_CO], later)
    up = by_type(second)["Upgradeable"]
    assert up["lastTransitionTime"] == to_rfc3339(T0)  # still False: no transition
    assert up["reason"] == "MultipleReasons"
    assert by_type(second)[OVERRIDES_TYPE]["lastTransitionTime"] == to_rfc3339(later)  # new
    third = apply_upgradeable(second, [B_OV, B_CO], later + timedelta(minutes=5))
    assert third == second  # nothing changed: nothing moves
    cleared = apply_upgradeable(third, [], later + timedelta(minutes=6))
    assert "Upgradeable" not in by_type(cleared)
    again = T0 + timedelta(hours=1)
    back = apply_upgradeable(cleared, [B_DEL], again)
    assert by_type(back)["Upgradeable"]["lastTransitionTime"] == to_rfc3339(again)


def test_last_transition_time_with_frozen_wall_time() -> None:
    with freeze_time("2025-07-01T12:00:00Z") as frozen:
        first = apply_upgradeable({}, [B_CO], datetime.now(UTC))
        frozen.tick(timedelta(minutes=3))
        second = apply_upgradeable(first, [B_CO], datetime.now(UTC))
    assert by_type(second)["Upgradeable"]["lastTransitionTime"] == "2025-07-01T12:00:00Z"


def test_apply_upgradeable_does_not_modify_its_input() -> None:
    status = {"conditions": [{"type": "Upgradeable", "status": "False", "reason": "Old", "message": "old",
                              "lastTransitionTime": "2025-06-01T00:00:00Z"}]}
    snapshot = {"conditions": [dict(c) for c in status["conditions"]]}
    apply_upgradeable(status, [B_OV, B_CO], T0)
    apply_upgradeable(status, [], T0)
    assert status == snapshot
