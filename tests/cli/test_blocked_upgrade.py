"""A blocked upgrade as everyone else sees it, how its wait ends, and the blocks waiting cannot clear.

While ``cvo upgrade`` waits on etcd's block, ``cvo status``, ``cvo upgrade status`` and ``cvo upgrade`` show the
requested release and why it has not started (``ReleaseAccepted=False PreconditionChecks``); once the command is
stopped nothing is requested any more and none of them does.  The timeout that ends the wait says so, on which
clock, and how to wait longer.  A rollback that only ``--force`` passes fails at once.
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
from tests.cluster.test_store_processes import DEMO_OPERATORS, cvo, history, stop
from tests.controller.test_controller_processes import completed, poll, start_controller
from tests.support.helpers import PAYLOADS, REPO
from tests.support.pty_run import run_on_pty

OLD = str(PAYLOADS / "demo-4.16.0")
PATCH = str(PAYLOADS / "demo-4.16.3")
MINOR = str(PAYLOADS / "demo-4.17.0")
ETCD_BLOCKS = "etcd: {upgradeable: {after: 0s}, use-operator-condition: true}\n"
ENV = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR", "COLUMNS")}


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(list(args))
    finally:
        configure("text", 0)
    out, err = capsys.readouterr()
    return code, out, err


def errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def accepted(capsys: pytest.CaptureFixture[str], state: str) -> dict[str, Any]:
    code, out, _ = cli(capsys, "status", "--state", state, "-o", "json")
    assert code == 0
    conditions = json.loads(out)["clusterVersion"]["status"]["conditions"]
    return next(c for c in conditions if c["type"] == "ReleaseAccepted")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(state file, operators file) of a cluster running 4.16.0 whose etcd operator asks not to be upgraded."""
    root = tmp_path_factory.mktemp("blocked")
    operators = root / "operators.yaml"
    operators.write_text(ETCD_BLOCKS)
    state = root / "cluster.db"
    try:
        assert main(["install", OLD, "--state", str(state), "--operators", str(operators)]) == 0
    finally:
        configure("text", 0)
    return state, operators


@pytest.fixture
def cluster(installed: tuple[Path, Path], tmp_path: Path) -> tuple[str, str]:
    state = tmp_path / "cluster.db"
    shutil.copy(installed[0], state)
    return str(state), str(installed[1])


