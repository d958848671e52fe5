"""Issue 24, finding 6: the live display's blocked panel wraps instead of cutting with "…", and prints the exact
command that lets each blocker through, kept whole however small the terminal (the why is cut first).  The
panel's lines as :meth:`cvo.cli.progress.LiveDisplay.lines` makes them (the pty test in test_live_screen.py
shows them on a terminal)."""

from __future__ import annotations

import io
import shlex
from datetime import UTC, datetime

import pytest
from rich.console import Console

from cvo.cli.gates import unblock
from cvo.cli.progress import LiveDisplay
from cvo.runner.events import Progress
from cvo.runner.sweep_events import PreconditionBlocked

ETCD = "OperatorConditionUpgradeable-openshift-etcd-operator.etcd"
STATE = "/var/tmp/a-rather-long-directory-name/for-the-state-of-the-embedded-cluster/s.db"
MESSAGE = (
    'Multiple precondition checks failed:\n* Precondition "ClusterVersionUpgradeable" failed because of '
    '"RiskNameNotCompatibleWithReasonProperty": Operator etcd should not be upgraded between minor or major '
    "versions: the operator is not upgradeable: etcd is migrating its storage to the 3.5.14 format; upgrade "
    "after it finishes (OperatorCondition openshift-etcd-operator/etcd)\n* Precondition "
    '"ClusterVersionRecommendedUpdate" failed because of "NoChannel": Configured channel is unset.')
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def panel(blockers: list[str], width: int, height: int, message: str = MESSAGE) -> list[str]:
    display = LiveDisplay(Progress, lambda: NOW, "upgrade to 4.17.0", blocked=lambda: message,
                          unblock=lambda name: unblock(name, ("--to", "4.17.0"), ("--state", STATE)),
                          console=Console(file=io.StringIO()))
    display.emit(PreconditionBlocked(NOW, version="4.17.0", message=message, blockers=blockers))
    return [text for text, _ in display.lines(width, height)]


def pasted(lines: list[str], start: str) -> list[str]:
    """The command starting with ``start``, its lines pasted as the shell reads them."""
    at = next(i for i, line in enumerate(lines) if line.startswith(start))
    command = [lines[at]]
    while command[-1].endswith("\\"):
        at += 1
        command.append(lines[at])
    return shlex.split("\n".join(command).replace("\\\n", ""))


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_panel_wraps_every_line_and_prints_the_exact_override(width: int) -> None:
    lines = panel([ETCD], width, 40)
    assert all(len(line) <= width for line in lines), lines
    assert not any(line.endswith("…") for line in lines), lines  # wrapped, nothing cut
    assert lines[0].startswith("upgrade to 4.17.0: blocked by ClusterVersionUpgradeable")
    assert " ".join(" ".join(lines).split()).count("etcd is migrating its storage to the 3.5.14 format") == 1
    assert pasted(lines, "  cvo override ") == ["cvo", "override", "etcd", "Upgradeable=True", "--reason",
                                                "AdminAcknowledged", "--message", "upgrade reviewed", "--state", STATE]
    assert any(line.startswith("Or stop this command (Ctrl-C) and run it again with --force") for line in lines)


def test_on_a_short_terminal_the_why_is_cut_and_the_command_stays_whole() -> None:
    lines = panel([ETCD], 80, 9)
    assert len(lines) == 9
    assert pasted(lines, "  cvo override ")[-2:] == ["--state", STATE]
    assert any(line.endswith("…") for line in lines[2:5])  # the why, shortened


def test_a_blocker_without_an_admin_override_says_what_to_do_and_one_only_force_passes_says_so() -> None:
    lines = panel(["ClusterOperatorUpgradeable-network"], 80, 40)
    assert not any(line.startswith("  cvo ") for line in lines)
    text = " ".join(" ".join(lines).split())
    assert ("ClusterOperatorUpgradeable-network: a ClusterOperator's own Upgradeable=False has no admin override; "
            "fix what it reports.") in text
    rollback = ('Precondition "ClusterVersionRollback" failed because of "LowDesiredVersion": Retarget to 4.15.0 '
                "while running 4.16.3 is not allowed")
    lines = panel([], 80, 40, rollback)
    assert lines[0] == "upgrade to 4.17.0: blocked by ClusterVersionRollback (LowDesiredVersion)"
    assert "Only --force passes this block" in " ".join(lines)
