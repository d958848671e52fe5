"""The sweep against a real API server: the runner's Worker in install mode, and ``cvo install --kubeconfig``.

The OpenShift kinds the sweep writes (ClusterVersion, ClusterOperator, OperatorCondition) are CRDs
here.  The main tests install minimal, permissive ones (any fields, with status subresources) so
that they test the backend and the runner, not the schemas; one test uses the real CRDs from
manifests/ (what ``cvo bootstrap`` installs) on a control plane of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cvo.cli.main import main as cvo_main
from cvo.clock import Clock
from cvo.cluster.api import CLUSTER_OPERATOR, ApiError, EventType, Ref, cv_ref
from cvo.cluster.kube import KubeCluster
from cvo.gates.olm import OC_GROUP, OC_KIND
from cvo.operators.library.clusteroperator import Condition, report_status
from cvo.payload.graph import Mode, make_tasks
from cvo.payload.loader import load_release
from cvo.runner.apply import DeleteTracker, apply_task
from cvo.runner.events import Recorder
from cvo.runner.sweep import SweepOptions, SweepResult
from cvo.runner.worker import Worker
from tests.support.helpers import HA, REPO, ReleaseFactory, cluster_operator, obj

from .conftest import make_namespace, run_with
from .controlplane import ControlPlane
from .test_kube_backend import crd, unique_group, wait_established

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
VERSION = "4.16.0"


def minimal_openshift_crds() -> list[dict[str, Any]]:
    """ClusterVersion and ClusterOperator (cluster-scoped), OperatorCondition v1 + v2 (namespaced)."""
    cv = crd("config.openshift.io", "ClusterVersion", scope="Cluster")
    co = crd("config.openshift.io", "ClusterOperator", scope="Cluster")
    oc = crd("operators.coreos.com", "OperatorCondition", versions=("v2", "v1"))
    return [cv, co, oc]


def manifest_crds() -> list[dict[str, Any]]:
    """The CRDs ``cvo bootstrap`` installs (manifests/*.crd.yaml), when that directory has them."""
    docs = []
    for path in sorted(glob.glob(str(REPO / "manifests" / "*.yaml"))):
        for doc in yaml.safe_load_all(Path(path).read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                docs.append(doc)
    return docs


async def install_crds(cluster: KubeCluster, crds: list[dict[str, Any]]) -> None:
    for doc in crds:
        with contextlib.suppress(ApiError):  # installed by an earlier test of the session
            await cluster.create(doc)
    for doc in crds:
        await wait_established(cluster, doc["metadata"]["name"])


@pytest.fixture(scope="session")
def openshift_kinds(control_plane: ControlPlane) -> ControlPlane:
    async def body(cluster: KubeCluster) -> None:
        await install_crds(cluster, minimal_openshift_crds())

    run_with(control_plane, body)
    return control_plane


@pytest.fixture
def no_cluster_version(openshift_kinds: ControlPlane) -> ControlPlane:
    """The ClusterVersion is a singleton: each sweep starts without one."""

    async def body(cluster: KubeCluster) -> None:
        await cluster.delete(cv_ref())

    run_with(openshift_kinds, body)
    return openshift_kinds


class OperatorStandIn:
    """An operator in a test: reports its ClusterOperator Available at ``versions`` once it exists."""

    def __init__(self, cluster: KubeCluster, clock: Clock, versions: dict[str, dict[str, str]]) -> None:
        self.cluster, self.clock, self.versions = cluster, clock, versions
        self.reports = 0
        self.stream = cluster.watch(*CLUSTER_OPERATOR)  # subscribed now, before the sweep starts

    async def run(self) -> None:
        async for event in self.stream:
            name = event.obj["metadata"]["name"]
            status = event.obj.get("status") or {}
            if event.type is EventType.DELETED or name not in self.versions:
                continue
            available = any(c.get("type") == "Available" and c.get("status") == "True"
                            for c in status.get("conditions") or [])
            if available:
                continue
            await report_status(self.cluster, name, self.clock.now(), versions=self.versions[name],
                                conditions=[Condition("Available", "True", "AsExpected", "all good"),
                                            Condition("Degraded", "False"), Condition("Progressing", "False")])
            self.reports += 1


def included(doc: dict[str, Any]) -> dict[str, Any]:
    doc["metadata"]["annotations"] = dict(HA)
    return doc


def payload(namespace: str, operator: str, group: str) -> dict[str, object]:
    return {
        "0000_50_e2e_00_namespace.yaml": obj("Namespace", namespace),
        "0000_50_e2e_01_crd.yaml": included(crd(group, "Gadget")),
        "0000_50_e2e_02_config.yaml": obj("ConfigMap", "settings", namespace, data={"level": "debug"}),
        "0000_50_e2e_03_deployment.yaml": obj(
            "Deployment", "e2e-operator", namespace, api="apps/v1",
            spec={"selector": {"matchLabels": {"app": "e2e"}},
                  "template": {"metadata": {"labels": {"app": "e2e"}},
                               "spec": {"serviceAccountName": "e2e-operator",
                                        "containers": [{"name": "operator", "image": "quay.io/e2e/operator:1"}]}}}),
        "0000_50_e2e_04_clusteroperator.yaml": cluster_operator(operator, VERSION),
        "0000_50_e2e_05_gadget.yaml": obj("Gadget", "g", namespace, api=f"{group}/v1", spec={"size": 1}),
    }


def sweep(cp: ControlPlane, release_dir: Path, operator: str, timeout: float = 120.0,
          ) -> tuple[SweepResult, Recorder, dict[str, Any]]:
    release = load_release(release_dir)
    recorder = Recorder()
    found: dict[str, Any] = {}

    async def body(cluster: KubeCluster) -> SweepResult:
        clock = Clock()
        stand_in = OperatorStandIn(cluster, clock, {operator: {"operator": VERSION}})
        task = asyncio.create_task(stand_in.run())
        try:
            options = SweepOptions(interval=30.0, timeout=timeout)
            result = await Worker(cluster, release, Mode.INSTALL, recorder, clock, options).run()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        found["reports"] = stand_in.reports
        found["cv"] = await cluster.get(cv_ref())
        found["co"] = await cluster.get(Ref(*CLUSTER_OPERATOR, "", operator))
        found["objects"] = {m.name: await cluster.get(Ref(m.group, m.kind, m.namespace, m.name))
                            for m in release.manifests}
        found["ocs"] = await cluster.list(OC_GROUP, OC_KIND)
        found["stats"] = cluster.stats
        return result

    return run_with(cp, body), recorder, found


def test_install_sweep_completes_against_the_real_api_server(no_cluster_version: ControlPlane,
                                                             make_release: ReleaseFactory) -> None:
    namespace, operator = f"e2e-{uuid.uuid4().hex[:8]}", f"e2e-{uuid.uuid4().hex[:6]}"
    release_dir = make_release(payload(namespace, operator, unique_group()), version=VERSION)
    result, recorder, found = sweep(no_cluster_version, release_dir, operator)

    assert result.ok and result.completed, result.message
    assert result.done == result.total == 6
    history = found["cv"]["status"]["history"]
    assert [(h["version"], h["state"]) for h in history] == [(VERSION, "Completed")]
    conditions = {c["type"]: c["status"] for c in found["cv"]["status"]["conditions"]}
    assert conditions["Available"] == "True" and conditions["Failing"] == "False"
    assert all(found["objects"].values()), [k for k, v in found["objects"].items() if v is None]
    assert found["objects"]["settings"]["data"] == {"level": "debug"}
    env = found["objects"]["e2e-operator"]["spec"]["template"]["spec"]["containers"][0].get("env") or []
    assert {"name": "OPERATOR_CONDITION_NAME", "value": operator} in env  # OLM's part, done by cvo
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in found["ocs"]
            if o["metadata"]["name"] == operator] == [(namespace, operator)]
    assert found["reports"] >= 1
    co_conditions = {c["type"]: c["status"] for c in found["co"]["status"]["conditions"]}
    assert co_conditions["Available"] == "True"
    waits = [e for e in recorder.events if e.name == "task.waiting" and e.fields.get("operator") == operator]
    ready = [e for e in recorder.events if e.name == "operator.ready" and e.fields.get("operator") == operator]
    assert not waits or ready  # if the sweep had to wait, the watch woke it
    for e in recorder.events:
        print(f"  {(e.time - result.started).total_seconds():6.2f} {e.name} {e.fields}")
    print(f"sweep: {result.attempts} attempt(s), {(result.finished - result.started).total_seconds():.1f}s, "
          f"{found['stats'].requests} requests, {found['stats'].retries} retries")


def test_install_sweep_fails_with_the_cvo_reason_for_an_unserved_kind(no_cluster_version: ControlPlane,
                                                                      make_release: ReleaseFactory) -> None:
    namespace = f"e2e-{uuid.uuid4().hex[:8]}"
    release_dir = make_release({
        "0000_50_e2e_00_namespace.yaml": obj("Namespace", namespace),
        "0000_50_e2e_01_route.yaml": obj("Route", "console", namespace, api="route.openshift.io/v1", spec={}),
    }, version=VERSION)
    result, _, found = sweep(no_cluster_version, release_dir, "none", timeout=9.0)  # 4 calls: 1 + 2 + 4 s apart
    assert not result.ok
    assert result.failure is not None and result.failure.reason == "UpdatePayloadResourceTypeMissing"
    assert "the server does not recognize this resource, check extension API servers" in result.failure.message
    assert 'no matches for kind "Route" in version "route.openshift.io/v1"' in result.failure.nested
    assert "release-manifests/0000_50_e2e_01_route.yaml" in result.failure.nested  # names the manifest
    failing = next(c for c in found["cv"]["status"]["conditions"] if c["type"] == "Failing")
    assert failing["status"] == "True" and failing["reason"] == "UpdatePayloadResourceTypeMissing"


def test_cli_install_and_status_with_kubeconfig(no_cluster_version: ControlPlane, make_release: ReleaseFactory,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    namespace = f"e2e-{uuid.uuid4().hex[:8]}"
    release_dir = make_release({
        "0000_50_e2e_00_namespace.yaml": obj("Namespace", namespace),
        "0000_50_e2e_01_config.yaml": obj("ConfigMap", "settings", namespace, data={"a": "b"}),
    }, version=VERSION)
    kubeconfig = no_cluster_version.kubeconfig_path
    code = cvo_main(["install", str(release_dir), "--kubeconfig", kubeconfig, "--timeout", "2m", "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"cluster: context cvo-e2e, server {no_cluster_version.server_url}\n" in err
    doc = yaml.safe_load(out)
    assert doc["ok"] and doc["completed"]
    assert doc["clusterVersion"]["status"]["history"][0]["state"] == "Completed"
    assert doc["wallSeconds"] < 60

    assert cvo_main(["status", "--kubeconfig", kubeconfig]) == 0
    out, _ = capsys.readouterr()
    assert VERSION in out

    assert cvo_main(["status", "--kubeconfig", kubeconfig, "--state", "x.json"]) == 2
    assert "--state is the embedded cluster's state file" in capsys.readouterr().err
    assert cvo_main(["status", "--kubeconfig", kubeconfig, "--context", "nope"]) == 2
    assert "has no context 'nope'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def real_crds() -> Iterator[ControlPlane]:
    """A control plane of its own with the CRDs of manifests/ (OpenShift's, as ``cvo bootstrap`` installs them)."""
    crds = manifest_crds()
    assert {d["metadata"]["name"] for d in crds} >= {"clusterversions.config.openshift.io",
                                                     "clusteroperators.config.openshift.io"}
    cp = ControlPlane()
    try:
        cp.start()
    except Exception as err:
        pytest.fail(f"the second test control plane did not start:\n{err}", pytrace=False)
    try:
        run_with(cp, lambda cluster: install_crds(cluster, crds))
        yield cp
    finally:
        cp.stop()


def test_install_sweep_with_the_real_openshift_crds(real_crds: ControlPlane, make_release: ReleaseFactory) -> None:
    """The ClusterVersion, ClusterOperator and OperatorCondition cvo writes pass OpenShift's schemas."""
    namespace, operator = f"e2e-{uuid.uuid4().hex[:8]}", f"e2e-{uuid.uuid4().hex[:6]}"
    release_dir = make_release(payload(namespace, operator, unique_group()), version=VERSION)
    result, _, found = sweep(real_crds, release_dir, operator, timeout=30.0)
    assert result.ok, result.message
    assert [h["state"] for h in found["cv"]["status"]["history"]] == ["Completed"]


def test_a_clusteroperator_manifest_without_spec_applies(real_crds: ControlPlane, make_release: ReleaseFactory) -> None:
    co = obj("ClusterOperator", f"e2e-{uuid.uuid4().hex[:6]}", api="config.openshift.io/v1",
             status={"versions": [{"name": "operator", "version": VERSION}]})
    release = load_release(make_release({"0000_50_e2e_04_clusteroperator.yaml": co}, version=VERSION))
    task = make_tasks(release.manifests, Mode.INSTALL)[0]

    async def body(cluster: KubeCluster) -> str:
        return (await apply_task(cluster, task, Mode.INSTALL, DeleteTracker())).action

    assert run_with(real_crds, body) == "created"


def test_a_secret_with_string_data_is_unchanged_on_the_real_server(control_plane: ControlPlane,
                                                                   make_release: ReleaseFactory) -> None:
    """The real API server folds ``stringData`` into ``data``; a second apply of the same manifest changes
    nothing (it used to update the Secret on every sweep)."""
    namespace = f"e2e-{uuid.uuid4().hex[:8]}"
    secret = obj("Secret", "creds", namespace, stringData={"user": "admin"})
    release = load_release(make_release({"0000_50_e2e_01_secret.yaml": secret}, version=VERSION))
    task = make_tasks(release.manifests, Mode.UPDATE)[0]

    async def body(cluster: KubeCluster) -> tuple[list[str], dict[str, Any] | None]:
        await make_namespace(cluster, namespace)
        actions = [(await apply_task(cluster, task, Mode.UPDATE, DeleteTracker())).action for _ in range(3)]
        return actions, await cluster.get(Ref("", "Secret", namespace, "creds"))

    actions, live = run_with(control_plane, body)
    assert actions == ["created", "unchanged", "unchanged"]
    assert live is not None and live["data"] == {"user": "YWRtaW4="} and "stringData" not in live
