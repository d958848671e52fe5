"""The update graph on a real cluster, with nothing in between faked: release images (OCI layouts), their graph
built by ``cvo graph build`` and served first by a plain static file server, then by ``cvo graph serve``; a real
Prometheus (Debian's) scraping ``cvo run``'s ``/metrics`` and evaluating the CVO's alerting rules (a copy with
every ``for:`` cut to 1 s); ``cvo sim-operators`` making etcd unavailable and Degraded.

The story: the controller installs 4.16.0; ``cvo upgrade channel`` subscribes it to stable-4.16 and the
controller lists 4.16.3 and a conditional 4.17.0 whose PromQL risk (etcd degraded) does not apply: recommended.
The admin takes 4.16.3 by version; during its rollout etcd goes unavailable and Degraded; Prometheus fires
``ClusterOperatorDown`` and ``cvo upgrade recommend`` shows it.  A new leader (the CVO re-evaluates a risk at
most once an hour, pkg/clusterconditions/cache/cache.go ``MinForCondition``; a restarted CVO evaluates at
once) finds the risk applies: 4.17.0 becomes not recommended, and ``recommend --version 4.17.0`` refuses it.
etcd recovers and the update to 4.16.3 completes."""

from __future__ import annotations

import functools
import http.server
import json
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cvo.cluster.api import cv_ref
from tests.support.prometheus import PrometheusServer

from .test_controller import LEASE, free_port, holder
from .test_e2e_flows import DEMO, E2E, REPO, Proc, conditions, e2e, history, wait_until

__all__ = ["e2e"]  # the fixture, imported for this module's tests

RULES = REPO / "manifests" / "controller" / "monitoring" / "prometheus" / "cluster-version-operator.rules.yaml"
RISK = "EtcdDegraded"
# 1 when etcd reports Degraded=True, 0 when it reports Degraded=False: one series either way, as a CVO risk must
RISK_QUERY = ('group(cluster_operator_conditions{name="etcd",condition="Degraded"} == 1) '
              'or 0 * group(cluster_operator_conditions{name="etcd",condition="Degraded"})')


def cvo(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A cvo command that needs no cluster."""
    return subprocess.run([sys.executable, "-m", "cvo", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False)


def build_images(work: Path) -> dict[str, str]:
    """The demo releases as release images in one OCI layout, by version: their pull specs by digest."""
    specs = {}
    for version in ("4.16.0", "4.16.3", "4.17.0"):
        built = cvo("release", "new", "--from-dir", str(DEMO[version]), "--to", f"oci:{work / 'images'}:{version}",
                    "-o", "json")
        assert built.returncode == 0, built.stderr
        specs[version] = json.loads(built.stdout)["pullSpec"]
    return specs


def graph_data(work: Path, versions: tuple[str, ...]) -> Path:
    """A cincinnati-graph-data checkout: stable-4.16 offers ``versions``; 4.17.0 carries the etcd risk."""
    data = work / f"graph-data-{len(versions)}"
    (data / "channels").mkdir(parents=True)
    (data / "blocked-edges").mkdir()
    (data / "version").write_text("1.2.0\n")
    (data / "channels" / "stable-4.16.yaml").write_text(yaml.safe_dump(
        {"name": "stable-4.16", "versions": list(versions)}))
    (data / "blocked-edges" / f"4.17.0-{RISK}.yaml").write_text(yaml.safe_dump({
        "to": "4.17.0", "from": ".*", "url": "https://example.com/risks/EtcdDegraded", "name": RISK,
        "message": "Clusters whose etcd is degraded may lose quorum during the 4.17 storage migration.",
        "matchingRules": [{"type": "PromQL", "promql": {"promql": RISK_QUERY}}]}))
    return data


@pytest.fixture
def static_server(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A plain static file server (the standard library's, no query understood): the answer for a channel,
    written as a file by ``cvo graph build --channel``."""
    root = tmp_path / "static"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}/graph.json"
    finally:
        server.shutdown()
        server.server_close()


def short_rules(path: Path) -> Path:
    """The shipped rules with every ``for:`` at 1 s (promtool's tests time the shipped durations)."""
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "1s"
    path.write_text(yaml.safe_dump(rules))
    return path


def conditional(cv: dict[str, Any], version: str) -> dict[str, Any] | None:
    for update in (cv.get("status") or {}).get("conditionalUpdates") or []:
        if (update.get("release") or {}).get("version") == version:
            return dict(update)
    return None


