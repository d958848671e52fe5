"""``cvo install``, ``cvo upgrade``, ``cvo reconcile`` and ``cvo status`` with a state file.

Exit codes (README): 0 success; 1 the sweep ran and failed (the failing condition's message on
stderr), or there is no cluster yet; 2 bad input, one ``error:`` line and no traceback; 130
interrupted.  Everything but the Ctrl-C test runs on the virtual clock, in process; the subprocess
tests check ``python -m cvo``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cvo.cli.main import main
from cvo.log import configure
from tests.support.helpers import PAYLOADS, REPO, state_kind, state_objects

OLD = str(PAYLOADS / "demo-4.16.0")
PATCH = str(PAYLOADS / "demo-4.16.3")
MINOR = str(PAYLOADS / "demo-4.17.0")
DEMO_OPERATORS = ["authentication", "config-operator", "console", "dns", "etcd", "image-registry", "ingress",
                  "kube-apiserver", "kube-controller-manager", "kube-scheduler", "machine-config", "monitoring",
                  "network", "openshift-samples", "storage"]
REPORT_KEYS = {"ok", "completed", "attempts", "message", "done", "total", "simulatedSeconds", "wallSeconds", "lastProgress",
               "clusterVersion", "clusterOperators"}



def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def assert_usage_error(code: int, err: str, needle: str) -> None:
    assert code == 2
    assert len(error_lines(err)) == 1, err
    assert needle in error_lines(err)[0]
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("sweep") / "cluster.json"
    try:
        assert main(["install", OLD, "--state", str(state)]) == 0
    finally:
        configure("text", 0)
    return state


@pytest.fixture
def state(installed: Path, tmp_path: Path) -> str:
    """A private copy of a cluster that runs 4.16.0."""
    path = tmp_path / "cluster.json"
    shutil.copy(installed, path)
    return str(path)


def status_json(capsys: pytest.CaptureFixture[str], state: str) -> dict[str, Any]:
    code, out, err = cli(capsys, "status", "--state", state, "-o", "json")
    assert code == 0, err
    return json.loads(out)


def history(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(h["version"], h["state"]) for h in doc["clusterVersion"]["status"]["history"]]


def condition(cv: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in cv["status"]["conditions"] if c["type"] == type_)


def cv_history_in_state_file(path: Path) -> list[dict[str, Any]]:
    cvs = state_kind(path, "ClusterVersion")
    assert len(cvs) == 1
    return cvs[0]["status"]["history"]


def assert_no_cluster(code: int, err: str) -> None:
    assert code == 1
    assert len(error_lines(err)) == 1, err
    assert "no cluster has been installed yet" in error_lines(err)[0]
    assert "Traceback" not in err


# --- success ---------------------------------------------------------------------------------------------------


def test_install_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = str(tmp_path / "cluster.json")
    code, out, err = cli(capsys, "install", OLD, "--state", state, "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert set(report) == REPORT_KEYS
    assert (report["ok"], report["completed"], report["message"]) == (True, True, "")
    assert report["done"] == report["total"] > 100
    assert report["attempts"] >= 1
    assert report["simulatedSeconds"] > 0 and report["wallSeconds"] >= 0
    cv = report["clusterVersion"]
    entry = cv["status"]["history"][0]
    assert entry["startedTime"] <= report["lastProgress"] <= entry["completionTime"]  # the CVO's LastProgress
    assert (cv["kind"], cv["metadata"]["name"]) == ("ClusterVersion", "version")
    assert [(h["version"], h["state"]) for h in cv["status"]["history"]] == [("4.16.0", "Completed")]
    assert condition(cv, "Available")["status"] == "True"
    assert condition(cv, "Failing")["status"] == "False"
    assert sorted(co["metadata"]["name"] for co in report["clusterOperators"]) == DEMO_OPERATORS
    assert Path(state).exists()


def test_status_json_shape(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    doc = status_json(capsys, state)
    assert {"clusterVersion", "clusterOperators"} <= set(doc)
    assert isinstance(doc.get("operatorConditions", []), list)
    assert doc["clusterVersion"]["kind"] == "ClusterVersion"
    names = [co["metadata"]["name"] for co in doc["clusterOperators"]]
    assert names == sorted(names) == DEMO_OPERATORS
    for co in doc["clusterOperators"]:
        assert {"name": "operator", "version": "4.16.0"} in co["status"]["versions"]
    assert history(doc) == [("4.16.0", "Completed")]


def test_status_text(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "status", "--state", state)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:6] == ["NAME", "VERSION", "AVAILABLE", "PROGRESSING", "SINCE", "STATUS"]
    assert lines[1].split()[:4] == ["version", "4.16.0", "True", "False"]
    assert "Cluster version is 4.16.0" in lines[1]
    assert any(line.split()[:2] == ["etcd", "4.16.0"] for line in lines)


def test_reconcile_and_patch_upgrade(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "reconcile", "--state", state)
    assert code == 0, err
    assert history(status_json(capsys, state)) == [("4.16.0", "Completed")]

    code, out, err = cli(capsys, "upgrade", "--to", PATCH, "--state", state, "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert set(report) == REPORT_KEYS
    assert report["ok"] and report["completed"]
    doc = status_json(capsys, state)
    assert history(doc) == [("4.16.3", "Completed"), ("4.16.0", "Completed")]
    assert all({"name": "operator", "version": "4.16.3"} in co["status"]["versions"]
               for co in doc["clusterOperators"])

    code, _, err = cli(capsys, "reconcile", "--state", state)  # the current release, from the CV's image
    assert code == 0, err
    code, _, err = cli(capsys, "upgrade", "--to", PATCH, "--state", state)  # already there
    assert code == 0
    assert "already runs 4.16.3" in err


def test_minor_upgrade(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "upgrade", "--to", MINOR, "--state", state)
    assert code == 0, err
    doc = status_json(capsys, state)
    assert history(doc) == [("4.17.0", "Completed"), ("4.16.0", "Completed")]
    names = [co["metadata"]["name"] for co in doc["clusterOperators"]]
    assert "olm" in names  # new in 4.17.0


# --- failure: exit 1 with the failing condition's message -------------------------------------------------------


def test_failed_install_exits_1_with_the_failing_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    operators = tmp_path / "operators.yaml"
    operators.write_text("dns: {never-available: true}\n")
    state = str(tmp_path / "cluster.json")
    code, out, err = cli(capsys, "install", OLD, "--state", state, "--operators", str(operators),
                         "--timeout", "20m", "-o", "json")
    assert code == 1
    report = json.loads(out)
    assert (report["ok"], report["completed"]) == (False, False)
    failing = condition(report["clusterVersion"], "Failing")
    assert failing["status"] == "True"
    assert failing["message"] == "Cluster operator dns is not available"
    assert report["message"] == failing["message"]
    assert error_lines(err) == [f"error: {failing['message']}"]
    assert "Operands never become available (simulated)" in err  # the nested detail
    assert "Traceback" not in err
    doc = status_json(capsys, state)
    assert history(doc) == [("4.16.0", "Partial")]


def test_failed_upgrade_exits_1(state: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    operators = tmp_path / "operators.yaml"
    operators.write_text("etcd: {never-versions: true}\n")
    code, out, err = cli(capsys, "upgrade", "--to", PATCH, "--state", state, "--operators", str(operators),
                         "--timeout", "45m", "-o", "json")
    assert code == 1
    report = json.loads(out)
    assert set(report) == REPORT_KEYS
    assert (report["ok"], report["completed"]) == (False, False)
    assert report["message"] == "Cluster operator etcd is updating versions"
    assert error_lines(err) == [f"error: {report['message']}"]
    failing = condition(report["clusterVersion"], "Failing")  # slow, not failed: Unknown
    assert (failing["status"], failing["reason"]) == ("Unknown", "SlowClusterOperator")
    assert failing["message"] == "waiting on etcd over 30 minutes which is longer than expected"
    doc = status_json(capsys, state)
    assert history(doc)[0] == ("4.16.3", "Partial")


# --- bad input: exit 2, one error line ---------------------------------------------------------------------------


def test_install_twice_does_nothing_another_install_is_bad_input(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = state_objects(Path(state))
    code, out, err = cli(capsys, "install", OLD, "--state", state)  # as upgrade --to the current release
    assert (code, out) == (0, "")
    assert "the cluster already runs 4.16.0: nothing to do" in err and not error_lines(err)
    code, _, err = cli(capsys, "install", PATCH, "--state", state)
    assert_usage_error(code, err, "the cluster already runs 4.16.0; use 'cvo upgrade --to DIR'")
    assert state_objects(Path(state)) == before


def test_upgrade_reconcile_and_status_before_install_say_there_is_no_cluster(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "cluster.db"
    for args in (["upgrade", "--to", PATCH], ["upgrade", "--to", PATCH, "--dry-run"], ["reconcile"], ["status"],
                 ["override", "etcd", "Upgradeable=True"]):
        code, out, err = cli(capsys, *args, "--state", str(state))
        assert_no_cluster(code, err)
        assert out == ""
        assert not state.exists()  # a read, or a change to what is there, creates no cluster


def test_reconcile_refuses_another_release(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A reconcile of 4.17.0 on a 4.16.0 cluster would move it there past every gate: refused."""
    before = state_objects(Path(state))
    code, _, err = cli(capsys, "reconcile", "--release", MINOR, "--state", state)
    assert_usage_error(code, err, "is release 4.17.0, but the cluster runs 4.16.0")
    assert f"cvo upgrade --to {MINOR}" in error_lines(err)[0]
    assert state_objects(Path(state)) == before
    assert history(status_json(capsys, state)) == [("4.16.0", "Completed")]


