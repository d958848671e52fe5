"""``cvo status -w`` on a 24-row terminal: each change redraws one screen in place, the ClusterVersion's line
at its top, and Ctrl-C ends the watch without an error (as ``kubectl get -w``)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cvo.cli.status_cmd import CLEAR
from tests.support.helpers import PAYLOADS
from tests.support.pty_run import PtySession

OPERATORS = str(PAYLOADS / "demo-operators.yaml")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("watch") / "demo.db"
    for args in (["install", str(PAYLOADS / "demo-4.16.0")], ["upgrade", "--to", str(PAYLOADS / "demo-4.16.3")]):
        done = subprocess.run([sys.executable, "-m", "cvo", *args, "--state", str(state), "--operators", OPERATORS,
                               "--speed", "600"], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    return state


def _screens(output: bytes) -> list[list[str]]:
    return [screen.decode().replace("\r\n", "\n").split("\n") for screen in output.split(CLEAR.encode())[1:]]


def test_each_change_redraws_one_screen_with_the_clusterversion_on_top_and_ctrl_c_is_no_error(demo: Path) -> None:
    watch = PtySession(["status", "-w", "--state", str(demo)], columns=80, rows=24)
    try:
        watch.read_until(b"(cvo status shows them all)")
        override = subprocess.run([sys.executable, "-m", "cvo", "override", "etcd", "Upgradeable=True", "--reason",
                                   "MigrationVerified", "--message", "checked", "--state", str(demo)],
                                  capture_output=True, text=True, check=False)
        assert override.returncode == 0, override.stderr
        watch.read_until(b"(cvo status shows them all)", count=2)
        watch.proc.send_signal(signal.SIGINT)
        code = watch.finish()
    finally:
        watch.close()
    assert code == 0
    text = watch.output.decode()
    assert "error" not in text and "Traceback" not in text
    screens = _screens(watch.output)
    assert len(screens) >= 2
    for screen in screens:
        lines = [line for line in screen if not line.startswith("^C")]
        while lines and not lines[-1]:
            lines.pop()  # the end of the watch: a newline after ^C
        assert len(lines) <= 24
        assert lines[0].startswith("cvo status -w: redrawn on every change")
        assert any(line.startswith("version ") and "4.16.3" in line for line in lines[:6])
        assert all(len(line) <= 80 for line in lines)


def test_sigterm_still_ends_a_watch_as_a_signal(demo: Path) -> None:
    watch = PtySession(["status", "-w", "--state", str(demo)], columns=80, rows=24)
    try:
        watch.read_until(b"(cvo status shows them all)")
        watch.proc.send_signal(signal.SIGTERM)
        assert watch.finish() == 143
    finally:
        watch.close()
