"""The acting control plane (``ControlPlane(acting=True)``): kube-controller-manager, kube-scheduler and kwok
make workloads roll out, PodDisruptionBudgets hold evictions, namespaces terminate and owned objects go.

Each test checks what only the acting components do (on the API-server-only plane none of it happens):
ReplicaSets and Pods from the Deployment controller, Nodes from the scheduler, Running from kwok's Stages,
the disruption controller's PDB status, the namespace controller, the garbage collector.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .controlplane import ControlPlane

T = TypeVar("T")
TIMEOUT = 60.0  # seconds; every wait below takes a few seconds on an idle 2-core machine


@pytest.fixture(scope="module")
def api(acting_control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    configuration = client.Configuration()
    configuration.host = acting_control_plane.server_url
    configuration.ssl_ca_cert = acting_control_plane.ca_path
    configuration.api_key = {"authorization": f"Bearer {acting_control_plane.token}"}
    with client.ApiClient(configuration) as api_client:
        yield api_client


@pytest.fixture
def ns(api: client.ApiClient) -> str:
    name = f"acting-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})

    def default_service_account() -> bool:
        try:
            core.read_namespaced_service_account("default", name)
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        return True

    # The ServiceAccount admission plugin refuses a Pod until the controller-manager has made the namespace's
    # default ServiceAccount: a test that stops the controller-manager must not race it.
    eventually("the namespace's default ServiceAccount", default_service_account)
    return name


def eventually(what: str, probe: Callable[[], T], timeout: float = TIMEOUT) -> T:
    """``probe()`` until it returns something truthy; fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: T = probe()
    while not last:
        if time.monotonic() > deadline:
            pytest.fail(f"waiting for {what}: not after {timeout:g}s (last: {last!r})")
        time.sleep(0.2)
        last = probe()
    return last


def deployment(name: str, image: str, replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }


def rolled_out(apps: client.AppsV1Api, ns: str, name: str, replicas: int) -> bool:
    """The Deployment controller's own "complete" rule (kubectl rollout status)."""
    d = apps.read_namespaced_deployment_status(name, ns)
    s = d.status
    return bool(
        s.observed_generation == d.metadata.generation
        and s.updated_replicas == replicas
        and s.available_replicas == replicas
        and (s.replicas or 0) == replicas
    )


def pods(core: client.CoreV1Api, ns: str, app: str) -> list[client.V1Pod]:
    return core.list_namespaced_pod(ns, label_selector=f"app={app}").items


def gone(read: Callable[[], object]) -> bool:
    try:
        read()
    except ApiException as e:
        if e.status == 404:
            return True
        raise
    return False


def test_a_deployment_rolls_out_and_rolls_over_to_a_new_image(api: client.ApiClient, ns: str,
                                                             acting_control_plane: ControlPlane) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    apps.create_namespaced_deployment(ns, deployment("web", "registry.invalid/web:1"))
    eventually("web to roll out 2 replicas", lambda: rolled_out(apps, ns, "web", 2))
    first = pods(core, ns, "web")
    assert {p.status.phase for p in first} == {"Running"}
    assert {p.spec.node_name for p in first} <= set(acting_control_plane.node_names)
    assert all(p.status.pod_ip for p in first)

    apps.patch_namespaced_deployment(
        "web", ns, {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "registry.invalid/web:2"}]}}}}
    )
    eventually("web to roll over to image web:2", lambda: rolled_out(apps, ns, "web", 2))
    eventually(
        "only web:2 pods, all Running",
        lambda: {(p.spec.containers[0].image, p.status.phase) for p in pods(core, ns, "web")}
        == {("registry.invalid/web:2", "Running")},
    )
    sets = apps.list_namespaced_replica_set(ns, label_selector="app=web").items
    assert sorted((rs.spec.template.spec.containers[0].image, rs.status.replicas) for rs in sets) == [
        ("registry.invalid/web:1", 0),
        ("registry.invalid/web:2", 2),
    ]
    conditions = {c.type: c for c in apps.read_namespaced_deployment_status("web", ns).status.conditions}
    assert conditions["Available"].status == "True"
    assert conditions["Progressing"].reason == "NewReplicaSetAvailable"


