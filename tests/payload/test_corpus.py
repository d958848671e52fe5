"""The real 5.0 payload (../shared/corpus/ocp-5.0-nightly): it loads, plans and lints cleanly, with the
numbers the README quotes, and its real-world YAML quirks decode as Go decodes them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
import yaml

from cvo.cli.main import main
from cvo.payload.filters import LoadFilter
from cvo.payload.graph import Mode
from cvo.payload.loader import Release, load_release
from cvo.plan.build import make_plan, plan_json
from cvo.plan.lint import Severity, lint

VERSION = "5.0.0-0.nightly-2026-08-22-120000"
TOTAL_DOCUMENTS = 1274
# profile -> (tasks kept, documents excluded at load, ClusterOperators waited on, update-mode nodes with tasks, steps)
PROFILES: dict[str, tuple[int, int, int, int, int]] = {
    "self-managed-high-availability": (1002, 272, 33, 82, 18),
    "single-node-developer": (723, 551, 25, 52, 10),
    "ibm-cloud-managed": (723, 551, 17, 68, 13),
    "hypershift": (416, 858, 12, 36, 7),
}
DEFAULT = "self-managed-high-availability"


@pytest.fixture(scope="module")
def releases(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Release]:
    cache = tmp_path_factory.mktemp("corpus-cache")
    return {p: load_release(corpus, load_filter=LoadFilter(profile=p), cache_dir=cache) for p in PROFILES}


def manifest_files(corpus: Path) -> Iterator[Path]:
    for directory in ("manifests", "release-manifests"):
        for path in sorted((corpus / directory).iterdir(), key=lambda p: p.name.encode()):
            if path.suffix in (".yaml", ".yml", ".json"):
                yield path


# --- the numbers ----------------------------------------------------------------------------


def test_every_document_loads(releases: dict[str, Release]) -> None:
    for release in releases.values():
        assert release.version == VERSION
        assert len(release.all_manifests) == TOTAL_DOCUMENTS
        assert release.skipped_files == []
        assert len(release.manifests) + len(release.excluded) == TOTAL_DOCUMENTS


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_counts_per_profile(releases: dict[str, Release], profile: str) -> None:
    kept, excluded, operators, nodes, steps = PROFILES[profile]
    release = releases[profile]
    assert (len(release.manifests), len(release.excluded)) == (kept, excluded)
    plan = make_plan(release, Mode.UPDATE, profile=profile)
    waited = plan.waited_operators
    assert len(waited) == operators
    assert len({t.manifest.name for t in waited}) == operators  # each ClusterOperator once
    assert sum(1 for n in plan.graph.nodes if plan.node_tasks(n)) == nodes
    assert len(plan.steps) == steps


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_excluded_document_has_a_reason(releases: dict[str, Release], profile: str) -> None:
    for e in releases[profile].excluded:
        assert isinstance(e.reason, str) and e.reason.strip(), e.manifest.describe()


def test_the_profiles_differ(releases: dict[str, Release]) -> None:
    kept = {p: {(m.path, m.document) for m in r.manifests} for p, r in releases.items()}
    assert kept["single-node-developer"] != kept["ibm-cloud-managed"]  # same count, different documents
    assert len({frozenset(k) for k in kept.values()}) == len(PROFILES)


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_plan_json_is_acyclic_and_holds_every_kept_task_once(releases: dict[str, Release], profile: str,
                                                             mode: Mode) -> None:
    release = releases[profile]
    doc = json.loads(json.dumps(plan_json(make_plan(release, mode, profile=profile))))
    graph = nx.DiGraph()
    for node in doc["nodes"]:
        graph.add_node(node["id"])
        graph.add_edges_from((before, node["id"]) for before in node["after"])
    assert nx.is_directed_acyclic_graph(graph)
    tasks = sorted((t for n in doc["nodes"] for t in n["tasks"]), key=lambda t: t["index"])
    assert [(t["file"], t["document"]) for t in tasks] == [(m.path, m.document) for m in release.manifests]
    assert [t["index"] for t in tasks] == list(range(1, len(release.manifests) + 1))
    assert doc["total"] == len(release.manifests)
    assert len(doc["excluded"]) == len(release.excluded)
    assert all(e["reason"] for e in doc["excluded"])


# --- the commands ---------------------------------------------------------------------------


def test_cvo_plan_text(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(corpus)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"Release {VERSION} (file://{corpus.resolve()})"
    assert lines[1] == "Mode update: 1002 tasks in 82 nodes over 18 steps, up to 16 workers"
    assert lines[2] == "Profile self-managed-high-availability, feature set Default"
    assert lines[3] == ("Excluded at load: 272 documents (--show-excluded lists them); skipped at apply: 0 tasks; "
                        "waits on 33 ClusterOperators")


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_cvo_plan_json_per_profile(corpus: Path, capsys: pytest.CaptureFixture[str], profile: str) -> None:
    kept, excluded, operators, _, _ = PROFILES[profile]
    assert main(["plan", str(corpus), "--profile", profile, "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    doc = json.loads(out)
    assert (doc["total"], len(doc["excluded"])) == (kept, excluded)
    waits = [t["waits"] for n in doc["nodes"] for t in n["tasks"] if t["waits"]]
    assert sum(1 for w in waits if w["kind"] == "ClusterOperator") == operators


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_cvo_lint_is_clean(corpus: Path, capsys: pytest.CaptureFixture[str], profile: str) -> None:
    assert main(["lint", str(corpus), "--profile", profile, "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    doc = json.loads(out)
    assert doc["summary"]["error"] == 0
    assert not [f for f in doc["findings"] if f["severity"] == "error"]


def test_lint_findings_are_the_known_ones(releases: dict[str, Release]) -> None:
    findings = lint(releases[DEFAULT])
    assert not [f for f in findings if f.severity is Severity.ERROR]
    rules = {f.rule for f in findings}
    assert rules <= {"no-profile", "profile-opt-out", "delete-and-create-only", "filename-unparsed"}
    unparsed = [f.file for f in findings if f.rule == "filename-unparsed"]
    assert unparsed == ["release-manifests/0000_90_openshift-cluster-image-policy.yaml"]


# The CVO's ManifestHash of the corpus with the default profile, feature set and capabilities, with the
# release image cvo uses by default for the corpus at its usual place: {{.ReleaseImage}} is rendered into
# the CVO's Deployment in manifests/, so the hash depends on it.
CORPUS_IMAGE = "file:///work/shared/corpus/ocp-5.0-nightly"
CORPUS_HASH = "tudjWbJrtB0="


def test_manifest_hash_is_the_cvos(corpus: Path, tmp_path: Path) -> None:
    """pkg/payload/payload.go ``LoadUpdate``: FNV-1 64 over the kept manifests' ``Raw``, base64url.

    The real CVO computes ``tudjWbJrtB0=`` for the corpus.  Before library-go's ``Raw`` was kept (JSON
    documents' own bytes, YAML in Go's JSON, a final newline for a block scalar at the end of a file)
    cvo's bytes gave another value.
    """
    cold = load_release(corpus, release_image=CORPUS_IMAGE, use_cache=False)
    assert cold.manifest_hash == CORPUS_HASH
    cache = tmp_path / "cache"
    load_release(corpus, release_image=CORPUS_IMAGE, cache_dir=cache)
    assert load_release(corpus, release_image=CORPUS_IMAGE, cache_dir=cache).manifest_hash == CORPUS_HASH
    other = load_release(corpus, release_image="quay.io/example/release:5.0", use_cache=False)
    assert other.manifest_hash != CORPUS_HASH  # the image is rendered into the CVO's Deployment


def test_plan_json_reports_the_version_hash(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(corpus), "-o", "json", "--release-image", CORPUS_IMAGE]) == 0
    assert json.loads(capsys.readouterr().out)["versionHash"] == CORPUS_HASH


def test_an_install_records_the_version_hash(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The ClusterVersion's status.versionHash is the payload's manifest hash (pkg/cvo/status.go syncStatus:
    ``config.Status.VersionHash = status.VersionHash``), the real CVO's value for the corpus."""
    from cvo.log import configure

    try:
        code = main(["install", str(corpus), "--release-image", CORPUS_IMAGE, "--state", "none", "-o", "json"])
    finally:
        configure("text", 0)
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["clusterVersion"]["status"]["versionHash"] == CORPUS_HASH


