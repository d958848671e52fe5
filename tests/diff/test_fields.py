"""The field pairing of the diff (cvo/diff/fields.py), checked against the merge's own rule of drift
(cvo.runner.apply.contains) on generated objects."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.diff.compute import _same
from cvo.diff.fields import changed_paths, pair, project
from cvo.runner.apply import contains, merge

KEYS = st.sampled_from(["a", "b", "name", "spec", "image", "env"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "x", "y"]))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=12,
)
NAMED = st.lists(st.fixed_dictionaries({"name": st.sampled_from(["p", "q", "r", "s"]), "image": SCALARS}),
                 max_size=4, unique_by=lambda d: d["name"])


def same(a: Any, b: Any) -> bool:
    return orjson.dumps(a) == orjson.dumps(b)


@settings(max_examples=400)
@given(VALUES, VALUES)
def test_a_pair_differs_exactly_when_the_merge_sees_drift(desired: Any, live: Any) -> None:
    before, after = pair(desired, live)
    assert same(before, after) == contains(desired, live)


@settings(max_examples=400)
@given(VALUES, VALUES)
def test_the_shown_values_are_the_live_ones_and_the_manifests(desired: Any, live: Any) -> None:
    """Before holds only live values, after only the manifest's: nothing is made up on either side."""
    before, after = pair(desired, live)
    assert contains(before, live)
    assert contains(after, desired)


@settings(max_examples=200)
@given(VALUES, VALUES)
def test_changed_paths_are_empty_exactly_when_nothing_changed(desired: Any, live: Any) -> None:
    before, after = pair(desired, live)
    assert (changed_paths(before, after) == []) == same(before, after)


def test_a_boolean_is_not_a_number() -> None:
    assert changed_paths({"a": 1}, {"a": True}) == ["a"]


@given(NAMED, NAMED)
def test_lists_of_named_elements_pair_by_name(desired: list[dict], live: list[dict]) -> None:
    before, after = pair(desired, live)
    if len(desired) != len(live) and not contains(desired, live):
        assert [e["name"] for e in before] == [e["name"] for e in live]
        assert [e["name"] for e in after] == [e["name"] for e in desired]


def test_fields_only_the_live_object_has_never_show() -> None:
    """A server default or an operator's field (here: ``replicas`` scaled, ``paused``, a defaulted pull policy)
    is not in the pair; the image the manifest sets is."""
    desired = {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:2"}]}}}}
    live = {"spec": {"replicas": 3, "paused": True, "template": {"spec": {"containers": [
        {"name": "web", "image": "web:1", "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/x"}]}}}}
    before, after = pair(desired, live)
    assert before == {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:1"}]}}}}
    assert after == desired
    assert changed_paths(before, after) == ["spec.template.spec.containers[0].image"]
    assert project(desired, live) == before


def test_an_empty_value_the_server_drops_is_not_drift() -> None:
    assert pair({"a": {}, "b": 1}, {"b": 1}) == ({"b": 1}, {"b": 1})
    assert pair({"a": False}, {}) == ({}, {})


OBJECTS = st.fixed_dictionaries(
    {"metadata": st.fixed_dictionaries({}, optional={"labels": st.dictionaries(KEYS, st.sampled_from(["1", "2"]),
                                                                               max_size=2)})},
    optional={"spec": VALUES, "data": VALUES, "extra": VALUES})


@settings(max_examples=400)
@given(OBJECTS, OBJECTS, st.booleans())
def test_the_fast_check_never_hides_a_write(desired: dict, live: dict, typed: bool) -> None:
    """What the byte-wise check calls the same, merge() leaves alone (a write it would send is never missed)."""
    if _same(desired, live, typed):
        assert merge(desired, live, typed) is None
    if same(desired, live):  # and it sees through the identical ones (the common case it is there for)
        assert _same(desired, live, typed)
