"""The risk sources of pkg/risk (the CVO at 6e71933), ported with their upstream tests' cases: updating,
overrides, deletion, adminack, upgradeable (ClusterOperators), aggregate, and cvo's OperatorConditions."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.cluster.api import Ref
from cvo.gates.risks.adminack import AdminAck, admin_ack_risks, check_gate, gate_applies, gates
from cvo.gates.risks.aggregate import Aggregate, combine
from cvo.gates.risks.cluster_version import Overrides, Updating, overrides_risks, updating_risks
from cvo.gates.risks.deletion import Deletion, deletion_risks
from cvo.gates.risks.operatorconditions import OperatorConditionUpgradeable, operator_condition_risks
from cvo.gates.risks.reads import Failed
from cvo.gates.risks.upgradeable import ClusterOperatorUpgradeable, cluster_operator_risks
from cvo.gates.risks.versions import DOCS, major_and_minor_updates, update_type
from cvo.objects import ClusterOperator, ClusterVersion, OperatorCondition
from cvo.payload import semver
from cvo.updates.model import ALWAYS, MatchingRule, Risk
from cvo.updates.sources import RiskSource, SourcedRisks

ALWAYS_RULES = (MatchingRule(ALWAYS),)
VERSIONS = ("4.21.1", "4.22.0", "5.0.0", "4.20.9", "not-a-version")
UNDERSTANDING = ("https://docs.redhat.com/en/documentation/openshift_container_platform/4.21/html/updating_clusters/"
                 "understanding-openshift-updates-1#understanding_clusteroperator_conditiontypes_understanding-"
                 "openshift-updates")


def cv(version: str = "4.21.0", progressing: str | None = None, unmanaged: bool | None = None) -> ClusterVersion:
    spec: dict[str, Any] = {}
    if unmanaged is not None:
        spec["overrides"] = [{"kind": "Deployment", "group": "apps", "namespace": "ns", "name": "x",
                              "unmanaged": unmanaged}]
    status: dict[str, Any] = {"desired": {"version": version, "image": "img"}}
    if progressing is not None:
        status["conditions"] = [{"type": "Progressing", "status": progressing}]
    return ClusterVersion.read({"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
                                "metadata": {"name": "version"}, "spec": spec, "status": status})


def co(name: str, upgradeable: str | None, message: str = "") -> ClusterOperator:
    conditions = [] if upgradeable is None else [{"type": "Upgradeable", "status": upgradeable, "reason": "R",
                                                  "message": message}]
    return ClusterOperator.read({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                                 "metadata": {"name": name}, "status": {"conditions": conditions}})


def cm(data: dict[str, str] | None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "y"},
            **({"data": data} if data is not None else {})}


async def _value(value: Any) -> Any:
    return value


def const(value: Any) -> Any:
    return lambda: _value(value)


# --- versions (pkg/risk/upgradeable/util.go, pkg/internal/constants.go) ------------------------------------


@pytest.mark.parametrize(("source", "target", "kind"), [
    ("4.21.0", "5.0.0", "Major"), ("4.21.0", "4.22.0", "Minor"), ("4.21.0", "4.21.1", "Patch"),
    ("4.21.1", "4.21.0", "Unknown"), ("4.21.0", "4.21.0", "Unknown"), ("4.21.0", "4.20.9", "Unknown"),
    ("4.21.0", "4.22.0-rc.1", "Minor")])
def test_update_type(source: str, target: str, kind: str) -> None:
    assert update_type(semver.parse(source), semver.parse(target)) == kind


def test_major_and_minor_updates_keep_versions_that_do_not_parse() -> None:
    assert major_and_minor_updates(semver.parse("4.21.0"), VERSIONS) == ("4.22.0", "5.0.0", "not-a-version")


@given(st.lists(st.text(max_size=12), max_size=8))
def test_major_and_minor_updates_any_text(versions: list[str]) -> None:
    found = major_and_minor_updates(semver.parse("4.21.0"), versions)
    assert set(found) <= set(versions)
    assert all(not semver.is_valid(v) or semver.parse(v) >= semver.parse("4.22.0") for v in found)


# --- updating (pkg/risk/updating) -------------------------------------------------------------------------


def test_updating_risk_while_progressing() -> None:
    found = updating_risks("ClusterVersionUpdating", cv(progressing="True"), VERSIONS)
    assert found.risks == (Risk("ClusterVersionUpdating",
                                "An update is already in progress and the details are in the Progressing condition.",
                                UNDERSTANDING, ALWAYS_RULES),)
    assert found.versions == {"ClusterVersionUpdating": ("4.22.0", "5.0.0", "not-a-version")}
    assert found.error == ""


@pytest.mark.parametrize("progressing", ["False", "Unknown", None])
def test_updating_no_risk_unless_progressing(progressing: str | None) -> None:
    assert updating_risks("ClusterVersionUpdating", cv(progressing=progressing), VERSIONS) == SourcedRisks()


def test_updating_no_cluster_version_no_risk() -> None:
    assert updating_risks("ClusterVersionUpdating", None, VERSIONS) == SourcedRisks()


def test_updating_risk_without_major_or_minor_updates_has_no_versions() -> None:
    found = updating_risks("ClusterVersionUpdating", cv(progressing="True"), ["4.21.1"])
    assert len(found.risks) == 1 and found.versions == {}


def test_updating_desired_version_that_does_not_parse_is_an_error() -> None:
    found = updating_risks("ClusterVersionUpdating", cv("4.21", progressing="True"), VERSIONS)
    assert found == SourcedRisks(error='failed to parse current target "4.21" to SemVer: No Major.Minor.Patch '
                                       'elements found')


# --- overrides (pkg/risk/overrides) -----------------------------------------------------------------------


def test_overrides_risk_with_an_unmanaged_entry() -> None:
    found = overrides_risks("ClusterVersionOverrides", cv(unmanaged=True), VERSIONS)
    assert found.risks == (Risk(
        "ClusterVersionOverrides",
        "Disabling ownership via cluster version overrides prevents updates between minor or major versions. "
        "Please remove overrides before requesting a minor or major version update.",
        "https://docs.redhat.com/en/documentation/openshift_container_platform/4.21/html/config_apis/"
        "clusterversion-config-openshift-io-v1#spec-8", ALWAYS_RULES),)
    assert found.versions == {"ClusterVersionOverrides": ("4.22.0", "5.0.0", "not-a-version")}


@pytest.mark.parametrize("unmanaged", [False, None])
def test_overrides_managed_or_none_no_risk(unmanaged: bool | None) -> None:
    assert overrides_risks("ClusterVersionOverrides", cv(unmanaged=unmanaged), VERSIONS) == SourcedRisks()


# --- deletion (pkg/risk/deletion) -------------------------------------------------------------------------


def test_deletion_risk_names_the_resources_sorted() -> None:
    deletes = [Ref("apps", "Deployment", "ns", "b"), Ref("", "Namespace", "", "a")]
    found = deletion_risks("ResourceDeletionInProgress", "4.21.0", deletes, VERSIONS)
    assert found.risks[0].message == ('Cluster minor or major version upgrades are not allowed while resource '
                                      'deletions are in progress; resources=Deployment "ns/b",Namespace "a"')
    assert found.risks[0].url.endswith("/4.21/html/updating_clusters/understanding-openshift-updates-1"
                                       "#update-manifest-application_how-updates-work")
    assert found.versions == {"ResourceDeletionInProgress": ("4.22.0", "5.0.0", "not-a-version")}


def test_deletion_nothing_in_progress() -> None:
    assert deletion_risks("ResourceDeletionInProgress", "4.21.0", [], VERSIONS) == SourcedRisks()


def test_deletion_current_version_that_does_not_parse() -> None:
    found = deletion_risks("ResourceDeletionInProgress", "", [], VERSIONS)
    assert found.risks == (Risk("ResourceDeletionInProgressUnknown",
                                "Failed to parse cluster version to check resource deletion: Version string empty",
                                DOCS, ALWAYS_RULES),)
    assert found.error == "Version string empty"


# --- adminack (pkg/risk/adminack, adminack_test.go's cases at 4.21.0) --------------------------------------


def _ack(gates_data: dict[str, str] | None, acks: dict[str, str] | None, versions: Sequence[str] = ()) -> SourcedRisks:
    return admin_ack_risks("AdminAck", "4.21.0", cm(gates_data), cm(acks), versions)


def _risk(name: str, message: str, url: str = DOCS) -> Risk:
    return Risk(name, message, url, ALWAYS_RULES)


@pytest.mark.parametrize(("gates_data", "acks", "expected"), [
    ({"ack-4.8-test": "Testing"}, {}, ()),
    ({"ack-4.21-test": ""}, {}, (_risk("AdminAck-ack-4.21-test",
                                       "admin-gates configmap gate ack-4.21-test must contain a non-empty value."),)),
    ({"ack-4.21-test": "Description."}, {}, (_risk("AdminAck-ack-4.21-test", "Description."),)),
    ({"ack-4.21-test": "Description A.", "ack-4.22-test": "Description B."}, {},
     (_risk("AdminAck-ack-4.21-test", "Description A."),)),
    ({"ack-4.21-with-description": "Description.", "ack-4.21-without-description": ""}, {},
     (_risk("AdminAck-ack-4.21-with-description", "Description."),
      _risk("AdminAck-ack-4.21-without-description",
            "admin-gates configmap gate ack-4.21-without-description must contain a non-empty value."))),
    ({"ack-4.21-b": "Description 2.", "ack-4.21-a": "Description 1.", "ack-4.21-c": "Description 3."}, {},
     (_risk("AdminAck-ack-4.21-a", "Description 1."), _risk("AdminAck-ack-4.21-b", "Description 2."),
      _risk("AdminAck-ack-4.21-c", "Description 3."))),
    ({"ack-4.21-test": "Description."}, {"ack-4.21-test": "true"}, ()),
    ({"ack-4.21-a": "Description 1.", "ack-4.21-b": "Description 2.", "ack-4.21-c": "Description 3."},
     {"ack-4.21-a": "true", "ack-4.21-c": "true"}, (_risk("AdminAck-ack-4.21-b", "Description 2."),)),
    ({"ack-4.21-a": "Description 1.", "ack-4.21-b": "Description 2."}, {"ack-4.21-a": "true", "ack-4.21-b": "true"},
     ()),
    ({"ack-4.21-a": "Description 1."}, {"ack-4.21-a": "True"}, (_risk("AdminAck-ack-4.21-a", "Description 1."),)),
])
def test_admin_ack(gates_data: dict[str, str], acks: dict[str, str], expected: tuple[Risk, ...]) -> None:
    assert _ack(gates_data, acks) == SourcedRisks(expected)


def test_admin_ack_url_is_the_first_https_link_of_the_message() -> None:
    found = _ack({"ack-4.21-kube-1.35-api-removals-in-4.22": "Kubernetes 1.35 removes APIs; see "
                  "https://access.redhat.com/articles/7031404 and https://example.com/other"}, {})
    assert found.risks[0].url == "https://access.redhat.com/articles/7031404"


def test_admin_ack_risks_apply_to_major_and_minor_updates() -> None:
    found = _ack({"ack-4.21-a": "A."}, {}, VERSIONS)
    assert found.versions == {"AdminAck-ack-4.21-a": ("4.22.0", "5.0.0", "not-a-version")}


def test_admin_ack_failed_reads_are_unknown_risks_and_errors() -> None:
    found = admin_ack_risks("AdminAck", "4.21.0", cm({"ack-4.21-a": "A."}), Failed('configmap "admin-acks" not found'),
                            ())
    assert found == SourcedRisks((_risk("AdminAckUnknown", 'Failed to retrieve ConfigMap admin-acks from namespace '
                                                           'openshift-config: configmap "admin-acks" not found'),),
                                 error='configmap "admin-acks" not found')
    found = admin_ack_risks("AdminAck", "4.21.0", Failed("boom"), None, ())
    assert found.risks[0].message == ("Failed to retrieve ConfigMap admin-gates from namespace openshift-config-managed:"
                                      " boom")


def test_admin_ack_missing_config_maps_hold_nothing() -> None:
    """cvo's difference: payloads need not ship admin-gates and admin-acks; a missing one is empty."""
    assert admin_ack_risks("AdminAck", "4.21.0", None, None, VERSIONS) == SourcedRisks()
    assert admin_ack_risks("AdminAck", "4.21.0", cm({"ack-4.21-a": "A."}), None, ()).risks[0].name == "AdminAck-ack-4.21-a"


