"""Watches on a real API server: one watch request at a time in a thread, handed to asyncio through a queue.

One thread per :meth:`KubeCluster.watch` call, not a pool worker: a watch blocks for minutes.  The
thread keeps the watch alive until the consumer stops:

* **Start**: from the newest resourceVersion the client has seen (see ``KubeCluster.watch``), or,
  on a fresh client, from the resourceVersion of a one-item list; no initial events.
* **Timeout** (the server ends every watch after ``timeoutSeconds``, 4–6 minutes here, as
  client-go's reflector does) and **bookmarks**: resume from the last resourceVersion.
* **410 Gone / Expired** (the resourceVersion was compacted away): re-list, emit what changed in the
  gap (ADDED/MODIFIED for objects newer than the last resourceVersion, DELETED for objects the
  watch had seen and the list no longer has), and watch on from the list's resourceVersion.
* **Connection errors** (an API server restart: ``Response ended prematurely``, connection refused)
  and 5xx: back off (0.25 s doubling to 5 s) and resume from the last resourceVersion, which the
  restarted server still knows (etcd kept it) or answers with 410, handled as above.
* **A kind the server does not serve (yet)**: discovery is asked again with the same back-off; once
  the kind appears (its CRD became Established), every object of it is emitted as ADDED.
* **Other errors** (401, 403, …): raised to the consumer, which decides (the informer (cvo.cluster.informer)
  treats any exception as "re-read everything" and watches again).

Stopping: when the consumer's iterator is closed (``async for`` left, task cancelled, or the
iterator dropped) or :meth:`KubeCluster.close` runs, the thread is told to stop and the watch
connection's socket is shut down, which wakes the thread out of its blocking read at once.

Comparing resourceVersions as integers is, strictly, outside the API's contract (they are
opaque); every Kubernetes API server backed by etcd uses etcd's global revision, and the comparison
only decides whether a re-list emits an object (a wrong answer costs a spurious or a missed wake-up
after a compaction, never a wrong object).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Protocol

import orjson
import urllib3

from cvo.cluster.api import ApiError, EventType, Object, Ref, WatchEvent, is_transient
from cvo.cluster.kube import errors
from cvo.cluster.kube.discovery import Discovery, Resource
from cvo.log import get_logger


class _Transport(Protocol):
    def open(self, method: str, path: str, query: list[tuple[str, str]] | None = None, body: Any = None,
             accept: str = "application/json", timeout: tuple[float, float | None] | None = None,
             ) -> urllib3.BaseHTTPResponse: ...


class WatchedCluster(Protocol):
    """What a watch thread needs of :class:`cvo.cluster.kube.cluster.KubeCluster` (which starts it)."""

    discovery: Discovery

    @property
    def transport(self) -> _Transport: ...

    @property
    def server(self) -> str: ...

    def call_blocking(self, method: str, path: str, *, ref: Ref | None, what: str, body: Any = None,
                      query: list[tuple[str, str]] | None = None, allow_404: bool = False) -> Object | None: ...

    def list_blocking(self, res: Resource, namespace: str | None, field_selector: str | None = None,
                      ) -> tuple[list[Object], str]: ...

    def note_resource_version(self, obj: Mapping[str, Any]) -> None: ...

    def observe(self, obj: Object, deleted: bool = False) -> None:
        """Every object a watch delivers, before its consumer sees it (a CRD Established feeds discovery)."""

log = get_logger("cvo.cluster.kube.watch")
_END = object()
MIN_TIMEOUT = 240  # seconds; each watch request asks for a random timeout in [MIN, 1.5·MIN]
BACKOFF_INITIAL = 0.25
BACKOFF_CAP = 5.0


class _Stopped(Exception):
    pass


class _Expired(Exception):
    pass


def _newer(rv: str, than: str | None) -> bool:
    if than is None:
        return True
    try:
        return int(rv) > int(than)
    except ValueError:
        return True


def _key(obj: Object) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def _stub(obj: Object) -> Object:
    """What is kept of an object the watch has seen: enough for a synthetic DELETED event."""
    meta = obj.get("metadata") or {}
    keep = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "labels") if k in meta}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": keep}


class WatchThread(threading.Thread):
    def __init__(self, cluster: WatchedCluster, group: str, kind: str, namespace: str | None, name: str | None,
                 since: str | None, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(name=f"cvo-watch-{kind}" + (f"-{name}" if name else ""), daemon=True)
        self.cluster = cluster
        self.group, self.kind, self.namespace, self.object_name = group, kind, namespace, name
        self.since = since
        self.loop = loop
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._resp: urllib3.BaseHTTPResponse | None = None
        self._known: dict[tuple[str, str], Object] = {}
        self.restarts = 0  # watch connections after the first (for tests and logs)
        self.relists = 0

    # ------------------------------------------------------------------------------ consumer side

    def stop(self) -> None:
        """Ask the thread to finish; wakes it from a blocking read.  Thread-safe, never blocks."""
        self.stopped.set()
        with self._lock:
            resp = self._resp
        if resp is not None:
            _shutdown(resp)

    # -------------------------------------------------------------------------------- the thread

    def run(self) -> None:
        try:
            self._loop()
        except _Stopped:
            pass
        except BaseException as err:  # handed to the consumer
            self._emit(err)
        finally:
            self._emit(_END)

    def _emit(self, item: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self.stopped.set()

    def _sleep(self, seconds: float) -> None:
        if self.stopped.wait(seconds):
            raise _Stopped

    def _loop(self) -> None:
        rv = self.since
        backoff = BACKOFF_INITIAL
        relist = False  # the next connection re-lists first (the kind appeared, or rv expired)
        floor: str | None = None  # what the re-list emits: objects newer than this (None: all)
        failing = 0  # consecutive failures
        connections = 0
        what = f"watch {self.kind}.{self.group}" if self.group else f"watch {self.kind}"
        while not self.stopped.is_set():
            try:
                res = self.cluster.discovery.resolve_group_kind(self.group, self.kind)
                if res is None:  # not served (yet): once it is, everything of the kind is new
                    relist, floor = True, None
                    self._sleep(backoff)
                    backoff = min(backoff * 2, BACKOFF_CAP)
                    continue
                if relist:
                    self.relists += 1
                    rv = self._relist(res, floor)
                    relist = False
                elif rv is None:
                    rv = self._current_version(res)
                if connections:
                    self.restarts += 1
                connections += 1
                for seen in self._stream(res, rv):
                    rv = seen
                    if failing:
                        log.info("watch re-established", watch=what, failures=failing)
                        failing = 0
                    backoff = BACKOFF_INITIAL
                backoff = BACKOFF_INITIAL  # the server ended the watch (its timeout): resume at once
                failing = 0
            except _Stopped:
                return
            except _Expired:
                relist, floor = True, rv
            except ApiError as err:
                if self.stopped.is_set():
                    return
                if not is_transient(err):
                    raise
                failing += 1
                if failing == 1:  # a restart or a just-created CRD's cache warming up: usually gone at once
                    log.info("watch interrupted; resuming", watch=what, error=str(err))
                elif failing == 4:
                    log.warning("watch keeps failing; still retrying", watch=what, error=str(err))
                self._sleep(backoff * (1 + random.random() / 4))
                backoff = min(backoff * 2, BACKOFF_CAP)

    def _current_version(self, res: Resource) -> str:
        query = [("limit", "1")]
        if self.object_name:
            query.append(("fieldSelector", f"metadata.name={self.object_name}"))
        page = self.cluster.call_blocking("GET", res.path(self.namespace), ref=None, what=f"list {res.plural}",
                                          query=query)
        return str(((page or {}).get("metadata") or {}).get("resourceVersion") or "")

    def _relist(self, res: Resource, floor: str | None) -> str:
        """List again and emit what changed since ``floor`` (everything when ``None``); the list's version."""
        selector = f"metadata.name={self.object_name}" if self.object_name else None
        items, list_rv = self.cluster.list_blocking(res, self.namespace, selector)
        seen = set()
        for obj in items:
            key = _key(obj)
            seen.add(key)
            rv = (obj.get("metadata") or {}).get("resourceVersion") or ""
            if _newer(rv, floor):
                self._deliver(EventType.MODIFIED if key in self._known else EventType.ADDED, obj)
            else:
                self._known[key] = _stub(obj)
        for key in [k for k in self._known if k not in seen]:
            self._deliver(EventType.DELETED, self._known[key])
        return list_rv

    def _deliver(self, type_: EventType, obj: Object) -> None:
        key = _key(obj)
        if type_ is EventType.DELETED:
            self._known.pop(key, None)
        else:
            self._known[key] = _stub(obj)
        # Before the consumer is woken: whoever it wakes finds discovery current.
        self.cluster.observe(obj, deleted=type_ is EventType.DELETED)
        self._emit(WatchEvent(type_, obj))

    def _stream(self, res: Resource, rv: str) -> Any:
        """Yield the resourceVersion after each event of one watch request (until the server ends it).

        The response is read as it comes, one JSON event per line, decoded with orjson (the client's
        ``Watch`` decodes with ``json``: the payload's CRDs, each delivered three times while they
        become Established, made that a tenth of cvo's CPU time during an install)."""
        timeout = random.randint(MIN_TIMEOUT, MIN_TIMEOUT * 3 // 2)
        cluster = self.cluster
        what = f"watch {res.plural}"
        query = [("watch", "true"), ("allowWatchBookmarks", "true"), ("resourceVersion", rv),
                 ("timeoutSeconds", str(timeout))]
        if self.object_name:
            query.append(("fieldSelector", f"metadata.name={self.object_name}"))
        try:
            resp = cluster.transport.open("GET", res.path(self.namespace), query, timeout=(10.0, timeout + 30.0))
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise errors.from_exception(err, None, what, cluster.server) from None
        if not 200 <= resp.status < 300:
            data = resp.data
            resp.release_conn()
            error = errors.from_response(resp.status, data, resp.headers, None, what)
            if resp.status == 410:
                raise _Expired(str(error))
            raise error
        with self._lock:
            if self.stopped.is_set():
                resp.close()
                raise _Stopped
            self._resp = resp
        try:
            for line in _lines(resp):
                if self.stopped.is_set():
                    raise _Stopped
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue  # as the client's Watch: a line that is not an event is skipped
                if not isinstance(event, dict):
                    continue
                type_ = event.get("type")
                obj = event.get("object")
                obj = obj if isinstance(obj, dict) else {}
                if type_ == "ERROR":
                    raw_code = obj.get("code")
                    code = raw_code if isinstance(raw_code, int) else 0
                    if code == 410:
                        raise _Expired(f"{obj.get('reason')}: {obj.get('message')}")
                    raise ApiError(errors.classify(code, str(obj.get("reason") or "")),
                                   f"{what}: {obj.get('reason')}: {obj.get('message')}")
                new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                if type_ in ("ADDED", "MODIFIED", "DELETED"):
                    obj.setdefault("apiVersion", res.api_version)
                    obj.setdefault("kind", res.kind)
                    cluster.note_resource_version(obj)
                    self._deliver(EventType(type_), obj)
                if new_rv:
                    yield str(new_rv)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:  # the connection broke
            if self.stopped.is_set():
                raise _Stopped from None
            raise errors.from_exception(err, None, what, cluster.server) from None
        finally:
            with self._lock:
                self._resp = None
            resp.close()
            resp.release_conn()


def _lines(resp: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """The response's lines as they arrive (without their newline; empty ones skipped)."""
    pending = b""
    for chunk in resp.stream(amt=None, decode_content=False):
        if not chunk:
            continue
        pending += chunk
        if b"\n" not in chunk:
            continue
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def _shutdown(resp: urllib3.BaseHTTPResponse) -> None:
    """Shut the watch connection's socket so the thread blocked reading it wakes up now."""
    conn = getattr(resp, "connection", None)
    sock = getattr(conn, "sock", None)
    if sock is None:
        return
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the raw socket; keeps the SSL object intact


async def events(thread: WatchThread) -> AsyncIterator[WatchEvent]:
    """The consumer's side: events in order; an error from the thread is raised here."""
    try:
        while True:
            item = await thread.queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        thread.stop()
