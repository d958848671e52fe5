"""The simulated API server: the server-side rules the sweep relies on, watches, hooks and persistence."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import ApiError, ApiErrorKind, EventType, Ref, WatchEvent, co_ref
from cvo.cluster.embedded.server import SimCluster
from cvo.cluster.embedded.store import StateError
from cvo.payload.loader import load_release

EPOCH = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
CM = Ref("", "ConfigMap", "default", "cm")
DEPLOY = Ref("apps", "Deployment", "default", "web")
WIDGET_CRD = "widgets.example.com"


def run(test: Callable[[SimCluster], Awaitable[None]], **options: Any) -> None:
    async def main() -> None:
        await test(SimCluster(Clock(EPOCH), **options))

    run_virtual(main)


def configmap(name: str = "cm", namespace: str = "default", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": dict(data)}


def deployment(replicas: int = 1, status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": replicas}}
    if status is not None:
        obj["status"] = status
    return obj


def crd(status_subresource: bool = True, scope: str = "Namespaced", versions: tuple[str, ...] = ("v1",),
        ) -> dict[str, Any]:
    subresources = {"status": {}} if status_subresource else {}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": WIDGET_CRD},
            "spec": {"group": "example.com", "scope": scope,
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": v, "served": True, "storage": i == 0, "subresources": subresources}
                                  for i, v in enumerate(versions)]}}


def widget(name: str = "w", status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "Widget",
                           "metadata": {"name": name, "namespace": "default"}, "spec": {"size": 1}}
    if status is not None:
        obj["status"] = status
    return obj


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in obj["status"]["conditions"]}


async def api_error(call: Awaitable[object]) -> ApiError:
    with pytest.raises(ApiError) as info:
        await call
    return info.value


# --- resourceVersion, generation, uid -----------------------------------------------------------


def test_create_sets_server_metadata() -> None:
    async def test(c: SimCluster) -> None:
        first = await c.create(configmap("a"))
        second = await c.create(configmap("b"))
        meta = first["metadata"]
        assert meta["generation"] == 1
        assert meta["creationTimestamp"] == "2025-01-02T03:04:05Z"
        assert int(second["metadata"]["resourceVersion"]) == int(meta["resourceVersion"]) + 1
        assert meta["uid"] != second["metadata"]["uid"]

    run(test)


def test_uids_are_deterministic() -> None:
    async def uids() -> list[str]:
        c = SimCluster(Clock(EPOCH))
        return [(await c.create(configmap(n)))["metadata"]["uid"] for n in ("a", "b")]

    assert run_virtual(uids) == run_virtual(uids)


def test_spec_change_bumps_generation() -> None:
    async def test(c: SimCluster) -> None:
        created = await c.create(deployment(1))
        updated = await c.update(deployment(3))
        assert updated["metadata"]["generation"] == 2
        assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])

    run(test)


def test_status_write_does_not_bump_generation() -> None:
    async def test(c: SimCluster) -> None:
        created = await c.create(deployment())
        created["status"] = {"readyReplicas": 1}
        written = await c.update_status(created)
        assert written["metadata"]["generation"] == 1
        assert written["status"] == {"readyReplicas": 1}
        assert written["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]

    run(test)


def test_metadata_only_change_does_not_bump_generation() -> None:
    async def test(c: SimCluster) -> None:
        created = await c.create(deployment())
        labelled = deployment()
        labelled["metadata"]["labels"] = {"a": "b"}
        updated = await c.update(labelled)
        assert updated["metadata"]["generation"] == 1
        assert updated["metadata"]["labels"] == {"a": "b"}
        assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]

    run(test)


def test_update_that_changes_nothing_is_not_a_write() -> None:
    async def test(c: SimCluster) -> None:
        created = await c.create(deployment())
        events = c.watch("apps", "Deployment")
        again = await c.update(deployment())
        assert again == created
        assert c.stats.noop_writes == 1
        await c.close()
        assert [e async for e in events] == []

    run(test)


# --- status subresource ---------------------------------------------------------------------------


def test_status_is_dropped_on_create_for_status_subresource_kinds() -> None:
    async def test(c: SimCluster) -> None:
        assert "status" not in await c.create(deployment(status={"readyReplicas": 5}))
        operator = {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                    "metadata": {"name": "dns"}, "status": {"versions": [{"name": "operator", "version": "1"}]}}
        assert "status" not in await c.create(operator)
        await c.create(crd(status_subresource=True))
        assert "status" not in await c.create(widget(status={"ready": True}))

    run(test)


def test_status_is_kept_on_create_without_status_subresource() -> None:
    async def test(c: SimCluster) -> None:
        await c.create(crd(status_subresource=False))
        assert (await c.create(widget(status={"ready": True})))["status"] == {"ready": True}

    run(test)


def test_update_keeps_stored_status_and_update_status_keeps_spec() -> None:
    async def test(c: SimCluster) -> None:
        created = await c.create(deployment(1))
        await c.update_status({**created, "status": {"readyReplicas": 1}})
        updated = await c.update(deployment(2, status={"readyReplicas": 99}))
        assert updated["status"] == {"readyReplicas": 1}
        status_write = deployment(7, status={"readyReplicas": 2})
        written = await c.update_status(status_write)
        assert written["spec"] == {"replicas": 2}
        assert written["status"] == {"readyReplicas": 2}

    run(test)


def test_namespaces_are_active() -> None:
    async def test(c: SimCluster) -> None:
        ns = await c.get(Ref("", "Namespace", "", "default"))
        assert ns is not None and ns["status"] == {"phase": "Active"}

    run(test)


# --- conflicts and existence ------------------------------------------------------------------------


def test_stale_resource_version_conflicts() -> None:
    async def test(c: SimCluster) -> None:
        stale = await c.create(configmap(a="1"))
        await c.update(configmap(a="2"))  # no resourceVersion: unconditional
        stale["data"] = {"a": "3"}
        error = await api_error(c.update(stale))
        assert error.kind is ApiErrorKind.CONFLICT
        assert "the object has been modified" in str(error)
        assert (await api_error(c.update_status(stale))).kind is ApiErrorKind.CONFLICT
        assert (await c.get(CM))["data"] == {"a": "2"}  # type: ignore[index]

    run(test)


def test_create_existing_and_update_missing() -> None:
    async def test(c: SimCluster) -> None:
        await c.create(configmap())
        error = await api_error(c.create(configmap()))
        assert (error.kind, str(error)) == (ApiErrorKind.ALREADY_EXISTS, 'configmaps "cm" already exists')
        error = await api_error(c.update(configmap("other")))
        assert (error.kind, str(error)) == (ApiErrorKind.NOT_FOUND, 'configmaps "other" not found')
        assert (await api_error(c.update_status(configmap("other")))).kind is ApiErrorKind.NOT_FOUND

    run(test)


def test_get_list_delete() -> None:
    async def test(c: SimCluster) -> None:
        await c.create(configmap("b"))
        await c.create(configmap("a"))
        await c.create(configmap("c", namespace="kube-system"))
        assert await c.get(Ref("", "ConfigMap", "default", "zzz")) is None
        assert [o["metadata"]["name"] for o in await c.list("", "ConfigMap")] == ["a", "b", "c"]
        assert [o["metadata"]["name"] for o in await c.list("", "ConfigMap", "default")] == ["a", "b"]
        assert await c.delete(Ref("", "ConfigMap", "default", "a")) is True
        assert await c.delete(Ref("", "ConfigMap", "default", "a")) is False
        assert await c.get(Ref("", "ConfigMap", "default", "a")) is None

    run(test)


# --- validation and namespaces -----------------------------------------------------------------------


def test_name_is_required() -> None:
    async def test(c: SimCluster) -> None:
        error = await api_error(c.create(configmap(name="")))
        assert error.kind is ApiErrorKind.INVALID
        assert "metadata.name: Required value" in str(error)

    run(test)


def test_namespace_must_exist() -> None:
    async def test(c: SimCluster) -> None:
        error = await api_error(c.create(configmap(namespace="openshift-foo")))
        assert (error.kind, str(error)) == (ApiErrorKind.NOT_FOUND, 'namespaces "openshift-foo" not found')
        await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "openshift-foo"}})
        await c.create(configmap(namespace="openshift-foo"))

    run(test)


def test_default_namespaces_exist() -> None:
    async def test(c: SimCluster) -> None:
        names = [o["metadata"]["name"] for o in await c.list("", "Namespace")]
        assert names == sorted(["default", "kube-system", "kube-public", "kube-node-lease", "openshift-config",
                                "openshift-config-managed"])

    run(test)


def test_namespace_enforcement_can_be_switched_off() -> None:
    async def test(c: SimCluster) -> None:
        await c.create(configmap(namespace="anywhere"))

    run(test, enforce_namespaces=False)


def test_scope_is_normalised() -> None:
    async def test(c: SimCluster) -> None:
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "r", "namespace": "default"}}
        assert "namespace" not in (await c.create(role))["metadata"]
        assert await c.get(Ref("rbac.authorization.k8s.io", "ClusterRole", "", "r")) is not None
        unnamespaced = configmap()
        del unnamespaced["metadata"]["namespace"]
        assert (await api_error(c.create(unnamespaced))).kind is ApiErrorKind.INVALID

    run(test)


def test_deleting_a_namespace_deletes_its_contents() -> None:
    async def test(c: SimCluster) -> None:
        await c.create(configmap())
        await c.create(configmap(namespace="kube-system"))
        await c.delete(Ref("", "Namespace", "", "default"))
        assert await c.get(CM) is None
        assert await c.get(Ref("", "ConfigMap", "kube-system", "cm")) is not None

    run(test)


# --- served kinds -----------------------------------------------------------------------------------


def test_builtin_and_bootstrapped_kinds_are_served() -> None:
    async def test(c: SimCluster) -> None:
        assert await c.serves("apps/v1", "Deployment")
        assert await c.serves("v1", "ConfigMap")
        assert await c.serves("policy/v1", "AnythingInTheGroup")
        assert await c.serves("config.openshift.io/v1", "ClusterOperator")
        assert await c.serves("config.openshift.io/v1", "ClusterVersion")
        assert await c.serves("operators.coreos.com/v2", "OperatorCondition")
        assert not await c.serves("operators.coreos.com/v3", "OperatorCondition")
        assert not await c.serves("config.openshift.io/v1", "Infrastructure")  # its CRD is not installed
        assert await c.serves("route.openshift.io/v1", "Route")

    run(test)


def test_unserved_kind_cannot_be_written() -> None:
    async def test(c: SimCluster) -> None:
        obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}
        error = await api_error(c.create(obj))
        assert error.kind is ApiErrorKind.NO_KIND_MATCH
        assert str(error) == 'no matches for kind "Widget" in version "example.com/v1"'

    run(test)


def test_openshift_apis_can_be_switched_off() -> None:
    async def test(c: SimCluster) -> None:
        route = {"apiVersion": "route.openshift.io/v1", "kind": "Route",
                 "metadata": {"name": "r", "namespace": "default"}}
        assert not await c.serves("route.openshift.io/v1", "Route")
        assert (await api_error(c.create(route))).kind is ApiErrorKind.NO_KIND_MATCH
        c.openshift_apis = True
        await c.create(route)

    run(test, openshift_apis=False)


def test_served_groups_override() -> None:
    async def test(c: SimCluster) -> None:
        assert await c.serves("v1", "ConfigMap")
        assert not await c.serves("apps/v1", "Deployment")
        assert await c.serves("config.openshift.io/v1", "ClusterOperator")

    run(test, served_groups=[""])


def test_crd_kind_is_served_once_established() -> None:
    async def test(c: SimCluster) -> None:
        created = await c.create(crd(versions=("v1", "v1beta1")))
        assert conditions(created) == {"NamesAccepted": "True", "Established": "True"}
        assert created["status"]["acceptedNames"]["kind"] == "Widget"
        assert created["status"]["storedVersions"] == ["v1"]
        assert await c.serves("example.com/v1beta1", "Widget")
        assert not await c.serves("example.com/v2", "Widget")
        await c.create(widget())

    run(test)


def test_crd_establishment_delay_runs_on_the_virtual_clock() -> None:
    async def test(c: SimCluster) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        events = c.watch("apiextensions.k8s.io", "CustomResourceDefinition")
        created = await c.create(crd())
        assert conditions(created)["Established"] == "False"
        assert not await c.serves("example.com/v1", "Widget")
        assert (await api_error(c.create(widget()))).kind is ApiErrorKind.NO_KIND_MATCH
        await asyncio.sleep(29)
        assert not await c.serves("example.com/v1", "Widget")
        await asyncio.sleep(1)
        assert loop.time() - start == pytest.approx(30)
        assert await c.serves("example.com/v1", "Widget")
        established = await c.get(Ref("apiextensions.k8s.io", "CustomResourceDefinition", "", WIDGET_CRD))
        assert established is not None and conditions(established)["Established"] == "True"
        await c.close()
        assert [e.type async for e in events] == [EventType.ADDED, EventType.MODIFIED]

    run(test, crd_establish_delay=30)


def test_deleting_a_crd_stops_serving_and_deletes_instances() -> None:
    async def test(c: SimCluster) -> None:
        await c.create(crd())
        await c.create(widget())
        await c.delete(Ref("apiextensions.k8s.io", "CustomResourceDefinition", "", WIDGET_CRD))
        assert not await c.serves("example.com/v1", "Widget")
        assert await c.list("example.com", "Widget") == []

    run(test)


def test_invalid_crd_is_rejected() -> None:
    async def test(c: SimCluster) -> None:
        bad = crd()
        bad["metadata"]["name"] = "widgets"
        error = await api_error(c.create(bad))
        assert error.kind is ApiErrorKind.INVALID
        assert 'must be spec.names.plural+"."+spec.group' in str(error)

    run(test)


# --- watches ----------------------------------------------------------------------------------------


async def drain(events: Any, count: int) -> list[WatchEvent]:
    return [await anext(events) for _ in range(count)]


def test_watch_delivers_events_in_order_for_matching_refs_only() -> None:
    async def test(c: SimCluster) -> None:
        events = c.watch("", "ConfigMap", namespace="default", name="cm")
        await c.create(configmap("other"))
        await c.create(configmap(namespace="kube-system"))
        await c.create(deployment())
        await c.create(configmap(a="1"))
        await c.update(configmap(a="2"))
        await c.delete(CM)
        got = await drain(events, 3)
        assert [(e.type, e.obj.get("data")) for e in got] == [
            (EventType.ADDED, {"a": "1"}), (EventType.MODIFIED, {"a": "2"}), (EventType.DELETED, {"a": "2"})]
        versions = [int(e.obj["metadata"]["resourceVersion"]) for e in got]
        assert versions == sorted(versions) and len(set(versions)) == 3
        await c.close()
        assert [e async for e in events] == []

    run(test)


def test_watch_starts_when_called_not_when_first_iterated() -> None:
    async def test(c: SimCluster) -> None:
        events = c.watch("", "ConfigMap")
        await c.create(configmap())
        assert (await anext(events)).type is EventType.ADDED

    run(test)


def test_a_watcher_that_stops_iterating_is_unsubscribed() -> None:
    async def test(c: SimCluster) -> None:
        async def first_event() -> None:
            async for _ in c.watch("", "ConfigMap"):
                break

        consumer = asyncio.create_task(first_event())
        await asyncio.sleep(0)
        assert c.subscriber_count() == 1
        await c.create(configmap())
        await consumer
        await asyncio.sleep(0)  # the loop closes the abandoned generator
        assert c.subscriber_count() == 0
        async with contextlib.aclosing(c.watch("", "ConfigMap")):  # type: ignore[type-var]
            assert c.subscriber_count() == 1
        assert c.subscriber_count() == 0
        c.watch("", "ConfigMap")  # dropped without ever being iterated
        assert c.subscriber_count() == 0

    run(test)


def test_a_cancelled_watcher_is_unsubscribed() -> None:
    async def test(c: SimCluster) -> None:
        async def consume() -> None:
            async for _ in c.watch("", "ConfigMap"):
                pass

        consumer = asyncio.create_task(consume())
        await asyncio.sleep(0)
        consumer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer
        assert c.subscriber_count() == 0

    run(test)


def test_watch_events_are_private_copies() -> None:
    async def test(c: SimCluster) -> None:
        first, second = c.watch("", "ConfigMap"), c.watch("", "ConfigMap")
        await c.create(configmap(a="1"))
        one, two = await anext(first), await anext(second)
        one.obj["data"]["a"] = "changed"
        assert two.obj["data"] == {"a": "1"}
        assert (await c.get(CM))["data"] == {"a": "1"}  # type: ignore[index]

    run(test)


# --- hooks --------------------------------------------------------------------------------------------


def test_on_read_is_called_with_the_ref() -> None:
    async def test(c: SimCluster) -> None:
        seen: list[Ref] = []
        remove = c.on_read(seen.append)
        await c.get(co_ref("dns"))
        await c.get(CM)
        remove()
        await c.get(CM)
        assert seen == [co_ref("dns"), CM]

    run(test)


def test_injected_failures_fail_the_next_writes_then_succeed() -> None:
    async def test(c: SimCluster) -> None:
        c.inject_failure(CM, ApiErrorKind.SERVER_TIMEOUT, count=2, message="too many requests")
        for _ in range(2):
            error = await api_error(c.create(configmap()))
            assert (error.kind, str(error), error.transient) == (ApiErrorKind.SERVER_TIMEOUT, "too many requests", True)
        await c.create(configmap())
        assert c.stats.injected == 2

    run(test)


def test_injected_failure_by_kind_and_verb() -> None:
    async def test(c: SimCluster) -> None:
        await c.create(deployment())
        c.inject_failure(("apps", "Deployment"), ApiErrorKind.INTERNAL, verbs=["update_status"])
        await c.update(deployment(2))  # not an update_status: unaffected
        error = await api_error(c.update_status(deployment(status={"readyReplicas": 1})))
        assert error.kind is ApiErrorKind.INTERNAL and error.ref == DEPLOY
        await c.update_status(deployment(status={"readyReplicas": 1}))

    run(test)


def test_stats_count_reads_and_writes() -> None:
    async def test(c: SimCluster) -> None:
        await c.create(configmap())
        await c.get(CM)
        await c.list("", "ConfigMap")
        await c.update(configmap(a="1"))
        await c.delete(CM)
        assert (c.stats.reads, c.stats.writes) == (2, 3)
        assert c.stats.verbs["create"] == 1

    run(test)


# --- copies -------------------------------------------------------------------------------------------


def test_returned_objects_are_copies() -> None:
    async def test(c: SimCluster) -> None:
        request = configmap(a="1")
        created = await c.create(request)
        request["data"]["a"] = "request"
        created["data"]["a"] = "created"
        got = await c.get(CM)
        assert got is not None
        got["data"]["a"] = "got"
        (await c.list("", "ConfigMap"))[0]["data"]["a"] = "listed"
        assert (await c.get(CM))["data"] == {"a": "1"}  # type: ignore[index]

    run(test)


# --- persistence ---------------------------------------------------------------------------------------


def test_state_round_trip(tmp_path: Path) -> None:
    state = tmp_path / "state" / "cluster.db"

    async def first() -> tuple[int, str]:
        c = SimCluster(Clock(EPOCH), path=state)
        await c.create(crd())
        await c.create(widget())
        cm = await c.create(configmap(a="1"))
        await asyncio.sleep(3600)
        await c.close()
        return c.resource_version, cm["metadata"]["uid"]

    async def second() -> None:
        clock = Clock(EPOCH)
        c = SimCluster.load(state, clock)
        assert clock.now() == datetime(2025, 1, 2, 4, 4, 5, tzinfo=UTC)
        assert c.resource_version == version
        got = await c.get(CM)
        assert got is not None and got["data"] == {"a": "1"} and got["metadata"]["uid"] == uid
        assert await c.serves("example.com/v1", "Widget")
        assert await c.get(Ref("example.com", "Widget", "default", "w")) is not None
        new = await c.create(configmap("next"))
        assert int(new["metadata"]["resourceVersion"]) == version + 1
        assert new["metadata"]["uid"] != uid
        assert new["metadata"]["creationTimestamp"] == "2025-01-02T04:04:05Z"
        await c.close()

    version, uid = run_virtual(first)
    run_virtual(second)
    assert sorted(p.name for p in state.parent.iterdir()) == ["cluster.db"]  # the WAL is merged on close


def test_missing_state_file_is_a_fresh_cluster(tmp_path: Path) -> None:
    async def test() -> None:
        c = SimCluster.load(tmp_path / "none.db", Clock(EPOCH))
        assert await c.get(Ref("", "Namespace", "", "default")) is not None
        assert await c.list("", "ConfigMap") == []
        await c.close()

    run_virtual(test)


@pytest.mark.parametrize(("content", "problem"), [
    (b"{not json", "invalid JSON"),
    (b"[]", "expected a JSON object"),
    (b'{"format": 99}', "unsupported format 99"),
    (b'{"format": 1, "resource_version": -1, "uid_counter": 0}', "resource_version must be"),
    (b'{"format": 1, "resource_version": 1, "uid_counter": 0, "clock_time": "x", "objects": []}', "clock_time"),
    (b'{"format": 1, "resource_version": 1, "uid_counter": 0, "clock_time": "2025-01-01T00:00:00Z",'
     b' "objects": [{"kind": "ConfigMap"}]}', "objects[0] is not a Kubernetes object"),
])
def test_corrupt_legacy_state_file_is_a_clear_error(tmp_path: Path, content: bytes, problem: str) -> None:
    """A JSON state of cvo 0.1 is migrated when it is valid, refused (and left as it is) when it is not."""
    state = tmp_path / "cluster.json"
    state.write_bytes(content)
    with pytest.raises(StateError) as info:
        SimCluster.load(state, Clock(EPOCH))
    message = str(info.value)
    assert message.startswith(f"{state}: not a cvo state file (neither an SQLite store nor a valid JSON state")
    assert problem in message
    assert "\n" not in message
    assert state.read_bytes() == content


# --- the corpus ----------------------------------------------------------------------------------------


def test_the_corpus_applies(corpus: Path) -> None:
    objects = [m.copy_obj() for m in load_release(corpus).manifests]
    order = {"Namespace": 0, "CustomResourceDefinition": 1}
    objects.sort(key=lambda o: order.get(o["kind"], 2))

    async def test(c: SimCluster) -> None:
        for obj in objects:
            with contextlib.suppress(ApiError):  # a default namespace the payload also creates
                await c.create(obj)
        for obj in objects:
            assert await c.get(Ref.of(obj)) is not None, Ref.of(obj)

    run(test, enforce_namespaces=False)
