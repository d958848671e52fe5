"""A scenario's simulated monitoring: its answers to PromQL risks, changed by ``monitoring`` actions; bad
sections are one ScenarioError naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.scenario.model import ScenarioError, load_scenario, monitoring_problem
from cvo.scenario.replay import replay

BASE = """name: m
cluster: {installed: %s}
actions: [{at: 1m, wait: true}]
expect: {result: completed}
"""
INSTALLED = Path(__file__).resolve().parents[2] / "scenarios" / "payloads" / "gate-4.16.0"


def scenario(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(BASE % INSTALLED + extra)
    return path


def test_answers_and_actions_are_read(tmp_path: Path) -> None:
    s = load_scenario(scenario(tmp_path, "monitoring: {'up == 0': 1, 'x': 0, 'y': true, 'z': 'boom'}\n"))
    assert s.monitoring == {"up == 0": True, "x": False, "y": True, "z": "boom"}
    path = tmp_path / "t.yaml"
    path.write_text(BASE % INSTALLED + "")
    assert load_scenario(path).monitoring is None


def test_a_monitoring_action_alone_turns_the_simulated_monitoring_on(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(f"cluster: {{installed: {INSTALLED}}}\nactions: [{{at: 1m, monitoring: {{q: 1}}}}]\n"
                    "expect: {result: completed}\n")
    assert load_scenario(path).monitoring == {}


@pytest.mark.parametrize(("section", "problem"), [
    ("monitoring: []\n", "monitoring: expected a mapping of PromQL query to 0, 1 or an error's text"),
    ("monitoring: {q: 2}\n", "monitoring: q: 2 is no answer: 0, 1 (the query's one sample) or the text of the error"),
    ("monitoring: {q: ''}\n", "monitoring: q: '' is no answer"),
    ("monitoring: {q: [1]}\n", "monitoring: q: [1] is no answer"),
    ("monitoring: {'': 1}\n", "monitoring: '': a query is non-empty text"),
])
def test_bad_sections(tmp_path: Path, section: str, problem: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario(scenario(tmp_path, section))
    assert str(err.value).startswith(f"{tmp_path / 's.yaml'}: {problem}")


def test_bad_action(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(f"cluster: {{installed: {INSTALLED}}}\nactions: [{{at: 1m, monitoring: {{q: 0.5}}}}]\n"
                    "expect: {result: completed}\n")
    with pytest.raises(ScenarioError, match=r"actions\[0\] \(monitoring\): q: 0.5 is no answer"):
        load_scenario(path)


@settings(max_examples=200)
@given(st.one_of(st.none(), st.integers(), st.text(), st.lists(st.integers()),
                 st.dictionaries(st.one_of(st.text(), st.integers()),
                                 st.one_of(st.integers(), st.floats(), st.text(), st.booleans(), st.none()))))
def test_any_value_is_an_answer_set_or_a_problem(value: object) -> None:
    problem = monitoring_problem(value)
    assert problem is None or problem


def test_without_a_monitoring_section_conditional_updates_are_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "n.yaml"
    path.write_text(f"""cluster: {{installed: {INSTALLED}}}
actions:
  - at: 1m
    patch-status:
      {{apiVersion: config.openshift.io/v1, kind: ClusterVersion, name: version,
        merge: {{status: {{conditionalUpdates: [{{release: {{version: 4.16.3, image: x}}, risks: []}}]}}}}}}
expect: {{result: completed}}
""")
    out = replay(load_scenario(path))
    assert out.cluster_version["status"]["conditionalUpdates"] == [{"release": {"version": "4.16.3", "image": "x"},
                                                                    "risks": []}]


def test_without_the_gate_an_accepted_risk_is_ignored_and_nothing_gated_is_written() -> None:
    path = Path(__file__).resolve().parents[2] / "scenarios" / "conditional-update-accept-risks.yaml"
    gated = load_scenario(path)
    assert gated.feature_set == "TechPreviewNoUpgrade"
    gated.feature_set = "Default"
    status = replay(gated).cluster_version["status"]
    (update,) = status["conditionalUpdates"]
    assert (update["conditions"][0]["status"], update["conditions"][0]["reason"]) == ("False", "EtcdDegraded")
    assert "riskNames" not in update and "conditions" not in update["risks"][0]
    assert "conditionalUpdateRisks" not in status and status["availableUpdates"] is None


def test_an_unknown_feature_set_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"options\.feature-set: expected one of Default, TechPreviewNoUpgrade"):
        load_scenario(scenario(tmp_path, "options: {feature-set: Sometimes}\n"))


def test_an_update_to_a_release_whose_risks_were_accepted_records_them_in_its_history_entry(tmp_path: Path) -> None:
    """The upgrade action keeps ``acceptRisks``; the sweep's writer extends the history entry of the update with
    the risks the status's conditional update to it names (pkg/cvo/status.go, under the gate)."""
    source = Path(__file__).resolve().parents[2] / "scenarios" / "conditional-update-accept-risks.yaml"
    target = source.parent / "payloads" / "gate-4.16.3"
    text = source.read_text().replace("payloads/gate-4.16.0", str(source.parent / "payloads" / "gate-4.16.0"))
    text = text.replace('"quay.io/openshift-release-dev/ocp-release@sha256:4163"', f'"file://{target}"')
    text = text.replace("  - {at: 6m, wait: true}\n", f"  - {{at: 6m, upgrade: {target}}}\n  - {{at: 40m, wait: true}}\n")
    text = text[:text.index("expect:")] + "expect: {result: completed}\n"
    path = tmp_path / "accepted.yaml"
    path.write_text(text)
    cv = replay(load_scenario(path)).cluster_version
    assert cv["spec"]["desiredUpdate"]["acceptRisks"] == [{"name": "EtcdDegraded"}]
    head = cv["status"]["history"][0]
    assert (head["version"], head["state"]) == ("4.16.3", "Completed")
    assert head["acceptedRisks"] == (f"The target release file://{target} is exposed to the risks [EtcdDegraded] which "
                                     "were all explicitly accepted by the cluster administrator.")
    assert "acceptedRisks" not in cv["status"]["history"][1]
