"""Writing the sweep's state to the ClusterVersion object, throttled like the CVO's status notifier.

A write happens at once on an edge (a failure appears, changes or clears; a ClusterOperator wait
starts; completion) and otherwise at most every ``throttle`` seconds, so a thousand task
completions do not become a thousand writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from cvo.clock import Clock
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, cv_ref
from cvo.cvstatus import SyncStatus, cluster_version_object, update_cluster_version_status
from cvo.errors import UpdateError
from cvo.runner.events import Event, Reporter
from cvo.upgradeable import Blocker, apply_upgradeable


def _condition_key(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c.get("type", ""): (c.get("status", ""), c.get("reason", ""), c.get("message", ""))
            for c in status.get("conditions") or []}


class StatusWriter:
    def __init__(self, cluster: Cluster, clock: Clock, throttle: float = 15.0, reporter: Reporter | None = None,
                 name: str = "version") -> None:
        self.cluster = cluster
        self.clock = clock
        self.throttle = throttle
        self.reporter = reporter
        self.ref = cv_ref(name)
        self._last_write: float | None = None
        self._release_accepted: tuple[str, str, str] | None = None
        self._cv: dict[str, Any] | None = None
        self._lock = asyncio.Lock()  # one writer at a time: parallel nodes report through one object
        # Where the Upgradeable condition comes from; evaluated on every forced (edge) write.
        self.upgradeable: Callable[[dict[str, Any]], Awaitable[list[Blocker]]] | None = None
        self.accepted_risks = ""

    async def current(self) -> dict[str, Any]:
        cv = await self.cluster.get(self.ref)
        if cv is not None:
            self._cv = cv
        return self._cv or {}

    async def ensure(self, version: str, image: str, release_accepted: tuple[str, str, str]) -> dict[str, Any]:
        """The ClusterVersion, created if missing (a fresh install)."""
        self._release_accepted = release_accepted
        cv = await self.cluster.get(self.ref)
        if cv is None:
            try:
                cv = await self.cluster.create(cluster_version_object(self.ref.name))
            except ApiError as err:
                if err.kind is not ApiErrorKind.ALREADY_EXISTS:
                    raise
                cv = await self.cluster.get(self.ref) or {}
        self._cv = cv
        return cv

    def due(self) -> bool:
        """Whether an unforced write would happen now (the throttle has passed)."""
        return self._last_write is None or self.clock.monotonic() - self._last_write >= self.throttle

    async def write(self, **kwargs: Any) -> None:
        """Write the status; serialised, and re-read once if another writer got there first."""
        async with self._lock:
            for attempt in range(3):
                try:
                    await self._write(**kwargs)
                    return
                except ApiError as err:
                    if err.kind is not ApiErrorKind.CONFLICT or attempt == 2:
                        raise
                    kwargs["force"] = True

    async def _write(self, *, version: str, image: str, done: int, total: int, completed: int, reconciling: bool,
                    initial: bool, failure: UpdateError | None, co_start_times: dict[str, datetime],
                    errors: list[UpdateError] | None = None, force: bool = False) -> None:
        now_mono = self.clock.monotonic()
        if not force and not self.due():
            return
        cv = await self.current()
        old_status = cv.get("status") or {}
        sync = SyncStatus(
            version=version, image=image, done=done, total=total, completed=completed, reconciling=reconciling,
            failure=failure, errors=list(errors or ([] if failure is None else [failure])), initial=initial,
            co_start_times=dict(co_start_times),
            release_accepted=self._release_accepted, accepted_risks=self.accepted_risks,
            generation=(cv.get("metadata") or {}).get("generation"),
        )
        new_status = update_cluster_version_status(old_status, sync, self.clock.now())
        if force and self.upgradeable is not None:
            new_status = apply_upgradeable(new_status, await self.upgradeable(cv), self.clock.now())
        if new_status == old_status:
            self._last_write = now_mono
            return
        updated = dict(cv)
        updated["status"] = new_status
        self._cv = await self.cluster.update_status(updated)
        self._last_write = now_mono
        if self.reporter is not None:
            before, after = _condition_key(old_status), _condition_key(new_status)
            for type_, value in after.items():
                if before.get(type_) != value:
                    self.reporter.emit(Event(self.clock.now(), "condition.changed",
                                             {"type": type_, "status": value[0], "reason": value[1],
                                              "message": value[2]}))
