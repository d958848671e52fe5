"""The update service's HTTP API over a graph builder's graph, as Cincinnati's policy engine serves it
(openshift/cincinnati ``policy-engine/src/graph.rs`` ``index``): ``GET {prefix}/v1/graph`` and
``{prefix}/graph`` with ``channel`` (required), ``arch`` (default ``amd64``) and whatever else the client
sends (the CVO's ``id`` and ``version`` are read by nothing, as there).

* ``Accept`` as ``commons::validate_content_type``: none → ``application/vnd.redhat.cincinnati.v1+json``;
  ``application/json``, that type, ``*``, ``*/*`` or ``application/*`` → served; anything else 406;
* the channel filter (``plugins/internal/channel_filter.rs``): nodes whose ``…release.channels`` holds the
  channel, conditional edges between them; a channel not matching ``^[0-9a-z\\-\\.]+$`` is a 400;
* the arch filter (``arch_filter.rs``): nodes whose ``…release.arch`` holds the architecture (a node without it
  is dropped), that key removed and the architecture stripped from versions, conditional edges too;
* errors as ``commons::GraphError``: ``{"kind": "missing_params", "value": "mandatory client parameters
  missing: channel"}`` and so on, with the status code of its kind.

Every answer with nodes is computed once, at start (:class:`Answers`); a channel or architecture the graph does
not hold is answered the empty graph, as the filters leave it.  The policy engine's node order after a filter
is an accident of its graph library's removals; cvo keeps the builder's order.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson

from cvo.updates.build import ARCH_KEY, CHANNELS_KEY
from cvo.updates.graph import ConditionalEdges, Graph, Node

CINCINNATI_V1 = "application/vnd.redhat.cincinnati.v1+json"
JSON = "application/json"
DEFAULT_ARCH = "amd64"
PATH_PREFIX = "/api/upgrades_info"
PATHS = frozenset({f"{PATH_PREFIX}/v1/graph", f"{PATH_PREFIX}/graph", "/v1/graph", "/graph"})
CHANNEL_RE = re.compile(r"^[0-9a-z\-\.]+$")
ARCH_RE = re.compile(r"^[0-9a-z]+$")
_ACCEPTABLE = frozenset({"*", "*/*", JSON, CINCINNATI_V1, "application/*"})


class PolicyError(Exception):
    """``commons::GraphError``: ``kind`` and ``value`` are the JSON body's, ``status`` the HTTP code."""

    def __init__(self, status: int, kind: str, value: str) -> None:
        super().__init__(value)
        self.status, self.kind, self.value = status, kind, value

    def body(self) -> bytes:
        return orjson.dumps({"kind": self.kind, "value": self.value})


def missing_params(*names: str) -> PolicyError:
    return PolicyError(400, "missing_params", f"mandatory client parameters missing: {', '.join(sorted(names))}")


def invalid_params(message: str) -> PolicyError:
    return PolicyError(400, "invalid_params", f"invalid client parameters: {message}")


INVALID_CONTENT_TYPE = PolicyError(406, "invalid_content_type", "invalid Content-Type requested")


def content_type(accept: str | None) -> str:
    """``commons::validate_content_type``: the type to answer with, or :data:`INVALID_CONTENT_TYPE` raised."""
    if accept is None:
        return CINCINNATI_V1
    if accept not in _ACCEPTABLE:  # the header as one value: not a full Accept parser, as there
        raise INVALID_CONTENT_TYPE
    return JSON if "*" in accept.split("/") else accept


def _values(metadata: Mapping[str, str], key: str) -> set[str] | None:
    value = metadata.get(key)
    return None if value is None else {v.strip() for v in value.split(",")}


def _strip_arch(version: str, arch: str) -> str:
    """The version without the build identifier ``arch`` (``4.16.3+amd64`` → ``4.16.3``)."""
    core, plus, build = version.partition("+")
    if not plus:
        return version
    kept = [b for b in build.split(".") if b != arch]
    return f"{core}+{'.'.join(kept)}" if kept else core


def check_params(channel: str | None, arch: str | None) -> tuple[str, str]:
    """The channel and architecture of a query, validated as the filters validate them."""
    if channel is None:
        raise missing_params("channel")
    if not CHANNEL_RE.match(channel) or channel.endswith("\n"):
        raise invalid_params(f"channel '{channel}' does not match regex '{CHANNEL_RE.pattern}'")
    arch = DEFAULT_ARCH if arch is None else arch
    if not ARCH_RE.match(arch) or arch.endswith("\n"):
        raise invalid_params(f"arch '{arch}' does not match regex '{ARCH_RE.pattern}'")
    return channel, arch


