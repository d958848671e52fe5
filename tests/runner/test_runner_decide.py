"""The one decision (cvo.runner.decide): the controller's turn and the commands' requests, and what runs a plan."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cvo.clock import Clock
from cvo.cluster.embedded.server import SimCluster
from cvo.payload.graph import Mode
from cvo.payload.loader import Release, load_release
from cvo.runner import start
from cvo.runner.decide import (
    Plan,
    Runner,
    decide,
    desired_update_work,
    for_install,
    for_reconcile,
    for_upgrade,
    runner_for,
)
from cvo.runner.events import Progress, Recorder
from cvo.runner.releases import Catalogue, Desired, Releases, RetrieveFailed, default_loader
from cvo.runner.sweep import SweepOptions
from cvo.runner.upgrade import UpgradeController
from cvo.runner.worker import Worker
from tests.support.helpers import ReleaseFactory, obj


def cv(history: list[dict[str, Any]], image: str = "", version: str = "",
       desired: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"spec": {}, "status": {"history": history, "desired": {"image": image, "version": version}}}
    if desired is not None:
        doc["spec"]["desiredUpdate"] = desired
    return doc


def entry(release: Release, state: str = "Completed") -> dict[str, Any]:
    return {"state": state, "version": release.version, "image": release.image}


@pytest.fixture
def three(make_release: ReleaseFactory) -> tuple[Release, Release, Release]:
    """4.16.0, 4.16.3 and 4.17.0, each in its own directory (file:// images)."""
    return tuple(load_release(make_release({"a.yaml": obj("ConfigMap", "a", "ns")}, version=v, name=v))
                 for v in ("4.16.0", "4.16.3", "4.17.0"))  # type: ignore[return-value]


def known(*releases: Release) -> Releases:
    out = Releases(Catalogue(None), default_loader())
    for release in releases:
        out.add(release)
    return out


def test_the_controller_turn_follows_the_cvo_states(three: tuple[Release, Release, Release]) -> None:
    old, new, _ = three
    releases = known(old, new)
    assert decide(None, releases) is None  # nothing known: nothing to do
    assert decide(None, releases, old.image) == Plan("Initializing", old)
    installing = cv([entry(old, "Partial")], old.image, old.version, desired={"image": new.image})
    assert decide(installing, releases) == Plan("Initializing", old)  # an install goes on with its release
    done = cv([entry(old)], old.image, old.version)
    assert decide(done, releases) == Plan("Reconciling", old)
    asked = cv([entry(old)], old.image, old.version, desired={"image": new.image, "force": True})
    assert decide(asked, releases) == Plan("Updating", new, old, force=True)
    failed = cv([entry(new, "Partial"), entry(old)], new.image, new.version, desired={"image": new.image})
    assert decide(failed, releases) == Plan("Updating", new, new)  # not reached yet: still updating


def test_accepted_risks_alone_are_no_update_and_without_the_gate_they_void_the_desired_update(
        three: tuple[Release, Release, Release]) -> None:
    """lib/validation ``ValidateClusterVersion`` and ``ClearInvalidFields``, as pkg/cvo/cvo.go ``sync`` applies
    them before it looks for the desired release."""
    old, new, _ = three
    releases = known(old, new)
    risks = [{"name": "EtcdMigration"}]
    only_risks = cv([entry(old)], old.image, old.version, desired={"acceptRisks": risks})
    assert decide(only_risks, releases, gated=True) == Plan("Reconciling", old)
    assert decide(only_risks, releases, gated=False) == Plan("Reconciling", old)
    with_target = cv([entry(old)], old.image, old.version, desired={"image": new.image, "acceptRisks": risks})
    assert decide(with_target, releases, gated=True) == Plan("Updating", new, old)
    assert decide(with_target, releases, gated=False) == Plan("Reconciling", old)  # Forbidden: cleared whole
    assert decide(with_target, releases) == Plan("Reconciling", old)  # the gate is off unless said


def test_what_of_the_desired_update_is_work_for_a_sweep() -> None:
    """Accepting one more risk does not restart the sweep (the CVO's SyncWork compares the release and force);
    the first risk accepted or the last withdrawn may void the desiredUpdate without the gate, so they do."""
    base = {"version": "4.17.0", "image": "x@sha256:1"}
    one = desired_update_work({**base, "acceptRisks": [{"name": "A"}]})
    assert one == desired_update_work({**base, "acceptRisks": [{"name": "A"}, {"name": "B"}]})
    assert one != desired_update_work(base) != desired_update_work({**base, "force": True})
    assert desired_update_work(None) is None and desired_update_work({}) is None


def test_a_command_asks_for_its_release_and_reconcile_for_the_current_one(
        three: tuple[Release, Release, Release]) -> None:
    old, new, newer = three
    releases = known(old, new, newer)
    spec_says = cv([entry(old)], old.image, old.version, desired={"image": new.image})
    assert decide(spec_says, releases, desired=Desired(newer.version, newer.image)) == Plan("Updating", newer, old)
    partial = cv([entry(new, "Partial"), entry(old)], new.image, new.version)
    assert decide(partial, releases) == Plan("Updating", new, new)
    assert decide(partial, releases, reconcile=True) == Plan("Reconciling", new)


def test_install_goes_through_the_decision(three: tuple[Release, Release, Release], tmp_path: Path) -> None:
    old, new, _ = three
    assert for_install(None, old) == Plan("Initializing", old)
    with_spec = cv([], desired={"image": new.image})  # a new cluster's spec names another release
    assert for_install(with_spec, old) == Plan("Initializing", old)
    assert for_install(cv([entry(old)], old.image, old.version), old) is None  # runs it already
    with pytest.raises(start.Refused, match=re.escape("the cluster already runs 4.16.0")):
        for_install(cv([entry(old)], old.image, old.version), new)
    # resuming the same version from another directory: the command's release, as before
    copy = load_release(shutil.copytree(Path(old.image.removeprefix("file://")), tmp_path / "copy"))
    gone = "file:///nonexistent/4.16.0"
    assert for_install(cv([{"state": "Partial", "version": "4.16.0", "image": gone}], gone, "4.16.0"), copy) == \
        Plan("Initializing", copy)


def test_upgrade_and_reconcile_go_through_the_decision(three: tuple[Release, Release, Release]) -> None:
    old, new, _ = three
    running = cv([entry(old)], old.image, old.version)
    plan = for_upgrade(running, new, False, None, None)  # the current release read from the recorded image
    assert (plan.state, plan.release, plan.force) == ("Updating", new, False)
    assert plan.current is not None and (plan.current.version, plan.current.image) == (old.version, old.image)
    assert for_upgrade(running, new, True, old, None) == Plan("Updating", new, old, force=True)  # --from
    moved = cv([entry(old)], "file:///nonexistent/4.16.0", "4.16.0")
    with pytest.raises(start.Moved, match="give its new place with --from DIR"):
        for_upgrade(moved, new, False, None, None)
    unreadable = cv([entry(old)], "quay.io/x:4.16.0", "4.16.0")
    with pytest.raises(RetrieveFailed, match="release images are not pulled here"):
        for_upgrade(unreadable, new, False, None, None)

    def load(directory: Path, image: str | None) -> Release:
        return load_release(directory, release_image=image)

    partial = cv([entry(new, "Partial"), entry(old)], new.image, new.version)
    assert for_reconcile(partial, None, None, False, load).state == "Reconciling"  # whatever the head says
    # --release DIR --release-image X: the given release, kept under the user's image
    given = load_release(Path(new.image.removeprefix("file://")), release_image="example.com/mine:4.16.3")
    plan = for_reconcile(partial, given, Path(new.image.removeprefix("file://")), True, load)
    assert plan == Plan("Reconciling", given) and plan.release.image == "example.com/mine:4.16.3"


def test_runner_for_builds_what_runs_the_plan_and_tells_of_its_releases(three: tuple[Release, Release, Release]) -> None:
    old, new, _ = three
    clock = Clock(datetime(2025, 1, 1, tzinfo=UTC))
    cluster = SimCluster(clock=clock)
    told: list[str] = []
    install = runner_for(Plan("Initializing", old), cluster, Recorder(), clock, SweepOptions(),
                         lambda r: told.append(r.version))
    assert isinstance(install, Worker) and install.mode is Mode.INSTALL and install.blocked == ""
    assert install.progress.version == "4.16.0"
    reconcile = runner_for(Plan("Reconciling", old), cluster, Recorder(), clock, SweepOptions())
    assert isinstance(reconcile, Worker) and reconcile.mode is Mode.RECONCILE
    update = runner_for(Plan("Updating", new, old), cluster, Recorder(), clock, SweepOptions(),
                        lambda r: told.append(r.version))
    assert isinstance(update, UpgradeController) and (update.current, update.target) == (old, new)
    assert told == ["4.16.0", "4.16.0", "4.16.3"]


def test_an_upgrade_says_what_blocks_it_until_its_update_runs(three: tuple[Release, Release, Release]) -> None:
    """The Runner protocol's members on the upgrade: ``blocked`` while its gates hold it back (its reconciles
    of the current release included), ``""`` once the update runs; ``progress`` is the running sweep's."""
    old, new, _ = three
    clock = Clock(datetime(2025, 1, 1, tzinfo=UTC))
    cluster = SimCluster(clock=clock)
    upgrade: Runner = UpgradeController(cluster, old, new, Recorder(), clock, SweepOptions())
    assert isinstance(upgrade, UpgradeController)
    assert (upgrade.blocked, upgrade.progress) == ("", Progress())
    upgrade.blocked_message = "ClusterOperator etcd: Upgradeable=False"
    upgrade.worker = Worker(cluster, old, Mode.RECONCILE, Recorder(), clock)
    assert upgrade.blocked == "ClusterOperator etcd: Upgradeable=False"
    assert upgrade.progress is upgrade.worker.progress and upgrade.progress.mode == "reconcile"
    upgrade.worker = Worker(cluster, new, Mode.UPDATE, Recorder(), clock)
    assert upgrade.blocked == "" and upgrade.progress.version == "4.16.3"
