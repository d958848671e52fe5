"""``cvo run`` and the CLI as its client, as real processes on one embedded cluster (``--state``).

The controller runs at ``--speed 120`` (simulated seconds per real second); the commands beside it are
what a user types.  Processes are synchronised on what they print and on what the store holds, polled
with bounded waits, never on sleeps.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import pytest

from tests.cluster.test_store_processes import (
    DEMO_OPERATORS,
    ENV,
    MINOR,
    OLD,
    PATCH,
    cvo,
    events,
    history,
    start_cvo,
    stop,
    wait_for,
)
from tests.support.helpers import PAYLOADS, REPO, state_kind

SPEED = "120"


def start_controller(log: IO[str], state: Path, *extra: str) -> subprocess.Popen[bytes]:
    return start_cvo(log, "run", "--state", str(state), "--identity", "ctl", "--releases", str(PAYLOADS),
                     "--speed", SPEED, "--listen", "none", "--interval", "60s", *extra)


def cluster_version(state: Path) -> dict[str, Any]:
    try:
        found = state_kind(state, "ClusterVersion") if state.exists() else []
    except sqlite3.OperationalError:  # polled while the controller creates the store: no tables yet
        return {}
    return found[0] if found else {}


def condition(cv: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in (cv.get("status") or {}).get("conditions") or [] if c["type"] == type_), {})


def poll(what: str, probe: Callable[[], bool], alive: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if alive.poll() is not None:
            pytest.fail(f"the controller ended (exit {alive.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout} s")
        time.sleep(0.05)


def completed(state: Path, version: str) -> Callable[[], bool]:
    return lambda: history(state)[:1] == [(version, "Completed")] if cluster_version(state) else False


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_the_cli_is_the_controllers_client_upgrade_no_wait_blocked_override_and_status_watch(tmp_path: Path) -> None:
    state = tmp_path / "cluster.db"
    log = tmp_path / "run.jsonl"
    watch_out = tmp_path / "watch.jsonl"
    watch: subprocess.Popen[bytes] | None = None
    sweeps_file = tmp_path / "sweeps.jsonl"
    with log.open("w") as err:
        ctl = start_controller(err, state, "--release", OLD, "--operators", DEMO_OPERATORS, "--events",
                               str(sweeps_file))
        try:
            poll("the controller's install of 4.16.0", completed(state, "4.16.0"), ctl)

            refused = cvo("install", OLD, "--state", str(state))  # the controller runs the sweeps now
            assert refused.returncode == 1
            assert error_lines(refused.stderr) == [
                f"error: the controller cvo run (controller ctl) (pid {ctl.pid}) leads the embedded cluster {state}: it "
                f"runs the sweeps; ask it for an update with 'cvo upgrade --to DIR' (or stop it)"]

            with watch_out.open("w") as out:
                watch = subprocess.Popen([sys.executable, "-m", "cvo", "status", "-w", "-o", "json", "--state",
                                          str(state)], stdout=out, stderr=subprocess.DEVNULL, env=ENV, cwd=REPO)

            upgrade = cvo("upgrade", "--to", PATCH, "--state", str(state))
            assert upgrade.returncode == 0, upgrade.stderr
            assert "upgrade.requested" in upgrade.stderr and "controller=ctl" in upgrade.stderr
            assert "\ncompleted by the controller ctl: " in upgrade.stdout
            assert history(state) == [("4.16.3", "Completed"), ("4.16.0", "Completed")]
            sweeps = [(e["state"], e["version"]) for e in events(log) if e.get("event") == "controller.sweep"]
            assert ("Updating", "4.16.3") in sweeps  # the controller ran it, not the command

            began = time.monotonic()
            no_wait = cvo("upgrade", "--to", MINOR, "--no-wait", "--state", str(state))
            assert no_wait.returncode == 0, no_wait.stderr
            assert "spec.desiredUpdate: 4.17.0 (file://" in no_wait.stderr and "the controller ctl applies it" in no_wait.stderr
            assert time.monotonic() - began < 30  # it did not follow the update (blocked by etcd: it would wait)
            assert cluster_version(state)["spec"]["desiredUpdate"]["version"] == "4.17.0"

            def gated() -> bool:
                accepted = condition(cluster_version(state), "ReleaseAccepted")
                return accepted.get("reason") == "PreconditionChecks" and "4.17.0" in accepted.get("message", "")

            poll("the controller to hold 4.17.0 at its gates", gated, ctl)
            blocked = cvo("upgrade", "--to", MINOR, "--state", str(state), "--timeout", "2s")
            assert blocked.returncode == 1, blocked.stderr
            assert "\nblocked: the upgrade did not start" in blocked.stdout
            lines = error_lines(blocked.stderr)  # the blocked message, one error line per line of it
            assert lines[0].startswith("error: upgrade to 4.17.0 is blocked: ") and "etcd" in "\n".join(lines)
            assert history(state)[0] == ("4.16.3", "Completed")

            override = cvo("override", "etcd", "Upgradeable=True", "--reason", "MigrationVerified", "--message",
                           "checked", "--state", str(state))
            assert override.returncode == 0, override.stderr
            poll("the controller to go ahead with 4.17.0 after the override", completed(state, "4.17.0"), ctl)
            assert history(state) == [("4.17.0", "Completed"), ("4.16.3", "Completed"), ("4.16.0", "Completed")]
            passed = [e for e in events(log) if e.get("event") == "precondition.passed" and e.get("version") == "4.17.0"]
            assert passed, "the controller never saw the override"

            def watched_completion() -> bool:
                docs = [json.loads(line) for line in watch_out.read_text().split("\n")[:-1]]  # whole lines only
                return any(_head(d) == ("4.17.0", "Completed") for d in docs)

            poll("cvo status -w to print the completed 4.17.0", watched_completion, watch, timeout=30)
            watch.send_signal(signal.SIGINT)
            assert watch.wait(timeout=30) == 0  # Ctrl-C ends a watch: not an error
            docs = [json.loads(line) for line in watch_out.read_text().splitlines()]
            heads = [_head(d) for d in docs]
            assert ("4.16.3", "Partial") in heads and heads.index(("4.16.3", "Partial")) < heads.index(
                ("4.17.0", "Completed"))
            assert len(docs) == len({json.dumps(d, sort_keys=True) for d in docs})  # reprinted on change only

            ctl.send_signal(signal.SIGTERM)
            assert ctl.wait(timeout=30) == 0
        finally:
            stop(ctl)
            if watch is not None:
                stop(watch)  # type: ignore[arg-type]
    _check_the_controllers_events(sweeps_file, state)


def _check_the_controllers_events(path: Path, state: Path) -> None:
    """``cvo run --events``: every line says its sweep; ``cvo report --sweep N`` shows one of them; the
    records the controller's sweeps left on the cluster make a report too."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    started = [e for e in lines if e["event"] == "sweep.started"]
    assert [e["sweep"] for e in started] == list(range(1, len(started) + 1))
    seen = 0
    for event in lines:  # each line has the number of the last sweep.started before it (0: none yet)
        seen += event["event"] == "sweep.started"
        assert event["sweep"] == seen, event
    modes = [(e["mode"], e["version"]) for e in started]
    assert modes[0] == ("install", "4.16.0") and ("update", "4.16.3") in modes and modes[-1][1] == "4.17.0"
    number = modes.index(("update", "4.16.3")) + 1
    out = cvo("report", str(path), "--sweep", str(number), "-o", "text")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"cvo sweep report: update 4.16.3 (sweep {number})\n")
    assert "\nupdate 4.16.3: completed, " in out.stdout and "critical path:" in out.stdout
    last = cvo("report", str(path), "--sweep", "last", "-o", "text")
    assert last.returncode == 0 and f"{modes[-1][0]} 4.17.0: " in last.stdout, last.stderr
    missing = cvo("report", str(path), "--sweep", str(len(started) + 1))
    assert missing.returncode == 2 and error_lines(missing.stderr) == [
        f"error: {path}: no sweep {len(started) + 1}: the file has {len(started)} sweep(s) (sweep.started events)"]
    records = cvo("report", "--state", str(state), "-o", "text")
    assert records.returncode == 0, records.stderr
    assert "\ninstall 4.16.0: completed, " in records.stdout and "\nupdate 4.17.0: completed, " in records.stdout
    assert "(per-operator times from the sweep's record)" in records.stdout


