"""The Prometheus client against hostile answers: two series, a string, an error, nothing at all, a huge
body, a stall; the token sent and never logged; the answer readers under hypothesis."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.monitoring.answers import (
    Alert,
    MonitoringError,
    QueryResult,
    Sample,
    format_value,
    match_value,
    parse_alerts,
    parse_query,
)
from cvo.monitoring.client import MonitoringOptions, Prometheus, check_url


def vector(*values: str) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"i": str(i)}, "value": [1700000000.0, v]} for i, v in enumerate(values)]}}).encode()


class Answers(BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[int, bytes]]] = {}
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        query = self.path.split("?", 1)[1] if "?" in self.path else ""
        type(self).seen.append({"path": path, "query": query, "auth": self.headers.get("Authorization", "")})
        status, body = type(self).routes.get(query or path, (404, b"not found"))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[Answers]]]:
    handler = type("H", (Answers,), {"routes": {}, "seen": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def q(promql: str) -> str:
    from urllib.parse import urlencode
    return urlencode({"query": promql})


def outcome(url: str, promql: str, **options: Any) -> bool | str:
    async def main() -> bool | str:
        try:
            return await Prometheus(MonitoringOptions(url, **options)).match(promql)
        except MonitoringError as err:
            return f"error: {err}"
    return asyncio.run(main())


HOSTILE = [
    ("one", vector("1"), True),
    ("zero", vector("0"), False),
    ("two series", vector("1", "0"), "error: invalid PromQL result length must be one, but is 2"),
    ("no series", vector(), "error: invalid PromQL result length must be one, but is 0"),
    ("half", vector("0.5"), "error: invalid PromQL result (must be 0 or 1): 0.5"),
    ("NaN", vector("NaN"), "error: invalid PromQL result (must be 0 or 1): NaN"),
    ("a string", json.dumps({"status": "success", "data": {"resultType": "string", "result": [1, "1"]}}).encode(),
     "error: invalid PromQL result type is string, not vector"),
    ("a scalar", json.dumps({"status": "success", "data": {"resultType": "scalar", "result": [1, "1"]}}).encode(),
     "error: invalid PromQL result type is scalar, not vector"),
    ("an error", json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}).encode(),
     "error: executing PromQL query: bad_data: parse error at char 3"),
    ("nothing at all", b"", "error: executing PromQL query: bad_response: the answer is not JSON: "),
    ("HTML", b"<html>login</html>", "error: executing PromQL query: bad_response: the answer is not JSON: "),
    ("a value that is no number", vector("one"),
     "error: executing PromQL query: bad_response: a sample's value \"one\" is not a number"),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_hostile_answers(server: tuple[str, type[Answers]], body: bytes, expected: bool | str) -> None:
    url, handler = server
    handler.routes[q("risk")] = (200, body)
    got = outcome(url, "risk")
    if isinstance(expected, str) and expected.endswith(": "):
        assert isinstance(got, str) and got.startswith(expected)
    else:
        assert got == expected


@pytest.mark.parametrize(("status", "body", "expected"), [
    (500, b"oops", "error: executing PromQL query: server_error: server error: 500"),
    (403, b"forbidden", "error: executing PromQL query: client_error: client error: 403"),
    (302, b"", "error: executing PromQL query: bad_response: bad response code 302"),
    (422, json.dumps({"status": "error", "errorType": "execution", "error": "too many samples"}).encode(),
     "error: executing PromQL query: execution: too many samples"),
    (400, vector("1"), "error: executing PromQL query: bad_response: inconsistent body for response code"),
])
def test_status_codes_as_client_golang(server: tuple[str, type[Answers]], status: int, body: bytes,
                                       expected: str) -> None:
    url, handler = server
    handler.routes[q("risk")] = (status, body)
    assert outcome(url, "risk") == expected


def test_a_huge_body_is_cut_off(server: tuple[str, type[Answers]]) -> None:
    url, handler = server
    handler.routes[q("risk")] = (200, b"[" + b"0," * (600 << 10) + b"0]")
    got = outcome(url, "risk", max_body=1 << 20)
    assert got == f"error: executing PromQL query: Get '{url}/api/v1/query': the answer is larger than 1048576 bytes"


def test_after_a_cut_off_answer_the_next_query_is_read_cleanly(server: tuple[str, type[Answers]]) -> None:
    """The connection left with unread bytes is closed, not handed to the next request."""
    url, handler = server
    handler.routes[q("big")] = (200, b"[" + b"0," * (600 << 10) + b"0]")
    handler.routes[q("risk")] = (200, vector("1"))

    async def main() -> list[bool | str]:
        prometheus = Prometheus(MonitoringOptions(url, max_body=1 << 20))
        out: list[bool | str] = []
        for query in ("big", "risk", "big", "risk"):
            try:
                out.append(await prometheus.match(query))
            except MonitoringError as err:
                out.append(str(err).rpartition(": ")[2])
        return out

    assert asyncio.run(main()) == ["the answer is larger than 1048576 bytes", True] * 2


def test_a_stalled_server_times_out() -> None:
    """A listening socket that never answers: the stall is certain; the deadline is the client's."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        got = outcome(url, "risk", timeout=0.3)
    assert isinstance(got, str) and got.startswith(f"error: executing PromQL query: Get '{url}/api/v1/query': ")
    assert "timed out" in got