def test_reconcile_of_the_current_release_from_another_directory(state: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    moved = tmp_path / "moved-4.16.0"
    shutil.copytree(OLD, moved)
    code, _, err = cli(capsys, "reconcile", "--release", str(moved), "--state", state)
    assert code == 0, err
    doc = status_json(capsys, state)
    assert history(doc) == [("4.16.0", "Completed")]


def test_installing_another_release_over_a_partial_install_is_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    operators = tmp_path / "operators.yaml"
    operators.write_text("dns: {never-available: true}\n")
    state = str(tmp_path / "cluster.json")
    assert cli(capsys, "install", OLD, "--state", state, "--operators", str(operators), "--timeout", "10m")[0] == 1
    code, _, err = cli(capsys, "install", PATCH, "--state", state)
    assert_usage_error(code, err, "the cluster is installing 4.16.0, not 4.16.3")


@pytest.mark.parametrize(("args", "needle"), [
    (["install", "/nonexistent/release"], "/nonexistent/release"),
    (["install", OLD, "--timeout", "soon"], "--timeout: 'soon' is not a duration"),
    (["install", OLD, "--interval", "-"], "--interval"),
    (["install", OLD, "--capabilities", "Warp"], "unknown capability Warp"),
    (["install", OLD, "--feature-set", "Bogus"], "unknown feature set"),
    (["upgrade", "--to", "/nonexistent/release"], "/nonexistent/release"),
])
def test_bad_flags_and_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                             needle: str) -> None:
    state = tmp_path / "cluster.json"
    code, out, err = cli(capsys, *args, "--state", str(state))
    assert_usage_error(code, err, needle)
    assert out == ""
    assert not state.exists()