def test_parallel_and_serial_parsing_agree_on_the_corpus(corpus: Path) -> None:
    serial = load_release(corpus, use_cache=False, jobs=1)
    parallel = load_release(corpus, use_cache=False, jobs=2)
    assert [(m.path, m.document, m.raw) for m in parallel.all_manifests] == [
        (m.path, m.document, m.raw) for m in serial.all_manifests]


# --- the quirks -----------------------------------------------------------------------------


def by_path(release: Release, path: str) -> list[Any]:
    return [m for m in release.all_manifests if m.path == path]


BOM_FILES = {
    "release-manifests/0000_50_console-operator_node-with-s2i.yaml": "node-with-s2i",
    "release-manifests/0000_50_console-operator_quarkus-with-helm.yaml": "quarkus-with-helm",
    "release-manifests/0000_50_console-operator_quarkus-with-s2i.yaml": "quarkus-with-s2i",
    "release-manifests/0000_50_console-operator_spring-with-s2i.yaml": "spring-with-s2i",
    "release-manifests/0000_50_console-operator_trusted-artifact-signer.yaml": "trusted-artifact-signer-getting-started",
    "release-manifests/0000_50_console-operator_trusted-profile-analyzer.yaml":
        "trusted-profile-analyzer-getting-started",
}


def test_files_with_a_bom(corpus: Path, releases: dict[str, Release]) -> None:
    found = {str(p.relative_to(corpus)) for p in manifest_files(corpus) if p.read_bytes().startswith(b"\xef\xbb\xbf")}
    assert found == set(BOM_FILES)
    for path, name in BOM_FILES.items():
        (m,) = by_path(releases[DEFAULT], path)
        assert (m.api_version, m.kind, m.name) == ("console.openshift.io/v1", "ConsoleQuickStart", name)
        assert next(iter(m.obj)) == "apiVersion"  # the first key carries no BOM
        assert "\ufeff" not in m.raw.decode()


