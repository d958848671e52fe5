"""When a sweep may start: cvo.runner.start, from the ClusterVersion as the cluster has it."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.payload.loader import Release, load_release
from cvo.runner import start
from tests.support.helpers import ReleaseFactory, obj


def cv(history: list[dict[str, Any]], image: str = "", version: str = "") -> dict[str, Any]:
    return {"status": {"history": history, "desired": {"image": image, "version": version}}}


def completed(version: str, image: str) -> dict[str, Any]:
    return {"state": "Completed", "version": version, "image": image}


@pytest.fixture
def releases(make_release: ReleaseFactory) -> tuple[Release, Release]:
    old = load_release(make_release({"a.yaml": obj("ConfigMap", "a", "ns")}, version="4.16.0", name="old"))
    new = load_release(make_release({"a.yaml": obj("ConfigMap", "a", "ns")}, version="4.16.3", name="new"))
    return old, new


def test_install_starts_on_a_new_cluster_or_resumes_the_same_release(releases: tuple[Release, Release]) -> None:
    old, new = releases
    start.check_install(None, old)
    start.check_install(cv([{"state": "Partial", "version": "4.16.0", "image": old.image}]), old)
    with pytest.raises(start.Refused, match=re.escape("is installing 4.16.0, not 4.16.3")):
        start.check_install(cv([{"state": "Partial", "version": "4.16.0"}]), new)
    assert not start.check_install(None, old)
    assert start.check_install(cv([completed("4.16.0", old.image)]), old)  # already there: nothing to do
    with pytest.raises(start.Refused, match=re.escape("already runs 4.16.0; use 'cvo upgrade")):
        start.check_install(cv([completed("4.16.0", old.image)]), new)
    with pytest.raises(start.Refused, match=re.escape("already runs 4.16.0 from another release image; use")):
        start.check_install(cv([completed("4.16.0", "file:///elsewhere")]), old)


def test_upgrade_needs_a_completed_release(releases: tuple[Release, Release]) -> None:
    old, new = releases
    for state in (None, cv([]), cv([{"state": "Partial", "version": "4.16.0"}])):
        with pytest.raises(start.NotInstalled, match=re.escape("no completed release to upgrade from")):
            start.check_upgrade(state, new)
    begin = start.check_upgrade(cv([completed("4.16.0", old.image)], old.image), new)
    assert begin == start.UpgradeStart(current_image=old.image, already_there=False)
    assert start.check_upgrade(cv([completed("4.16.3", new.image)], new.image), new).already_there


def test_reconcile_reapplies_only_the_running_release(releases: tuple[Release, Release], tmp_path: Path) -> None:
    old, new = releases
    loaded: list[tuple[Path, str | None]] = []

    def load(directory: Path, image: str | None) -> Release:
        loaded.append((directory, image))
        return old

    with pytest.raises(start.NotInstalled, match=re.escape("no release to reconcile")):
        start.reconcile_release(cv([]), None, None, False, load)
    running = cv([completed("4.16.0", old.image)], old.image, "4.16.0")
    # the gate: another release is an upgrade's job, never a reconcile's
    with pytest.raises(start.Refused, match=re.escape("is release 4.16.3, but the cluster runs 4.16.0")):
        start.reconcile_release(running, new, tmp_path / "new", False, load)
    assert start.reconcile_release(running, old, tmp_path / "old", False, load) is old
    assert loaded == []
    # from the ClusterVersion's image
    assert start.reconcile_release(running, None, None, False, load) is old
    assert loaded == [(Path(old.image.removeprefix("file://")), None)]
    # the same release from another directory keeps the image the cluster knows it by
    moved = cv([completed("4.16.0", "file:///elsewhere")], "file:///elsewhere", "4.16.0")
    start.reconcile_release(moved, old, tmp_path / "old", False, load)
    assert loaded[-1] == (tmp_path / "old", "file:///elsewhere")
    assert start.reconcile_release(moved, old, tmp_path / "old", True, load) is old


def test_a_release_image_that_is_not_a_directory_is_refused() -> None:
    with pytest.raises(start.Refused, match=re.escape("'quay.io/x@sha256:1' is not a local directory")):
        start.image_directory("quay.io/x@sha256:1")
    assert start.image_directory("file:///a/b") == Path("/a/b")


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=3), max_leaves=12)


@given(status=json_values, history=json_values, desired=json_values)
def test_any_clusterversion_shape_gives_a_decision_not_a_crash(status: Any, history: Any, desired: Any,
                                                               ) -> None:
    for shape in (status, {"status": status}, {"status": {"history": history, "desired": desired}}):
        with contextlib.suppress(start.Refused):
            start.check_install(shape if isinstance(shape, dict) else None, _stub())
        with contextlib.suppress(start.NotInstalled):
            start.check_upgrade(shape if isinstance(shape, dict) else None, _stub())


def _stub() -> Any:
    class Stub:  # only version and image are read
        version = "4.16.0"
        image = "file:///r"
    return Stub()
