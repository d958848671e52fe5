"""``payload_crds``: which of the payload's CRDs serves a (group, kind, version), for any CRD shape.

An install reads every CRD of the payload when its attempt starts (to send them early), so a malformed
CRD must not break that: its own task reports it (tests/objects/test_malformed_objects.py).
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.payload.manifest import Manifest
from cvo.runner.early_crds import payload_crds


def crd_manifest(name: str, spec: Any, api: str = "apiextensions.k8s.io/v1") -> Manifest:
    raw = orjson.dumps({"apiVersion": api, "kind": "CustomResourceDefinition", "metadata": {"name": name},
                        "spec": spec})
    return Manifest(f"0000_50_x_{name}.yaml", f"release-manifests/0000_50_x_{name}.yaml", 1, api,
                    "CustomResourceDefinition", name, "", {}, raw)


def test_served_versions_map_to_their_crd() -> None:
    good = crd_manifest("things.example.com", {
        "group": "example.com", "names": {"kind": "Thing", "plural": "things"},
        "versions": [{"name": "v1", "served": True}, {"name": "v2", "served": False}, {"name": "v1beta1"}]})
    beta = crd_manifest("olds.example.com", {"group": "example.com", "names": {"kind": "Old"}, "version": "v1beta1"},
                        api="apiextensions.k8s.io/v1beta1")
    assert payload_crds([good, beta]) == {("example.com", "Thing", "v1"): good,
                                          ("example.com", "Thing", "v1beta1"): good,
                                          ("example.com", "Old", "v1beta1"): beta}


def test_malformed_crds_are_left_out() -> None:
    shapes = [5, "x", None, [1], {"names": "thing"}, {"group": "g", "names": {"kind": 5}, "versions": [{"name": "v1"}]},
              {"group": ["g"], "names": {"kind": "K"}, "versions": [{"name": "v1"}]},
              {"group": "g", "names": {"kind": "K"}, "versions": 5},
              {"group": "g", "names": {"kind": "K"}, "versions": [5, {"name": 7}, {"name": ""}, {"name": {}}]},
              {"group": "g", "names": {"kind": "K"}, "version": 3}]
    assert payload_crds([crd_manifest(f"m{i}.g", shape) for i, shape in enumerate(shapes)]) == {}


JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children,
                                                                                      max_size=4), max_leaves=20)
SPEC = st.one_of(JSON, st.fixed_dictionaries({}, optional={
    "group": JSON | st.text(max_size=8), "names": JSON | st.fixed_dictionaries({}, optional={"kind": JSON}),
    "versions": JSON | st.lists(JSON | st.fixed_dictionaries({}, optional={"name": JSON, "served": JSON})),
    "version": JSON}))


@settings(max_examples=300, deadline=None)
@given(SPEC)
def test_any_crd_shape_gives_string_keys_or_nothing(spec: Any) -> None:
    m = crd_manifest("any.example.com", spec)
    for key, crd in payload_crds([m]).items():
        assert all(isinstance(part, str) for part in key) and key[1] and key[2]
        assert crd is m