def test_admin_ack_current_version_that_does_not_parse() -> None:
    found = admin_ack_risks("AdminAck", "x", cm({}), cm({}), ["4.22.0"])
    assert found.risks == (_risk("AdminAckUnknown", "Failed to parse cluster version to check admin-acks: "
                                                    "No Major.Minor.Patch elements found"),)
    assert found.versions == {"AdminAckUnknown": ("4.22.0",)}


@pytest.mark.parametrize("gate", ["ack-4>8-foo", "ack-4..8-foo", "ck-4.8-foo", "ack-3.8-foo", "ack-4.x-foo",
                                  "ack-4.8.1-foo", "ack-4.x--foo", "ack-4.x-", "ack-4.8--foo"])
def test_gate_names_of_invalid_format(gate: str) -> None:
    with pytest.raises(ValueError, match="has invalid format; must comply with"):
        gate_applies(gate, semver.parse("4.8.1"))
    risk = check_gate(gate, "value", "AdminAck-", semver.parse("4.8.1"), {})
    assert risk is not None and risk.message.startswith(f'admin-gates configmap gate "{gate}" is invalid: admin-gates '
                                                        f'configmap gate name {gate} has invalid format')


@pytest.mark.parametrize(("gate", "version", "applies"), [
    ("ack-4.8-foo", "4.8.1", True), ("ack-4.9-foo", "4.8.1", False), ("ack-5.0-foo", "5.0.3", True),
    ("ack-4.10-foo", "4.10.0", True), ("ack-4.1-foo", "4.10.0", False)])
