"""Inclusion filters: library-go's Manifest.Include, its order and its messages, at load and apply time."""

from __future__ import annotations

import pytest

from cvo.payload.filters import (
    DEFAULT_PROFILE,
    KNOWN_CAPABILITIES,
    ApplyFilter,
    LoadFilter,
    Override,
    apply_exclusion,
    capabilities_of,
    load_exclusion,
    parse_list,
)
from cvo.payload.graph import Mode
from cvo.payload.loader import load_release
from cvo.payload.manifest import Manifest
from cvo.plan.build import make_plan, plan_json
from tests.support.helpers import ReleaseFactory, obj

HA = "include.release.openshift.io/self-managed-high-availability"
FEATURE_SET = "release.openshift.io/feature-set"
FEATURE_GATE = "release.openshift.io/feature-gate"
MAJOR = "release.openshift.io/major-version"
CAPABILITY = "capability.openshift.io/name"


def manifest(annotations: dict[str, str] | None = None, kind: str = "ConfigMap", api: str = "v1",
             name: str = "x", namespace: str = "ns") -> Manifest:
    return Manifest("f.yaml", "release-manifests/f.yaml", 1, api, kind, name, namespace,
                    {HA: "true"} if annotations is None else annotations, b"{}")


def excluded(annotations: dict[str, str], f: LoadFilter | None = None, **kwargs: str) -> str | None:
    return load_exclusion(manifest(annotations, **kwargs), f or LoadFilter(major_version=4))


# --- load time: each filter ------------------------------------------------------------------


def test_default_profile_is_self_managed_high_availability() -> None:
    assert LoadFilter().profile == DEFAULT_PROFILE == "self-managed-high-availability"
    assert excluded({HA: "true"}) is None


def test_no_annotations() -> None:
    assert excluded({}) == "no annotations"


@pytest.mark.parametrize(("annotations", "reason"), [
    ({"other": "x"}, f"{HA} unset"),
    ({HA: "false"}, f"unrecognized value {HA}=false"),
    ({HA: "True"}, f"unrecognized value {HA}=True"),
    ({HA: ""}, f"unrecognized value {HA}="),
    ({"include.release.openshift.io/hypershift": "true"}, f"{HA} unset"),
])
def test_profile_annotation_must_be_exactly_true(annotations: dict[str, str], reason: str) -> None:
    assert excluded(annotations) == reason


def test_other_profiles() -> None:
    hypershift = "include.release.openshift.io/hypershift"
    f = LoadFilter(profile="hypershift", major_version=4)
    assert excluded({hypershift: "true"}, f) is None
    assert excluded({HA: "true"}, f) == f"{hypershift} unset"


def test_exclude_identifier() -> None:
    ann = {HA: "true", "exclude.release.openshift.io/internal-openshift-hosted": "true"}
    assert excluded(ann) is None  # no identifier given: nothing is excluded by it
    f = LoadFilter(exclude_id="internal-openshift-hosted", major_version=4)
    assert excluded(ann, f) == "exclude.release.openshift.io/internal-openshift-hosted=true"
    assert excluded({**ann, "exclude.release.openshift.io/internal-openshift-hosted": "false"}, f) is None
    assert excluded(ann, LoadFilter(exclude_id="other", major_version=4)) is None


@pytest.mark.parametrize(("value", "feature_set", "reason"), [
    ("Default", "", None),
    ("Default", "TechPreviewNoUpgrade", f'"TechPreviewNoUpgrade" is required, and {FEATURE_SET}=Default'),
    ("TechPreviewNoUpgrade", "", f'"Default" is required, and {FEATURE_SET}=TechPreviewNoUpgrade'),
    ("TechPreviewNoUpgrade,DevPreviewNoUpgrade", "DevPreviewNoUpgrade", None),
    ("TechPreviewNoUpgrade,DevPreviewNoUpgrade,TechPreviewNoUpgrade", "",
     f'"Default" is required, and {FEATURE_SET}=DevPreviewNoUpgrade,TechPreviewNoUpgrade'),
    ("CustomNoUpgrade", "CustomNoUpgrade", None),
    ("OKD", "OKD", None),
    ("Default,Bogus", "", f'unrecognized value "Bogus" in {FEATURE_SET}=Default,Bogus; known values are: '
                          "CustomNoUpgrade,Default,DevPreviewNoUpgrade,OKD,TechPreviewNoUpgrade"),
    ("default", "", f'unrecognized value "default" in {FEATURE_SET}=default; known values are: '
                    "CustomNoUpgrade,Default,DevPreviewNoUpgrade,OKD,TechPreviewNoUpgrade"),
    ("Default, TechPreviewNoUpgrade", "", f'unrecognized value " TechPreviewNoUpgrade" in {FEATURE_SET}=Default, '
                                          "TechPreviewNoUpgrade; known values are: "
                                          "CustomNoUpgrade,Default,DevPreviewNoUpgrade,OKD,TechPreviewNoUpgrade"),
])
def test_feature_set(value: str, feature_set: str, reason: str | None) -> None:
    f = LoadFilter(feature_set=feature_set, major_version=4)
    assert excluded({HA: "true", FEATURE_SET: value}, f) == reason


