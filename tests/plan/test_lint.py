"""``cvo lint``: every rule fires on what it is about and stays quiet otherwise; the command's output."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cvo.cli.main import main
from cvo.payload.filters import LoadFilter
from cvo.payload.loader import load_release
from cvo.plan.lint import RULES, Finding, Severity, lint
from tests.support.helpers import HA, ReleaseFactory, cluster_operator, obj

HA_KEY = next(iter(HA))
VERSION = "4.16.0"


def deployment(name: str, namespace: str = "openshift-foo") -> dict[str, Any]:
    return obj("Deployment", name, namespace, api="apps/v1", spec={"replicas": 1})


def cm(name: str, **annotations: str) -> dict[str, Any]:
    return obj("ConfigMap", name, "openshift-foo", annotations={**HA, **annotations})


def clean_files() -> dict[str, object]:
    """A small payload with nothing to report."""
    return {
        "0000_50_foo_00_namespace.yaml": obj("Namespace", "openshift-foo"),
        "0000_50_foo_01_config.yaml": [cm("one"), cm("two", **{"release.openshift.io/create-only": "true"})],
        "0000_50_foo_02_deployment.yaml": deployment("foo-operator"),
        "0000_50_foo_03_clusteroperator.yaml": cluster_operator("foo", VERSION, operand=VERSION),
        "0000_50_foo_04_old.yaml": cm("old", **{"release.openshift.io/delete": "true"}),
        "0000_50_foo_05_tp.yaml": [cm("feature", **{"release.openshift.io/feature-set": "TechPreviewNoUpgrade"}),
                                   cm("gated", **{"release.openshift.io/feature-gate": "NewThing"})],
        "0000_50_foo_06_console.yaml": cm("console", **{"capability.openshift.io/name": "Console+Insights"}),
        "0000_50_foo_07_hosted.yaml": obj("ConfigMap", "hosted", "openshift-foo", annotations={
            "include.release.openshift.io/hypershift": "true"}),
    }


def derived_co(workloads: str) -> dict[str, Any]:
    co = cluster_operator("foo", VERSION, operand=VERSION)
    co["metadata"]["annotations"]["release.cvo.dev/status-from-workloads"] = workloads
    return co


@dataclass(frozen=True)
class Case:
    """Files (merged over the clean payload) that trigger a rule, and a near miss that must not."""

    trigger: dict[str, object]
    near_miss: dict[str, object]
    file: str  # where the finding points
    document: int | None
    fix: str  # part of the message that says how to fix it
    metadata: dict[str, object] | None = None  # release-metadata "metadata" for the trigger
    near_metadata: dict[str, object] | None = None


CO = "0000_50_foo_03_clusteroperator.yaml"
CASES: dict[str, Case] = {
    "clusteroperator-before-operator": Case(
        trigger={"0000_50_foo_01a_clusteroperator.yaml": cluster_operator("early", VERSION),
                 "0000_50_foo_09_clusteroperator.yaml": cluster_operator("late", VERSION)},
        near_miss={"0000_50_foo_09_clusteroperator.yaml": cluster_operator("late", VERSION),
                   "0000_50_bar_00_clusteroperator.yaml": cluster_operator("bar", VERSION)},
        file="release-manifests/0000_50_foo_01a_clusteroperator.yaml", document=1, fix="Rename the file"),
    "clusteroperator-no-versions": Case(
        trigger={CO: obj("ClusterOperator", "foo", api="config.openshift.io/v1", spec={}, status={})},
        near_miss={CO: cluster_operator("foo", VERSION)},
        file=f"release-manifests/{CO}", document=1, fix="Add status.versions"),
    "clusteroperator-no-operator-version": Case(
        trigger={CO: [cm("before"), obj("ClusterOperator", "foo", api="config.openshift.io/v1", spec={},
                                        status={"versions": [{"name": "operand", "version": VERSION}]})]},
        near_miss={CO: [cm("before"), cluster_operator("foo", VERSION, operand=VERSION)]},
        file=f"release-manifests/{CO}", document=2, fix="add {name: operator"),
    "filename-unparsed": Case(
        trigger={"foo-config.yaml": cm("unparsed")},
        near_miss={"0000_50_foo-bar_00_config.yaml": cm("parsed")},
        file="release-manifests/foo-config.yaml", document=None, fix="Rename it"),
    "ignored-file": Case(
        trigger={"0000_50_foo_99_notes.txt": "notes"},
        near_miss={"0000_50_foo_99_notes.yml": cm("notes")},
        file="release-manifests/0000_50_foo_99_notes.txt", document=None, fix="rename it or move it"),
    "duplicate-object": Case(
        trigger={"0000_50_foo_08_again.yaml": [cm("x"), cm("one")]},
        near_miss={"0000_50_foo_08_again.yaml": cm("one", **{"release.openshift.io/feature-set":
                                                             "TechPreviewNoUpgrade"})},
        file="release-manifests/0000_50_foo_08_again.yaml", document=2, fix="Keep one"),
    "invalid-delete-annotation": Case(
        trigger={"0000_50_foo_04_old.yaml": cm("old", **{"release.openshift.io/delete": "True"})},
        near_miss={"0000_50_foo_04_old.yaml": cm("old", **{"release.openshift.io/delete": "true"})},
        file="release-manifests/0000_50_foo_04_old.yaml", document=1, fix='Use "true" or remove it'),
    "delete-and-create-only": Case(
        trigger={"0000_50_foo_04_old.yaml": cm("old", **{"release.openshift.io/delete": "true",
                                                         "release.openshift.io/create-only": "TRUE"})},
        near_miss={"0000_50_foo_04_old.yaml": cm("old", **{"release.openshift.io/delete": "true",
                                                           "release.openshift.io/create-only": "false"})},
        file="release-manifests/0000_50_foo_04_old.yaml", document=1,
        fix="Remove release.openshift.io/create-only"),
    "feature-set-and-gate": Case(
        trigger={"0000_50_foo_05_tp.yaml": cm("both", **{"release.openshift.io/feature-set": "Default",
                                                         "release.openshift.io/feature-gate": "G"})},
        near_miss={"0000_50_foo_05_tp.yaml": [cm("set", **{"release.openshift.io/feature-set": "Default"}),
                                              cm("gate", **{"release.openshift.io/feature-gate": "G"})]},
        file="release-manifests/0000_50_foo_05_tp.yaml", document=1, fix="keep one of them"),
    "no-profile": Case(
        trigger={"0000_50_foo_07_hosted.yaml": obj("ConfigMap", "hosted", "openshift-foo", annotations={
            "include.release.openshift.io/some-new-profile": "true"})},
        near_miss={"0000_50_foo_07_hosted.yaml": obj("ConfigMap", "hosted", "openshift-foo", annotations={
            "include.release.openshift.io/single-node-developer": "true"})},
        file="release-manifests/0000_50_foo_07_hosted.yaml", document=1,
        fix=f'add {HA_KEY}: "true"'),
    "profile-opt-out": Case(
        trigger={"0000_50_foo_07_hosted.yaml": obj("ConfigMap", "hosted", "openshift-foo", annotations={
            HA_KEY: "false-except-for-the-config-operator"})},
        near_miss={"0000_50_foo_07_hosted.yaml": obj("ConfigMap", "hosted", "openshift-foo", annotations={
            HA_KEY: "false", "include.release.openshift.io/hypershift": "true"})},
        file="release-manifests/0000_50_foo_07_hosted.yaml", document=1, fix="nothing to fix"),
    "unknown-capability": Case(
        trigger={"0000_50_foo_06_console.yaml": cm("console", **{"capability.openshift.io/name": "Console+Warp"})},
        near_miss={"0000_50_foo_06_console.yaml": cm("console", **{"capability.openshift.io/name": "Console"})},
        file="release-manifests/0000_50_foo_06_console.yaml", document=1, fix="Known: openshift-samples"),
    "release-metadata": Case(
        trigger={}, near_miss={},
        metadata={"release.openshift.io/architecture": "amd64"},
        near_metadata={"release.openshift.io/architecture": "multi"},
        file="release-manifests/release-metadata", document=None, fix="remove it or set it to multi"),
    "malformed-object": Case(
        trigger={"0000_50_foo_02_deployment.yaml": [cm("before"), obj("Deployment", "foo-operator", "openshift-foo",
                                                                      api="apps/v1", spec=5)]},
        near_miss={"0000_50_foo_02_deployment.yaml": [cm("before"), deployment("foo-operator")]},
        file="release-manifests/0000_50_foo_02_deployment.yaml", document=2,
        fix="spec must be an object, not a number; fix the field's type"),
    "workload-status-annotation": Case(
        trigger={CO: derived_co("- {kind: Deployment, namespace: openshift-foo}")},
        near_miss={CO: derived_co("- {kind: Deployment, namespace: openshift-foo, name: foo-operator}")},
        file=f"release-manifests/{CO}", document=1, fix="needs exactly one of name and selector"),
    "workload-not-shipped": Case(
        trigger={CO: derived_co("- {kind: Deployment, namespace: openshift-foo, name: bar}")},
        near_miss={CO: derived_co("- {kind: Deployment, namespace: openshift-foo, selector: {app: bar}}")},
        file=f"release-manifests/{CO}", document=1, fix="deployment openshift-foo/bar is not in the release"),
}


def build(make_release: ReleaseFactory, files: dict[str, object], metadata: dict[str, object] | None = None,
          name: str = "release") -> Path:
    root = make_release({**clean_files(), **files}, version=VERSION, name=name)
    if metadata is not None:
        (root / "release-manifests" / "release-metadata").write_text(json.dumps(
            {"kind": "cincinnati-metadata-v0", "version": VERSION, "metadata": metadata}))
    return root


def findings_of(root: Path, rule: str | None = None) -> list[Finding]:
    return [f for f in lint(load_release(root)) if rule is None or f.rule == rule]


def test_every_rule_has_a_case() -> None:
    assert set(CASES) == set(RULES)


def test_clean_payload_has_no_findings(make_release: ReleaseFactory) -> None:
    root = build(make_release, {})
    release = load_release(root)
    assert len(release.all_manifests) == 10
    assert sorted(e.manifest.name for e in release.excluded) == ["feature", "gated", "hosted"]
    assert lint(release) == []


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_fires(make_release: ReleaseFactory, rule: str) -> None:
    case = CASES[rule]
    found = findings_of(build(make_release, case.trigger, case.metadata), rule)
    assert len(found) == 1, found
    (finding,) = found
    assert finding.severity == RULES[rule][0]
    assert (finding.file, finding.document) == (case.file, case.document)
    assert case.fix in finding.message


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_stays_quiet_on_the_near_miss(make_release: ReleaseFactory, rule: str) -> None:
    case = CASES[rule]
    assert findings_of(build(make_release, case.near_miss, case.near_metadata)) == []


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_has_a_severity_and_description(rule: str) -> None:
    severity, description = RULES[rule]
    assert isinstance(severity, Severity)
    assert description


def test_duplicates_are_checked_for_the_profile_being_linted(make_release: ReleaseFactory) -> None:
    hosted = {"include.release.openshift.io/hypershift": "true"}
    root = make_release({
        "0000_50_foo_01_a.yaml": obj("ConfigMap", "x", "ns", annotations={**HA, **hosted}),
        "0000_50_foo_02_b.yaml": obj("ConfigMap", "x", "ns", annotations=hosted),
    })
    assert [f.rule for f in lint(load_release(root))] == []
    hypershift = load_release(root, load_filter=LoadFilter(profile="hypershift"))
    assert [f.rule for f in lint(hypershift)] == ["duplicate-object"]


def test_findings_are_in_payload_order(make_release: ReleaseFactory) -> None:
    root = make_release({
        "0000_10_a_x.yaml": [cm("a"), cm("b", **{"capability.openshift.io/name": "Warp"})],
        "0000_20_b_x.yaml": obj("ClusterOperator", "b", api="config.openshift.io/v1", status={}),
        "zz.yaml": cm("z"),
    }, cvo_files={"manifest.yaml": cm("first")})
    found = [(f.file, f.document, f.rule) for f in findings_of(root)]
    assert found == [
        ("manifests/manifest.yaml", None, "filename-unparsed"),
        ("release-manifests/0000_10_a_x.yaml", 2, "unknown-capability"),
        ("release-manifests/0000_20_b_x.yaml", 1, "clusteroperator-no-versions"),
        ("release-manifests/zz.yaml", None, "filename-unparsed"),
    ]


# --- the command ----------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_clean_payload_exits_zero(make_release: ReleaseFactory, capsys: pytest.CaptureFixture[str]) -> None:
    root = build(make_release, {})
    code, out, err = run(capsys, str(root))
    assert code == 0
    assert out == f"10 documents in {VERSION}: 0 errors, 0 warnings, 0 info\n"
    assert err == ""


def test_cli_errors_exit_one_and_json_lists_every_finding(make_release: ReleaseFactory,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = build(make_release, {**CASES["clusteroperator-no-versions"].trigger, **CASES["filename-unparsed"].trigger,
                                **CASES["profile-opt-out"].trigger})
    code, out, _ = run(capsys, str(root), "-o", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["version"] == VERSION
    assert doc["summary"] == {"error": 1, "warning": 1, "info": 1}
    by_rule = {f["rule"]: f for f in doc["findings"]}
    assert set(by_rule) == {"clusteroperator-no-versions", "filename-unparsed", "profile-opt-out"}
    assert by_rule["clusteroperator-no-versions"] == {
        "rule": "clusteroperator-no-versions", "severity": "error", "file": f"release-manifests/{CO}",
        "document": 1, "message": by_rule["clusteroperator-no-versions"]["message"]}
    assert "Add status.versions" in by_rule["clusteroperator-no-versions"]["message"]
    assert by_rule["filename-unparsed"]["document"] is None

    code, out, _ = run(capsys, str(root))
    assert code == 1
    lines = out.splitlines()
    assert lines[-1] == f"11 documents in {VERSION}: 1 errors, 1 warnings, 1 info"
    assert f"release-manifests/{CO}#1: error: ClusterOperator foo declares no status.versions" in out
    assert any(line.startswith("release-manifests/foo-config.yaml: warning: ") and
               line.endswith("[filename-unparsed]") for line in lines)


def test_cli_warnings_only_exit_zero_and_min_severity(make_release: ReleaseFactory,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    root = build(make_release, {**CASES["unknown-capability"].trigger, **CASES["profile-opt-out"].trigger})
    code, out, _ = run(capsys, str(root), "-o", "json")
    assert code == 0
    assert json.loads(out)["summary"] == {"error": 0, "warning": 1, "info": 1}
    code, out, _ = run(capsys, str(root), "-o", "json", "--min-severity", "warning")
    assert [f["rule"] for f in json.loads(out)["findings"]] == ["unknown-capability"]
    code, out, _ = run(capsys, str(root), "--min-severity", "error")
    assert code == 0
    assert out.splitlines() == [f"10 documents in {VERSION}: 0 errors, 0 warnings, 0 info"]


@pytest.mark.parametrize(("files", "problem"), [
    ({"0000_10_a_x.yaml": "kind: [\n"}, "release-manifests/0000_10_a_x.yaml (document 1): invalid YAML/JSON"),
    ({"0000_10_a_x.yaml": [cm("ok"), {"kind": "ConfigMap", "metadata": {}}]},
     "release-manifests/0000_10_a_x.yaml (document 2): must contain kubernetes required fields kind and name"),
])
def test_cli_bad_input_exits_two(make_release: ReleaseFactory, capsys: pytest.CaptureFixture[str],
                                 files: dict[str, object], problem: str) -> None:
    code, out, err = run(capsys, str(make_release(files)))
    assert code == 2
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"error: {problem}")


def test_cli_profile_flag_is_used(make_release: ReleaseFactory, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_release({
        "0000_50_foo_01_a.yaml": obj("ConfigMap", "x", "ns", annotations={"include.release.openshift.io/hypershift":
                                                                           "true"}),
        "0000_50_foo_02_b.yaml": obj("ConfigMap", "x", "ns", annotations={"include.release.openshift.io/hypershift":
                                                                           "true"}),
    })
    findings: Callable[[str], list[str]] = lambda out: [f["rule"] for f in json.loads(out)["findings"]]  # noqa: E731
    assert findings(run(capsys, str(root), "-o", "json")[1]) == []
    assert findings(run(capsys, str(root), "-o", "json", "--profile", "hypershift")[1]) == ["duplicate-object"]
