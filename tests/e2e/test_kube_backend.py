"""KubeCluster against a real kube-apiserver v1.37 + etcd: the Cluster protocol's semantics on a real server.

CRUD with resourceVersion conflicts, the status subresource, discovery refreshed when a CRD becomes
Established, the error classes of the CVO's reason table, watches (by name, across an API server
restart, after a 410), requests retried across a restart, and no thread left after close().
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from cvo.clock import WallClock
from cvo.cluster.api import ApiError, ApiErrorKind, EventType, Ref, WatchEvent
from cvo.cluster.intercept import crd_establisher
from cvo.cluster.kube import KubeCluster
from cvo.controller.fence import FencedCluster
from cvo.controller.lease import LeaderElector, LeaseLost, LeaseTimings, lease_ref
from cvo.payload.graph import Mode, Task, make_tasks
from cvo.payload.loader import load_release
from cvo.runner.apply import DeleteTracker, apply_task
from cvo.runner.reasons import wrap_apply_error
from tests.support.helpers import ReleaseFactory, obj

from .conftest import kube_threads, make_namespace, run_with
from .controlplane import ControlPlane

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")


def configmap(namespace: str, name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": dict(data)}


def crd(group: str, kind: str, *, status: bool = True, scope: str = "Namespaced",
        versions: tuple[str, ...] = ("v1",)) -> dict[str, Any]:
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group, "scope": scope,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [{"name": v, "served": True, "storage": i == 0,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                          **({"subresources": {"status": {}}} if status else {})}
                         for i, v in enumerate(versions)],
        },
    }


def unique_group() -> str:
    return f"g{uuid.uuid4().hex[:8]}.e2e.cvo.test"


async def wait_established(cluster: KubeCluster, name: str, timeout: float = 30.0) -> None:
    """Until CRD ``name`` is Established, woken by a watch on it."""

    def established(o: dict[str, Any] | None) -> bool:
        return any(c.get("type") == "Established" and c.get("status") == "True"
                   for c in ((o or {}).get("status") or {}).get("conditions") or [])

    stream = cluster.watch(*CRD, name=name)
    try:
        if established(await cluster.get(Ref(*CRD, "", name))):
            return
        async with asyncio.timeout(timeout):
            async for event in stream:
                if established(event.obj):
                    return
    finally:
        await stream.aclose()  # type: ignore[attr-defined]


async def next_events(stream: AsyncIterator[WatchEvent], count: int, timeout: float = 20.0) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    async with asyncio.timeout(timeout):
        while len(out) < count:
            out.append(await anext(stream))
    return out


def compact_etcd(cp: ControlPlane) -> None:
    """Compact etcd's history up to now (etcd's JSON gateway), so older resourceVersions are gone (410)."""
    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(cp.etcd_url + path, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    revision = post("/v3/kv/range", {"key": "AA==", "limit": 1})["header"]["revision"]
    post("/v3/kv/compaction", {"revision": revision, "physical": True})


def with_token(cluster: KubeCluster, token: str) -> Any:
    config = copy.deepcopy(cluster.configuration)
    config.refresh_api_key_hook = None  # the kubeconfig loader's hook would put the kubeconfig's token back
    config.api_key = {"BearerToken": token}
    return config


def names(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(str(e.type), e.obj["metadata"]["name"]) for e in events]


# --- CRUD ----------------------------------------------------------------------------------------------------


def test_crud_with_resource_versions_and_conflicts(control_plane: ControlPlane, namespace: str) -> None:
    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        ref = Ref("", "ConfigMap", namespace, "cm")
        assert await cluster.get(ref) is None

        created = await cluster.create(configmap(namespace, "cm", a="1"))
        assert created["metadata"]["resourceVersion"] and created["metadata"]["uid"]
        assert (created["apiVersion"], created["kind"]) == ("v1", "ConfigMap")
        with pytest.raises(ApiError) as exists:
            await cluster.create(configmap(namespace, "cm", a="1"))
        assert exists.value.kind is ApiErrorKind.ALREADY_EXISTS
        assert 'configmaps "cm" already exists' in str(exists.value)

        live = await cluster.get(ref)
        assert live is not None and live["data"] == {"a": "1"}
        live["data"]["a"] = "2"
        updated = await cluster.update(live)
        assert updated["data"] == {"a": "2"}
        assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]

        stale = {**created, "data": {"a": "3"}}  # carries the first resourceVersion
        with pytest.raises(ApiError) as conflict:
            await cluster.update(stale)
        assert conflict.value.kind is ApiErrorKind.CONFLICT
        assert conflict.value.ref == ref
        assert "the object has been modified" in str(conflict.value)
        assert (await cluster.get(ref) or {})["data"] == {"a": "2"}  # the stale write changed nothing

        unconditional = copy.deepcopy(stale)
        del unconditional["metadata"]["resourceVersion"]
        assert (await cluster.update(unconditional))["data"] == {"a": "3"}

        assert await cluster.delete(ref) is True
        assert await cluster.delete(ref) is False
        assert await cluster.get(ref) is None
        with pytest.raises(ApiError) as missing:
            await cluster.update(updated)
        assert missing.value.kind is ApiErrorKind.NOT_FOUND

    run_with(control_plane, body)


def test_list_fills_in_the_type_and_filters_by_namespace(control_plane: ControlPlane, namespace: str) -> None:
    other = namespace + "-b"

    async def body(cluster: KubeCluster) -> None:
        for ns in (namespace, other):
            await make_namespace(cluster, ns)
            for i in range(3):
                await cluster.create(configmap(ns, f"cm{i}"))
        mine = await cluster.list("", "ConfigMap", namespace)
        assert sorted(o["metadata"]["name"] for o in mine) == ["cm0", "cm1", "cm2"]
        assert all((o["apiVersion"], o["kind"]) == ("v1", "ConfigMap") for o in mine)
        everywhere = await cluster.list("", "ConfigMap")
        assert {o["metadata"]["namespace"] for o in everywhere} >= {namespace, other}
        assert await cluster.list("nothing.example.com", "Thing") == []
        assert await cluster.get(Ref("nothing.example.com", "Thing", "", "x")) is None
        assert await cluster.delete(Ref("nothing.example.com", "Thing", "", "x")) is False

    run_with(control_plane, body)


def test_cluster_scoped_objects_drop_a_namespace_and_namespaced_ones_need_one(control_plane: ControlPlane) -> None:
    name = f"e2e-{uuid.uuid4().hex[:8]}"

    async def body(cluster: KubeCluster) -> None:
        created = await cluster.create({"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": name, "namespace": "ignored"}})
        assert "namespace" not in created["metadata"]
        assert await cluster.get(Ref("", "Namespace", "ignored", name)) is not None
        with pytest.raises(ApiError) as err:
            await cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
        assert err.value.kind is ApiErrorKind.INVALID
        assert "metadata.namespace: Required value" in str(err.value)

    run_with(control_plane, body)


# --- the status subresource ------------------------------------------------------------------------------------


def test_status_goes_through_the_status_subresource(control_plane: ControlPlane, namespace: str) -> None:
    group = unique_group()

    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        await cluster.create(crd(group, "Widget"))
        await cluster.create(crd(group, "Gadget", status=False))
        await wait_established(cluster, f"widgets.{group}")
        await wait_established(cluster, f"gadgets.{group}")

        widget = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": namespace},
                  "spec": {"size": 1}, "status": {"phase": "Requested"}}
        created = await cluster.create(widget)
        assert "status" not in created  # dropped on create, as for every kind with a status subresource

        with_status = {**created, "status": {"phase": "Ready"}}
        written = await cluster.update_status(with_status)
        assert written["status"] == {"phase": "Ready"}
        assert written["metadata"]["generation"] == created["metadata"]["generation"]

        via_main = {**written, "spec": {"size": 2}, "status": {"phase": "Ignored"}}
        updated = await cluster.update(via_main)
        assert updated["spec"] == {"size": 2} and updated["status"] == {"phase": "Ready"}
        assert updated["metadata"]["generation"] == created["metadata"]["generation"] + 1

        with pytest.raises(ApiError) as conflict:
            await cluster.update_status({**written, "status": {"phase": "Stale"}})
        assert conflict.value.kind is ApiErrorKind.CONFLICT

        # A kind without a status subresource: update_status writes the main resource.
        gadget = await cluster.create({"apiVersion": f"{group}/v1", "kind": "Gadget",
                                       "metadata": {"name": "g", "namespace": namespace}, "spec": {}})
        written = await cluster.update_status({**gadget, "status": {"phase": "Ready"}})
        assert written["status"] == {"phase": "Ready"}
        assert (await cluster.get(Ref(group, "Gadget", namespace, "g")) or {})["status"] == {"phase": "Ready"}

    run_with(control_plane, body)


# --- discovery -------------------------------------------------------------------------------------------------


def test_a_kind_is_served_once_its_crd_is_established(control_plane: ControlPlane, namespace: str,
                                                      make_release: ReleaseFactory) -> None:
    group = unique_group()
    release = load_release(make_release({
        "0000_50_e2e_01_widget.yaml": obj("Widget", "w", namespace, api=f"{group}/v1", spec={"size": 1}),
    }))
    task = make_tasks(release.manifests, Mode.INSTALL)[0]

    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        assert not await cluster.serves(f"{group}/v1", "Widget")
        with pytest.raises(ApiError) as missing:
            await apply_task(cluster, task, Mode.INSTALL, DeleteTracker())
        assert missing.value.kind is ApiErrorKind.NO_KIND_MATCH

        await cluster.create(crd(group, "Widget", versions=("v1", "v1beta1")))
        await wait_established(cluster, f"widgets.{group}")
        fetches = cluster.discovery.fetches
        outcome = await apply_task(cluster, task, Mode.INSTALL, DeleteTracker())  # no explicit refresh
        assert outcome.action == "created"
        assert cluster.discovery.fetches - fetches <= 1  # one group-version fetch, not a full discovery
        assert await cluster.serves(f"{group}/v1beta1", "Widget")
        assert (await cluster.get(Ref(group, "Widget", namespace, "w")) or {})["apiVersion"] == f"{group}/v1"

        # A CRD deleted: its kind stops being served after the next look-up.
        assert await cluster.delete(Ref(*CRD, "", f"widgets.{group}"))
        deadline = time.monotonic() + 20
        while await cluster.serves(f"{group}/v1", "Widget"):
            cluster.discovery.refresh()  # a served kind is never looked up again on its own
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)

    run_with(control_plane, body)


def test_a_crd_watch_feeds_discovery_and_saves_the_crd_reads(control_plane: ControlPlane, namespace: str) -> None:
    """While every CRD is watched, a CRD this client wrote is registered by the watch event that says it is
    Established: a look-up of its kind meanwhile does not read the CRD (an install's ~190 custom resources
    each read it before), and once the event is in, the kind is served without a request."""
    group = unique_group()

    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        stream = cluster.watch(*CRD)
        try:
            await asyncio.sleep(0.5)  # the watch is open
            name = f"widgets.{group}"
            await cluster.create(crd(group, "Widget"))
            requests = cluster.stats.requests
            await cluster.serves(f"{group}/v1", "Widget")  # likely not yet: one discovery fetch, no CRD read
            assert cluster.stats.requests - requests <= 1
            async with asyncio.timeout(30):
                async for event in stream:
                    if event.obj["metadata"]["name"] == name and any(
                            c.get("type") == "Established" and c.get("status") == "True"
                            for c in (event.obj.get("status") or {}).get("conditions") or []):
                        break
            requests = cluster.stats.requests
            assert await cluster.serves(f"{group}/v1", "Widget")
            assert cluster.stats.requests == requests  # the watch registered it: no request
            created = await cluster.create(obj("Widget", "w", namespace, api=f"{group}/v1", spec={"size": 1}))
            assert created["kind"] == "Widget"
        finally:
            await stream.aclose()  # type: ignore[attr-defined]

    run_with(control_plane, body)


def conditions_of(crd_obj: dict[str, Any] | None) -> dict[str, str]:
    return {c.get("type"): c.get("status") for c in ((crd_obj or {}).get("status") or {}).get("conditions") or []}


def hold_establishing(group: str) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy (and its binding) refusing any status write that marks a CRD of ``group``
    Established: the API server's establishing controller (which goes through admission) cannot finish."""
    name = f"hold-{group}"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{
                     "apiGroups": ["apiextensions.k8s.io"], "apiVersions": ["*"], "operations": ["UPDATE"],
                     "resources": ["customresourcedefinitions/status"]}]},
                 "matchConditions": [{"name": "group", "expression": f"object.spec.group == '{group}'"}],
                 "validations": [{"message": "held by the test",
                                  "expression": "!has(object.status.conditions) || !object.status.conditions.exists("
                                                "c, c.type == 'Established' && c.status == 'True')"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}
    return [policy, binding]


async def hold_in_force(cluster: KubeCluster, group: str) -> list[dict[str, Any]]:
    """Create :func:`hold_establishing`'s policy and wait until it is in force: until a dry run of the write it
    must refuse is refused (on another CRD of the group, which may or may not be Established by then)."""
    held = hold_establishing(group)
    for item in held:
        await cluster.create(item)
    probe_name = f"gadgets.{group}"
    await cluster.create(crd(group, "Gadget"))
    async with asyncio.timeout(30):
        while True:
            probe = await cluster.get(Ref(*CRD, "", probe_name)) or {}
            probe.setdefault("status", {})["conditions"] = [
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "probe",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}]
            try:
                await cluster._call("PUT", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{probe_name}"
                                    "/status", ref=None, what="probe", body=probe, query=[("dryRun", "All")])
            except ApiError as err:
                if "held by the test" in str(err):
                    return held
            await asyncio.sleep(0.2)


