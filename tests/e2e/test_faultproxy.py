"""The fault-injecting proxy itself, against a fake upstream (no control plane needed).

A client that trusts the proxy's certificate (as the proxy's kubeconfig does) sends requests
through it; the fake upstream records what reached it, so each test can tell a fault the proxy
answered itself from one the server saw.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.faultproxy import UPSTREAM_DOWN, Fault, FaultPlan, FaultProxy, applies

TOKEN = "proxy-test-token-0123456789"
CM_PATH = "/api/v1/namespaces/ns/configmaps"
WATCH_EVENTS = 6
WATCH_INTERVAL = 0.15  # seconds between the fake server's watch events


class Upstream:
    """A plain-HTTP stand-in for the API server: answers everything, records what it received."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str, dict[str, str], bytes]] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                upstream.received.append((self.command, self.path, dict(self.headers), body))
                if "watch=true" in self.path:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for i in range(WATCH_EVENTS):
                        line = json.dumps({"type": "ADDED", "object": {"metadata": {
                            "name": f"cm{i}", "resourceVersion": str(100 + i)}}}).encode() + b"\n"
                        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                        time.sleep(WATCH_INTERVAL)
                    self.wfile.write(b"0\r\n\r\n")
                    return
                code = 201 if self.command == "POST" else 200
                data = json.dumps({"kind": "ConfigMap", "metadata": {"name": "x", "resourceVersion": "7"},
                                   "echo": body.decode() or None}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = handle_one

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]  # the proxy cut it
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def proxy(upstream: Upstream, tmp_path: Path) -> Iterator[FaultProxy]:
    with FaultProxy(upstream.url, plan=FaultPlan(rate=0.0), workdir=tmp_path) as p:
        yield p


def connect(proxy: FaultProxy) -> http.client.HTTPSConnection:
    """A client that verifies the proxy's certificate, hostname included."""
    assert proxy.cert_path is not None
    context = ssl.create_default_context(cafile=str(proxy.cert_path))
    port = int(proxy.url.rsplit(":", 1)[1])
    return http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)


def send(proxy: FaultProxy, method: str, path: str, body: dict[str, Any] | None = None,
         ) -> tuple[int, dict[str, str], bytes]:
    conn = connect(proxy)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Authorization": f"Bearer {TOKEN}",
                                                       "Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def only(fault: Fault, **options: Any) -> FaultPlan:
    return FaultPlan(seed=1, rate=1.0, mix={fault: 1.0}, **options)


# --- the plan ----------------------------------------------------------------------------------------------


def test_the_plan_is_seeded_per_request_and_injects_the_rate_it_is_given() -> None:
    plan = FaultPlan(seed=42, rate=0.2)
    gets = [plan.decide("GET", CM_PATH, False, n).fault for n in range(2000)]
    assert gets == [FaultPlan(seed=42, rate=0.2).decide("GET", CM_PATH, False, n).fault for n in range(2000)]
    assert gets != [FaultPlan(seed=43, rate=0.2).decide("GET", CM_PATH, False, n).fault for n in range(2000)]
    rate = sum(f is not None for f in gets) / len(gets)
    assert 0.17 < rate < 0.23, rate
    # A read is never answered with a Conflict, never has its "response cut after the write", is no watch.
    assert set(gets) == {None, Fault.THROTTLE, Fault.INTERNAL, Fault.UNAVAILABLE, Fault.RESET, Fault.DELAY}
    puts = Counter(plan.decide("PUT", f"{CM_PATH}/x", False, n).fault for n in range(2000))
    assert {Fault.CONFLICT, Fault.CUT_RESPONSE} <= set(puts) and Fault.CUT_WATCH not in puts
    watches = Counter(plan.decide("GET", CM_PATH, True, n).fault for n in range(2000))
    assert Fault.CUT_WATCH in watches and Fault.CONFLICT not in watches
    assert not any(plan.decide("GET", CM_PATH, False, n).fault for n in range(50) if FaultPlan(rate=0).rate)
    assert all(applies(f, "PUT", False) for f in (Fault.CONFLICT, Fault.CUT_RESPONSE, Fault.RESET))
    assert not applies(Fault.CUT_RESPONSE, "GET", False)


# --- what reaches the server, and what the client gets --------------------------------------------------------