def test_gate_applies_to_its_minor_version(gate: str, version: str, applies: bool) -> None:
    assert gate_applies(gate, semver.parse(version)) is applies


def test_gate_with_a_minor_version_of_leading_zeroes() -> None:
    with pytest.raises(ValueError, match=re.escape('failed to parse SemVer ack version from admin-gate "ack-4.08-foo"')):
        gate_applies("ack-4.08-foo", semver.parse("4.8.1"))


def test_gates_listing() -> None:
    listed = gates("4.21.0", cm({"ack-4.21-b": "B.", "ack-4.20-a": "A.", "bad": "C."}), cm({"ack-4.21-b": "true"}))
    assert [(g.key, g.applies, g.acknowledged, g.risk is not None) for g in listed] == [
        ("ack-4.20-a", False, False, False), ("ack-4.21-b", True, True, False), ("bad", True, False, True)]


@given(st.dictionaries(st.text(max_size=20), st.text(max_size=20), max_size=5),
       st.dictionaries(st.text(max_size=20), st.sampled_from(["true", "false", ""]), max_size=5))
def test_admin_ack_any_config_maps(gates_data: dict[str, str], acks: dict[str, str]) -> None:
    found = _ack(gates_data, acks, VERSIONS)
    assert [r.name for r in found.risks] == sorted(r.name for r in found.risks)
    assert all(r.name.removeprefix("AdminAck-") in gates_data for r in found.risks)
    assert all(acks.get(r.name.removeprefix("AdminAck-")) != "true" or r.message.startswith("admin-gates")
               for r in found.risks)


