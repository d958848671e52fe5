"""Fuzz targets of the update service's client (cvo.updates): name -> (hypothesis strategy, target), merged into
fuzz_targets.TARGETS; :data:`BYTE_SEEDS` seed the mutation fuzzer of ``make fuzz``.

``graph-body``: any body (mostly a near-valid graph, cut or with bytes flipped) read and selected from, as
``GetUpdates`` does after the download; ``graph-response``: a real HTTP server on 127.0.0.1 answering with any
status and body, or a body shorter than its Content-Length, through ``calculateAvailableUpdatesStatus``.
Either may only answer, or refuse with one of the CVO's ``RetrievedUpdates`` reasons; never raise.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hypothesis import strategies as st

from cvo.updates.client import UpdateServiceOptions
from cvo.updates.errors import UpdateError
from cvo.updates.graph import GraphInvalid, parse_graph
from cvo.updates.retrieve import calculate
from cvo.updates.select import select_updates
from tests.support.update_service import FixedRegistry

TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {}
REASONS = {"RemoteFailed", "ResponseFailed", "ResponseInvalid", "VersionNotFound"}
VERSIONS = ["4.1.0", "4.1.1", "4.1.2", "4.2.0-rc.1", "4.1.0+build", "v4.1.0", "4.1", "04.1.0", "4.1.0-", "", "4.1.0.0"]
ID = "897f0a22-33ca-4106-a2c4-29b75250255a"

_text = st.sampled_from(VERSIONS) | st.text(max_size=6)
_meta_value = st.none() | st.booleans() | st.integers(-5, 2**70) | st.floats(allow_nan=False) | _text | \
    st.sampled_from(["multi", "amd64", "a,b", ",", "", "https://x/\n", "https://example.com/e"]) | \
    st.lists(st.integers(), max_size=2)
_metadata = st.dictionaries(st.sampled_from(["url", "release.openshift.io/architecture",
                                             "io.openshift.upgrades.graph.release.channels", "x"]), _meta_value,
                            max_size=3)
_node = st.fixed_dictionaries({"version": _text | st.integers() | st.none(), "payload": _text | st.integers()},
                              optional={"metadata": _metadata | st.lists(st.integers(), max_size=1)})
_index = st.integers(-2, 6) | st.floats(allow_nan=False, allow_infinity=False) | st.none() | _text
_rule = st.fixed_dictionaries({"type": st.sampled_from(["Always", "PromQL", "bogus", ""]) | st.integers()},
                              optional={"promql": st.fixed_dictionaries({"promql": st.sampled_from(["up", ""])})
                                        | st.none() | st.integers()})
_risk = st.fixed_dictionaries({"name": _text, "message": _text, "url": _text,
                               "matchingRules": st.lists(_rule, max_size=3) | st.none()})
_conditional = st.fixed_dictionaries({
    "edges": st.lists(st.fixed_dictionaries({"from": st.sampled_from(VERSIONS) | st.integers(),
                                             "to": st.sampled_from(VERSIONS)}), max_size=3),
    "risks": st.lists(_risk, max_size=3)})
graphs = st.fixed_dictionaries({}, optional={
    "nodes": st.lists(_node, max_size=6) | _text,
    "edges": st.lists(st.lists(_index, min_size=0, max_size=3), max_size=8) | st.integers(),
    "conditionalEdges": st.lists(_conditional, max_size=3) | st.none()})


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A near-valid graph, whole, cut short, or with a few bytes replaced; or any bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))
    body = json.dumps(draw(graphs)).encode()
    how = draw(st.integers(0, 5))
    if how == 0:
        return body[: draw(st.integers(0, len(body)))]
    if how == 1 and body:
        data = bytearray(body)
        for _ in range(draw(st.integers(1, 3))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data)
    return body


def graph_body_target(body: bytes) -> None:
    try:
        graph = parse_graph(body)
    except GraphInvalid as err:
        assert str(err) and "\n" not in str(err), repr(str(err))
        return
    for version in ("4.1.0", "4.1.1"):
        for arch, current in (("amd64", "amd64"), ("Multi", "amd64")):
            try:
                select_updates(graph, version, arch, FixedRegistry(), current_arch=current, channel="c")
            except UpdateError as err:
                assert err.reason in REASONS and err.message, (err.reason, err.message)


TARGETS["graph-body"] = (bodies(), graph_body_target)


# --- graph-response: a real server, once per process ---------------------------------------------------------

_answer: dict[str, Any] = {"status": 200, "body": b"", "cut": False}
_server: list[ThreadingHTTPServer] = []


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body, status, cut = _answer["body"], _answer["status"], _answer["cut"]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) + (10 if cut else 0)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True


def _url() -> str:
    if not _server:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        atexit.register(server.shutdown)
        _server.append(server)
    host, port = _server[0].server_address[:2]
    return f"http://{host!s}:{port}/graph"


def graph_response_target(answer: tuple[int, bytes, bool]) -> None:
    _answer.update(status=answer[0], body=answer[1], cut=answer[2])
    got = asyncio.run(calculate(_url(), cluster_id=ID, desired_arch="amd64", current_arch="amd64", channel="c",
                                version="4.1.0", registry=FixedRegistry(), options=UpdateServiceOptions(timeout=5)))
    retrieved = got.retrieved
    assert retrieved.status in ("True", "False")
    if retrieved.status == "False":
        assert retrieved.reason in REASONS, retrieved
        assert retrieved.message.startswith("Unable to retrieve available updates: "), retrieved
    else:
        assert got.current is not None and got.current.version == "4.1.0"


TARGETS["graph-response"] = (st.tuples(st.sampled_from([200, 200, 200, 204, 301, 404, 500]), bodies(), st.booleans()),
                             graph_response_target)

BYTE_SEEDS = [
    json.dumps({"nodes": [{"version": "4.1.0", "payload": "a", "metadata": {
        "io.openshift.upgrades.graph.release.channels": "stable-4.1", "url": "https://example.com/4.1.0"}},
        {"version": "4.1.1", "payload": "b"}, {"version": "4.1.2", "payload": "c"}],
        "edges": [[0, 1], [1, 2]],
        "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "4.1.2"}], "risks": [
            {"name": "R", "message": "m", "url": "u", "matchingRules": [
                {"type": "PromQL", "promql": {"promql": "up"}}, {"type": "Always"}]}]}]}).encode(),
    b'{"nodes": [{"version": "4.1.0", "payload": "a"}], "edges": []}',
    b"<html><body>502</body></html>",
]
