"""Issue 24, finding 16: when ``cvo run`` drives the upgrade, ``cvo upgrade`` on a terminal shows the same live
panel as a sweep run here, fed from the cluster (the ClusterVersion's progress, the ClusterOperators it waits
on, what blocks it and the exact command past it), not raw log lines.

Real processes on one embedded cluster: the controller at ``--speed 20``, the command on an 80×24
pseudo-terminal whose screen a terminal emulator (pyte) keeps.  Synchronised on what the screen and the
controller's log show, never on sleeps.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pyte
import pytest

from tests.support.helpers import PAYLOADS, REPO

OPS = str(PAYLOADS / "demo-operators.yaml")
ENV = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR", "COLUMNS", "LINES", "CVO_STATE")}


def cvo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cvo", *args], cwd=REPO, env=ENV, capture_output=True, text=True,
                          timeout=240, check=False)


def started(log: Path) -> bool:
    for line in log.read_text().splitlines():
        try:
            if json.loads(line).get("event") == "controller.started":
                return True
        except ValueError:
            continue
    return False


def test_cvo_upgrade_shows_the_live_panel_of_an_update_the_controller_runs(tmp_path: Path) -> None:
    state = str(tmp_path / "s.db")
    for argv in (["install", str(PAYLOADS / "demo-4.16.0")], ["upgrade", "--to", str(PAYLOADS / "demo-4.16.3")]):
        done = cvo(*argv, "--state", state, "--operators", OPS)
        assert done.returncode == 0, done.stderr
    log = tmp_path / "run.jsonl"
    with log.open("w") as err:
        ctl = subprocess.Popen([sys.executable, "-m", "cvo", "-v", "--log-format", "json", "run", "--state", state,
                                "--identity", "ctl", "--releases", str(PAYLOADS), "--speed", "20", "--listen", "none",
                                "--interval", "60s", "--operators", OPS], stdout=subprocess.DEVNULL, stderr=err,
                               env=ENV, cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        while not started(log):
            assert ctl.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the controller did not start"
            time.sleep(0.05)
        screens = _follow_on_a_terminal(state)
    finally:
        if ctl.poll() is None:
            ctl.kill()
        ctl.wait()
    code, seen, blocked, overridden_at = screens
    text = "\n".join("\n".join(s) for s in seen)
    assert code == 0, "\n".join(seen[-1])
    assert "upgrade.progress" not in text and "controller=ctl" not in text  # no raw log lines
    # blocked: who blocks, and the exact command past it, on this cluster
    assert blocked[1].startswith("upgrade to 4.17.0 by the controller ctl: blocked by ClusterVersionUpgradeable")
    command = _override_shown(blocked)
    assert command is not None
    assert shlex.split("\n".join(command).replace("\\\n", "")) == [
        "cvo", "override", "etcd", "Upgradeable=True", "--reason", "AdminAcknowledged", "--message",
        "upgrade reviewed", "--state", state]
    # then the update as the controller runs it: the header, the bar, its status, the operators waited on
    updating = [s for s in seen[overridden_at:] if any(re.match(r"upgrade to 4\.17\.0 by the controller ctl +\d+/158 "
                                                                r"tasks$", line) for line in s)]
    assert updating, text[-3000:]
    assert any(any(re.fullmatch(r"[━╺─]+", line) for line in s) for s in updating)  # the bar, on a line of its own
    assert any(any(line.startswith("status: Working towards 4.17.0: ") for line in s) for s in updating)
    rows = {(m[1], m[2]) for s in updating for line in s
            if (m := re.match(r"^([a-z][a-z0-9-]*) +(\d+s|\d+m\d\ds)  \S", line))}
    names = {name for name, _ in rows}
    assert names & {"etcd", "kube-apiserver", "config-operator"}, rows
    assert any(len({f for n, f in rows if n == name}) > 1 for name in names), rows  # "for" counts on
    assert all(len(line) <= 80 for s in seen for line in s)
    assert any(re.match(r"sim \d\d:\d\d:\d\d Working towards 4\.17\.0", line) for s in updating for line in s)
    assert any(line.startswith("completed by the controller ctl: ") for line in seen[-1]), "\n".join(seen[-1])


def _override_shown(shown: list[str]) -> list[str] | None:
    """The lines of the ``cvo override`` command on a blocked screen, once drawn whole."""
    at = next((i for i, line in enumerate(shown) if line.startswith("  cvo override ")), None)
    if at is None:
        return None
    command = [shown[at]]
    while command[-1].endswith("\\") and at + 1 < len(shown) and shown[at + 1]:
        at += 1
        command.append(shown[at])
    return None if command[-1].endswith("\\") else command


def _follow_on_a_terminal(state: str) -> tuple[int, list[list[str]], list[str], int]:
    """Run ``cvo upgrade --to 4.17.0`` on an 80×24 terminal; once its blocked panel shows the way past etcd,
    override etcd from another command.  Returns the exit code, every screen, the blocked one, and the index of
    the first screen after the override."""
    screen = pyte.Screen(80, 24)
    stream = pyte.ByteStream(screen)
    env = {**ENV, "TERM": "xterm-256color", "PYTHONPATH": str(REPO)}
    child = pexpect.spawn(sys.executable, ["-m", "cvo", "upgrade", "--to", str(PAYLOADS / "demo-4.17.0"), "--state",
                                           state], cwd=str(REPO), env=env, dimensions=(24, 80), timeout=240)
    seen: list[list[str]] = []
    blocked: list[str] = []
    overridden_at = -1
    try:
        while True:
            try:
                stream.feed(child.read_nonblocking(65536, timeout=240))
            except pexpect.EOF:
                break
            shown = [line.rstrip() for line in screen.display]
            if screen.cursor.x > 0:  # the line being written: not whole yet
                shown[screen.cursor.y] = ""
            seen.append(shown)
            if not blocked and _override_shown(shown) is not None:
                blocked = shown
                done = cvo("override", "etcd", "Upgradeable=True", "--reason", "MigrationVerified", "--message",
                           "checked", "--state", state)
                assert done.returncode == 0, done.stderr
                overridden_at = len(seen)
    finally:
        child.close()
    if not blocked:
        pytest.fail("the blocked panel never showed the command past etcd:\n" + "\n".join(seen[-1] if seen else []))
    return child.exitstatus if child.exitstatus is not None else -1, seen, blocked, overridden_at
