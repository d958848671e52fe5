"""`cvo upgrade recommend --metrics-url` with no controller running: the command retrieves the graph itself, as
the controller would, and a PromQL risk of a conditional update is asked of the same Prometheus (the CVO's
monitoring flags, cvo/cli/monitoring_flags.py) its alerts come from; without the flag it is EvaluationFailed,
as on a controller without one."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from cvo.cli.main import main
from cvo.log import configure
from tests.support.cluster_version import write_cluster_version
from tests.support.helpers import PAYLOADS, state_kind

QUERY = 'max(cluster_operator_conditions{name="etcd",condition="Degraded"}) > bool 0'
NO_ALERTS = b'{"status": "success", "data": {"alerts": []}}'


@dataclass
class Prometheus:
    """``/api/v1/alerts`` (no alert firing) and ``/api/v1/query`` answering one sample of ``value``."""

    url: str = ""
    value: str = "1"
    queries: list[str] = field(default_factory=list)


@pytest.fixture
def prometheus() -> Iterator[Prometheus]:
    fake = Prometheus()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/api/v1/query":
                fake.queries.extend(parse_qs(parts.query)["query"])
                body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
                    {"metric": {}, "value": [1700000000, fake.value]}]}}).encode()
            else:
                body = NO_ALERTS
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("promql") / "cluster.db"
    try:
        assert main(["install", str(PAYLOADS / "demo-4.16.0"), "--state", str(state)]) == 0
    finally:
        configure("text", 0)
    return state


@pytest.fixture
def state(installed: Path, tmp_path: Path) -> str:
    """4.16.0 in channel stable-4.16 of a ``file://`` graph: 4.16.0 -> 4.17.0 under the PromQL risk EtcdDegraded."""
    from cvo.updates.graph import ConditionalEdges, Graph, Node
    from cvo.updates.model import MatchingRule, Risk

    path = tmp_path / "cluster.db"
    shutil.copy(installed, path)
    nodes = tuple(Node(v, (PAYLOADS / f"demo-{v}").as_uri()) for v in ("4.16.0", "4.17.0"))
    risk = Risk("EtcdDegraded", "etcd may not survive the update while it is degraded.", "https://example.com/etcd",
                (MatchingRule("PromQL", QUERY),))
    graph = tmp_path / "graph.json"
    graph.write_bytes(Graph(nodes, (), (ConditionalEdges((("4.16.0", "4.17.0"),), (risk,)),)).dumps())
    write_cluster_version(path, {"channel": "stable-4.16", "upstream": graph.as_uri()}, {})
    return str(path)


def recommend(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["upgrade", "recommend", "--version", "4.17.0", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def recommended(state: str) -> dict[str, str]:
    """The Recommended condition of the one conditional update, as the command wrote it to the status."""
    [update] = state_kind(Path(state), "ClusterVersion")[0]["status"]["conditionalUpdates"]
    [condition] = [c for c in update["conditions"] if c["type"] == "Recommended"]
    return {k: condition[k] for k in ("status", "reason")}


@pytest.mark.parametrize(("value", "status", "reason", "exit_code", "error"), [
    ("1", "False", "EtcdDegraded", 1,
     "error: issues that apply to this cluster but which were not included in --accept: ConditionalUpdateRisk\n"),
    ("0", "True", "NotExposedToRisks", 0, ""),
])
def test_a_promql_risk_is_asked_of_the_metrics_url(value: str, status: str, reason: str, exit_code: int, error: str,
                                                   state: str, prometheus: Prometheus,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    prometheus.value = value
    code, out, err = recommend(capsys, "--state", state, "--metrics-url", prometheus.url)
    assert prometheus.queries == [QUERY]
    assert recommended(state) == {"status": status, "reason": reason}
    assert (code, err) == (exit_code, error)
    assert ("Update to 4.17.0 Recommended=False:\n" in out and "Reason: EtcdDegraded\n" in out) == (value == "1")


def test_without_a_metrics_url_a_promql_risk_cannot_be_evaluated(state: str, prometheus: Prometheus,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    recommend(capsys, "--state", state)
    assert prometheus.queries == []
    assert recommended(state) == {"status": "Unknown", "reason": "EvaluationFailed"}
