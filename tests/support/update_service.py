"""A real update service for tests: a stdlib HTTP server on 127.0.0.1, in a thread, answering each GET with
what the test set (a graph, a status, a body, a stall), recording every request; and a condition registry
with fixed answers.

    with UpdateService() as service:
        service.graph = {"nodes": [...], "edges": [...]}
        url = service.url  # http://127.0.0.1:PORT/graph
"""

from __future__ import annotations

import http.server
import json
import ssl
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cvo.updates.errors import EvaluationError
from cvo.updates.model import ALWAYS, PROMQL, MatchingRule


@dataclass
class Request:
    path: str
    query: dict[str, list[str]]
    raw_query: str
    headers: dict[str, str]


@dataclass
class Answer:
    status: int = 200
    body: bytes | None = None  # None: the service's graph as JSON
    chunks: Iterator[bytes] | None = None  # a body sent piece by piece (e.g. 50 MB)
    stall: str = ""  # "before-headers" | "in-body": wait until the server closes; "trickle": a byte every 0.1 s


class UpdateService:
    def __init__(self, tls: tuple[Path, Path] | None = None) -> None:
        """``tls``: (certificate, key) to serve https with."""
        self.scheme = "https" if tls else "http"
        self.graph: Any = {"nodes": [], "edges": []}
        self.answer = Answer()
        self.requests: list[Request] = []
        self.redirect = ""  # a Location header to send
        self._closing = threading.Event()
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                service.requests.append(Request(parts.path, parse_qs(parts.query, keep_blank_values=True),
                                                parts.query, {k: v for k, v in self.headers.items()}))
                answer = service.answer
                if answer.stall == "before-headers":
                    service._closing.wait()
                    self.close_connection = True  # the client waiting on it gets a closed connection, now
                    return
                body = answer.body if answer.body is not None else json.dumps(service.graph).encode()
                self.send_response(answer.status)
                if service.redirect:
                    self.send_header("Location", service.redirect)
                self.send_header("Content-Type", "application/json")
                if answer.chunks is None and answer.stall not in ("in-body", "trickle"):
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    if answer.stall == "trickle":
                        for i in range(len(body)):
                            self.wfile.write(body[i:i + 1])
                            self.wfile.flush()
                            if service._closing.wait(0.1):
                                break
                        self.close_connection = True
                        return
                    if answer.stall == "in-body":
                        self.wfile.write(body[: len(body) // 2])
                        self.wfile.flush()
                        service._closing.wait()
                        self.close_connection = True
                        return
                    assert answer.chunks is not None
                    for chunk in answer.chunks:
                        self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading: what the test wanted
                self.close_connection = True

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self.scheme}://{host!s}:{port}/graph"

    def __enter__(self) -> UpdateService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def node(version: str, image: str | None = None, **metadata: str) -> dict[str, Any]:
    meta = {k.replace("__", "."): v for k, v in metadata.items()}
    return {"version": version, "payload": image or f"quay.io/openshift-release-dev/ocp-release:{version}",
            "metadata": meta}


def risk(name: str, *rules: Mapping[str, Any], message: str = "", url: str = "") -> dict[str, Any]:
    return {"url": url or f"https://example.com/{name}", "name": name, "message": message or f"{name} breaks things.",
            "matchingRules": list(rules) or [{"type": "Always"}]}


PROMQL_RULE = {"type": "PromQL", "promql": {"promql": 'max(cluster_proxy_enabled{type=~"https?"})'}}


@dataclass
class FixedRegistry:
    """A ``ConditionRegistry`` like the CVO's standard one in what it prunes (Always, PromQL with a query);
    ``answers`` maps a PromQL query to True/False, or to an error text (EvaluationError)."""

    answers: Mapping[str, bool | str] = field(default_factory=dict)
    matched: list[tuple[MatchingRule, ...]] = field(default_factory=list)

    async def match(self, rules: Sequence[MatchingRule]) -> bool:
        self.matched.append(tuple(rules))
        for rule in rules:
            if rule.type == ALWAYS:
                return True
            if rule.type == PROMQL:
                answer = self.answers.get(rule.promql, "no answer for this query")
                if isinstance(answer, str):
                    raise EvaluationError(answer)
                return answer
        raise EvaluationError("no recognized rule")

    def prune_invalid(self, rules: Sequence[MatchingRule]) -> tuple[tuple[MatchingRule, ...], str]:
        kept = tuple(r for r in rules if r.type == ALWAYS or (r.type == PROMQL and r.promql))
        dropped = [r.type for r in rules if r not in kept]
        return kept, "; ".join(f"unrecognized condition type {t!r}" for t in dropped)
