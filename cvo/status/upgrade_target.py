"""Which release ``oc adm upgrade --to VERSION | --to-image IMAGE | --to-latest`` asks for, from the status.

openshift/oc pkg/cli/admin/upgrade/upgrade.go ``Options.Run`` (the ``--to-latest, --to, --to-image`` case):
the target is looked up in ``status.availableUpdates``, then among the conditional updates whose
``Recommended`` condition is there and not True (those need ``--allow-not-recommended``); an image found in
neither needs ``--allow-explicit-upgrade``; ``--to-latest`` takes the newest possible target.  Then the
client-side guards (``checkForUpgrade``), which ``--allow-upgrade-with-warnings`` turns into a warning.
A refusal is :class:`TargetRefused` with oc's message; the warnings are oc's stderr lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cvo.objects import ClusterVersion
from cvo.objects.clusterversion import Release
from cvo.objects.condition import Condition
from cvo.status.upgrade_list import (
    RECOMMENDED,
    RETRIEVED_UPDATES,
    check_for_upgrade,
    indented,
    sorted_releases,
)

FORCE_WARNING = ("warning: --force overrides cluster verification of your supplied release image and waives any "
                 "update precondition failures. Only use this if you are testing unsigned release images or you are "
                 "working around a known bug in the cluster-version operator and you have verified the "
                 "authenticity of the provided image yourself.")


class TargetRefused(Exception):
    """oc refuses the request (its error's text is ``str()``): nothing is written."""


@dataclass(frozen=True)
class Request:
    """What was asked for: the flags of ``oc adm upgrade`` that choose and allow a target."""

    to: str = ""  # --to VERSION
    to_image: str = ""  # --to-image IMAGE, as given
    to_latest: bool = False  # --to-latest
    allow_not_recommended: bool = False
    allow_explicit: bool = False  # --allow-explicit-upgrade
    allow_with_warnings: bool = False  # --allow-upgrade-with-warnings
    force: bool = False
    pulled: str = ""  # cvo: the image --to-image was pulled as (by digest), matched as the image itself is


@dataclass(frozen=True)
class Target:
    """The update to request (``version`` empty for an explicit image), or ``info`` (stdout) when there is
    nothing to do; ``warnings``: oc's stderr lines, in order."""

    version: str = ""
    image: str = ""
    info: str = ""
    warnings: tuple[str, ...] = ()
    conditional: bool = False  # a conditional update, taken with --allow-not-recommended
    explicit: bool = False  # an image outside the graph, taken with --allow-explicit-upgrade
    candidates: tuple[str, ...] = field(default=(), repr=False)


def _digest(image: str) -> str | None:
    """The digest of pull spec ``image`` (``""`` for a tag); ``None`` when it does not parse."""
    from cvo.images.errors import ImageError
    from cvo.images.reference import parse_image

    try:
        return parse_image(image).digest
    except ImageError:
        return None


def target_match(target: Release, to: str, to_image: str) -> tuple[bool, str]:
    """``targetMatch``: by version, by image, or by digest (a signature would match); ``(False, why)`` when an
    image cannot be parsed.  cvo's directory releases (``file://DIR``) match by image only."""
    if to and target.version == to:
        return True, ""
    if not to_image:
        return False, ""
    if target.image == to_image:
        return True, ""
    if target.image.startswith("file://"):
        return False, ""
    ours = _digest(target.image)
    if ours is None:
        return False, f"{target.image}: not a pull spec"
    theirs = _digest(to_image)
    if theirs is None:
        return False, f"{to_image}: not a pull spec"
    return bool(theirs) and ours == theirs, ""


def _matches(target: Release, request: Request, where: str, warnings: list[str]) -> bool:
    for image in dict.fromkeys(i for i in (request.to_image, request.pulled) if i) or [""]:
        match, why = target_match(target, request.to, image)
        if match:
            return True
        if why:
            warnings.append(f"warning: unable to calculate match for the update target in {where}: {why}")
    return False


def resolve(cv: ClusterVersion, request: Request) -> Target:
    """The release ``request`` asks for on ``cv``, as ``oc adm upgrade`` picks it (:class:`TargetRefused`)."""
    status = cv.status
    desired = status.desired
    if request.to and request.to == desired.version:
        return Target(info=f"info: Cluster is already at version {request.to}")
    if request.to_image and request.to_image == desired.image:
        return Target(info=f"info: Cluster is already at {request.to_image}")

    warnings: list[str] = []
    possible: list[Release] = []
    recommended_conditions: dict[str, Condition] = {}
    found: Target | None = None
    for available in status.available_updates:
        if _matches(available, request, "available updates", warnings):
            found = Target(available.version, request.to_image or available.image)
            break
        possible.append(available)
    if found is None:
        for update in status.conditional_updates:
            c = update.condition(RECOMMENDED)
            if c is None or c.status == "True":
                continue
            if _matches(update.release, request, "available conditional updates", warnings):
                if not request.allow_not_recommended:
                    raise TargetRefused(
                        f"the update {update.release.version} is not one of the recommended updates, but is "
                        f"available as a conditional update. To accept the {c.type}={c.status} risk and to proceed "
                        f"with update use --allow-not-recommended.\n  Reason: {c.reason}\n"
                        f"  Message: {indented(c.message)}\n")
                found = Target(update.release.version, update.release.image, conditional=True)
                warnings.append(_bypassed(update.release.version, c))
                break
            if request.allow_not_recommended:
                possible.append(update.release)
                recommended_conditions[update.release.image] = c
    if found is None and request.to_image and request.allow_explicit:
        found = Target("", request.to_image, explicit=True)
        warnings.append("warning: The requested upgrade image is not one of the available updates. You have used "
                        "--allow-explicit-upgrade for the update to proceed anyway")

    possible = sorted_releases(possible)
    if request.to_latest and possible:
        latest = possible[0]
        bypassed = recommended_conditions.get(latest.image)
        found = Target(latest.version, latest.image, conditional=bypassed is not None)
        if bypassed is not None:
            warnings.append(_bypassed(latest.version, bypassed))

    if found is None:
        refused = _nothing_found(cv, request, possible)
        if isinstance(refused, Target):
            return refused
        raise refused

    if request.force:
        warnings.append(FORCE_WARNING)
    blocked = check_for_upgrade(cv)
    if blocked is not None:
        if not request.allow_with_warnings:
            raise TargetRefused(f"{blocked}\n\nIf you want to upgrade anyway, use --allow-upgrade-with-warnings.")
        warnings.append(f"warning: --allow-upgrade-with-warnings is bypassing: {blocked}")
    return Target(found.version, found.image, warnings=tuple(warnings), conditional=found.conditional,
                  explicit=found.explicit, candidates=tuple(r.version for r in possible))


def _bypassed(version: str, c: Condition) -> str:
    return (f"warning: with --allow-not-recommended you have accepted the risks with {version} and bypassed "
            f"{c.type}={c.status} {c.reason}: {c.message}")


def _nothing_found(cv: ClusterVersion, request: Request, possible: list[Release]) -> TargetRefused | Target:
    """oc's answer when no target was found: why, and what to specify instead."""
    retrieved = cv.status.condition(RETRIEVED_UPDATES)
    option = "--allow-explicit-upgrade" if request.to_image else "--to-image"
    article = "an" if request.to_latest else "the"
    next_step = f"{option} to continue with {article} update"
    if retrieved is not None and retrieved.status != "True":
        return TargetRefused(f"cannot refresh available updates:\n  Reason: {retrieved.reason}\n"
                             f"  Message: {indented(retrieved.message)}\n\nspecify {next_step}.")
    if not possible and request.allow_not_recommended:
        return TargetRefused(f"no recommended or conditional updates, specify {next_step} or wait for new updates "
                             "to be available.")
    if not possible and request.to_latest:
        return Target(info=f"info: Cluster is already at the latest available version {cv.status.desired.version}")
    if not possible:
        return TargetRefused(f"no recommended updates, specify {next_step} or wait for new updates to be available.")
    return TargetRefused(f"the update is not one of the possible targets: {', '.join(r.version for r in possible)}. "
                         f"specify {next_step}.")
