"""``cvo sim-operators`` on the acting control plane: an operator reports its release's versions only once a real
kube-controller-manager, kube-scheduler and kwok have rolled its Deployment out.

The operator's Deployment is first unschedulable (a nodeSelector no Node matches) with a 2 s progress deadline:
the Deployment controller marks it ``ProgressDeadlineExceeded``, and the ClusterOperator is Degraded with the
Deployment's own message and reports no versions, however long its behaviour's delay (1 s) has passed.  Then the
test drops the nodeSelector: the new ReplicaSet's Pod is scheduled on a kwok Node and runs, the rollout completes,
and the ClusterOperator reports its versions, Available=True and Degraded=False.  Nothing is timing luck: the
first state cannot end by itself, the second comes only from the test's own change.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes import client

from tests.support.helpers import REPO, ReleaseFactory, cluster_operator, obj

from .controlplane import ControlPlane

T = TypeVar("T")
TIMEOUT = 90.0


def eventually(what: str, probe: Callable[[], T | None], timeout: float = TIMEOUT) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:g}s: {what}")
        time.sleep(0.3)


@pytest.fixture
def api(acting_control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    configuration = client.Configuration()
    configuration.host = acting_control_plane.server_url
    configuration.ssl_ca_cert = acting_control_plane.ca_path
    configuration.api_key = {"authorization": f"Bearer {acting_control_plane.token}"}
    with client.ApiClient(configuration) as api_client:
        yield api_client


def cvo(cp: ControlPlane, *args: str) -> list[str]:
    return [sys.executable, "-m", "cvo", *args, "--kubeconfig", str(cp.kubeconfig_path)]


def operator_deployment(name: str, namespace: str, version: str) -> dict[str, Any]:
    container = {"name": "operator", "image": f"quay.io/example/{name}:{version}",
                 "env": [{"name": "RELEASE_VERSION", "value": version}]}
    return obj("Deployment", f"{name}-operator", namespace, api="apps/v1", spec={
        "replicas": 1, "progressDeadlineSeconds": 2, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"nodeSelector": {"example.com/no-such-node": "true"}, "containers": [container]}}})


def condition(co: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    return next((c for c in ((co or {}).get("status") or {}).get("conditions") or [] if c.get("type") == type_), {})


def with_condition(co: dict[str, Any] | None, type_: str, status: str) -> dict[str, Any] | None:
    return co if condition(co, type_).get("status") == status else None


def test_an_operator_reports_its_version_only_once_its_deployment_really_rolled_out(
        acting_control_plane: ControlPlane, api: client.ApiClient, make_release: ReleaseFactory,
        tmp_path: Path) -> None:
    cp = acting_control_plane
    boot = subprocess.run(cvo(cp, "bootstrap"), cwd=REPO, capture_output=True, text=True, timeout=120)
    assert boot.returncode == 0, boot.stderr
    name = f"probe{uuid.uuid4().hex[:6]}"
    namespace, version = f"openshift-{name}", "4.16.0"
    deployment = operator_deployment(name, namespace, version)
    release = make_release({f"0000_50_{name}_05_deployment.yaml": deployment,
                            f"0000_50_{name}_06_clusteroperator.yaml": cluster_operator(name, version)},
                           version=version)
    behaviours = tmp_path / "operators.yaml"
    behaviours.write_text(yaml.safe_dump({"default": {"delay": "1s"}}))
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    custom = client.CustomObjectsApi(api)
    core.create_namespace({"metadata": {"name": namespace}})
    # applied before sim-operators starts (as a sweep applies it before the operator runs): found when it starts
    apps.create_namespaced_deployment(namespace, deployment)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"} | {"PYTHONUNBUFFERED": "1"}
    log = (tmp_path / "sim.log").open("w")
    sim = subprocess.Popen(cvo(cp, "sim-operators", "--release", str(release), "--operators", str(behaviours)),
                           cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)

    def co() -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = custom.get_cluster_custom_object("config.openshift.io", "v1", "clusteroperators",
                                                                     name)
            return found
        except client.ApiException as err:
            if err.status == 404:
                return None
            raise

    try:
        eventually("sim-operators to start", lambda: f"operator of {version}" in (tmp_path / "sim.log").read_text())
        assert "the cluster's controllers act" in (tmp_path / "sim.log").read_text()
        # the Deployment controller gives up on the unschedulable Pod after its 2 s deadline
        degraded = eventually("the ClusterOperator Degraded by the stuck rollout",
                              lambda: with_condition(co(), "Degraded", "True"))
        live = apps.read_namespaced_deployment(f"{name}-operator", namespace)
        deadline = next(c for c in live.status.conditions if c.type == "Progressing")
        assert deadline.reason == "ProgressDeadlineExceeded"
        assert condition(degraded, "Degraded")["message"] == f"deployment {namespace}/{name}-operator: {deadline.message}"
        assert condition(degraded, "Available")["status"] == "False"  # an install: nothing serves yet
        assert not (degraded.get("status") or {}).get("versions")  # long past the behaviour's 1 s delay

        apps.patch_namespaced_deployment(f"{name}-operator", namespace,
                                         {"spec": {"template": {"spec": {"nodeSelector": None}}}})
        done = eventually("the ClusterOperator at its release once the Deployment rolled out",
                          lambda: with_condition(co(), "Available", "True"))
        rolled = apps.read_namespaced_deployment(f"{name}-operator", namespace)
        assert rolled.status.available_replicas == 1 and rolled.status.updated_replicas == 1
        assert {v["name"]: v["version"] for v in done["status"]["versions"]} == {"operator": version}
        assert condition(done, "Degraded")["status"] == "False"
        assert condition(done, "Progressing")["status"] == "False"
    finally:
        sim.terminate()
        sim.wait(timeout=15)
        log.close()
        core.delete_namespace(namespace)
        custom.delete_cluster_custom_object("config.openshift.io", "v1", "clusteroperators", name)