async def accepted_not_established(cluster: KubeCluster, group: str, kind: str) -> str:
    """Create the CRD of ``kind`` while the hold is in force; its name once the server accepted its names
    and (held) did not establish it."""
    name = f"{kind.lower()}s.{group}"
    await cluster.create(crd(group, kind))
    async with asyncio.timeout(30):
        while conditions_of(await cluster.get(Ref(*CRD, "", name))).get("NamesAccepted") != "True":
            await asyncio.sleep(0.1)
    await asyncio.sleep(1)  # the establishing controller's write is refused (and retried, refused again)
    assert conditions_of(await cluster.get(Ref(*CRD, "", name))).get("Established") == "False"
    return name


def test_a_crd_a_restart_left_unestablished_is_nudged(control_plane: ControlPlane, namespace: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The API server's establishing controller is queued only by an update of a CRD whose names are
    accepted; a server restarted between the two controllers' writes leaves the CRD unestablished (its kinds
    unserved) until the informer's resync, 5 minutes later.  Asking whether the kind is served sends nothing;
    the wait for it asks the cluster to establish the CRD (as the sweep's wait does), which updates it once it
    has waited :data:`CRD_STALL` (an annotation set, then removed), and the kind is served seconds later.

    The state is made for certain: an admission policy holds the establishing controller's write, the
    server restarts (its queue is gone), and the policy is removed."""
    from cvo.cluster.kube import cluster as kube_cluster

    monkeypatch.setattr(kube_cluster, "CRD_STALL", 2.0)
    group = unique_group()

    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        held = await hold_in_force(cluster, group)
        name = await accepted_not_established(cluster, group, "Widget")
        await asyncio.to_thread(control_plane.restart_apiserver)
        for item in reversed(held):
            await cluster.delete(Ref.of(item))
        await asyncio.sleep(3)  # nothing queues the CRD now: it stays as it is
        live = await cluster.get(Ref(*CRD, "", name))
        assert conditions_of(live) == {"NamesAccepted": "True", "Established": "False"}
        version = live["metadata"]["resourceVersion"]

        for _ in range(4):  # past the stall: discovery is only read
            assert not await cluster.serves(f"{group}/v1", "Widget")
            await asyncio.sleep(1.0)
        live = await cluster.get(Ref(*CRD, "", name))
        assert cluster.stats.nudged == 0 and live["metadata"]["resourceVersion"] == version

        establisher = crd_establisher(cluster)
        assert establisher is cluster
        started = time.monotonic()
        async with asyncio.timeout(30):
            while not await cluster.serves(f"{group}/v1", "Widget"):  # as a custom resource waiting for it does
                await establisher.establish(name)
                await asyncio.sleep(1.0)
        served_after = time.monotonic() - started
        assert cluster.stats.nudged == 1
        live = await cluster.get(Ref(*CRD, "", name))
        assert conditions_of(live)["Established"] == "True"
        assert kube_cluster.NUDGE_ANNOTATION not in (live["metadata"].get("annotations") or {})
        created = await cluster.create(obj("Widget", "w", namespace, api=f"{group}/v1", spec={"size": 1}))
        assert created["kind"] == "Widget"
        print(f"kind served {served_after:.1f}s after the first request to establish (stall threshold 2s)")

    run_with(control_plane, body)


def test_a_fenced_replica_that_lost_the_lease_sends_no_nudge(control_plane: ControlPlane, namespace: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The nudge is a write: through a replica's fence it needs the lease.  A replica whose last renewal is
    older than the renew deadline sends nothing at all (no request); the leader, on the same CRD, nudges it."""
    from cvo.cluster.kube import cluster as kube_cluster

    monkeypatch.setattr(kube_cluster, "CRD_STALL", 0.0)  # due at the first request: only the fence can stop it
    group = unique_group()
    timings = LeaseTimings(lease_duration=3.0, renew_deadline=2.0, retry_period=1.0)

    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        held = await hold_in_force(cluster, group)
        name = await accepted_not_established(cluster, group, "Widget")
        version = (await cluster.get(Ref(*CRD, "", name)) or {})["metadata"]["resourceVersion"]

        stale = LeaderElector(cluster, WallClock(), "stale", timings, ref=lease_ref(namespace, "stale"))
        await stale.acquire()
        async with asyncio.timeout(10):
            while stale.may_write():  # nobody renews: stale once the renew deadline has passed
                await asyncio.sleep(0.1)
        fenced = FencedCluster(cluster, stale)
        establisher = crd_establisher(fenced)
        assert establisher is fenced
        requests = cluster.stats.requests
        with pytest.raises(LeaseLost):
            await establisher.establish(name)
        assert cluster.stats.requests == requests and cluster.stats.nudged == 0 and fenced.refused == 1
        assert (await cluster.get(Ref(*CRD, "", name)) or {})["metadata"]["resourceVersion"] == version

        leader = LeaderElector(cluster, WallClock(), "leader", timings, ref=lease_ref(namespace, "leader"))
        await leader.acquire()
        assert await FencedCluster(cluster, leader).establish(name)  # the same CRD, nudged by the leader
        assert cluster.stats.nudged == 1
        for item in reversed(held):
            await cluster.delete(Ref.of(item))

    run_with(control_plane, body)


def test_an_unserved_kind_is_no_kind_match_with_the_cvo_reason(control_plane: ControlPlane, namespace: str,
                                                               make_release: ReleaseFactory) -> None:
    route = obj("Route", "console", namespace, api="route.openshift.io/v1", spec={"to": {"name": "console"}})
    release = load_release(make_release({"0000_50_console_05_route.yaml": route}))
    task: Task = make_tasks(release.manifests, Mode.INSTALL)[0]

    async def body(cluster: KubeCluster) -> None:
        assert not await cluster.serves("route.openshift.io/v1", "Route")
        with pytest.raises(ApiError) as err:
            await cluster.create(route)
        assert err.value.kind is ApiErrorKind.NO_KIND_MATCH
        assert str(err.value) == 'no matches for kind "Route" in version "route.openshift.io/v1"'
        assert err.value.ref == Ref("route.openshift.io", "Route", namespace, "console")

        with pytest.raises(ApiError) as applied:
            await apply_task(cluster, task, Mode.INSTALL, DeleteTracker())
        wrapped = wrap_apply_error(applied.value, str(task), task.manifest.path)
        assert wrapped.reason == "UpdatePayloadResourceTypeMissing"
        assert wrapped.message == (f"Could not update {task}: the server does not recognize this resource, "
                                   f"check extension API servers")
        assert f"route {namespace}/console" in str(task) or "console" in str(task)
        assert task.manifest.path in wrapped.nested and "route.openshift.io/v1" in wrapped.nested

    run_with(control_plane, body)


def test_reapplying_unchanged_manifests_changes_nothing(control_plane: ControlPlane, namespace: str,
                                                        make_release: ReleaseFactory) -> None:
    """As in the 5.0 payload: 12 of its objects are "updated" on every reconcile against kube-apiserver 1.37."""
    group = unique_group()
    definition = crd(group, "Widget")
    definition["metadata"]["annotations"] = {"include.release.openshift.io/self-managed-high-availability": "true"}
    definition["spec"]["preserveUnknownFields"] = False
    files = {
        "0000_50_e2e_00_namespace.yaml": obj("Namespace", namespace),
        "0000_50_e2e_01_config.yaml": obj("ConfigMap", "empty", namespace, data={}),
        "0000_50_e2e_02_role.yaml": obj("ClusterRole", f"{namespace}-nothing", api="rbac.authorization.k8s.io/v1",
                                        rules=[]),
        "0000_50_e2e_03_policy.yaml": obj("NetworkPolicy", "default-deny", namespace, api="networking.k8s.io/v1",
                                          spec={"podSelector": {}, "ingress": [], "policyTypes": ["Ingress"]}),
        "0000_50_e2e_04_crd.yaml": definition,
    }
    tasks = make_tasks(load_release(make_release(files)).manifests, Mode.RECONCILE)

    async def body(cluster: KubeCluster) -> dict[str, str]:
        for task in sorted(tasks, key=lambda t: t.index):
            await apply_task(cluster, task, Mode.RECONCILE, DeleteTracker())
        return {str(t): (await apply_task(cluster, t, Mode.RECONCILE, DeleteTracker())).action for t in tasks}

    second = run_with(control_plane, body)
    assert {task: action for task, action in second.items() if action != "unchanged"} == {}


# --- errors ----------------------------------------------------------------------------------------------------


def test_api_errors_map_to_the_cvo_classes(control_plane: ControlPlane, namespace: str) -> None:
    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        with pytest.raises(ApiError) as invalid:
            await cluster.create(configmap(namespace, "Not_A_DNS_Name"))
        assert invalid.value.kind is ApiErrorKind.INVALID
        assert 'ConfigMap "Not_A_DNS_Name" is invalid' in str(invalid.value)
        assert wrap_apply_error(invalid.value, "t").reason == "UpdatePayloadResourceInvalid"

        with pytest.raises(ApiError) as no_namespace:
            await cluster.create(configmap(namespace + "-missing", "cm"))
        assert no_namespace.value.kind is ApiErrorKind.NOT_FOUND
        assert f'namespaces "{namespace}-missing" not found' in str(no_namespace.value)
        assert no_namespace.value.namespace_missing == f"{namespace}-missing"  # from the Status details
        with pytest.raises(ApiError) as not_there:
            await cluster.update({**configmap(namespace, "not-there"), "metadata": {
                "name": "not-there", "namespace": namespace, "resourceVersion": "1"}})
        assert not_there.value.kind is ApiErrorKind.NOT_FOUND and not_there.value.namespace_missing is None

        with pytest.raises(ApiError) as bad_request:
            await cluster.create({**configmap(namespace, "numbers"), "data": {"a": 1}})
        assert bad_request.value.kind is ApiErrorKind.OTHER  # 400: "anything else" in the reason table

        # Forbidden: a service account's token (TokenRequest) without any RBAC rule.
        await cluster.create({"apiVersion": "v1", "kind": "ServiceAccount",
                              "metadata": {"name": "nobody", "namespace": namespace}})
        token = await asyncio.to_thread(
            cluster.call_blocking, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/nobody/token",
            ref=None, what="token request",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                  "spec": {"expirationSeconds": 600}})
        config = with_token(cluster, f"Bearer {(token or {})['status']['token']}")
        limited = KubeCluster(config)
        try:
            with pytest.raises(ApiError) as forbidden:
                await limited.create(configmap(namespace, "cm"))
            assert forbidden.value.kind is ApiErrorKind.FORBIDDEN
            assert f"system:serviceaccount:{namespace}:nobody" in str(forbidden.value)
            assert 'cannot create resource "configmaps"' in str(forbidden.value)
            assert wrap_apply_error(forbidden.value, "t").reason == "UpdatePayloadResourceForbidden"
            assert limited.stats.retries == 0  # a 4xx is never retried
        finally:
            await limited.close()

        config = with_token(cluster, "Bearer not-a-token")
        stranger = KubeCluster(config)
        try:
            with pytest.raises(ApiError) as unauthorized:
                await stranger.connect()
            assert unauthorized.value.kind is ApiErrorKind.UNAUTHORIZED
            assert "not-a-token" not in str(unauthorized.value)
        finally:
            await stranger.close()

    run_with(control_plane, body)


