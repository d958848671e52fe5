"""The controller's HTTP endpoint: ``/healthz``, ``/readyz`` and ``/metrics`` (``--listen``).

The CVO serves its metrics on port 9099.  The server runs in a thread of its own, so a scrape is
answered even while the event loop is busy; it reads only what :class:`Health` and the metrics
:class:`~cvo.controller.metrics.Snapshot` hold.

* ``/healthz``: 200 ``ok`` while the process runs its loop (the loop ticks at least every
  :data:`STALE_AFTER` seconds; a loop that stopped ticking is unhealthy: 503).
* ``/readyz``: 200 once the replica has read the cluster (it is a leader or a follower with a
  fresh view); 503 before, with the reason.  Both replicas are ready: only the lease decides who writes.
* ``/metrics``: the Prometheus text format (:mod:`cvo.controller.metrics`) and the process's own
  ``cvo_controller_leader`` gauge (1 on the replica that holds the lease).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, generate_latest

from cvo.controller.metrics import CvoCollector, Snapshot

STALE_AFTER = 60.0  # real seconds without a tick of the loop: /healthz fails


class ListenError(ValueError):
    """``--listen`` is not HOST:PORT."""


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9099`` for IPv6; an empty host is every address) → (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not port.isascii():
        raise ListenError(f"--listen: {text!r} is not HOST:PORT (e.g. 127.0.0.1:9099)")
    number = int(port)
    if number > 65535:
        raise ListenError(f"--listen: port {number} is out of range (0-65535)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if any(c.isspace() for c in host) or "[" in host or "]" in host:
        raise ListenError(f"--listen: {host!r} is not a host name or address")
    return host or "0.0.0.0", number


@dataclass
class Health:
    """What the probes report; updated by the event loop."""

    ready: bool = False
    why_not: str = "the cluster has not been read yet"
    leader: bool = False
    last_tick: float = field(default_factory=time.monotonic)

    def tick(self) -> None:
        self.last_tick = time.monotonic()


class Endpoint:
    """The HTTP server, in a daemon thread; :meth:`close` stops it."""

    def __init__(self, host: str, port: int, snapshot: Snapshot, health: Health) -> None:
        self.health = health
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(CvoCollector(snapshot))
        self.leader = Gauge("cvo_controller_leader", "1 if this replica holds the controller's lease.",
                            registry=self.registry)
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    endpoint.leader.set(1.0 if endpoint.health.leader else 0.0)
                    self._send(200, generate_latest(endpoint.registry), CONTENT_TYPE_LATEST)
                elif path == "/healthz":
                    stale = time.monotonic() - endpoint.health.last_tick > STALE_AFTER
                    self._send(503 if stale else 200, b"the controller loop is stuck\n" if stale else b"ok\n")
                elif path == "/readyz":
                    ok = endpoint.health.ready
                    self._send(200 if ok else 503, b"ok\n" if ok else endpoint.health.why_not.encode() + b"\n")
                else:
                    self._send(404, b"not found: /healthz, /readyz, /metrics\n")

            def _send(self, code: int, body: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return  # scrapes are not news

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="cvo-http", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
