"""The embedded Kubernetes API server: the simulated cluster behind the :class:`Cluster` protocol.

Objects are held in memory as their JSON bytes (decoded on demand), so every object handed out is a
fresh copy made with one ``orjson.loads``; measured on the corpus this is 2–3× faster than
``deepcopy``.  Writes are synchronous inside their coroutine: the server never yields, so a write and
the watch events it queues happen atomically and in order.

With a state file the objects also live in a :class:`cvo.cluster.embedded.store.Store` (SQLite) that any number of
cvo processes share: every write is committed there before it returns, checked inside the store's
lock against what every process has written, and each process takes in the others' writes before
each request and, while anything watches, within :data:`POLL_INTERVAL` of real time.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import itertools
import os
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from cvo.clock import Clock, to_rfc3339
from cvo.cluster.api import ApiError, ApiErrorKind, EventType, Object, Ref, WatchEvent
from cvo.cluster.embedded.checked_rows import CheckedRows, row_digest
from cvo.cluster.embedded.kinds import (
    CRD,
    NAMESPACE,
    GroupKind,
    KindInfo,
    ServedKinds,
    crd_kind,
    crd_problem,
)
from cvo.cluster.embedded.poller import POLL_INTERVAL as POLL_INTERVAL
from cvo.cluster.embedded.poller import StorePoller
from cvo.cluster.embedded.semantics import (
    check_job_immutable,
    check_preconditions,
    compose,
    crd_status,
    default_status,
    encode,
    is_established,
    kind_text,
    request_metadata,
    same_object,
    spec_changed,
    uid_for,
)
from cvo.cluster.embedded.store import DB_ERRORS, Row, StateError, Store
from cvo.objects.meta import OBJECT_META_SCHEMA
from cvo.objects.schema import check
from cvo.payload.schema import secret_string_data

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "openshift-config",
                      "openshift-config-managed")
READ_VERBS = ("get", "list")
WRITE_VERBS = ("create", "update", "update_status", "delete")
SECRET = ("", "Secret")


class _Entry:
    """One stored object: its JSON bytes, decoded lazily (and once) when the server needs to look inside."""

    __slots__ = ("_obj", "raw")

    def __init__(self, raw: bytes, obj: Object | None = None) -> None:
        self.raw = raw
        self._obj = obj

    @property
    def obj(self) -> Object:
        """The server's private view; never hand it out."""
        if self._obj is None:
            self._obj = orjson.loads(self.raw)
        return self._obj

    def copy(self) -> Object:
        copied: Object = orjson.loads(self.raw)
        return copied


@dataclass
class SimStats:
    """Calls per verb (failed ones included), injected failures, and writes that changed nothing."""

    verbs: Counter[str] = field(default_factory=Counter)
    injected: int = 0
    noop_writes: int = 0

    @property
    def reads(self) -> int:
        return sum(self.verbs[v] for v in READ_VERBS)

    @property
    def writes(self) -> int:
        return sum(self.verbs[v] for v in WRITE_VERBS)


@dataclass
class _Injection:
    target: Ref | GroupKind
    kind: ApiErrorKind
    remaining: int
    message: str
    verbs: frozenset[str]

    def matches(self, verb: str, ref: Ref) -> bool:
        if verb not in self.verbs:
            return False
        if isinstance(self.target, Ref):
            return self.target == ref
        return self.target == (ref.group, ref.kind)


@dataclass(eq=False)
class _Subscriber:
    group: str
    kind: str
    namespace: str | None
    name: str | None
    queue: asyncio.Queue[WatchEvent | None] = field(default_factory=asyncio.Queue)

    def matches(self, ref: Ref) -> bool:
        return (ref.group == self.group and ref.kind == self.kind
                and self.namespace in (None, ref.namespace) and self.name in (None, ref.name))


