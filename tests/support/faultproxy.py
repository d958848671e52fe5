"""A fault-injecting reverse proxy in front of a kube-apiserver or a registry: the misbehaviour cvo must absorb.

Pure standard library (and the ``openssl`` CLI for its serving certificate), as
``tests/e2e/controlplane.py``.  cvo and ``cvo sim-operators`` talk to the proxy through a
kubeconfig that :meth:`FaultProxy.write_kubeconfig` derives from the control plane's (same user and
token, the proxy's address and CA); the proxy forwards each request to the API server, or does not,
according to a seeded :class:`FaultPlan`::

    with FaultProxy(cp.server_url, upstream_ca=cp.ca_path, plan=FaultPlan(seed=7, rate=0.2)) as proxy:
        kubeconfig = proxy.write_kubeconfig(cp.kubeconfig_path, tmp_path / "proxy.kubeconfig")
        ...                                   # run cvo --kubeconfig <kubeconfig>
        assert proxy.injected[Fault.CONFLICT] >= 3

The faults (:class:`Fault`), each applied to the requests it makes sense for:

==============  ===================================================================================
conflict        PUT/PATCH only: ``409`` with a ``Status`` body, reason ``Conflict`` (not forwarded)
throttle        ``429`` with ``Retry-After`` and ``details.retryAfterSeconds`` (not forwarded)
internal        ``500``, reason ``InternalError`` (not forwarded)
unavailable     ``503``, reason ``ServiceUnavailable`` (not forwarded)
reset           the connection is reset (TCP RST) before the request reaches the server
delay           the request waits ``plan.delay`` seconds (2 s), then is forwarded
cut-response    writes only: forwarded, processed by the server, and the connection reset instead of
                the response (the write landed; the client cannot know)
cut-watch       watches only: forwarded, then the stream is reset mid-way, after ``plan.watch_cut``
                seconds or in the middle of the first event
forbidden       ``403`` (not forwarded)
truncate        forwarded; the response's headers (its full ``Content-Length``) and half its body are
                sent, then the connection is closed
stall           the request is read and never answered until the proxy stops (or ``HOLD_LIMIT``)
stall-body      forwarded; headers and half the body are sent, then nothing until the proxy stops
==============  ===================================================================================

The last four are never drawn by the default plan (:data:`KUBE_FAULTS` are): tests ask for them with
:meth:`FaultProxy.fail_next`.  Paths under ``/v2/`` are a registry's (distribution's HTTP API): the
answered faults carry its error body (``{"errors": [{"code": …}]}``) instead of a ``Status``, and the
proxy sends ``X-Forwarded-Host``/``-Proto`` so the registry's ``Location`` headers point back at it.
``tls=False`` serves plain HTTP.

Whether a request gets a fault, and which, depends only on the seed, the method, the path and how
many requests with that method and path came before: the plan does not change with the interleaving
of concurrent requests on other paths.  :meth:`FaultProxy.fail_next` adds a :class:`Rule` on top,
for a test that needs one particular request to fail (the first ``PUT`` of the ClusterVersion's
spec in an upgrade, say); :meth:`FaultProxy.hold` keeps the requests of one path at the proxy until the
test releases them (a write that is certainly due while the test breaks the server, a sweep that
certainly cannot finish before the test interrupts it).  What was injected is counted (:attr:`FaultProxy.injected`)
and recorded with its wall-clock time (:attr:`FaultProxy.records`).  Request headers are forwarded
but never recorded (the bearer token is in them).

When the API server cannot be reached (killed), the client's connection is reset, as a client
talking to the server directly would see; that is counted as ``upstream-down``, not as a fault.
"""

from __future__ import annotations

import contextlib
import enum
import http.client
import json
import random
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import parse_qs, urlsplit


class Fault(enum.StrEnum):
    CONFLICT = "conflict"
    THROTTLE = "throttle"
    INTERNAL = "internal"
    UNAVAILABLE = "unavailable"
    RESET = "reset"
    DELAY = "delay"
    CUT_RESPONSE = "cut-response"
    CUT_WATCH = "cut-watch"
    FORBIDDEN = "forbidden"
    TRUNCATE = "truncate"
    STALL = "stall"
    STALL_BODY = "stall-body"