@pytest.mark.parametrize(("value", "gates", "reason"), [
    ("A", {"A"}, None),
    ("A", set(), "feature gate A is required but not enabled"),
    ("-A", set(), None),
    ("-A", {"A"}, "feature gate A is enabled but manifest requires it to be disabled"),
    ("A,-B", {"A"}, None),
    ("A,-B", {"A", "B"}, "feature gate B is enabled but manifest requires it to be disabled"),
    ("A, B", {"A"}, "feature gate B is required but not enabled"),
    (" A , ,B,", {"A", "B"}, None),
    ("", set(), None),
    ("B,A", set(), "feature gate B is required but not enabled"),
])
def test_feature_gates(value: str, gates: set[str], reason: str | None) -> None:
    f = LoadFilter(feature_gates=frozenset(gates), major_version=4)
    assert excluded({HA: "true", FEATURE_GATE: value}, f) == reason


FEATURE_GATE_KIND = {"kind": "FeatureGate", "api": "config.openshift.io/v1"}
CRD_KIND = {"kind": "CustomResourceDefinition", "api": "apiextensions.k8s.io/v1"}


@pytest.mark.parametrize(("value", "major", "reason"), [
    ("5", 5, None),
    ("5", 4, "major version 4 does not match any required versions"),
    ("4,5", 4, None),
    ("-5", 5, "major version 5 matches excluded version 5"),
    ("-5", 4, None),
    ("-4,-6", 5, None),
    ("5,-5", 5, "inclusion and exclusion requirements overlap: [5]"),
    ("4,5,-5,-4", 6, "inclusion and exclusion requirements overlap: [4 5]"),
    ("05", 5, None),
    ("", 5, None),
    ("five", 5, 'invalid included major version "five" in annotation: '
                'strconv.ParseUint: parsing "five": invalid syntax'),
    ("-x", 5, 'invalid excluded major version "x" in annotation: strconv.ParseUint: parsing "x": invalid syntax'),
    ("+5", 5, 'invalid included major version "+5" in annotation: strconv.ParseUint: parsing "+5": invalid syntax'),
    ("²", 5, 'invalid included major version "²" in annotation: strconv.ParseUint: parsing "²": invalid syntax'),
    ("18446744073709551616", 5, 'invalid included major version "18446744073709551616" in annotation: '
                                'strconv.ParseUint: parsing "18446744073709551616": value out of range'),
])
@pytest.mark.parametrize("kind", [FEATURE_GATE_KIND, CRD_KIND], ids=["FeatureGate", "CRD"])
def test_major_version(value: str, major: int, reason: str | None, kind: dict[str, str]) -> None:
    assert excluded({HA: "true", MAJOR: value}, LoadFilter(major_version=major), **kind) == reason


@pytest.mark.parametrize("kind", [
    {"kind": "ConfigMap", "api": "v1"},
    {"kind": "FeatureGate", "api": "example.com/v1"},
    {"kind": "CustomResourceDefinition", "api": "apiextensions.k8s.io.example/v1"},
])
def test_major_version_only_on_feature_gates_and_crds(kind: dict[str, str]) -> None:
    assert excluded({HA: "true", MAJOR: "4"}, LoadFilter(major_version=4), **kind) == (
        "major version filtering is only supported for feature gates and custom resources")


def test_major_version_of_older_feature_gate_api_version_is_still_allowed() -> None:
    assert excluded({HA: "true", MAJOR: "5"}, LoadFilter(major_version=5), kind="FeatureGate",
                    api="config.openshift.io/v1alpha1") is None


# --- load time: order of the checks ---------------------------------------------------------