def update_condition(cv: dict[str, Any], version: str, kind: str = "Recommended") -> dict[str, Any]:
    update = conditional(cv, version) or {}
    return {c["type"]: c for c in update.get("conditions") or []}.get(kind, {})


def recommended(cv: dict[str, Any], version: str) -> str | None:
    status: str | None = update_condition(cv, version).get("status")
    return status


def controller(e2e: E2E, name: str, image: str, listen: int, prometheus: PrometheusServer) -> Proc:
    return e2e.start(name, "run", "--identity", name, "--release", image, "--interval", "20s",
                     "--lease-duration", LEASE[0], "--renew-deadline", LEASE[1], "--retry-period", LEASE[2],
                     "--listen", f"127.0.0.1:{listen}", "--metrics-url", prometheus.url, log_json=True)


def firing(prometheus: PrometheusServer, alert: str, **labels: str) -> bool:
    return any(a["labels"].get("alertname") == alert and a["state"] == "firing"
               and all(a["labels"].get(k) == v for k, v in labels.items()) for a in prometheus.alerts())


def test_channel_risks_on_a_real_prometheus_and_an_update_by_version(
        e2e: E2E, tmp_path: Path, static_server: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CVO_CACHE_DIR", str(tmp_path / "cache"))
    specs = build_images(tmp_path)
    images = [f"oci:{tmp_path / 'images'}:{v}" for v in ("4.16.0", "4.16.3", "4.17.0")]
    built = cvo("graph", "build", *images, "--graph-data", str(graph_data(tmp_path, ("4.16.0", "4.16.3", "4.17.0"))),
                "-o", "json")
    assert built.returncode == 0, built.stderr
    (tmp_path / "graph.json").write_text(built.stdout)
    # the static server's answer predates 4.16.3: only cvo graph serve offers it
    channel = cvo("graph", "build", images[0], images[2], "--graph-data",
                  str(graph_data(tmp_path, ("4.16.0", "4.17.0"))), "--channel", "stable-4.16", "-o", "json")
    assert channel.returncode == 0, channel.stderr
    root, static_url = static_server
    (root / "graph.json").write_text(channel.stdout)

    serve = Proc("graph-serve", [sys.executable, "-m", "cvo", "graph", "serve", str(tmp_path / "graph.json"),
                                 "--address", "127.0.0.1:0"], tmp_path)
    e2e.procs.append(serve)
    wait_until("cvo graph serve to listen", lambda: "Serving " in serve.stdout, 60, alive=serve.popen)
    served = re.search(r"^Serving .* at (http:\S+)$", serve.stdout, re.M)
    assert served, serve.stdout

    port_a, port_b = free_port(), free_port()
    labels = {"namespace": "openshift-cluster-version", "endpoint": "metrics"}
    with PrometheusServer(tmp_path / "prometheus", [f"127.0.0.1:{port_a}", f"127.0.0.1:{port_b}"],
                          rule_files=[short_rules(tmp_path / "rules.yaml")], job="cluster-version-operator",
                          target_labels=labels) as prometheus:
        healthy = e2e.sim_operators({"default": {"delay": "2s"}}, DEMO["4.16.0"], DEMO["4.16.3"])
        a = controller(e2e, "a", specs["4.16.0"], port_a, prometheus)

        def cv() -> dict[str, Any]:
            return e2e.get(cv_ref())[0] or {}

        wait_until("the controller to install 4.16.0", lambda: history(cv())[:1] == [("4.16.0", "Completed")],
                   300, interval=1.0, alive=a.popen)
        assert holder(e2e.cp) == "a"

        # A channel, from the static file server: the controller retrieves the graph and evaluates the risk.
        res = e2e.cvo("upgrade", "channel", "stable-4.16", "--upstream", static_url)
        assert res.returncode == 0, res.stderr
        wait_until("4.17.0 evaluated", lambda: recommended(cv(), "4.17.0") == "True", 120, interval=0.5,
                   alive=a.popen)
        assert conditions(cv())["RetrievedUpdates"]["status"] == "True"
        assert [u["version"] for u in cv()["status"]["availableUpdates"]] == ["4.17.0"]  # its risk does not apply
        assert conditional(cv(), "4.17.0")["risks"][0]["name"] == RISK  # type: ignore[index]
        prometheus.wait_for('cluster_operator_conditions{name="etcd",condition="Degraded"}', 0)

        # The newer graph from cvo graph serve, which answers the CVO's query itself: 4.16.3 is offered.
        res = e2e.cvo("upgrade", "channel", "stable-4.16", "--upstream", served.group(1))
        assert res.returncode == 0, res.stderr
        wait_until("cvo graph serve's 4.16.3", lambda: [u["version"] for u in cv()["status"].get("availableUpdates")
                                                          or []] == ["4.17.0", "4.16.3"], 60, interval=0.5,
                   alive=a.popen)
        listing = e2e.cvo("upgrade")
        assert listing.returncode == 0, listing.stderr
        assert f"Upstream: {served.group(1)}" in listing.stdout and "Channel: stable-4.16" in listing.stdout
        assert re.search(r"^Recommended updates:\n\n\s+VERSION\s+IMAGE\n\s+4\.17\.0\s+\S+\n\s+4\.16\.3\s+"
                         + re.escape(specs["4.16.3"]), listing.stdout, re.M), listing.stdout

        # etcd will go unavailable and Degraded in its next rollout: simulated by another sim-operators.
        healthy.stop()
        sick = e2e.start("sim-sick", "sim-operators", "--release", str(DEMO["4.16.0"]), "--release",
                         str(DEMO["4.16.3"]), "--operators", str(behaviours(tmp_path / "sick.yaml", sick=True)))
        wait_until("sim-operators to start simulating", lambda: " operators of " in sick.stderr, 90,
                   alive=sick.popen)
        res = e2e.cvo("upgrade", "--to", "4.16.3", "--no-wait")
        assert res.returncode == 0, res.stderr
        wait_until("the controller to take 4.16.3 by version", lambda: history(cv())[:1] == [("4.16.3", "Partial")],
                   120, interval=0.5, alive=a.popen)
        assert cv()["status"]["desired"]["image"] == specs["4.16.3"]  # the graph's image, by digest
        wait_until("ClusterOperatorDown to fire for etcd",
                   lambda: firing(prometheus, "ClusterOperatorDown", name="etcd"), 120, interval=0.5)
        prometheus.wait_for(RISK_QUERY, 1)
        # the leader evaluated the risk less than an hour ago: it still says recommended
        assert recommended(cv(), "4.17.0") == "True"
        rec = e2e.cvo("upgrade", "recommend", "--metrics-url", prometheus.url)
        assert "critical alert ClusterOperatorDown firing" in rec.stdout + rec.stderr, rec.stdout + rec.stderr

        # A new leader evaluates at once.
        a.popen.send_signal(signal.SIGTERM)
        assert a.wait(60) == 0
        b = controller(e2e, "b", specs["4.16.0"], port_b, prometheus)
        wait_until("replica b to lead", lambda: holder(e2e.cp) == "b", 60, alive=b.popen)
        wait_until("4.17.0 not recommended", lambda: recommended(cv(), "4.17.0") == "False", 120, interval=0.5,
                   alive=b.popen)
        cond = update_condition(cv(), "4.17.0")
        assert cond["reason"] == RISK and "etcd is degraded" in cond["message"]
        # the alert's series now come from b (another target): pending again for a moment, then firing
        wait_until("ClusterOperatorDown to fire again", lambda: firing(prometheus, "ClusterOperatorDown", name="etcd"),
                   120, interval=0.5)
        rec = e2e.cvo("upgrade", "recommend", "--version", "4.17.0", "--metrics-url", prometheus.url)
        assert rec.returncode != 0
        assert RISK in rec.stdout + rec.stderr and "ClusterOperatorDown" in rec.stdout + rec.stderr
        prometheus.wait_for('count(cluster_version_conditional_update_condition_seconds{version="4.17.0",'
                            f'condition="Recommended",status="False",reason="{RISK}"}})', 1)

        # etcd recovers: the update completes.
        sick.stop()
        e2e.sim_operators(behaviours_for_healthy(), DEMO["4.16.0"], DEMO["4.16.3"])
        wait_until("the update to 4.16.3 to complete",
                   lambda: history(cv())[:2] == [("4.16.3", "Completed"), ("4.16.0", "Completed")], 300,
                   interval=1.0, alive=b.popen)
        b.popen.send_signal(signal.SIGTERM)
        assert b.wait(60) == 0


def behaviours(path: Path, sick: bool) -> Path:
    etcd = {"delay": "2s", "never_available": True, "degraded": {"after": 0}} if sick else {"delay": "2s"}
    path.write_text(yaml.safe_dump({"default": {"delay": "2s"}, "etcd": etcd}))
    return path


def behaviours_for_healthy() -> dict[str, Any]:
    return {"default": {"delay": "2s"}}
