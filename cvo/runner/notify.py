"""Waking waiters when an object changes: one watch per kind, fanned out by name.

A waiter takes a :meth:`Notifier.mark` before it reads the object, and then waits for a change
newer than the mark, so a change between the read and the wait is never missed.  No polling: the
waiter sleeps until the watch reports a change or its deadline passes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict

from cvo.cluster.api import Cluster
from cvo.log import get_logger

log = get_logger("cvo.notify")


class Notifier:
    def __init__(self, cluster: Cluster, group: str, kind: str) -> None:
        self.cluster = cluster
        self.group = group
        self.kind = kind
        self._versions: dict[str, int] = defaultdict(int)
        self._any_version = 0
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"watch {self.kind}")
            await self._ready.wait()

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
