"""The CVO's check of the ClusterVersion's spec (lib/validation/validation.go ``ValidateClusterVersion``,
``ClearInvalidFields``) and the Invalid condition's message; the expected texts are those of
lib/validation/validation_test.go and pkg/cvo/cvo_test.go."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.updates.validation import clear_invalid_fields, invalid_message, validate_cluster_version

ID = "0a3a2d5c-5c6e-4c57-9a0b-1f7a0d8c7e11"


def cv(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "version"}, "spec": {"clusterID": ID, **spec}}


@pytest.mark.parametrize(("desired", "gated", "errors"), [
    ({"version": "4.16.3", "image": "quay.io/r@sha256:1", "acceptRisks": [{"name": "A"}]}, True, []),
    ({"acceptRisks": [{"name": "A"}]}, True, []),
    ({"version": "4.16.3", "acceptRisks": [{"name": "A"}]}, False,
     ["spec.desiredUpdate.acceptRisks: Forbidden: acceptRisks must not be specified"]),
    ({}, True, ["spec.desiredUpdate: Required value: must specify architecture, version, image, or acceptRisks"]),
    ({}, False, ["spec.desiredUpdate: Required value: must specify architecture, version, or image"]),
    ({"architecture": "Multi"}, False, []),
    ({"version": "4.16"}, True,
     ['spec.desiredUpdate.version: Invalid value: "4.16": must be a semantic version (1.2.3[-...])']),
])
def test_the_desired_update_rules(desired: dict[str, Any], gated: bool, errors: list[str]) -> None:
    assert [str(e) for e in validate_cluster_version(cv(desiredUpdate=desired), gated)] == errors


def test_the_upstream_and_the_cluster_id_as_the_cvos_test_writes_them() -> None:
    errors = validate_cluster_version(cv(upstream="#%GG", clusterID="not-valid-cluster-id"), False)
    assert invalid_message(errors) == (
        "The cluster version is invalid:\n* spec.upstream: Invalid value: \"#%GG\": must be a valid URL or empty\n"
        "* spec.clusterID: Invalid value: \"not-valid-cluster-id\": must be an RFC4122-variant UUID\n")
    one = validate_cluster_version(cv(clusterID="0a3a2d5c-5c6e-1c57-9a0b-1f7a0d8c7e11"), False)
    assert invalid_message(one) == ('The cluster version is invalid: spec.clusterID: Invalid value: '
                                    '"0a3a2d5c-5c6e-1c57-9a0b-1f7a0d8c7e11": must be a version-4 UUID')
    assert validate_cluster_version(cv(upstream="https://example.com/graph"), False) == []


def test_the_invalid_fields_are_cleared_and_nothing_else() -> None:
    obj = cv(upstream="#%GG", channel="stable-4.16", desiredUpdate={"version": "4.16.3", "acceptRisks": [{"name": "A"}]})
    cleared = clear_invalid_fields(obj, validate_cluster_version(obj, False))
    assert cleared["spec"] == {"clusterID": ID, "upstream": "", "channel": "stable-4.16"}
    assert obj["spec"]["desiredUpdate"]  # the object read is left as it was
    # a desiredUpdate that names nothing is not cleared (its error is of spec.desiredUpdate itself), as the CVO's
    empty = cv(desiredUpdate={})
    assert clear_invalid_fields(empty, validate_cluster_version(empty, False))["spec"]["desiredUpdate"] == {}


SPEC_VALUES = st.one_of(st.none(), st.integers(), st.text(max_size=40), st.lists(st.text(max_size=5), max_size=2),
                        st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=2))


@given(st.dictionaries(st.sampled_from(["upstream", "clusterID", "channel", "desiredUpdate"]), SPEC_VALUES),
       st.dictionaries(st.sampled_from(["version", "image", "architecture", "acceptRisks"]), SPEC_VALUES),
       st.booleans())
def test_any_spec_is_checked_without_an_exception(spec: dict[str, Any], desired: dict[str, Any], gated: bool) -> None:
    obj = {"spec": {**spec, "desiredUpdate": desired}}
    errors = validate_cluster_version(obj, gated)
    cleared = clear_invalid_fields(obj, errors)
    assert all(str(e).startswith(e.field + ": ") for e in errors)
    assert not [e for e in validate_cluster_version(cleared, gated) if e.field.startswith("spec.desiredUpdate.")]
    if errors:
        assert invalid_message(errors).startswith("The cluster version is invalid:")
