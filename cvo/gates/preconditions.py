"""Upgrade preconditions: the checks the CVO runs before it accepts a new release (pkg/cvo/cvo.go `defaultPreconditionChecks`, pkg/payload/precondition).

``ClusterVersionRollback``, ``ClusterVersionGiantHop``, ``ClusterVersionUpgradeable`` and
``ClusterVersionRecommendedUpdate``, in that order, all run; each failure is blocking or a
warning.  ``--force`` turns blocking failures into the warning "Forced through blocking failures:
…", which is recorded on the history entry as accepted risks.  A rollback, a giant hop and a target
version that does not parse block for good (:attr:`PreconditionError.force_only`): they compare versions
that only an update changes, so no operator or admin action clears them while an update waits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cvo.objects import ClusterVersion
from cvo.objects.clusterversion import ClusterVersionStatus
from cvo.payload import semver

# ClusterVersionOverridesCondition's message, which the patch-update warning quotes
# (pkg/payload/precondition/clusterversion/upgradeable.go; the overrides risk says "updates" where this says "upgrades").
OVERRIDES_MESSAGE = ("Disabling ownership via cluster version overrides prevents upgrades between minor or major "
                     "versions. Please remove overrides before requesting a minor or major version update.")

# Checks over the current target, the history and the target's version: none of them changes while an update
# waits, so their blocks never clear by themselves (ClusterVersionUpgradeable's do, when an operator or an admin
# lets the update through).
FORCE_ONLY = frozenset({"ClusterVersionRollback", "ClusterVersionGiantHop"})


@dataclass(frozen=True)
class PreconditionError:
    name: str
    reason: str
    message: str
    blocking: bool = True

    def render(self) -> str:
        return f'Precondition "{self.name}" failed because of "{self.reason}": {self.message}'

    @property
    def force_only(self) -> bool:
        """A block that waiting cannot clear: only ``--force`` (or another target) passes it."""
        return self.blocking and (self.name in FORCE_ONLY or self.reason == "InvalidDesiredVersion")


@dataclass(frozen=True)
class Verdict:
    errors: tuple[PreconditionError, ...]
    blocked: bool
    message: str  # the summary; "" when every check passed
    forced: bool = False

    @property
    def accepted_risks(self) -> str:
        """What the history entry records when the update goes ahead despite warnings."""
        return self.message if self.errors and not self.blocked else ""

    @property
    def force_only(self) -> tuple[PreconditionError, ...]:
        """The blocks only ``--force`` passes (none once forced, or when nothing blocks)."""
        return tuple(e for e in self.errors if e.force_only) if self.blocked else ()


def _parse(text: str) -> semver.Version | None:
    try:
        return semver.parse(text)
    except semver.SemverError:
        return None


def _versions(name: str, current: str, target: str) -> tuple[semver.Version, semver.Version] | PreconditionError:
    """Both versions, or the CVO's error: blang/semver's own message (``No Major.Minor.Patch elements found``);
    a current version that does not parse only warns (an update is what would fix it)."""
    try:
        cur = semver.parse(current)
    except semver.SemverError as err:
        return PreconditionError(name, "InvalidCurrentVersion", str(err), blocking=False)
    try:
        tgt = semver.parse(target)
    except semver.SemverError as err:
        return PreconditionError(name, "InvalidDesiredVersion", str(err))
    return cur, tgt


def check_rollback(cv: ClusterVersion, target: str) -> PreconditionError | None:
    name = "ClusterVersionRollback"
    desired = cv.status.desired
    parsed = _versions(name, desired.version, target)
    if isinstance(parsed, PreconditionError):
        return parsed
    cur, tgt = parsed
    if not tgt < cur:
        return None
    previous: semver.Version | None = None
    previous_image = ""
    for entry in cv.status.history:
        if entry.version != str(cur) or entry.image != desired.image:
            previous = _parse(entry.version)
            previous_image = entry.image
            break
    if previous is None:
        return PreconditionError(name, "LowDesiredVersion",
                                 f"{tgt} is less than the current target {cur}, and the cluster has no previous "
                                 "Semantic Version")
    if tgt != previous:
        return PreconditionError(name, "LowDesiredVersion",
                                 f"{tgt} is less than the current target {cur}, and the only supported rollback is to "
                                 f"the cluster's previous version {previous} ({previous_image})")
    if (previous.major, previous.minor) == (cur.major, cur.minor):
        return None
    return PreconditionError(name, "LowDesiredVersion",
                             f"{tgt} is less than the current target {cur} and matches the cluster's previous version, "
                             "but rollbacks that change major or minor versions are not recommended")


def check_giant_hop(cv: ClusterVersion, target: str) -> PreconditionError | None:
    name = "ClusterVersionGiantHop"
    parsed = _versions(name, cv.status.desired.version, target)
    if isinstance(parsed, PreconditionError):
        return parsed
    cur, tgt = parsed
    if tgt.major > cur.major:
        if tgt.major == 5 and cur.major == 4:  # the CVO's temporary rule: 4.x -> 5.0.z is allowed
            if tgt.minor == 0:
                return None
            return PreconditionError(name, "MajorVersionUpdate",
                                     f"{tgt} has a larger major version than the current target {cur} ({tgt.major} > "
                                     f"{cur.major}), and only updates within the current major version or to 5.0 are "
                                     "supported.")
        return PreconditionError(name, "MajorVersionUpdate",
                                 f"{tgt} has a larger major version than the current target {cur} ({tgt.major} > "
                                 f"{cur.major}), and only updates within the current major version are supported.")
    if tgt.minor > cur.minor + 1:
        return PreconditionError(name, "MultipleMinorVersionsUpdate",
                                 f"{tgt} is more than one minor version beyond the current target {cur} ({tgt.major}."
                                 f"{tgt.minor} > {cur.major}.({cur.minor}+1)), and only updates within the current "
                                 "minor version or to the next minor version are supported.")
    return None


def _update_in_progress(status: ClusterVersionStatus, current: semver.Version) -> tuple[str, semver.Version] | None:
    """("minor"|"major", from) when a minor or major update to ``current`` is still progressing."""
    progressing = status.condition("Progressing")
    if progressing is None or progressing.status != "True":
        return None
    # GetCurrentVersion: the first Completed entry, else the oldest entry (the version first installed).
    previous = _parse(status.current_version)
    if previous is None:
        return None
    if previous.major < current.major:
        return "major", previous
    if previous.major == current.major and previous.minor < current.minor:
        return "minor", previous
    return None


def check_upgradeable(cv: ClusterVersion, target: str) -> PreconditionError | None:
    """Upgradeable=False blocks minor and major updates only; patches, retargets and downgrades pass."""
    name = "ClusterVersionUpgradeable"
    status = cv.status
    cond = status.condition("Upgradeable")
    if cond is None or cond.status != "False":
        return None
    parsed = _versions(name, status.desired.version, target)
    if isinstance(parsed, PreconditionError):
        return parsed
    cur, tgt = parsed
    patch_only = (tgt.major, tgt.minor) == (cur.major, cur.minor)
    if tgt <= cur or patch_only:
        if any(o.unmanaged for o in cv.spec.overrides):
            return PreconditionError(
                name, "ClusterVersionOverridesSet",
                f"Retarget from {cur} to {tgt} is not blocked by ClusterVersionOverridesSet. But the "
                f"cluster-version operator is not managing these resources; they are currently the responsibility "
                f"of the agent that set the overrides: {OVERRIDES_MESSAGE}",
                blocking=False)
        if patch_only and (in_progress := _update_in_progress(status, cur)) is not None:
            kind, previous = in_progress
            return PreconditionError(
                name, f"{kind.capitalize()}VersionClusterUpdateInProgress",
                f"Retarget to {tgt} while a {kind} version update from {previous} to {cur} is in progress",
                blocking=False)
        return None
    return PreconditionError(name, cond.reason, cond.message)


def check_recommended(cv: ClusterVersion, target: str) -> PreconditionError | None:
    """pkg/payload/precondition/clusterversion/recommendedupdate.go ``RecommendedUpdate.Run``: what the update
    graph says of the target, from the status's available and conditional updates; never blocks."""
    name = "ClusterVersionRecommendedUpdate"
    status, current = cv.status, cv.status.desired.version
    if any(r.version == target for r in status.available_updates):
        return None
    for update in status.conditional_updates:
        if update.release.version != target:
            continue
        cond = update.condition("Recommended")
        if cond is None:
            return PreconditionError(name, "UnknownConditionType",
                                     f"Update from {current} to {target} has a status.conditionalUpdates entry, but "
                                     "no Recommended condition.", blocking=False)
        if cond.status == "True":
            return None
        if cond.status == "False":
            return PreconditionError(name, cond.reason,
                                     f"Update from {current} to {target} is not recommended:\n\n{cond.message}",
                                     blocking=False)
        return PreconditionError(name, cond.reason,
                                 f"Update from {current} to {target} is {cond.type}={cond.status}: {cond.reason}: "
                                 f"{cond.message}", blocking=False)
    if not cv.spec.channel:
        return PreconditionError(name, "NoChannel",
                                 f"Configured channel is unset, so the recommended status of updating from {current} "
                                 f"to {target} is unknown.", blocking=False)
    retrieved = status.condition("RetrievedUpdates")
    if retrieved is None:
        message = f"No RetrievedUpdates, so the recommended status of updating from {current} to {target} is unknown."
    elif retrieved.status == "True":
        message = (f"RetrievedUpdates={retrieved.status} ({retrieved.reason}), so the update from {current} to "
                   f"{target} is probably neither recommended nor supported.")
    else:
        message = (f"RetrievedUpdates={retrieved.status} ({retrieved.reason}), so the recommended status of updating "
                   f"from {current} to {target} is unknown.")
    return PreconditionError(name, "UnknownUpdate", message, blocking=False)


