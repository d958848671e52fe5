"""The cluster seam: protocols by role, one interceptor base, capabilities reached through the wrappers,
the write guard, one definition of transient, and a missing namespace as a field of ApiError."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from io import StringIO
from typing import Any, TypeVar

import pytest

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import (
    TRANSIENT,
    ApiError,
    ApiErrorKind,
    Cluster,
    CrdEstablisher,
    Object,
    ReadHooks,
    ReadOnlyCluster,
    Ref,
    RequestStats,
    is_transient,
)
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.cluster.intercept import (
    Call,
    Interceptor,
    ReadInterceptor,
    check_write,
    crd_establisher,
    guarding_writes,
    layers,
    read_hooks,
    request_stats,
)
from cvo.cluster.kube import errors
from cvo.cluster.persist import Budget, GaveUp, PersistentCluster, PersistentReader, persist, steady
from cvo.cluster.saved.cluster import SavedCluster
from cvo.controller.fence import FencedCluster
from cvo.controller.lease import LeaderElector, LeaseLost, LeaseTimings
from cvo.operators.process import ReportingCluster

T = TypeVar("T")
EPOCH = datetime(2025, 6, 1, tzinfo=UTC)
CM: Object = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}, "data": {"a": "1"}}
CM_REF = Ref("", "ConfigMap", "ns", "cm")
TIMINGS = LeaseTimings(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)


def new_cluster() -> SimCluster:
    return SimCluster(Clock(EPOCH), namespaces=(*DEFAULT_NAMESPACES, "ns", "openshift-cluster-version"))


class Recording(Interceptor):
    """Records which hook saw which call, in order."""

    def __init__(self, inner: Cluster, name: str, seen: list[str]) -> None:
        super().__init__(inner)
        self.name, self.seen = name, seen

    async def intercept_read(self, call: Call, send: Callable[[], Awaitable[T]]) -> T:
        self.seen.append(f"{self.name} read {call.verb}: {call.what}")
        return await send()

    async def intercept_write(self, call: Call, send: Callable[[], Awaitable[T]]) -> T:
        self.seen.append(f"{self.name} write {call.verb}: {call.what}")
        return await send()


# --- protocols by role -------------------------------------------------------------------------------------------


def test_the_backends_are_clusters_and_saved_objects_only_a_read_only_one() -> None:
    assert isinstance(new_cluster(), Cluster)
    saved = SavedCluster([CM])
    assert not isinstance(saved, Cluster)
    reader: ReadOnlyCluster = saved  # mypy checks that it is one
    assert reader is saved


def test_steady_keeps_a_read_only_cluster_read_only() -> None:
    async def body() -> None:
        budget = Budget.of(10)
        reads = steady(SavedCluster([CM]), budget)
        assert isinstance(reads, PersistentReader) and not isinstance(reads, Cluster)
        assert not hasattr(reads, "create")
        assert (await reads.get(CM_REF) or {}).get("data") == {"a": "1"}
        assert isinstance(steady(new_cluster(), budget), PersistentCluster)

    asyncio.run(body())


# --- one interceptor base --------------------------------------------------------------------------------------


def wrappers(inner: SimCluster, elector: LeaderElector) -> list[Interceptor]:
    return [PersistentCluster(inner, Budget(0.0, None)), FencedCluster(inner, elector),
            ReportingCluster(inner, Clock(EPOCH), StringIO(), StringIO())]


@pytest.mark.parametrize("cls", [PersistentCluster, PersistentReader, FencedCluster, ReportingCluster])
def test_no_wrapper_passes_unknown_attributes_through(cls: type) -> None:
    assert issubclass(cls, ReadInterceptor)
    assert not any("__getattr__" in vars(klass) for klass in cls.__mro__ if klass is not object)


def test_every_verb_goes_through_its_hook_along_the_chain() -> None:
    async def body() -> list[str]:
        cluster = new_cluster()
        seen: list[str] = []
        chain = Recording(Recording(cluster, "inner", seen), "outer", seen)
        await chain.create(CM)
        await chain.get(CM_REF)
        await chain.update({**(await cluster.get(CM_REF) or {}), "data": {"a": "2"}})
        await chain.update_status(await cluster.get(CM_REF) or {})
        await chain.list("", "ConfigMap", "ns")
        await chain.serves("v1", "ConfigMap")
        assert await chain.delete(CM_REF)
        assert crd_establisher(chain) is None  # the embedded cluster establishes its CRDs by itself
        assert not await chain.establish("widgets.example.com")  # nothing to send: no hook sees it
        stream = chain.watch("", "ConfigMap")
        await cluster.create(CM)
        assert (await anext(stream)).obj["metadata"]["name"] == "cm"  # watches pass through
        await chain.close()  # the inner cluster belongs to whoever opened it
        assert (await cluster.get(CM_REF)) is not None
        return seen

    seen = asyncio.run(body())
    verbs = [line.split(":")[0] for line in seen]
    assert verbs == [f"{layer} {hook}" for hook in (
        "write create", "read get", "write update", "write update_status", "read list", "read serves", "write delete")
        for layer in ("outer", "inner")]
    assert seen[0] == "outer write create: create ConfigMap ns/cm"


def test_optional_capabilities_are_reached_through_every_wrapper() -> None:
    async def body() -> None:
        cluster = new_cluster()
        elector = LeaderElector(cluster, Clock(EPOCH), "a", TIMINGS)
        for wrapper in wrappers(cluster, elector):
            chain = PersistentCluster(wrapper, Budget(0.0, None))
            assert list(layers(chain)) == [chain, wrapper, cluster]
            counted = request_stats(chain)
            assert counted is cluster and isinstance(counted, RequestStats)
            hooks = read_hooks(chain)
            assert hooks is not None and isinstance(hooks, ReadHooks)
            reads: list[Ref] = []
            remove = hooks.on_read(reads.append)
            await chain.get(CM_REF)
            remove()
            await chain.get(CM_REF)
            assert reads == [CM_REF]  # the embedded cluster's hook, called once, then removed
            # Not a pass-through: what is not a declared capability is not there.
            assert not hasattr(chain, "inject_failure") and not hasattr(wrapper, "inject_failure")

    asyncio.run(body())


def test_the_reporter_removes_the_read_hooks_it_added() -> None:
    async def body() -> None:
        cluster = new_cluster()
        reporter = ReportingCluster(cluster, Clock(EPOCH), StringIO(), StringIO())
        reads: list[Ref] = []
        hooks = read_hooks(reporter)
        assert hooks is reporter
        hooks.on_read(reads.append)
        reporter.detach()
        await reporter.get(CM_REF)
        assert reads == []

    asyncio.run(body())


class Establishing(SimCluster):
    """The embedded cluster with a CRD nudge that records what it was asked, and asks the write guard first,
    as the Kubernetes backend asks it before each request."""

    def __init__(self) -> None:
        super().__init__(Clock(EPOCH), namespaces=(*DEFAULT_NAMESPACES, "ns", "openshift-cluster-version"))
        self.nudged: list[str] = []

    async def establish(self, crd_name: str) -> bool:
        check_write()
        self.nudged.append(crd_name)
        return True


def test_the_crd_nudge_is_a_write_through_the_wrappers_and_the_fence_refuses_it_without_the_lease() -> None:
    async def body() -> None:
        backend = Establishing()
        elector = LeaderElector(backend, Clock(EPOCH), "a", TIMINGS, rng=random.Random(1))
        await elector.acquire()
        seen: list[str] = []
        fenced = FencedCluster(backend, elector)
        chain = Recording(PersistentCluster(fenced, Budget.of(30)), "outer", seen)
        establisher = crd_establisher(chain)
        assert establisher is chain and isinstance(establisher, CrdEstablisher)
        assert await establisher.establish("widgets.example.com")
        assert backend.nudged == ["widgets.example.com"]
        assert seen == ["outer write establish: establish customresourcedefinition widgets.example.com"]
        await asyncio.sleep(TIMINGS.renew_deadline + 1)  # nobody renews: the lease is stale
        with pytest.raises(LeaseLost):
            await establisher.establish("widgets.example.com")
        assert backend.nudged == ["widgets.example.com"] and fenced.refused == 1

    run_virtual(body)


# --- the write guard -------------------------------------------------------------------------------------------


def test_the_write_guard_holds_in_its_block_and_the_tasks_made_there_and_nests() -> None:
    calls: list[str] = []

    def refuse() -> None:
        calls.append("inner")
        raise LeaseLost("no")

    async def body() -> None:
        check_write()  # no guard: nothing happens
        with guarding_writes(lambda: calls.append("outer")):
            with guarding_writes(refuse):
                task = asyncio.ensure_future(asyncio.sleep(0, result=None))
                checker = asyncio.ensure_future(_check_later())
            with pytest.raises(LeaseLost):
                await checker
            await task
            check_write()
        check_write()

    async def _check_later() -> None:
        await asyncio.sleep(0)  # the block has ended by now: the task kept its copy of the context
        check_write()

    asyncio.run(body())
    assert calls == ["outer", "inner", "outer"]


class Retrying(SimCluster):
    """A backend that retries a failed create of the ConfigMap by itself, asking the write guard before every
    try (as :class:`cvo.cluster.kube.KubeCluster` does), and counts the tries that reached the "server"."""

    def __init__(self, failures: int) -> None:
        super().__init__(Clock(EPOCH), namespaces=(*DEFAULT_NAMESPACES, "ns", "openshift-cluster-version"))
        self.failures = failures
        self.tries = 0

    async def create(self, obj: Object) -> Object:
        if Ref.of(obj) != CM_REF:  # the Lease
            return await super().create(obj)
        for _ in range(6):
            check_write()
            self.tries += 1
            if self.failures:
                self.failures -= 1
                await asyncio.sleep(2.0)  # the failed try, then the back-off
                continue
            return await super().create(obj)
        raise ApiError(ApiErrorKind.TIMEOUT, "still down")


def test_the_fence_is_asked_before_every_try_a_backend_makes() -> None:
    async def body() -> tuple[int, int]:
        backend = Retrying(failures=10)
        elector = LeaderElector(backend, Clock(EPOCH), "a", TIMINGS, rng=random.Random(1))
        await elector.acquire()  # renewed at t=0: stale from t=10 on (nobody renews)
        fenced = FencedCluster(backend, elector)
        with pytest.raises(LeaseLost):
            await fenced.create(CM)
        return backend.tries, fenced.refused

    tries, refused = run_virtual(body)
    assert (tries, refused) == (5, 1)  # tries at t=0, 2, 4, 6, 8; the one at t=10 is refused


# --- one definition of transient ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(ApiErrorKind))
def test_transient_has_one_definition(kind: ApiErrorKind) -> None:
    err = ApiError(kind, "x")
    assert err.transient is is_transient(err) is (kind in TRANSIENT)
    assert (kind in TRANSIENT) is (kind in {ApiErrorKind.TIMEOUT, ApiErrorKind.SERVER_TIMEOUT, ApiErrorKind.INTERNAL})


@pytest.mark.parametrize("kind", list(ApiErrorKind))
def test_persist_retries_exactly_what_is_transient(kind: ApiErrorKind) -> None:
    async def body() -> int:
        calls = 0

        async def call() -> str:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise ApiError(kind, "once")
            return "ok"

        with contextlib.suppress(ApiError):
            await persist(call, Budget.of(60), "x")
        return calls

    assert run_virtual(body) == (2 if kind in TRANSIENT else 1)


def test_a_conflict_is_not_transient_and_gave_up_keeps_the_missing_namespace() -> None:
    conflict = ApiError(ApiErrorKind.CONFLICT, "the object has been modified")
    assert not conflict.transient and not is_transient(conflict)
    last = ApiError(ApiErrorKind.TIMEOUT, "down", CM_REF, namespace_missing="ns")
    assert GaveUp(last, "create", 3.0).namespace_missing == "ns"


# --- a missing namespace is a field -----------------------------------------------------------------------------


def test_the_embedded_cluster_names_the_missing_namespace() -> None:
    async def body() -> tuple[ApiError, ApiError]:
        cluster = SimCluster(Clock(EPOCH))
        with pytest.raises(ApiError) as missing:
            await cluster.create({**CM, "metadata": {"name": "cm", "namespace": "elsewhere"}})
        with pytest.raises(ApiError) as other:
            await cluster.update({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "nope", "namespace": "default"}})
        return missing.value, other.value

    missing, other = asyncio.run(body())
    assert (missing.kind, missing.namespace_missing) == (ApiErrorKind.NOT_FOUND, "elsewhere")
    assert (other.kind, other.namespace_missing) == (ApiErrorKind.NOT_FOUND, None)


def status(message: str, **details: Any) -> bytes:
    import json

    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "reason": "NotFound",
                       "message": message, "details": details}).encode()


@pytest.mark.parametrize(("body", "ref", "missing"), [
    # kube-apiserver's NamespaceLifecycle admission: NewNotFound(namespaces, name)
    (status('namespaces "ns" not found', name="ns", kind="namespaces"), CM_REF, "ns"),
    # the object itself is missing
    (status('configmaps "cm" not found', name="cm", kind="configmaps"), CM_REF, None),
    # a namespaces resource of another group
    (status('namespaces.example.com "ns" not found', name="ns", group="example.com", kind="namespaces"), CM_REF, None),
    # a Namespace that is itself missing (an update of it): not the namespace of an object
    (status('namespaces "ns" not found', name="ns", kind="namespaces"), Ref("", "Namespace", "", "ns"), None),
    # the text alone says nothing: the field comes from the details
    (status('namespaces "ns" not found'), CM_REF, None),
    (b"not json", CM_REF, None),
])
def test_the_kubernetes_backend_takes_the_missing_namespace_from_the_status_details(
        body: bytes, ref: Ref, missing: str | None) -> None:
    err = errors.from_response(404, body, None, ref, "create ConfigMap ns/cm")
    assert err.kind is ApiErrorKind.NOT_FOUND and err.namespace_missing == missing