# --- upgradeable: ClusterOperators (pkg/risk/upgradeable) ---------------------------------------------------


def test_cluster_operators_not_upgradeable_one_risk_each_sorted() -> None:
    cos = [co("kube-apiserver", "False", "remove the deprecated plugin"), co("dns", "True"),
           co("etcd", "False", "migrating"), co("ingress", None)]
    found = cluster_operator_risks("ClusterOperatorUpgradeable", "4.21.0", cos, VERSIONS)
    assert found.risks == (Risk("ClusterOperatorUpgradeable-etcd", "migrating", UNDERSTANDING, ALWAYS_RULES),
                           Risk("ClusterOperatorUpgradeable-kube-apiserver", "remove the deprecated plugin",
                                UNDERSTANDING, ALWAYS_RULES))
    assert found.versions == {r.name: ("4.22.0", "5.0.0", "not-a-version") for r in found.risks}


def test_cluster_operators_all_upgradeable() -> None:
    assert cluster_operator_risks("ClusterOperatorUpgradeable", "4.21.0", [co("a", "True"), co("b", "Unknown")],
                                  VERSIONS) == SourcedRisks()


def test_cluster_operators_not_listed() -> None:
    found = cluster_operator_risks("ClusterOperatorUpgradeable", "4.21.0", Failed("the server is down"), ["4.21.3"])
    assert found == SourcedRisks((Risk("ClusterOperatorUpgradeableUnknown", "Failed to retrieve ClusterOperators to "
                                       "check Upgradeable conditions: the server is down", UNDERSTANDING, ALWAYS_RULES),),
                                 error="the server is down")


