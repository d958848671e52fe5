"""Scenario replays: every scenarios/*.yaml must pass, and the replay harness must be able to fail.

``test_scenario`` replays each scenario file (one test id per file) on the virtual clock and asserts
that every expectation holds; a failure lists each failing check with what actually happened.  The
other tests check the engine itself: a wrong expectation is a FAIL, malformed files raise
:class:`ScenarioError` naming the file and the key, and ``cvo replay`` exits 0 / 1 / 2.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from cvo.cli.main import main
from cvo.scenario.expect import evaluate
from cvo.scenario.model import EXPECTATIONS, ScenarioError, load_scenario
from cvo.scenario.replay import replay

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((REPO / "scenarios").glob("*.yaml"))
DOCS = REPO / "docs" / "scenarios.md"
SMALL = REPO / "scenarios" / "payloads" / "job-barrier"  # a 14-manifest release: replays in milliseconds


def _run(path: Path) -> list:
    return evaluate(replay(load_scenario(path)))


# --- every scenario file -----------------------------------------------------------------------


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    outcome = replay(load_scenario(path))
    checks = evaluate(outcome)
    bad = [c for c in checks if not c.ok]
    if bad:
        details = "\n".join(f"  FAIL {c.name}: {c.detail}" for c in bad)
        pytest.fail(f"{path.name}: {len(bad)} of {len(checks)} expectations failed (result {outcome.result}, "
                    f"{outcome.elapsed / 60:.1f} simulated minutes); replay with `cvo replay {path}`:\n{details}",
                    pytrace=False)


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 20
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", p.stem) for p in SCENARIOS), "names are kebab-case"


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_is_described_and_documented(path: Path) -> None:
    raw = yaml.safe_load(path.read_text())
    assert str(raw.get("name") or "").strip(), f"{path.name}: no name"
    assert len(str(raw.get("description") or "").split()) >= 15, f"{path.name}: say what it shows and why it matters"
    assert raw.get("expect"), f"{path.name}: no expectations"
    assert "timeout" in (raw.get("options") or {}), f"{path.name}: bound the simulated time with options.timeout"
    assert f"`{path.stem}`" in DOCS.read_text(), f"{path.name} is not listed in docs/scenarios.md"


# --- the harness can fail ----------------------------------------------------------------------


def _write(tmp_path: Path, text: str, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text.replace("SMALL", str(SMALL)))
    return path


GOOD = """
name: small install
description: the dedicated job-barrier release installs
operators:
  default: {delay: 1m}
options: {timeout: 20m}
actions:
  - install: SMALL
expect:
  result: completed
