"""``oc adm upgrade`` without a target: the cluster's update state, as oc prints it (stdout and stderr apart).

openshift/oc pkg/cli/admin/upgrade/upgrade.go ``Options.Run`` (the ``default:`` case): Failing, Progressing,
Upgradeable=False and ReleaseAccepted≠True, the upstream and channel, the "Recommended updates" table (Go's
``tabwriter`` with a minimum cell width of 14), RetrievedUpdates=False as a warning, and the conditional
updates that are not recommended (listed with ``--include-not-recommended``, else one line saying they
exist).  Also ``checkForUpgrade`` (the client-side guards before a target is requested), and the document of
``cvo upgrade -o json|yaml``, which oc does not have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from cvo.objects import ClusterVersion
from cvo.objects.clusterversion import ConditionalUpdate, Release
from cvo.objects.condition import Condition
from cvo.payload import semver
from cvo.payload.gostrings import go_quote

FAILING = "Failing"
PROGRESSING = "Progressing"
UPGRADEABLE = "Upgradeable"
RELEASE_ACCEPTED = "ReleaseAccepted"
RETRIEVED_UPDATES = "RetrievedUpdates"
RECOMMENDED = "Recommended"
INVALID = "Invalid"

T = TypeVar("T")


@dataclass(frozen=True)
class Printed:
    """What oc writes: ``out`` on stdout, ``err`` on stderr (its warnings)."""

    out: str
    err: str


def indented(message: str) -> str:
    """oc's ``strings.ReplaceAll(c.Message, "\\n", "\\n  ")``: a message's later lines under its first."""
    return message.replace("\n", "\n  ")


def _version_key(version: str) -> tuple[int, Any]:
    """``sortReleasesBySemanticVersions``: semantic versions first, newest first; then the others by their text,
    last first (applied with ``reverse=True``)."""
    try:
        return 1, semver.parse(version)
    except semver.SemverError:
        return 0, version


def _newest_first(items: Iterable[T], version: Callable[[T], str]) -> list[T]:
    return sorted(items, key=lambda item: _version_key(version(item)), reverse=True)


def sorted_releases(releases: Iterable[Release]) -> list[Release]:
    """``sortReleasesBySemanticVersions`` (decreasing; unparsable versions last, by their text decreasing)."""
    return _newest_first(releases, lambda r: r.version)


def sorted_conditional(updates: Iterable[ConditionalUpdate]) -> list[ConditionalUpdate]:
    """``sortConditionalUpdatesBySemanticVersions``."""
    return _newest_first(updates, lambda u: u.release.version)


def not_recommended(update: ConditionalUpdate) -> Condition | None:
    """The update's ``Recommended`` condition when it is there and not True (oc lists only those)."""
    c = update.condition(RECOMMENDED)
    return c if c is not None and c.status != "True" else None


def contains_not_recommended(updates: Iterable[ConditionalUpdate]) -> bool:
    """``containsNotRecommendedUpdate``."""
    return any(not_recommended(u) is not None for u in updates)


def _table(rows: Sequence[tuple[str, str]], headers: bool) -> str:
    """``tabwriter.NewWriter(out, 14, 2, 1, ' ', 0)`` over ``"  VERSION\\tIMAGE"`` and a row per update: the first
    column as wide as its widest cell plus one, at least 14.  Without ``headers`` the header line is left out
    and the columns stay as wide as with it (kubectl's ``--no-headers``)."""
    cells = [("  VERSION", "IMAGE"), *(("  " + v, i) for v, i in rows)]
    width = max(14, *(len(c[0]) + 1 for c in cells))
    return "".join(f"{first.ljust(width)}{second}\n" for first, second in cells[0 if headers else 1:])


