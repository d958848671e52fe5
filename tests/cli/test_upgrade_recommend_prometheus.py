"""`cvo upgrade recommend --metrics-url` against a real Prometheus (Debian's, started on 127.0.0.1 with alerting
rules that fire at their first evaluation): its /api/v1/alerts answer, firing and pending alerts, grouped as oc
groups them.  Fails when the server cannot start."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cvo.cli.main import main
from tests.support.recommend_objects import degraded, embedded

RULES = {"groups": [{"name": "recommend", "interval": "1s", "rules": [
    {"alert": "ClusterOperatorDown", "expr": "vector(1)", "labels": {"severity": "critical", "name": "monitoring"},
     "annotations": {"summary": "Cluster operator has not been available for 10 minutes.",
                     "description": "The monitoring operator may be down.",
                     "runbook_url": "https://runbooks.example/ClusterOperatorDown.md"}},
    {"alert": "PodDisruptionBudgetAtLimit", "expr": "vector(1)",
     "labels": {"severity": "warning", "namespace": "openshift-monitoring", "poddisruptionbudget": "prometheus-k8s"},
     "annotations": {"summary": "The pod disruption budget is preventing further disruption to pods."}},
    {"alert": "KubeNodeNotReady", "expr": "vector(1)", "for": "1h", "labels": {"severity": "warning"}},  # pending
]}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def firing(url: str) -> set[str]:
    with urllib.request.urlopen(url + "/api/v1/alerts", timeout=5) as answer:
        alerts = json.load(answer)["data"]["alerts"]
    return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(RULES))
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(
        {"global": {"evaluation_interval": "1s"}, "rule_files": [str(tmp_path / "rules.yml")]}))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "prometheus.log").open("w")
    server = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                               f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, f"prometheus exited: {(tmp_path / 'prometheus.log').read_text()[-2000:]}"
            try:
                if {"ClusterOperatorDown", "PodDisruptionBudgetAtLimit"} <= firing(url):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "prometheus' rules never fired"
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_firing_alerts_of_a_real_prometheus(prometheus: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    state = str(embedded(tmp_path, degraded()))
    code = main(["upgrade", "recommend", "--state", state, "--metrics-url", prometheus, "--version", "4.16.32",
                 "--accept", "Failing"])
    out, err = capsys.readouterr()
    assert "The following conditions found no cause for concern in updating this cluster to later releases: " \
           "recommended/NodeAlerts (AsExpected), recommended/PodImagePullAlerts (AsExpected), " \
           "recommended/UpdatePrecheckAlerts (AsExpected)\n" in out  # KubeNodeNotReady is only pending
    assert ("recommended/CriticalAlerts/ClusterOperatorDown/0=False:\n\n  Reason: Alert:firing\n  Message: critical "
            "alert ClusterOperatorDown firing, suggesting significant cluster issues worth investigating. Cluster "
            "operator has not been available for 10 minutes. The alert description is: The monitoring operator may "
            "be down. https://runbooks.example/ClusterOperatorDown.md\n") in out
    assert ("Message: warning alert PodDisruptionBudgetAtLimit firing, which might slow node drains. "
            "Namespace=openshift-monitoring, PodDisruptionBudget=prometheus-k8s. The pod disruption budget is "
            "preventing further disruption to pods. The alert has no description. <alert does not have a "
            "runbook_url annotation>\n") in out
    assert (code, err) == (1, "error: issues that apply to this cluster but which were not included in --accept: "
                              "ClusterOperatorDown,PodDisruptionBudgetAtLimit\n")
    code = main(["upgrade", "recommend", "--state", state, "--metrics-url", prometheus, "--version", "4.16.32",
                 "--accept", "Failing,ClusterOperatorDown,PodDisruptionBudgetAtLimit", "--quiet"])
    assert (code, *capsys.readouterr()) == (0, "", "")
