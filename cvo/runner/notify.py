"""Waking waiters when an object changes: one watch per kind, fanned out by name.

A waiter takes a :meth:`Notifier.mark` before it reads the object, and then waits for a change
newer than the mark, so a change between the read and the wait is never missed.  No polling: the
waiter sleeps until the watch reports a change or its deadline passes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Callable, Hashable
from typing import Any

from cvo.cluster.api import Cluster
from cvo.log import get_logger

log = get_logger("cvo.notify")
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


class Notifier:
    def __init__(self, cluster: Cluster, group: str, kind: str,
                 key: Callable[[dict[str, Any]], Hashable] | None = None) -> None:
        self.cluster = cluster
        self.group = group
        self.kind = kind
        self.key = key
        self._last_keys: dict[str, Hashable] = {}
        self._versions: dict[str, int] = defaultdict(int)
        self._any_version = 0
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"watch {self.kind}")
            await self._ready.wait()
            if self.key is not None:  # what is already there is the baseline, not a change
                for obj in await self.cluster.list(self.group, self.kind):
                    name = (obj.get("metadata") or {}).get("name", "")
                    self._last_keys.setdefault(name, self.key(obj))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                stream = self.cluster.watch(self.group, self.kind)
                self._ready.set()
                async for event in stream:
                    name = (event.obj.get("metadata") or {}).get("name", "")
                    if self.key is not None and event.type != "DELETED":
                        key = self.key(event.obj)
                        if self._last_keys.get(name, _UNSEEN) == key:
                            continue
                        self._last_keys[name] = key
                    async with self._changed:
                        self._versions[name] += 1
                        self._any_version += 1
                        self._changed.notify_all()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the backend's watch broke: say so, then watch again
                log.warning("watch ended; restarting", kind=self.kind, error=str(err))
                self._ready.set()
                async with self._changed:  # wake every waiter: each re-reads its object
                    self._any_version += 1
                    for key in self._versions:
                        self._versions[key] += 1
                    self._changed.notify_all()
                await asyncio.sleep(1.0)

    def mark(self, name: str | None = None) -> int:
        return self._any_version if name is None else self._versions[name]

    async def wait_change(self, name: str | None, since: int, timeout: float | None) -> bool:
        """Wait until ``name`` (or anything, for ``None``) changed after ``since``; False on timeout."""

        def changed() -> bool:
            return (self._any_version if name is None else self._versions[name]) > since

        async with self._changed:
            if changed():
                return True
            try:
                await asyncio.wait_for(self._changed.wait_for(changed), timeout)
            except TimeoutError:
                return False
            return True
