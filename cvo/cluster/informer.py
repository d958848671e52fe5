"""One watch on a kind, kept open for good: client-go's shared informer (``tools/cache/shared_informer.go``,
``reflector.go``) as cvo needs it.  Every loop that follows a kind runs on it.

* **Waiters** take a :meth:`Informer.mark` before they read the object, and then wait for a change
  newer than the mark, so a change between the read and the wait is never missed.  No polling: the
  waiter sleeps until the watch reports a change or its deadline passes.
* **Listeners** (plain functions) see every object the watch delivers, as a lister's cache would.
* **Handlers**, a controller's event handlers: ``on_watch(first)`` runs each time the watch is opened
  (again), before its events (where a controller lists what it may have missed), and ``on_event``
  for each event, in order, in the informer's task.

Whatever fails (the watch, a handler) is logged (or told to ``on_error``), and the watch is opened
again after the back-off; every waiter is woken to read again, as events may have been missed.  The
watch ends only when the cluster closes; the informer then stops.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any

from cvo.cluster.api import ReadOnlyCluster, WatchEvent
from cvo.log import get_logger

log = get_logger("cvo.informer")
_UNSEEN = object()


def _conditions(obj: dict[str, Any], *types: str) -> tuple[str | None, ...]:
    by_type = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}
    return tuple(by_type.get(t) for t in types)


def operator_health_key(obj: dict[str, Any]) -> Hashable:
    """What the CVO's ClusterOperator event handler looks at: versions, Available, Degraded (and
    cvo's Upgrading).  Other changes (Upgradeable, relatedObjects, messages) wake nobody."""
    versions = tuple(sorted((v.get("name", ""), v.get("version", ""))
                            for v in (obj.get("status") or {}).get("versions") or []))
    return versions, _conditions(obj, "Available", "Degraded", "Upgrading")


def established_key(obj: dict[str, Any]) -> Hashable:
    return _conditions(obj, "Established")


@dataclass(frozen=True)
class Backoff:
    """Seconds before the watch is opened again after a failure: ``initial``, doubling up to ``cap``
    while it keeps failing, back to ``initial`` once an event was handled."""

    initial: float = 1.0
    cap: float = 1.0

    def after(self, delay: float) -> float:
        return min(delay * 2, self.cap)


async def _close(stream: AsyncIterator[WatchEvent]) -> None:
    """End the watch now (both backends' watches are async generators; an iterator without ``aclose`` ends
    when dropped)."""
    if isinstance(stream, AsyncGenerator):
        with contextlib.suppress(Exception):
            await stream.aclose()


