"""The one decision: which sweep a ClusterVersion calls for, and what runs it.

As the CVO's ``pkg/cvo/cvo.go`` ``sync`` picks the sync worker's state from the ClusterVersion:

    no Completed history ──────────────► Initializing (the release being installed, else the desired
                                         release, else the controller's own)
    desired == history[0], Completed ──► Reconciling
    anything else ─────────────────────► Updating     (through the gates: runner.upgrade)

The controller (:mod:`cvo.controller.loop`) takes it at every turn; ``cvo install``, ``cvo upgrade`` and
``cvo reconcile`` take it once, in process, with what they ask for (:func:`for_install`,
:func:`for_upgrade`, :func:`for_reconcile`), after the checks of :mod:`cvo.runner.start`.
:func:`runner_for` builds what runs the plan; both runners are a :class:`Runner`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cvo.clock import Clock
from cvo.cluster.api import Cluster, Object
from cvo.images.reference import looks_like_image
from cvo.payload.fields import dig
from cvo.payload.filters import LoadFilter
from cvo.payload.graph import Mode
from cvo.payload.loader import Release
from cvo.runner import start
from cvo.runner.events import Progress, Reporter
from cvo.runner.releases import Catalogue, Desired, Releases, default_loader
from cvo.runner.retrieve import Retriever
from cvo.runner.status_writer import StatusWriter
from cvo.runner.sweep import SweepOptions, SweepResult
from cvo.runner.upgrade import UpgradeController
from cvo.runner.worker import Worker


@dataclass(frozen=True)
class Plan:
    """One sweep decided on."""

    state: str  # Initializing, Updating, Reconciling (the CVO's payload states)
    release: Release  # the release applied (the target of an update)
    current: Release | None = None  # an update's current release
    force: bool = False  # an update goes ahead despite blocking preconditions (spec.desiredUpdate.force)
    verified: bool = False  # the release image's signature was verified (history's ``verified``)
    accepted_risks: str = ""  # a forced verification failure, recorded on the history entry

    def describe(self) -> str:
        if self.state == "Updating" and self.current is not None and self.current.version != self.release.version:
            return f"update {self.current.version} → {self.release.version}"
        return f"{self.state.lower()} {self.release.version}"


class Runner(Protocol):
    """What runs a plan (:class:`Worker`, :class:`UpgradeController`), as the live display and the
    controller's probes see it."""

    async def run(self) -> SweepResult: ...

    @property
    def progress(self) -> Progress:
        """The sweep's progress now (the update's once an upgrade's gates let it start)."""

    @property
    def blocked(self) -> str:
        """Why the sweep waits for its preconditions; ``""`` when it does not."""


def desired_of(cv: Object, gated: bool) -> Desired | None:
    """``spec.desiredUpdate`` as pkg/cvo/cvo.go ``sync`` takes it: dropped when one of its fields fails validation
    (lib/validation ``ClearInvalidFields``: e.g. ``acceptRisks`` without the ClusterUpdateAcceptRisks gate, which
    ``gated`` says), and no update when it names no release (only risks to accept: ``findUpdateFromConfig``)."""
    from cvo.updates.validation import clear_invalid_fields, validate_cluster_version

    valid = clear_invalid_fields(cv, validate_cluster_version(cv, gated))
    return Desired.of(dig(valid, "spec", "desiredUpdate"))


def desired_update_work(update: object) -> object:
    """What of ``spec.desiredUpdate`` is work for a sweep (the CVO's ``SyncWork.Desired``): the accepted risks are
    not, only whether there are any (without the gate they make the whole desiredUpdate invalid)."""
    if not isinstance(update, dict):
        return update or None
    work = {k: v for k, v in update.items() if k != "acceptRisks"}
    if update.get("acceptRisks"):
        work["acceptRisks"] = True
    return work or None


def decide(cv: Object | None, releases: Releases, own_image: str = "", *, desired: Desired | None = None,
           reconcile: bool = False, gated: bool = False) -> Plan | None:
    """The sweep a ClusterVersion calls for now; ``None``: nothing to do (no release known).

    ``desired``: asked for instead of ``spec.desiredUpdate`` (a command's own release); ``reconcile``: the
    release the cluster runs, once more, whatever its history's head says (``cvo reconcile``); ``gated``: the
    ClusterUpdateAcceptRisks gate (:func:`desired_of`).  Raises :class:`~cvo.runner.releases.RetrieveFailed`
    for a release that cannot be found.
    """
    cv = cv or {}
    desired = desired or desired_of(cv, gated)
    history = [h for h in dig(cv, "status", "history") or [] if isinstance(h, dict)]
    running = str(dig(cv, "status", "desired", "image") or "")
    if reconcile:
        return Plan("Reconciling", releases.by_image(running))
    if not start.has_completed(cv):
        if history and running:  # an install in progress goes on with its release
            release = releases.by_image(running)  # (the CVO ignores a version change meanwhile)
        elif desired is not None:
            release = releases.resolve(desired)
        elif own_image:
            release = releases.by_image(own_image)
        else:
            return None
        return _with_retrieval(Plan("Initializing", release), releases)
    target = releases.resolve(desired) if desired is not None else releases.by_image(running)
    head = history[0] if history else {}
    if target.image == running and head.get("image") == running and head.get("state") == "Completed":
        return Plan("Reconciling", target)
    current = target if target.image == running else releases.by_image(running)
    return _with_retrieval(Plan("Updating", target, current, force=bool(desired and desired.force)), releases)


