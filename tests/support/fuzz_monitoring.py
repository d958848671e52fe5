"""Fuzz targets of cvo.monitoring: name -> (hypothesis strategy, target), merged into fuzz_targets.TARGETS.

Each target feeds one reader of what a Prometheus answers and fails only when cvo does something other
than accept the answer or refuse it with a :class:`MonitoringError` (an evaluation failure, for a risk):
``promql-answer`` (an instant query's body, read and judged as promql.go's ``Match``), ``alerts-answer``
(an ``/api/v1/alerts`` body, or a file for ``--alerts-file``) and ``prometheus-response`` (a real HTTP
server on 127.0.0.1 answers the client with the generated status, headers and body; the PromQL risk is
then evaluated through the condition registry: Recommended is True, False or Unknown, never a crash).
"""

from __future__ import annotations

import asyncio
import atexit
import http.server
import json
import threading
from typing import Any

from hypothesis import strategies as st

TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {}

_scalars = st.none() | st.booleans() | st.integers(-(2**65), 2**65) | st.floats() | st.text(max_size=6) \
    | st.sampled_from(["1", "0", "NaN", "+Inf", "0.5", "1e+00", "success", "error", "vector", "scalar", "string"])
_keys = st.sampled_from(["status", "data", "resultType", "result", "metric", "value", "values", "alerts",
                         "labels", "annotations", "state", "activeAt", "errorType", "error", "warnings", "x", ""])
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_keys, inner, max_size=4), max_leaves=16)


@st.composite
def answers(draw: st.DrawFn) -> bytes:
    """A plausible API answer with one part replaced, or any JSON, or raw bytes."""
    result_type = draw(st.sampled_from(["vector", "scalar", "string", "matrix", "", "other"]))
    samples = draw(st.lists(st.fixed_dictionaries({"metric": st.dictionaries(st.text(max_size=3), _scalars, max_size=2),
                                                   "value": st.one_of(_json, st.tuples(st.floats(), _scalars).map(list))}),
                            max_size=3))
    good: dict[str, Any] = {"status": draw(st.sampled_from(["success", "success", "error", "x"])),
                            "data": {"resultType": result_type, "result": samples,
                                     "alerts": draw(st.lists(_json, max_size=3))}}
    if draw(st.booleans()):
        good[draw(_keys)] = draw(_json)
    return draw(st.one_of(st.just(json.dumps(good).encode()), _json.map(lambda v: json.dumps(v).encode()),
                          st.binary(max_size=64), st.sampled_from([b"", b"[" * 5000, b'{"status":"success"'])))


def promql_answer_target(body: bytes) -> None:
    from cvo.monitoring.answers import MonitoringError, match_value, parse_query

    for status in (200, 422):
        try:
            assert match_value(parse_query(status, body)) in (True, False)
        except MonitoringError as err:
            assert str(err), "an error without a message"


def alerts_answer_target(body: bytes) -> None:
    from cvo.monitoring.answers import Alert, MonitoringError, parse_alerts

    try:
        alerts = parse_alerts(body)
    except MonitoringError as err:
        assert str(err)
        return
    assert all(isinstance(a, Alert) and all(isinstance(v, str) for v in a.labels.values()) for a in alerts)


class _Server:
    """A real HTTP server on 127.0.0.1 answering every GET with :attr:`response`."""

    made: _Server | None = None

    def __init__(self) -> None:
        self.response: tuple[int, list[tuple[str, str]], bytes] = (404, [], b"")
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, headers, body = server.response
                self.send_response_only(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        class Quiet(http.server.ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # the client hanging up early (a body cut at its cap) is what is tested, not a server error

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        atexit.register(self.httpd.shutdown)

    @classmethod
    def get(cls) -> _Server:
        if cls.made is None:
            cls.made = _Server()
        return cls.made


@st.composite
def responses(draw: st.DrawFn) -> dict[str, Any]:
    status = draw(st.sampled_from([200, 200, 200, 204, 301, 400, 401, 403, 404, 422, 429, 500, 503]))
    headers = draw(st.lists(st.tuples(st.sampled_from(["Content-Length", "Location", "Content-Type", "X"]),
                                      st.sampled_from(["0", "5", "999999", "-1", "x", "http://127.0.0.1:1/",
                                                       "application/json", "text/html"])), max_size=2))
    return {"status": status, "headers": headers, "body": draw(answers())}


def prometheus_response_target(spec: dict[str, Any]) -> None:
    from cvo.clock import Clock
    from cvo.monitoring.client import MonitoringOptions, Prometheus
    from cvo.updates.conditions import Registry
    from cvo.updates.evaluate import evaluate
    from cvo.updates.model import ConditionalUpdate, MatchingRule, Release, Risk

    server = _Server.get()
    server.response = (spec["status"], spec["headers"], spec["body"])
    registry = Registry(Prometheus(MonitoringOptions(server.url, timeout=0.5, max_body=1 << 16)), Clock())
    update = ConditionalUpdate(Release("1.0.1", "img"), (Risk("R", "m", "u", (MatchingRule("PromQL", "q"),)),))
    got = asyncio.run(evaluate(None, [update], registry, frozenset(), False))
    condition = got.conditional[0].conditions[0]
    assert condition["status"] in ("True", "False", "Unknown") and condition["reason"], condition


TARGETS["promql-answer"] = (answers(), promql_answer_target)
TARGETS["alerts-answer"] = (answers(), alerts_answer_target)
TARGETS["prometheus-response"] = (responses(), prometheus_response_target)