class Informer:
    """One watch on a kind (or on one object of it, ``name``); waiters wait for a change of one object
    (or of any, for ``None``).

    Each waiter has its own future, so a change wakes the waiters of that name only: a thousand
    ClusterOperator waits do not all wake up for each report.  :attr:`listeners` see every object
    the watch delivers (not only key changes), and those already there at start: enough to keep
    derived state (such as which operators block upgrades) up to date without listing again.

    ``baseline=False``: no list at start.  Listing decodes every object of the kind at once, which
    for the payload's CRDs is 20 MB per copy of the corpus (200 MB at 20×, the sweep's peak); without
    the baseline, the first event of an object that was already there wakes its waiters even if its
    key did not change, and waiters that mark, then read, just read once more.  (No listeners then.)

    ``keep_objects=True``: the newest object the watch (or the baseline list) delivered for each name is
    kept, and :meth:`cached` gives it, as an informer's lister would: a waiter that marks, then takes the
    cached object, needs no read.  Whenever the watch breaks and is opened again (it may have missed
    changes), the kept objects are dropped, so waiters read until the watch delivers them again.

    ``on_watch``, ``on_event``, ``on_error`` and ``backoff``: see the module docstring.  ``task_name``
    names the informer's task (``watch KIND`` by default).
    """

    def __init__(self, cluster: ReadOnlyCluster, group: str, kind: str,
                 key: Callable[[dict[str, Any]], Hashable] | None = None, *, baseline: bool = True,
                 keep_objects: bool = False, name: str | None = None,
                 on_watch: Callable[[bool], Awaitable[None]] | None = None,
                 on_event: Callable[[WatchEvent], Awaitable[None]] | None = None,
                 on_error: Callable[[Exception, float], None] | None = None,
                 backoff: Backoff = Backoff(), task_name: str | None = None) -> None:
        self.cluster = cluster
        self.group = group
        self.kind = kind
        self.key = key
        self.baseline = baseline
        self.keep_objects = keep_objects
        self.name = name
        self.on_watch = on_watch  # after each (re)subscription, told whether it is the first
        self.on_event = on_event
        self.on_error = on_error  # told what failed and the seconds until the next watch (default: a warning)
        self.backoff = backoff
        self.task_name = task_name or f"watch {kind}"
        self._objects: dict[str, dict[str, Any]] = {}  # name -> newest object delivered (keep_objects)
        self._known: set[str] = set()  # names seen (the baseline list must not override newer events)
        self.listeners: list[Callable[[str, dict[str, Any] | None], None]] = []  # (name, object or None: gone)
        self._last_keys: dict[str, Hashable] = {}
        self._versions: dict[str, int] = defaultdict(int)
        self._any_version = 0
        self._waiters: dict[str | None, set[asyncio.Future[None]]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=self.task_name)
            await self._ready.wait()
            if not self.baseline:
                return
            # What is already there is the baseline, not a change.  (A watch event that arrived
            # meanwhile is newer than this list: it wins.)
            for obj in await self.cluster.list(self.group, self.kind):
                name = (obj.get("metadata") or {}).get("name", "")
                if self.name is not None and name != self.name:
                    continue
                if name not in self._known:
                    self._known.add(name)
                    self._keep(name, obj)
                    self._tell(name, obj)
                if self.key is not None:
                    self._last_keys.setdefault(name, self.key(obj))

    @property
    def running(self) -> bool:
        return self._task is not None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
            self._objects.clear()

    async def _run(self) -> None:
        delay = self.backoff.initial
        first = True
        while True:
            stream: AsyncIterator[WatchEvent] | None = None
            try:
                stream = self.cluster.watch(self.group, self.kind, name=self.name)
                self._ready.set()
                was_first, first = first, False
                if self.on_watch is not None:
                    await self.on_watch(was_first)
                async for event in stream:
                    self._deliver(event)
                    if self.on_event is not None:
                        await self.on_event(event)
                    delay = self.backoff.initial
                return  # the cluster is closing
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the backend's watch broke, or a handler failed: watch again
                self._objects.clear()  # the next watch starts later: what it missed is not known
                self._ready.set()
                self._poke_all()  # every waiter re-reads its object
                if self.on_error is not None:
                    self.on_error(err, delay)
                else:
                    log.warning("watch failed; watching again", kind=self.kind, error=str(err), retry_in=delay)
            finally:
                if stream is not None:
                    await _close(stream)
            await asyncio.sleep(delay)
            delay = self.backoff.after(delay)

    def _deliver(self, event: WatchEvent) -> None:
        name = (event.obj.get("metadata") or {}).get("name", "")
        self._known.add(name)
        current = None if event.type == "DELETED" else event.obj
        self._keep(name, current)
        self._tell(name, current)
        if event.type != "DELETED" and self.key is not None:
            key = self.key(event.obj)
            if self._last_keys.get(name, _UNSEEN) == key:
                return
            self._last_keys[name] = key
        self.poke(name)

    def _keep(self, name: str, obj: dict[str, Any] | None) -> None:
        if not self.keep_objects:
            return
        if obj is None:
            self._objects.pop(name, None)
        else:
            self._objects[name] = obj

    def cached(self, name: str) -> dict[str, Any] | None:
        """The newest ``name`` the running watch delivered (``keep_objects``); ``None``: read it instead.

        Take a :meth:`mark` first, as before a read: a change after it wakes :meth:`wait_change`."""
        if self._task is None:
            return None
        return self._objects.get(name)

    def delivered(self, name: str) -> bool:
        """Whether the watch (or the baseline list) has delivered anything of ``name`` yet."""
        return name in self._known

    def _tell(self, name: str, obj: dict[str, Any] | None) -> None:
        for listener in self.listeners:
            listener(name, obj)

    def poke(self, name: str) -> None:
        """Count a change of ``name`` and wake its waiters (and those waiting for any change)."""
        self._versions[name] += 1
        self._any_version += 1
        for key in (name, None):
            for future in self._waiters.pop(key, ()):
                if not future.done():
                    future.set_result(None)

    def _poke_all(self) -> None:
        self._any_version += 1
        for key in self._versions:
            self._versions[key] += 1
        waiters, self._waiters = self._waiters, defaultdict(set)
        for futures in waiters.values():
            for future in futures:
                if not future.done():
                    future.set_result(None)

    def mark(self, name: str | None = None) -> int:
        return self._any_version if name is None else self._versions[name]

    async def wait_change(self, name: str | None, since: int, timeout: float | None) -> bool:
        """Wait until ``name`` (or anything, for ``None``) changed after ``since``; False on timeout."""

        def changed() -> bool:
            return (self._any_version if name is None else self._versions[name]) > since

        if changed():
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters[name].add(future)
        try:
            await asyncio.wait((future,), timeout=timeout)
        finally:
            waiters = self._waiters.get(name)
            if waiters is not None:
                waiters.discard(future)
                if not waiters:
                    del self._waiters[name]
            future.cancel()
        return changed()