# What a kube-apiserver sees from the default plans (the faults the plans drew before the registry's were added).
KUBE_FAULTS = (Fault.CONFLICT, Fault.THROTTLE, Fault.INTERNAL, Fault.UNAVAILABLE, Fault.RESET, Fault.DELAY,
               Fault.CUT_RESPONSE, Fault.CUT_WATCH)


WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
ANSWERED = frozenset({Fault.CONFLICT, Fault.THROTTLE, Fault.INTERNAL, Fault.UNAVAILABLE, Fault.FORBIDDEN})  # the proxy answers
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "transfer-encoding", "upgrade", "host", "content-length"})
UPSTREAM_DOWN = "upstream-down"
REQUEST_TIMEOUT = 70.0  # seconds the proxy waits for the API server's answer to a request that is not a watch
HOLD_LIMIT = 120.0  # seconds a held request waits for its release at most (a test that forgot it still ends)


def applies(fault: Fault, method: str, watch: bool) -> bool:
    """Whether ``fault`` is something the API server (or the network) could do to this request."""
    if fault is Fault.CONFLICT:
        return method in ("PUT", "PATCH")
    if fault is Fault.CUT_RESPONSE:
        return method in WRITES
    if fault is Fault.CUT_WATCH:
        return watch
    return True


DEFAULT_MIX: Mapping[Fault, float] = {fault: 1.0 for fault in KUBE_FAULTS}


@dataclass(frozen=True)
class FaultPlan:
    """Which requests get which fault: ``rate`` of all requests, drawn from ``mix`` (relative weights).

    The draw for a request is seeded by (seed, method, path, n), n counting the earlier requests
    with that method and path; a fault that does not apply to the request (:func:`applies`) is not
    drawn for it, so every request has the same chance ``rate`` of some fault.
    """

    seed: int = 0
    rate: float = 0.2
    mix: Mapping[Fault, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    delay: float = 2.0  # seconds, Fault.DELAY
    retry_after: int = 1  # seconds, Fault.THROTTLE
    watch_cut: tuple[float, float] = (0.5, 3.0)  # seconds of streaming before Fault.CUT_WATCH cuts

    def decide(self, method: str, path: str, watch: bool, nth: int) -> Decision:
        rng = random.Random(f"{self.seed}/{method}/{path}/{nth}")
        if rng.random() >= self.rate:
            return Decision(None)
        choices = [(f, w) for f, w in self.mix.items() if w > 0 and applies(f, method, watch)]
        if not choices:
            return Decision(None)
        fault = rng.choices([f for f, _ in choices], weights=[w for _, w in choices])[0]
        if fault is Fault.CUT_WATCH:
            return Decision(fault, cut_after=rng.uniform(*self.watch_cut), mid_event=rng.random() < 0.5)
        return Decision(fault)


@dataclass(frozen=True)
class Decision:
    fault: Fault | None
    cut_after: float = 0.0  # Fault.CUT_WATCH: seconds of streaming
    mid_event: bool = False  # Fault.CUT_WATCH: cut in the middle of the first event instead, if one comes first


@dataclass
class Rule:
    """The next ``count`` requests with this method and path (watches or not) get ``fault``, whatever the plan says."""

    method: str
    path: str
    fault: Fault
    count: int
    watch: bool = False
    applied: int = 0


@dataclass
class Hold:
    """Requests with this method and path (not watches) wait at the proxy until :meth:`release`, then go on
    (plan, rules, upstream) as if they arrived then.  :attr:`arrived` is set when the first one is held."""

    method: str
    path: str
    arrived: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        self.released.set()


@dataclass(frozen=True)
class Record:
    """One request the proxy saw: when it arrived (wall clock, seconds since the epoch), what, and what
    the proxy did to it."""

    time: float
    method: str
    path: str
    watch: bool
    fault: str | None  # a Fault value, UPSTREAM_DOWN, or None (forwarded untouched)


def make_serving_cert(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key (``openssl`` CLI)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the fault proxy needs the openssl CLI to make its serving certificate")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "proxy.crt", directory / "proxy.key"
    args = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=cvo-fault-proxy",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,digitalSignature,keyCertSign"]
    res = subprocess.run(args, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"openssl req failed: {res.stderr}")
    key.chmod(0o600)
    return cert, key


def status_body(fault: Fault, path: str, retry_after: int) -> tuple[int, dict[str, Any]]:
    """The HTTP code and the ``Status`` object the API server would send for ``fault``."""
    parts = [p for p in path.split("/") if p]
    name, resource, group = "", "", ""
    if parts and parts[0] in ("api", "apis"):
        rest = parts[2:] if parts[0] == "api" else parts[3:]
        group = parts[1] if parts[0] == "apis" and len(parts) > 1 else ""
        if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
            rest = rest[2:]
        resource = rest[0] if rest else ""
        name = rest[1] if len(rest) > 1 else ""
    qualified = f"{resource}.{group}" if group else resource
    details: dict[str, Any] = {"name": name, "group": group, "kind": resource}
    if fault is Fault.CONFLICT:
        code, reason = 409, "Conflict"
        message = (f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; '
                   "please apply your changes to the latest version and try again")
    elif fault is Fault.THROTTLE:
        code, reason = 429, "TooManyRequests"
        message = "Too many requests, please try again later."
        details["retryAfterSeconds"] = retry_after
    elif fault is Fault.INTERNAL:
        code, reason = 500, "InternalError"
        message = "Internal error occurred: injected by the fault proxy"
        details["causes"] = [{"message": "injected by the fault proxy"}]
    elif fault is Fault.UNAVAILABLE:
        code, reason = 503, "ServiceUnavailable"
        message = "the server is currently unable to handle the request"
    elif fault is Fault.FORBIDDEN:
        code, reason = 403, "Forbidden"
        message = f'{qualified} "{name}" is forbidden: injected by the fault proxy'
    else:
        raise ValueError(f"{fault} is not answered with a Status")
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
                  "reason": reason, "details": details, "code": code}