def test_credentials_are_asked_for_once_a_second_not_per_request(control_plane: ControlPlane, namespace: str) -> None:
    """The kubeconfig loader's refresh hook ran on every request (and re-read the proxy variables of the
    whole environment each time); the transport asks for the credentials at most once a second, and a
    changed token is sent once that second is over."""
    async def body(cluster: KubeCluster) -> None:
        config = cluster.configuration
        hook = config.refresh_api_key_hook
        calls = []

        def counting(c: Any) -> None:
            calls.append(1)
            if hook is not None:
                hook(c)

        config.refresh_api_key_hook = counting
        cluster.transport._auth_until = float("-inf")  # the second is over
        await make_namespace(cluster, namespace)
        for i in range(20):
            await cluster.create(configmap(namespace, f"cm-{i}"))
        assert len(calls) == 1

        config.refresh_api_key_hook = None
        config.api_key = {"BearerToken": "Bearer not-a-token"}
        assert (await cluster.get(Ref("", "ConfigMap", namespace, "cm-0"))) is not None  # within the second
        cluster.transport._auth_until = float("-inf")
        with pytest.raises(ApiError) as unauthorized:
            await cluster.get(Ref("", "ConfigMap", namespace, "cm-0"))
        assert unauthorized.value.kind is ApiErrorKind.UNAUTHORIZED

    run_with(control_plane, body)


