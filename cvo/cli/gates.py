"""Printing an upgrade's gates like ``oc adm upgrade``: each check, who blocks, why, how to let each blocker
through (:class:`Unblock`: the exact command, as data); or the same as data (``cvo upgrade --dry-run -o
json|yaml``, one shape whatever the verdict: :func:`verdict_data`, :func:`nothing_to_do_data`)."""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cvo.gates.risks.adminack import ADMIN_ACK
from cvo.gates.risks.cluster_version import OVERRIDES, UPDATING
from cvo.gates.risks.deletion import DELETION
from cvo.gates.risks.operatorconditions import OPERATOR_CONDITION_UPGRADEABLE
from cvo.gates.risks.upgradeable import CLUSTER_OPERATOR_UPGRADEABLE
from cvo.gates.upgradeable import SOURCES
from cvo.payload import semver

if TYPE_CHECKING:
    from cvo.payload.loader import Release
    from cvo.runner.upgrade import Preflight
    from cvo.updates.model import Risk

CHECKS = ("ClusterVersionRollback", "ClusterVersionGiantHop", "ClusterVersionUpgradeable",
          "ClusterVersionRecommendedUpdate")
# The message an admin's acknowledgement carries when the hint's command is run as printed
ACK_REASON, ACK_MESSAGE = "AdminAcknowledged", "upgrade reviewed"


def update_kind(current: str, target: str) -> str:
    try:
        cur, tgt = semver.parse(current), semver.parse(target)
    except semver.SemverError:
        return "update"
    if tgt < cur:
        return "rollback"
    if tgt.major > cur.major:
        return "major update"
    if tgt.minor > cur.minor:
        return "minor update"
    return "patch update" if tgt > cur else "re-target"


def upgrade_target(release: str, image: str | None = None, *, to_latest: bool = False) -> tuple[str, ...]:
    """How ``cvo upgrade`` names the target again in a hint: ``--to-latest``, ``--to-image IMAGE`` for an image (not
    the cache directory it was pulled into), else ``--to VERSION|DIR`` as it was given."""
    if to_latest:
        return ("--to-latest",)
    return ("--to-image", image) if image else ("--to", release)


def source_of(risk: Risk | str) -> str:
    """The source that found a risk (its name's prefix: ``ClusterOperatorUpgradeable-etcd`` → ``ClusterOperatorUpgradeable``)."""
    name = risk if isinstance(risk, str) else risk.name
    return next((s for s in SOURCES if name == s or name.startswith((f"{s}-", f"{s}Unknown"))), "")


@dataclass(frozen=True)
class Unblock:
    """How to let one blocker through.  ``action``: ``override`` (an admin's OperatorCondition override),
    ``ack`` (an admin-ack), ``fix`` (a ClusterOperator's own Upgradeable=False: no admin override), ``overrides``
    (unmanaged ClusterVersion overrides to remove) or ``wait`` (deletions, an update in progress); ``command``:
    the exact command that does it (``()``: none); ``force``: the upgrade again, past every blocker."""

    action: str
    command: tuple[str, ...]
    note: str
    force: tuple[str, ...]

    def data(self) -> dict[str, Any]:
        return {"action": self.action, "command": list(self.command) or None, "note": self.note,
                "force": list(self.force)}


def unblock(risk: Risk | str, to: Sequence[str], cluster: Sequence[str] = ()) -> Unblock:
    """How to let the blocker ``risk`` (or its name) through, for the upgrade ``cvo upgrade TO`` on the cluster
    named by the flags ``cluster`` (:func:`cvo.cli.sweep_cmd.cluster_flags`)."""
    name = risk if isinstance(risk, str) else risk.name
    force = ("cvo", "upgrade", *to, "--force", *cluster)
    source, rest = source_of(name), name.partition("-")[2]
    if source == OPERATOR_CONDITION_UPGRADEABLE and rest.partition(".")[2]:  # NAMESPACE.NAME
        return Unblock("override", ("cvo", "override", rest.partition(".")[2], "Upgradeable=True", "--reason",
                                    ACK_REASON, "--message", ACK_MESSAGE, *cluster),
                       "an admin's override of the operator's OperatorCondition", force)
    if source == ADMIN_ACK and rest:
        return Unblock("ack", ("cvo", "upgrade", "ack", rest, *cluster), "an admin's acknowledgement", force)
    if source == CLUSTER_OPERATOR_UPGRADEABLE:
        return Unblock("fix", (), "a ClusterOperator's own Upgradeable=False has no admin override; fix what it "
                                  "reports", force)
    if source == OVERRIDES:
        return Unblock("overrides", (), "remove the unmanaged entries from ClusterVersion spec.overrides", force)
    if source == DELETION:
        return Unblock("wait", (), "wait for the deletions to finish", force)
    if source == UPDATING:
        return Unblock("wait", (), "wait for the update in progress to complete", force)
    return Unblock("fix", (), "fix what it reports", force)