# --- OperatorConditions (cvo's source) ----------------------------------------------------------------------


def oc(name: str, namespace: str, status: str | None, message: str = "", override: str | None = None,
       generation: int = 1, observed: int = 1) -> OperatorCondition:
    spec: dict[str, Any] = {}
    body: dict[str, Any] = {"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
                            "metadata": {"name": name, "namespace": namespace, "generation": generation}, "spec": spec}
    if override is not None:
        spec["overrides"] = [{"type": "Upgradeable", "status": override, "reason": "Admin", "message": "by the admin"}]
    if status is not None:
        cond = {"type": "Upgradeable", "status": status, "reason": "R", "message": message}
        spec["conditions"] = [cond]
        body["status"] = {"conditions": [{**cond, "observedGeneration": observed}]}
    return OperatorCondition.read(body)


def test_operator_conditions_that_block() -> None:
    ocs = [oc("etcd", "openshift-etcd-operator", "False", "migrating"), oc("dns", "openshift-dns-operator", "True"),
           oc("beta", "openshift-beta", "True", override="False"), oc("gamma", "openshift-gamma", "False",
                                                                       override="True")]
    found = operator_condition_risks("OperatorConditionUpgradeable", "4.21.0", ocs, VERSIONS)
    assert [(r.name, r.message) for r in found.risks] == [
        ("OperatorConditionUpgradeable-openshift-beta.beta",
         "Operator beta should not be upgraded between minor or major versions: the operator is not upgradeable: "
         "by the admin (OperatorCondition openshift-beta/beta)"),
        ("OperatorConditionUpgradeable-openshift-etcd-operator.etcd",
         "Operator etcd should not be upgraded between minor or major versions: the operator is not upgradeable: "
         "migrating (OperatorCondition openshift-etcd-operator/etcd)")]
    assert found.versions == {r.name: ("4.22.0", "5.0.0", "not-a-version") for r in found.risks}


def test_operator_condition_outdated_unless_assumed_synced() -> None:
    stale = oc("etcd", "openshift-etcd-operator", "True", generation=2, observed=1)
    found = operator_condition_risks("OperatorConditionUpgradeable", "4.21.0", [stale], ())
    assert 'the operatorcondition status "Upgradeable"="True" is outdated' in found.risks[0].message
    assert operator_condition_risks("OperatorConditionUpgradeable", "4.21.0", [stale], (),
                                    assume_synced=True) == SourcedRisks()


