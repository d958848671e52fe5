"""A real Prometheus for the tests: Debian's ``prometheus`` (2.42, ``make monitoring-tools``) on 127.0.0.1.

:class:`PrometheusServer` runs ``prometheus`` on a free port with its storage in a temporary directory,
scraping every second the targets it is given, optionally behind TLS (a CA made with openssl, as the
registry's)::

    exporter = Exporter().start()                 # /metrics with the gauges the test sets
    exporter.set("cvo_test_risk", 1, cluster="a")
    with PrometheusServer(tmp_path, [exporter.target]) as prom:
        prom.wait_for('cvo_test_risk{cluster="a"}', 1)   # the scrape has landed: the query answers 1
        prom.url, prom.ca_path

:meth:`PrometheusServer.start` waits until ``/-/ready``; when prometheus cannot start it raises
:class:`PrometheusError` with the log's tail (a test needing it FAILS, it is never skipped).
:meth:`PrometheusServer.wait_for` polls the instant query until it answers the value asked for, so a test
asserts only once the series is certainly there.  The process dies with the test process.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from tests.support.registry import CertificateAuthority, _die_with_parent, free_port

PROMETHEUS_BIN = "/usr/bin/prometheus"
READY_TIMEOUT = 60.0  # prometheus is ready within 1-3 s on an idle machine; the CI machine is shared
SCRAPE_INTERVAL = "1s"


class PrometheusError(RuntimeError):
    """The test prometheus could not start, or a series never reached the value a test waits for."""


class Exporter:
    """A tiny exporter on 127.0.0.1: ``/metrics`` in the text format, gauges set with :meth:`set`."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._lock = threading.Lock()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = exporter.render().encode()
                self.send_response(200 if self.path == "/metrics" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Exporter:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def set(self, name: str, value: float, /, **labels: str) -> None:
        with self._lock:
            self._values[(name, tuple(sorted(labels.items())))] = value

    def render(self) -> str:
        with self._lock:
            items = sorted(self._values.items())
        lines = []
        for (name, labels), value in items:
            text = ",".join(f'{k}="{v}"' for k, v in labels)
            lines.append(f"{name}{{{text}}} {value!r}" if text else f"{name} {value!r}")
        return "\n".join(lines) + "\n"


@dataclass
class PrometheusServer:
    directory: Path
    targets: Sequence[str] = ()
    tls: bool = False
    rule_files: Sequence[Path] = ()  # alerting rules it evaluates every second
    job: str = "test"
    target_labels: Mapping[str, str] = field(default_factory=dict)  # set on every scraped series
    port: int = 0
    ca_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    _log: Path | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> PrometheusServer:
        if not os.access(PROMETHEUS_BIN, os.X_OK):
            raise PrometheusError(f"{PROMETHEUS_BIN} is not installed (make monitoring-tools installs Debian's "
                                  "prometheus)")
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "prometheus.yml"
        config.write_text(json.dumps({
            "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
            "rule_files": [str(path) for path in self.rule_files],
            "scrape_configs": [{"job_name": self.job, "static_configs": [
                {"targets": list(self.targets), "labels": dict(self.target_labels)}]}],
        }))
        args = [PROMETHEUS_BIN, f"--config.file={config}", f"--storage.tsdb.path={self.directory / 'data'}",
                "--log.level=warn", "--web.enable-lifecycle"]
        if self.tls:
            ca = CertificateAuthority.create(self.directory / "ca")
            cert, key = ca.issue("prometheus")
            self.ca_path = ca.cert
            web = self.directory / "web.yml"
            web.write_text(json.dumps({"tls_server_config": {"cert_file": str(cert), "key_file": str(key)}}))
            args.append(f"--web.config.file={web}")
        self._log = self.directory / "prometheus.log"
        for _attempt in range(3):  # a free port can be taken between choosing and binding it
            self.port = free_port()
            with self._log.open("wb") as log:
                self.process = subprocess.Popen([*args, f"--web.listen-address=127.0.0.1:{self.port}"],
                                                stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
            if self._wait_ready():
                return self
            self.stop()
        raise PrometheusError(f"prometheus did not become ready on 127.0.0.1:{self.port}: {self._tail()}")

    def _context(self) -> ssl.SSLContext | None:
        return ssl.create_default_context(cafile=str(self.ca_path)) if self.tls and self.ca_path else None

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2, context=self._context()) as res:
                    if res.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        return False

    def _tail(self) -> str:
        try:
            return (self._log.read_text(errors="replace") if self._log else "")[-2000:] or "(no output)"
        except OSError:
            return "(no log)"

    def query(self, promql: str) -> dict[str, Any]:
        url = f"{self.url}/api/v1/query?{urlencode({'query': promql})}"
        with urllib.request.urlopen(url, timeout=5, context=self._context()) as res:
            answer: dict[str, Any] = json.load(res)
            return answer

    def alerts(self) -> list[dict[str, Any]]:
        """``/api/v1/alerts``: every pending and firing alert of the rules it evaluates."""
        with urllib.request.urlopen(f"{self.url}/api/v1/alerts", timeout=5, context=self._context()) as res:
            alerts: list[dict[str, Any]] = json.load(res)["data"]["alerts"]
            return alerts

    def wait_for(self, promql: str, value: float, timeout: float = 60.0) -> None:
        """Until ``promql`` answers one sample of ``value`` (the scrape and its ingestion have happened)."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = self.query(promql)
                result = last.get("data", {}).get("result", [])
                if len(result) == 1 and float(result[0]["value"][1]) == value:
                    return
            except (urllib.error.URLError, OSError, ValueError, KeyError) as err:
                last = repr(err)
            time.sleep(0.2)
        raise PrometheusError(f"{promql!r} never answered {value} within {timeout:g}s; last answer {last}; "
                              f"log: {self._tail()}")

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