def test_a_server_that_hangs_up_without_answering() -> None:
    """Accepts, reads the request, closes: no status line at all."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"

        def hang_up() -> None:
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.close()

        thread = threading.Thread(target=hang_up, daemon=True)
        thread.start()
        got = outcome(url, "risk", timeout=5)
        thread.join(5)
    assert isinstance(got, str) and got.startswith(f"error: executing PromQL query: Get '{url}/api/v1/query': ")


def test_nothing_listening() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    got = outcome(f"http://127.0.0.1:{port}", "risk")
    assert isinstance(got, str) and got.startswith("error: executing PromQL query: Get ")


def test_the_token_is_sent_read_every_time_and_never_logged(server: tuple[str, type[Answers]], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    url, handler = server
    handler.routes[q("risk")] = (200, vector("1"))
    token = tmp_path / "token"
    token.write_text("s3cr3t-token\n")
    assert outcome(url, "risk", token_file=str(token)) is True
    token.write_text("rotated")
    assert outcome(url, "risk", token_file=str(token)) is True
    assert [s["auth"] for s in handler.seen] == ["Bearer s3cr3t-token", "Bearer rotated"]
    assert handler.seen[0]["path"] == "/api/v1/query"
    assert "s3cr3t" not in repr(Prometheus(MonitoringOptions(url, token_file=str(token))))
    out = capsys.readouterr()
    assert "s3cr3t" not in out.out + out.err and "rotated" not in out.out + out.err


def test_a_missing_token_file_is_an_evaluation_failure(server: tuple[str, type[Answers]], tmp_path: Path) -> None:
    url, _ = server
    got = outcome(url, "risk", token_file=str(tmp_path / "absent"))
    assert got == f"error: executing PromQL query: unable to read authorization credentials file {tmp_path / 'absent'}: " \
                  "No such file or directory"


def test_alerts(server: tuple[str, type[Answers]]) -> None:
    url, handler = server
    body = {"status": "success", "data": {"alerts": [
        {"labels": {"alertname": "ClusterOperatorDegraded", "severity": "warning", "n": 3},
         "annotations": {"summary": "degraded"}, "state": "firing", "activeAt": "2025-01-28T23:00:54.8Z",
         "value": "1e+00"}]}}
    handler.routes["/api/v1/alerts"] = (200, json.dumps(body).encode())
    alerts = asyncio.run(Prometheus(MonitoringOptions(url)).alerts())
    assert alerts == (Alert({"alertname": "ClusterOperatorDegraded", "severity": "warning"}, {"summary": "degraded"},
                            "firing", "2025-01-28T23:00:54.8Z", "1e+00"),)
    assert alerts[0].name == "ClusterOperatorDegraded"
    handler.routes["/api/v1/alerts"] = (503, b"")
    with pytest.raises(MonitoringError, match=r"^failed to get alerts: bad_response: the answer is not JSON"):
        asyncio.run(Prometheus(MonitoringOptions(url)).alerts())


def test_parse_alerts() -> None:
    body = json.dumps({"status": "success", "data": {"alerts": [{"labels": {"alertname": "A"}, "state": "pending"}]}})
    assert parse_alerts(body.encode())[0].state == "pending"
    assert parse_alerts(b'{"status":"success","data":{}}') == ()
    for bad, why in ((b"[]", "not a JSON object"), (b'{"status":"success","data":{"alerts":{}}}', "not a list"),
                     (b'{"status":"success","data":{"alerts":[1]}}', "an alert is not an object"),
                     (b'{"status":"success"}', "no data object")):
        with pytest.raises(MonitoringError, match=why):
            parse_alerts(bad)


@pytest.mark.parametrize("url", ["", "thanos:9091", "ftp://x", "http://", "http://h:port"])
def test_bad_urls(url: str) -> None:
    with pytest.raises(ValueError, match=r"^error parsing promql url"):
        check_url(url)


def test_format_value_as_go() -> None:
    assert [format_value(v) for v in (2.0, 0.5, float("inf"), -float("inf"), 1e21, -0.0)] == \
        ["2", "0.5", "+Inf", "-Inf", "1000000000000000000000", "-0"]


def test_match_value_rules() -> None:
    assert match_value(QueryResult("vector", (Sample({}, 1.0),))) is True
    with pytest.raises(MonitoringError, match="must be 0 or 1"):
        match_value(QueryResult("vector", (Sample({}, 2.0),)))


# ---- the readers under hypothesis: any bytes, any JSON: a result or one MonitoringError, nothing else

JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=300)
@given(st.one_of(st.binary(max_size=200), JSON.map(lambda v: json.dumps(v).encode()),
                 st.builds(lambda rt, r: json.dumps({"status": "success", "data": {"resultType": rt, "result": r}}).encode(),
                           st.sampled_from(["vector", "scalar", "string", "matrix", ""]), JSON)),
       st.sampled_from([200, 400, 422, 500, 503, 204]))
def test_readers_never_raise_anything_but_monitoring_error(body: bytes, status: int) -> None:
    for reader in (lambda: match_value(parse_query(status, body)), lambda: parse_alerts(body, status)):
        try:
            reader()
        except MonitoringError as err:
            assert str(err)