def test_operator_conditions_not_listed() -> None:
    found = operator_condition_risks("OperatorConditionUpgradeable", "4.21.0", Failed("forbidden"), ())
    assert found.risks[0].name == "OperatorConditionUpgradeableUnknown" and found.error == "forbidden"


# --- aggregate (pkg/risk/aggregate) ---------------------------------------------------------------------------


def test_aggregate_joins_versions_and_keeps_the_first_definition() -> None:
    a, b = _risk("A", "a"), _risk("B", "b")
    found = combine([("one", SourcedRisks((a,), {"A": ("4.22.0",)})),
                     ("two", SourcedRisks((a, b), {"A": ("4.22.0", "5.0.0"), "B": ("5.0.0",)}, "grumble"))])
    assert found == SourcedRisks((a, b), {"A": ("4.22.0", "5.0.0"), "B": ("5.0.0",)}, "grumble")


def test_aggregate_divergent_definitions_are_an_error() -> None:
    found = combine([("one", SourcedRisks((_risk("A", "a"),))), ("two", SourcedRisks((_risk("A", "other"),)))])
    assert found.risks == (_risk("A", "a"),)
    assert found.error.startswith('divergent definitions of risk "A" from "two":')


def test_aggregate_ignores_conditions_when_comparing() -> None:
    plain, with_condition = _risk("A", "a"), Risk("A", "a", DOCS, ALWAYS_RULES, ({"type": "Applies"},))
    assert combine([("one", SourcedRisks((plain,))), ("two", SourcedRisks((with_condition,)))]).error == ""


# --- the sources as RiskSources --------------------------------------------------------------------------------


def test_sources_answer_the_risk_source_protocol() -> None:
    version = const("4.21.0")
    sources: list[RiskSource] = [
        Updating(const(cv(progressing="True"))), Overrides(const(cv(unmanaged=True))),
        Deletion(version, lambda: [Ref("", "Namespace", "", "gone")]),
        AdminAck(version, const(cm({"ack-4.21-a": "A."})), const(None)),
        ClusterOperatorUpgradeable(version, const([co("etcd", "False", "m")])),
        OperatorConditionUpgradeable(version, const([oc("etcd", "ns", "False", "m")]))]
    aggregate = Aggregate(*sources)
    assert aggregate.name == ("Aggregate(ClusterVersionUpdating, ClusterVersionOverrides, ResourceDeletionInProgress, "
                              "AdminAck, ClusterOperatorUpgradeable, OperatorConditionUpgradeable)")
    found = asyncio.run(aggregate.risks(["4.22.0", "4.21.1"]))
    assert [r.name for r in found.risks] == [
        "ClusterVersionUpdating", "ClusterVersionOverrides", "ResourceDeletionInProgress", "AdminAck-ack-4.21-a",
        "ClusterOperatorUpgradeable-etcd", "OperatorConditionUpgradeable-ns.etcd"]
    assert set(found.versions.values()) == {("4.22.0",)}


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                        max_size=3), max_leaves=8)


@given(st.dictionaries(st.sampled_from(["data", "metadata", "kind"]), json_values, max_size=3),
       st.dictionaries(st.sampled_from(["data", "metadata"]), json_values, max_size=2))
def test_admin_ack_config_maps_of_any_shape(gates_cm: dict[str, Any], acks_cm: dict[str, Any]) -> None:
    """What a ConfigMap read may hold: only string values of a ``data`` mapping count."""
    found = admin_ack_risks("AdminAck", "4.21.0", gates_cm, acks_cm, VERSIONS)
    assert found.error == ""
    data = gates_cm.get("data")
    keys = {k for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else set()
    assert {r.name.removeprefix("AdminAck-") for r in found.risks} <= keys
