"""cvo run's /metrics families against pkg/cvo/metrics_test.go's cases (``Test_operatorMetrics_Collect``,
``Test_operatorMetrics_CollectTransitions``, ``TestCollectUnknownConditionalUpdates``,
``Test_collectConditionalUpdateRisks``), rendered to the text format and read back with Prometheus' parser."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.metrics import helps, render, samples, snapshot_of


def t(seconds: int) -> str:
    return f"1970-01-01T00:00:{seconds:02d}Z"


def cv(**status: Any) -> dict[str, Any]:
    spec = status.pop("spec", {})
    created = status.pop("created", 2)
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
            "metadata": {"name": "version", "creationTimestamp": t(created)}, "spec": spec, "status": status}


def co(name: str, *conditions: dict[str, Any], operator: str = "") -> dict[str, Any]:
    versions = [{"name": "operator", "version": operator}, {"name": "operand", "version": operator + "-2"}]
    return {"metadata": {"name": name}, "status": {"versions": versions if operator else [],
                                                   "conditions": list(conditions)}}


def series(exposition: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for s in samples(exposition, name)]


def version_series(exposition: str) -> list[tuple[str, str, str, str, float]]:
    return [(s.labels["type"], s.labels["version"], s.labels["image"], s.labels["from_version"], s.value)
            for s in samples(exposition, "cluster_version")]


DESIRED = {"version": "0.0.2", "image": "test/image:1"}


def test_no_cluster_version_is_cluster_version_not_found() -> None:
    out = render(snapshot_of())
    assert series(out, "cluster_operator_up") == [({"name": "version", "version": "", "reason": "ClusterVersionNotFound"},
                                                   0.0)]
    assert series(out, "cluster_operator_conditions") == [
        ({"name": "version", "condition": "Available", "reason": "ClusterVersionNotFound"}, 0.0)]
    assert version_series(out) == [("current", "", "", "", 0.0)]
    for family in ("cluster_version_available_updates", "cluster_version_capability",
                   "cluster_version_conditional_update_condition_seconds", "cluster_version_risk_conditions",
                   "cluster_operator_condition_transitions",
                   "cluster_version_operator_update_retrieval_timestamp_seconds"):
        assert f"# TYPE {family} gauge" in out and samples(out, family) == [], family


def test_completed_history() -> None:
    out = render(snapshot_of(cv(desired=DESIRED, history=[
        {"state": "Partial", "version": "0.0.2", "image": "test/image:1", "startedTime": t(2)},
        {"state": "Completed", "version": "0.0.1", "image": "test/image:0", "completionTime": t(4)}])))
    assert version_series(out) == [
        ("completed", "0.0.1", "test/image:0", "", 4.0),
        ("initial", "0.0.1", "test/image:0", "", 2.0),
        ("cluster", "0.0.2", "test/image:1", "0.0.1", 2.0),
        ("updating", "0.0.2", "test/image:1", "0.0.1", 2.0),
        ("current", "0.0.2", "test/image:1", "0.0.1", 0.0)]


def test_completed_history_with_prior_completion() -> None:
    out = render(snapshot_of(cv(desired={"version": "0.0.3", "image": "test/image:2"}, history=[
        {"state": "Partial", "version": "0.0.3", "image": "test/image:2", "startedTime": t(2)},
        {"state": "Completed", "version": "0.0.2", "image": "test/image:1", "completionTime": t(4)},
        {"state": "Completed", "version": "0.0.1", "image": "test/image:0", "completionTime": t(4)}])))
    assert version_series(out) == [
        ("completed", "0.0.2", "test/image:1", "0.0.1", 4.0),
        ("initial", "0.0.1", "test/image:0", "", 2.0),
        ("cluster", "0.0.3", "test/image:2", "0.0.1", 2.0),
        ("updating", "0.0.3", "test/image:2", "0.0.2", 2.0),
        ("current", "0.0.3", "test/image:2", "0.0.2", 0.0)]


def test_partial_history_only() -> None:
    out = render(snapshot_of(cv(desired=DESIRED, history=[{"state": "Partial", "completionTime": t(2)}])))
    assert version_series(out) == [
        ("initial", "", "", "", 2.0),
        ("cluster", "0.0.2", "test/image:1", "", 2.0),  # never reached a level: no initial version
        ("updating", "", "", "", 0.0),  # no startedTime: 0, as the CVO's zero time
        ("current", "0.0.2", "test/image:1", "", 0.0)]


def test_cluster_operators_up_and_conditions() -> None:
    out = render(snapshot_of(
        None,
        co("bare", operator="10.1.5-1"),
        co("down", {"type": "Available", "status": "False"}, operator="10.1.5-1"),
        co("degraded", {"type": "Available", "status": "True"}, {"type": "Degraded", "status": "True"},
           operator="10.1.5-1"),
        co("custom", {"type": "Available", "status": "True"}, {"type": "Custom", "status": "False",
                                                                "reason": "CustomReason"},
           {"type": "Unknown", "status": "Unknown"})))
    assert series(out, "cluster_operator_up") == [
        ({"name": "version", "version": "", "reason": "ClusterVersionNotFound"}, 0.0),
        ({"name": "bare", "version": "10.1.5-1", "reason": "NoAvailableCondition"}, 0.0),
        ({"name": "custom", "version": "", "reason": ""}, 1.0),
        ({"name": "degraded", "version": "10.1.5-1", "reason": ""}, 1.0),
        ({"name": "down", "version": "10.1.5-1", "reason": ""}, 0.0)]
    assert series(out, "cluster_operator_conditions")[1:] == [
        ({"name": "custom", "condition": "Available", "reason": ""}, 1.0),
        ({"name": "custom", "condition": "Custom", "reason": "CustomReason"}, 0.0),  # Unknown left out
        ({"name": "degraded", "condition": "Available", "reason": ""}, 1.0),
        ({"name": "degraded", "condition": "Degraded", "reason": ""}, 1.0),
        ({"name": "down", "condition": "Available", "reason": ""}, 0.0)]


def test_available_updates_counted_and_zero_once_retrieved() -> None:
    two = render(snapshot_of(cv(availableUpdates=[{"version": "1.0.1"}, {"version": "1.0.2"}])))
    assert series(two, "cluster_version_available_updates") == [({"upstream": "<default>", "channel": ""}, 2.0)]
    retrieved = render(snapshot_of(cv(conditions=[{"type": "RetrievedUpdates", "status": "True",
                                                   "reason": "Because stuff"}])))
    assert series(retrieved, "cluster_version_available_updates") == [({"upstream": "<default>", "channel": ""}, 0.0)]
    assert series(retrieved, "cluster_operator_conditions") == [
        ({"name": "version", "condition": "RetrievedUpdates", "reason": "Because stuff"}, 1.0)]
    # an upstream alone is enough; the process's --update-service wins over spec.upstream
    upstream = cv(spec={"upstream": "https://example.com/graph", "channel": "stable-4.16"},
                  conditions=[{"type": "RetrievedUpdates", "status": "False", "reason": "VersionNotFound"}])
    assert series(render(snapshot_of(upstream)), "cluster_version_available_updates") == [
        ({"upstream": "https://example.com/graph", "channel": "stable-4.16"}, 0.0)]
    assert series(render(snapshot_of(upstream, update_service="https://other")), "cluster_version_available_updates") \
        == [({"upstream": "https://other", "channel": "stable-4.16"}, 0.0)]
    assert samples(render(snapshot_of(cv(conditions=[{"type": "RetrievedUpdates", "status": "False"}]))),
                   "cluster_version_available_updates") == []


def test_desired_update_and_available_condition() -> None:
    out = render(snapshot_of(cv(spec={"desiredUpdate": {"version": "1.0.0", "image": "test/image:2"}}, desired=DESIRED,
                                conditions=[{"type": "Available", "status": "True", "lastTransitionTime": t(5),
                                             "reason": "Because stuff"}])))
    assert version_series(out) == [
        ("initial", "", "", "", 2.0), ("cluster", "0.0.2", "test/image:1", "", 2.0),
        ("desired", "1.0.0", "test/image:2", "", 5.0), ("current", "0.0.2", "test/image:1", "", 0.0)]
    assert series(out, "cluster_operator_up") == [({"name": "version", "version": "", "reason": "Because stuff"}, 1.0)]
    assert series(out, "cluster_operator_conditions") == [
        ({"name": "version", "condition": "Available", "reason": "Because stuff"}, 1.0)]


def test_failing_update_and_failing_image() -> None:
    failing = {"type": "Failing", "status": "True", "lastTransitionTime": t(4), "reason": "Because stuff"}
    out = render(snapshot_of(cv(spec={"desiredUpdate": {"version": "1.0.0", "image": "test/image:2"}}, created=5,
                                desired=DESIRED, conditions=[failing], history=[
                                    {"state": "Completed", "version": "0.0.2", "image": "test/image:1",
                                     "completionTime": t(2)}])))
    assert version_series(out) == [
        ("completed", "0.0.2", "test/image:1", "", 2.0), ("initial", "0.0.2", "test/image:1", "", 5.0),
        ("cluster", "0.0.2", "test/image:1", "0.0.2", 5.0), ("desired", "1.0.0", "test/image:2", "0.0.2", 5.0),
        ("failure", "1.0.0", "test/image:2", "0.0.2", 4.0), ("current", "0.0.2", "test/image:1", "0.0.2", 0.0)]
    assert series(out, "cluster_operator_conditions") == [
        ({"name": "version", "condition": "Failing", "reason": "Because stuff"}, 1.0)]
    image = render(snapshot_of(cv(desired=DESIRED, conditions=[{**failing, "lastTransitionTime": None}])))
    assert ("failure", "0.0.2", "test/image:1", "", 0.0) in version_series(image)


def test_condition_transitions_counted_on_updates_only() -> None:
    snapshot = snapshot_of(None, co("test"))
    for conditions in ([{"type": "Available", "status": "True"}, {"type": "Custom", "status": "False"}],
                       [{"type": "Available", "status": "False"}, {"type": "Custom", "status": "False"},
                        {"type": "Unknown", "status": "Unknown"}],
                       [{"type": "Custom", "status": "True"}, {"type": "Unknown", "status": "True"}]):
        snapshot.set_cluster_operator("test", co("test", *conditions))
    snapshot.set_cluster_operator("gone", co("gone", {"type": "Available", "status": "True"}))  # an add: nothing
    snapshot.set_cluster_operator("gone", None)
    snapshot.set_cluster_operator("gone", co("gone", {"type": "Available", "status": "False"}))  # an add again
    assert series(render(snapshot), "cluster_operator_condition_transitions") == [
        ({"name": "test", "condition": "Available"}, 3.0), ({"name": "test", "condition": "Custom"}, 2.0),
        ({"name": "test", "condition": "Unknown"}, 2.0)]


def recommended(version: str, status: str, reason: str, when: int, type_: str = "Recommended") -> dict[str, Any]:
    return {"release": {"version": version, "image": "pullspec"}, "risks": [{"name": "Risk"}],
            "conditions": [{"type": type_, "status": status, "reason": reason, "message": "m",
                            "lastTransitionTime": t(when)}]}


def test_conditional_update_condition_seconds() -> None:
    out = render(snapshot_of(cv(conditionalUpdates=[
        recommended("4.13.1", "False", "RiskApplies", 3), recommended("4.13.2", "True", "RiskDoesNotApply", 4),
        recommended("4.13.3", "Unknown", "EvaluationFailed", 5),
        recommended("4.13.4", "Unknown", "NoIdea", 6, type_="SomethingElseThanRecommended")])))
    assert series(out, "cluster_version_conditional_update_condition_seconds") == [
        ({"version": "4.13.1", "condition": "Recommended", "status": "False", "reason": "RiskApplies"}, 3.0),
        ({"version": "4.13.2", "condition": "Recommended", "status": "True", "reason": "RiskDoesNotApply"}, 4.0),
        ({"version": "4.13.3", "condition": "Recommended", "status": "Unknown", "reason": "EvaluationFailed"}, 5.0)]


def test_risk_conditions_only_under_the_accept_risks_gate() -> None:
    def risk(name: str, status: str, type_: str = "Applies") -> dict[str, Any]:
        return {"name": name, "conditions": [{"type": type_, "status": status, "reason": "ReasonA", "message": "m",
                                              "lastTransitionTime": t(1)}]}

    status = cv(conditionalUpdateRisks=[risk("RiskF", "False"), risk("RiskT", "True"), risk("RiskU", "Unknown"),
                                        risk("RiskX", "False", type_="Recommended")])
    assert samples(render(snapshot_of(status)), "cluster_version_risk_conditions") == []
    assert series(render(snapshot_of(status, accept_risks=True)), "cluster_version_risk_conditions") == [
        ({"condition": "Applies", "risk": "RiskF", "reason": "ReasonA"}, 0.0),
        ({"condition": "Applies", "risk": "RiskT", "reason": "ReasonA"}, 1.0),
        ({"condition": "Applies", "risk": "RiskU", "reason": "ReasonA"}, -1.0)]


def test_capabilities_enabled_then_known() -> None:
    out = render(snapshot_of(cv(capabilities={"enabledCapabilities": ["baremetal", "Console"],
                                              "knownCapabilities": ["Console", "Insights", "baremetal", "Storage"]})))
    assert series(out, "cluster_version_capability") == [
        ({"name": "baremetal"}, 1.0), ({"name": "Console"}, 1.0), ({"name": "Insights"}, 0.0),
        ({"name": "Storage"}, 0.0)]


def test_update_retrieval_timestamp_from_the_kept_updates() -> None:
    snapshot = snapshot_of(cv())
    assert samples(render(snapshot), "cluster_version_operator_update_retrieval_timestamp_seconds") == []
    snapshot.set_update_retrieval(1_700_000_000.75)
    assert series(render(snapshot), "cluster_version_operator_update_retrieval_timestamp_seconds") == [
        ({"name": ""}, 1_700_000_000.0)]


def test_help_texts_are_the_cvos() -> None:
    docs = helps(render(snapshot_of()))
    assert docs["cluster_version"].startswith("Reports the version of the cluster in terms of seconds since\nthe epoch.")
    assert "the value is the most \nrecent status transition time." in docs["cluster_version"]
    assert docs["cluster_version"].endswith("penultimate completed version for 'completed'.\n.")
    assert docs["cluster_version_capability"] == ("Report currently enabled cluster capabilities.  0 is disabled, "
                                                  "and 1 is enabled.")
    assert docs["cluster_version_risk_conditions"] == ("Report the risk conditions for the cluster version. -1 is "
                                                       "Unknown, 0 is False and 1 is True.")
    assert docs["cluster_operator_condition_transitions"] == ("Reports the number of times that a condition on a "
                                                              "cluster operator changes status")
    assert docs["cluster_version_operator_update_retrieval_timestamp_seconds"] == (
        "Reports when updates were last successfully retrieved.")
    assert docs["cluster_version_conditional_update_condition_seconds"] == (
        "Reports when the Recommended condition status on a conditional update changed to its current state.")


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3), max_leaves=12)
fields = st.sampled_from(["conditions", "history", "desired", "availableUpdates", "conditionalUpdates",
                          "conditionalUpdateRisks", "capabilities"])


@settings(max_examples=200, deadline=None)
@given(status=st.dictionaries(fields, json_values, max_size=5), spec=st.dictionaries(
    st.sampled_from(["desiredUpdate", "upstream", "channel"]), json_values, max_size=3),
    operator_status=st.dictionaries(st.sampled_from(["conditions", "versions"]), json_values, max_size=2))
def test_any_status_renders(status: dict[str, Any], spec: dict[str, Any], operator_status: dict[str, Any]) -> None:
    """Whatever shape the watched objects have (a server that does not validate), a scrape answers."""
    snapshot = snapshot_of({"metadata": {"name": "version"}, "spec": spec, "status": status},
                           {"metadata": {"name": "x"}, "status": operator_status}, accept_risks=True)
    snapshot.set_cluster_operator("x", {"metadata": {"name": "x"}, "status": status})  # an update: transitions
    snapshot.set_cluster_operator("y", {"metadata": {"name": "y"}, "status": operator_status})
    assert samples(render(snapshot), "cluster_version")[-1].labels["type"] == "current"
    snapshot.set_cluster_version("version", {"metadata": {"name": "version"}, "status": {
        "capabilities": {"enabledCapabilities": operator_status.get("conditions"),
                         "knownCapabilities": operator_status.get("versions")}}})
    assert samples(render(snapshot), "cluster_version")[-1].labels["type"] == "current"