def test_a_body_orjson_cannot_encode_is_invalid_and_sends_nothing(control_plane: ControlPlane, namespace: str) -> None:
    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        sent = cluster.stats.requests
        with pytest.raises(ApiError) as invalid:
            await cluster.create({**configmap(namespace, "cm"), "data": {"a": object()}})
        assert invalid.value.kind is ApiErrorKind.INVALID
        assert "not representable as JSON" in str(invalid.value)
        assert cluster.stats.requests == sent

    run_with(control_plane, body)


# --- watches ---------------------------------------------------------------------------------------------------


def test_watch_of_one_name_sees_added_modified_deleted(control_plane: ControlPlane, namespace: str) -> None:
    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        stream = cluster.watch("", "ConfigMap", namespace, "mine")
        await cluster.create(configmap(namespace, "other"))
        await cluster.create(configmap(namespace, "mine", v="1"))
        live = await cluster.get(Ref("", "ConfigMap", namespace, "mine")) or {}
        await cluster.update({**live, "data": {"v": "2"}})
        await cluster.delete(Ref("", "ConfigMap", namespace, "other"))
        await cluster.delete(Ref("", "ConfigMap", namespace, "mine"))
        events = await next_events(stream, 3)
        assert names(events) == [("ADDED", "mine"), ("MODIFIED", "mine"), ("DELETED", "mine")]
        assert events[1].obj["data"] == {"v": "2"}
        assert (events[0].obj["apiVersion"], events[0].obj["kind"]) == ("v1", "ConfigMap")
        with pytest.raises(TimeoutError):
            await next_events(stream, 1, timeout=0.5)
        await stream.aclose()  # type: ignore[attr-defined]

    run_with(control_plane, body)


