"""One base for the wrappers around a cluster, the way to an optional capability through them, and the write guard.

After controller-runtime's ``pkg/client/interceptor/intercept.go`` (``NewClient``): a wrapper is a cluster
whose calls go to ``inner`` through hooks a subclass overrides, instead of each wrapper re-delegating
every verb by hand:

====================================  =========================================================
``intercept_read(call, send)``        get, list, serves
``intercept_write(call, send)``       delete, establish, evict (and, unless overridden, the next row)
``intercept_object_write(...)``       create, update, update_status: the result is the object
====================================  =========================================================

Watches and ``close`` pass through (the inner cluster belongs to whoever opened it).
:class:`ReadInterceptor` wraps a :class:`~cvo.cluster.api.ReadOnlyCluster`, :class:`Interceptor` a
whole :class:`~cvo.cluster.api.Cluster`.  No wrapper passes unknown attributes through: what only some
backends can do is a declared protocol (:mod:`cvo.cluster.api`), found along the chain of ``inner``
by :func:`read_hooks`, :func:`request_stats`, :func:`crd_establisher` and :func:`pod_evicter`.  A wrapper
that must see such a call (the fence sees ``establish``) implements it itself; :class:`Interceptor` does for
``establish`` and ``evict``, which are writes.

**The write guard.**  A backend that retries a request by itself (the Kubernetes backend's
``RetryPolicy``) calls :func:`check_write` before each try; a wrapper that must be asked before every
request that leaves (the leader's fence) sets the check with :func:`guarding_writes` around the
call.  The guard is a context variable, so it holds in the task the call runs in and in nothing else.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from cvo.cluster.api import (
    ApiError,
    ApiErrorKind,
    Cluster,
    CrdEstablisher,
    Object,
    PodEvicter,
    ReadHooks,
    ReadOnlyCluster,
    Ref,
    RequestStats,
    WatchEvent,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    """What an intercepted call is: its verb, and how a log line or an error names it."""

    verb: str  # get, list, serves, create, update, update_status, delete, establish, evict
    what: str  # "create ConfigMap ns/x", "list ClusterOperator.config.openshift.io", …


class ReadInterceptor:
    """A :class:`~cvo.cluster.api.ReadOnlyCluster` over ``inner``: every read through :meth:`intercept_read`."""

    def __init__(self, inner: ReadOnlyCluster) -> None:
        self.inner: ReadOnlyCluster = inner

    async def intercept_read(self, call: Call, send: Callable[[], Awaitable[T]]) -> T:
        """Around a read: ``send()`` makes it (and may be called again).  As it is, by default."""
        return await send()

    async def get(self, ref: Ref) -> Object | None:
        return await self.intercept_read(Call("get", f"get {ref}"), lambda: self.inner.get(ref))

    async def list(self, group: str, kind: str, namespace: str | None = None) -> builtins.list[Object]:
        what = f"list {kind}.{group}" if group else f"list {kind}"
        return await self.intercept_read(Call("list", what), lambda: self.inner.list(group, kind, namespace))

    async def serves(self, api_version: str, kind: str) -> bool:
        return await self.intercept_read(Call("serves", f"discovery of {kind} {api_version}"),
                                         lambda: self.inner.serves(api_version, kind))

    def watch(self, group: str, kind: str, namespace: str | None = None, name: str | None = None,
              ) -> AsyncIterator[WatchEvent]:
        return self.inner.watch(group, kind, namespace, name)

    async def close(self) -> None:
        """The inner cluster belongs to whoever opened it."""


class Interceptor(ReadInterceptor):
    """A :class:`~cvo.cluster.api.Cluster` over ``inner``: reads as :class:`ReadInterceptor`, writes through
    :meth:`intercept_write` and :meth:`intercept_object_write`; also a :class:`~cvo.cluster.api.CrdEstablisher`
    (that returns False, through no hook, when the backend is not one)."""

    def __init__(self, inner: Cluster) -> None:
        super().__init__(inner)
        self.inner: Cluster = inner

    async def intercept_write(self, call: Call, send: Callable[[], Awaitable[T]]) -> T:
        """Around a write: ``send()`` makes it (and may be called again).  As it is, by default."""
        return await send()

    async def intercept_object_write(self, call: Call, obj: Object, send: Callable[[], Awaitable[Object]]) -> Object:
        """Around a create, update or status update of ``obj``.  :meth:`intercept_write`, by default."""
        return await self.intercept_write(call, send)

    async def create(self, obj: Object) -> Object:
        return await self.intercept_object_write(Call("create", f"create {Ref.of(obj)}"), obj,
                                                 lambda: self.inner.create(obj))

    async def update(self, obj: Object) -> Object:
        return await self.intercept_object_write(Call("update", f"update {Ref.of(obj)}"), obj,
                                                 lambda: self.inner.update(obj))

    async def update_status(self, obj: Object) -> Object:
        return await self.intercept_object_write(Call("update_status", f"update_status {Ref.of(obj)}"), obj,
                                                 lambda: self.inner.update_status(obj))

    async def delete(self, ref: Ref) -> bool:
        return await self.intercept_write(Call("delete", f"delete {ref}"), lambda: self.inner.delete(ref))

    async def establish(self, crd_name: str) -> bool:
        establisher = crd_establisher(self.inner)
        if establisher is None:
            return False
        return await self.intercept_write(Call("establish", f"establish customresourcedefinition {crd_name}"),
                                          lambda: establisher.establish(crd_name))

    async def evict(self, ref: Ref) -> bool:
        evicter = pod_evicter(self.inner)
        if evicter is None:
            raise ApiError(ApiErrorKind.OTHER, f"evict {ref}: the cluster has no Eviction API", ref)
        return await self.intercept_write(Call("evict", f"evict {ref}"), lambda: evicter.evict(ref))


# --- optional capabilities, along the chain of wrappers ---------------------------------------------------------


def layers(cluster: object) -> Iterator[object]:
    """``cluster``, then what it wraps, down to the backend."""
    while True:
        yield cluster
        if not isinstance(cluster, ReadInterceptor):
            return
        cluster = cluster.inner


def read_hooks(cluster: object) -> ReadHooks | None:
    """The backend's read hooks (the embedded cluster's), or the wrapper's that stands for them."""
    return next((layer for layer in layers(cluster) if isinstance(layer, ReadHooks)), None)