def test_json_in_yaml_files(corpus: Path, releases: dict[str, Release]) -> None:
    found = sorted(str(p.relative_to(corpus)) for p in manifest_files(corpus)
                   if p.suffix != ".json" and p.read_bytes().lstrip().startswith(b"{"))
    assert len(found) == 8
    assert all("featureGate-4-10-" in f for f in found)
    excluded = {(e.manifest.path, e.manifest.document): e.reason for e in releases[DEFAULT].excluded}
    for path in found:
        (m,) = by_path(releases[DEFAULT], path)
        assert (m.kind, m.name, m.api_version) == ("FeatureGate", "cluster", "config.openshift.io/v1")
        assert m.annotations["release.openshift.io/major-version"] == "4,5,6,7,8,9,10"
        assert m.obj == json.loads((corpus / path).read_text())
        if "SelfManagedHA-Default" in path:
            assert excluded[(path, 1)] == (
                "unrecognized value include.release.openshift.io/self-managed-high-availability="
                "false-except-for-the-config-operator")


def test_the_yaml_equals_value(corpus: Path, releases: dict[str, Release]) -> None:
    path = "release-manifests/0000_50_cluster-monitoring-operator_00_0alertmanager-config-custom-resource-definition.yaml"
    assert (corpus / path).stat().st_size > 1_000_000  # a large CRD
    text = (corpus / path).read_text()
    bare = [line for line in text.splitlines() if line.strip() == "- ="]
    assert len(bare) == 6
    (m,) = by_path(releases[DEFAULT], path)
    assert m.kind == "CustomResourceDefinition"

    def enums(value: Any) -> Iterator[list[Any]]:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "enum" and isinstance(item, list):
                    yield item
                yield from enums(item)
        elif isinstance(value, list):
            for item in value:
                yield from enums(item)

    match_types = [e for e in enums(m.obj) if "=~" in e]
    assert len(match_types) == 6
    assert all(e == ["!=", "=", "=~", "!~"] for e in match_types)


class _Keys(yaml.CSafeLoader):
    """Composes nodes only (no construction), so the YAML ``=`` value and duplicates cannot fail."""


def duplicate_keys(node: yaml.Node) -> Iterator[str]:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if key.value in seen:
                yield key.value
            seen.add(key.value)
            yield from duplicate_keys(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from duplicate_keys(item)


def test_duplicate_mapping_keys(corpus: Path, releases: dict[str, Release]) -> None:
    found: dict[str, list[str]] = {}
    for path in manifest_files(corpus):
        if path.parent.name == "manifests":
            continue  # templates: not YAML until rendered
        text = path.read_bytes().decode("utf-8-sig")
        dups = [k for node in yaml.compose_all(text, Loader=_Keys) if node is not None for k in duplicate_keys(node)]
        if dups:
            found[str(path.relative_to(corpus))] = dups
    assert found == {
        "release-manifests/0000_50_cluster-csi-snapshot-controller-operator_04_serviceaccount.yaml":
            ["capability.openshift.io/name"],
        "release-manifests/0000_90_cluster-update-keys_configmap.yaml": ["namespace"],
    }
    release = releases[DEFAULT]
    (sa,) = by_path(release, "release-manifests/0000_50_cluster-csi-snapshot-controller-operator_04_serviceaccount.yaml")
    assert sa.annotations["capability.openshift.io/name"] == "CSISnapshot"
    assert sa.raw.count(b"capability.openshift.io/name") == 1
    (keys,) = by_path(release, "release-manifests/0000_90_cluster-update-keys_configmap.yaml")
    assert (keys.kind, keys.namespace, keys.name) == ("ConfigMap", "openshift-config-managed", "release-verification")
    assert keys.raw.count(b'"namespace"') == 1