def test_a_watch_starts_from_the_clients_last_read(control_plane: ControlPlane, namespace: str) -> None:
    """A change between a waiter's read and its watch is delivered (the Notifier's mark-read-wait)."""

    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        await cluster.create(configmap(namespace, "cm", v="1"))  # the client's last response
        other = KubeCluster(copy.deepcopy(cluster.configuration))
        try:
            live = await other.get(Ref("", "ConfigMap", namespace, "cm")) or {}
            await other.update({**live, "data": {"v": "2"}})  # someone else, before the watch exists
        finally:
            await other.close()
        stream = cluster.watch("", "ConfigMap", namespace)
        events = await next_events(stream, 1)
        assert names(events) == [("MODIFIED", "cm")] and events[0].obj["data"] == {"v": "2"}
        await stream.aclose()  # type: ignore[attr-defined]

    run_with(control_plane, body)


def test_watch_relists_after_410_gone(control_plane: ControlPlane, namespace: str) -> None:
    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        old = await cluster.create(configmap(namespace, "old"))
        await cluster.create(configmap(namespace, "before"))
        await asyncio.to_thread(compact_etcd, control_plane)  # what the API server does every 5 minutes
        await asyncio.to_thread(control_plane.restart_apiserver)  # and a fresh watch cache: "old" is history
        cluster._max_rv = int(old["metadata"]["resourceVersion"])  # as if the client last read "old"
        stream = cluster.watch("", "ConfigMap", namespace)
        events = await next_events(stream, 1)
        assert names(events) == [("ADDED", "before")]  # the re-list's news
        await cluster.create(configmap(namespace, "after"))
        assert names(await next_events(stream, 1)) == [("ADDED", "after")]
        (thread,) = [t for t in cluster._watch_threads if t.is_alive()]
        assert thread.relists == 1
        await stream.aclose()  # type: ignore[attr-defined]

    run_with(control_plane, body)


