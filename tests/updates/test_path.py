"""cvo.updates.path: the fewest updates, then the newest releases; risks, gates, the Recommended condition."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.payload import semver
from cvo.updates.build import build_graph
from cvo.updates.graph import ConditionalEdges, Graph, Node
from cvo.updates.graph_data import read_graph_data
from cvo.updates.model import MatchingRule, Risk
from cvo.updates.path import Gate, NoPath, plan_path
from cvo.updates.serve import Answers, serve_in_thread
from tests.support.graph_data import release, risk_doc, write_graph_data

RISK = Risk("Etcd", "etcd may stall", "https://bugs.example.com/Etcd", (MatchingRule("Always"),))


def make_graph(edges: Sequence[tuple[str, str]], conditional: Sequence[tuple[str, str]] = (),
               extra: Sequence[str] = ()) -> Graph:
    versions = sorted({v for e in [*edges, *conditional] for v in e} | set(extra), key=semver.parse)
    index = {v: i for i, v in enumerate(versions)}
    return Graph(tuple(Node(v, f"quay.io/r@sha256:{v}") for v in versions),
                 tuple((index[a], index[b]) for a, b in edges),
                 (ConditionalEdges(tuple(conditional), (RISK,)),) if conditional else ())


def steps(path: Any) -> list[str]:
    return [path.source, *(h.target for h in path.hops)]


def test_eus_to_eus_goes_through_the_newest_odd_minor_with_an_edge_to_the_target() -> None:
    graph = make_graph([("4.14.10", "4.14.20"), ("4.14.10", "4.15.5"), ("4.14.10", "4.15.30"),
                        ("4.14.20", "4.15.30"), ("4.15.5", "4.16.3"), ("4.15.30", "4.16.3"),
                        ("4.15.30", "4.15.31"), ("4.15.31", "4.16.3")])
    path = plan_path(graph, "4.14.10", "4.16.3")
    assert steps(path) == ["4.14.10", "4.15.30", "4.16.3"]
    assert [h.kind for h in path.hops] == ["minor", "minor"]
    assert path.hops[0].image == "quay.io/r@sha256:4.15.30"


def test_fewest_updates_come_before_newer_releases() -> None:
    graph = make_graph([("4.16.0", "4.16.1"), ("4.16.1", "4.17.0"), ("4.16.0", "4.16.9"), ("4.16.9", "4.16.10"),
                        ("4.16.10", "4.17.0")])
    assert steps(plan_path(graph, "4.16.0", "4.17.0")) == ["4.16.0", "4.16.1", "4.17.0"]


def test_conditional_edges_count_and_carry_their_risks() -> None:
    graph = make_graph([("4.16.0", "4.16.3")], conditional=[("4.16.3", "4.17.0"), ("4.16.0", "4.16.3")])
    path = plan_path(graph, "4.16.0", "4.17.0")
    assert steps(path) == ["4.16.0", "4.16.3", "4.17.0"]
    # an update both unconditional and conditional is conditional, as the CVO takes it
    assert [h.risks for h in path.hops] == [(RISK,), (RISK,)]


def test_gates_apply_to_minor_updates_and_recommended_to_the_first() -> None:
    graph = make_graph([("4.16.0", "4.16.3"), ("4.16.3", "4.17.0"), ("4.17.0", "5.0.0")])
    gate = Gate("Upgradeable", "AdminAckRequired", "ack the API removals")
    rec = {"type": "Recommended", "status": "False", "reason": "Etcd", "message": "etcd may stall"}
    path = plan_path(graph, "4.16.0", "5.0.0", gate=gate, recommended={"4.16.3": rec, "4.17.0": rec})
    assert [(h.kind, h.gates) for h in path.hops] == [("patch", ()), ("minor", (gate,)), ("major", (gate,))]
    assert [h.recommended for h in path.hops] == [rec, None, None]
    assert path.to_json()["hops"][1]["gates"] == [{"type": "Upgradeable", "status": "False",
                                                    "reason": "AdminAckRequired", "message": "ack the API removals"}]


@pytest.mark.parametrize(("source", "target", "message"), [
    ("4.16.0", "4.18.0", "the target version 4.18.0 is not in channel c's graph (4 releases)"),
    ("4.15.0", "4.17.0", "the current version 4.15.0 is not in channel c's graph (4 releases)"),
    ("4.17.0", "4.16.0", "no updates lead from 4.17.0 to 4.16.0 in channel c's graph"),
    ("4.16.0", "4.16.9", "no updates lead from 4.16.0 to 4.16.9 in channel c's graph"),
    ("4.16.x", "4.17.0", "the current version '4.16.x' is not a semantic version"),
])
def test_no_path(source: str, target: str, message: str) -> None:
    graph = make_graph([("4.16.0", "4.16.3"), ("4.16.3", "4.17.0")], extra=["4.16.9"])
    with pytest.raises(NoPath) as err:
        plan_path(graph, source, target, channel="c")
    assert str(err.value).startswith(message)


def test_already_there() -> None:
    assert plan_path(make_graph([("4.16.0", "4.16.3")]), "4.16.3", "4.16.3").hops == ()


# --- the rule against every path, on small random graphs ---------------------------------------------------------

VERSIONS = [f"4.{m}.{p}" for m in (14, 15, 16) for p in (0, 1, 2)]


def all_paths(edges: set[tuple[str, str]], source: str, target: str) -> Iterator[list[str]]:
    def walk(at: str, seen: list[str]) -> Iterator[list[str]]:
        if at == target:
            yield seen
            return
        for a, b in sorted(edges):
            if a == at and b not in seen:
                yield from walk(b, [*seen, b])
    yield from walk(source, [source])


@settings(max_examples=200, deadline=None)
@given(st.sets(st.tuples(st.sampled_from(VERSIONS), st.sampled_from(VERSIONS)).filter(
    lambda e: semver.parse(e[0]) < semver.parse(e[1])), max_size=20), st.sets(st.integers(0, 19), max_size=5))
def test_the_path_is_the_shortest_then_the_newest(edges: set[tuple[str, str]], conditional: set[int]) -> None:
    ordered = sorted(edges)
    cond = [e for i, e in enumerate(ordered) if i in conditional]
    graph = make_graph([e for e in ordered if e not in cond], cond, extra=VERSIONS)
    source, target = VERSIONS[0], VERSIONS[-1]
    candidates = list(all_paths(edges, source, target))
    if not candidates:
        with pytest.raises(NoPath):
            plan_path(graph, source, target)
        return
    fewest = min(len(p) for p in candidates)
    best = max((p for p in candidates if len(p) == fewest), key=lambda p: [semver.parse(v) for v in p])
    path = plan_path(graph, source, target)
    assert steps(path) == best
    assert [bool(h.risks) for h in path.hops] == [(a, b) in cond for a, b in itertools.pairwise(best)]


# --- cvo upgrade path ---------------------------------------------------------------------------------------------


@pytest.fixture
def built(tmp_path: Path) -> Graph:
    data = read_graph_data(write_graph_data(tmp_path / "data", channels={
        "stable-4.17": ["4.16.0", "4.16.3", "4.17.0"], "stable-4.16": ["4.16.0", "4.16.3"]},
        blocked={"r": risk_doc("4.17.0", "^4[.]16[.]0[+]", "Etcd")}))
    return build_graph([release("4.16.0"), release("4.16.3", "4.16.0"), release("4.17.0", "4.16.0", "4.16.3")],
                       data)


def cluster_version(upstream: str, *, channel: str = "stable-4.17", upgradeable: bool = True) -> dict[str, Any]:
    conditions = [] if upgradeable else [{"type": "Upgradeable", "status": "False", "reason": "AdminAckRequired",
                                          "message": "Kubernetes 1.30 removes APIs: ack them",
                                          "lastTransitionTime": "2024-03-01T10:00:00Z"}]
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
            "spec": {"clusterID": "0b3f2a0e-0000-4000-8000-000000000000", "channel": channel, "upstream": upstream},
            "status": {"desired": {"version": "4.16.0", "image": "quay.io/r@sha256:4.16.0"},
                       "history": [{"state": "Completed", "version": "4.16.0", "image": "quay.io/r@sha256:4.16.0",
                                    "startedTime": "2024-03-01T09:00:00Z", "completionTime": "2024-03-01T10:00:00Z",
                                    "verified": False}],
                       "conditions": conditions, "availableUpdates": None,
                       "conditionalUpdates": [{"release": {"version": "4.17.0", "image": "x"},
                                               "risks": [], "conditions": [
                                                   {"type": "Recommended", "status": "False", "reason": "Etcd",
                                                    "message": "etcd may stall",
                                                    "lastTransitionTime": "2024-03-01T10:00:00Z"}]}],
                       "observedGeneration": 1, "versionHash": ""}}


def test_cvo_upgrade_path_from_saved_objects_and_a_served_graph(
        tmp_path: Path, built: Graph, capsys: pytest.CaptureFixture[str]) -> None:
    """The cluster's upstream and channel, asked as the CVO asks (the graph served on 127.0.0.1)."""
    from cvo.cli.main import main

    server, url = serve_in_thread(Answers(built))
    try:
        saved = tmp_path / "cv.yaml"
        saved.write_text(yaml.safe_dump(cluster_version(f"{url}/api/upgrades_info/v1/graph", upgradeable=False)))
        assert main(["upgrade", "path", "--to", "4.17.0", "--from-file", str(saved)]) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[:4] == [
            "Update path from 4.16.0 to 4.17.0 in stable-4.17: 1 update", "",
            "STEP  FROM    TO      KIND   RISKS  GATES",
            "1     4.16.0  4.17.0  minor  Etcd   Upgradeable=False"]
        assert "step 1, Recommended=False (Etcd) for this cluster now: etcd may stall" in out
        assert "step 1, gate Upgradeable=False (AdminAckRequired): Kubernetes 1.30 removes APIs: ack them" in out
        # the service's URL given, and a version: no cluster is read
        assert main(["upgrade", "path", "--graph", f"{url}/api/upgrades_info/graph", "--channel", "stable-4.17",
                     "--arch", "amd64", "--from", "4.16.3", "--to", "4.17.0", "--state",
                     str(tmp_path / "none.db")]) == 0
        assert capsys.readouterr().out.splitlines()[3] == "1     4.16.3  4.17.0  minor  -      -"
        assert not (tmp_path / "none.db").exists()
        # a channel without 4.17.0
        saved.write_text(yaml.safe_dump(cluster_version(f"{url}/graph", channel="stable-4.16")))
        assert main(["upgrade", "path", "--to", "4.17.0", "--from-file", str(saved)]) == 1
        assert capsys.readouterr().err == ("error: the target version 4.17.0 is not in channel stable-4.16's graph "
                                           "(2 releases)\n")
    finally:
        server.shutdown()
        server.server_close()


