"""Whether a sweep may start, from the ClusterVersion as the cluster has it: the checks before a run.

``cvo install`` starts only on a cluster that has not completed a release (or that is installing this
same one); ``cvo upgrade`` only on one that has completed a release; ``cvo reconcile`` only re-applies
the release the cluster runs — moving to another release is an upgrade's job, through its preconditions
(the Worker refuses it again at the ClusterVersion write: :class:`cvo.runner.sweep.WrongRelease`).
Pure functions over the ClusterVersion object; the command line maps the two refusals to exit codes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvo.cluster.api import Object
from cvo.payload.conditions import current_version
from cvo.payload.loader import Release

FILE_SCHEME = "file://"


class NotInstalled(Exception):
    """The cluster has no release yet, so there is nothing to upgrade from or to reconcile."""


class Refused(Exception):
    """The request does not fit the cluster's state (another release, a release image cvo cannot read)."""


def _status(cv: Object | None) -> dict[str, Any]:
    status = (cv or {}).get("status")
    return status if isinstance(status, dict) else {}


def _history(cv: Object | None) -> list[dict[str, Any]]:
    history = _status(cv).get("history")
    return [h for h in history if isinstance(h, dict)] if isinstance(history, list) else []


def _desired(cv: Object | None) -> dict[str, Any]:
    desired = _status(cv).get("desired")
    return desired if isinstance(desired, dict) else {}


def has_completed(cv: Object | None) -> bool:
    return any(h.get("state") == "Completed" for h in _history(cv))


def runs(cv: Object | None, release: Release) -> bool:
    """Whether the cluster's completed current release is ``release`` (the same image): nothing to install or
    upgrade to."""
    history = _history(cv)
    return bool(history) and history[0].get("state") == "Completed" and history[0].get("image") == release.image


def check_install(cv: Object | None, release: Release) -> bool:
    """An install starts on a new cluster, or goes on with the one it was installing.  ``True``: the cluster
    already runs ``release`` (nothing to do, as for an upgrade to it); another release is :class:`Refused`."""
    history = _history(cv)
    if runs(cv, release):
        return True
    if has_completed(cv):
        current = current_version(history)
        other = " from another release image" if current == release.version else ""
        raise Refused(f"the cluster already runs {current}{other}; use 'cvo upgrade --to DIR' "
                      f"or a new --state file")
    if history and history[0].get("version") != release.version:
        raise Refused(f"the cluster is installing {history[0].get('version')}, not {release.version}")
    return False


@dataclass(frozen=True)
class UpgradeStart:
    current_image: str  # the release the cluster is at (or moving to): its operators run now
    already_there: bool  # the target is the completed current release: nothing to do


def check_upgrade(cv: Object | None, target: Release) -> UpgradeStart:
    """An upgrade starts from a completed release."""
    if cv is None or not has_completed(cv):
        raise NotInstalled("no cluster has been installed yet: it has no completed release to upgrade from "
                           "(cvo install RELEASE_DIR)")
    return UpgradeStart(current_image=str(_desired(cv).get("image") or ""), already_there=runs(cv, target))


def image_directory(image: str) -> Path:
    """The release directory a ``file://`` release image names; :class:`Refused` for any other image."""
    if not image.startswith(FILE_SCHEME):
        raise Refused(f"the cluster's release image {image!r} is not a local directory; pass --release DIR")
    return Path(image[len(FILE_SCHEME):])


class Moved(Refused):
    """The cluster's current release was read from a directory that is no longer there (moved or deleted)."""

    def __init__(self, version: str, directory: Path, option: str) -> None:
        super().__init__(f"the cluster's current release {version or '(unknown version)'} was read from {directory}, "
                         f"which no longer exists (moved or deleted?): give its new place with {option} DIR")
        self.version = version
        self.directory = directory


def check_current_directory(cv: Object | None, option: str) -> None:
    """:class:`Moved` (naming ``option``, the flag that says where it is now) when the cluster's current release
    is a ``file://`` directory that no longer exists."""
    desired = _desired(cv)
    image = str(desired.get("image") or "")
    if image.startswith(FILE_SCHEME) and not Path(image[len(FILE_SCHEME):]).is_dir():
        raise Moved(str(desired.get("version") or ""), Path(image[len(FILE_SCHEME):]), option)


def reconcile_release(cv: Object | None, given: Release | None, where: Path | None, keep_image: bool,
                      load: Callable[[Path, str | None], Release]) -> Release:
    """The release a reconcile re-applies: the cluster's current one, read from ``given`` if the user named a
    directory (``where``), else from the ClusterVersion's image (:class:`Moved` when that directory is gone).
    ``load(directory, image)`` reads a release (image None: the directory's own).  ``keep_image``: the user
    gave the release image explicitly."""
    desired = _desired(cv)
    image = str(desired.get("image") or "")
    if not image:
        raise NotInstalled("no cluster has been installed yet: it has no release to reconcile (cvo install RELEASE_DIR)")
    if given is None or where is None:
        check_current_directory(cv, "--release")
        return load(image_directory(image), None)
    check_current_release(given, desired, where)
    if given.image != image and not keep_image:
        return load(where, image)  # the same release from another directory keeps the image the cluster knows
    return given


def current_release_from(cv: Object | None, where: Path, load: Callable[[Path, str | None], Release]) -> Release:
    """The cluster's current release read from ``where`` (``cvo upgrade --from DIR``: its directory has moved since
    it was applied), known by the image the cluster recorded; :class:`Refused` if ``where`` holds another release."""
    desired = _desired(cv)
    current = str(desired.get("version") or "")
    release = load(where, str(desired.get("image") or "") or None)
    if release.version != current:
        raise Refused(f"--from {where} is release {release.version}, but the cluster runs {current}: --from says "
                      f"where the current release is now (the release to upgrade to is --to)")
    return release


def check_current_release(release: Release, desired: dict[str, Any], where: Path) -> None:
    """Reconcile re-applies the release the cluster runs; moving to another one is an upgrade's job.

    The release may live in another directory now (moved, or a copy): the version decides.
    """
    current = str(desired.get("version") or "")
    if release.version != current:
        raise Refused(f"--release {where} is release {release.version}, but the cluster runs {current}: "
                      f"reconcile only re-applies the current release; to move to {release.version}, run "
                      f"'cvo upgrade --to {where}' (its preconditions decide)")