_PLAIN = re.compile(r"[\w@%+=:,./-]+")  # a word the shell reads as it is: a backslash-newline inside it joins it


def shell_lines(argv: Sequence[str], width: int | None, first: str = "", rest: str = "    ") -> list[str]:
    """``argv`` as a shell command line after ``first``, quoted.  When ``width`` is given and the line is longer, it
    is broken between words (a flag kept with its value when they fit) with a trailing `` \\`` and the next line
    after ``rest``; a plain word longer than a line (a path) is broken inside with a trailing ``\\`` and goes on
    at the start of the next.  Pasted whole, the lines run the same command (the shell drops each
    backslash-newline)."""
    words = [shlex.quote(w) for w in argv]
    line = first + " ".join(words)
    if width is None or len(line) <= width:
        return [line]
    units: list[list[str]] = []  # what stays on one line: a word, or a flag and its value
    for word, raw in zip(words, argv, strict=True):
        if units and len(units[-1]) == 1 and units[-1][0].startswith("--") and not raw.startswith("-"):
            units[-1].append(word)
        else:
            units.append([word])
    room = width - len(rest) - 2
    parts = [part for unit in units for part in (unit if len(" ".join(unit)) > room else [" ".join(unit)])]
    lines, fresh = [first], True  # fresh: the last line has nothing after its prefix yet
    for part in parts:
        if not fresh and len(lines[-1]) + 1 + len(part) + 2 > width:
            lines[-1] += " \\"
            lines.append(rest)
        elif not fresh:
            lines[-1] += " "
        while _PLAIN.fullmatch(part) and len(lines[-1]) + len(part) > width and width - len(lines[-1]) > 1:
            take = width - len(lines[-1]) - 1
            lines[-1] += part[:take] + "\\"
            lines.append("")
            part = part[take:]
        lines[-1] += part
        fresh = False
    return lines


def _state(check: Preflight, blocking: bool) -> str:
    return "BLOCKED" if blocking and not check.verdict.forced else "WARNING"


def _blockers_data(risks: Sequence[Risk], to: Sequence[str], cluster: Sequence[str]) -> list[dict[str, Any]]:
    return [{"name": r.name, "source": source_of(r), "message": r.message, "url": r.url,
             "override": unblock(r, to, cluster).data()} for r in risks]


def verdict_data(check: Preflight, target: Release, to: Sequence[str], cluster: Sequence[str] = ()) -> dict[str, Any]:
    """What :func:`print_verdict` prints, as the document of ``-o json|yaml``: every check's result (``pass``,
    ``blocked`` or ``warning``), who blocks minor and major updates and how to let each through (``override``:
    :meth:`Unblock.data`), and the verdict (``blocked``, ``proceed-with-warnings`` or ``proceed``) with, when
    blocked, the ``ReleaseAccepted=False`` condition the ClusterVersion would get."""
    by_name = {e.name: e for e in check.verdict.errors}
    preconditions: list[dict[str, Any]] = []
    for name in CHECKS:
        err = by_name.get(name)
        if err is None:
            preconditions.append({"name": name, "result": "pass", "reason": "", "message": ""})
        else:
            preconditions.append({"name": name, "result": _state(check, err.blocking).lower(),
                                  "reason": err.reason, "message": err.message})
    blocked = check.verdict.blocked
    accepted = None  # the condition a blocked upgrade sets (cvo.runner.upgrade), as it would read
    if blocked:
        accepted = {"type": "ReleaseAccepted", "status": "False", "reason": "PreconditionChecks",
                    "message": f'Preconditions failed for payload loaded version="{target.version}" '
                               f'image="{target.image}": {check.verdict.message}'}
    return {
        "current": check.current,
        "target": target.version,
        "image": target.image,
        "update": update_kind(check.current, target.version),
        "preconditions": preconditions,
        "blockers": _blockers_data(check.blockers, to, cluster),
        "blocked": blocked,
        "forced": check.verdict.forced,
        "verdict": "blocked" if blocked else "proceed-with-warnings" if check.verdict.errors else "proceed",
        "message": check.verdict.message,
        "acceptedRisks": check.verdict.accepted_risks,
        "releaseAccepted": accepted,
    }