"""


def test_a_passing_scenario_passes(tmp_path: Path) -> None:
    checks = _run(_write(tmp_path, GOOD))
    assert [c.ok for c in checks] == [True]


@pytest.mark.parametrize("expect", [
    "result: timeout",
    "elapsed: {max: 1m}",
    "conditions: [{type: Failing, status: 'True'}]",
    "conditions: [{type: Progressing, message-contains: nowhere}]",
    "conditions: [{type: Available, message-matches: '^Done applying 9'}]",
    "history: {count: 2}",
    "history: [{version: 1.0.0, state: Partial}]",
    "operators: [{name: alpha, version: 2.0.0}]",
    "operators: [{name: nobody}]",
    "operators: [{name: alpha, upgrading: 'True'}]",
    "events: [{name: sweep.timeout}]",
    "events: [{name: sweep.completed, absent: true}]",
    "events: [{name: sweep.completed, count: 2}]",
    "events: [{name: sweep.completed, before: 1m}]",
    "events: [{name: sweep.completed, from: 30m}]",
    "events: [{name: operator.ready, operator: alpha, waited-matches: '^0'}]",
    "order: [[operator:gamma, operator:alpha]]",
    "order: [[operator:alpha, deployment \"nowhere/nothing\"]]",
    "objects: [{kind: Job, apiVersion: batch/v1, namespace: openshift-migrator, name: migrate-storage, absent: true}]",
    "objects: [{kind: Deployment, apiVersion: apps/v1, namespace: openshift-alpha, name: alpha-operator, "
    "fields: {spec/replicas: 2}}]",
    "objects: [{kind: Deployment, namespace: openshift-alpha, name: alpha-operator, fields: {spec/paused: true}}]",
    "objects: [{kind: ConfigMap, namespace: openshift-alpha, name: missing}]",
    "upgrade-status: [{assessment: Stalled}]",
    "upgrade-status: [{at: 1m, assessment: not updating}]",
    "upgrade-status: [{at: 2h, assessment: Progressing}]",
    "upgrade-status: [{at: 1m, contains: 'Update is proceeding badly'}]",
])
def test_a_wrong_expectation_fails(tmp_path: Path, expect: str) -> None:
    path = _write(tmp_path, GOOD.replace("  result: completed", "  " + expect))
    checks = _run(path)
    bad = [c for c in checks if not c.ok]
    assert bad, f"{expect} should have failed: {[(c.name, c.detail) for c in checks]}"
    assert all(c.detail for c in bad)


def test_the_right_variants_of_those_expectations_pass(tmp_path: Path) -> None:
    expect = """
  result: completed
  elapsed: {min: 6m, max: 6m}
  conditions:
    - {type: Failing, status: "False"}
    - {type: Progressing, message-contains: Cluster version}
    - {type: Available, message-matches: '^Done applying 1\\.0\\.0$'}
    - {type: Invalid, absent: true}
  history: {count: 1, entries: [{version: 1.0.0, state: Completed}]}
  operators:
    - {name: alpha, version: 1.0.0, available: "True", upgrading: null}
  events:
    - {name: sweep.completed, count: 1, after: 2m, before: 6m}
    - {name: operator.ready, operator: alpha, from: 4m, until: 5m}
    - {name: sweep.timeout, absent: true}
  order:
    - [deployment "openshift-alpha/alpha-operator", operator:alpha, job "openshift-migrator/migrate-storage"]
  objects:
    - {kind: Deployment, apiVersion: apps/v1, namespace: openshift-alpha, name: alpha-operator, fields: {spec/replicas: 1}}
    - kind: Deployment
      namespace: openshift-alpha
      name: alpha-operator
      fields: {spec/template/spec/containers/0/image-contains: "alpha-operator:1.0.0"}
    - {kind: ConfigMap, namespace: openshift-alpha, name: missing, absent: true}