def test_watch_waits_for_its_kind_to_be_served(control_plane: ControlPlane, namespace: str) -> None:
    group = unique_group()

    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        stream = cluster.watch(group, "Widget", namespace)
        await cluster.create(crd(group, "Widget"))
        await wait_established(cluster, f"widgets.{group}")
        await cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                              "metadata": {"name": "w", "namespace": namespace}, "spec": {}})
        events = await next_events(stream, 1, timeout=30)
        assert names(events) == [("ADDED", "w")]
        await stream.aclose()  # type: ignore[attr-defined]

    run_with(control_plane, body)


def test_watch_survives_an_api_server_restart(control_plane: ControlPlane, namespace: str) -> None:
    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        stream = cluster.watch("", "ConfigMap", namespace)
        await cluster.create(configmap(namespace, "before"))
        assert names(await next_events(stream, 1)) == [("ADDED", "before")]

        seconds = await asyncio.to_thread(control_plane.restart_apiserver)
        created = await cluster.create(configmap(namespace, "after"))
        live = await cluster.get(Ref("", "ConfigMap", namespace, "before")) or {}
        await cluster.update({**live, "data": {"x": "y"}})
        events = await next_events(stream, 2, timeout=30)
        assert names(events) == [("ADDED", "after"), ("MODIFIED", "before")]
        assert events[0].obj["metadata"]["uid"] == created["metadata"]["uid"]
        (thread,) = [t for t in cluster._watch_threads if t.is_alive()]
        assert thread.restarts >= 1
        print(f"restart took {seconds:.2f}s; watch connections after the first: {thread.restarts}")
        await stream.aclose()  # type: ignore[attr-defined]

    run_with(control_plane, body)


