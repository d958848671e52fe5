"""Several real processes on one embedded cluster: nothing written is lost, no second sweep runs.

Every test here starts real ``python`` processes and, where the issue says so, kills them for real;
nothing is mocked.  Processes are synchronised on what they print (their JSON event log), never on
sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from tests.support.helpers import PAYLOADS, REPO, state_kind, state_objects

OLD = str(PAYLOADS / "demo-4.16.0")
PATCH = str(PAYLOADS / "demo-4.16.3")
MINOR = str(PAYLOADS / "demo-4.17.0")
DEMO_OPERATORS = str(PAYLOADS / "demo-operators.yaml")
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def cvo(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cvo", *args], capture_output=True, text=True, env=ENV,
                          cwd=REPO, timeout=timeout)


def start_cvo(log: IO[str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "cvo", "-vv", "--log-format", "json", *args],
                            stdout=subprocess.DEVNULL, stderr=log, env=ENV, cwd=REPO)


def events(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines()[:-1]:  # whole lines only: the last may be half-written
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def wait_for(proc: subprocess.Popen[bytes], path: Path, until: Callable[[list[dict[str, Any]]], bool],
             what: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Poll the process's event log until ``until`` holds (the process must still be running)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = events(path)
        if until(seen):
            return seen
        if proc.poll() is not None:
            pytest.fail(f"the process ended (exit {proc.returncode}) before {what}: {path.read_text()[-3000:]}")
        time.sleep(0.02)
    pytest.fail(f"no {what} within {timeout} s: {path.read_text()[-3000:]}")


def history(state: Path) -> list[tuple[str, str]]:
    [cv] = state_kind(state, "ClusterVersion")  # created before its first status write: no history yet
    return [(h["version"], h["state"]) for h in cv.get("status", {}).get("history", [])]


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_sigkill_loses_only_the_request_in_flight(tmp_path: Path) -> None:
    """Every write is durable when it returns: after SIGKILL the store holds all the install did, and the
    rerun resumes the same history entry."""
    state = tmp_path / "cluster.db"
    log = tmp_path / "install.jsonl"
    with log.open("w") as err:
        proc = start_cvo(err, "install", OLD, "--state", str(state), "--speed", "60")
        try:
            seen = wait_for(proc, log, lambda ev: sum(e.get("event") == "operator.ready" for e in ev) >= 3,
                            "three ClusterOperators ready")
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=10) == -signal.SIGKILL
        finally:
            stop(proc)
    applied = {e["task"] for e in seen if e.get("event") == "task.applied"}
    assert len(applied) > 20
    stored = state_objects(state)
    assert len(stored) >= len(applied)
    ready = [e["operator"] for e in seen if e.get("event") == "operator.ready"]
    cos = {o["metadata"]["name"]: o for o in stored if o["kind"] == "ClusterOperator"}
    for name in ready:  # what cvo saw reported before the kill is in the store
        conditions = {c["type"]: c["status"] for c in cos[name]["status"]["conditions"]}
        assert conditions["Available"] == "True", name
    assert history(state) == [("4.16.0", "Partial")]
    [cv] = state_kind(state, "ClusterVersion")
    started = cv["status"]["history"][0]["startedTime"]

    proc2 = cvo("install", OLD, "--state", str(state))
    assert proc2.returncode == 0, proc2.stderr
    assert history(state) == [("4.16.0", "Completed")]
    [cv] = state_kind(state, "ClusterVersion")
    assert cv["status"]["history"][0]["startedTime"] == started  # resumed, not replaced


WRITER = textwrap.dedent("""
    import asyncio, sys, time
    from cvo.clock import Clock, run_virtual
    from cvo.cluster.api import ApiError, ApiErrorKind, Ref
    from cvo.cluster.embedded.server import SimCluster

    path, me, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    COUNTER = Ref("", "ConfigMap", "default", "counter")

    async def main():
        c = SimCluster(Clock(), path=path)
        print("ready", flush=True)
        sys.stdin.readline()  # both start at once
        conflicts = 0
        for i in range(rounds):
            await c.create({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": f"{me}-{i}", "namespace": "default"}, "data": {"i": str(i)}})
            while True:  # read, modify, write: a conflict means someone else wrote first
                live = await c.get(COUNTER)
                if live is None:
                    try:
                        await c.create({"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "counter", "namespace": "default"},
                                        "data": {"n": "1", "by": me}})
                        break
                    except ApiError as err:
                        assert err.kind is ApiErrorKind.ALREADY_EXISTS
                        conflicts += 1
                        continue
                time.sleep(0.0005)  # a client's think time between its read and its write
                live["data"] = {"n": str(int(live["data"]["n"]) + 1), "by": me}
                try:
                    await c.update(live)
                    break
                except ApiError as err:
                    assert err.kind is ApiErrorKind.CONFLICT, err
                    conflicts += 1
        await c.close()
        print(conflicts)

    run_virtual(main)
""")


def test_concurrent_writers_lose_no_write(tmp_path: Path) -> None:
    """Three processes increment one counter 300 times each by read-modify-write: 900, with real conflicts.

    (This test found a lost update: a view reloaded after a conflict could take a commit's data version
    without its rows.)"""
    state = tmp_path / "cluster.db"
    rounds = 300
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(state), name, str(rounds)], env=ENV, cwd=REPO,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("a", "b", "c")]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline() == "ready\n"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
    objects = {o["metadata"]["name"]: o for o in state_kind(state, "ConfigMap")}
    assert objects["counter"]["data"]["n"] == str(3 * rounds)
    assert {f"{who}-{i}" for who in "abc" for i in range(rounds)} <= set(objects)
    versions = [int(o["metadata"]["resourceVersion"]) for o in state_objects(state)]
    assert len(versions) == len(set(versions))  # every write got a revision of its own
    conflicts = sum(int(out) for out, _ in results)
    assert conflicts > 0, "the writers never overlapped: the test proved nothing"


def test_an_override_from_another_command_lets_the_waiting_upgrade_through(tmp_path: Path) -> None:
    """The demo's story, for real: the blocked upgrade waits; `cvo override` in another process changes the
    OperatorCondition; the upgrade sees it through its watch and goes ahead by itself.  The override
    is not lost when the upgrade writes afterwards."""
    state = tmp_path / "cluster.db"
    common = ["--state", str(state), "--operators", DEMO_OPERATORS]
    assert cvo("install", OLD, *common).returncode == 0
    log = tmp_path / "upgrade.jsonl"
    with log.open("w") as err:
        proc = start_cvo(err, "upgrade", "--to", MINOR, *common, "--speed", "600", "--timeout", "6h")
        try:
            wait_for(proc, log, lambda ev: any(e.get("event") == "precondition.blocked" for e in ev),
                     "the upgrade being blocked")
            override = cvo("override", "etcd", "Upgradeable=True", "--reason", "MigrationVerified",
                           "--message", "checked", "--state", str(state))
            assert override.returncode == 0, override.stderr
            code = proc.wait(timeout=120)
        finally:
            stop(proc)
    seen = events(log)
    assert code == 0, log.read_text()[-3000:]
    assert [e["event"] for e in seen if e.get("event", "").startswith("precondition.")] == [
        "precondition.blocked", "precondition.passed"]
    assert history(state)[0] == ("4.17.0", "Completed")
    [oc] = [o for o in state_kind(state, "OperatorCondition") if o["metadata"]["name"] == "etcd"]
    assert [(o["type"], o["status"], o["reason"]) for o in oc["spec"]["overrides"]] == [
        ("Upgradeable", "True", "MigrationVerified")]


def test_a_second_sweep_is_refused_while_one_runs(tmp_path: Path) -> None:
    state = tmp_path / "cluster.db"
    log = tmp_path / "install.jsonl"
    never = tmp_path / "never.yaml"  # operators that never report: the install is certain to run until stopped
    never.write_text("default:\n  delay: 24h\n")
    with log.open("w") as err:
        proc = start_cvo(err, "install", OLD, "--state", str(state), "--speed", "60", "--operators", str(never))
        try:
            wait_for(proc, log, lambda ev: any(e.get("event") == "task.applied" for e in ev), "the install running")
            second = cvo("install", OLD, "--state", str(state))
            reconcile = cvo("reconcile", "--state", str(state))
            status = cvo("status", "--state", str(state))  # reads are welcome
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
        finally:
            stop(proc)
    for refused in (second, reconcile):
        assert refused.returncode == 1
        lines = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
        assert len(lines) == 1, refused.stderr
        assert f"another cvo command is already sweeping the embedded cluster {state}: pid {proc.pid} " \
               f"(install 4.16.0, since " in lines[0]
    assert status.returncode == 0, status.stderr
    assert "4.16.0" in status.stdout
    # The lock dies with its holder: the next sweep runs, and resumes the install.
    again = cvo("install", OLD, "--state", str(state))
    assert again.returncode == 0, again.stderr
    assert history(state) == [("4.16.0", "Completed")]