def test_checks_run_in_library_go_order() -> None:
    """Each row removes the cause of the previous row's reason: the next check in order takes over."""
    exclude = {"exclude.release.openshift.io/hosted": "true"}
    fs, fg, mv, off = {FEATURE_SET: "TechPreviewNoUpgrade"}, {FEATURE_GATE: "Missing"}, {MAJOR: "9"}, {HA: "false"}
    rows: list[tuple[dict[str, str], str | None]] = [
        ({**exclude, **fs, **fg, **mv, **off}, "exclude.release.openshift.io/hosted=true"),
        ({**fs, **fg, **mv, **off}, "both feature set and feature gate annotations are present: "
                                    "manifests may specify either a feature set or a feature gate, but not both"),
        ({**fs, **mv, **off}, f'"Default" is required, and {FEATURE_SET}=TechPreviewNoUpgrade'),
        ({**fg, **mv, **off}, "feature gate Missing is required but not enabled"),
        ({**mv, **off}, "major version 4 does not match any required versions"),
        (off, f"unrecognized value {HA}=false"),
        ({HA: "true"}, None),
    ]
    f = LoadFilter(exclude_id="hosted", major_version=4)
    for row, reason in rows:
        assert load_exclusion(manifest(row, **CRD_KIND), f) == reason, row


def test_capabilities_and_overrides_are_not_load_time_filters(make_release: ReleaseFactory) -> None:
    root = make_release({"0000_10_a_x.yaml": obj("ConfigMap", "c", "ns", annotations={
        HA: "true", CAPABILITY: "NotAKnownCapability"})})
    release = load_release(root)
    assert [m.name for m in release.manifests] == ["c"]
    assert release.excluded == []


# --- load time: through the loader ----------------------------------------------------------


def test_every_excluded_document_keeps_its_reason(make_release: ReleaseFactory) -> None:
    root = make_release({
        "0000_10_a_x.yaml": [
            obj("ConfigMap", "kept", "ns"),
            obj("ConfigMap", "tp", "ns", annotations={HA: "true", FEATURE_SET: "TechPreviewNoUpgrade"}),
            obj("ConfigMap", "none", "ns", annotations={}),
            obj("ConfigMap", "gate", "ns", annotations={HA: "true", FEATURE_GATE: "G"}),
            obj("ConfigMap", "hosted", "ns", annotations={"include.release.openshift.io/hypershift": "true"}),
        ],
    })
    release = load_release(root)
    assert [m.name for m in release.manifests] == ["kept"]
    assert [(e.manifest.name, e.manifest.document, e.reason) for e in release.excluded] == [
        ("tp", 2, f'"Default" is required, and {FEATURE_SET}=TechPreviewNoUpgrade'),
        ("none", 3, "no annotations"),
        ("gate", 4, "feature gate G is required but not enabled"),
        ("hosted", 5, f"{HA} unset"),
    ]
    assert [m.name for m in release.all_manifests] == ["kept", "tp", "none", "gate", "hosted"]
    release = load_release(root, load_filter=LoadFilter(feature_set="TechPreviewNoUpgrade",
                                                        feature_gates=frozenset({"G"})))
    assert [m.name for m in release.manifests] == ["kept", "tp", "gate"]


def test_major_version_comes_from_the_payload_version(make_release: ReleaseFactory) -> None:
    files = {
        "0000_10_a_fg.yaml": [
            obj("FeatureGate", "only5", api="config.openshift.io/v1", annotations={HA: "true", MAJOR: "5"}),
            obj("FeatureGate", "not5", api="config.openshift.io/v1", annotations={HA: "true", MAJOR: "-5"}),
        ],
    }
    four = load_release(make_release(files, version="4.22.0", name="four"))
    five = load_release(make_release(files, version="5.0.0-0.nightly", name="five"))
    assert [m.name for m in four.manifests] == ["not5"]
    assert [m.name for m in five.manifests] == ["only5"]
    assert [e.reason for e in five.excluded] == ["major version 5 matches excluded version 5"]


# --- apply time -----------------------------------------------------------------------------


def test_every_known_capability_is_enabled_by_default() -> None:
    f = ApplyFilter()
    assert f.enabled_capabilities == frozenset(KNOWN_CAPABILITIES)
    for cap in KNOWN_CAPABILITIES:
        assert apply_exclusion(manifest({HA: "true", CAPABILITY: cap}), f) is None


@pytest.mark.parametrize(("value", "enabled", "reason"), [
    ("Console", {"Console"}, None),
    ("Console", set(), "disabled capabilities: Console"),
    ("Console+Insights", {"Console"}, "disabled capabilities: Insights"),
    ("Console+Insights+Storage", set(), "disabled capabilities: Console, Insights, Storage"),
    ("Nope", set(KNOWN_CAPABILITIES), "unrecognized capability names: Nope"),
    ("Nope+Console+Other", set(), "unrecognized capability names: Nope, Other"),
    ("", set(), None),
])
def test_capabilities(value: str, enabled: set[str], reason: str | None) -> None:
    f = ApplyFilter(enabled_capabilities=frozenset(enabled))
    assert apply_exclusion(manifest({HA: "true", CAPABILITY: value}), f) == reason