def test_requests_ride_out_an_api_server_restart(control_plane: ControlPlane, namespace: str) -> None:
    from cvo.cluster.kube import RetryPolicy

    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        await asyncio.to_thread(control_plane.kill_apiserver)
        pending = asyncio.create_task(cluster.create(configmap(namespace, "during")))
        await asyncio.sleep(0.3)
        assert not pending.done()  # retrying: connection refused is TIMEOUT, a transient class
        await asyncio.to_thread(control_plane.start_apiserver)
        created = await asyncio.wait_for(pending, 60)
        assert created["metadata"]["name"] == "during"
        assert cluster.stats.retries >= 1

    # Retries for about a minute (the default's 5.75 s cover a restart on an idle machine, not on a busy one):
    # the request certainly outlasts the restart, however long the server takes to come back.
    run_with(control_plane, body, retry=RetryPolicy(attempts=60, initial=0.25, cap=1.0))


def test_a_dead_server_is_cluster_down_after_the_retries(control_plane: ControlPlane) -> None:
    from cvo.cluster.kube import RetryPolicy

    async def body(cluster: KubeCluster) -> None:
        config = copy.deepcopy(cluster.configuration)
        config.refresh_api_key_hook = None  # it would put the kubeconfig's server back
        config.host = "https://127.0.0.1:9"  # nothing listens there
        dead = KubeCluster(config, retry=RetryPolicy(attempts=3, initial=0.05))
        try:
            with pytest.raises(ApiError) as err:
                await dead.get(Ref("", "ConfigMap", "ns", "cm"))
            assert err.value.kind is ApiErrorKind.TIMEOUT
            assert "unreachable" in str(err.value) and "127.0.0.1:9" in str(err.value)
            assert wrap_apply_error(err.value, "t").reason == "UpdatePayloadClusterDown"
            assert dead.stats.retries == 2
        finally:
            await dead.close()

    run_with(control_plane, body)


