"""SIGTERM ends a sweep as Ctrl-C does: cancelled cleanly, the same words, exit 143 (130 for SIGINT).

Real signals to a real ``cvo`` subprocess, on the embedded cluster slowed to real time (``--speed
1``) so that the sweep is surely running when the signal comes.  (The same against a real API
server is in ``tests/e2e/test_faults.py``.)
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from cvo.clock import Clock, WallClock

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "payloads" / "demo-4.16.0"


def interrupt_install(state: Path, signum: int, *extra: str) -> tuple[int, str]:
    """``cvo install`` until its sweep runs, then ``signum``; its exit code and stderr."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "cvo", "install", str(DEMO), "--state", str(state), "--speed", "1",
                             *extra], cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # blocks until the next line: no polling
            seen.append(line)
            if "attempt.started" in line:
                break
        else:
            pytest.fail(f"the install ended before its sweep started:\n{''.join(seen)}")
        proc.send_signal(signum)
        rest = proc.stderr.read()
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    return code, "".join(seen) + rest


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_cancels_the_sweep_cleanly_and_keeps_what_it_wrote(tmp_path: Path, signum: int, code: int) -> None:
    state = tmp_path / "state.json"
    got, stderr = interrupt_install(state, signum)
    assert got == code, stderr
    assert stderr.rstrip().endswith("error: interrupted"), stderr[-2000:]
    assert "Traceback" not in stderr
    # The embedded cluster saved its state on the way out: the ClusterVersion the sweep wrote is there.
    status = subprocess.run([sys.executable, "-m", "cvo", "status", "--state", str(state), "-o", "json"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    history = orjson.loads(status.stdout)["clusterVersion"]["status"]["history"]
    assert [(h["version"], h["state"]) for h in history] == [("4.16.0", "Partial")]


def test_the_wall_clock_is_read_at_each_call_not_anchored_when_made() -> None:
    wall, anchored = WallClock(), Clock()

    async def main() -> tuple[datetime, datetime, datetime, datetime]:
        await asyncio.sleep(0.3)  # "start-up": the time between making the clock and its first use
        anchored.monotonic()  # Clock's origin is set here, at its first use
        await asyncio.sleep(0.2)
        before = datetime.now(UTC)
        wall_now, anchored_now = wall.now(), anchored.now()
        return before, wall_now, anchored_now, datetime.now(UTC)

    before, wall_now, anchored_now, after = asyncio.run(main())
    assert before <= wall_now <= after
    assert (after - anchored_now).total_seconds() >= 0.25  # what made the ClusterVersion's timestamps lag