def test_bad_operators_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    operators = tmp_path / "operators.yaml"
    operators.write_text("etcd: {teleport: true}\n")
    code, _, err = cli(capsys, "install", OLD, "--state", str(tmp_path / "c.json"), "--operators", str(operators))
    assert_usage_error(code, err, "unknown behaviour 'teleport'")
    code, _, err = cli(capsys, "install", OLD, "--state", str(tmp_path / "c.json"),
                       "--operators", str(tmp_path / "missing.yaml"))
    assert_usage_error(code, err, f"{tmp_path / 'missing.yaml'}: file not found")


def test_corrupt_state_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "cluster.json"
    state.write_text("{not json")
    for args in (["install", OLD], ["status"], ["upgrade", "--to", PATCH], ["reconcile"]):
        code, _, err = cli(capsys, *args, "--state", str(state))
        assert_usage_error(code, err, f"{state}: not a cvo state file")
    assert state.read_text() == "{not json"


@pytest.mark.parametrize(("make", "needle"), [
    (lambda p: p.mkdir(), "is a directory, not a state file"),
    (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200), "corrupt state database"),
    (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256))), "not a cvo state file"),
    (lambda p: p.write_text(json.dumps({"format": 1, "resource_version": 1, "uid_counter": 0,
                                        "clock_time": "2025-01-01T00:00:00Z", "history": "x", "objects": "x"})),
     "objects must be a list"),
])
def test_unusable_state_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          make: Any, needle: str) -> None:
    state = tmp_path / "state"
    make(state)
    for args in (["install", OLD], ["status"], ["upgrade", "--to", PATCH]):
        code, out, err = cli(capsys, *args, "--state", str(state))
        assert_usage_error(code, err, needle)
        assert error_lines(err)[0].startswith(f"error: {state}: ")
        assert out == ""


