"""``cvo plan``: modes, flags, the JSON/DOT/Mermaid outputs, and bad input on the command line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
import yaml

from cvo.cli.main import main
from cvo.payload.loader import load_release
from tests.support.helpers import HA, REPO, ReleaseFactory, cluster_operator, obj

VERSION = "4.16.0"
TP = {**HA, "release.openshift.io/feature-set": "TechPreviewNoUpgrade"}
GATED = {**HA, "release.openshift.io/feature-gate": "Shiny"}
CONSOLE = {**HA, "capability.openshift.io/name": "Console"}


def payload() -> dict[str, object]:
    return {
        "0000_10_a_00_ns.yaml": obj("Namespace", "a"),
        "0000_10_a_01_cm.yaml": [obj("ConfigMap", "a1", "a"), obj("ConfigMap", "tp", "a", annotations=TP)],
        "0000_20_b_00_deploy.yaml": obj("Deployment", "b", "a", api="apps/v1"),
        "0000_20_c_00_deploy.yaml": obj("Deployment", "c", "a", api="apps/v1"),
        "0000_30_d_00_co.yaml": cluster_operator("d", VERSION),
        "0000_35_d_01_crd.yaml": obj("CustomResourceDefinition", "ds.example.com", api="apiextensions.k8s.io/v1"),
        "0000_40_e_job.yaml": obj("Job", "e", "a", api="batch/v1"),
        "0000_50_f_x.yaml": [obj("ConfigMap", "console", "a", annotations=CONSOLE),
                             obj("ConfigMap", "gated", "a", annotations=GATED),
                             obj("ConfigMap", "hosted", "a", annotations={
                                 "include.release.openshift.io/hypershift": "true"})],
        "0000_60_g_co.yaml": obj("ClusterOperator", "g", api="config.openshift.io/v1", annotations=CONSOLE,
                                 status={"versions": [{"name": "operator", "version": VERSION}]}),
    }


KEPT = ["a", "a1", "b", "c", "d", "ds.example.com", "e", "console", "g"]


@pytest.fixture
def release(make_release: ReleaseFactory) -> Path:
    return make_release(payload(), version=VERSION)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plan", *args])
    out, err = capsys.readouterr()
    return code, out, err


def plan_doc(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = run(capsys, *args, "-o", "json")
    assert (code, err) == (0, "")
    doc: dict[str, Any] = json.loads(out)
    return doc


def graph_of(doc: dict[str, Any]) -> nx.DiGraph:
    graph = nx.DiGraph()
    for node in doc["nodes"]:
        graph.add_node(node["id"], tasks=node["tasks"])
        for before in node["after"]:
            graph.add_edge(before, node["id"])
    return graph


def tasks_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted((t for n in doc["nodes"] for t in n["tasks"]), key=lambda t: t["index"])


def node_of(doc: dict[str, Any], name: str) -> int:
    (node,) = [n["id"] for n in doc["nodes"] if any(t["name"] == name for t in n["tasks"])]
    return node


def before(graph: nx.DiGraph, doc: dict[str, Any], first: str, then: str) -> bool:
    return nx.has_path(graph, node_of(doc, first), node_of(doc, then))


# --- the JSON plan --------------------------------------------------------------------------


def test_json_plan_shape(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_doc(capsys, str(release))
    assert doc["version"] == VERSION
    assert doc["versionHash"] == load_release(release, use_cache=False).manifest_hash  # ClusterVersion's name
    assert re.fullmatch(r"[A-Za-z0-9_-]{11}=", doc["versionHash"])
    assert doc["mode"] == "update"
    assert doc["total"] == len(KEPT)
    assert [t["name"] for t in tasks_of(doc)] == KEPT
    assert [t["index"] for t in tasks_of(doc)] == list(range(1, len(KEPT) + 1))
    assert {(e["file"], e["kind"], e["name"], e["reason"]) for e in doc["excluded"]} == {
        ("release-manifests/0000_10_a_01_cm.yaml", "ConfigMap", "tp",
         '"Default" is required, and release.openshift.io/feature-set=TechPreviewNoUpgrade'),
        ("release-manifests/0000_50_f_x.yaml", "ConfigMap", "gated", "feature gate Shiny is required but not enabled"),
        ("release-manifests/0000_50_f_x.yaml", "ConfigMap", "hosted",
         "include.release.openshift.io/self-managed-high-availability unset"),
    }
    b = next(t for t in tasks_of(doc) if t["name"] == "b")
    assert {k: b[k] for k in ("index", "file", "apiVersion", "kind", "namespace", "name", "runlevel", "component",
                              "waits")} == {
        "index": 3, "file": "release-manifests/0000_20_b_00_deploy.yaml", "apiVersion": "apps/v1",
        "kind": "Deployment", "namespace": "a", "name": "b", "runlevel": "20", "component": "b", "waits": None}
    assert {"id", "after", "tasks"} <= set(doc["nodes"][0])


def test_waits_in_each_mode(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    update = {t["name"]: t["waits"] for t in tasks_of(plan_doc(capsys, str(release)))}
    assert update["d"] == {
        "kind": "ClusterOperator", "name": "d", "versions": [{"name": "operator", "version": VERSION}],
        "conditions": [{"type": "Available", "status": "True"}, {"type": "Degraded", "status": "False"}],
        "notTrue": ["Upgrading"]}
    assert update["ds.example.com"] == {"kind": "CustomResourceDefinition", "name": "ds.example.com",
                                        "conditions": [{"type": "Established", "status": "True"}]}
    install = {t["name"]: t["waits"] for t in tasks_of(plan_doc(capsys, str(release), "--mode", "install"))}
    assert install["d"] == {"kind": "ClusterOperator", "name": "d",
                            "conditions": [{"type": "Available", "status": "True"}],
                            "reportOnly": [{"type": "Degraded", "status": "False"}]}


@pytest.mark.parametrize("mode", ["install", "update", "reconcile"])
def test_every_mode_holds_every_task_once_in_an_acyclic_graph(release: Path, capsys: pytest.CaptureFixture[str],
                                                              mode: str) -> None:
    doc = plan_doc(capsys, str(release), "--mode", mode)
    assert doc["mode"] == mode
    graph = graph_of(doc)
    assert nx.is_directed_acyclic_graph(graph)
    names = [t["name"] for n in doc["nodes"] for t in n["tasks"]]
    assert sorted(names) == sorted(KEPT) and len(names) == len(set(names))
    # The Job is a barrier in every mode: everything before it happens before it, everything after after it.
    for name in KEPT[:6]:
        assert before(graph, doc, name, "e"), name
    for name in KEPT[7:]:
        assert before(graph, doc, "e", name), name
    # Within a node, tasks keep payload order.
    for node in doc["nodes"]:
        indexes = [t["index"] for t in node["tasks"]]
        assert indexes == sorted(indexes)


def test_update_mode_orders_run_levels_and_parallelizes_components(release: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_doc(capsys, str(release), "--mode", "update")
    graph = graph_of(doc)
    assert before(graph, doc, "a1", "b") and before(graph, doc, "a1", "c")
    assert before(graph, doc, "b", "d") and before(graph, doc, "c", "d")
    assert not before(graph, doc, "b", "c") and not before(graph, doc, "c", "b")
    assert node_of(doc, "a") == node_of(doc, "a1")
    # run levels 30 and 35 hold one component each: merged into one serial node
    assert node_of(doc, "d") == node_of(doc, "ds.example.com")


def test_install_mode_flattens_run_levels(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_doc(capsys, str(release), "--mode", "install")
    graph = graph_of(doc)
    for first, then in [("a1", "b"), ("b", "d"), ("c", "d"), ("d", "ds.example.com")]:
        assert not before(graph, doc, first, then) and not before(graph, doc, then, first)


def test_reconcile_attempts_reorder_nodes_but_not_tasks(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    orders = []
    for attempt in range(4):
        doc = plan_doc(capsys, str(release), "--mode", "reconcile", "--attempt", str(attempt))
        assert sorted(t["name"] for t in tasks_of(doc)) == sorted(KEPT)
        orders.append([t["name"] for n in doc["nodes"] for t in n["tasks"]])
    assert len({tuple(o) for o in orders}) > 1


# --- flags ----------------------------------------------------------------------------------


def test_profile_feature_set_and_gates(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = lambda *args: [t["name"] for t in tasks_of(plan_doc(capsys, str(release), *args))]  # noqa: E731
    assert names("--profile", "hypershift") == ["hosted"]
    assert "tp" in names("--feature-set", "TechPreviewNoUpgrade")
    assert "tp" not in names("--feature-set", "Default")
    assert "gated" in names("--feature-gates", "Other,Shiny")


def test_capabilities_skip_at_apply_time_but_stay_in_total(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_doc(capsys, str(release), "--capabilities", "Insights,Storage")
    assert doc["total"] == len(KEPT)
    skipped = {t["name"]: t["skip"] for t in tasks_of(doc) if "skip" in t}
    assert skipped == {"console": "disabled capabilities: Console", "g": "disabled capabilities: Console"}
    assert doc["capabilities"] == ["Insights", "Storage"]
    default = plan_doc(capsys, str(release))
    assert not any("skip" in t for t in tasks_of(default))
    assert "Console" in default["capabilities"]


def test_text_summary_counts_skips_and_waited_operators(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(release))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"Release {VERSION} (file://{release.resolve()})"
    assert lines[1].startswith(f"Mode update: {len(KEPT)} tasks in ")
    assert lines[3] == ("Excluded at load: 3 documents (--show-excluded lists them); skipped at apply: 0 tasks; "
                        "waits on 2 ClusterOperators")
    _, out, _ = run(capsys, str(release), "--capabilities", "")
    # A ClusterOperator whose task is skipped is not waited on.
    assert "skipped at apply: 2 tasks; waits on 1 ClusterOperators" in out
    assert 'configmap "a/console" (8 of 9) release-manifests/0000_50_f_x.yaml  [skip: disabled capabilities: Console]' \
        in out


def test_show_excluded(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, str(release))
    assert "\nExcluded (" not in out
    _, out, _ = run(capsys, str(release), "--show-excluded")
    assert "\nExcluded (3)\n" in out
    assert ("  ConfigMap a/gated release-manifests/0000_50_f_x.yaml#2: feature gate Shiny is required but not "
            "enabled\n") in out
    assert "  ConfigMap a/tp release-manifests/0000_10_a_01_cm.yaml#2: " in out


def test_plain_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "0000_10_a_x.yaml").write_text(json.dumps(obj("ConfigMap", "x", "ns")))
    doc = plan_doc(capsys, str(tmp_path), "--release-version", "4.17.0")
    assert (doc["version"], doc["total"]) == ("4.17.0", 1)


# --- DOT and Mermaid draw the JSON graph ----------------------------------------------------


DOT_NODE = re.compile(r'^  (\d+) \[ label="(.*)" shape="(box|point)" \];$')
DOT_EDGE = re.compile(r"^  (\d+) -> (\d+);$")
MERMAID_NODE = re.compile(r'^  n(\d+)(?:\["(.*)"\]|\(\( \)\))$')
MERMAID_EDGE = re.compile(r"^  n(\d+) --> n(\d+)$")


def json_graph(doc: dict[str, Any]) -> tuple[set[int], set[tuple[int, int]]]:
    return ({n["id"] for n in doc["nodes"]}, {(a, n["id"]) for n in doc["nodes"] for a in n["after"]})


def parse_drawing(text: str, node_re: re.Pattern[str], edge_re: re.Pattern[str]) -> tuple[set[int], set[tuple[int, int]]]:
    nodes: set[int] = set()
    edges: set[tuple[int, int]] = set()
    for line in text.splitlines():
        if m := node_re.match(line):
            nodes.add(int(m.group(1)))
        elif m := edge_re.match(line):
            edges.add((int(m.group(1)), int(m.group(2))))
    return nodes, edges


@pytest.mark.parametrize("mode", ["install", "update", "reconcile"])
def test_dot_and_mermaid_draw_the_json_graph(release: Path, capsys: pytest.CaptureFixture[str], mode: str) -> None:
    expected = json_graph(plan_doc(capsys, str(release), "--mode", mode))
    assert len(expected[1]) > 0
    code, dot, _ = run(capsys, str(release), "--mode", mode, "-o", "dot")
    assert code == 0
    assert dot.startswith("digraph tasks {\n") and dot.endswith("}\n")
    assert parse_drawing(dot, DOT_NODE, DOT_EDGE) == expected
    code, mermaid, _ = run(capsys, str(release), "--mode", mode, "-o", "mermaid")
    assert code == 0
    assert mermaid.startswith("flowchart TD\n")
    assert parse_drawing(mermaid, MERMAID_NODE, MERMAID_EDGE) == expected
    # every line of both drawings is a node, an edge or the frame
    assert all(DOT_NODE.match(line) or DOT_EDGE.match(line) or not line.startswith("  ") or "=" in line
               for line in dot.splitlines())
    assert all(MERMAID_NODE.match(line) or MERMAID_EDGE.match(line) for line in mermaid.splitlines()[1:])


def test_dot_labels_are_escaped(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, dot, _ = run(capsys, str(release), "-o", "dot")
    assert 'label="namespace \\"a\\" (1 of 9)\\nconfigmap \\"a/a1\\" (2 of 9)"' in dot
    _, mermaid, _ = run(capsys, str(release), "-o", "mermaid")
    assert '["namespace #quot;a#quot; (1 of 9)<br/>configmap #quot;a/a1#quot; (2 of 9)"]' in mermaid


# --- bad input ------------------------------------------------------------------------------


def errors_of(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert lines and all(line.startswith("error: ") for line in lines)
    return lines


@pytest.mark.parametrize(("content", "expected"), [
    ([obj("ConfigMap", "ok", "a"), "kind: ConfigMap\nmetadata: [\n"],
     "error: release-manifests/0000_10_x_y.yaml (document 2): invalid YAML/JSON, line "),
    ([obj("ConfigMap", "ok", "a"), {"apiVersion": "v1", "metadata": {"name": "no-kind"}}],
     "error: release-manifests/0000_10_x_y.yaml (document 2): must contain kubernetes required fields kind and name "
     "(missing kind)"),
    ([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "a"}}],
     "error: release-manifests/0000_10_x_y.yaml (document 1): must contain kubernetes required fields kind and name "
     "(missing metadata.name)"),
    (b"kind: ConfigMap\nmetadata:\n  name: caf\xe9\n",
     "error: release-manifests/0000_10_x_y.yaml (document 1): invalid YAML/JSON, line 3: incomplete UTF-8 octet "
     "sequence (at byte 37)"),
    ([obj("ConfigMap", "x", "a"), obj("ConfigMap", "x", "a")],
     "error: release-manifests/0000_10_x_y.yaml (document 2): duplicate resource ConfigMap a/x (also document 1)"),
])
def test_one_error_line_per_bad_file(make_release: ReleaseFactory, capsys: pytest.CaptureFixture[str],
                                     content: object, expected: str) -> None:
    if isinstance(content, list):
        content = "---\n".join(c if isinstance(c, str) else yaml.safe_dump(c) for c in content)
    root = make_release({"0000_10_x_y.yaml": content, "0000_20_ok.yaml": obj("ConfigMap", "fine", "a")})
    (line,) = errors_of(capsys, str(root))
    assert line.startswith(expected), line


def test_dangling_symlink(make_release: ReleaseFactory, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_release({"0000_20_ok.yaml": obj("ConfigMap", "fine", "a")})
    os.symlink(root / "gone.yaml", root / "release-manifests" / "0000_10_x_link.yaml")
    assert errors_of(capsys, str(root)) == ["error: release-manifests/0000_10_x_link.yaml: file not found (dangling symbolic link)"]


def test_a_directory_named_like_a_manifest_is_not_read(make_release: ReleaseFactory,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    # The CVO skips sub-directories (os.ReadDir + IsDir), whatever their name.
    root = make_release({"0000_20_ok.yaml": obj("ConfigMap", "fine", "a")})
    (root / "release-manifests" / "0000_10_x_dir.yaml").mkdir()
    code, out, err = run(capsys, str(root))
    assert (code, err) == (0, "")
    assert "release-manifests/0000_10_x_dir.yaml: sub-directory (not read)" in out


def test_several_problems_several_lines_in_payload_order(make_release: ReleaseFactory,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    root = make_release({"0000_30_c.yaml": "a: [\n", "0000_10_a.yaml": {"kind": "X"}, "0000_20_b.yaml": "{"},
                        cvo_files={"0000_00_cvo.yaml": "metadata: {name: x}\n"})
    lines = errors_of(capsys, str(root))
    assert [line.split(" ")[1] for line in lines] == [
        "manifests/0000_00_cvo.yaml", "release-manifests/0000_10_a.yaml", "release-manifests/0000_20_b.yaml",
        "release-manifests/0000_30_c.yaml"]


@pytest.mark.parametrize(("metadata", "expected"), [
    ('{"kind": "cincinnati-metadata-v0", "version": "4.16"}',
     "error: release-manifests/release-metadata: 'version' '4.16' is not a semantic version: "
     "No Major.Minor.Patch elements found"),
    ('{"kind": "cincinnati-metadata-v1", "version": "4.16.0"}',
     "error: release-manifests/release-metadata: unrecognized Cincinnati metadata kind"),
    ("{", "error: release-manifests/release-metadata: invalid JSON"),
    ('{"kind": "cincinnati-metadata-v0", "version": "4.16.1"}',
     "error: release-manifests/image-references: version from image-references (4.16.0) differs from "
     "release-metadata (4.16.1)"),
])
def test_bad_release_metadata(release: Path, capsys: pytest.CaptureFixture[str], metadata: str, expected: str) -> None:
    (release / "release-manifests" / "release-metadata").write_text(metadata)
    (line,) = errors_of(capsys, str(release))
    assert line.startswith(expected), line


def test_bad_directory_and_flags(tmp_path: Path, release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert errors_of(capsys, str(tmp_path / "missing")) == [f"error: {tmp_path / 'missing'}: not a directory"]
    (line,) = errors_of(capsys, str(tmp_path))
    assert "pass --release-version" in line
    (line,) = errors_of(capsys, str(release), "--feature-set", "Bogus")
    assert line.startswith("error: --feature-set: unknown feature set 'Bogus'")
    (line,) = errors_of(capsys, str(release), "--capabilities", "Console,Warp")
    assert line.startswith("error: --capabilities: unknown capability Warp")
    with pytest.raises(SystemExit) as info:
        main(["plan", str(release), "--mode", "sideways"])
    assert info.value.code == 2


# --- through a real process -----------------------------------------------------------------


def cvo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cvo", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)


def test_subprocess_bad_input_has_no_traceback(make_release: ReleaseFactory) -> None:
    root = make_release({
        "0000_10_a.yaml": b"kind: ConfigMap\nmetadata:\n  name: \xff\n",
        "0000_20_b.yaml": "kind: ConfigMap\nmetadata:\n  name: x\ny: &a\n  z: *a\n",
        "0000_30_c.yaml": "kind: ConfigMap\nmetadata:\n  name: x\n  annotations: {a: 1}\n",
    })
    for command in ("plan", "lint"):
        result = cvo(command, str(root))
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        assert "Traceback" not in result.stderr
        lines = result.stderr.splitlines()
        assert [line.split(" ")[1] for line in lines] == [
            "release-manifests/0000_10_a.yaml", "release-manifests/0000_20_b.yaml",
            "release-manifests/0000_30_c.yaml"]
        assert all(line.startswith("error: ") for line in lines)
        assert "(document 1): invalid YAML/JSON, line 3: invalid leading UTF-8 octet" in lines[0]
        assert "anchor 'a' value contains itself" in lines[1]
        assert lines[2].endswith("(document 1): annotation 'a' must be a string (quote the value)")


def test_subprocess_plan_json(release: Path) -> None:
    result = cvo("plan", str(release), "-o", "json", "--mode", "install")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["mode"] == "install" and doc["total"] == len(KEPT)


def test_a_release_without_release_metadata_names_it_says_what_to_add_and_takes_release_version(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "nometa"
    from tests.support.helpers import PAYLOADS

    shutil.copytree(PAYLOADS / "demo-4.16.3", root)
    (root / "release-manifests" / "release-metadata").unlink()
    [line] = errors_of(capsys, str(root))
    assert line == (f"error: {root}/release-manifests/release-metadata: file not found: a release directory names "
                     'its version there (JSON: {"kind": "cincinnati-metadata-v0", "version": "X.Y.Z"}, as \'oc adm '
                     "release new' writes it); add one, or pass --release-version X.Y.Z")
    code, out, err = run(capsys, str(root), "--release-version", "4.16.3")
    assert code == 0, err
    assert out.startswith(f"Release 4.16.3 (file://{root.resolve()})")
    [bad] = errors_of(capsys, str(root), "--release-version", "4.1x")
    assert bad.startswith("error: --release-version: '4.1x' is not a semantic version")
