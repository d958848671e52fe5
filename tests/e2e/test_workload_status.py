"""The example release of ordinary components (payloads/apps-*) on the acting control plane, with nothing simulated:
kube-controller-manager, kube-scheduler and kwok roll its Deployments out, and cvo derives the ``shop``
ClusterOperator's status from them (cvo/operators/workloads.py) while it installs and upgrades.  A third release
whose ``web`` can never be scheduled (a 2 s progress deadline) makes the upgrade fail with the ClusterOperator
Degraded by the Deployment's own message, and the old pods still serving (Available).  The upgrade to 1.1.0 runs
with kube-controller-manager killed until its new spec is applied: it waits, and completes once the
controller-manager is back."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.support.helpers import PAYLOADS, REPO

from .controlplane import ControlPlane


@pytest.fixture
def api(acting_control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    configuration = client.Configuration()
    configuration.host = acting_control_plane.server_url
    configuration.ssl_ca_cert = acting_control_plane.ca_path
    configuration.api_key = {"authorization": f"Bearer {acting_control_plane.token}"}
    with client.ApiClient(configuration) as api_client:
        yield api_client


def cvo(cp: ControlPlane, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run([sys.executable, "-m", "cvo", *args, "--kubeconfig", str(cp.kubeconfig_path)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=timeout, check=False)


def unschedulable(tmp: Path) -> Path:
    """apps-1.1.0 as 1.2.0, its web asking for a node that does not exist, with a 2 s progress deadline."""
    out = tmp / "apps-1.2.0"
    shutil.copytree(PAYLOADS / "apps-1.1.0", out)
    rm = out / "release-manifests"
    for path in rm.iterdir():
        path.write_text(path.read_text().replace("1.1.0", "1.2.0"))
    web = rm / "0000_50_shop_01_web.deployment.yaml"
    doc = yaml.safe_load(web.read_text())
    doc["spec"]["progressDeadlineSeconds"] = 2
    doc["spec"]["template"]["spec"]["nodeSelector"] = {"example.com/no-such-node": "true"}
    web.write_text(yaml.safe_dump(doc))
    return out


def shop(custom: client.CustomObjectsApi) -> dict[str, Any]:
    found: dict[str, Any] = custom.get_cluster_custom_object("config.openshift.io", "v1", "clusteroperators", "shop")
    return found


def conditions(co: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("message", "")) for c in co["status"]["conditions"]}


def test_the_example_release_installs_and_upgrades_with_nothing_simulated(
        acting_control_plane: ControlPlane, api: client.ApiClient, tmp_path: Path) -> None:
    cp = acting_control_plane
    apps, custom = client.AppsV1Api(api), client.CustomObjectsApi(api)
    res = cvo(cp, "bootstrap")
    assert res.returncode == 0, res.stderr

    res = cvo(cp, "install", str(PAYLOADS / "apps-1.0.0"), "--timeout", "2m")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    web = apps.read_namespaced_deployment("web", "shop")
    assert web.status.available_replicas == 2  # really rolled out: pods on kwok's Nodes
    co = shop(custom)
    assert co["status"]["versions"] == [{"name": "operator", "version": "1.0.0"}]
    assert conditions(co)["Available"] == ("True", "All workloads serve")

    # The upgrade with kube-controller-manager killed: the new spec is applied but nobody rolls it out, so the
    # upgrade waits (certainly: nothing else can move the Deployment) until it is back.
    cp.kill_component("kube-controller-manager")
    try:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        upgrade = subprocess.Popen([sys.executable, "-m", "cvo", "upgrade", "--to", str(PAYLOADS / "apps-1.1.0"),
                                    "--timeout", "3m", "--kubeconfig", str(cp.kubeconfig_path)], cwd=REPO, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def unobserved() -> bool:
            web = apps.read_namespaced_deployment("web", "shop")
            waiting = conditions(shop(custom)).get("Progressing", ("", ""))
            return web.metadata.generation > web.status.observed_generation and waiting[0] == "True"

        deadline = time.monotonic() + 60
        while not unobserved():
            assert upgrade.poll() is None, upgrade.communicate()
            assert time.monotonic() < deadline, "the upgrade did not apply web's new spec within 60s"
            time.sleep(0.3)
        assert "but latest observed generation is 1" in conditions(shop(custom))["Progressing"][1]
        assert upgrade.poll() is None  # it waits: nothing can roll web out
    finally:
        cp.start_component("kube-controller-manager")
    out, err = upgrade.communicate(timeout=180)
    assert upgrade.returncode == 0, out[-3000:] + err[-3000:]
    web = apps.read_namespaced_deployment("web", "shop")
    assert web.spec.template.spec.containers[0].image == "example.com/shop/web:1.1.0"
    assert web.status.updated_replicas == 2 and web.status.available_replicas == 2
    assert shop(custom)["status"]["versions"] == [{"name": "operator", "version": "1.1.0"}]

    res = cvo(cp, "upgrade", "--to", str(unschedulable(tmp_path)), "--timeout", "20s")
    assert res.returncode != 0
    co = shop(custom)
    web = apps.read_namespaced_deployment("web", "shop")
    deadline = next(c for c in web.status.conditions if c.type == "Progressing")
    assert deadline.reason == "ProgressDeadlineExceeded"
    assert conditions(co)["Degraded"] == ("True", f"deployment shop/web: {deadline.message}")
    assert conditions(co)["Available"][0] == "True"  # the 1.1.0 pods still serve
    assert co["status"]["versions"] == [{"name": "operator", "version": "1.1.0"}]