def test_daemonset_statefulset_and_job_roll_out(api: client.ApiClient, ns: str,
                                                acting_control_plane: ControlPlane) -> None:
    apps, batch = client.AppsV1Api(api), client.BatchV1Api(api)
    template = {"spec": {"containers": [{"name": "main", "image": "registry.invalid/agent:1"}]}}
    apps.create_namespaced_daemon_set(ns, {
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}}, **template}},
    })
    apps.create_namespaced_stateful_set(ns, {
        "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}}, **template}},
    })
    batch.create_namespaced_job(ns, {
        "metadata": {"name": "migrate"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", **template["spec"]}}},
    })
    nodes = len(acting_control_plane.node_names)

    def daemonset_ready() -> bool:
        s = apps.read_namespaced_daemon_set_status("agent", ns).status
        return s.desired_number_scheduled == nodes and s.number_available == nodes and s.updated_number_scheduled == nodes

    eventually(f"one agent pod Available on each of the {nodes} nodes", daemonset_ready)
    agents = pods(client.CoreV1Api(api), ns, "agent")
    assert sorted(p.spec.node_name for p in agents) == sorted(acting_control_plane.node_names)
    eventually("db's 2 ordered replicas ready",
               lambda: apps.read_namespaced_stateful_set_status("db", ns).status.ready_replicas == 2)
    assert sorted(p.metadata.name for p in pods(client.CoreV1Api(api), ns, "db")) == ["db-0", "db-1"]
    job = eventually("the Job to complete",
                     lambda: (j := batch.read_namespaced_job_status("migrate", ns)).status.succeeded == 1 and j)
    assert {c.type: c.status for c in job.status.conditions}.get("Complete") == "True"


def test_a_pdb_holds_an_eviction_until_it_allows_one(api: client.ApiClient, ns: str) -> None:
    apps, core, policy = client.AppsV1Api(api), client.CoreV1Api(api), client.PolicyV1Api(api)
    apps.create_namespaced_deployment(ns, deployment("guarded", "registry.invalid/guarded:1"))
    eventually("guarded to roll out", lambda: rolled_out(apps, ns, "guarded", 2))
    policy.create_namespaced_pod_disruption_budget(ns, {
        "metadata": {"name": "guarded"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}},
    })

    def budget(allowed: int) -> bool:
        pdb = policy.read_namespaced_pod_disruption_budget_status("guarded", ns)
        s = pdb.status
        return bool(s and s.observed_generation == pdb.metadata.generation and s.current_healthy == 2
                    and s.disruptions_allowed == allowed)

    eventually("the disruption controller to allow no disruption", lambda: budget(0))
    victim = pods(core, ns, "guarded")[0].metadata.name
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": victim, "namespace": ns}}
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_eviction(victim, ns, eviction)
    assert refused.value.status == 429
    assert "disruption budget guarded" in refused.value.body
    assert core.read_namespaced_pod(victim, ns).metadata.deletion_timestamp is None

    policy.patch_namespaced_pod_disruption_budget("guarded", ns, {"spec": {"minAvailable": 1}})
    eventually("the disruption controller to allow one disruption", lambda: budget(1))
    core.create_namespaced_pod_eviction(victim, ns, eviction)
    eventually(f"the evicted pod {victim} to be gone (kwok's pod-delete stage)",
               lambda: gone(lambda: core.read_namespaced_pod(victim, ns)))
    eventually("a replacement pod and 2 available replicas again", lambda: rolled_out(apps, ns, "guarded", 2)
               and victim not in {p.metadata.name for p in pods(core, ns, "guarded")})