def registry_body(fault: Fault) -> tuple[int, dict[str, Any]]:
    """The HTTP code and error body a registry (distribution ``registry/api/errcode``) would send for ``fault``."""
    code, error = {Fault.CONFLICT: (409, "UNSUPPORTED"), Fault.THROTTLE: (429, "TOOMANYREQUESTS"),
                   Fault.INTERNAL: (500, "UNKNOWN"), Fault.UNAVAILABLE: (503, "UNAVAILABLE"),
                   Fault.FORBIDDEN: (403, "DENIED")}[fault]
    message = {409: "conflict", 429: "too many requests", 500: "unknown error", 503: "service unavailable",
               403: "requested access to the resource is denied"}[code]
    return code, {"errors": [{"code": error, "message": message, "detail": "injected by the fault proxy"}]}


class FaultProxy:
    """The proxy: :meth:`start` (or ``with``) listens on 127.0.0.1; :attr:`url` is its address.

    ``upstream`` is the API server's URL (``https://…``, verified with ``upstream_ca``, or
    ``http://…`` for tests with a fake server).  ``plan`` may be replaced while the proxy runs
    (``proxy.plan = FaultPlan(rate=0)`` turns the faults off).
    """

    def __init__(self, upstream: str, *, upstream_ca: str | None = None, plan: FaultPlan | None = None,
                 workdir: Path | None = None, tls: bool = True) -> None:
        self.upstream = urlsplit(upstream)
        if self.upstream.scheme not in ("http", "https") or not self.upstream.hostname:
            raise ValueError(f"upstream {upstream!r}: want http(s)://host:port")
        self.upstream_ca = upstream_ca
        self.plan = plan or FaultPlan()
        self.workdir = workdir
        self.injected: Counter[str] = Counter()  # Fault value or UPSTREAM_DOWN -> how many
        self.requests = 0
        self.kinds: Counter[str] = Counter()  # requests by method, and "WATCH"
        self.records: list[Record] = []
        self.cert_path: Path | None = None
        self.rules: list[Rule] = []
        self.holds: list[Hold] = []
        self._seen: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()  # open client and upstream sockets, shut at stop()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._tmp: Any = None
        self.tls = tls
        self.stopping = threading.Event()  # stalled requests end when it is set

    # ------------------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fault proxy is not running")
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self._server.server_address[1]}"

    @property
    def host(self) -> str:
        """``127.0.0.1:PORT`` (a registry's name in a pull spec)."""
        return self.url.partition("://")[2]

    def start(self) -> FaultProxy:
        if self._server is not None:
            raise RuntimeError("the fault proxy is already running")
        if self.workdir is None:
            import tempfile

            self._tmp = tempfile.TemporaryDirectory(prefix="cvo-faultproxy-")
            self.workdir = Path(self._tmp.name)
        self.stopping.clear()
        context = None
        if self.tls:
            self.cert_path, key = make_serving_cert(self.workdir)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.cert_path, key)
        self._server = _Server(self, context)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="faultproxy",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        with self._lock:
            holds = list(self.holds)
        for hold in holds:  # no handler thread stays parked on a hold
            hold.release()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:  # wakes handler threads blocked on a keep-alive connection or a watch
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_kubeconfig(self, source: str | Path, target: Path) -> Path:
        """``source`` (the control plane's kubeconfig) pointed at the proxy: same user, the proxy's CA."""
        config = json.loads(Path(source).read_text())  # controlplane.py writes JSON (valid YAML)
        for entry in config["clusters"]:
            cluster = entry["cluster"]
            cluster["server"] = self.url
            cluster.pop("insecure-skip-tls-verify", None)
            cluster["certificate-authority"] = str(self.cert_path)
        target.write_text(json.dumps(config, indent=2) + "\n")
        target.chmod(0o600)
        return target

    # ---------------------------------------------------------------------------- bookkeeping

    def fail_next(self, method: str, path: str, fault: Fault, count: int = 1, watch: bool = False) -> Rule:
        """The next ``count`` requests ``method path`` get ``fault``; the rule says how many it got."""
        if not applies(fault, method, watch):
            raise ValueError(f"{fault} does not apply to {method} {path} (watch={watch})")
        rule = Rule(method, path, fault, count, watch)
        with self._lock:
            self.rules.append(rule)
        return rule

    def hold(self, method: str, path: str) -> Hold:
        """Requests ``method path`` (not watches) wait at the proxy from now until the hold is released."""
        hold = Hold(method, path)
        with self._lock:
            self.holds.append(hold)
        return hold

    def wait_if_held(self, method: str, path: str, watch: bool) -> None:
        with self._lock:
            hold = next((h for h in self.holds if (h.method, h.path) == (method, path) and not watch
                         and not h.released.is_set()), None)
        if hold is not None:
            hold.arrived.set()
            hold.released.wait(HOLD_LIMIT)

    def decide(self, method: str, path: str, watch: bool) -> Decision:
        with self._lock:
            nth = self._seen[(method, path)]
            self._seen[(method, path)] += 1
            self.requests += 1
            self.kinds[_request_kind(method, watch)] += 1
            for rule in self.rules:
                if (rule.method, rule.path, rule.watch) == (method, path, watch) and rule.applied < rule.count:
                    rule.applied += 1
                    fault = rule.fault
                    break
            else:
                fault = None
        if fault is None:
            return self.plan.decide(method, path, watch, nth)
        if fault is Fault.CUT_WATCH:
            return Decision(fault, cut_after=self.plan.watch_cut[0])
        return Decision(fault)

    def note(self, method: str, path: str, watch: bool, what: str | None, arrived: float) -> None:
        with self._lock:
            self.records.append(Record(arrived, method, path, watch, what))
            if what is not None:
                self.injected[what] += 1

    def summary(self) -> str:
        with self._lock:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(self.injected.items()))
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.kinds.items()))
            return f"{self.requests} requests ({kinds}); injected: {counts or 'nothing'}"

    def track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)

    def untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)

    def connect_upstream(self, timeout: float | None) -> http.client.HTTPConnection:
        host, port = self.upstream.hostname or "127.0.0.1", self.upstream.port
        if self.upstream.scheme == "http":
            return http.client.HTTPConnection(host, port, timeout=timeout)
        context = ssl.create_default_context(cafile=self.upstream_ca)
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, proxy: FaultProxy, context: ssl.SSLContext | None) -> None:
        self.proxy = proxy
        self.context = context
        super().__init__(("127.0.0.1", 0), _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """The TLS handshake in the connection's own thread (not in the accepting one)."""
        request.settimeout(10.0)
        try:
            conn = self.context.wrap_socket(request, server_side=True) if self.context is not None else request
        except (ssl.SSLError, OSError):
            request.close()
            return
        conn.settimeout(None)
        self.proxy.track(conn)
        try:
            super().finish_request(conn, client_address)
        except OSError:
            pass  # the client went away
        finally:
            self.proxy.untrack(conn)
            with contextlib.suppress(OSError):
                conn.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that disconnects is not an error worth a traceback


class _Aborted(Exception):
    """The connection to the client was reset on purpose: nothing more is sent on it."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    upstream: http.client.HTTPConnection | None = None

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def finish(self) -> None:
        self._close_upstream()
        with contextlib.suppress(OSError):
            super().finish()

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except _Aborted:
            self.close_connection = True

    # ------------------------------------------------------------------------------ the request

    def _serve(self) -> None:
        proxy = self.server.proxy
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        url = urlsplit(self.path)
        watch = (parse_qs(url.query).get("watch") or [""])[0] in ("true", "1")
        method = self.command
        proxy.wait_if_held(method, url.path, watch)
        arrived = time.time()
        decision = proxy.decide(method, url.path, watch)
        fault = decision.fault
        note = lambda what: proxy.note(method, url.path, watch, what, arrived)  # noqa: E731
        if fault is Fault.RESET:
            note(fault)
            self._abort()
        if fault in ANSWERED:
            assert fault is not None
            note(fault)
            registry = url.path.startswith("/v2/")
            code, status = (registry_body(fault) if registry else
                            status_body(fault, url.path, proxy.plan.retry_after))
            headers = {"Retry-After": str(proxy.plan.retry_after)} if fault is Fault.THROTTLE else {}
            self._send(code, [("Content-Type", "application/json"), *headers.items()], json.dumps(status).encode())
            return
        if fault is Fault.STALL:
            note(fault)
            proxy.stopping.wait(HOLD_LIMIT)
            self._abort()
        if fault is Fault.DELAY:
            time.sleep(proxy.plan.delay)
        try:
            response = self._forward(body, watch)
        except OSError:
            note(UPSTREAM_DOWN)
            self._abort()
        if fault is Fault.CUT_RESPONSE:
            with contextlib.suppress(OSError, http.client.HTTPException):
                response.read()  # the server has answered: the write landed
            note(fault)
            self._close_upstream()
            self._abort()
        if watch and response.status == 200:
            cut = decision if fault is Fault.CUT_WATCH else None
            if cut is None:
                note(Fault.DELAY if fault is Fault.DELAY else None)
            self._relay_stream(response, cut, note)
            return
        try:
            data = response.read()
        except (OSError, http.client.HTTPException):
            note(UPSTREAM_DOWN)
            self._close_upstream()
            self._abort()
        if response.will_close:
            self._close_upstream()
        if fault in (Fault.TRUNCATE, Fault.STALL_BODY) and len(data) > 1:
            note(fault)
            self._send(response.status, _end_to_end(response.getheaders()), data[: len(data) // 2],
                       reason=response.reason, length=len(data))
            if fault is Fault.STALL_BODY:
                proxy.stopping.wait(HOLD_LIMIT)
            self._abort(reset=False)
        note(Fault.DELAY if fault is Fault.DELAY else None)
        length = response.getheader("Content-Length") if self.command == "HEAD" else None
        self._send(response.status, _end_to_end(response.getheaders()), data, reason=response.reason,
                   length=int(length) if length and length.isascii() and length.isdigit() else None)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

    def _send(self, code: int, headers: list[tuple[str, str]], data: bytes, reason: str | None = None,
              length: int | None = None) -> None:
        """``length``: the ``Content-Length`` to announce when it is not ``len(data)`` (HEAD, truncate)."""
        self.send_response_only(code, reason)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":  # a HEAD answer has no body, whatever its Content-Length says
            self.wfile.write(data)

    def _abort(self, reset: bool = True) -> NoReturn:
        """Drop the client's connection without a TLS close_notify and stop handling it.

        ``reset``: a TCP RST (the client's kernel discards what it has not read yet); otherwise a
        FIN after what was sent, which the client reads before it sees the unclean end.
        """
        if reset:
            with contextlib.suppress(OSError):
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            self.connection.close()
        raise _Aborted

    # ------------------------------------------------------------------------------- upstream

    def _forward(self, body: bytes | None, watch: bool) -> http.client.HTTPResponse:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        if self.path.startswith("/v2/"):  # distribution's URL builder: Location headers lead back to the proxy
            headers["X-Forwarded-Host"] = self.server.proxy.host
            headers["X-Forwarded-Proto"] = "https" if self.server.proxy.tls else "http"
        if body is not None:
            headers["Content-Length"] = str(len(body))
        timeout = None if watch else REQUEST_TIMEOUT
        for reused in (self.upstream is not None, False):
            if self.upstream is None:
                self.upstream = self.server.proxy.connect_upstream(timeout)
            conn = self.upstream
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                if conn.sock is not None:
                    self.server.proxy.track(conn.sock)
                return conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._close_upstream()
                if not reused:  # a fresh connection failed: the server is down
                    raise
            except (OSError, http.client.HTTPException) as err:
                self._close_upstream()
                raise OSError(str(err)) from err
        raise AssertionError("unreachable")

    def _close_upstream(self) -> None:
        conn, self.upstream = self.upstream, None
        if conn is not None:
            if conn.sock is not None:
                self.server.proxy.untrack(conn.sock)
            with contextlib.suppress(OSError):
                conn.close()

    def _relay_stream(self, response: http.client.HTTPResponse, cut: Decision | None,
                      note: Any) -> None:
        """A watch: relay the server's chunks as they come; with ``cut``, reset the stream mid-way."""
        self.send_response_only(response.status, response.reason)
        for key, value in _end_to_end(response.getheaders()):
            self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sock = self.upstream.sock if self.upstream is not None else None
        cut_at = time.monotonic() + cut.cut_after if cut is not None else None
        while True:
            if cut_at is not None and sock is not None:
                remaining = cut_at - time.monotonic()
                if remaining <= 0:
                    self._cut(note)
                sock.settimeout(remaining)
            try:
                data = response.read1(65536)
            except TimeoutError:
                self._cut(note)
            except (OSError, http.client.HTTPException):  # the server went away: so does the stream
                self._close_upstream()
                self._abort()
            if not data:
                break
            if cut is not None and cut.mid_event:
                self._write_chunk(data[: max(1, len(data) // 2)])
                self._cut(note)
            self._write_chunk(data)
        self._close_upstream()  # the server ended the watch (its timeout): end the stream properly
        self.wfile.write(b"0\r\n\r\n")

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        except OSError:  # the client stopped watching
            self._close_upstream()
            raise _Aborted from None

    def _cut(self, note: Any) -> NoReturn:
        note(Fault.CUT_WATCH)
        self._close_upstream()
        self._abort(reset=False)  # the events sent so far (and half of one) reach the client first


def _request_kind(method: str, watch: bool) -> str:
    return "WATCH" if watch else method


def _end_to_end(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