def test_unknown_capabilities_allowed() -> None:
    f = ApplyFilter(enabled_capabilities=frozenset({"Console"}), allow_unknown_capabilities=True)
    assert apply_exclusion(manifest({HA: "true", CAPABILITY: "Console+Future"}), f) == "disabled capabilities: Future"
    assert apply_exclusion(manifest({HA: "true", CAPABILITY: "Console"}), f) is None


def test_capabilities_of() -> None:
    assert capabilities_of(manifest({CAPABILITY: "A+B"})) == ["A", "B"]
    assert capabilities_of(manifest({CAPABILITY: ""})) == []
    assert capabilities_of(manifest({})) == []


def override(kind: str = "ConfigMap", group: str = "", namespace: str = "ns", name: str = "x",
             unmanaged: bool = True) -> Override:
    return Override(kind=kind, group=group, namespace=namespace, name=name, unmanaged=unmanaged)


@pytest.mark.parametrize(("overrides", "m", "reason"), [
    ([override()], manifest(), "overridden"),
    ([override(unmanaged=False)], manifest(), None),
    ([override(namespace="other")], manifest(), None),
    ([override(name="y")], manifest(), None),
    ([override(kind="Secret")], manifest(), None),
    ([override(group="apps")], manifest(), None),
    ([override(kind="Deployment", group="apps")], manifest(kind="Deployment", api="apps/v1"), "overridden"),
    ([override(kind="Deployment")], manifest(kind="Deployment", api="apps/v1"), None),
    # cluster-scoped objects: the override's namespace does not matter
    ([override(kind="Namespace", namespace="whatever", name="x")], manifest(kind="Namespace", namespace=""),
     "overridden"),
    # the first matching override decides
    ([override(unmanaged=False), override()], manifest(), None),
    ([override(namespace="other", unmanaged=False), override()], manifest(), "overridden"),
    ([override(kind="Namespace", namespace="a", unmanaged=False), override(kind="Namespace", namespace="b")],
     manifest(kind="Namespace", namespace=""), None),
])
def test_overrides(overrides: list[Override], m: Manifest, reason: str | None) -> None:
    assert apply_exclusion(m, ApplyFilter(overrides=tuple(overrides))) == reason


def test_override_from_dict() -> None:
    o = Override.from_dict({"kind": "Deployment", "group": "apps", "namespace": "n", "name": "d", "unmanaged": True})
    assert o == Override("Deployment", "apps", "n", "d", True)
    assert not Override.from_dict({"kind": "Deployment"}).unmanaged


def test_apply_time_order_gates_then_capabilities_then_overrides() -> None:
    m = manifest({HA: "true", FEATURE_GATE: "G", CAPABILITY: "Console"})
    f = ApplyFilter(enabled_capabilities=frozenset(), overrides=(override(),), feature_gates=frozenset())
    assert apply_exclusion(m, f) == "feature gate G is required but not enabled"
    f = ApplyFilter(enabled_capabilities=frozenset(), overrides=(override(),), feature_gates=frozenset({"G"}))
    assert apply_exclusion(m, f) == "disabled capabilities: Console"
    f = ApplyFilter(overrides=(override(),), feature_gates=frozenset({"G"}))
    assert apply_exclusion(m, f) == "overridden"
    assert apply_exclusion(m, ApplyFilter(feature_gates=None)) is None  # gates not re-checked without a set


def test_apply_time_skip_keeps_the_task_in_the_graph_and_total(make_release: ReleaseFactory) -> None:
    root = make_release({
        "0000_10_a_x.yaml": [obj("ConfigMap", "plain", "ns"),
                             obj("ConfigMap", "console", "ns", annotations={HA: "true", CAPABILITY: "Console"})],
        "0000_20_b_x.yaml": obj("ConfigMap", "overridden", "ns"),
    })
    release = load_release(root)
    f = ApplyFilter(enabled_capabilities=frozenset(KNOWN_CAPABILITIES) - {"Console"},
                    overrides=(override(name="overridden"),))
    plan = make_plan(release, Mode.UPDATE, profile=DEFAULT_PROFILE, apply_filter=f)
    doc = plan_json(plan)
    assert doc["total"] == 3
    tasks = {t["name"]: t for node in doc["nodes"] for t in node["tasks"]}
    assert set(tasks) == {"plain", "console", "overridden"}
    assert "skip" not in tasks["plain"]
    assert tasks["console"]["skip"] == "disabled capabilities: Console"
    assert tasks["overridden"]["skip"] == "overridden"
    assert [t.index for t in plan.tasks] == [1, 2, 3] and all(t.total == 3 for t in plan.tasks)


def test_parse_list() -> None:
    assert parse_list("a, b,,c ") == frozenset({"a", "b", "c"})
    assert parse_list("") == frozenset()
    assert parse_list(None) == frozenset()