def test_a_deleted_namespace_terminates_with_its_contents(api: client.ApiClient, ns: str) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    apps.create_namespaced_deployment(ns, deployment("doomed", "registry.invalid/doomed:1"))
    core.create_namespaced_config_map(ns, {"metadata": {"name": "settings"}, "data": {"a": "1"}})
    eventually("doomed to roll out", lambda: rolled_out(apps, ns, "doomed", 2))
    eventually("the serviceaccount controller's default ServiceAccount",
               lambda: not gone(lambda: core.read_namespaced_service_account("default", ns)))

    core.delete_namespace(ns)
    assert core.read_namespace(ns).status.phase == "Terminating"
    eventually(f"namespace {ns} to be gone", lambda: gone(lambda: core.read_namespace(ns)))


def test_owned_objects_are_collected(api: client.ApiClient, ns: str) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "owned", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}]}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "bystander"}})
    core.delete_namespaced_config_map("owner", ns)
    eventually("the garbage collector to delete the owned ConfigMap",
               lambda: gone(lambda: core.read_namespaced_config_map("owned", ns)))
    assert core.read_namespaced_config_map("bystander", ns).metadata.name == "bystander"

    apps.create_namespaced_deployment(ns, deployment("temp", "registry.invalid/temp:1"))
    eventually("temp to roll out", lambda: rolled_out(apps, ns, "temp", 2))
    apps.delete_namespaced_deployment("temp", ns)  # background propagation: the collector removes the rest
    eventually("temp's ReplicaSet and Pods to be collected",
               lambda: not apps.list_namespaced_replica_set(ns, label_selector="app=temp").items
               and not pods(core, ns, "temp"))


def test_pods_wait_while_kwok_is_down_and_run_once_it_is_back(api: client.ApiClient, ns: str,
                                                             acting_control_plane: ControlPlane) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    acting_control_plane.kill_component("kwok")
    try:
        apps.create_namespaced_deployment(ns, deployment("patient", "registry.invalid/patient:1"))
        scheduled = eventually("the scheduler to bind both pods",
                               lambda: (ps := pods(core, ns, "patient")) and len(ps) == 2
                               and all(p.spec.node_name for p in ps) and ps)
        # Nothing but kwok moves a Pod out of Pending: with kwok down they stay there.
        assert {p.status.phase for p in scheduled} == {"Pending"}
        assert apps.read_namespaced_deployment_status("patient", ns).status.available_replicas is None
    finally:
        acting_control_plane.start_component("kwok")
    eventually("patient to roll out once kwok is back", lambda: rolled_out(apps, ns, "patient", 2))
    assert {p.status.phase for p in pods(core, ns, "patient")} == {"Running"}


def test_components_belong_to_the_acting_plane_only(control_plane: ControlPlane) -> None:
    assert not control_plane.acting and control_plane.node_names == []
    with pytest.raises(RuntimeError, match=r"only an acting control plane"):
        control_plane.kill_component("kwok")


def test_a_deployment_waits_while_the_controller_manager_is_down(api: client.ApiClient, ns: str,
                                                                  acting_control_plane: ControlPlane) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    acting_control_plane.kill_component("kube-controller-manager")
    try:
        apps.create_namespaced_deployment(ns, deployment("stalled", "registry.invalid/stalled:1"))
        # A bare Pod, created after the Deployment, goes through the scheduler and kwok to Running ...
        core.create_namespaced_pod(ns, {"metadata": {"name": "bare", "labels": {"app": "bare"}},
                                        "spec": {"containers": [{"name": "main", "image": "registry.invalid/bare:1"}]}})
        eventually("the bare pod to run", lambda: core.read_namespaced_pod("bare", ns).status.phase == "Running")
        # ... while nothing makes the Deployment's ReplicaSet: that is the controller-manager's work.
        assert apps.list_namespaced_replica_set(ns, label_selector="app=stalled").items == []
        assert apps.read_namespaced_deployment_status("stalled", ns).status.observed_generation is None
    finally:
        acting_control_plane.start_component("kube-controller-manager")
    eventually("stalled to roll out once the controller-manager is back", lambda: rolled_out(apps, ns, "stalled", 2))