def _head(doc: dict[str, Any]) -> tuple[str, str] | None:
    entries = ((doc.get("clusterVersion") or {}).get("status") or {}).get("history") or []
    return (entries[0]["version"], entries[0]["state"]) if entries else None


def test_a_controller_waits_for_a_foreground_sweep_and_a_killed_one_leaves_the_cluster_to_the_commands(
        tmp_path: Path) -> None:
    """The leader takes the sweep lock: it waits for a foreground install to end before it sweeps; killed
    (SIGKILL), the kernel frees the lock, and ``cvo upgrade`` runs the sweep itself again although the store
    still holds the dead leader's lease (its clock stands still with no process running)."""
    state = tmp_path / "cluster.db"
    install_log, run_log = tmp_path / "install.jsonl", tmp_path / "run.jsonl"
    with install_log.open("w") as install_err, run_log.open("w") as run_err:
        install = start_cvo(install_err, "install", OLD, "--state", str(state), "--speed", "30")
        ctl: subprocess.Popen[bytes] | None = None
        try:
            wait_for(install, install_log, lambda ev: any(e.get("event") == "task.applied" for e in ev),
                     "the install running")
            ctl = start_controller(run_err, state)
            wait_for(ctl, run_log, lambda ev: any(e.get("event") == "controller.waiting_for_sweep" for e in ev),
                     "the controller waiting for the foreground sweep")
            assert install.wait(timeout=120) == 0, install_log.read_text()[-3000:]
            ended = max(_time(e) for e in events(install_log))
            seen = wait_for(ctl, run_log, lambda ev: any(e.get("event") == "controller.sweep" for e in ev),
                            "the controller's first sweep")
            first = next(e for e in seen if e.get("event") == "controller.sweep")
            assert first["state"] == "Reconciling" and _time(first) >= ended
            ctl.send_signal(signal.SIGKILL)
            ctl.wait(timeout=10)
        finally:
            stop(install)
            if ctl is not None:
                stop(ctl)
    [lease] = state_kind(state, "Lease")
    assert lease["spec"]["holderIdentity"] == "ctl"  # never released: it looks held to the store's clock
    upgrade = cvo("upgrade", "--to", PATCH, "--state", str(state))
    assert upgrade.returncode == 0, upgrade.stderr
    assert "upgrade.requested" not in upgrade.stderr and "\ncompleted: " in upgrade.stdout  # swept here
    assert history(state) == [("4.16.3", "Completed"), ("4.16.0", "Completed")]