def run_cvo(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "cvo", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=timeout)


def test_python_m_cvo_bad_input_exits_2_without_a_traceback(tmp_path: Path) -> None:
    state = str(tmp_path / "cluster.db")
    proc = run_cvo("install", "/nonexistent/release", "--state", state)
    assert_usage_error(proc.returncode, proc.stderr, "/nonexistent/release")
    assert proc.stdout == ""
    for args in (["upgrade", "--to", PATCH], ["status"]):
        proc = run_cvo(*args, "--state", state)
        assert_no_cluster(proc.returncode, proc.stderr)
        assert proc.stdout == ""


def test_python_m_cvo_state_file_round_trip(installed: Path, tmp_path: Path) -> None:
    state = tmp_path / "cluster.json"
    shutil.copy(installed, state)
    proc = run_cvo("status", "--state", str(state), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert history(json.loads(proc.stdout)) == [("4.16.0", "Completed")]
    proc = run_cvo("install", PATCH, "--state", str(state))
    assert_usage_error(proc.returncode, proc.stderr, "already runs 4.16.0")


# --- Ctrl-C: exit 130, a consistent state file, and the rerun resumes --------------------------------------------


def test_ctrl_c_leaves_a_consistent_state_and_the_rerun_resumes(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Every write is in the store when it returns; the interrupted install left a consistent one."""
    state = tmp_path / "cluster.json"
    log = tmp_path / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # machine-config never becomes Available in this run: the install certainly has not ended at the Ctrl-C
    operators = tmp_path / "operators.yaml"
    operators.write_text("machine-config: {never-available: true}\n")
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cvo", "--log-format", "json", "install", OLD, "--state", str(state),
             "--speed", "60", "--operators", str(operators)],
            stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=REPO,
            # A shell without job control starts background jobs with SIGINT ignored: undo that.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            deadline = time.monotonic() + 60
            ready = 0
            while time.monotonic() < deadline and proc.poll() is None:
                lines = log.read_text().splitlines()
                ready = sum(1 for line in lines[:-1] if '"event": "operator.ready"' in line)  # whole lines only
                if ready >= 3:  # 3 of 15 ClusterOperators are up: well under way, far from done
                    break
                time.sleep(0.05)
            assert proc.poll() is None, "the install ended before it could be interrupted"
            assert ready >= 3, "no progress within 60 s"
            assert not any(json.loads(line).get("event") == "sweep.completed"
                           for line in log.read_text().splitlines() if line.startswith("{"))
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert code == 130, log.read_text()[-2000:]
    assert '"level":"error","event":"error","message":"interrupted"' in log.read_text()  # JSON, as the log
    assert "Traceback" not in log.read_text()

    entries = cv_history_in_state_file(state)  # valid JSON, one ClusterVersion
    assert [(h["version"], h["state"]) for h in entries] == [("4.16.0", "Partial")]
    started = entries[0]["startedTime"]

    code, _, err = cli(capsys, "install", OLD, "--state", str(state))
    assert code == 0, err
    entries = cv_history_in_state_file(state)
    assert [(h["version"], h["state"]) for h in entries] == [("4.16.0", "Completed")]
    assert entries[0]["startedTime"] == started  # the entry was resumed, not replaced
    assert history(status_json(capsys, str(state))) == [("4.16.0", "Completed")]
