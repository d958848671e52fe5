"""The Kubernetes backend: the :class:`~cvo.cluster.api.Cluster` protocol over a real API server.

Built on the official ``kubernetes`` client: its ``Configuration`` (from a kubeconfig, see
:mod:`cvo.cluster.kube.config`) does authentication, TLS and proxies, and its ``ApiClient`` sets up the
HTTP connection pool that :class:`Transport` sends every request on; :mod:`cvo.cluster.kube.discovery`
maps kinds to REST resources; :mod:`cvo.cluster.kube.watch` runs watches in threads.  Objects stay plain JSON dicts, as everywhere in cvo.

* Blocking client calls run in one bounded thread pool (``workers``, 32 by default: the update
  mode's 16 workers, twice over), and every request shares one urllib3 pool sized to match
  (``connection_pool_maxsize``), so connections are reused instead of opened per call.
* ``update`` sends ``metadata.resourceVersion`` of the object it is given: a stale one is a
  ``Conflict``, as on any server.  ``update_status`` writes the ``status`` subresource when the
  kind has one, the main resource otherwise.
* Transient errors (:data:`cvo.cluster.api.TRANSIENT`: 503/504 and unreachable server: TIMEOUT;
  429 and ServerTimeout: SERVER_TIMEOUT; 500: INTERNAL) are retried inside the backend with a short
  capped exponential back-off that honours ``Retry-After``; other 4xx never are, and neither is a
  Conflict (the same request with the same stale resourceVersion cannot succeed: the caller must read
  the object again).  Longer outages are for the caller: :mod:`cvo.cluster.persist` retries within a
  command's budget.  Before every try the write guard is asked (:func:`cvo.cluster.intercept.check_write`):
  a leader's fence stops a write it let through once the lease is stale, between two tries.
* A write retried after a transient error may meet itself: when its first attempt landed but the
  answer was lost, the retry gets AlreadyExists or Conflict.  The object is then read, and if it
  holds what was sent (:mod:`cvo.cluster.landed`), that is the write's result.
* Apply semantics stay in :mod:`cvo.runner.apply` (get, then create or a merged update); see
  docs/kube.md for why this is not server-side apply.
* A CRD whose names the server accepted but that it never establishes (its establishing controller
  queues a CRD only on an update event, so one accepted just before an API server restart waits for
  the informer's resync, 5 minutes later) can be nudged: :meth:`KubeCluster.establish`, a write that
  whoever waits for the CRD's kind asks for (``serves`` only reads).
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import threading
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode

import orjson
import urllib3
from kubernetes import client

from cvo.cluster.api import ApiError, ApiErrorKind, Object, Ref, WatchEvent, is_transient
from cvo.cluster.intercept import check_write
from cvo.cluster.kube import errors
from cvo.cluster.kube.config import Kubeconfig, display_server, load_kubeconfig
from cvo.cluster.kube.discovery import Discovery, Resource
from cvo.cluster.landed import LANDED_KINDS, intent_landed
from cvo.cluster.persist import retry_deadline
from cvo.log import get_logger

log = get_logger("cvo.cluster.kube")
T = TypeVar("T")

CRD_GROUP = "apiextensions.k8s.io"
CRD_KIND = "CustomResourceDefinition"
USER_AGENT = "cvo/0.1.0 (kubernetes-python)"
DEFAULT_WORKERS = 32
WATCH_CONNECTIONS = 16  # extra pool slots: every open watch holds one connection
LIST_PAGE = 500
# Seconds a CRD may stay accepted but not Established, while something waits for its kind, before it is
# nudged (and between nudges); the establishing controller takes well under that on a busy server.
CRD_STALL = 10.0
NUDGE_ANNOTATION = "cvo.openshift.io/establish"  # set, then removed, by a nudge (KubeCluster.establish)
AUTH_REFRESH = 1.0  # seconds a token from the kubeconfig's credentials is reused (Transport.credentials)


@dataclass
class KubeStats:
    """Calls per verb, HTTP requests sent, and retries after transient errors."""

    verbs: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    retries: int = 0
    landed: int = 0  # writes whose lost answer was found to have landed (see cvo.cluster.landed)
    nudged: int = 0  # CRDs accepted but left unestablished, nudged (see KubeCluster.establish)


@dataclass(frozen=True)
class RetryPolicy:
    """Back-off for transient errors: ``attempts`` calls, waits ``initial``·2ⁿ capped at ``cap``.

    The defaults wait 0.25, 0.5, 1, 2 and 2 s (5.75 s in all): enough to ride out an API server
    restart, short enough that the runner's own task back-off stays in charge of longer outages.
    A ``Retry-After`` (429, or a ServerTimeout's ``retryAfterSeconds``) replaces the wait, up to
    ``retry_after_cap``.
    """

    attempts: int = 6
    initial: float = 0.25
    cap: float = 2.0
    retry_after_cap: float = 10.0

    def delays(self) -> list[float]:
        out, delay = [], self.initial
        for _ in range(self.attempts - 1):
            out.append(delay)
            delay = min(delay * 2, self.cap)
        return out


class Transport:
    """One HTTP exchange over the official client's urllib3 pool (its TLS, proxy and client-certificate
    set-up) with its configuration's credentials.  Blocking.

    The client's own request path (``ApiClient.param_serialize`` and ``call_api``) is not used: it
    walks every body recursively to "sanitize" it and encodes it with ``json``, and asks the
    kubeconfig loader's refresh hook for the token on every request, which re-assigns the
    configuration's host and with it re-reads the proxy variables of the whole environment.  On the
    corpus install that was most of cvo's own CPU time (the payload's CRDs are large), on two cores
    that the API server needs.  Here a body is encoded once with orjson, and the credentials are
    asked for at most once per :data:`AUTH_REFRESH` seconds (the loader renews an expiring token
    minutes before it expires, so a second's reuse never sends an expired one).
    """

    def __init__(self, api_client: client.ApiClient, stats: KubeStats,
                 timeout: tuple[float, float] = (10.0, 60.0)) -> None:
        self.api = api_client
        self.stats = stats
        self.timeout = timeout
        self._pool: urllib3.PoolManager = api_client.rest_client.pool_manager
        self._auth: dict[str, str] = {}
        self._auth_until = float("-inf")

    @property
    def server(self) -> str:
        return display_server(str(self.api.configuration.host))

    def credentials(self) -> dict[str, str]:
        """The headers that authenticate a request (the client's ``auth_settings``), reused for a second."""
        now = time.monotonic()
        if now >= self._auth_until:
            settings = self.api.configuration.auth_settings()
            self._auth = {str(s["key"]): str(s["value"]) for s in settings.values()
                          if s.get("in") == "header" and s.get("value")}
            self._auth_until = now + AUTH_REFRESH
        return self._auth

    def open(self, method: str, path: str, query: list[tuple[str, str]] | None = None, body: Any = None,
             accept: str = "application/json", timeout: tuple[float, float | None] | None = None,
             ) -> urllib3.BaseHTTPResponse:
        """Send the request; returns the unread urllib3 response (the caller reads or streams it).

        Raises ``TypeError`` for a body orjson cannot encode, urllib3's errors for the connection."""
        headers = {**self.api.default_headers, "Accept": accept, **self.credentials()}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = orjson.dumps(body)
        url = self.server + path
        if query:
            url += "?" + urlencode(query)
        connect, read = timeout or self.timeout
        self.stats.requests += 1
        return self._pool.request(method, url, body=data, headers=headers, preload_content=False, retries=False,
                                  timeout=urllib3.Timeout(connect=connect, read=read))

    def request(self, method: str, path: str, query: list[tuple[str, str]] | None = None, body: Any = None,
                accept: str = "application/json") -> tuple[int, bytes, Mapping[str, str]]:
        resp = self.open(method, path, query, body, accept)
        try:
            data = resp.data
        finally:
            resp.release_conn()
        return resp.status, data, resp.headers


class KubeCluster:
    """A real cluster behind the :class:`~cvo.cluster.api.Cluster` protocol.  See the module docstring."""

    def __init__(self, configuration: client.Configuration, *, workers: int = DEFAULT_WORKERS,
                 retry: RetryPolicy | None = None, description: str = "", where: str = "",
                 request_timeout: tuple[float, float] = (10.0, 60.0)) -> None:
        configuration.connection_pool_maxsize = workers + WATCH_CONNECTIONS
        configuration.retries = False  # no hidden urllib3 retries: ours are classified and logged
        self.configuration = configuration
        self.api_client = client.ApiClient(configuration)
        self.api_client.user_agent = USER_AGENT
        self.stats = KubeStats()
        self.retry = retry or RetryPolicy()
        self.description = description or f"Kubernetes API server {display_server(str(configuration.host))}"
        self.where = where or f"server {display_server(str(configuration.host))}"  # the CLI's cluster: line
        self.transport = Transport(self.api_client, self.stats, request_timeout)
        self.discovery = Discovery(self._fetch_discovery)
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cvo-kube")
        self._watch_threads: set[Any] = set()
        self._crds: dict[tuple[str, str], str] = {}  # (group, kind) -> name of a CRD this client wrote
        # (group, kind) -> what a CRD seen Established serves: registered again when discovery misses it
        # (a refresh of discovery racing a registration can drop it), with no request.
        self._established: dict[tuple[str, str], list[Resource]] = {}
        self._crd_names: dict[tuple[str, str], str] = {}  # (group, kind) -> name of any CRD seen that defines it
        self._nudge_due: dict[str, float] = {}  # CRD name -> when it is next looked at (establish)
        self._max_rv: int | None = None  # the newest resourceVersion any response carried
        self._rv_lock = threading.Lock()
        self._closed = False

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, context: str | None = None, **options: Any) -> KubeCluster:
        """Connect as ``kubectl --kubeconfig PATH --context NAME`` would (defaults: $KUBECONFIG, current-context)."""
        kubeconfig: Kubeconfig = load_kubeconfig(path, context)
        description = f"Kubernetes API server {kubeconfig.server} (context {kubeconfig.context}, {kubeconfig.path})"
        return cls(kubeconfig.configuration, description=description,
                   where=f"context {kubeconfig.context}, server {kubeconfig.server}", **options)

    @classmethod
    def in_cluster(cls, **options: Any) -> KubeCluster:
        """Connect as a pod does: its service account (:func:`cvo.cluster.kube.config.load_in_cluster`)."""
        from cvo.cluster.kube.config import load_in_cluster

        kubeconfig = load_in_cluster()
        description = f"Kubernetes API server {kubeconfig.server} (in-cluster, service account in {kubeconfig.path})"
        return cls(kubeconfig.configuration, description=description, where=f"in-cluster, server {kubeconfig.server}",
                   **options)

    @property
    def server(self) -> str:
        return self.transport.server

    async def connect(self, *, refused_at_once: bool = False) -> str:
        """Check that the server answers and accepts the credentials, and load discovery; its version.
        ``refused_at_once``: a refused connection is raised at once, without this backend's retries (kubectl)."""
        version: Object | None = None
        if refused_at_once:
            try:
                version = await asyncio.get_running_loop().run_in_executor(
                    self._executor, functools.partial(self.call_blocking, "GET", "/version", ref=None,
                                                      what="get /version"))
            except ApiError as err:
                if err.refused:
                    raise
        if version is None:
            version = await self._call("GET", "/version", ref=None, what="get /version")
        await self._retrying(self.discovery.ensure_loaded)
        return str((version or {}).get("gitVersion", ""))

    # ----------------------------------------------------------------------------------- protocol

    async def get(self, ref: Ref) -> Object | None:
        self.stats.verbs["get"] += 1
        res = await self._resource_for(ref.group, ref.kind)
        if res is None or (res.namespaced and not ref.namespace):
            return None
        obj = await self._call("GET", res.path(ref.namespace, ref.name), ref=ref, what=f"get {ref}", allow_404=True)
        if obj is not None:
            _fill_type(obj, res)
            self._seen_crd(obj)
        return obj

    async def list(self, group: str, kind: str, namespace: str | None = None) -> list[Object]:
        self.stats.verbs["list"] += 1
        res = await self._resource_for(group, kind)
        if res is None or (namespace is not None and bool(namespace) != res.namespaced):
            return []  # as on the simulated cluster: no cluster-scoped object is in a namespace, and vice versa
        items, _ = await self._retrying(self.list_blocking, res, namespace)
        for obj in items:
            self._seen_crd(obj)
        return items

    async def create(self, obj: Object) -> Object:
        self.stats.verbs["create"] += 1
        res, ref = await self._resolve_write(obj)
        created = await self._write("create", "POST", res.path(ref.namespace), res, ref, f"create {ref}", obj)
        self._written(res, created)
        return created

    async def update(self, obj: Object) -> Object:
        self.stats.verbs["update"] += 1
        res, ref = await self._resolve_write(obj)
        updated = await self._write("update", "PUT", res.path(ref.namespace, ref.name), res, ref, f"update {ref}", obj)
        self._written(res, updated)
        return updated

    async def update_status(self, obj: Object) -> Object:
        self.stats.verbs["update_status"] += 1
        res, ref = await self._resolve_write(obj)
        path = res.path(ref.namespace, ref.name, "status" if res.status else None)
        updated = await self._write("update_status", "PUT", path, res, ref, f"update status of {ref}", obj)
        _fill_type(updated, res)
        return updated

    async def _write(self, verb: str, method: str, path: str, res: Resource, ref: Ref, what: str, obj: Object,
                     ) -> Object:
        """A write, retried on transient errors; after one, AlreadyExists or Conflict may mean it landed.

        A retry of a write whose answer was lost (the connection reset after the request went out)
        meets the write itself: a create gets AlreadyExists, an update a Conflict (its
        resourceVersion is the one the landed write replaced).  Then the object is read, and if it
        holds what was sent (:func:`cvo.cluster.landed.intent_landed`), that is the write's result.
        """

        async def landed() -> Object | None:
            live = await self._call("GET", res.path(ref.namespace, ref.name), ref=ref, what=f"get {ref}",
                                    allow_404=True)
            if live is None or not intent_landed(verb, obj, live, res.status):
                return None
            self.stats.landed += 1
            log.info("a write whose answer was lost had landed", request=what)
            return live

        result = await self._retrying(self.call_blocking, method, path, ref=ref, what=what, body=obj, landed=landed)
        assert result is not None
        return result

    async def delete(self, ref: Ref) -> bool:
        self.stats.verbs["delete"] += 1
        res = await self._resource_for(ref.group, ref.kind)
        if res is None or (res.namespaced and not ref.namespace):
            return False
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        gone = await self._call("DELETE", res.path(ref.namespace, ref.name), ref=ref, what=f"delete {ref}",
                                body=body, allow_404=True)
        if (ref.group, ref.kind) == (CRD_GROUP, CRD_KIND) and gone is not None:
            spec = gone.get("spec") or {}
            self._established.pop((spec.get("group", ""), (spec.get("names") or {}).get("kind", "")), None)
            self.discovery.forget(spec.get("group", ""), (spec.get("names") or {}).get("kind", ""))
        return gone is not None

    async def evict(self, ref: Ref) -> bool:
        """Evict Pod ``ref`` through the Eviction API (k8s.io/kubectl pkg/drain ``Helper.EvictPod``): True once
        it is evicted (or gone), False when a PodDisruptionBudget refuses (429 TooManyRequests: an answer, not
        retried here; kubectl's drain asks again after 5 s).  Other transient errors are retried as any write."""
        self.stats.verbs["evict"] += 1
        path = f"/api/v1/namespaces/{ref.namespace}/pods/{ref.name}/eviction"
        body = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": ref.name, "namespace": ref.namespace}}
        return await self._retrying(self._evict_blocking, path, ref, body)

    def _evict_blocking(self, path: str, ref: Ref, body: Object) -> bool:
        what = f"evict {ref}"
        try:
            status, data, headers = self.transport.request("POST", path, None, body)
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise errors.from_exception(err, ref, what, self.server) from None
        if 200 <= status < 300 or status == 404:
            return True
        if status == 429:
            log.info("eviction refused by a PodDisruptionBudget", pod=str(ref),
                     message=errors.parse_status(data).get("message", ""))
            return False
        raise errors.from_response(status, data, headers, ref, what)

    async def serves(self, api_version: str, kind: str) -> bool:
        if self.discovery.loaded and self.discovery.lookup(api_version, kind) is not None:
            return True
        return await self._resolve(api_version, kind) is not None

    def watch(self, group: str, kind: str, namespace: str | None = None, name: str | None = None,
              ) -> AsyncIterator[WatchEvent]:
        """Changes from now on, fed by a thread watching the collection; see :mod:`cvo.cluster.kube.watch`.

        The thread starts at once (as the simulated cluster subscribes at once) and resumes from the
        newest resourceVersion this client has seen, so a change made after any earlier response
        (such as the read a waiter made before it started waiting) is never missed.
        """
        from cvo.cluster.kube.watch import WatchThread, events

        if self._closed:
            raise RuntimeError("KubeCluster is closed")
        self.stats.verbs["watch"] += 1
        since = str(self._max_rv) if self._max_rv is not None else None
        thread = WatchThread(self, group, kind, namespace, name, since, asyncio.get_running_loop())
        self._watch_threads = {t for t in self._watch_threads if t.is_alive()}
        self._watch_threads.add(thread)
        thread.start()
        stream = events(thread)
        weakref.finalize(stream, thread.stop)  # dropped before it was ever iterated
        return stream

    async def close(self) -> None:
        """Stop every watch, wait for their threads and the pool's, and close the connections."""
        if self._closed:
            return
        self._closed = True
        threads = list(self._watch_threads)
        for thread in threads:
            thread.stop()
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def finish() -> None:
            try:
                for thread in threads:
                    thread.join(timeout=30)
                self._executor.shutdown(wait=True, cancel_futures=True)
                self.api_client.close()  # type: ignore[no-untyped-call]  # the kubernetes client has no type hints
            finally:
                with _suppress_closed_loop():
                    loop.call_soon_threadsafe(_resolve, done)

        finisher = threading.Thread(target=finish, name="cvo-kube-close", daemon=True)
        finisher.start()
        await done
        finisher.join()
        self._watch_threads.clear()

    def live_threads(self) -> builtins.list[threading.Thread]:
        """Threads of this backend still running (watches and the pool's workers); empty after close()."""
        pool = list(getattr(self._executor, "_threads", ()))
        return [t for t in [*self._watch_threads, *pool] if t.is_alive()]

    # ------------------------------------------------------------------------------- requests

    async def _call(self, method: str, path: str, *, ref: Ref | None, what: str, body: Any = None,
                    query: builtins.list[tuple[str, str]] | None = None, allow_404: bool = False) -> Object | None:
        return await self._retrying(self.call_blocking, method, path, ref=ref, what=what, body=body, query=query,
                                    allow_404=allow_404)

    async def _retrying(self, fn: Callable[..., T], *args: Any,
                        landed: Callable[[], Awaitable[T | None]] | None = None, **kwargs: Any) -> T:
        """``fn`` in the pool, again after a back-off while it fails with a transient error.

        ``landed`` (writes): after a transient failure, an AlreadyExists or Conflict asks it
        whether the earlier attempt landed; its answer, if not ``None``, is the result.
        """
        if self._closed:
            raise ApiError(ApiErrorKind.OTHER, "the Kubernetes backend is closed")
        loop = asyncio.get_running_loop()
        call = functools.partial(fn, *args, **kwargs)
        delays = self.retry.delays()
        uncertain = False  # an earlier attempt failed in a way that may have let it land
        for attempt in range(len(delays) + 1):
            check_write()  # a fence around this write is asked before every try (cvo.cluster.intercept)
            try:
                return await loop.run_in_executor(self._executor, call)
            except ApiError as err:
                # Not a retry of a Conflict (not transient): after a transient failure, AlreadyExists or Conflict
                # may be the write itself, landed; the object is read to tell.
                if uncertain and landed is not None and err.kind in LANDED_KINDS:
                    result = await landed()
                    if result is not None:
                        return result
                    raise
                if not is_transient(err) or attempt >= len(delays) or self._closed:
                    raise
                uncertain = True
                wait = delays[attempt]
                if err.retry_after is not None:
                    wait = min(err.retry_after, self.retry.retry_after_cap)
                deadline = retry_deadline()
                if deadline is not None and loop.time() + wait > deadline:
                    raise  # the caller's budget ends before the next try: its last error is this one
                self.stats.retries += 1
                log.debug("transient API error; retrying", error=str(err), kind=err.kind.value,
                          retry_in=round(wait, 2), attempt=attempt + 1)
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    def call_blocking(self, method: str, path: str, *, ref: Ref | None, what: str, body: Any = None,
                      query: builtins.list[tuple[str, str]] | None = None, allow_404: bool = False) -> Object | None:
        """One request; the decoded object, ``None`` for an allowed 404, :class:`ApiError` otherwise."""
        try:
            status, data, headers = self.transport.request(method, path, query, body)
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise errors.from_exception(err, ref, what, self.server) from None
        except (TypeError, ValueError) as err:  # a body orjson cannot encode
            raise ApiError(ApiErrorKind.INVALID, f"{what}: not representable as JSON: {err}", ref) from None
        if 200 <= status < 300:
            obj = orjson.loads(data) if data else {}
            self.note_resource_version(obj)
            return obj
        if status == 404 and allow_404:
            return None
        raise errors.from_response(status, data, headers, ref, what)

    def list_blocking(self, res: Resource, namespace: str | None, field_selector: str | None = None,
                      ) -> tuple[builtins.list[Object], str]:
        """Every object (all pages), with apiVersion and kind filled in, and the list's resourceVersion."""
        items: builtins.list[Object] = []
        query: builtins.list[tuple[str, str]] = [("limit", str(LIST_PAGE))]
        if field_selector:
            query.append(("fieldSelector", field_selector))
        path = res.path(namespace or None)
        what = f"list {res.plural}.{res.group}" if res.group else f"list {res.plural}"
        cont = ""
        while True:
            page = self.call_blocking("GET", path, ref=None, what=what, query=[*query, ("continue", cont)] if cont else query)
            assert page is not None
            for obj in page.get("items") or []:
                _fill_type(obj, res)
                items.append(obj)
            meta = page.get("metadata") or {}
            cont = meta.get("continue") or ""
            if not cont:
                return items, str(meta.get("resourceVersion") or "")

    def note_resource_version(self, obj: Mapping[str, Any]) -> None:
        value = (obj.get("metadata") or {}).get("resourceVersion")
        if not value:
            return
        try:
            rv = int(value)
        except (TypeError, ValueError):
            return
        with self._rv_lock:
            if self._max_rv is None or rv > self._max_rv:
                self._max_rv = rv

    def _fetch_discovery(self, path: str, accept: str) -> Any:
        try:
            status, data, headers = self.transport.request("GET", path, accept=accept)
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise errors.from_exception(err, None, f"discovery {path}", self.server) from None
        if status == 404:
            return None
        if not 200 <= status < 300:
            raise errors.from_response(status, data, headers, None, f"discovery {path}")
        return orjson.loads(data)

    # ------------------------------------------------------------------------------ resources

    async def _resource_for(self, group: str, kind: str) -> Resource | None:
        """The resource to read ``(group, kind)`` through (the group's preferred version that serves it)."""
        if self.discovery.loaded:
            res = self.discovery.lookup_group_kind(group, kind)
            if res is not None:
                return res
        res = await self._retrying(self.discovery.resolve_group_kind, group, kind)
        if res is None and await self._check_crd(group, kind):
            res = self.discovery.lookup_group_kind(group, kind)
        return res

    async def _resolve(self, api_version: str, kind: str) -> Resource | None:
        """Discovery's answer; on a miss, a CRD of the kind this client wrote, if it is Established by now."""
        res = await self._retrying(self.discovery.resolve, api_version, kind)
        group = api_version.rpartition("/")[0]
        if res is None and await self._check_crd(group, kind):
            res = self.discovery.lookup(api_version, kind)
        if res is not None and (name := self._crd_names.get((group, kind))) is not None:
            self._nudge_due.pop(name, None)  # served: a later wait for it starts its stall afresh
        return res

    async def establish(self, crd_name: str) -> bool:
        """CRD ``crd_name`` is waited for: if :data:`CRD_STALL` seconds have passed since the first call (or
        the last look) and its names are accepted but it is not Established, update it (an annotation set,
        then removed).  True if it was nudged.  A write: call it through the wrappers (the fence sees it).

        The API server's establishing controller is queued only by an update event of a CRD whose names
        are accepted (``crdHandler.updateCustomResourceDefinition``).  When the server stops between
        the naming controller's write and the establishing controller's, the restarted server sees the
        CRD as added, not updated: it stays unestablished, its kinds out of discovery, until the
        informer's resync (5 minutes) or the CRD's next update.  The CVO waits that out, retrying;
        cvo sends the update.  At most one look (a read) per CRD every :data:`CRD_STALL` seconds,
        and only while something waits for its kind.
        """
        if self._closed or crd_name not in self._crd_names.values():  # a CRD this client never saw or wrote
            return False
        now = time.monotonic()
        due = self._nudge_due.setdefault(crd_name, now + CRD_STALL)
        if now < due:
            return False
        self._nudge_due[crd_name] = now + CRD_STALL
        path = f"/apis/{CRD_GROUP}/v1/customresourcedefinitions/{crd_name}"
        try:
            crd = await self._call("GET", path, ref=None, what=f"get customresourcedefinition {crd_name}",
                                   allow_404=True)
            if crd is None or self._seen_crd(crd) or not _accepted_not_established(crd):
                return False
            log.info("CRD accepted but not Established; updating it to wake the API server's establishing controller",
                     crd=crd_name)
            self.stats.nudged += 1
            annotations = crd.setdefault("metadata", {}).get("annotations")
            crd["metadata"]["annotations"] = {**(annotations if isinstance(annotations, dict) else {}),
                                              NUDGE_ANNOTATION: "nudged"}
            await self._call("PUT", path, ref=None, what=f"update customresourcedefinition {crd_name}", body=crd)
        except ApiError as err:  # a conflict is someone else's update (which wakes the controller too)
            log.debug("nudging a CRD failed", crd=crd_name, error=str(err))
            return False
        for _ in range(3):  # the annotation goes again; the controller's own write may come in between
            try:
                crd = await self._call("GET", path, ref=None, what=f"get customresourcedefinition {crd_name}",
                                       allow_404=True)
                annotations = ((crd or {}).get("metadata") or {}).get("annotations")
                if crd is None or not isinstance(annotations, dict) or NUDGE_ANNOTATION not in annotations:
                    break
                del annotations[NUDGE_ANNOTATION]
                await self._call("PUT", path, ref=None, what=f"update customresourcedefinition {crd_name}", body=crd)
                break
            except ApiError as err:
                if err.kind is not ApiErrorKind.CONFLICT:
                    log.debug("removing a CRD's nudge annotation failed", crd=crd_name, error=str(err))
                    break
        return True

    def observe(self, obj: Object, deleted: bool = False) -> None:
        """A watch delivers ``obj`` (called in its thread): a CRD seen Established registers its kinds."""
        if not deleted:
            self._seen_crd(obj)
        elif obj.get("kind") == CRD_KIND:
            spec = obj.get("spec") or {}
            self._established.pop((spec.get("group", ""), (spec.get("names") or {}).get("kind", "")), None)

    def _watching_crds(self) -> bool:
        """Whether a watch of every CRD runs: it registers each one the moment it is Established."""
        return any(t.is_alive() and (t.group, t.kind) == (CRD_GROUP, CRD_KIND) and t.object_name is None
                   and not t.stopped.is_set() for t in list(self._watch_threads))

    async def _check_crd(self, group: str, kind: str) -> bool:
        """Read the CRD this client wrote for ``(group, kind)``; True if that registered new kinds.

        Not while a watch of the CRDs runs: it registers the kinds as soon as the CRD is Established
        (whoever waits for that waits on the watch), and a read for every object of a kind whose CRD is
        not Established yet was most of an install's reads (190 of the corpus's ~1,700 requests)."""
        name = self._crds.get((group, kind))
        if name is None:
            return False
        known = self._established.get((group, kind))
        if known is not None:
            new = [r for r in known if self.discovery.lookup(r.api_version, r.kind) != r]
            if new:
                self.discovery.register(new)
            return bool(new)
        if self._watching_crds():
            return False
        crd = await self._call("GET", f"/apis/{CRD_GROUP}/v1/customresourcedefinitions/{name}", ref=None,
                               what=f"get customresourcedefinition {name}", allow_404=True)
        return crd is not None and self._seen_crd(crd)

    async def _resolve_write(self, obj: Object) -> tuple[Resource, Ref]:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not api_version or not kind:
            raise ApiError(ApiErrorKind.INVALID, "Object 'Kind' and 'apiVersion' are required", None)
        ref = Ref.of(obj)
        res = self.discovery.lookup(api_version, kind) if self.discovery.loaded else None
        if res is None:
            res = await self._resolve(api_version, kind)
        if res is None:
            raise errors.no_kind_match(api_version, kind, ref)
        if not res.namespaced and ref.namespace:
            ref = Ref(ref.group, ref.kind, "", ref.name)
        kind_text = f"{kind}.{res.group}" if res.group else kind
        if res.namespaced and not ref.namespace:
            raise ApiError(ApiErrorKind.INVALID, f'{kind_text} "{ref.name}" is invalid: metadata.namespace: '
                           "Required value: the kind is namespaced", ref)
        if not ref.name:
            raise ApiError(ApiErrorKind.INVALID, f'{kind_text} "" is invalid: metadata.name: Required value: '
                           "name or generateName is required", ref)
        return res, ref

    def _written(self, res: Resource, obj: Object) -> None:
        _fill_type(obj, res)
        if (res.group, res.kind) == (CRD_GROUP, CRD_KIND):
            spec = obj.get("spec") or {}
            group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
            self._crds[(group, kind)] = (obj.get("metadata") or {}).get("name", "")
            self.discovery.forget_misses(group)
            self._seen_crd(obj)

    def _seen_crd(self, obj: Object) -> bool:
        """A CRD seen Established serves its kinds now: tell discovery (whose documents lag a little).

        "Established" is the API server's word that it serves the CRD's resources; its discovery
        documents are updated by a controller a moment later.  Returns True if kinds were new.
        """
        if obj.get("kind") != CRD_KIND or not (obj.get("apiVersion") or "").startswith(CRD_GROUP + "/"):
            return False
        spec = obj.get("spec") or {}
        defined_group, defined_kind = spec.get("group"), (spec.get("names") or {}).get("kind")
        name = (obj.get("metadata") or {}).get("name")
        if isinstance(defined_group, str) and isinstance(defined_kind, str) and isinstance(name, str) \
                and defined_group and defined_kind and name:
            self._crd_names[(defined_group, defined_kind)] = name
        conditions = (obj.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return False
        spec = obj.get("spec") or {}
        names = (obj.get("status") or {}).get("acceptedNames") or spec.get("names") or {}
        group, kind, plural = spec.get("group", ""), names.get("kind", ""), names.get("plural", "")
        if not group or not kind or not plural:
            return False
        resources = [Resource(group, v.get("name", ""), kind, plural, spec.get("scope") == "Namespaced",
                              "status" in (v.get("subresources") or {}))
                     for v in spec.get("versions") or [] if v.get("served") and v.get("name")]
        self._established[(group, kind)] = resources
        new = [r for r in resources if self.discovery.lookup(r.api_version, kind) != r]
        if new:
            self.discovery.register(new)
        return bool(new)


def _accepted_not_established(crd: Object) -> bool:
    """A CRD whose names the server accepted, not Established and not being deleted."""
    status = crd.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    states = {c.get("type"): c.get("status") for c in conditions or [] if isinstance(c, dict)}
    terminating = bool((crd.get("metadata") or {}).get("deletionTimestamp"))
    return states.get("NamesAccepted") == "True" and states.get("Established") != "True" and not terminating


def _fill_type(obj: Object, res: Resource) -> None:
    """List items of built-in kinds come without apiVersion and kind; callers rely on them (Ref.of)."""
    obj.setdefault("apiVersion", res.api_version)
    obj.setdefault("kind", res.kind)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _suppress_closed_loop:
    """``loop.call_soon_threadsafe`` raises RuntimeError once the loop is closed; nothing is waiting then."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        return exc_type is RuntimeError