def summarize(errors: Sequence[PreconditionError], force: bool) -> Verdict:
    """``precondition.Summarize``: one message, or "Multiple precondition checks failed: …"."""
    if not errors:
        return Verdict((), False, "")
    rendered = [e.render() for e in errors]
    message = rendered[0] if len(rendered) == 1 else "Multiple precondition checks failed:\n* " + "\n* ".join(rendered)
    blocked = any(e.blocking for e in errors)
    if force and blocked:
        return Verdict(tuple(errors), False, f"Forced through blocking failures: {message}", forced=True)
    return Verdict(tuple(errors), blocked, message)


_RENDERED = re.compile(r'Precondition "([^"\n]+)" failed because of "([^"\n]*)"')


def force_only_named(message: str) -> list[str]:
    """The checks a summary (:func:`summarize`'s message, as ReleaseAccepted carries it) names that block for good."""
    named = (PreconditionError(name, reason, "", blocking=reason != "InvalidCurrentVersion")
             for name, reason in _RENDERED.findall(message))
    return list(dict.fromkeys(e.name for e in named if e.force_only))


def run_checks(cv: ClusterVersion | Mapping[str, Any], target: str, force: bool = False) -> Verdict:
    """Every check on ``cv`` (a view, or JSON read into one here)."""
    cv = ClusterVersion.of(cv)
    checks = [check_rollback(cv, target), check_giant_hop(cv, target), check_upgradeable(cv, target),
              check_recommended(cv, target)]
    return summarize([c for c in checks if c is not None], force)
