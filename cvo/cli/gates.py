"""Printing an upgrade's gates like ``oc adm upgrade``: each check, who blocks, why, how to override; or the
same as data (``cvo upgrade --dry-run -o json|yaml``)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from cvo.gates.risks.adminack import ADMIN_ACK
from cvo.gates.risks.cluster_version import OVERRIDES, UPDATING
from cvo.gates.risks.deletion import DELETION
from cvo.gates.risks.operatorconditions import OPERATOR_CONDITION_UPGRADEABLE
from cvo.gates.risks.upgradeable import CLUSTER_OPERATOR_UPGRADEABLE
from cvo.gates.upgradeable import SOURCES
from cvo.payload import semver
from cvo.payload.loader import Release
from cvo.runner.upgrade import Preflight
from cvo.updates.model import Risk

CHECKS = ("ClusterVersionRollback", "ClusterVersionGiantHop", "ClusterVersionUpgradeable",
          "ClusterVersionRecommendedUpdate")


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


def upgrade_target(release_dir: Path, image: str | None) -> str:
    """How ``cvo upgrade`` names the target again in a hint: ``--to-image IMAGE`` for an image (not the cache
    directory it was pulled into), else ``--to DIR``."""
    return f"--to-image {shlex.quote(image)}" if image else f"--to {shlex.quote(str(release_dir))}"


def source_of(risk: Risk) -> str:
    """The source that found a risk (its name's prefix: ``ClusterOperatorUpgradeable-etcd`` → ``ClusterOperatorUpgradeable``)."""
    return next((s for s in SOURCES if risk.name == s or risk.name.startswith((f"{s}-", f"{s}Unknown"))), "")


def _override_hint(risk: Risk, to: str) -> str:
    force = f"cvo upgrade {to} --force"
    source, rest = source_of(risk), risk.name.partition("-")[2]
    if source == OPERATOR_CONDITION_UPGRADEABLE and rest:
        name = rest.partition(".")[2]
        return (f"cvo override {name} Upgradeable=True --reason AdminAcknowledged "
                f"--message {shlex.quote('upgrade reviewed')}   (or: {force})")
    if source == CLUSTER_OPERATOR_UPGRADEABLE:
        return f"{force}   (a ClusterOperator's own Upgradeable=False has no admin override; fix what it reports)"
    if source == OVERRIDES:
        return f"remove the unmanaged entries from ClusterVersion spec.overrides, or {force}"
    if source == DELETION:
        return f"wait for the deletions to finish, or {force}"
    if source == ADMIN_ACK and rest:
        return f"cvo upgrade ack {rest}   (or: {force})"
    if source == UPDATING:
        return f"wait for the update in progress to complete, or {force}"
    return force


def _state(check: Preflight, blocking: bool) -> str:
    return "BLOCKED" if blocking and not check.verdict.forced else "WARNING"


def verdict_data(check: Preflight, target: Release, to: str) -> dict[str, Any]:
    """What :func:`print_verdict` prints, as the document of ``-o json|yaml``: every check's result (``pass``,
    ``blocked`` or ``warning``), who blocks minor and major updates and how to override each, and the verdict
    (``blocked``, ``proceed-with-warnings`` or ``proceed``) with, when blocked, the ``ReleaseAccepted=False``
    condition the ClusterVersion would get."""
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
        "blockers": [{"name": r.name, "source": source_of(r), "message": r.message, "url": r.url,
                      "override": _override_hint(r, to)} for r in check.blockers],
        "blocked": blocked,
        "forced": check.verdict.forced,
        "verdict": "blocked" if blocked else "proceed-with-warnings" if check.verdict.errors else "proceed",
        "message": check.verdict.message,
        "acceptedRisks": check.verdict.accepted_risks,
        "releaseAccepted": accepted,
    }


def print_verdict(check: Preflight, target: Release, to: str) -> None:
    print(f"Upgrade from {check.current} to {target.version} ({update_kind(check.current, target.version)})")
    print("\nPreconditions:")
    by_name = {e.name: e for e in check.verdict.errors}
    for name in CHECKS:
        err = by_name.get(name)
        if err is None:
            print(f"  PASS     {name}")
            continue
        state = _state(check, err.blocking)
        first, *rest = err.message.splitlines() or [""]
        print(f"  {state:<8} {name} ({err.reason}): {first}")
        for line in rest:
            print(f"             {line}")
    if check.blockers:
        print("\nBlocking minor and major updates (ClusterVersion Upgradeable=False):")
        for r in check.blockers:
            print(f"  {r.name}")
            for i, line in enumerate(r.message.splitlines() or [""]):
                print(f"    {'message:' if i == 0 else '':<9} {line}")
            if r.url:
                print(f"    url:      {r.url}")
            print(f"    override: {_override_hint(r, to)}")
    else:
        print("\nNothing blocks minor or major updates (no Upgradeable=False anywhere).")
    if check.verdict.blocked:
        print("\nVerdict: BLOCKED. The upgrade would not start; ReleaseAccepted=False (PreconditionChecks).")
    elif check.verdict.errors:
        print(f"\nVerdict: would proceed with warnings, recorded on the history entry: {check.verdict.message}")
    else:
        print("\nVerdict: would proceed.")