def test_without_faults_requests_and_their_bodies_and_credentials_pass_untouched(
        proxy: FaultProxy, upstream: Upstream, tmp_path: Path) -> None:
    code, _, data = send(proxy, "PUT", f"{CM_PATH}/x", {"data": {"k": "v"}})
    assert code == 200 and json.loads(json.loads(data)["echo"]) == {"data": {"k": "v"}}
    method, path, headers, _ = upstream.received[-1]
    assert (method, path, headers["Authorization"]) == ("PUT", f"{CM_PATH}/x", f"Bearer {TOKEN}")
    assert not proxy.injected and proxy.requests == 1
    assert [(r.method, r.path, r.fault) for r in proxy.records] == [("PUT", f"{CM_PATH}/x", None)]
    assert TOKEN not in repr(proxy.records) and TOKEN not in proxy.summary()

    kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
                  "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
                  "users": [{"name": "u", "user": {"token": TOKEN}}],
                  "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    source = tmp_path / "source.kubeconfig"
    source.write_text(json.dumps(kubeconfig))
    written = yaml.safe_load(proxy.write_kubeconfig(source, tmp_path / "proxy.kubeconfig").read_text())
    assert written["clusters"][0]["cluster"] == {"server": proxy.url, "certificate-authority": str(proxy.cert_path)}
    assert written["users"] == kubeconfig["users"]


@pytest.mark.parametrize(("fault", "code", "reason"), [
    (Fault.CONFLICT, 409, "Conflict"), (Fault.THROTTLE, 429, "TooManyRequests"),
    (Fault.INTERNAL, 500, "InternalError"), (Fault.UNAVAILABLE, 503, "ServiceUnavailable")])
def test_answered_faults_are_the_api_servers_status_objects_and_never_reach_it(
        proxy: FaultProxy, upstream: Upstream, fault: Fault, code: int, reason: str) -> None:
    proxy.plan = only(fault, retry_after=3)
    got, headers, data = send(proxy, "PUT", "/apis/config.openshift.io/v1/clusterversions/version/status", {})
    status = json.loads(data)
    assert (got, status["kind"], status["reason"], status["code"]) == (code, "Status", reason, code)
    assert status["details"]["name"] == "version" and status["details"]["group"] == "config.openshift.io"
    if fault is Fault.CONFLICT:
        assert status["message"].startswith('Operation cannot be fulfilled on clusterversions.config.openshift.io '
                                            '"version": the object has been modified')
    if fault is Fault.THROTTLE:
        assert headers["Retry-After"] == "3" and status["details"]["retryAfterSeconds"] == 3
    assert upstream.received == []
    assert proxy.injected == Counter({fault.value: 1})


def test_a_reset_connection_never_reaches_the_server(proxy: FaultProxy, upstream: Upstream) -> None:
    proxy.plan = only(Fault.RESET)
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected, ssl.SSLError)):
        send(proxy, "POST", CM_PATH, {"metadata": {"name": "x"}})
    assert upstream.received == []
    assert proxy.injected == Counter({"reset": 1})


def test_a_cut_response_lands_the_write_but_the_client_gets_no_answer(proxy: FaultProxy, upstream: Upstream) -> None:
    proxy.plan = only(Fault.CUT_RESPONSE)
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected, ssl.SSLError)):
        send(proxy, "POST", CM_PATH, {"metadata": {"name": "x"}})
    assert [(m, p) for m, p, _, _ in upstream.received] == [("POST", CM_PATH)]
    assert proxy.injected == Counter({"cut-response": 1})
    code, _, _ = send(proxy, "GET", f"{CM_PATH}/x")  # reads are never cut this way
    assert code == 200 and proxy.injected == Counter({"cut-response": 1})


def test_a_delayed_request_is_answered_after_the_delay(proxy: FaultProxy, upstream: Upstream) -> None:
    proxy.plan = only(Fault.DELAY, delay=0.4)
    started = time.monotonic()
    code, _, _ = send(proxy, "GET", f"{CM_PATH}/x")
    assert code == 200 and time.monotonic() - started >= 0.4
    assert len(upstream.received) == 1 and proxy.injected == Counter({"delay": 1})


def read_watch(proxy: FaultProxy) -> tuple[list[dict[str, Any]], bytes, BaseException | None]:
    """Events of a watch through the proxy, what was left of an unfinished line, and how the stream ended."""
    conn = connect(proxy)
    conn.request("GET", f"{CM_PATH}?watch=true&resourceVersion=1", headers={"Authorization": f"Bearer {TOKEN}"})
    resp = conn.getresponse()
    assert resp.status == 200
    buffer, events, error = b"", [], None
    try:
        while chunk := resp.read1(65536):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                events.append(json.loads(line))
    except (OSError, http.client.HTTPException) as err:
        error = err
    finally:
        conn.close()
    return events, buffer, error