def _with_retrieval(plan: Plan, releases: Releases) -> Plan:
    """``plan`` with what retrieving its release image found: verified, or forced past verification."""
    retrieved = releases.retrieved.get(plan.release.image)
    if retrieved is None:
        return plan
    return dataclasses.replace(plan, verified=retrieved.verified, accepted_risks=retrieved.accepted_risks)


def _running(cv: Object | None) -> str:
    return str(dig(cv or {}, "status", "desired", "image") or "")


def for_install(cv: Object | None, release: Release) -> Plan | None:
    """``cvo install``: ``release`` asked for; ``None`` when the cluster runs it already.  Another release is
    :class:`~cvo.runner.start.Refused`; an install in progress goes on, with ``release`` if it is of the
    same version (read from another directory)."""
    if start.check_install(cv, release):
        return None
    releases = Releases(Catalogue(None), default_loader())
    releases.add(release)
    if running := _running(cv):
        releases.add(release, running)
    return decide(cv, releases, desired=Desired(release.version, release.image))


def for_upgrade(cv: Object | None, target: Release, force: bool, current: Release | None,
                load_filter: LoadFilter | None, retriever: Retriever | None = None, *, verified: bool = False,
                accepted_risks: str = "") -> Plan:
    """``cvo upgrade --to``: ``target`` asked for as ``spec.desiredUpdate``.  ``current``: the cluster's
    release read from where ``--from`` says it is now; else it is read from the image the cluster recorded
    (:class:`~cvo.runner.start.Moved` when that directory is gone, a
    :class:`~cvo.runner.releases.RetrieveFailed` when it cannot be read).  The caller has checked
    :func:`~cvo.runner.start.check_upgrade`.  ``retriever`` pulls a current release the cluster knows by a pull
    spec; ``verified`` and ``accepted_risks``: what checking the target image's signature found
    (:func:`cvo.runner.retrieve.check_signature`)."""
    releases = upgrade_releases(cv, target, current, load_filter, retriever)
    plan = decide(cv, releases, desired=Desired(target.version, target.image, force))
    assert plan is not None  # a desired release always makes a plan
    return dataclasses.replace(plan, verified=verified, accepted_risks=accepted_risks)


def upgrade_releases(cv: Object | None, target: Release, current: Release | None, load_filter: LoadFilter | None,
                     retriever: Retriever | None = None) -> Releases:
    """The releases an upgrade to ``target`` involves: the target, and the current one (given, or to be read from
    where the cluster recorded it: :class:`~cvo.runner.start.Moved` when that directory is gone)."""
    releases = Releases(Catalogue(None), default_loader(load_filter), retriever)
    releases.add(target)
    if current is not None:
        releases.add(current)
    else:
        start.check_current_directory(cv, "--from")
    return releases


def for_reconcile(cv: Object | None, given: Release | None, where: Path | None, keep_image: bool,
                  load: Callable[[Path, str | None], Release], retriever: Retriever | None = None) -> Plan:
    """``cvo reconcile``: the release the cluster runs (:func:`cvo.runner.start.reconcile_release`; a release the
    cluster knows by a pull spec is pulled by ``retriever``)."""
    running = _running(cv)
    if given is None and retriever is not None and looks_like_image(running):
        releases = Releases(Catalogue(None), default_loader(), retriever)
        plan = decide(cv, releases, reconcile=True)
        assert plan is not None
        return plan
    release = start.reconcile_release(cv, given, where, keep_image, load)
    releases = Releases(Catalogue(None), default_loader())
    releases.add(release, _running(cv))
    plan = decide(cv, releases, reconcile=True)
    assert plan is not None
    return plan


def runner_for(plan: Plan, cluster: Cluster, reporter: Reporter, clock: Clock, options: SweepOptions,
               on_release: Callable[[Release], None] | None = None, *, write_spec: bool = False,
               status: StatusWriter | None = None) -> Runner:
    """What runs ``plan``: the sync worker in the plan's mode, or the upgrade through its gates.

    ``on_release`` is told of every release the plan involves first (the simulated operators learn them).
    ``write_spec``: the upgrade sets ``spec.desiredUpdate`` itself once its gates pass (a command run
    without a controller, which holds the intent in memory until then); the controller never writes
    the spec, as the CVO does not.  ``status``: the writer the sweep reports to (a controller's one writer).
    """
    for release in (plan.current, plan.release):
        if release is not None and on_release is not None:
            on_release(release)
    options = dataclasses.replace(options, verified=plan.verified,
                                  accepted_risks=_joined(options.accepted_risks, plan.accepted_risks))
    if plan.state == "Updating":
        assert plan.current is not None
        return UpgradeController(cluster, plan.current, plan.release, reporter, clock, options,
                                 force=plan.force, write_spec=write_spec, status=status)
    mode = Mode.INSTALL if plan.state == "Initializing" else Mode.RECONCILE
    return Worker(cluster, plan.release, mode, reporter, clock, options, status=status)


def _joined(*risks: str) -> str:
    """Accepted risks, one a line (``loadUpdatedPayload`` joins them with a newline)."""
    return "\n".join(r for r in risks if r)
