"""Upgrade gates through the command line: ``cvo upgrade --dry-run``, ``--force``, ``cvo override``, ``cvo status``.

The demo release 4.16.0 is installed once per module with etcd reporting ``Upgradeable=False``
through its OperatorCondition (the library route: cvo injected ``OPERATOR_CONDITION_NAME`` into
its Deployment and created the object); each test starts from a copy of that state file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cvo.cli.main import main
from cvo.log import configure
from tests.support.helpers import PAYLOADS
from tests.support.helpers import state_objects as read_state_objects

OLD = str(PAYLOADS / "demo-4.16.0")
PATCH = str(PAYLOADS / "demo-4.16.3")
MINOR = str(PAYLOADS / "demo-4.17.0")
ETCD_BLOCKS = "etcd: {upgradeable: {after: 0s}, use-operator-condition: true}\n"
ETCD_MESSAGE = "The operator is migrating its data; do not upgrade now"
NO_CHANNEL = ('Precondition "ClusterVersionRecommendedUpdate" failed because of "NoChannel": Configured channel is '
              "unset, so the recommended status of updating from {} to {} is unknown.")
OC_NAME = "openshift-etcd-operator/etcd"



def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(state file, operators file) of a cluster running 4.16.0 whose etcd operator asks not to be upgraded."""
    root = tmp_path_factory.mktemp("gates")
    operators = root / "operators.yaml"
    operators.write_text(ETCD_BLOCKS)
    state = root / "cluster.json"
    try:
        assert main(["install", OLD, "--state", str(state), "--operators", str(operators)]) == 0
    finally:
        configure("text", 0)
    return state, operators


@pytest.fixture
def cluster(installed: tuple[Path, Path], tmp_path: Path) -> tuple[str, str]:
    """(--state, --operators) for this test: a private copy of the installed cluster."""
    state = tmp_path / "cluster.json"
    shutil.copy(installed[0], state)
    return str(state), str(installed[1])


def state_objects(state: str) -> list[dict[str, Any]]:
    return read_state_objects(Path(state))


def find(state: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    return next((o for o in state_objects(state) if o["kind"] == kind and o["metadata"]["name"] == name
                 and (namespace is None or o["metadata"].get("namespace") == namespace)), None)


def status_json(capsys: pytest.CaptureFixture[str], state: str) -> dict[str, Any]:
    code, out, _ = cli(capsys, "status", "--state", state, "-o", "json")
    assert code == 0
    return json.loads(out)


def cv_condition(doc: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in doc["clusterVersion"]["status"]["conditions"] if c["type"] == type_), None)


# --- the install wired the OperatorCondition up -------------------------------------------------------------


def test_install_creates_the_operator_condition_and_injects_its_name(cluster: tuple[str, str]) -> None:
    state, _ = cluster
    oc = find(state, "OperatorCondition", "etcd", "openshift-etcd-operator")
    assert oc is not None
    assert oc["spec"]["deployments"] == ["etcd-operator"]
    spec_cond = next(c for c in oc["spec"]["conditions"] if c["type"] == "Upgradeable")
    assert (spec_cond["status"], spec_cond["reason"], spec_cond["message"]) == ("False", "Migrating", ETCD_MESSAGE)
    status_cond = next(c for c in oc["status"]["conditions"] if c["type"] == "Upgradeable")
    assert status_cond["observedGeneration"] == oc["metadata"]["generation"]  # the sync ran
    deployment = find(state, "Deployment", "etcd-operator", "openshift-etcd-operator")
    assert deployment is not None
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        assert {"name": "OPERATOR_CONDITION_NAME", "value": "etcd"} in container["env"]
    role = find(state, "Role", "etcd", "openshift-etcd-operator")
    assert role is not None and role["rules"][0]["resourceNames"] == ["etcd"]
    assert find(state, "RoleBinding", "etcd", "openshift-etcd-operator") is not None


# --- dry runs ---------------------------------------------------------------------------------------------------