# --- cleanup ---------------------------------------------------------------------------------------------------


def test_close_stops_every_watch_and_leaves_no_thread(control_plane: ControlPlane, namespace: str) -> None:
    before = kube_threads()

    async def body(cluster: KubeCluster) -> None:
        await make_namespace(cluster, namespace)
        consumed = cluster.watch("", "ConfigMap", namespace)
        never_iterated = cluster.watch("", "Secret", namespace)  # noqa: F841 - open until close()
        waiting = asyncio.create_task(anext(consumed))
        unserved = cluster.watch("nothing.example.com", "Thing")
        unserved_next = asyncio.create_task(anext(unserved))
        await cluster.create(configmap(namespace, "cm"))
        assert (await waiting).type is EventType.ADDED
        (consumed_thread,) = [t for t in cluster._watch_threads if t.object_name is None and t.kind == "ConfigMap"]
        await consumed.aclose()  # type: ignore[attr-defined]  # the consumer stops: so does its thread
        await asyncio.to_thread(consumed_thread.join, 5)
        assert not consumed_thread.is_alive()
        await asyncio.gather(*(cluster.get(Ref("", "ConfigMap", namespace, "cm")) for _ in range(40)))
        assert cluster.live_threads()
        started = time.monotonic()
        await cluster.close()
        assert time.monotonic() - started < 5
        assert cluster.live_threads() == []
        with contextlib.suppress(StopAsyncIteration):
            await asyncio.wait_for(unserved_next, 5)

    run_with(control_plane, body)
    assert kube_threads() == before == []


# --- throughput ------------------------------------------------------------------------------------------------


def test_throughput_of_500_creates_with_16_workers(control_plane: ControlPlane) -> None:
    from .bench_kube import measure

    rates = run_with(control_plane, lambda cluster: measure(cluster, 500, 16))
    print(f"500 ConfigMaps, 16 workers: create {rates['create']:.0f}/s, get {rates['get']:.0f}/s, "
          f"update {rates['update']:.0f}/s, list {rates['list_seconds'] * 1000:.0f} ms")
    assert rates["create"] > 50 and rates["get"] > 50  # a floor that catches a serialised client, not a benchmark