def _time(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(event["timestamp"]).replace("Z", "+00:00"))


def test_cvo_run_polls_a_file_update_service_given_by_flag(tmp_path: Path) -> None:
    """``--update-service file://…``: the CVO's flag with cvo's file upstream; the status shows the updates once
    spec.upstream names the same service (the CVO's NeedsUpdate), set here by another process."""
    from cvo.clock import Clock, run_virtual
    from cvo.cluster.api import ApiError, ApiErrorKind, cv_ref
    from cvo.cluster.embedded.server import SimCluster

    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps({"nodes": [{"version": "4.16.0", "payload": OLD}, {"version": "4.16.3", "payload": PATCH},
                                           {"version": "4.17.0", "payload": MINOR}], "edges": [[0, 1], [0, 2]]}))
    state = tmp_path / "s.db"
    with (tmp_path / "ctl.log").open("w") as log:
        ctl = start_controller(log, state, "--release", OLD, "--update-service", graph.as_uri())
        try:
            poll("the ClusterVersion", lambda: bool((cluster_version(state).get("status") or {}).get("desired")), ctl)

            async def set_upstream() -> None:
                cluster = SimCluster(Clock(), path=state)
                try:
                    for _ in range(100):  # the controller writes the status meanwhile: read again on a Conflict
                        cv = await cluster.get(cv_ref())
                        assert cv is not None
                        try:
                            await cluster.update({**cv, "spec": {**cv["spec"], "upstream": graph.as_uri(),
                                                                 "channel": "s"}})
                            break
                        except ApiError as err:
                            assert err.kind is ApiErrorKind.CONFLICT, err
                    else:
                        pytest.fail("spec.upstream not written: 100 conflicts")
                finally:
                    await cluster.close()

            run_virtual(set_upstream)

            def listed() -> bool:
                updates = (cluster_version(state).get("status") or {}).get("availableUpdates")
                return [u["version"] for u in updates or []] == ["4.17.0", "4.16.3"]

            poll("the available updates", listed, ctl, timeout=60)
            assert condition(cluster_version(state), "RetrievedUpdates")["status"] == "True"
        finally:
            stop(ctl)