def test_dry_run_of_a_minor_update_is_blocked_and_says_how_to_override(
        cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    state, _ = cluster
    before = state_objects(state)
    code, out, _ = cli(capsys, "upgrade", "--to", MINOR, "--dry-run", "--state", state)
    assert code == 1
    assert "Upgrade from 4.16.0 to 4.17.0 (minor update)" in out
    assert "  PASS     ClusterVersionRollback" in out
    assert "  PASS     ClusterVersionGiantHop" in out
    assert ("  BLOCKED  ClusterVersionUpgradeable (RiskNameNotCompatibleWithReasonProperty): Operator etcd should "
            "not be upgraded between minor or major versions") in out
    assert "  WARNING  ClusterVersionRecommendedUpdate (NoChannel)" in out
    assert ETCD_MESSAGE in out and OC_NAME in out
    assert "  OperatorConditionUpgradeable-openshift-etcd-operator.etcd\n" in out
    assert "cvo override etcd Upgradeable=True" in out
    assert "--force" in out
    assert "Verdict: BLOCKED" in out
    assert before == state_objects(state)  # a dry run writes nothing


def test_dry_run_of_a_patch_update_passes(cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    state, _ = cluster
    code, out, _ = cli(capsys, "upgrade", "--to", PATCH, "--dry-run", "--state", state)
    assert code == 0
    assert "(patch update)" in out
    assert "  PASS     ClusterVersionUpgradeable" in out
    assert "Verdict: would proceed with warnings" in out  # only the NoChannel one
    assert out.count("  WARNING  ") == 1 and "  WARNING  ClusterVersionRecommendedUpdate (NoChannel)" in out


def test_dry_run_with_force_would_proceed_with_the_risk(cluster: tuple[str, str],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    state, _ = cluster
    code, out, _ = cli(capsys, "upgrade", "--to", MINOR, "--dry-run", "--force", "--state", state)
    assert code == 0
    assert "  WARNING  ClusterVersionUpgradeable (RiskNameNotCompatibleWithReasonProperty)" in out
    assert "Verdict: would proceed with warnings" in out
    assert "Forced through blocking failures:" in out


# --- the patch update goes through --------------------------------------------------------------------------------


def test_patch_update_goes_through_while_minor_updates_are_blocked(
        cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    state, operators = cluster
    code, _, err = cli(capsys, "upgrade", "--to", PATCH, "--state", state, "--operators", operators)
    assert code == 0, err
    doc = status_json(capsys, state)
    history = doc["clusterVersion"]["status"]["history"]
    assert [(h["version"], h["state"]) for h in history] == [("4.16.3", "Completed"), ("4.16.0", "Completed")]
    assert history[0]["acceptedRisks"] == NO_CHANNEL.format("4.16.0", "4.16.3")  # nothing else
    up = cv_condition(doc, "Upgradeable")  # still blocks minors
    assert up is not None and (up["status"], up["reason"]) == ("False", "RiskNameNotCompatibleWithReasonProperty")


# --- overrides --------------------------------------------------------------------------------------------------


def test_override_lets_the_minor_update_through_and_clear_removes_it(
        cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    state, _ = cluster
    code, out, err = cli(capsys, "override", "etcd", "Upgradeable=True", "--reason", "R", "--message", "M",
                         "--state", state)
    assert code == 0, err
    assert out.strip() == f"operatorcondition {OC_NAME}: spec.overrides Upgradeable=True (R)"
    oc = find(state, "OperatorCondition", "etcd")
    assert oc is not None
    assert [(o["type"], o["status"], o["reason"], o["message"]) for o in oc["spec"]["overrides"]] == [
        ("Upgradeable", "True", "R", "M")]
    assert oc["spec"]["conditions"][0]["status"] == "False"  # the operator's own report is untouched

    code, out, _ = cli(capsys, "upgrade", "--to", MINOR, "--dry-run", "--state", state)
    assert code == 0
    assert "  PASS     ClusterVersionUpgradeable" in out
    assert "Verdict: would proceed with warnings" in out

    code, out, err = cli(capsys, "override", "etcd", "--clear", "--state", state)
    assert code == 0, err
    assert out.strip() == f"operatorcondition {OC_NAME}: removed the Upgradeable override"
    oc = find(state, "OperatorCondition", "etcd")
    assert oc is not None and not oc["spec"].get("overrides")
    code, out, _ = cli(capsys, "upgrade", "--to", MINOR, "--dry-run", "--state", state)
    assert code == 1
    assert "BLOCKED  ClusterVersionUpgradeable" in out


def test_override_false_blocks_even_a_willing_operator(cluster: tuple[str, str],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    state, _ = cluster
    assert cli(capsys, "override", "etcd", "Upgradeable=False", "--message", "maintenance window", "--state",
               state)[0] == 0
    code, out, _ = cli(capsys, "upgrade", "--to", MINOR, "--dry-run", "--state", state)
    assert code == 1
    assert "the operator is not upgradeable: maintenance window" in out


def test_override_last_transition_time_moves_only_when_its_status_changes(
        cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """An override is a metav1.Condition: lastTransitionTime is "the last time the condition transitioned
    from one status to another" (operator-framework/enhancements enhancements/operator-conditions.md), so restating it with a new message keeps the time."""
    state, operators = cluster

    def override() -> dict[str, Any]:
        oc = find(state, "OperatorCondition", "etcd")
        assert oc is not None
        (entry,) = oc["spec"]["overrides"]
        return entry

    assert cli(capsys, "override", "etcd", "Upgradeable=True", "--message", "first", "--state", state)[0] == 0
    first = override()
    assert cli(capsys, "upgrade", "--to", PATCH, "--state", state, "--operators", operators)[0] == 0  # time passes
    assert cli(capsys, "override", "etcd", "Upgradeable=True", "--message", "second", "--state", state)[0] == 0
    second = override()
    assert second["message"] == "second"
    assert second["lastTransitionTime"] == first["lastTransitionTime"]
    assert cli(capsys, "override", "etcd", "Upgradeable=False", "--message", "third", "--state", state)[0] == 0
    assert override()["lastTransitionTime"] > first["lastTransitionTime"]


@pytest.mark.parametrize(("args", "needle"), [
    (["nosuch", "Upgradeable=True"], "no OperatorCondition named 'nosuch'"),
    (["etcd", "Upgradeable=Maybe"], "status must be True or False"),
    (["etcd", "Foo=True"], "'Foo' is not a condition OLM acts on"),
    (["etcd"], "give the override as TYPE=STATUS"),
])
def test_override_bad_input_exits_2_with_one_error_line(cluster: tuple[str, str], capsys: pytest.CaptureFixture[str],
                                                        args: list[str], needle: str) -> None:
    state, _ = cluster
    before = state_objects(state)
    code, out, err = cli(capsys, "override", *args, "--state", state)
    assert code == 2
    assert out == ""
    said = err.strip().splitlines()
    if said[0].startswith("cluster: "):  # which cluster, when the override got as far as opening it
        said = said[1:]
    assert said == error_lines(err)
    assert len(error_lines(err)) == 1
    assert needle in err
    assert "Traceback" not in err
    assert state_objects(state) == before


# --- --force --------------------------------------------------------------------------------------------------


def test_force_goes_through_the_block_and_records_the_accepted_risk(
        cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    state, operators = cluster
    code, _, err = cli(capsys, "upgrade", "--to", MINOR, "--force", "--state", state, "--operators", operators)
    assert code == 0, err
    doc = status_json(capsys, state)
    status = doc["clusterVersion"]["status"]
    assert status["desired"]["version"] == "4.17.0"
    top = status["history"][0]
    assert (top["version"], top["state"]) == ("4.17.0", "Completed")
    assert top["acceptedRisks"].startswith(
        'Forced through blocking failures: Multiple precondition checks failed:\n* Precondition '
        '"ClusterVersionUpgradeable" failed because of "RiskNameNotCompatibleWithReasonProperty": Operator etcd should '
        'not be upgraded between minor or major versions: ')
    assert ETCD_MESSAGE in top["acceptedRisks"]
    assert "acceptedRisks" not in status["history"][1]
    assert doc["clusterVersion"]["spec"]["desiredUpdate"]["force"] is True
    accepted = cv_condition(doc, "ReleaseAccepted")
    assert accepted is not None and accepted["status"] == "True"


# --- rollbacks and warnings ----------------------------------------------------------------------------------


def test_z_stream_rollback_goes_through_with_its_warning_recorded(cluster: tuple[str, str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    state, operators = cluster
    assert cli(capsys, "upgrade", "--to", PATCH, "--state", state, "--operators", operators)[0] == 0
    code, out, _ = cli(capsys, "upgrade", "--to", OLD, "--dry-run", "--state", state)
    assert code == 0
    assert "Upgrade from 4.16.3 to 4.16.0 (rollback)" in out
    assert "  PASS     ClusterVersionRollback" in out
    assert "  PASS     ClusterVersionUpgradeable" in out  # Upgradeable=False does not stop a downgrade
    assert "  WARNING  ClusterVersionRecommendedUpdate (NoChannel)" in out  # no channel: recommended or not?
    code, _, err = cli(capsys, "upgrade", "--to", OLD, "--state", state, "--operators", operators)
    assert code == 0, err
    entries = status_json(capsys, state)["clusterVersion"]["status"]["history"]
    assert [(h["version"], h["state"]) for h in entries] == [
        ("4.16.0", "Completed"), ("4.16.3", "Completed"), ("4.16.0", "Completed")]
    assert entries[0]["acceptedRisks"] == NO_CHANNEL.format("4.16.3", "4.16.0")


def test_minor_rollback_is_blocked(cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    state, operators = cluster
    assert cli(capsys, "upgrade", "--to", MINOR, "--force", "--state", state, "--operators", operators)[0] == 0
    code, out, _ = cli(capsys, "upgrade", "--to", PATCH, "--dry-run", "--state", state)
    assert code == 1
    assert ("  BLOCKED  ClusterVersionRollback (LowDesiredVersion): 4.16.3 is less than the current target 4.17.0, "
            "and the only supported rollback is to the cluster's previous version 4.16.0") in out
    code, out, _ = cli(capsys, "upgrade", "--to", OLD, "--dry-run", "--state", state)
    assert code == 1
    assert "rollbacks that change major or minor versions are not recommended" in out


# --- a blocked upgrade ------------------------------------------------------------------------------------------


def test_blocked_upgrade_gives_up_at_the_timeout(cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    state, operators = cluster
    code, out, err = cli(capsys, "upgrade", "--to", MINOR, "--timeout", "10m", "--state", state,
                         "--operators", operators)
    assert code == 1
    assert "blocked: the upgrade did not start" in out
    assert "is blocked" in err
    assert error_lines(err)[0] == 'error: upgrade to 4.17.0 is blocked: Multiple precondition checks failed:'
    assert ('* Precondition "ClusterVersionUpgradeable" failed because of "RiskNameNotCompatibleWithReasonProperty": '
            "Operator etcd should not be upgraded") in err
    assert "Traceback" not in err
    # the last line: what ended the wait, on which clock, how to wait longer
    assert error_lines(err)[-1].startswith(
        "error: the command's --timeout ended the wait after 10m on the simulated cluster's clock (as fast as it "
        "runs: ")
    assert error_lines(err)[-1].endswith(
        "s of real time); the cluster keeps 4.16.0. To wait longer: a longer --timeout, or --timeout 0 for no limit")

    # Nothing asks for 4.17.0 any more: the request ended with the command (tests/cli/test_blocked_upgrade.py
    # shows ReleaseAccepted=False while it waits).
    doc = status_json(capsys, state)
    accepted = cv_condition(doc, "ReleaseAccepted")
    assert accepted is not None
    assert (accepted["status"], accepted["reason"]) == ("True", "PayloadLoaded")
    assert accepted["message"].startswith(f'Payload loaded version="4.16.0" image="file://{OLD}"')
    status = doc["clusterVersion"]["status"]
    assert status["desired"]["version"] == "4.16.0"  # the payload was not adopted
    assert [(h["version"], h["state"]) for h in status["history"]] == [("4.16.0", "Completed")]
    up = cv_condition(doc, "Upgradeable")
    assert up is not None and (up["status"], up["reason"]) == ("False", "RiskNameNotCompatibleWithReasonProperty")
    assert all(v["version"] == "4.16.0" for co in doc["clusterOperators"]
               for v in co["status"]["versions"] if v["name"] == "operator")

    # The admin overrides; the next attempt goes ahead, with only the missing channel to record as a risk.
    assert cli(capsys, "override", "etcd", "Upgradeable=True", "--reason", "Reviewed", "--state", state)[0] == 0
    code, _, err = cli(capsys, "upgrade", "--to", MINOR, "--state", state, "--operators", operators)
    assert code == 0, err
    doc = status_json(capsys, state)
    top = doc["clusterVersion"]["status"]["history"][0]
    assert (top["version"], top["state"]) == ("4.17.0", "Completed")
    assert top["acceptedRisks"] == NO_CHANNEL.format("4.16.0", "4.17.0")
    accepted = cv_condition(doc, "ReleaseAccepted")
    assert accepted is not None and (accepted["status"], accepted["reason"]) == ("True", "PayloadLoaded")


# --- status ----------------------------------------------------------------------------------------------------


def test_status_text_shows_the_upgradeable_section(cluster: tuple[str, str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    state, _ = cluster
    code, out, _ = cli(capsys, "status", "--state", state)
    assert code == 0
    assert "Upgradeable: False (RiskNameNotCompatibleWithReasonProperty; ClusterVersion" in out
    assert "Operator etcd should not be upgraded between minor or major versions" in out
    row = next(line for line in out.splitlines() if line.startswith("operatorcondition") and OC_NAME in line)
    assert row.split()[:2] == ["operatorcondition", "(status)"]
    assert "False" in row and "Migrating" in row and ETCD_MESSAGE in row

    assert cli(capsys, "override", "etcd", "Upgradeable=True", "--reason", "R", "--message", "M",
               "--state", state)[0] == 0
    _, out, _ = cli(capsys, "status", "--state", state)
    row = next(line for line in out.splitlines() if line.startswith("operatorcondition") and OC_NAME in line)
    assert row.split()[:2] == ["operatorcondition", "(override)"]
    assert "True" in row


def test_status_json_lists_operator_conditions(cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    state, _ = cluster
    doc = status_json(capsys, state)
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in doc["operatorConditions"]
            if o["metadata"]["name"] == "etcd"] == [("openshift-etcd-operator", "etcd")]


# --- the dry run agrees with the real run ---------------------------------------------------------------------


def test_dry_run_after_override_edits_agrees_with_the_real_upgrade(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An override set and cleared bumps the OperatorCondition's generation; the real upgrade copies
    spec.conditions into status first (the sync), so it sees the operator's Upgradeable=True and
    proceeds.  The dry run must say the same ("exit 0 if the upgrade would start")."""
    operators = tmp_path / "operators.yaml"
    operators.write_text("etcd: {upgradeable: {after: 0s, for: 1m}, use-operator-condition: true}\n")
    state = str(tmp_path / "cluster.json")
    assert cli(capsys, "install", OLD, "--state", state, "--operators", str(operators))[0] == 0
    assert cli(capsys, "upgrade", "--to", MINOR, "--dry-run", "--state", state)[0] == 0  # etcd says True now

    assert cli(capsys, "override", "etcd", "Upgradeable=False", "--message", "hold", "--state", state)[0] == 0
    assert cli(capsys, "override", "etcd", "--clear", "--state", state)[0] == 0

    real = tmp_path / "real.json"
    shutil.copy(state, real)
    real_code, _, _ = cli(capsys, "upgrade", "--to", MINOR, "--state", str(real))
    assert real_code == 0  # the real upgrade is not blocked

    code, out, _ = cli(capsys, "upgrade", "--to", MINOR, "--dry-run", "--state", state)
    assert code == real_code, out
    assert "is outdated" not in out


# --- the live screen's headline ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("message", "who", "why"), [
    ('Precondition "ClusterVersionUpgradeable" failed because of "R": m', "ClusterVersionUpgradeable (R)", "m"),
    ('Multiple precondition checks failed:\n* Precondition "ClusterVersionUpgradeable" failed because of "R": m\n'
     '* Precondition "ClusterVersionRecommendedUpdate" failed because of "NoChannel": c',
     "ClusterVersionUpgradeable (R) and 1 more", "m"),
    ('Multiple precondition checks failed:\n* Precondition "ClusterVersionRecommendedUpdate" failed because of '
     '"NoChannel": c\n* Precondition "ClusterVersionGiantHop" failed because of "G": g',
     "ClusterVersionGiantHop (G) and 1 more", "g"),
    ("something else", "the preconditions", "something else"),
])
def test_blocked_headline_names_a_check_that_blocks(message: str, who: str, why: str) -> None:
    from cvo.cli.progress import blocked_headline

    assert blocked_headline(message) == (who, why)