def test_a_waiting_upgrade_is_seen_by_every_view_and_forgotten_when_it_is_stopped(
        cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    state, operators = cluster
    waiting = subprocess.Popen([sys.executable, "-m", "cvo", "upgrade", "--to", MINOR, "--state", state,
                                "--operators", operators, "--speed", "60", "--timeout", "0"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        while accepted(capsys, state).get("reason") != "PreconditionChecks":
            assert waiting.poll() is None, "the upgrade ended before it was blocked"
            assert time.monotonic() < deadline, "the upgrade was not blocked within 120 s"
            time.sleep(0.1)

        code, out, _ = cli(capsys, "status", "--state", state)
        assert code == 0
        lines = out.splitlines()
        assert lines[1].startswith("version   4.16.0")  # the cluster runs 4.16.0 ...
        assert lines[3] == "4.17.0 requested, not started: ReleaseAccepted=False (PreconditionChecks)"  # ... and why
        assert lines[4].startswith('  Preconditions failed for payload loaded version="4.17.0"')
        assert any('ClusterVersionUpgradeable' in line and "etcd" in line for line in lines[5:8])
        code, wide, _ = cli(capsys, "status", "--state", state, "-o", "wide")
        assert wide.splitlines()[3] == lines[3]

        screen = run_on_pty(["status", "--state", state], columns=80, rows=24, cwd=str(REPO))  # a person's terminal
        assert screen.code == 0
        shown = screen.output.replace("\r\n", "\n").splitlines()
        assert all(len(line) <= 80 for line in shown)
        head = shown.index("4.17.0 requested, not started: ReleaseAccepted=False (PreconditionChecks)")
        assert shown[head - 2].startswith("version   4.16.0") and head < 24  # on the first screen
        assert "ClusterVersionUpgradeable" in " ".join(shown[head:head + 8])

        code, out, _ = cli(capsys, "upgrade", "status", "--state", state)
        assert code == 0
        assert out.splitlines()[:3] == ["The cluster is not updating.", "",
                                        "4.17.0 requested, not started: ReleaseAccepted=False (PreconditionChecks)"]
        code, out, _ = cli(capsys, "upgrade", "status", "--state", state, "-o", "json")
        pending = json.loads(out)["pendingRelease"]
        assert (pending["version"], pending["image"], pending["reason"]) == (
            "4.17.0", f"file://{MINOR}", "PreconditionChecks")

        code, out, _ = cli(capsys, "upgrade", "--state", state)  # as oc adm upgrade prints it
        assert "ReleaseAccepted=False\n\n  Reason: PreconditionChecks\n  Message: Preconditions failed for payload " \
               'loaded version="4.17.0"' in out

        waiting.send_signal(signal.SIGINT)  # the admin stops the waiting command
        _, err = waiting.communicate(timeout=120)
        assert waiting.returncode == 130, err
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()

    # Nothing asks for 4.17.0 any more: no view says it does.
    condition = accepted(capsys, state)
    assert (condition["status"], condition["reason"]) == ("True", "PayloadLoaded")
    assert condition["message"].startswith('Payload loaded version="4.16.0"')
    for args in (("status",), ("upgrade", "status"), ("upgrade",)):
        code, out, _ = cli(capsys, *args, "--state", state)
        assert code == 0 and "4.17.0" not in out and "ReleaseAccepted" not in out, (args, out)
    code, out, _ = cli(capsys, "upgrade", "status", "--state", state, "-o", "json")
    assert json.loads(out)["pendingRelease"] is None


def test_the_timeout_that_ends_the_wait_says_which_clock_and_how_to_wait_longer(
        cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    state, operators = cluster
    code, out, err = cli(capsys, "upgrade", "--to", MINOR, "--state", state, "--operators", operators,
                         "--speed", "3600", "--timeout", "1h")
    assert code == 1
    assert "blocked: the upgrade did not start" in out
    last = errors(err)[-1]
    assert last.startswith("error: the command's --timeout ended the wait after 1h on the simulated cluster's clock "
                           "(at --speed 3600: ")
    seconds = float(last.split("at --speed 3600: ")[1].split("s of real time")[0])
    assert 0.5 <= seconds < 30  # an hour at 3600x: about a second of real time
    assert last.endswith("s of real time); the cluster keeps 4.16.0. To wait longer: a longer --timeout, or "
                         "--timeout 0 for no limit")
    assert accepted(capsys, state)["status"] == "True"  # the request ended with the command


def test_the_end_of_a_blocked_upgrade_reads_whole_on_an_80_column_terminal(cluster: tuple[str, str]) -> None:
    state, operators = cluster
    screen = run_on_pty(["upgrade", "--to", MINOR, "--state", state, "--operators", operators, "--speed", "3600",
                         "--timeout", "30m"], columns=80, rows=24, cwd=str(REPO))
    assert screen.code == 1
    text = screen.output.replace("\r\n", "\n")
    assert "blocked: the upgrade did not start" in text
    assert "error: the command's --timeout ended the wait after 30m on the simulated cluster's clock (at --speed " \
           "3600: " in text
    assert "To wait longer: a longer --timeout, or --timeout 0 for no limit" in text  # nothing cut


def test_a_rollback_only_force_passes_fails_at_once(cluster: tuple[str, str], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    state, operators = cluster
    assert cli(capsys, "upgrade", "--to", MINOR, "--force", "--state", state, "--operators", operators)[0] == 0
    events = tmp_path / "events.jsonl"
    # --timeout 0: no limit. An upgrade that waited here would never end (the test's own timeout would fail it).
    code, out, err = cli(capsys, "upgrade", "--to", PATCH, "--timeout", "0", "--state", state, "--operators",
                         operators, "--events", str(events))
    assert code == 1
    assert "blocked: the upgrade did not start" in out
    assert errors(err)[0] == "error: upgrade to 4.16.3 is blocked: Multiple precondition checks failed:"
    assert any('"ClusterVersionRollback" failed because of "LowDesiredVersion": 4.16.3 is less than the current '
               "target 4.17.0, and the only supported rollback is to the cluster's previous version 4.16.0" in line
               for line in errors(err))
    assert errors(err)[-1] == ("error: ClusterVersionRollback blocks for good: waiting would not clear it, only --force "
                               "passes it (or choose another target); the cluster keeps 4.17.0")
    names = [json.loads(line)["event"] for line in events.read_text().splitlines()]
    assert "precondition.blocked" in names and "sweep.blocked" in names
    assert "sweep.started" not in names  # it did not even reconcile 4.17.0 while waiting: it did not wait
    condition = accepted(capsys, state)
    assert (condition["status"], condition["reason"]) == ("True", "PayloadLoaded")
    assert condition["message"].startswith('Payload loaded version="4.17.0"')


def test_a_block_that_can_clear_still_waits_for_the_operator_or_the_admin(
        cluster: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """etcd's Upgradeable=False is not force-only: the upgrade waits, reconciling 4.16.0 meanwhile."""
    state, operators = cluster
    events = tmp_path / "events.jsonl"
    code, _, err = cli(capsys, "upgrade", "--to", MINOR, "--timeout", "10m", "--state", state, "--operators",
                       operators, "--events", str(events))
    assert code == 1 and "blocks for good" not in err
    started = [json.loads(line) for line in events.read_text().splitlines()
               if json.loads(line)["event"] == "sweep.started"]
    assert started and all(e["mode"] == "reconcile" and e["version"] == "4.16.0" for e in started)


def test_a_controller_led_rollback_only_force_passes_ends_the_command_at_once(tmp_path: Path) -> None:
    """With ``cvo run`` leading, the controller holds the rollback at its gates (as the CVO does, until the admin
    changes spec.desiredUpdate); the command following it does not wait out its ``--timeout`` (here: none)."""
    state = tmp_path / "cluster.db"
    with (tmp_path / "run.jsonl").open("w") as log:
        ctl = start_controller(log, state, "--release", OLD, "--operators", DEMO_OPERATORS)
        try:
            poll("the controller's install of 4.16.0", completed(state, "4.16.0"), ctl)
            forced = cvo("upgrade", "--to", MINOR, "--force", "--state", str(state))
            assert forced.returncode == 0, forced.stderr
            rollback = cvo("upgrade", "--to", PATCH, "--timeout", "0", "--state", str(state))  # 0: no limit
            assert rollback.returncode == 1, rollback.stderr
            assert "\nblocked: the upgrade did not start" in rollback.stdout
            lines = errors(rollback.stderr)
            assert lines[0] == "error: upgrade to 4.16.3 is blocked: Multiple precondition checks failed:"
            assert lines[-1] == ("error: ClusterVersionRollback blocks for good: waiting would not clear it, only "
                                 "--force passes it; the controller keeps spec.desiredUpdate ('cvo upgrade --clear' "
                                 "withdraws it)")
            assert history(state)[0] == ("4.17.0", "Completed")
        finally:
            stop(ctl)