@dataclass(eq=False)
class _Group:
    """The store transaction the writes of one event-loop turn share (a group commit)."""

    rv: int  # the resourceVersion when it began
    immediate: bool = False  # committed at the end of its one write (no event loop, or a synchronous write)
    broken: bool = False  # a write failed half-way through changing memory: roll back
    writes: int = 0  # successful writes in it
    settled: bool = False  # committed, failed or abandoned: ``outcome`` says which
    outcome: ApiError | None = None
    # One future per writer waiting for the commit (its own: a writer cancelled while it waits cancels
    # only its future, never the commit the others wait for).
    waiters: list[asyncio.Future[ApiError | None]] = field(default_factory=list)

    def settle(self, outcome: ApiError | None) -> None:
        if self.settled:
            return
        self.settled, self.outcome = True, outcome
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(outcome)
        self.waiters.clear()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class SimCluster:
    """The simulated API server.  See the module docstring of :mod:`cvo.cluster.embedded` for the rules it enforces."""

    def __init__(self, clock: Clock | None = None, *, path: str | os.PathLike[str] | None = None,
                 enforce_namespaces: bool = True, openshift_apis: bool = True,
                 served_groups: Iterable[str] | None = None, crd_establish_delay: float = 0.0,
                 namespaces: Iterable[str] = DEFAULT_NAMESPACES, group_commit: bool = False,
                 checked_rows: CheckedRows | None = None, snapshot_reads: bool = False) -> None:
        self.clock = clock or Clock()
        # where the rows known to pass the open-time checks are kept (None: every row is checked on opening)
        self.checked_rows = checked_rows
        # reads see the store as it was opened (one consistent view, no look for other processes' writes before
        # each read): for a command that reads once and ends, such as ``cvo diff``
        self.snapshot_reads = snapshot_reads
        # With a store: commit the writes of one event-loop turn together (each writer still returns only
        # once its write is committed).  Off by default: a write then never yields to the loop.
        self.group_commit = group_commit
        self.path = Path(path) if path is not None else None
        self.enforce_namespaces = enforce_namespaces
        self.crd_establish_delay = crd_establish_delay
        self.kinds = ServedKinds(openshift_apis, served_groups)
        self.stats = SimStats()
        self._objects: dict[GroupKind, dict[Ref, _Entry]] = {}
        self._resource_version = 0
        self._uid_counter = 0
        self._subscribers: list[_Subscriber] = []
        self._read_hooks: list[Callable[[Ref], object]] = []
        self._injections: list[_Injection] = []
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._timer_keys = itertools.count()
        self._store: Store | None = None
        self._poller: StorePoller | None = None
        self._in_write = False
        self._group: _Group | None = None  # the open store transaction writes join
        self._last_outcome: ApiError | None = None
        self._deferred: list[tuple[Ref, EventType, bytes]] = []  # watch events of the open transaction
        self._closed = False
        if self.path is not None:
            self._open_store(self.path, namespaces)
        else:
            for name in namespaces:
                self._create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    # ----------------------------------------------------------------------------------- protocol

    @property
    def openshift_apis(self) -> bool:
        return self.kinds.openshift_apis

    @openshift_apis.setter
    def openshift_apis(self, value: bool) -> None:
        self.kinds.openshift_apis = value

    @property
    def resource_version(self) -> int:
        return self._resource_version

    async def get(self, ref: Ref) -> Object | None:
        self.stats.verbs["get"] += 1
        self._sync_for_read()
        for hook in list(self._read_hooks):
            hook(ref)
        entry = self._entry(ref)
        return entry.copy() if entry else None

    async def list(self, group: str, kind: str, namespace: str | None = None) -> list[Object]:
        self.stats.verbs["list"] += 1
        self._sync_for_read()
        entries = self._objects.get((group, kind), {})
        return [entries[r].copy() for r in sorted(entries) if namespace is None or r.namespace == namespace]

    async def create(self, obj: Object) -> Object:
        self.stats.verbs["create"] += 1
        with self._writing(group=True):
            result = self._create(obj, verb="create")
        await self._committed()
        return result

    async def update(self, obj: Object) -> Object:
        self.stats.verbs["update"] += 1
        with self._writing(group=True):
            result = self._update(obj)
        await self._committed()
        return result

    async def update_status(self, obj: Object) -> Object:
        self.stats.verbs["update_status"] += 1
        with self._writing(group=True):
            result = self._update_status(obj)
        await self._committed()
        return result

    async def delete(self, ref: Ref) -> bool:
        self.stats.verbs["delete"] += 1
        self._check_injection("delete", ref)
        with self._writing(group=True):
            gone: builtins.list[str] = []
            result = self._delete(ref, gone)
            self._collect_garbage(gone)
        await self._committed()
        return result

    async def serves(self, api_version: str, kind: str) -> bool:
        self._sync_for_read()
        return self.kinds.serves(api_version, kind)

    def watch(self, group: str, kind: str, namespace: str | None = None, name: str | None = None,
              ) -> AsyncIterator[WatchEvent]:
        """Subscribes now (not at the first iteration); unsubscribes when the iterator is closed or dropped.

        With a store, another process's writes reach the watch within :data:`POLL_INTERVAL` (real time).
        """
        self.stats.verbs["watch"] += 1
        self._sync()
        self._start_poller()
        sub = _Subscriber(group, kind, namespace, name)
        self._subscribers.append(sub)
        stream = self._stream(sub)
        weakref.finalize(stream, self._unsubscribe, sub)  # dropped before it was ever iterated
        return stream

    async def close(self) -> None:
        """Ends every watch, cancels pending CRD establishment, records the clock and closes the store."""
        with contextlib.suppress(ApiError):
            self._commit_group()
        for sub in list(self._subscribers):
            sub.queue.put_nowait(None)
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        if self._poller is not None:
            self._poller.stop()
            self._poller = None
        if self._store is not None and not self._closed:
            with contextlib.suppress(Exception):  # the clock is a courtesy to the next command
                self._store.advance_clock(self.clock.now().timestamp())
            self._store.close()
        self._closed = True

    @property
    def store(self) -> Store | None:
        """The durable store behind this cluster, if it has a state file."""
        return self._store

    # -------------------------------------------------------------------------- scenario hooks

    def on_read(self, callback: Callable[[Ref], object]) -> Callable[[], None]:
        """Call ``callback(ref)`` on every ``get``; returns a function that removes it."""
        self._read_hooks.append(callback)

        def remove() -> None:
            if callback in self._read_hooks:
                self._read_hooks.remove(callback)

        return remove

    def inject_failure(self, target: Ref | GroupKind, kind: ApiErrorKind, count: int = 1,
                       message: str | None = None, verbs: Iterable[str] = WRITE_VERBS) -> None:
        """Make the next ``count`` writes to ``target`` (a Ref, or a (group, kind)) fail with ``kind``."""
        unknown = set(verbs) - set(WRITE_VERBS)
        if unknown:
            raise ValueError(f"not write verbs: {sorted(unknown)}")
        text = message or f"injected {kind.value} error"
        self._injections.append(_Injection(target, kind, count, text, frozenset(verbs)))

    def subscriber_count(self) -> int:
        return len(self._subscribers)

    def refs(self) -> builtins.list[Ref]:
        """Every stored object's Ref, sorted."""
        return sorted(ref for entries in self._objects.values() for ref in entries)

    # ------------------------------------------------------------------------------ persistence

    @classmethod
    def load(cls, path: str | os.PathLike[str], clock: Clock | None = None, **options: Any) -> SimCluster:
        """The cluster stored at ``path`` (a fresh one if there is none yet); ``clock`` continues its timeline.

        :class:`cvo.cluster.embedded.store.StateError` when the file is not a usable state file.
        """
        return cls(clock, path=path, **options)

    def _open_store(self, path: Path, namespaces: Iterable[str]) -> None:
        """Load the stored objects into memory (creating the store and its default namespaces if new).

        :class:`StateError` (one line, naming the file) for anything that is not a usable store.
        """
        try:
            self._load_store(path, namespaces)
        except DB_ERRORS as err:
            if self._store is not None:
                self._store.close()
            raise StateError(f"{path}: corrupt state database: {err}") from None
        except ApiError as err:  # a write on opening (default namespaces, CRDs to establish) failed
            if self._store is not None:
                self._store.close()
            raise StateError(f"{path}: cannot open the state database: {err}") from None
        except StateError:
            if self._store is not None:
                self._store.close()
            raise

    def _load_store(self, path: Path, namespaces: Iterable[str]) -> None:
        self._store = Store.open(path, initial_clock=self.clock.now().timestamp())
        meta = self._store.meta
        if meta.resource_version == 0:
            with self._writing():
                for name in namespaces:
                    if self._entry(Ref(*NAMESPACE, "", name)) is None:
                        self._create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        else:
            _continue_timeline(self.clock, datetime.fromtimestamp(meta.clock, UTC))
            known = self.checked_rows.load() if self.checked_rows is not None else None
            rows = self._store.snapshot(known)
            crds = self._reload(rows, notify=False)
            if self.checked_rows is not None and (known is None or any(row.known is None for row in rows)
                                                  or len(known) != len(rows)):
                # every row passed (or _reload raised): remember them, and forget the rows no longer there
                self.checked_rows.save(row.known or row_digest(row.ref, row.data) for row in rows
                                       if row.data is not None)
            self._establish_pending(crds)

    def _reload(self, rows: builtins.list[Row], notify: bool) -> builtins.list[Object]:
        """Replace the objects in memory by ``rows`` (every live object); watchers see the differences.  The CRDs
        among them, decoded (private copies)."""
        assert self._store is not None
        meta = self._store.meta
        # decoded once: the CRDs are read below (a row known to pass is decoded only if it is a CRD)
        checked = [_check_row(self._store.path, row) if row.known is None
                   else orjson.loads(row.data) if (row.ref.group, row.ref.kind) == CRD and row.data is not None
                   else None for row in rows]
        old = {ref: entry for entries in self._objects.values() for ref, entry in entries.items()}
        self._objects.clear()
        for row in rows:
            assert row.data is not None
            self._objects.setdefault((row.ref.group, row.ref.kind), {})[row.ref] = _Entry(row.data)
        self._resource_version, self._uid_counter = meta.resource_version, meta.uid_counter
        crds = [obj for row, obj in zip(rows, checked, strict=True) if obj is not None and (row.ref.group, row.ref.kind) == CRD]
        for ref, entry in old.items():
            if self._entry(ref) is None:
                if (ref.group, ref.kind) == CRD:
                    self.kinds.unregister_crd(ref.name)
                if notify:
                    self._notify(ref, EventType.DELETED, entry.raw)
        for row in rows if notify else ():
            before = old.get(row.ref)
            if before is None or before.raw != row.data:
                assert row.data is not None
                self._notify(row.ref, EventType.ADDED if before is None else EventType.MODIFIED, row.data)
        for crd in crds:  # not kept in the entries: that would keep every CRD decoded
            if is_established(crd.get("status")) and not crd_problem(crd):
                self.kinds.register_crd(crd["metadata"]["name"], crd_kind(crd))
        return crds

    def _establish_pending(self, crds: builtins.list[Object]) -> None:
        """CRDs stored without Established (their writer stopped before its delay ran out): establish now."""
        pending = [crd for crd in crds if not is_established(crd.get("status"))]
        if pending:
            with self._writing():
                for crd in pending:
                    self._establish_now(crd)

    def _sync_for_read(self) -> None:
        """Before a read: take in other processes' writes, unless the poller already does within 0.1 s.

        While something watches, the poller thread looks at the store every :data:`POLL_INTERVAL` and has
        the changes taken in; a read may then lag another process's write by that much, as a read from
        an informer's cache does.  Writes never lag: they take the changes in inside the store's lock.
        """
        if self._poller is None and not self.snapshot_reads:
            self._sync()

    def _sync(self) -> None:
        """Take in what other processes wrote to the store since this one last looked (cheap when nothing)."""
        if self._store is None or self._closed:
            return
        with self._store_errors():
            changes = self._store.changes()
            if changes is None:
                return
            for row in changes.rows:
                _check_row(self._store.path, row)
        _continue_timeline(self.clock, datetime.fromtimestamp(changes.meta.clock, UTC))
        if changes.full:
            self._reload(changes.rows, notify=True)
            return
        for row in changes.rows:
            self._take(row)
        self._resource_version = max(self._resource_version, changes.meta.resource_version)
        self._uid_counter = max(self._uid_counter, changes.meta.uid_counter)

    def _take(self, row: Row) -> None:
        """One object another process wrote (or deleted): into memory, to the watchers, and into served kinds."""
        ref = row.ref
        entries = self._objects.setdefault((ref.group, ref.kind), {})
        before = entries.get(ref)
        if row.data is None:
            if before is None:
                return
            del entries[ref]
            if (ref.group, ref.kind) == CRD:
                self.kinds.unregister_crd(ref.name)  # the writer deleted the instances itself
            obj = before.copy()
            obj["metadata"]["resourceVersion"] = str(row.rv)
            self._notify(ref, EventType.DELETED, orjson.dumps(obj))
            return
        entries[ref] = _Entry(row.data)
        if (ref.group, ref.kind) == CRD:
            crd = orjson.loads(row.data)
            if is_established(crd.get("status")) and not crd_problem(crd):
                self.kinds.register_crd(ref.name, crd_kind(crd))
        self._notify(ref, EventType.ADDED if before is None else EventType.MODIFIED, row.data)

    @contextlib.contextmanager
    def _writing(self, group: bool = False) -> Iterator[None]:
        """One write request: atomic and durable in the store (if any); watchers hear of it after the commit.

        The store's lock is taken, and the objects in memory brought up to date, before the request is
        checked (existence, resourceVersion, namespace), so it is checked against what every process
        has written.  ``group``: the write may join the transaction of this event-loop turn (a group
        commit: every write of the turn is committed together at its end, and each writer's call returns
        only after that, through :meth:`_committed`); without it the write is committed at once.
        """
        if self._in_write:  # a write made while writing (a namespace's contents, a CRD's instances)
            yield
            return
        if self._store is None:
            self._in_write = True
            try:
                yield
            finally:
                self._in_write = False
                deferred, self._deferred = self._deferred, []
                for ref, event, raw in deferred:  # in memory there is no rollback: what changed, changed
                    self._dispatch(ref, event, raw)
            return
        if self._group is None:
            with self._store_errors():
                self._store.begin()
            try:
                with self._store_errors():
                    self._sync()
            except BaseException:
                self._store.rollback()
                raise
            self._group = _Group(self._resource_version)
            if group and self.group_commit and _running_loop() is not None:
                asyncio.get_running_loop().call_soon(self._commit_group, self._group)
            else:
                self._group.immediate = True
        current = self._group
        self._in_write = True
        rv = self._resource_version
        try:
            yield
            current.writes += 1
        except BaseException:
            if self._resource_version != rv:
                current.broken = True  # memory took in part of a write that failed: undone at the commit
            elif current.writes == 0 and not current.immediate:
                self._abandon_group(current)  # nothing to commit: do not hold the lock to the end of the turn
            raise
        finally:
            self._in_write = False
            if current.immediate:
                self._commit_group(current)

    def _abandon_group(self, group: _Group) -> None:
        assert self._store is not None
        self._store.rollback()
        self._group = None
        self._deferred = []
        group.settle(None)

    async def _committed(self) -> None:
        """Return once the write just made is committed (at the end of this event-loop turn)."""
        group = self._group
        if group is None or group.immediate:
            outcome = self._last_outcome
        else:
            waiter: asyncio.Future[ApiError | None] = asyncio.get_running_loop().create_future()
            group.waiters.append(waiter)
            outcome = await waiter
        if outcome is not None:
            raise outcome

    def _commit_group(self, group: _Group | None = None) -> None:
        """Commit the open transaction; on failure, undo what memory took in and fail every writer in it."""
        group = group or self._group
        if group is None or group is not self._group:
            return  # already committed (or abandoned)
        self._group = None
        assert self._store is not None
        error: ApiError | None = None
        try:
            with self._store_errors():
                if group.broken:
                    raise StateError(f"{self._store.path}: a write failed half-way; its transaction was undone")
                if self._resource_version != group.rv:
                    self._store.set_meta(self._resource_version, self._uid_counter, self.clock.now().timestamp())
                self._store.commit()
        except ApiError as err:
            error = err
        finally:
            if self._store.in_transaction:
                self._store.rollback()
        deferred, self._deferred = self._deferred, []
        if error is not None and self._resource_version != group.rv:
            with contextlib.suppress(ApiError), self._store_errors():
                self._reload(self._store.snapshot(), notify=False)  # memory goes back to what the store has
        if error is None:
            for ref, event, raw in deferred:
                self._dispatch(ref, event, raw)
        self._last_outcome = error
        group.settle(error)
        if group.immediate and error is not None:
            raise error

    @contextlib.contextmanager
    def _store_errors(self) -> Iterator[None]:
        """A store that fails under a running command is an API server whose storage fails: an InternalError."""
        try:
            yield
        except (StateError, *DB_ERRORS) as err:
            assert self._store is not None
            text = str(err) if isinstance(err, StateError) else " ".join(f"{self._store.path}: {err}".split())
            raise ApiError(ApiErrorKind.INTERNAL, f"the embedded cluster's store failed: {text}") from None

    def _start_poller(self) -> None:
        """Watch the store for other processes' commits in real time, at most ``POLL_INTERVAL`` behind."""
        if self._store is None or self._poller is not None or self._closed:
            return
        self._poller = StorePoller(self._store.path, asyncio.get_running_loop(), self._sync)
        self._poller.start()
        weakref.finalize(self, self._poller.stop)  # a cluster dropped without close() stops its thread too

    # ----------------------------------------------------------------------------------- writes

    def _create(self, obj: Object, verb: str = "") -> Object:
        ref, info = self._admit(obj, verb)
        self._require_namespace(ref)
        if self._entry(ref) is not None:
            raise ApiError(ApiErrorKind.ALREADY_EXISTS, f'{info.resource} "{ref.name}" already exists', ref)
        if (obj.get("metadata") or {}).get("resourceVersion"):
            raise ApiError(ApiErrorKind.INVALID, f'{kind_text(info)} "{ref.name}" is invalid: metadata.resourceVersion: '
                           "Invalid value: resourceVersion should not be set on objects to be created", ref)
        self._uid_counter += 1
        meta = request_metadata(obj, ref)
        meta.update(uid=uid_for(self._uid_counter), generation=1, creationTimestamp=to_rfc3339(self.clock.now()))
        status = None if info.status_subresource else obj.get("status")
        new = compose(secret_string_data(obj) if (ref.group, ref.kind) == SECRET else obj, meta,
                       default_status(ref, status))
        if (ref.group, ref.kind) == CRD:
            return self._write_crd(ref, new, None)
        return self._commit(ref, new, EventType.ADDED)

    def _update(self, obj: Object) -> Object:
        ref, info = self._admit(obj, "update")
        entry = self._require(ref, info)
        check_preconditions(ref, info, entry.obj, obj)
        old = entry.obj
        meta = request_metadata(obj, ref)
        meta.update({k: old["metadata"][k] for k in ("uid", "creationTimestamp", "generation")
                     if k in old["metadata"]})
        status = old.get("status") if info.status_subresource else obj.get("status")
        new = compose(secret_string_data(obj) if (ref.group, ref.kind) == SECRET else obj, meta, status)
        if (ref.group, ref.kind) == ("batch", "Job"):
            check_job_immutable(ref, old, new)
        if spec_changed(old, new):
            meta["generation"] = old["metadata"].get("generation", 0) + 1
        if (ref.group, ref.kind) == CRD:
            return self._write_crd(ref, new, old)
        return self._commit(ref, new, EventType.MODIFIED, old)

    def _update_status(self, obj: Object) -> Object:
        ref, info = self._admit(obj, "update_status")
        entry = self._require(ref, info)
        check_preconditions(ref, info, entry.obj, obj)
        old = entry.obj
        new = compose(old, dict(old["metadata"]), obj.get("status"))
        return self._commit(ref, new, EventType.MODIFIED, old)

    def _delete(self, ref: Ref, gone: builtins.list[str] | None = None) -> bool:
        """Delete one object (a Namespace with its contents); its uid, and theirs, go to ``gone``."""
        entry = self._objects.get((ref.group, ref.kind), {}).pop(ref, None)
        if entry is None:
            return False
        if gone is not None and isinstance(uid := entry.obj["metadata"].get("uid"), str):
            gone.append(uid)
        if (ref.group, ref.kind) == NAMESPACE:
            self._delete_all(lambda r: r.namespace == ref.name, gone)
        elif (ref.group, ref.kind) == CRD:
            self._stop_serving(ref.name)
        obj = entry.obj
        rv = self._next_resource_version()
        obj["metadata"]["resourceVersion"] = str(rv)
        if self._store is not None:
            self._store.delete(ref, rv)
        self._notify(ref, EventType.DELETED, orjson.dumps(obj))
        return True

    def _delete_all(self, matches: Callable[[Ref], bool], gone: builtins.list[str] | None = None) -> None:
        for ref in [r for entries in self._objects.values() for r in entries if matches(r)]:
            self._delete(ref, gone)

    def _collect_garbage(self, gone: builtins.list[str]) -> None:
        """The garbage collector's background propagation, done at once: an object with an owner among
        the deleted ones, and no owner left, is deleted too, and so on down to its own dependents.
        (Unlike the real collector, an object that keeps another owner keeps the dangling reference.)"""
        uids = set(gone)
        while gone:
            dependents = []
            for entries in self._objects.values():
                for ref, entry in entries.items():
                    if b'"ownerReferences"' not in entry.raw:
                        continue
                    owners = [o for o in entry.obj["metadata"].get("ownerReferences") or [] if isinstance(o, dict)]
                    if any(o.get("uid") in uids for o in owners) and not any(self._owner_exists(ref, o) for o in owners):
                        dependents.append(ref)
            gone = []
            for ref in dependents:
                self._delete(ref, gone)
            uids.update(gone)

    def _owner_exists(self, dependent: Ref, owner: Mapping[str, Any]) -> bool:
        group = str(owner.get("apiVersion", "")).rpartition("/")[0]
        info = self.kinds.describe(group, str(owner.get("kind", "")))
        namespace = "" if info.namespaced is False or not dependent.namespace else dependent.namespace
        entry = self._entry(Ref(group, str(owner.get("kind", "")), namespace, str(owner.get("name", ""))))
        return entry is not None and entry.obj["metadata"].get("uid") == owner.get("uid")

    def _commit(self, ref: Ref, new: Object, event: EventType, old: Object | None = None) -> Object:
        """Store ``new`` (a composition that may share sub-objects with the request) and notify watchers."""
        entries = self._objects.setdefault((ref.group, ref.kind), {})
        if old is not None and same_object(old, new):
            self.stats.noop_writes += 1
            return entries[ref].copy()
        new["metadata"]["resourceVersion"] = str(self._resource_version + 1)
        raw = encode(ref, new)
        rv = self._next_resource_version()
        entries[ref] = _Entry(raw)
        if self._store is not None:
            self._store.put(ref, rv, raw)
        self._notify(ref, event, raw)
        stored: Object = orjson.loads(raw)
        return stored

    def _next_resource_version(self) -> int:
        self._resource_version += 1
        return self._resource_version

    # ------------------------------------------------------------------------------- validation

    def _admit(self, obj: Object, verb: str) -> tuple[Ref, KindInfo]:
        """Check a write request: kind, injected failures, served kind, name; returns its normalised Ref."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not api_version or not kind:
            raise ApiError(ApiErrorKind.INVALID, "Object 'Kind' and 'apiVersion' are required", None)
        ref = Ref.of(obj)
        info = self.kinds.describe(ref.group, ref.kind)
        ref = self._scoped(ref, info)
        if verb:
            self._check_injection(verb, ref)
        if not self.kinds.serves(api_version, kind):
            raise ApiError(ApiErrorKind.NO_KIND_MATCH, f'no matches for kind "{kind}" in version "{api_version}"', ref)
        if not ref.name:
            raise ApiError(ApiErrorKind.INVALID, f'{kind_text(info)} "" is invalid: metadata.name: Required value: '
                           "name or generateName is required", ref)
        return ref, info

    @staticmethod
    def _scoped(ref: Ref, info: KindInfo) -> Ref:
        """Cluster-scoped kinds lose a namespace (as on a real server); namespaced ones must have one."""
        if info.namespaced is False and ref.namespace:
            return Ref(ref.group, ref.kind, "", ref.name)
        if info.namespaced and not ref.namespace:
            raise ApiError(ApiErrorKind.INVALID, f'{kind_text(info)} "{ref.name}" is invalid: metadata.namespace: '
                           "Required value: the kind is namespaced", ref)
        return ref

    def _require_namespace(self, ref: Ref) -> None:
        if self.enforce_namespaces and ref.namespace and self._entry(Ref(*NAMESPACE, "", ref.namespace)) is None:
            raise ApiError(ApiErrorKind.NOT_FOUND, f'namespaces "{ref.namespace}" not found', ref,
                           namespace_missing=ref.namespace)

    def _require(self, ref: Ref, info: KindInfo) -> _Entry:
        entry = self._entry(ref)
        if entry is None:
            raise ApiError(ApiErrorKind.NOT_FOUND, f'{info.resource} "{ref.name}" not found', ref)
        return entry

    def _check_injection(self, verb: str, ref: Ref) -> None:
        for injection in self._injections:
            if injection.matches(verb, ref):
                injection.remaining -= 1
                if injection.remaining <= 0:
                    self._injections.remove(injection)
                self.stats.injected += 1
                raise ApiError(injection.kind, injection.message, ref)

    def _entry(self, ref: Ref) -> _Entry | None:
        return self._objects.get((ref.group, ref.kind), {}).get(ref)

    # -------------------------------------------------------------------------------------- CRDs

    def _write_crd(self, ref: Ref, new: Object, old: Object | None) -> Object:
        """Store a CRD with the status the server's naming and establishing controllers give it."""
        problem = crd_problem(new)
        if problem:
            raise ApiError(ApiErrorKind.INVALID, f'CustomResourceDefinition.apiextensions.k8s.io "{ref.name}" '
                           f"is invalid: {problem}", ref)
        immediate = self.crd_establish_delay <= 0
        established = immediate or is_established(new.get("status"))
        new["status"] = crd_status(new, new.get("status"), established, self.clock.now())
        result = self._commit(ref, new, EventType.ADDED if old is None else EventType.MODIFIED, old)
        if immediate:
            self.kinds.register_crd(ref.name, crd_kind(new))
        else:
            self._schedule_establish(ref.name, result["metadata"]["uid"])
        return result

    def _schedule_establish(self, name: str, uid: str) -> None:
        key = next(self._timer_keys)
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(self.crd_establish_delay, self._establish_later, key, name, uid)

    def _establish_later(self, key: int, name: str, uid: str) -> None:
        self._timers.pop(key, None)
        if self._closed:
            return
        with self._writing():
            entry = self._entry(Ref(*CRD, "", name))
            if entry is not None and entry.obj["metadata"].get("uid") == uid:
                self._establish_now(entry.obj)

    def _establish_now(self, crd: Object) -> None:
        """Serve the CRD's kind and, if its status does not say so yet, mark it Established."""
        if crd_problem(crd):
            return
        ref = Ref.of(crd)
        self.kinds.register_crd(ref.name, crd_kind(crd))
        if not is_established(crd.get("status")):
            status = crd_status(crd, crd.get("status"), True, self.clock.now())
            self._commit(ref, compose(crd, dict(crd["metadata"]), status), EventType.MODIFIED, crd)

    def _stop_serving(self, name: str) -> None:
        info = self.kinds.unregister_crd(name)
        if info is not None and self.kinds.lookup(info.group, info.kind) is None:
            self._delete_all(lambda r: (r.group, r.kind) == (info.group, info.kind))

    # ---------------------------------------------------------------------------------- watches

    def _notify(self, ref: Ref, event: EventType, raw: bytes) -> None:
        if self._in_write or self._group is not None:
            self._deferred.append((ref, event, raw))
        else:
            self._dispatch(ref, event, raw)

    def _dispatch(self, ref: Ref, event: EventType, raw: bytes) -> None:
        for sub in self._subscribers:
            if sub.matches(ref):
                sub.queue.put_nowait(WatchEvent(event, orjson.loads(raw)))

    async def _stream(self, sub: _Subscriber) -> AsyncIterator[WatchEvent]:
        try:
            while (event := await sub.queue.get()) is not None:
                yield event
        finally:
            self._unsubscribe(sub)

    def _unsubscribe(self, sub: _Subscriber) -> None:
        if sub in self._subscribers:
            self._subscribers.remove(sub)


# ------------------------------------------------------------------------------------- helpers


def _check_row(path: Path, row: Row) -> Object | None:
    """A stored object must be the JSON object its key says; anything else is a corrupt store. The object decoded."""
    if row.data is None:
        return None
    try:
        obj = orjson.loads(row.data)
    except orjson.JSONDecodeError:
        obj = None
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    ok = (isinstance(meta, dict) and isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str)
          and isinstance(meta.get("name"), str) and isinstance(meta.get("namespace", ""), str))
    if not ok or Ref.of(obj) != row.ref:
        raise StateError(f"{path}: corrupt state database: {row.ref} is not a JSON object of that kind and name")
    # the server reads its objects' metadata (generation, owners, finalizers…) as the API server validated it
    problems = check(OBJECT_META_SCHEMA, meta)[1]
    if problems:
        raise StateError(f"{path}: corrupt state database: {row.ref}: metadata.{problems[0]}")
    checked: Object = obj
    return checked


def _continue_timeline(clock: Clock, saved: datetime) -> None:
    """Move ``clock`` forward to ``saved`` if it is behind: the next command continues the same timeline.

    A clock already at or past the saved time is left alone: time never runs backwards.
    """
    now = clock.now()
    if now < saved:
        clock.epoch += saved - now
