"""The update service's client against a real HTTP server on 127.0.0.1: the request the CVO sends, and
every way an answer can fail (each fault made certain: a server that never answers, a body that never
ends, 50 MB of body), with the CVO's reasons and messages."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.updates.client import UpdateServiceOptions, UrlInvalid, fetch_graph, parse_url, query_url
from cvo.updates.errors import UpdateError
from tests.support.faultproxy import make_serving_cert
from tests.support.update_service import Answer, UpdateService, node

ID = "01234567-0123-0123-0123-0123456789ab"
GRAPH = {"nodes": [node("4.1.0"), node("4.1.1")], "edges": [[0, 1]]}


def fetch(upstream: str, options: UpdateServiceOptions | None = None, **kw: str) -> bytes:
    args = {"arch": "amd64", "channel": "stable-4.1", "cluster_id": ID, "version": "4.1.0", **kw}
    return asyncio.run(fetch_graph(upstream, options=options or UpdateServiceOptions(timeout=10), **args))


def failure(upstream: str, options: UpdateServiceOptions | None = None) -> UpdateError:
    with pytest.raises(UpdateError) as err:
        fetch(upstream, options)
    return err.value


def test_the_request_is_the_cvos() -> None:
    with UpdateService() as service:
        service.graph = GRAPH
        body = fetch(service.url + "?z=1&a=2", UpdateServiceOptions(user_agent="cvo/test"), arch="Multi")
    assert json.loads(body) == GRAPH
    (request,) = service.requests
    # the upstream's own parameters kept, every parameter sorted by name (Go's url.Values.Encode)
    assert request.raw_query == f"a=2&arch=multi&channel=stable-4.1&id={ID}&version=4.1.0&z=1"
    assert request.headers["Accept"] == "application/json"
    assert request.headers["User-Agent"] == "cvo/test"


def test_query_url_escapes_as_go_writes_a_url() -> None:
    assert query_url("not a url", arch="amd64", channel="c h", cluster_id=ID, version="4.1.0") == \
        f"not%20a%20url?arch=amd64&channel=c+h&id={ID}&version=4.1.0"


@pytest.mark.parametrize(("status", "text"), [(404, "404 Not Found"), (500, "500 Internal Server Error"),
                                              (204, "204 No Content"), (302, "302 Found")])
def test_an_answer_other_than_200_is_response_failed(status: int, text: str) -> None:
    with UpdateService() as service:
        service.answer = Answer(status=status, body=b"" if status in (204, 302) else b"<html>no</html>")
        err = failure(service.url)
    assert (err.reason, err.message) == ("ResponseFailed", f"unexpected HTTP status: {text}")


def test_a_server_that_never_answers_is_remote_failed_after_cvos_timeout() -> None:
    with UpdateService() as service:
        service.answer = Answer(stall="before-headers")
        err = failure(service.url, UpdateServiceOptions(timeout=0.3))
    assert err.reason == "RemoteFailed"
    assert err.message.startswith('Get "http://127.0.0.1:')
    assert err.message.endswith(": context deadline exceeded (cvo's timeout of 0.3 s)")


def test_a_body_that_stops_coming_is_response_failed_after_cvos_timeout() -> None:
    with UpdateService() as service:
        service.graph = GRAPH
        service.answer = Answer(stall="in-body")
        err = failure(service.url, UpdateServiceOptions(timeout=0.3))
    assert (err.reason, err.message) == ("ResponseFailed", "context deadline exceeded (cvo's timeout of 0.3 s)")


def test_a_body_that_trickles_in_is_cut_at_the_whole_exchanges_timeout() -> None:
    with UpdateService() as service:
        service.answer = Answer(body=b" " * 1000, stall="trickle")  # 100 s of body, a byte every 0.1 s
        started = time.monotonic()
        err = failure(service.url, UpdateServiceOptions(timeout=0.5))
        took = time.monotonic() - started
    assert (err.reason, err.message) == ("ResponseFailed", "context deadline exceeded (cvo's timeout of 0.5 s)")
    assert took < 5  # each read waited less than the timeout; the whole exchange may not exceed it


def test_a_50_mb_body_is_response_failed_at_the_cap() -> None:
    def chunks():  # type: ignore[no-untyped-def]
        for _ in range(50):
            yield b" " * (1024 * 1024)

    with UpdateService() as service:
        service.answer = Answer(chunks=chunks())
        err = failure(service.url)
    assert (err.reason, err.message) == ("ResponseFailed", "the response is larger than cvo's limit of 16 MiB")


def test_a_body_at_the_cap_is_read() -> None:
    body = json.dumps(GRAPH).encode()
    with UpdateService() as service:
        service.answer = Answer(body=body)
        assert fetch(service.url, UpdateServiceOptions(max_body=len(body))) == body
        err = failure(service.url, UpdateServiceOptions(max_body=len(body) - 1))
    assert err.message == f"the response is larger than cvo's limit of {len(body) - 1} bytes"


def test_no_server_is_remote_failed() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: the connection is refused
        err = failure(f"http://127.0.0.1:{port}/graph")
    assert err.reason == "RemoteFailed"
    assert err.message.startswith(f'Get "http://127.0.0.1:{port}/graph?arch=amd64&channel=stable-4.1&id={ID}'
                                  f'&version=4.1.0": ')
    assert "refused" in err.message.lower() and "\n" not in err.message


@pytest.mark.parametrize(("upstream", "message"), [
    ("ftp://example.com/graph", 'Get "ftp://example.com/graph?{q}": unsupported protocol scheme "ftp"'),
    ("not a url", 'Get "not%20a%20url?{q}": unsupported protocol scheme ""'),
    ("http:///graph", 'Get "http:///graph?{q}": http: no Host in request URL'),
])
def test_an_upstream_that_names_no_server_is_remote_failed(upstream: str, message: str) -> None:
    err = failure(upstream)
    q = f"arch=amd64&channel=stable-4.1&id={ID}&version=4.1.0"
    assert (err.reason, err.message) == ("RemoteFailed", message.format(q=q))


def test_a_redirect_is_followed() -> None:
    with UpdateService() as target, UpdateService() as service:
        target.graph = GRAPH
        service.answer = Answer(status=307, body=b"")
        service.redirect = target.url
        assert json.loads(fetch(service.url)) == GRAPH


def test_a_file_upstream_is_read_as_cvos_extension(tmp_path: Path) -> None:
    path = tmp_path / "my graph.json"
    path.write_text(json.dumps(GRAPH))
    assert json.loads(fetch(path.as_uri())) == GRAPH
    missing = failure((tmp_path / "none.json").as_uri())
    assert (missing.reason, missing.message) == ("RemoteFailed", f"open {tmp_path / 'none.json'}: no such file or directory")
    big = failure(path.as_uri(), UpdateServiceOptions(max_body=10))
    assert (big.reason, big.message) == ("ResponseFailed", "the graph is larger than cvo's limit of 10 bytes")


def test_https_with_the_ca_bundle_option(tmp_path: Path) -> None:
    cert, key = make_serving_cert(tmp_path)
    with UpdateService(tls=(cert, key)) as service:
        service.graph = GRAPH
        assert json.loads(fetch(service.url, UpdateServiceOptions(timeout=10, ca_file=cert))) == GRAPH
        untrusted = failure(service.url, UpdateServiceOptions(timeout=10))
    assert untrusted.reason == "RemoteFailed" and "CERTIFICATE_VERIFY_FAILED" in untrusted.message
    (tmp_path / "bad.pem").write_text("not a certificate")
    bad = failure("https://127.0.0.1:1/graph", UpdateServiceOptions(ca_file=tmp_path / "bad.pem"))
    assert bad.reason == "RemoteFailed" and bad.message.startswith(f"CA bundle {tmp_path / 'bad.pem'}: not a readable")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("htps:/[]@%:?#x1. \n\u00e9fi")), max_size=30)
       | st.from_regex(r"https?://[a-z\[\]:%@0-9 ]{0,12}(/[a-z%]{0,4})?", fullmatch=True))
def test_any_upstream_is_refused_by_go_rules_or_makes_a_request_url(text: str) -> None:
    try:
        parse_url(text)
    except UrlInvalid as err:
        assert str(err).startswith('parse "') and "\n" not in str(err)
        return
    query = parse_qs(urlsplit(query_url(text, arch="amd64", channel="c", cluster_id=ID, version="4.1.0")).query)
    assert (query["arch"][-1], query["channel"][-1], query["id"][-1], query["version"][-1]) == \
        ("amd64", "c", ID, "4.1.0")
