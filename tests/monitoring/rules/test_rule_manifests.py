"""manifests/controller/monitoring/: the PrometheusRules and ServiceMonitor for the Prometheus Operator, and the
same groups as a plain rule file, and a plain Prometheus' configuration that loads it and scrapes cvo."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from cvo.controller.http import Endpoint, Health
from tests.support.metrics import snapshot_of
from tests.support.promtool import RULES, promtool

MONITORING = RULES.parents[1]
CONTROLLER = MONITORING.parent
CONFIG = RULES.parent / "prometheus.yml"


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_the_plain_rule_file_holds_the_prometheusrules_groups() -> None:
    (manifest,) = sorted(MONITORING.glob("*.yaml"))
    docs = documents(manifest)
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("ServiceMonitor", "cluster-version-operator"), ("PrometheusRule", "cluster-version-operator"),
        ("PrometheusRule", "cluster-version-operator-accept-risks")]
    assert all(d["apiVersion"] == "monitoring.coreos.com/v1" and d["metadata"]["namespace"] == "openshift-cluster-version"
               for d in docs)
    groups = [g for d in docs if d["kind"] == "PrometheusRule" for g in d["spec"]["groups"]]
    assert yaml.safe_load(RULES.read_text()) == {"groups": groups}
    # the CVO's gate annotation: applied by the CVO only when ClusterUpdateAcceptRisks is on
    assert docs[2]["metadata"]["annotations"]["release.openshift.io/feature-gate"] == "ClusterUpdateAcceptRisks"
    assert [r["alert"] for r in docs[2]["spec"]["groups"][0]["rules"]] == ["OpenShiftUpdateRiskMightApply"]
    # no Go template left: the CVO's {{ "{{ ... }}" }} escapes are rendered, as pkg/payload/render.go renders them
    assert '{{ "' not in RULES.read_text() and '{{ "' not in manifest.read_text().split("---", 1)[1]


def test_the_servicemonitor_scrapes_cvos_service_so_the_rules_labels_match() -> None:
    """The rules select job="cluster-version-operator" and endpoint="metrics": the Prometheus Operator sets
    job to the Service's name and endpoint to its port's name."""
    (monitor,) = [d for d in documents(next(MONITORING.glob("*.yaml"))) if d["kind"] == "ServiceMonitor"]
    (service,) = [d for p in sorted(CONTROLLER.glob("*.yaml")) for d in documents(p) if d["kind"] == "Service"]
    assert service["metadata"]["name"] == "cluster-version-operator"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"] == "metrics"
    assert endpoint["scheme"] == "http" and endpoint["interval"] == "30s"


def test_promtool_checks_the_plain_prometheus_config() -> None:
    result = subprocess.run([promtool(), "check", "config", str(CONFIG)], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 10 rules found" in result.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def api(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return json.loads(response.read())["data"]


def test_a_real_prometheus_with_the_plain_config_labels_cvos_series_as_the_rules_expect(tmp_path: Path) -> None:
    """Debian's prometheus, with the shipped prometheus.yml pointed at cvo's endpoint (and a 1 s interval):
    the rules load, and cvo's series carry the job, namespace and endpoint labels the rules select on."""
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.fail("prometheus is not installed: run `make monitoring-tools` (Debian's prometheus package)")
    snapshot = snapshot_of({"metadata": {"name": "version"}, "spec": {"channel": "stable-4.16"}, "status": {
        "conditions": [{"type": "RetrievedUpdates", "status": "False", "reason": "RemoteFailed"}]}})
    endpoint = Endpoint("127.0.0.1", 0, snapshot, Health())
    endpoint.start()
    config = yaml.safe_load(CONFIG.read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(RULES)]
    config["scrape_configs"][0]["static_configs"][0]["targets"] = [f"127.0.0.1:{endpoint.address[1]}"]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    proc = subprocess.Popen([prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("w"))
    query = urllib.parse.quote('cluster_operator_conditions{name="version",condition="RetrievedUpdates",'
                               'endpoint="metrics",job="cluster-version-operator"}')
    try:
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + 60
        while not found:
            assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "no scrape of cvo within 60 s"
            time.sleep(0.5)
            with contextlib.suppress(OSError):
                found = api(port, f"/api/v1/query?query={query}")["result"]
        (series,) = found
        assert series["metric"] == {"__name__": "cluster_operator_conditions", "condition": "RetrievedUpdates",
                                    "endpoint": "metrics", "instance": f"127.0.0.1:{endpoint.address[1]}",
                                    "job": "cluster-version-operator", "name": "version",
                                    "namespace": "openshift-cluster-version", "reason": "RemoteFailed"}
        assert series["value"][1] == "0"
        rules = [r["name"] for g in api(port, "/api/v1/rules")["groups"] for r in g["rules"]]
        assert sorted(rules) == sorted(r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"]
                                       for r in g["rules"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        endpoint.close()
