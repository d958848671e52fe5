"""cvo.updates.build: the graph builder's graph from releases and a cincinnati-graph-data directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from cvo.payload.limits import InputError
from cvo.updates.build import ARCH_KEY, CHANNELS_KEY, REMOVE_REGEX_KEY, build_graph, read_release_info
from cvo.updates.graph import Graph
from cvo.updates.graph_data import read_graph_data
from tests.support.graph_data import release, risk_doc, write_graph_data

REPO = Path(__file__).resolve().parents[2]


def edges(graph: Graph) -> set[tuple[str, str]]:
    return {(graph.nodes[a].version, graph.nodes[b].version) for a, b in graph.edges}


def node(graph: Graph, version: str) -> dict[str, str]:
    return dict(next(n for n in graph.nodes if n.version == version).metadata)


def test_versions_carry_the_architecture_and_previous_makes_edges_within_it() -> None:
    graph = build_graph([release("4.16.3", "4.16.0", "4.15.9"), release("4.16.0"),
                         release("4.16.3", "4.16.0", arch="arm64"), release("4.16.0", arch="arm64")])
    assert [n.version for n in graph.nodes] == ["4.16.0+amd64", "4.16.0+arm64", "4.16.3+amd64", "4.16.3+arm64"]
    # 4.15.9 is not in the graph (an abstract release, pruned); no edge crosses architectures
    assert edges(graph) == {("4.16.0+amd64", "4.16.3+amd64"), ("4.16.0+arm64", "4.16.3+arm64")}
    assert node(graph, "4.16.0+arm64")[ARCH_KEY] == "arm64"
    assert graph.conditional_edges == ()


def test_next_makes_edges_too_and_the_order_of_the_releases_does_not_matter() -> None:
    a = release("4.16.0")
    b = release("4.16.1")
    from dataclasses import replace

    a = replace(a, next=("4.16.1",))
    assert build_graph([a, b]) == build_graph([b, a])
    assert edges(build_graph([a, b])) == {("4.16.0+amd64", "4.16.1+amd64")}


def test_a_version_given_twice_with_different_payloads_is_refused() -> None:
    with pytest.raises(InputError, match=r"release 4\.16\.0\+amd64 is given twice"):
        build_graph([release("4.16.0"), release("4.16.0").__class__(
            "4.16.0", "quay.io/other@sha256:x", "amd64")])


def test_the_demo_releases(tmp_path: Path) -> None:
    releases = []
    for name in ("demo-4.16.0", "demo-4.16.3", "demo-4.17.0"):
        path = REPO / "payloads" / name / "release-manifests" / "release-metadata"
        releases.append(read_release_info(path.read_bytes(), str(path), f"file://{path.parents[1]}", "amd64"))
    graph = build_graph(releases)
    assert edges(graph) == {("4.16.0+amd64", "4.16.3+amd64"), ("4.16.0+amd64", "4.17.0+amd64"),
                            ("4.16.3+amd64", "4.17.0+amd64")}
    meta = node(graph, "4.16.0+amd64")
    assert meta == {ARCH_KEY: "amd64", CHANNELS_KEY: "stable-4.16,fast-4.16,candidate-4.16",
                    "url": "https://demo.example.com/releases/4.16.0"}
    # 4.16.3's metadata names no channels (the graph data's channels/ would): none without graph data
    assert node(graph, "4.16.3+amd64") == {ARCH_KEY: "amd64", "url": "https://demo.example.com/releases/4.16.3"}
    assert graph.nodes[0].payload == f"file://{REPO / 'payloads' / 'demo-4.16.0'}"


def test_channels_are_added_and_sorted_as_the_plugin_sorts_them(tmp_path: Path) -> None:
    data = read_graph_data(write_graph_data(tmp_path, channels={
        "stable-4.17": ["4.16.3", "4.17.0"], "candidate-4.17": ["4.17.0"], "eus-4.16": ["4.16.3+amd64"],
        "fast-4.16": ["4.16.3+arm64"]}))
    graph = build_graph([release("4.16.3", channels="stable-4.16"), release("4.17.0", "4.16.3")], data)
    # sorted, then by what follows the first '-': 4.16 before 4.17; fast-4.16 names only the arm64 build
    assert node(graph, "4.16.3+amd64")[CHANNELS_KEY] == "eus-4.16,stable-4.16,stable-4.17"
    assert node(graph, "4.17.0+amd64")[CHANNELS_KEY] == "candidate-4.17,stable-4.17"


def test_a_blocked_edge_without_rules_removes_edges_from_matching_versions(tmp_path: Path) -> None:
    data = read_graph_data(write_graph_data(tmp_path, blocked={
        "4.17.0": {"to": "4.17.0", "from": "4\\.16\\.0"}}))
    graph = build_graph([release("4.16.0"), release("4.16.3", "4.16.0"), release("4.17.0", "4.16.0", "4.16.3"),
                         release("4.16.0", arch="arm64"), release("4.17.0", "4.16.0", arch="arm64")], data)
    assert edges(graph) == {("4.16.0+amd64", "4.16.3+amd64"), ("4.16.3+amd64", "4.17.0+amd64")}
    assert node(graph, "4.17.0+amd64")[REMOVE_REGEX_KEY] == "4\\.16\\.0"  # kept, as the service keeps it
    assert graph.conditional_edges == ()


def test_a_blocked_edge_for_one_architecture_leaves_the_others(tmp_path: Path) -> None:
    data = read_graph_data(write_graph_data(tmp_path, blocked={"x": {"to": "4.17.0+arm64", "from": ".*"}}))
    graph = build_graph([release("4.17.0", "4.16.0"), release("4.16.0"),
                         release("4.17.0", "4.16.0", arch="arm64"), release("4.16.0", arch="arm64")], data)
    assert edges(graph) == {("4.16.0+amd64", "4.17.0+amd64")}


def test_a_conditional_edge_replaces_the_edges_it_matches_and_carries_its_risk(tmp_path: Path) -> None:
    data = read_graph_data(write_graph_data(tmp_path, blocked={
        "4.17.0-A": risk_doc("4.17.0", "^4[.]16[.]0[+].*$", "RiskA"),
        "4.17.0-B": risk_doc("4.17.0", ".*", "RiskB", [{"type": "PromQL", "promql": {"promql": "up == 0"}}]),
        "4.16.3-B": risk_doc("4.16.3", ".*", "RiskB", [{"type": "PromQL", "promql": {"promql": "up == 0"}}])}))
    graph = build_graph([release("4.16.0"), release("4.16.3", "4.16.0"), release("4.17.0", "4.16.0", "4.16.3")],
                        data)
    assert edges(graph) == set()
    by_risks = {tuple(r.name for r in c.risks): set(c.edges) for c in graph.conditional_edges}
    # the files are read in name order: 4.16.3-B, 4.17.0-A, 4.17.0-B; equal risk lists share an entry
    assert by_risks == {
        ("RiskB",): {("4.16.0+amd64", "4.16.3+amd64"), ("4.16.3+amd64", "4.17.0+amd64")},
        ("RiskA", "RiskB"): {("4.16.0+amd64", "4.17.0+amd64")},
    }
    risk = graph.conditional_edges[0].risks[0]
    assert risk.to_json() == {"matchingRules": [{"promql": {"promql": "up == 0"}, "type": "PromQL"}],
                              "message": "RiskB hurts.", "name": "RiskB", "url": "https://bugs.example.com/RiskB"}
    assert node(graph, "4.17.0+amd64")[REMOVE_REGEX_KEY] == "^4[.]16[.]0[+].*$|.*"


def test_a_conditional_edge_needs_an_existing_edge(tmp_path: Path) -> None:
    data = read_graph_data(write_graph_data(tmp_path, blocked={"r": risk_doc("4.17.0", ".*", "Risk")}))
    graph = build_graph([release("4.16.0"), release("4.17.0")], data)  # no previous: no edge to condition
    assert graph.conditional_edges == () and graph.edges == ()


def test_raw_metadata_is_added_to_every_architecture(tmp_path: Path) -> None:
    root = write_graph_data(tmp_path)
    (root / "raw").mkdir()
    (root / "raw" / "metadata.json").write_text('{"4.16.0": {"url": "https://x", "k": "v"}}')
    graph = build_graph([release("4.16.0", url="https://old"), release("4.16.0", arch="arm64")],
                        read_graph_data(root))
    assert node(graph, "4.16.0+amd64")["url"] == "https://old,https://x"
    assert node(graph, "4.16.0+arm64")["k"] == "v"


def test_metadata_adds_and_removes_edges_as_edge_add_remove_does() -> None:
    graph = build_graph([
        release("4.16.0"), release("4.16.1", "4.16.0"),
        release("4.16.2", "4.16.0", "4.16.1", **{"io.openshift.upgrades.graph.previous.remove": "4.16.0"}),
        release("4.16.3", **{"io.openshift.upgrades.graph.previous.add": "4.16.0,4.16.2"}),
    ])
    assert edges(graph) == {("4.16.0+amd64", "4.16.1+amd64"), ("4.16.1+amd64", "4.16.2+amd64"),
                            ("4.16.0+amd64", "4.16.3+amd64"), ("4.16.2+amd64", "4.16.3+amd64")}


def test_the_real_graph_data_layout_reads(tmp_path: Path) -> None:
    """Files as cincinnati-graph-data has them (comments, fixedIn, multi-line PromQL, a feeder, _OWNERS)."""
    root = write_graph_data(tmp_path)
    (root / "channels" / "stable-4.16.yaml").write_text(
        "feeder:\n  delay: PT0H\n  filter: 4[.](14|15|16)[.][0-9].*\n  name: fast-4.16\nname: stable-4.16\n"
        "versions:\n- 4.15.9\n- 4.16.0\n# skipped 4.16.1\n- 4.16.2\n")
    (root / "channels" / "_OWNERS").write_text("approvers: []\n")
    (root / "blocked-edges" / "4.16.2-Multi.yaml").write_text(
        "to: 4.16.2\nfrom: .*\nfixedIn: 4.16.5\nurl: https://access.redhat.com/solutions/7024726\n"
        "name: MultiNetworkAttachmentsWhereaboutsVersion\nmessage: |-\n  Upgrade can get stuck.\n"
        "matchingRules:\n- type: PromQL\n  promql:\n    promql:\n      group(network_attachment_definition_instances > 0)"
        "\n      or\n      0 * group(network_attachment_definition_instances)\n")
    (root / "blocked-edges" / "4.16.0.yaml").write_text("to: 4.16.0\nfrom: 4\\.15\\..*\n# a bug\n")
    data = read_graph_data(root)
    assert [c.name for c in data.channels] == ["stable-4.16"]
    assert [(str(b.to), b.risk is not None) for b in data.blocked] == [("4.16.0", False), ("4.16.2", True)]
    promql = data.blocked[1].risk.matching_rules[0].promql  # type: ignore[union-attr]
    assert promql.startswith("group(network_attachment_definition_instances > 0) or")


def test_cvo_graph_build_of_images_and_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An image's node has its pull spec by digest and its digest as manifestref; with --channel the answer the
    update service gives, usable as a file:// upstream."""
    import json

    from cvo.cli.main import main
    from cvo.payload.arch import go_arch

    layout = tmp_path / "oci"
    assert main(["release", "new", "--from-dir", str(REPO / "payloads" / "demo-4.16.3"),
                 "--to", f"oci:{layout}:4.16.3", "-o", "json"]) == 0
    digest = json.loads(capsys.readouterr().out)["digest"]
    argv = ["graph", "build", str(REPO / "payloads" / "demo-4.16.0"), f"oci:{layout}:4.16.3",
            "--graph-data", str(REPO / "hack" / "demo-graph-data")]
    assert main([*argv, "-o", "json"]) == 0
    graph = json.loads(capsys.readouterr().out)
    image = next(n for n in graph["nodes"] if n["version"].startswith("4.16.3"))
    assert image["metadata"]["io.openshift.upgrades.graph.release.manifestref"] == digest
    assert image["payload"].endswith(f"@{digest}")
    assert graph["edges"] == [[0, 1]] and graph["nodes"][0]["version"] == f"4.16.0+{go_arch()}"
    assert main([*argv, "--channel", "stable-4.17", "-o", "json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [n["version"] for n in answer["nodes"]] == ["4.16.0", "4.16.3"]
    assert main([*argv]) == 0
    assert capsys.readouterr().out.startswith("2 releases, 1 edges, 0 conditional edges\n")
