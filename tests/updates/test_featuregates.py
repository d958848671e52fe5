"""The CVO's feature gates: the FeatureGate's status as the CVO reads it, cvo's feature-set and
--feature-gates rules where no status is rendered, and the acceptRisks validation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.updates.featuregates import (
    CvoGates,
    accepted_risk_names,
    cvo_gates,
    from_feature_gate_status,
)


def fg(feature_set: str | None = None, status: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "config.openshift.io/v1", "kind": "FeatureGate", "metadata": {"name": "cluster"},
                           "spec": dict(spec)}
    if feature_set is not None:
        obj["spec"]["featureSet"] = feature_set
    if status is not None:
        obj["status"] = {"featureGates": status}
    return obj


def entry(version: str, enabled: list[str] = (), disabled: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {"version": version, "enabled": [{"name": n} for n in enabled], "disabled": [{"name": n} for n in disabled]}


def test_no_feature_gate_is_the_cvos_default_every_gate_off() -> None:
    assert cvo_gates(None, "4.21.0") == CvoGates(unknown_version=True, source="default")


def test_the_status_entry_of_the_cvos_version_decides_as_in_the_cvo() -> None:
    gate = fg("Default", [entry("4.20.0", ["ClusterUpdateAcceptRisks"]),
                          entry("4.21.0", ["ImageStreamImportMode"], ["ClusterUpdateAcceptRisks"])])
    got = cvo_gates(gate, "4.21.0")
    assert (got.unknown_version, got.accept_risks, got.status_release_architecture, got.source) == \
        (False, False, True, "status")
    assert cvo_gates(gate, "4.20.0").accept_risks is True
    assert from_feature_gate_status(gate, "9.9.9") is None


@pytest.mark.parametrize(("feature_set", "accept"), [
    ("TechPreviewNoUpgrade", True), ("DevPreviewNoUpgrade", True), ("Default", False), ("", False), ("OKD", False)])
def test_without_status_the_feature_set_decides(feature_set: str, accept: bool) -> None:
    got = cvo_gates(fg(feature_set), "4.21.0")
    assert got.accept_risks is accept and got.unknown_version is False
    assert got.status_release_architecture is (feature_set in ("", "Default", "OKD", "TechPreviewNoUpgrade",
                                                                "DevPreviewNoUpgrade"))


def test_custom_no_upgrade_names_its_gates() -> None:
    gate = fg("CustomNoUpgrade", customNoUpgrade={"enabled": ["ClusterUpdateAcceptRisks"], "disabled": []})
    assert cvo_gates(gate, "4.21.0").accept_risks is True
    gate = fg("CustomNoUpgrade", customNoUpgrade={"enabled": ["ClusterUpdateAcceptRisks"],
                                                  "disabled": ["ClusterUpdateAcceptRisks"]})
    assert cvo_gates(gate, "4.21.0").accept_risks is False


def test_flags() -> None:
    assert cvo_gates(None, "4.21.0", feature_set="TechPreviewNoUpgrade").accept_risks is True
    got = cvo_gates(fg("Default"), "4.21.0", enabled=["ClusterUpdateAcceptRisks"])
    assert got.accept_risks is True and got.source == "featureSet Default+--feature-gates"
    assert cvo_gates(None, "4.21.0", enabled=["SomethingElse"]) == CvoGates()
    # the cluster's own word beats --feature-set
    assert cvo_gates(fg("Default"), "4.21.0", feature_set="TechPreviewNoUpgrade").accept_risks is False


def test_unknown_feature_set_is_the_default() -> None:
    assert cvo_gates(fg("NoSuchSet"), "4.21.0") == CvoGates()


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
                    max_leaves=15))
def test_any_feature_gate_object_gives_gates(obj: Any) -> None:
    for candidate in (obj, {"spec": obj, "status": obj}, {"status": {"featureGates": obj}}):
        assert isinstance(cvo_gates(candidate if isinstance(candidate, dict) else None, "1.0.0"), CvoGates)


def test_accepted_risk_names() -> None:
    assert accepted_risk_names({"acceptRisks": [{"name": "A"}, {"name": "B"}, {"x": 1}, 7]}) == {"A", "B"}
    assert accepted_risk_names(None) == frozenset()