def filter_graph(graph: Graph, channel: str, arch: str) -> Graph:
    """What the channel filter and then the arch filter leave of ``graph`` (see the module's docstring)."""
    keep: list[int] = []
    for i, node in enumerate(graph.nodes):
        channels = _values(node.metadata, CHANNELS_KEY)
        archs = _values(node.metadata, ARCH_KEY)
        if channels is not None and channel in channels and archs is not None and arch in archs:
            keep.append(i)
    new_index = {old: new for new, old in enumerate(keep)}
    nodes = tuple(Node(_strip_arch(graph.nodes[i].version, arch), graph.nodes[i].payload,
                       {k: v for k, v in graph.nodes[i].metadata.items() if k != ARCH_KEY}) for i in keep)
    edges = tuple((new_index[a], new_index[b]) for a, b in graph.edges if a in new_index and b in new_index)
    in_channel = {graph.nodes[i].version for i, node in enumerate(graph.nodes)
                  if channel in (_values(node.metadata, CHANNELS_KEY) or ())}
    conditional = []
    for entry in graph.conditional_edges:
        pairs = tuple((_strip_arch(a, arch), _strip_arch(b, arch)) for a, b in entry.edges
                      if a in in_channel and b in in_channel and arch in a and arch in b)
        if pairs:
            conditional.append(ConditionalEdges(pairs, entry.risks))
    return Graph(nodes, edges, tuple(conditional))


def versioned_json(graph: Graph) -> bytes:
    """The answer's body: ``VersionedGraph``, ``{"version": 1, "nodes": …, "edges": …, "conditionalEdges": …}``."""
    return orjson.dumps({"version": 1, **graph.to_json()})


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes


class Answers:
    """Every answer of one graph, computed at start: by (channel, arch) for the ones with nodes."""

    def __init__(self, graph: Graph) -> None:
        channels: set[str] = set()
        archs: set[str] = set()
        for node in graph.nodes:
            channels |= _values(node.metadata, CHANNELS_KEY) or set()
            archs |= _values(node.metadata, ARCH_KEY) or set()
        self.bodies: dict[tuple[str, str], bytes] = {}
        for channel in sorted(channels):
            for arch in sorted(archs):
                if CHANNEL_RE.match(channel) and ARCH_RE.match(arch):
                    filtered = filter_graph(graph, channel, arch)
                    if filtered.nodes:
                        self.bodies[(channel, arch)] = versioned_json(filtered)
        self.empty = versioned_json(Graph())
        self.unlabelled = sum(1 for n in graph.nodes if ARCH_KEY not in n.metadata)

    def answer(self, path: str, query: str, accept: str | None) -> Answer:
        """The answer to ``GET path?query`` with this ``Accept`` header (``None``: no header)."""
        if path not in PATHS:
            return Answer(404, "", b"")
        try:
            kind = content_type(accept)
            params: dict[str, str] = {}
            for key, value in parse_qsl(query, keep_blank_values=True):
                params[key] = value
            channel, arch = check_params(params.get("channel"), params.get("arch"))
        except PolicyError as err:
            return Answer(err.status, JSON, err.body())
        return Answer(200, kind, self.bodies.get((channel, arch), self.empty))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "cvo-graph"
    disable_nagle_algorithm = True  # the headers and the body are two writes: Nagle would hold the body's tail
    timeout = 60  # seconds a connection may sit idle or half-sent before its thread gives it up
    answers: Answers  # set on the subclass made per server

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        self._send(self.answers.answer(url.path, url.query, self.headers.get("Accept")))

    def _not_allowed(self) -> None:
        url = urlsplit(self.path)
        self._send(Answer(405 if url.path in PATHS else 404, "", b""))

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = _not_allowed

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        if answer.content_type:
            self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        if self.request_version == "HTTP/1.0" and not self.close_connection:  # it asked for keep-alive
            self.send_header("Connection", "keep-alive")
        self.end_headers()
        self.wfile.write(answer.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the command logs what it serves, not every request


class GraphServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_server(answers: Answers, host: str, port: int) -> GraphServer:
    """A threaded HTTP server answering from ``answers`` (not started: ``serve_forever``)."""
    handler = type("Handler", (_Handler,), {"answers": answers})
    return GraphServer((host, port), handler)


def serve_in_thread(answers: Answers, host: str = "127.0.0.1", port: int = 0) -> tuple[GraphServer, str]:
    """A server started in a daemon thread, and its base URL; ``server.shutdown()`` stops it."""
    server = make_server(answers, host, port)
    threading.Thread(target=server.serve_forever, name="graph-serve", daemon=True).start()
    bound_host, bound_port = server.server_address[:2]
    return server, f"http://{bound_host!s}:{bound_port}"