def test_cvo_upgrade_path_over_a_graph_file_without_a_cluster(
        tmp_path: Path, built: Graph, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from cvo.cli.main import main

    path = tmp_path / "graph.json"
    path.write_bytes(built.dumps())
    argv = ["upgrade", "path", "--graph", str(path), "--channel", "stable-4.17", "--arch", "amd64", "--from",
            "4.16.0", "--to", "4.17.0", "--state", str(tmp_path / "never-created.db")]
    assert main([*argv, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["updates"], doc["hops"][0]["risks"][0]["name"], doc["hops"][0]["gates"]) == (1, "Etcd", [])
    assert main([*argv, "-o", "dot"]) == 0
    assert '"4.16.0" -> "4.17.0" [label="minor\\nEtcd", style=dashed];' in capsys.readouterr().out
    assert main([*argv, "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["hops"][0]["to"] == "4.17.0"
    assert not (tmp_path / "never-created.db").exists()
    assert main([argv[0], argv[1], "--graph", str(path), "--from", "4.16.0", "--to", "4.17.0"]) == 2
    assert "holds every channel: give --channel" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"nodes": [{"version": 4}]}')
    assert main(["upgrade", "path", "--graph", str(tmp_path / "bad.json"), "--from", "4.16.0", "--to", "4.17.0"]) == 1
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'bad.json'}: not an update graph: ")


@settings(max_examples=200, deadline=None)
@given(versions=st.lists(st.sampled_from(["4.16.0", "4.16.1", "4.17.0", "x", "", "4.16.0-rc.1", "4.17.0+b"]),
                         min_size=1, max_size=6),
       edges=st.lists(st.tuples(st.integers(-1, 6), st.integers(-1, 6)), max_size=12),
       conditional=st.lists(st.tuples(st.sampled_from(["4.16.0", "x", "4.17.0", "nope"]),
                                      st.sampled_from(["4.17.0", "4.16.1", "x"])), max_size=4))
def test_any_graph_gives_a_path_or_no_path(versions: list[str], edges: list[tuple[int, int]],
                                           conditional: list[tuple[str, str]]) -> None:
    graph = Graph(tuple(Node(v, "p") for v in versions), tuple(edges),
                  (ConditionalEdges(tuple(conditional), (RISK,)),) if conditional else ())
    try:
        path = plan_path(graph, "4.16.0", "4.17.0")
    except NoPath as err:
        assert str(err)
        return
    known = {(versions[a], versions[b]) for a, b in edges if 0 <= a < len(versions) and 0 <= b < len(versions)}
    assert all((h.source, h.target) in known | set(conditional) for h in path.hops)
    assert steps(path)[0] == "4.16.0" and steps(path)[-1] == "4.17.0"


def test_an_update_service_that_fails(tmp_path: Path, built: Graph, capsys: pytest.CaptureFixture[str]) -> None:
    from cvo.cli.main import main

    server, url = serve_in_thread(Answers(built))
    try:
        saved = tmp_path / "cv.yaml"
        for upstream, message in ((f"{url}/nope", f"error: {url}/nope: ResponseFailed: unexpected HTTP status: 404 "
                                                  "Not Found\n"),
                                  ("ftp://example.com/graph", "error: ftp://example.com/graph: RemoteFailed: Get "
                                                              '"ftp://example.com/graph?arch=amd64&channel=stable-4.17&'
                                                              'id=0b3f2a0e-0000-4000-8000-000000000000&version=4.16.0": '
                                                              'unsupported protocol scheme "ftp"\n')):  # Go's words
            saved.write_text(yaml.safe_dump(cluster_version(upstream)))
            assert main(["upgrade", "path", "--to", "4.17.0", "--from-file", str(saved)]) == 1
            assert capsys.readouterr().err == message
        import socket

        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            closed = f"http://127.0.0.1:{s.getsockname()[1]}/graph"
        saved.write_text(yaml.safe_dump(cluster_version(closed)))
        assert main(["upgrade", "path", "--to", "4.17.0", "--from-file", str(saved)]) == 1
        assert capsys.readouterr().err.startswith(f"error: {closed}: RemoteFailed: Get \"{closed}?arch=")
        saved.write_text(yaml.safe_dump(cluster_version(f"{url}/graph", channel="")))
        assert main(["upgrade", "path", "--to", "4.17.0", "--from-file", str(saved)]) == 2
        assert "no channel: the cluster has no spec.channel" in capsys.readouterr().err
    finally:
        server.shutdown()
        server.server_close()


def test_cvo_upgrade_path_on_the_embedded_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The current version is the installed release's; the graph is the demo releases' with hack/demo-graph-data."""
    import json

    from cvo.cli.main import main

    repo = Path(__file__).resolve().parents[2]
    demo = [str(repo / "payloads" / f"demo-{v}") for v in ("4.16.0", "4.16.3", "4.17.0")]
    state = str(tmp_path / "cluster.db")
    assert main(["install", demo[0], "--state", state, "-o", "json"]) == 0
    capsys.readouterr()
    assert main(["graph", "build", *demo, "--graph-data", str(repo / "hack" / "demo-graph-data"), "--arch",
                 "amd64", "-o", "json"]) == 0
    graph = tmp_path / "graph.json"
    graph.write_text(capsys.readouterr().out)
    assert main(["upgrade", "path", "--to", "4.17.0", "--graph", str(graph), "--channel", "stable-4.17", "--arch",
                 "amd64", "--state", state, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(h["from"], h["to"], [r["name"] for r in h["risks"]]) for h in doc["hops"]] == [
        ("4.16.0", "4.17.0", ["DemoEtcdMigration"])]
    assert main(["upgrade", "path", "--to", "4.16.3", "--graph", str(graph), "--channel", "stable-4.16", "--arch",
                 "amd64", "--state", state]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "Update path from 4.16.0 to 4.16.3 in stable-4.16: 1 update"