"""
    path = _write(tmp_path, GOOD.replace("operators:\n  default: {delay: 1m}",
                                         "operators:\n  default: {delay: 1m}\n  alpha: {delay: 5m}")
                  .replace("expect:\n  result: completed\n", "expect:" + expect))
    checks = _run(path)
    assert [(c.name, c.detail) for c in checks if not c.ok] == []
    assert len(checks) == 17


# --- malformed files ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "key"), [
    ("name: [unclosed", "invalid YAML"),
    ("- just\n- a list\n", "mapping at the top"),
    (GOOD + "colour: blue\n", "'colour'"),
    (GOOD.replace("actions:\n  - install: SMALL", "actions:\n  - deploy: SMALL"), "actions[0]"),
    (GOOD.replace("actions:\n  - install: SMALL", "actions:\n  - install SMALL"), "actions[0]"),
    (GOOD.replace("actions:\n  - install: SMALL", "actions:\n  - {at: soon, install: SMALL}"), "actions[0].at"),
    (GOOD.replace("actions:\n  - install: SMALL", "actions: []"), "no actions"),
    (GOOD.replace("default: {delay: 1m}", "default: {speed: 1m}"), "operators.default"),
    (GOOD.replace("default: {delay: 1m}", "default: {delay: fast}"), "operators.default.delay"),
    (GOOD.replace("options: {timeout: 20m}", "options: {timeout: forever}"), "options.timeout"),
    (GOOD.replace("result: completed", "result: succeeded"), "expect.result"),
    (GOOD.replace("result: completed", "results: completed"), "'results'"),
    (GOOD.replace("result: completed", "events: {name: sweep.completed}"), "expect.events"),
])
def test_a_malformed_file_names_the_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(path) in str(err.value)
    assert key in str(err.value)


@pytest.mark.parametrize(("expect", "key"), [
    ("elapsed: 5m", "expect.elapsed"),
    ("elapsed: {max: soon}", "expect.elapsed.max"),
    ("order: [[operator:alpha]]", "expect.order"),
    ("events: [{operator: alpha}]", "expect.events"),
    ("events: [{name: sweep.completed, after: later}]", "expect.events.after"),
    ("events: [{name: sweep.complete}]", "no event is named 'sweep.complete'"),  # a typo is no silent miss
    ("events: [{name: operator.ready, operater-contains: alpha}]", "operator.ready has no field 'operater'"),
    ("objects: [{name: alpha-operator}]", "expect.objects"),
    ("conditions: [Failing]", "expect.conditions"),
    ("upgrade-status: [{when: 1m}]", "expect.upgrade-status"),
    ("upgrade-status: [{at: soon}]", "expect.upgrade-status.at"),
    ("upgrade-status: [{details: everything}]", "expect.upgrade-status.details"),
])
def test_a_malformed_expectation_names_the_file_and_key(tmp_path: Path, expect: str, key: str) -> None:
    path = _write(tmp_path, GOOD.replace("result: completed", expect))
    with pytest.raises(ScenarioError) as err:
        _run(path)
    assert str(path) in str(err.value)
    assert key in str(err.value)


@pytest.mark.parametrize(("action", "key"), [
    ("{at: 7m, patch: {kind: ConfigMap, namespace: openshift-alpha, name: missing, merge: {}}}", "actions[1] (patch)"),
    ("{at: 7m, upgrade: ../nowhere}", "actions[1] (upgrade)"),
    ("{at: 7m, fail-requests: {kind: Deployment, error: Gremlins}}", "actions[1] (fail-requests)"),
    ("{at: 7m, set-condition: {clusteroperator: alpha}}", "actions[1] (set-condition)"),
])
def test_a_malformed_action_names_the_file_and_action(tmp_path: Path, action: str, key: str) -> None:
    path = _write(tmp_path, GOOD.replace("  - install: SMALL", "  - install: SMALL\n  - " + action))
    with pytest.raises(ScenarioError) as err:
        _run(path)
    assert str(path) in str(err.value)
    assert key in str(err.value)


def test_the_model_and_the_checks_agree() -> None:
    from cvo.scenario.expect import CHECKS

    assert set(CHECKS) == set(EXPECTATIONS)


# --- the engine's own behaviour ----------------------------------------------------------------


def test_an_upgrade_during_an_install_waits_for_the_install(tmp_path: Path) -> None:
    """The CVO ignores a version change while initializing (pkg/cvo/sync_worker.go `SyncWorker.Update`)."""
    payloads = REPO / "scenarios" / "payloads"
    text = GOOD.replace("  - install: SMALL", f"  - install: {payloads / 'failed-branch-1.0.0'}\n"
                                             f"  - {{at: 30s, upgrade: {payloads / 'failed-branch-1.1.0'}}}")
    outcome = replay(load_scenario(_write(tmp_path, text)))
    names = [e.name for e in outcome.events]
    assert "sweep.deferred" in names and "sweep.cancelled" not in names
    started = [(e.fields["mode"], e.fields["version"]) for e in outcome.events if e.name == "sweep.started"]
    assert started == [("install", "1.0.0"), ("update", "1.1.0")]
    completed = [e.fields["version"] for e in outcome.events if e.name == "sweep.completed"]
    assert completed == ["1.0.0", "1.1.0"] and outcome.result == "completed"
    history = outcome.cluster_version["status"]["history"]
    assert [(h["version"], h["state"]) for h in history] == [("1.1.0", "Completed"), ("1.0.0", "Completed")]


def test_an_upgrade_during_a_failing_install_never_starts(tmp_path: Path) -> None:
    text = GOOD.replace("default: {delay: 1m}", "default: {delay: 1m}\n  alpha: {never-available: true}")
    path = _write(tmp_path, text.replace("  - install: SMALL", "  - install: SMALL\n  - {at: 1m, upgrade: SMALL}"))
    outcome = replay(load_scenario(path))
    assert [e.fields["mode"] for e in outcome.events if e.name == "sweep.started"] == ["install"]
    assert outcome.result == "timeout"


def test_objects_are_snapshot_at_the_end(tmp_path: Path) -> None:
    outcome = replay(load_scenario(_write(tmp_path, GOOD)))
    kinds = {(ref.kind, ref.name) for ref in outcome.objects}
    assert ("Job", "migrate-storage") in kinds
    assert ("ClusterVersion", "version") in kinds


# --- cvo replay exit codes ---------------------------------------------------------------------


def test_cvo_replay_exits_0_when_every_expectation_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "-q", str(_write(tmp_path, GOOD))]) == 0
    assert "PASS small install" in capsys.readouterr().out


def test_cvo_replay_exits_1_on_a_failed_expectation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _write(tmp_path, GOOD, "good.yaml")
    bad = _write(tmp_path, GOOD.replace("result: completed", "result: timeout"), "bad.yaml")
    assert main(["replay", "-q", str(good), str(bad)]) == 1
    captured = capsys.readouterr()
    assert "FAIL result is timeout: result was completed" in captured.out
    assert "1 passed, 1 failed" in captured.err


def test_cvo_replay_exits_2_on_a_malformed_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, GOOD + "colour: blue\n")
    assert main(["replay", str(path)]) == 2
    assert str(path) in capsys.readouterr().err


def test_cvo_replay_exits_2_on_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nope.yaml'}: file not found\n"


def test_cvo_replay_prints_the_timeline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(_write(tmp_path, GOOD))]) == 0
    out = capsys.readouterr().out
    assert "00:00:00 scenario.action action=install" in out
    assert "sweep.completed version=1.0.0" in out
    assert "task.applied" not in out
    assert main(["replay", "--all", str(_write(tmp_path, GOOD))]) == 0
    assert "task.applied" in capsys.readouterr().out


# --- releases as images -----------------------------------------------------------------------------


def test_a_scenario_names_releases_as_images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``oci:DIR:TAG`` relative to the scenario file, pulled into the image cache, replays as the directory does;
    an image that is not there is a ScenarioError naming the file, the action and the image."""
    from cvo.images.build import build_release
    from cvo.images.pull import PullOptions

    monkeypatch.setenv("CVO_CACHE_DIR", str(tmp_path / "cache"))
    build_release(REPO / "payloads" / "demo-4.16.0", f"oci:{tmp_path / 'images'}:4.16.0", PullOptions())
    build_release(REPO / "payloads" / "demo-4.16.3", f"oci:{tmp_path / 'images'}:4.16.3", PullOptions())
    scenario = tmp_path / "images.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "a patch upgrade between release images",
        "cluster": {"installed": "oci:images:4.16.0"},
        "operators": {"default": {"delay": "1m"}},
        "actions": [{"upgrade": "oci:images:4.16.3"}],
        "expect": {"result": "completed", "history": {"count": 2, "entries": [
            {"version": "4.16.3", "state": "Completed"}, {"version": "4.16.0", "state": "Completed"}]}},
    }))
    checks = _run(scenario)
    assert checks and all(c.ok for c in checks), [c for c in checks if not c.ok]
    scenario.write_text(scenario.read_text().replace("oci:images:4.16.3", "oci:images:4.99.9"))
    with pytest.raises(ScenarioError, match=r"images\.yaml: .*image oci:.*images:4\.99\.9: no image tagged '4\.99\.9'"):
        _run(scenario)