def nothing_to_do_data(version: str, image: str, message: str, blockers: Sequence[Risk], to: Sequence[str],
                       cluster: Sequence[str] = ()) -> dict[str, Any]:
    """The document of a dry run whose target the cluster already runs, in :func:`verdict_data`'s shape: no
    precondition runs (there is no update), ``verdict`` is ``nothing-to-do``; ``blockers`` are still who holds back
    minor and major updates."""
    return {"current": version, "target": version, "image": image, "update": "none", "preconditions": [],
            "blockers": _blockers_data(blockers, to, cluster), "blocked": False, "forced": False,
            "verdict": "nothing-to-do", "message": message, "acceptedRisks": "", "releaseAccepted": None}


def _wrapped(text: str, width: int | None, first: str, rest: str) -> list[str]:
    """``text`` after ``first``, wrapped at ``width`` (``None``: one line per line of it) under ``rest``; when
    ``first`` leaves no room for a word, the text starts on the next line."""
    lines = text.splitlines() or [""]
    if width is None:
        return [first + lines[0], *(rest + line for line in lines[1:])]
    out: list[str] = []
    words = lines[0].split()
    if words and len(first) + len(words[0]) > width:
        out, first = [first.rstrip()], rest
    for i, line in enumerate(lines):
        out += textwrap.wrap(line, width, initial_indent=first if i == 0 else rest, subsequent_indent=rest,
                             break_on_hyphens=False, break_long_words=False) or [(first if i == 0 else rest).rstrip()]
    return out


def print_verdict(check: Preflight, target: Release, to: Sequence[str], cluster: Sequence[str] = (),
                  width: int | None = None) -> None:
    """The gates for people; on a terminal (``width``) each line wrapped to it, commands broken with `` \\``."""
    print(f"Upgrade from {check.current} to {target.version} ({update_kind(check.current, target.version)})")
    print("\nPreconditions:")
    by_name = {e.name: e for e in check.verdict.errors}
    for name in CHECKS:
        err = by_name.get(name)
        if err is None:
            print(f"  PASS     {name}")
            continue
        state = _state(check, err.blocking)
        print("\n".join(_wrapped(err.message, width, f"  {state:<8} {name} ({err.reason}): ", " " * 13)))
    if check.blockers:
        print("\nBlocking minor and major updates (ClusterVersion Upgradeable=False):")
        for r in check.blockers:
            print(f"  {r.name}")
            print("\n".join(_wrapped(r.message, width, "    message:  ", " " * 14)))
            if r.url:
                print(f"    url:      {r.url}")
            how = unblock(r, to, cluster)
            if how.command:
                print("\n".join(shell_lines(how.command, width, "    override: ", " " * 18)))
            else:
                print("\n".join(_wrapped(how.note, width, "    override: ", " " * 14)))
            print("\n".join(shell_lines(how.force, width, "    or force: ", " " * 18)))
    else:
        print("\nNothing blocks minor or major updates (no Upgradeable=False anywhere).")
    if check.verdict.blocked:
        print()
        print("\n".join(_wrapped("The upgrade would not start; ReleaseAccepted=False (PreconditionChecks).", width,
                                 "Verdict: BLOCKED. ", "  ")))
    elif check.verdict.errors:
        print()
        print("\n".join(_wrapped(check.verdict.message, width,
                                 "Verdict: would proceed with warnings, recorded on the history entry: ",
                                 "" if width is None else "  ")))
    else:
        print("\nVerdict: would proceed.")
