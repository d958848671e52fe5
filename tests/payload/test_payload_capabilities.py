"""Capabilities kept enabled: ``GetImplicitlyEnabledCapabilities`` (lib/manifest/manifest.go) and
``SetCapabilities`` (pkg/payload/capability/capability.go), on manifests built here."""

from __future__ import annotations

from typing import Any

import orjson

from cvo.payload.capabilities import implicitly_enabled_by_update, still_enabled
from cvo.payload.filters import KNOWN_CAPABILITIES, ApplyFilter
from cvo.payload.manifest import manifests_from_headers, parse_headers

KNOWN = frozenset(KNOWN_CAPABILITIES)


def manifest(name: str, caps: str | None = None, kind: str = "ConfigMap", namespace: str = "ns") -> Any:
    annotations: dict[str, str] = {"include.release.openshift.io/self-managed-high-availability": "true"}
    if caps is not None:
        annotations["capability.openshift.io/name"] = caps
    doc = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": namespace,
                                                         "annotations": annotations}}
    (m,) = manifests_from_headers(parse_headers(orjson.dumps(doc), "x.yaml"), "x.yaml", "x.yaml")
    return m


def settings(*disabled: str, overrides: tuple[Any, ...] = ()) -> ApplyFilter:
    return ApplyFilter(enabled_capabilities=KNOWN - set(disabled), overrides=overrides)


def test_a_manifest_moving_under_a_disabled_capability_enables_it() -> None:
    got = implicitly_enabled_by_update([manifest("a", "Console")], [manifest("a")], settings("Console"), frozenset())
    assert got == {"Console"}


def test_an_update_manifest_that_is_included_needs_nothing() -> None:
    assert implicitly_enabled_by_update([manifest("a", "Console")], [manifest("a")], settings(), frozenset()) == set()


def test_a_resource_the_current_release_left_out_needs_nothing() -> None:
    current = [manifest("a", "Console")]  # disabled today too: nothing runs that would be dropped
    assert implicitly_enabled_by_update([manifest("a", "Console")], current, settings("Console"), frozenset()) == set()


def test_only_the_same_resource_counts() -> None:
    for other in (manifest("b"), manifest("a", namespace="other"), manifest("a", kind="Secret")):
        assert implicitly_enabled_by_update([manifest("a", "Console")], [other], settings("Console"),
                                            frozenset()) == set()


def test_only_capabilities_the_resource_did_not_have_before_and_not_enabled() -> None:
    update = [manifest("a", "Console+Insights+Build")]
    current = [manifest("a", "Build")]
    got = implicitly_enabled_by_update(update, current, settings("Console", "Insights"), frozenset())
    assert got == {"Console", "Insights"}


def test_implicitly_enabled_ones_are_kept_and_not_added_twice() -> None:
    got = implicitly_enabled_by_update([manifest("a", "Console")], [manifest("a")],
                                       settings("Console", "Insights"), frozenset({"Insights"}))
    assert got == {"Console", "Insights"}


def test_unknown_capability_names_are_allowed_on_both_sides() -> None:
    got = implicitly_enabled_by_update([manifest("a", "FutureCap")], [manifest("a")], settings(), frozenset())
    assert got == {"FutureCap"}


def test_what_was_enabled_stays_enabled() -> None:
    caps = still_enabled(frozenset({"Build"}), KNOWN, ["Build", "Console", "NotACapability"])
    assert (caps.configured, caps.implicit, caps.enabled) == ({"Build"}, {"Console"}, {"Build", "Console"})
    assert still_enabled(frozenset({"Build"}), KNOWN, [], ["Insights"]).implicit == {"Insights"}