def request_stats(cluster: object) -> RequestStats | None:
    """The backend that counts its requests, if any."""
    return next((layer for layer in layers(cluster) if isinstance(layer, RequestStats)), None)


def crd_establisher(cluster: object) -> CrdEstablisher | None:
    """Where to ask for a CRD to be established: the outermost layer, so that the wrappers see the write;
    ``None`` when the backend cannot (the embedded cluster establishes CRDs by itself)."""
    chain = list(layers(cluster))
    if not isinstance(chain[-1], CrdEstablisher):
        return None
    return next(layer for layer in chain if isinstance(layer, CrdEstablisher))


def pod_evicter(cluster: object) -> PodEvicter | None:
    """Where to evict a Pod: the outermost layer, so that the wrappers see the write; ``None`` when the backend
    has no Eviction API (the embedded cluster: a drain there deletes the Pod itself)."""
    chain = list(layers(cluster))
    if not isinstance(chain[-1], PodEvicter):
        return None
    return next(layer for layer in chain if isinstance(layer, PodEvicter))


# --- the write guard --------------------------------------------------------------------------------------------

WriteGuard = Callable[[], None]
_GUARD: ContextVar[WriteGuard | None] = ContextVar("cvo_write_guard", default=None)


@contextmanager
def guarding_writes(check: WriteGuard) -> Iterator[None]:
    """Within this block (and the tasks created in it), :func:`check_write` calls ``check`` (and any
    guard already in force)."""
    outer = _GUARD.get()

    def both() -> None:
        if outer is not None:
            outer()
        check()

    token = _GUARD.set(both if outer is not None else check)
    try:
        yield
    finally:
        _GUARD.reset(token)


def check_write() -> None:
    """Before a try of a write: raise what the guard in force raises (nothing when none is)."""
    guard = _GUARD.get()
    if guard is not None:
        guard()