def render_list(cv: ClusterVersion, include_not_recommended: bool = False, headers: bool = True) -> Printed:
    """``oc adm upgrade`` (``--include-not-recommended``) on ``cv``: what it prints on stdout and on stderr."""
    out: list[str] = []
    err: list[str] = []
    status, spec = cv.status, cv.spec

    c = status.condition(FAILING)
    if c is not None:
        if c.status != "False":
            out.append(f"{c.type}={c.status}:\n\n  Reason: {c.reason}\n  Message: {indented(c.message)}\n\n")
    else:
        err.append(f"warning: No current {FAILING} info, see `oc describe clusterversion` for more details.\n")

    c = status.condition(PROGRESSING)
    if c is not None and c.message:
        out.append(f"info: An upgrade is in progress. {c.message}\n" if c.status == "True" else f"{c.message}\n")
    else:
        err.append(f"warning: No current {PROGRESSING} info, see `oc describe clusterversion` for more details.\n")
    out.append("\n")

    c = status.condition(UPGRADEABLE)
    if c is not None and c.status == "False":
        out.append(f"{c.type}={c.status}\n\n  Reason: {c.reason}\n  Message: {indented(c.message)}\n\n")

    c = status.condition(RELEASE_ACCEPTED)
    if c is not None and c.status != "True":
        out.append(f"ReleaseAccepted={c.status}\n\n  Reason: {c.reason}\n  Message: {indented(c.message)}\n\n")

    if spec.channel:
        if not spec.upstream:
            out.append("Upstream is unset, so the cluster will use an appropriate default.\n")
        else:
            out.append(f"Upstream: {spec.upstream}\n")
        if status.desired.channels:
            out.append(f"Channel: {spec.channel} (available channels: {', '.join(status.desired.channels)})\n")
        else:
            out.append(f"Channel: {spec.channel}\n")

    retrieved = status.condition(RETRIEVED_UPDATES)
    failed = retrieved if retrieved is not None and retrieved.status == "False" else None
    if status.available_updates:
        out.append("\nRecommended updates:\n\n")
        out.append(_table([(r.version, r.image) for r in sorted_releases(status.available_updates)], headers))
        if failed is not None:
            err.append(f"warning: Cannot refresh available updates:\n  Reason: {failed.reason}\n"
                       f"  Message: {indented(failed.message)}\n\n")
    elif failed is not None:
        err.append(f"warning: Cannot display available updates:\n  Reason: {failed.reason}\n"
                   f"  Message: {indented(failed.message)}\n\n")
    else:
        out.append("No updates available. You may still upgrade to a specific release image with --to-image or "
                   "wait for new updates to be available.\n")

    conditional = status.conditional_updates
    if include_not_recommended:
        if contains_not_recommended(conditional):
            out.append("\nUpdates with known issues:\n")
            for update in sorted_conditional(conditional):
                c = not_recommended(update)
                if c is not None:
                    out.append(f"\n  Version: {update.release.version}\n  Image: {update.release.image}\n")
                    out.append(f"  Reason: {c.reason}\n  Message: {indented(c.message.strip())}\n")
        else:
            out.append("\nNo updates which are not recommended based on your cluster configuration are available.\n")
    elif contains_not_recommended(conditional):
        qualifier = ""
        for update in conditional:
            c = update.condition(RECOMMENDED)
            if c is not None and c.status not in ("True", "False"):
                qualifier = f", or where the recommended status is {go_quote(c.status)},"
                break
        out.append(f"\nAdditional updates which are not recommended{qualifier} for your cluster configuration are "
                   "available, to view those re-run the command with --include-not-recommended.\n")
    return Printed("".join(out), "".join(err))


def check_for_upgrade(cv: ClusterVersion) -> str | None:
    """``checkForUpgrade``: why a requested update should wait (an invalid ClusterVersion, a failing or
    already updating cluster), each as oc words it; ``None`` when nothing stands in the way."""
    results: list[str] = []
    status = cv.status
    c = status.condition(INVALID)
    if c is not None and c.status == "True":
        results.append("the cluster version object is invalid, you must correct the invalid state first:\n\n"
                       f"  Reason: {c.reason}\n  Message: {indented(c.message)}")
    c = status.condition(FAILING)
    if c is not None and c.status == "True":
        target = status.desired.version or status.desired.image or (
            "ClusterVersion status.desired has neither a version nor image; please open a bug")
        results.append(f"the cluster is experiencing an error reconciling {go_quote(target)}:\n\n"
                       f"  Reason: {c.reason}\n  Message: {indented(c.message)}")
    c = status.condition(PROGRESSING)
    if c is not None and c.status == "True":
        results.append(f"the cluster is already upgrading:\n\n  Reason: {c.reason}\n  Message: {indented(c.message)}")
    return "\n\n".join(results) if results else None


def _condition_data(c: Condition) -> dict[str, Any]:
    return {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}


def list_data(cv: ClusterVersion, include_not_recommended: bool = False) -> dict[str, Any]:
    """The document of ``cvo upgrade -o json|yaml`` (cvo's; oc prints only text): the same facts as the text,
    with the conditions oc reads, the updates newest first and the not-recommended ones with their reason."""
    status, spec = cv.status, cv.spec
    conditions = [c for t in (FAILING, PROGRESSING, UPGRADEABLE, RELEASE_ACCEPTED, RETRIEVED_UPDATES)
                  if (c := status.condition(t)) is not None]
    notrec = []
    for update in sorted_conditional(status.conditional_updates):
        c = not_recommended(update)
        if c is not None:
            notrec.append({"version": update.release.version, "image": update.release.image,
                           "recommended": _condition_data(c),
                           "risks": [r.name for r in update.risks]})
    return {
        "current": {"version": status.desired.version, "image": status.desired.image},
        "upstream": spec.upstream,
        "channel": spec.channel,
        "availableChannels": list(status.desired.channels),
        "conditions": [_condition_data(c) for c in conditions],
        "recommendedUpdates": [{"version": r.version, "image": r.image}
                               for r in sorted_releases(status.available_updates)],
        "notRecommendedUpdates": notrec if include_not_recommended else None,
        "hasNotRecommendedUpdates": bool(notrec),
    }
