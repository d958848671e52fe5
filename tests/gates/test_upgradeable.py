"""The ClusterVersion ``Upgradeable`` condition derived from risks (pkg/cvo/status.go ``setUpgradeableCondition``,
the CVO at 6e71933): ``upgradeable_risks`` asks every source in pkg/cvo/cvo.go's order (and cvo's OperatorConditions
last); ``set_upgradeable`` turns the risks that apply into the condition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from freezegun import freeze_time
from hypothesis import given
from hypothesis import strategies as st

from cvo.clock import to_rfc3339
from cvo.cluster.api import Ref
from cvo.gates.risks.reads import Failed
from cvo.gates.upgradeable import (
    OBSOLETE,
    ClusterState,
    UpgradeableRisks,
    applies,
    set_upgradeable,
    update_versions,
    upgradeable_risks,
)
from cvo.objects import ClusterOperator, ClusterVersion, OperatorCondition
from cvo.updates.model import ALWAYS, MatchingRule, Risk
from cvo.updates.sources import SourcedRisks

T0 = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
RULES = (MatchingRule(ALWAYS),)
UNMANAGED = {"kind": "Deployment", "group": "apps", "namespace": "ns", "name": "x", "unmanaged": True}


def cv(overrides: list[dict[str, Any]] | None = None, progressing: str = "False",
       updates: tuple[str, ...] = ("4.16.3", "4.17.0")) -> ClusterVersion:
    return ClusterVersion.read({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
        "spec": {"overrides": overrides or []},
        "status": {"desired": {"version": "4.16.0", "image": "img"}, "availableUpdates": [
            {"version": v, "image": f"img:{v}"} for v in updates],
                   "conditions": [{"type": "Progressing", "status": progressing}]}})


def co(name: str, upgradeable: str, message: str) -> ClusterOperator:
    return ClusterOperator.read({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                                 "metadata": {"name": name}, "status": {"conditions": [
                                     {"type": "Upgradeable", "status": upgradeable, "reason": "R",
                                      "message": message}]}})


def oc(name: str, status: str, message: str) -> OperatorCondition:
    cond = {"type": "Upgradeable", "status": status, "reason": "R", "message": message}
    return OperatorCondition.read({"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
                                   "metadata": {"name": name, "namespace": f"openshift-{name}", "generation": 1},
                                   "spec": {"conditions": [cond]},
                                   "status": {"conditions": [{**cond, "observedGeneration": 1}]}})


def gates_cm(data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "admin-gates"}, "data": data}


def by_type(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


# --- the sources, in the CVO's order -------------------------------------------------------------------------


def test_every_source_in_the_cvos_order_then_operator_conditions() -> None:
    state = ClusterState(cv([UNMANAGED], progressing="True"), (co("etcd", "False", "migrating"),),
                         (oc("beta", "False", "reindexing"),), (Ref("apps", "Deployment", "ns", "old"),),
                         gates_cm({"ack-4.16-api-removals": "Kubernetes removes APIs."}), None)
    found = upgradeable_risks(state, update_versions(state.cluster_version.section("status")))  # type: ignore[union-attr]
    assert [r.name for r in found.risks] == [
        "ClusterVersionUpdating", "ClusterVersionOverrides", "ResourceDeletionInProgress",
        "AdminAck-ack-4.16-api-removals", "ClusterOperatorUpgradeable-etcd", "OperatorConditionUpgradeable-openshift-beta.beta"]
    assert set(found.versions.values()) == {("4.17.0",)}  # the minor update only, not the 4.16.3 patch
    assert found.error == ""


def test_nothing_blocks() -> None:
    state = ClusterState(cv(), (co("etcd", "True", "fine"),), (oc("beta", "True", "fine"),))
    assert upgradeable_risks(state, ["4.17.0"]) == SourcedRisks()
    assert upgradeable_risks(ClusterState(None), ["4.17.0"]) == SourcedRisks()


def test_as_a_risk_source() -> None:
    async def read() -> ClusterState:
        return ClusterState(cv(), (co("etcd", "False", "migrating"),))

    import asyncio
    source = UpgradeableRisks(read)
    assert source.name.startswith("Aggregate(ClusterVersionUpdating, ")
    assert [r.name for r in asyncio.run(source.risks(["4.17.0"])).risks] == ["ClusterOperatorUpgradeable-etcd"]


def test_update_versions_available_then_conditional() -> None:
    status = {"availableUpdates": [{"version": "4.16.3"}], "conditionalUpdates": [
        {"release": {"version": "4.17.0"}}, {"release": "bad"}]}
    assert update_versions(status) == ["4.16.3", "4.17.0", ""]
    assert update_versions({"availableUpdates": None}) == []


# --- set_upgradeable -------------------------------------------------------------------------------------------


OTHER = [{"type": "Available", "status": "True", "lastTransitionTime": "2025-06-01T00:00:00Z",
          "message": "Done applying 4.16.0"},
         {"type": "Failing", "status": "False", "lastTransitionTime": "2025-06-01T00:00:00Z"}]
R_CO = Risk("ClusterOperatorUpgradeable-etcd", "migrating", "https://docs", RULES)
R_OV = Risk("ClusterVersionOverrides", "Disabling ownership ...", "https://docs", RULES)
R_DEL = Risk("ResourceDeletionInProgress", "deletions ...; resources=x", "https://docs", RULES)


def test_no_risk_removes_upgradeable_and_the_obsolete_sub_conditions() -> None:
    status = {"history": [{"version": "4.16.0"}], "conditions": [
        *OTHER, {"type": "Upgradeable", "status": "False", "reason": "MultipleReasons", "message": "m"},
        *({"type": t, "status": "False", "reason": "R", "message": "m"} for t in OBSOLETE)]}
    new = set_upgradeable(status, SourcedRisks(), T0)
    assert new["conditions"] == OTHER
    assert new["history"] == status["history"]


def test_one_risk_its_name_as_reason() -> None:
    new = set_upgradeable({"conditions": [*OTHER, {"type": "UpgradeableClusterOperators", "status": "False"}]},
                          SourcedRisks((R_OV,)), T0)
    assert set(by_type(new)) == {"Available", "Failing", "Upgradeable"}
    assert by_type(new)["Upgradeable"] == {"type": "Upgradeable", "status": "False", "reason": "ClusterVersionOverrides",
                                           "message": "Disabling ownership ...", "lastTransitionTime": to_rfc3339(T0)}


@pytest.mark.parametrize("name", ["ClusterOperatorUpgradeable-etcd", "AdminAck-ack-4.16-x", "A.b", "Ab-"])
def test_a_name_no_reason_can_hold(name: str) -> None:
    new = set_upgradeable({}, SourcedRisks((Risk(name, "m", "u", RULES),)), T0)
    assert by_type(new)["Upgradeable"]["reason"] == "RiskNameNotCompatibleWithReasonProperty"


def test_several_risks_multiple_reasons_with_each_message() -> None:
    new = set_upgradeable({"conditions": list(OTHER)}, SourcedRisks((R_OV, R_CO, R_DEL)), T0)
    up = by_type(new)["Upgradeable"]
    assert (up["status"], up["reason"]) == ("False", "MultipleReasons")
    assert up["message"] == ("Cluster should not be upgraded between minor or major versions for multiple reasons:\n"
                             "* Disabling ownership ...\n* migrating\n* deletions ...; resources=x")
    assert not set(by_type(new)) & set(OBSOLETE)


def test_an_error_without_risks_is_unknown() -> None:
    new = set_upgradeable({"conditions": list(OTHER)}, SourcedRisks(error="failed to parse"), T0)
    assert by_type(new)["Upgradeable"] == {"type": "Upgradeable", "status": "Unknown", "reason": "EvaluationFailed",
                                           "message": "failed to parse", "lastTransitionTime": to_rfc3339(T0)}


def test_an_error_next_to_risks_leaves_the_risks() -> None:
    new = set_upgradeable({}, SourcedRisks((R_CO,), error="grumble"), T0)
    assert by_type(new)["Upgradeable"]["status"] == "False"


def test_risks_whose_applies_condition_is_false_do_not_count() -> None:
    off = Risk("Alert", "m", "u", RULES, ({"type": "Applies", "status": "False"},))
    unknown = Risk("Other", "m", "u", RULES, ({"type": "Applies", "status": "Unknown"},))
    assert not applies(off) and applies(unknown) and applies(R_CO)
    assert "Upgradeable" not in by_type(set_upgradeable({}, SourcedRisks((off,)), T0))
    assert by_type(set_upgradeable({}, SourcedRisks((off, unknown)), T0))["Upgradeable"]["reason"] == "Other"


def test_a_failed_read_blocks_as_unknown_risk() -> None:
    found = upgradeable_risks(ClusterState(cv(), Failed("the server is down")), ["4.17.0"])
    new = set_upgradeable({}, found, T0)
    assert by_type(new)["Upgradeable"]["reason"] == "ClusterOperatorUpgradeableUnknown"


def test_last_transition_time_is_kept_while_the_status_stays_false() -> None:
    first = set_upgradeable({"conditions": list(OTHER)}, SourcedRisks((R_CO,)), T0)
    later = T0 + timedelta(minutes=10)
    second = set_upgradeable(first, SourcedRisks((R_OV, R_CO)), later)
    up = by_type(second)["Upgradeable"]
    assert up["lastTransitionTime"] == to_rfc3339(T0) and up["reason"] == "MultipleReasons"
    assert set_upgradeable(second, SourcedRisks((R_OV, R_CO)), later + timedelta(minutes=5)) == second
    cleared = set_upgradeable(second, SourcedRisks(), later)
    assert "Upgradeable" not in by_type(cleared)
    again = T0 + timedelta(hours=1)
    assert by_type(set_upgradeable(cleared, SourcedRisks((R_DEL,)), again))["Upgradeable"]["lastTransitionTime"] \
        == to_rfc3339(again)


def test_last_transition_time_with_frozen_wall_time() -> None:
    with freeze_time("2025-07-01T12:00:00Z") as frozen:
        first = set_upgradeable({}, SourcedRisks((R_CO,)), datetime.now(UTC))
        frozen.tick(timedelta(minutes=3))
        second = set_upgradeable(first, SourcedRisks((R_CO,)), datetime.now(UTC))
    assert by_type(second)["Upgradeable"]["lastTransitionTime"] == "2025-07-01T12:00:00Z"


def test_set_upgradeable_does_not_modify_its_input() -> None:
    status = {"conditions": [{"type": "Upgradeable", "status": "False", "reason": "Old", "message": "old",
                              "lastTransitionTime": "2025-06-01T00:00:00Z"}]}
    snapshot = {"conditions": [dict(c) for c in status["conditions"]]}
    set_upgradeable(status, SourcedRisks((R_OV, R_CO)), T0)
    set_upgradeable(status, SourcedRisks(), T0)
    assert status == snapshot


names = st.text(alphabet="ABCabc019.-_:,", min_size=1, max_size=8)


@given(st.lists(st.builds(Risk, names, st.text(max_size=10), st.just("u"), st.just(RULES)), max_size=4),
       st.text(max_size=10))
def test_any_risks(risks: list[Risk], error: str) -> None:
    new = set_upgradeable({"conditions": [{"type": "UpgradeableClusterOperators", "status": "False"}]},
                          SourcedRisks(tuple(risks), error=error), T0)
    conds = by_type(new)
    assert "UpgradeableClusterOperators" not in conds
    if risks:
        assert conds["Upgradeable"]["status"] == "False"
        assert conds["Upgradeable"]["reason"] in (risks[0].name, "RiskNameNotCompatibleWithReasonProperty",
                                                  "MultipleReasons")
    elif error:
        assert conds["Upgradeable"]["status"] == "Unknown"
    else:
        assert "Upgradeable" not in conds