def test_watch_streams_are_relayed_as_they_come_and_cut_mid_stream(proxy: FaultProxy) -> None:
    events, rest, error = read_watch(proxy)
    assert [e["object"]["metadata"]["name"] for e in events] == [f"cm{i}" for i in range(WATCH_EVENTS)]
    assert rest == b"" and error is None

    proxy.plan = only(Fault.CUT_WATCH, watch_cut=(0.35, 0.35))
    cuts = {"time": 0, "mid-event": 0}
    for _ in range(8):  # the plan draws "in the middle of an event" for about half of them
        decision = proxy.plan.decide("GET", CM_PATH, True, proxy._seen[("GET", CM_PATH)])
        started = time.monotonic()
        events, rest, error = read_watch(proxy)
        assert error is not None, "a cut watch must end with a broken connection, not a clean end"
        assert len(events) < WATCH_EVENTS
        if decision.mid_event:
            assert events == [] and rest.startswith(b'{"type": "ADDED"') and not rest.endswith(b"\n")
            cuts["mid-event"] += 1
        else:
            assert 1 <= len(events) <= 4 and rest == b"" and time.monotonic() - started >= 0.35
            cuts["time"] += 1
    assert all(cuts.values()), cuts
    assert proxy.injected == Counter({"cut-watch": 8})


def test_an_unreachable_server_resets_the_clients_connection(proxy: FaultProxy, upstream: Upstream) -> None:
    upstream.stop()
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected, ssl.SSLError)):
        send(proxy, "GET", f"{CM_PATH}/x")
    assert proxy.injected == Counter({UPSTREAM_DOWN: 1})


def test_a_rule_fails_the_next_requests_of_one_path_whatever_the_plan(proxy: FaultProxy, upstream: Upstream) -> None:
    rule = proxy.fail_next("PUT", f"{CM_PATH}/x", Fault.CONFLICT, count=2)
    codes = [send(proxy, "PUT", f"{CM_PATH}/x", {})[0] for _ in range(3)]
    assert codes == [409, 409, 200]
    assert send(proxy, "GET", f"{CM_PATH}/x")[0] == 200  # another method: not the rule's
    assert rule.applied == 2 and proxy.injected == Counter({"conflict": 2})
    assert proxy.kinds == Counter({"PUT": 3, "GET": 1})
    with pytest.raises(ValueError):
        proxy.fail_next("GET", CM_PATH, Fault.CONFLICT)


def test_held_requests_wait_for_the_release_then_meet_the_server_as_it_is_then(
        proxy: FaultProxy, upstream: Upstream) -> None:
    hold = proxy.hold("PUT", f"{CM_PATH}/x")
    answers: list[int] = []
    clients = [threading.Thread(target=lambda: answers.append(send(proxy, "PUT", f"{CM_PATH}/x", {})[0]))
               for _ in range(2)]
    for client in clients:
        client.start()
    assert hold.arrived.wait(10)
    assert send(proxy, "PUT", f"{CM_PATH}/y", {})[0] == 200  # another path: not held
    assert send(proxy, "GET", f"{CM_PATH}/x")[0] == 200  # another method: not held
    time.sleep(0.2)  # the second held request has arrived by now, or arrives later: held either way
    assert [p for m, p, _, _ in upstream.received if m == "PUT"] == [f"{CM_PATH}/y"] and answers == []
    hold.release()
    for client in clients:
        client.join(10)
    assert answers == [200, 200]
    assert [p for m, p, _, _ in upstream.received if m == "PUT"] == [f"{CM_PATH}/y", f"{CM_PATH}/x", f"{CM_PATH}/x"]
    assert send(proxy, "PUT", f"{CM_PATH}/x", {})[0] == 200  # released: no longer held

    upstream.stop()  # a request released after the server went away meets the dead server
    hold = proxy.hold("PUT", f"{CM_PATH}/x")
    errors: list[BaseException] = []

    def held_put() -> None:
        try:
            send(proxy, "PUT", f"{CM_PATH}/x", {})
        except (ConnectionError, http.client.RemoteDisconnected, ssl.SSLError) as err:
            errors.append(err)

    client = threading.Thread(target=held_put)
    client.start()
    assert hold.arrived.wait(10)
    hold.release()
    client.join(10)
    assert len(errors) == 1 and proxy.injected == Counter({UPSTREAM_DOWN: 1})
