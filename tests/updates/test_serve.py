"""cvo.updates.serve: the policy engine's filters, and its HTTP API served on 127.0.0.1 (a real HTTP client)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.updates.build import ARCH_KEY, CHANNELS_KEY, build_graph
from cvo.updates.graph import ConditionalEdges, Graph, GraphInvalid, Node, parse_graph
from cvo.updates.graph_data import read_graph_data
from cvo.updates.serve import CINCINNATI_V1, Answers, filter_graph, serve_in_thread
from tests.support.graph_data import release, risk_doc, write_graph_data

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def graph(tmp_path: Path):  # type: ignore[no-untyped-def]
    data = read_graph_data(write_graph_data(tmp_path, channels={
        "stable-4.16": ["4.16.0", "4.16.3"], "stable-4.17": ["4.16.0", "4.16.3", "4.17.0"]},
        blocked={"r": risk_doc("4.17.0", "^4[.]16[.]0[+]", "Risky")}))
    return build_graph([release("4.16.0"), release("4.16.3", "4.16.0"), release("4.17.0", "4.16.0", "4.16.3"),
                        release("4.16.0", arch="arm64"), release("4.16.3", "4.16.0", arch="arm64"),
                        release("4.17.0", "4.16.3", "4.16.0", arch="arm64")], data)


def test_the_filters_keep_the_channel_and_architecture_and_strip_the_suffix(graph) -> None:  # type: ignore[no-untyped-def]
    out = filter_graph(graph, "stable-4.16", "arm64")
    assert [n.version for n in out.nodes] == ["4.16.0", "4.16.3"]
    assert all(ARCH_KEY not in n.metadata for n in out.nodes)
    assert out.nodes[0].payload == "quay.io/demo/release@sha256:4.16.0-arm64"
    assert out.edges == ((0, 1),)
    assert out.conditional_edges == ()  # 4.17.0 is not in stable-4.16

    out = filter_graph(graph, "stable-4.17", "amd64")
    assert [n.version for n in out.nodes] == ["4.16.0", "4.16.3", "4.17.0"]
    assert out.edges == ((0, 1), (1, 2))
    assert [(c.edges, [r.name for r in c.risks]) for c in out.conditional_edges] == [
        ((("4.16.0", "4.17.0"),), ["Risky"])]
    assert filter_graph(graph, "stable-4.18", "amd64").nodes == ()
    assert filter_graph(graph, "stable-4.17", "s390x").nodes == ()


@pytest.fixture
def server(graph) -> Iterator[str]:  # type: ignore[no-untyped-def]
    srv, url = serve_in_thread(Answers(graph))
    try:
        yield url
    finally:
        srv.shutdown()
        srv.server_close()


def get(url: str, path: str, headers: dict[str, str] | None = None, method: str = "GET") -> tuple[int, str, bytes]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read()
    finally:
        conn.close()


def test_a_query_as_the_cvo_sends_it(server: str) -> None:
    status, kind, body = get(server, "/api/upgrades_info/v1/graph?arch=amd64&channel=stable-4.17"
                                     "&id=0b3f2a0e-0000-4000-8000-000000000000&version=4.16.3",
                             {"Accept": "application/json"})
    assert (status, kind) == (200, "application/json")
    doc = json.loads(body)
    assert doc["version"] == 1
    assert [n["version"] for n in doc["nodes"]] == ["4.16.0", "4.16.3", "4.17.0"]
    assert doc["conditionalEdges"][0]["risks"][0]["name"] == "Risky"
    graph = parse_graph(body)  # what the CVO's client reads
    assert len(graph.edges) == 2


@pytest.mark.parametrize(("accept", "status", "kind"), [
    (None, 200, CINCINNATI_V1), (CINCINNATI_V1, 200, CINCINNATI_V1), ("*/*", 200, "application/json"),
    ("application/*", 200, "application/json"), ("text/html", 406, "application/json"),
    ("application/json, text/plain", 406, "application/json"),
])
def test_accept(server: str, accept: str | None, status: int, kind: str) -> None:
    got = get(server, "/graph?channel=stable-4.16", {} if accept is None else {"Accept": accept})
    assert got[:2] == (status, kind)
    if status == 406:
        assert json.loads(got[2]) == {"kind": "invalid_content_type", "value": "invalid Content-Type requested"}


@pytest.mark.parametrize(("query", "body"), [
    ("", {"kind": "missing_params", "value": "mandatory client parameters missing: channel"}),
    ("?arch=amd64&version=4.16.0", {"kind": "missing_params", "value": "mandatory client parameters missing: channel"}),
    ("?channel=Stable-4.16", {"kind": "invalid_params", "value": "invalid client parameters: channel 'Stable-4.16' "
                                                                 "does not match regex '^[0-9a-z\\-\\.]+$'"}),
    ("?channel=", {"kind": "invalid_params", "value": "invalid client parameters: channel '' does not match regex "
                                                      "'^[0-9a-z\\-\\.]+$'"}),
    ("?channel=stable-4.16&arch=x86_64", {"kind": "invalid_params", "value": "invalid client parameters: arch "
                                                                             "'x86_64' does not match regex "
                                                                             "'^[0-9a-z]+$'"}),
])
def test_bad_queries_are_400_with_the_services_error(server: str, query: str, body: dict[str, str]) -> None:
    status, kind, got = get(server, f"/api/upgrades_info/v1/graph{query}", {"Accept": "application/json"})
    assert (status, kind, json.loads(got)) == (400, "application/json", body)


def test_an_unknown_channel_is_an_empty_graph_and_the_default_arch_is_amd64(server: str) -> None:
    status, _, body = get(server, "/api/upgrades_info/graph?channel=fast-9.9")
    assert (status, json.loads(body)) == (200, {"version": 1, "nodes": [], "edges": [], "conditionalEdges": []})
    _, _, body = get(server, "/api/upgrades_info/graph?channel=stable-4.16")
    assert [n["payload"] for n in json.loads(body)["nodes"]] == [
        "quay.io/demo/release@sha256:4.16.0-amd64", "quay.io/demo/release@sha256:4.16.3-amd64"]


def test_other_paths_and_methods(server: str) -> None:
    assert get(server, "/api/upgrades_info/v2/graph?channel=stable-4.16")[0] == 404
    assert get(server, "/graph?channel=stable-4.16", method="POST")[0] == 405


def test_cvo_graph_serve_as_a_process(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "graph.json"
    path.write_bytes(graph.dumps())
    proc = subprocess.Popen([sys.executable, "-m", "cvo", "graph", "serve", str(path), "--address", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"Serving {path} (6 releases; channels: stable-4.16, stable-4.17) at http://127.0.0.1:")
        url = line.split(" at ")[1].strip()
        base, _, path_part = url.partition("/api/")
        status, _, body = get(base, f"/api/{path_part}?channel=stable-4.17&arch=arm64",
                              {"Accept": "application/json"})
        assert status == 200 and [n["version"] for n in json.loads(body)["nodes"]] == ["4.16.0", "4.16.3", "4.17.0"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    # SIGTERM is how a supervisor stops a server: a normal end (exit 0), as for cvo run
    assert proc.returncode == 0 and "Traceback" not in err and "error:" not in err


def test_cvo_graph_serve_of_a_file_that_is_no_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cvo.cli.main import main

    (tmp_path / "g.json").write_text("<html>")
    assert main(["graph", "serve", str(tmp_path / "g.json")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'g.json'}: not an update graph: ")
    assert main(["graph", "serve", str(tmp_path / "g.json"), "--address", "nowhere"]) == 2
    assert "--address 'nowhere': want HOST:PORT" in capsys.readouterr().err
    assert os.path.exists(tmp_path / "g.json")


# --- any graph: the answers never fail ------------------------------------------------------------------------------

_versions = st.one_of(st.sampled_from(["4.16.0+amd64", "4.16.3+amd64.x", "4.17.0+arm64", "4.17.0", "x+amd64", ""]),
                      st.text(max_size=12))
_nodes = st.lists(st.builds(lambda v, ch, ar, p: Node(v, p, {**({CHANNELS_KEY: ch} if ch is not None else {}),
                                                             **({ARCH_KEY: ar} if ar is not None else {})}),
                            _versions, st.one_of(st.none(), st.sampled_from(["a", "a,b", " a , c", ",", "A"])),
                            st.one_of(st.none(), st.sampled_from(["amd64", "amd64,arm64", "", "AMD64"])),
                            st.text(max_size=8)), max_size=6)


def _semantic(version: str, semver: Any) -> bool:
    try:
        semver.parse(version)
    except semver.SemverError:
        return False
    return True


@settings(max_examples=200, deadline=None)
@given(nodes=_nodes, edges=st.lists(st.tuples(st.integers(-2, 8), st.integers(-2, 8)), max_size=10),
       conditional=st.lists(st.tuples(_versions, _versions), max_size=4),
       query=st.sampled_from(["channel=a", "channel=b&arch=arm64", "channel=c&arch=amd64", "channel=A", "arch=x",
                              "channel=a&channel=b", "channel=%00", ""]))
def test_any_graph_is_answered(nodes: list[Node], edges: list[tuple[int, int]],
                               conditional: list[tuple[str, str]], query: str) -> None:
    graph = Graph(tuple(nodes), tuple(edges), (ConditionalEdges(tuple(conditional), ()),) if conditional else ())
    answers = Answers(graph)
    answer = answers.answer("/graph", query, "application/json")
    assert answer.status in (200, 400)
    doc = json.loads(answer.body)
    if answer.status == 200:
        served = tuple(Node(n["version"], n["payload"], n["metadata"]) for n in doc["nodes"])
        try:
            assert parse_graph(answer.body).nodes == served
        except GraphInvalid:  # the CVO's client refuses a version that is no semantic version; the server serves it
            from cvo.payload import semver

            assert any(not _semantic(n.version, semver) for n in served)
        assert all(0 <= i < len(doc["nodes"]) for e in doc["edges"] for i in e)
    else:
        assert set(doc) == {"kind", "value"}


def test_a_connection_that_sends_nothing_is_dropped(graph, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A client that never finishes its request does not keep a thread forever (the handler's timeout)."""
    import socket

    from cvo.updates import serve

    monkeypatch.setattr(serve._Handler, "timeout", 0.5)
    srv, url = serve_in_thread(Answers(graph))
    try:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as idle:
            idle.sendall(b"GET /graph?chan")
            assert idle.recv(100) == b""  # closed by the server after its timeout, without an answer
        assert get(url, "/graph?channel=stable-4.16")[0] == 200
    finally:
        srv.shutdown()
        srv.server_close()
