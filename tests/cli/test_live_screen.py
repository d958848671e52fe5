"""The live display on a real pseudo-terminal (pexpect), its screen kept by a terminal emulator (pyte):
it fits 80×24 and 160×45 (no line wraps, the bar never runs into text, long lines end in an ellipsis),
a blocked upgrade's screen says what blocks it, and attempts are counted the same way on the screen and
in the summary."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte
import pytest

from tests.support.helpers import PAYLOADS, REPO

OPS = str(PAYLOADS / "demo-operators.yaml")
SIZES = [(80, 24), (160, 45)]

# Every line a sweep writes on a terminal starts like one of these: a line that starts otherwise is the
# rest of a line the terminal wrapped.
LINE_STARTS = re.compile(
    r"^(cluster: |(install|upgrade to) \d|[━╺─]+$|running: |forecast: |waiting on |[a-z][a-z0-9-]* +(\d|now)|"
    r"… and \d+ more|sim \d\d:\d\d:\d\d |NAME |version |[a-z][a-z0-9-]* +4\.\d|completed: |did not complete|"
    r"The upgrade waits|Operator etcd|blocked: |    \S)")


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR", "COLUMNS", "LINES")}
    return {**out, "TERM": "xterm-256color", "PYTHONPATH": str(REPO)}


def run_on_terminal(args: list[str], size: tuple[int, int], *, on_screen: Callable[[list[str]], None],
                    timeout: float = 240) -> tuple[int, list[str], list[list[str]]]:
    """Run cvo on a pseudo-terminal of ``size`` (columns, rows); call ``on_screen`` with every screen it
    shows; return the exit code, the last screen and every screen seen."""
    columns, rows = size
    screen = pyte.Screen(columns, rows)
    stream = pyte.ByteStream(screen)
    child = pexpect.spawn(sys.executable, ["-m", "cvo", *args], cwd=str(REPO), env=env(),
                          dimensions=(rows, columns), timeout=timeout)
    screens: list[list[str]] = []
    try:
        while True:
            try:
                chunk = child.read_nonblocking(65536, timeout=timeout)
            except pexpect.EOF:
                break
            stream.feed(chunk)
            shown = [line.rstrip() for line in screen.display]
            if screen.cursor.x > 0:  # the line being written when the chunk ended: not a whole line yet
                shown[screen.cursor.y] = ""
            screens.append(shown)
            on_screen(shown)
    finally:
        child.close()
    return child.exitstatus if child.exitstatus is not None else -1, screens[-1], screens


def assert_fits(shown: list[str]) -> None:
    """The live display's lines (the summary tables after it are oc's, as wide as their columns).  The blocked
    panel wraps its lines on purpose: there, nothing may be cut ("…")."""
    if any(line.startswith("NAME ") for line in shown):
        shown = shown[:next(i for i, line in enumerate(shown) if line.startswith("NAME "))]
    if (at := next((i for i, line in enumerate(shown) if ": blocked by " in line), None)) is not None:
        assert not any(line.endswith("…") for line in shown[at:]), "\n".join(shown)
        shown = shown[:at]
    for line in shown:
        if not line:
            continue
        assert LINE_STARTS.match(line), f"a wrapped or unexpected line: {line!r}\n" + "\n".join(shown)
        if "━" in line or "╺" in line:
            assert re.fullmatch(r"[━╺─]+", line), f"the bar runs into text: {line!r}"


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_install_screen_fits_the_terminal(tmp_path: Path, size: tuple[int, int]) -> None:
    seen_running: list[str] = []

    def check(shown: list[str]) -> None:
        assert_fits(shown)
        seen_running.extend(line for line in shown if line.startswith("running: "))

    code, last, screens = run_on_terminal(["install", str(PAYLOADS / "demo-4.16.0"), "--state",
                                           str(tmp_path / "s.db"), "--speed", "600", "--operators", OPS],
                                          size, on_screen=check)
    assert code == 0, "\n".join(last)
    assert len(screens) > 3
    assert any("━" in line for s in screens for line in s)  # the bar was drawn
    events = [line for s in screens for line in s if re.match(r"(sim )?\d\d:\d\d:\d\d ", line)]
    assert events and all(line.startswith("sim ") for line in events)  # the embedded cluster's times say so
    if size[0] == 80:  # "running: node 6: clusteroperator …, node 7: …" is longer than 80 columns
        assert any(line.endswith("…") for line in seen_running)
        assert all(len(line) <= 80 for line in seen_running)
    summary = next(line for line in last if line.startswith("completed: "))
    attempts = int(re.search(r"(\d+) attempt", summary).group(1))  # type: ignore[union-attr]
    headers = [line for screen in screens for line in screen if re.match(r"install 4\.16\.0 +attempt \d+", line)]
    assert headers and f"attempt {attempts} " in headers[-1]  # the screen and the summary count alike


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_blocked_upgrade_says_what_blocks_it(tmp_path: Path, size: tuple[int, int]) -> None:
    state = str(tmp_path / "s.db")
    common = ["--state", state, "--speed", "600", "--operators", OPS]
    for argv in (["install", str(PAYLOADS / "demo-4.16.0")], ["upgrade", "--to", str(PAYLOADS / "demo-4.16.3")]):
        done = subprocess.run([sys.executable, "-m", "cvo", *argv, *common], cwd=REPO, env=env(),
                              capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr
    blocked_screens: list[list[str]] = []
    overridden: list[bool] = []

    def check(shown: list[str]) -> None:
        assert_fits(shown)
        if any("blocked by" in line for line in shown):
            blocked_screens.append(shown)
            whole = _override_shown(shown) is not None  # the panel drawn past the command
            if whole and not overridden:  # the admin's override, from another command, while the upgrade waits
                overridden.append(True)
                done = subprocess.run([sys.executable, "-m", "cvo", "override", "etcd", "Upgradeable=True",
                                       "--reason", "MigrationVerified", "--message", "checked", "--state", state],
                                      cwd=REPO, env=env(), capture_output=True, text=True, timeout=60)
                assert done.returncode == 0, done.stderr

    code, last, _ = run_on_terminal(["upgrade", "--to", str(PAYLOADS / "demo-4.17.0"), *common], size,
                                    on_screen=check)
    assert code == 0, "\n".join(last)
    assert blocked_screens, "the screen never said the upgrade was blocked"
    first = next(s for s in blocked_screens if _override_shown(s) is not None)
    assert any(line.startswith("upgrade to 4.17.0: blocked by ClusterVersionUpgradeable")
               for line in first)
    assert any(line.startswith("Operator etcd should not be upgraded between minor or major versions") for line in first)
    # the way out, whole: the exact command, broken with " \" where it does not fit, on the same cluster
    command = _override_shown(first)
    assert command is not None
    assert shlex.split("\n".join(command).replace("\\\n", "")) == [  # as the shell reads the pasted lines
        "cvo", "override", "etcd", "Upgradeable=True", "--reason", "AdminAcknowledged", "--message",
        "upgrade reviewed", "--state", state]
    assert len(command) > 1 or size[0] > 80, command  # at 80 columns it does not fit one line: broken, not cut
    blocked_part = "\n".join(first[next(i for i, line in enumerate(first) if "blocked by" in line):])
    assert "━" not in blocked_part and "sweep.completed" not in blocked_part and "/157 tasks" not in blocked_part
    assert any(line.startswith("completed: 158/158 tasks") for line in last)


def _override_shown(shown: list[str]) -> list[str] | None:
    """The lines of the ``cvo override`` command on a blocked screen, once drawn whole (its last line, the one
    without a trailing backslash, is there)."""
    at = next((i for i, line in enumerate(shown) if line.startswith("  cvo override ")), None)
    if at is None:
        return None
    command = [shown[at]]
    while command[-1].endswith("\\") and at + 1 < len(shown) and shown[at + 1]:
        at += 1
        command.append(shown[at])
    return None if command[-1].endswith("\\") else command


def run_and_keep_every_line(args: list[str], size: tuple[int, int], *, timeout: float = 240) -> tuple[int, list[str]]:
    """Run cvo on a pseudo-terminal of ``size`` whose emulator is far wider (200 columns) and keeps what scrolls
    off: a line cvo wrote longer than the terminal stays one line here, so that its length can be asserted."""
    columns, rows = size
    screen = pyte.HistoryScreen(200, rows, history=10_000)
    stream = pyte.ByteStream(screen)
    child = pexpect.spawn(sys.executable, ["-m", "cvo", *args], cwd=str(REPO), env=env(),
                          dimensions=(rows, columns), timeout=timeout)
    try:
        while True:
            try:
                stream.feed(child.read_nonblocking(65536, timeout=timeout))
            except pexpect.EOF:
                break
    finally:
        child.close()
    scrolled = ["".join(line[x].data for x in range(200)).rstrip() for line in screen.history.top]
    lines = scrolled + [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return child.exitstatus if child.exitstatus is not None else -1, lines


def test_the_summary_tables_and_the_cluster_line_fit_80_columns(tmp_path: Path) -> None:
    state = tmp_path / "a-directory-with-a-rather-long-name" / "and-another-one-below-it" / "state.db"
    state.parent.mkdir(parents=True)
    common = ["--state", str(state), "--speed", "6000", "--operators", OPS]
    for argv in (["install", str(PAYLOADS / "demo-4.16.0"), *common],
                 ["upgrade", "--to", str(PAYLOADS / "demo-4.16.3"), *common],
                 ["upgrade", "--to", str(PAYLOADS / "demo-4.17.0"), "--force", *common],
                 ["status", "--state", str(state)]):
        code, lines = run_and_keep_every_line(argv, (80, 24))
        assert code == 0, "\n".join(lines)
        assert all(len(line) <= 80 for line in lines), "\n".join(line for line in lines if len(line) > 80)
        assert lines[0] == "cluster: embedded, state …/and-another-one-below-it/state.db", lines[0]
        assert any(line.startswith("NAME ") and line.endswith(" SINCE") for line in lines)  # MESSAGE moved
    at = lines.index(next(line for line in lines if line.startswith("openshift-samples ")))
    assert lines[at + 1] == "    not in the current release 4.17.0 (left over from 4.16.3)"  # under its row
    assert any(line.startswith("Upgradeable: False") for line in lines)


def test_the_waiting_table_is_aligned_counts_on_between_events_and_does_not_repeat_the_name(tmp_path: Path) -> None:
    """One slow operator (kube-apiserver: 60 simulated seconds, at --speed 6 ten real seconds in which nothing
    else happens): its "for" column counts on while no event comes, the columns stay under their headers, and
    "because" says what the operator is, not "Cluster operator kube-apiserver is …" again."""
    operators = tmp_path / "slow.yaml"
    operators.write_text("default:\n  delay: 1s\nkube-apiserver:\n  delay: 60s\n")
    tables: list[list[str]] = []

    def check(shown: list[str]) -> None:
        at = next((i for i, line in enumerate(shown) if line.startswith("waiting on")), None)
        if at is not None:
            rows = []
            for line in shown[at + 1:]:
                if not line or not re.match(r"^[a-z][a-z0-9-]* +(\d|now)", line) or line.startswith("sim "):
                    break
                rows.append(line)
            tables.append([shown[at], *rows])

    code, last, _ = run_on_terminal(["install", str(PAYLOADS / "demo-4.16.0"), "--state", str(tmp_path / "s.db"),
                                     "--speed", "6", "--operators", str(operators)], (100, 30), on_screen=check)
    assert code == 0, "\n".join(last)
    apiserver = [t for t in tables if any(r.startswith("kube-apiserver ") for r in t[1:])]
    assert apiserver, tables[-3:]
    for header, *rows in apiserver:
        end_of_for = header.index("for") + len("for")
        because = header.index("because")
        for row in rows:
            assert re.match(r"\S+ +\S+$", row[:end_of_for]) and row[end_of_for] == " ", (header, row)  # right-aligned
            assert row[because - 1] == " " and row[because] != " ", (header, row)
    waited = {re.split(r" +", r)[1] for t in apiserver for r in t[1:] if r.startswith("kube-apiserver ")}
    assert len(waited) >= 4, waited  # counted on (e.g. 10s, 20s, 30s, 40s), not frozen at one value
    messages = {r[apiserver[0][0].index("because"):] for t in apiserver for r in t[1:] if r.startswith("kube-apiserver ")}
    assert not any("kube-apiserver" in m for m in messages), messages


def test_an_upgrade_that_goes_ahead_with_warnings_says_so_on_the_screen(tmp_path: Path) -> None:
    """A warning is not a pass: the screen said "the preconditions pass" and the warning was only in history."""
    target = PAYLOADS / "demo-4.16.3"  # no channel set: ClusterVersionRecommendedUpdate warns (NoChannel)
    state = str(tmp_path / "s.db")
    done = subprocess.run([sys.executable, "-m", "cvo", "install", str(PAYLOADS / "demo-4.16.0"), "--state", state,
                           "--speed", "6000", "--operators", OPS], capture_output=True, text=True, env=env(), check=False)
    assert done.returncode == 0, done.stderr
    said: list[str] = []

    def check(shown: list[str]) -> None:
        for i, line in enumerate(shown):  # the line and the two it may be wrapped onto
            if re.match(r"sim \d\d:\d\d:\d\d (proceeding with warnings|the preconditions)", line):
                said.append(" ".join(" ".join(shown[i:i + 3]).split()))

    code, last, _ = run_on_terminal(["upgrade", "--to", str(target), "--state", state, "--speed", "600",
                                     "--operators", OPS], (80, 24), on_screen=check)
    assert code == 0, "\n".join(last)
    assert any("proceeding with warnings: Precondition \"ClusterVersionRecommendedUpdate\"" in line for line in said)
    assert not any("the preconditions pass" in line for line in said)
