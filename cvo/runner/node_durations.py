"""The nodes' part of an update, recorded: when each node was picked, drained and done, per MachineConfigPool.

:class:`NodeRecorder` watches Nodes and MachineConfigPools while an update runs (the sync worker starts one
for the sweep) and after it (``cvo run`` keeps one between sweeps: the worker pools go on after the
ClusterVersion says Completed, as on a real cluster).  A node is *picked* when the machine-config operator
sets its ``desiredConfig`` to its pool's new config, *drained* when ``lastAppliedDrain`` catches up with
``desiredDrain`` (pkg/controller/drain/drain_controller.go), *done* when the daemon reports ``currentConfig``
and ``state: Done`` (pkg/daemon/update.go).  The times go into the update's record
(:mod:`cvo.status.update_records`, ``pools``), from which :mod:`cvo.status.node_forecast` forecasts the
next update's nodes.  Only what was seen is recorded: a node first seen when it was already under way
(the recorder started late) keeps no times, so no record holds a phase shorter than it was.

Writes are rate-limited (:data:`SAVE_EVERY` seconds of the injected clock) and happen again when the
recorder stops; a write that fails is logged and retried with the next one, never an error of the sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from cvo.clock import Clock, parse_rfc3339
from cvo.cluster.api import ApiError, Cluster, cv_ref
from cvo.cluster.informer import Backoff, Informer
from cvo.log import get_logger
from cvo.objects import MachineConfigPool, Node, Refused
from cvo.objects.machineconfig import GROUP
from cvo.payload.fields import dig
from cvo.runner.durations import RECORDS_REF, write_records
from cvo.status.node_forecast import DONE, DRAINING, PENDING, REBOOTING, node_phase, pool_width
from cvo.status.update_records import UPDATE, NodeTime, PoolTime, UpdateRecord, parse_records
from cvo.status.upgrade_nodes import MASTER, WORKER, which_pool

log = get_logger("cvo.node_durations")
SAVE_EVERY = 10.0  # seconds (the injected clock's) between two writes of the record


def observe(pool: PoolTime, node: str, phase: str, at: float, late: set[str], first_look: bool) -> bool:
    """Note ``node`` of ``pool`` in ``phase`` at ``at`` (seconds from the update's start); whether anything
    changed.  ``first_look``: the recorder has only just started (a node under way then is *late*)."""
    known = pool.nodes.get(node)
    if node in late or phase == PENDING:
        return False
    if known is None:
        if phase != DRAINING or first_look:  # under way before we looked: its phases are not ours to tell
            if phase != DONE:
                late.add(node)
            return False
        pool.nodes[node] = NodeTime(at)
    elif phase == REBOOTING and known.drained is None:
        pool.nodes[node] = NodeTime(known.started, at)
    elif phase == DONE and known.done is None:
        pool.nodes[node] = NodeTime(known.started, known.drained if known.drained is not None else at, at)
    else:
        return False
    started = pool.nodes[node].started
    pool.started = started if pool.started is None else min(pool.started, started)
    return True


class NodeRecorder:
    """Records the nodes' phases of the update whose record is ``record_key`` (version, startedAt), or of the
    newest update recorded for the ClusterVersion's desired version."""

    def __init__(self, cluster: Cluster, clock: Clock, record_key: tuple[str, str] | None = None,
                 save_every: float = SAVE_EVERY) -> None:
        self.cluster, self.clock, self.save_every = cluster, clock, save_every
        self.record_key = record_key
        self.follow = record_key is None  # the newest update's record, looked up again on each write
        self.pools: dict[str, PoolTime] = {}
        self._mcps: dict[str, MachineConfigPool] = {}
        self._nodes: dict[str, Node] = {}
        self._pool_of: dict[str, str] = {}  # node -> its pool
        self._members: dict[str, set[str]] = {}  # pool -> its nodes
        self._done: dict[str, set[str]] = {}  # pool -> its nodes at its config
        self._late: set[str] = set()
        self._looking = True  # the informers' first lists: what is under way then is late
        self._started_at: datetime | None = None
        self._dirty = asyncio.Event()
        self._informers: list[Informer] = []
        self._saver: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start watching (nothing when the cluster serves no MachineConfigPools: no machine-config operator)."""
        try:
            if not await self.cluster.serves(f"{GROUP}/v1", "MachineConfigPool"):
                return
        except ApiError:
            return
        await self._resolve()
        backoff = Backoff(1.0, 10.0)
        pools = Informer(self.cluster, GROUP, "MachineConfigPool", backoff=backoff, task_name="record pools")
        nodes = Informer(self.cluster, "", "Node", backoff=backoff, task_name="record nodes")
        pools.listeners.append(self._pool_seen)
        nodes.listeners.append(self._node_seen)
        self._informers = [pools, nodes]
        await pools.start()
        await nodes.start()
        self._looking = False
        if self._started_at is not None:
            at = max(0.0, (self.clock.now() - self._started_at).total_seconds())
            if any([self._pool_done(pool, at) for pool in list(self._members)]):
                self._dirty.set()
        self._saver = asyncio.create_task(self._save_loop(), name="record nodes' times")

    async def stop(self) -> None:
        for informer in self._informers:
            await informer.stop()
        self._informers = []
        if self._saver is not None:
            self._saver.cancel()
            await asyncio.gather(self._saver, return_exceptions=True)
            self._saver = None
        if self._dirty.is_set():
            await self.save()

    @property
    def finished(self) -> bool:
        """Every pool the recorder saw start is done."""
        return bool(self.pools) and all(p.done is not None for p in self.pools.values() if p.started is not None)

    async def _resolve(self) -> None:
        """Which update's record the times go to (following: the newest one of the desired version, which may
        have changed since), and what that record already holds."""
        key = await self._current_update() if self.follow else self.record_key
        if key is None or (key == self.record_key and self._started_at is not None):
            return
        self.record_key, self._late = key, set()
        self._started_at = None
        with contextlib.suppress(ValueError):
            self._started_at = parse_rfc3339(key[1])
        self.pools = {}
        with contextlib.suppress(ApiError):
            for record in parse_records(await self.cluster.get(RECORDS_REF)):
                if (record.version, record.started_at) == key:
                    self.pools = {name: PoolTime(p.max_unavailable, p.size, p.started, p.done, dict(p.nodes))
                                  for name, p in record.pools.items()}
        # looked up on the first node's change of a new update: what is under way began with it, just now
        for node in list(self._nodes):
            self._look(node)

    async def _current_update(self) -> tuple[str, str] | None:
        try:
            cv = await self.cluster.get(cv_ref())
            version = dig(cv or {}, "status", "desired", "version")
            records = parse_records(await self.cluster.get(RECORDS_REF))
        except ApiError:
            return None
        found = [r for r in records if r.mode == UPDATE and r.version == version]
        return (found[-1].version, found[-1].started_at) if found else None

    # --- what the watches deliver ------------------------------------------------------------------------

    def _pool_seen(self, name: str, obj: dict[str, Any] | None) -> None:
        before = self._mcps.get(name)
        if obj is None:
            self._mcps.pop(name, None)
        else:
            view = _read(MachineConfigPool.read, obj)
            if view is None:
                return
            self._mcps[name] = view
            if before is not None and (before.spec.node_selector, before.spec.configuration.name,
                                       before.spec.max_unavailable) == (view.spec.node_selector,
                                                                        view.spec.configuration.name,
                                                                        view.spec.max_unavailable):
                return  # its status: the pool's writer follows its nodes, nothing to note
            if self.follow and before is not None and before.spec.configuration.name != view.spec.configuration.name:
                self._dirty.set()  # new configs rendered: perhaps a new update, whose record the next write looks up
        if before is None or obj is None or before.spec.node_selector != self._mcps[name].spec.node_selector:
            self._place_all()  # which node is in which pool may have changed
        for node in sorted(self._members.get(name, ())):
            self._look(node)

    def _node_seen(self, name: str, obj: dict[str, Any] | None) -> None:
        if obj is None:
            self._nodes.pop(name, None)
            self._place(name)
            return
        view = _read(Node.read, obj)
        if view is not None:
            self._nodes[name] = view
            self._place(name)
            self._look(name)

    def _place_all(self) -> None:
        self._pool_of.clear()
        self._members.clear()
        for name in self._nodes:
            self._place(name)

    def _place(self, name: str) -> None:
        """Put node ``name`` in its pool (oc's ``whichPool``: master, then a custom pool, then worker)."""
        old = self._pool_of.pop(name, None)
        if old is not None:
            self._members.get(old, set()).discard(name)
            self._done.get(old, set()).discard(name)
        node = self._nodes.get(name)
        if node is None:
            return
        master, worker = self._mcps.get(MASTER), self._mcps.get(WORKER)
        custom = [p for n, p in sorted(self._mcps.items()) if n not in (MASTER, WORKER)]
        pool = which_pool(node, master, worker, custom)
        if pool:
            self._pool_of[name] = pool
            self._members.setdefault(pool, set()).add(name)

    def _look(self, name: str) -> None:
        node = self._nodes.get(name)
        pool_name = self._pool_of.get(name)
        if node is None or pool_name is None:
            return
        if self._started_at is None:  # no update recorded yet (following: looked up again on the next write)
            self._dirty.set()
            return
        pool = self._mcps.get(pool_name)
        target = pool.spec.configuration.name if pool is not None else ""
        if pool is None or not target:
            return
        members = self._members.get(pool_name, set())
        times = self.pools.setdefault(pool_name, PoolTime())
        times.size = len(members)
        times.max_unavailable = max(1, pool_width(pool.spec.max_unavailable, len(members)))
        at = max(0.0, (self.clock.now() - self._started_at).total_seconds())
        phase = node_phase(node, target)
        done = self._done.setdefault(pool_name, set())
        if phase == DONE:
            done.add(name)
        else:
            done.discard(name)
        changed = observe(times, name, phase, at, self._late, self._looking)
        if self._pool_done(pool_name, at) or changed:
            self._dirty.set()

    def _pool_done(self, pool: str, at: float) -> bool:
        """Mark ``pool`` done at ``at`` if every node of it is at its config now (not while the first lists are
        still coming in: a pool's nodes are not all known then)."""
        times = self.pools.get(pool)
        if self._looking or times is None or times.started is None or times.done is not None:
            return False
        if len(self._done.get(pool, ())) != len(self._members.get(pool, ())):
            return False
        times.done = at
        return True

    # --- writing ------------------------------------------------------------------------------------------

    async def _save_loop(self) -> None:
        """On a node's change: (following) the update it belongs to, then a write; at most every save_every."""
        while True:
            await self._dirty.wait()
            if self.follow:
                await self._resolve()
            await self.save()
            await asyncio.sleep(self.save_every)

    async def save(self) -> None:
        """Write the pools' times into the update's record (nothing when it is not there: no update recorded)."""
        self._dirty.clear()
        key = self.record_key
        if key is None or not self.pools:
            return
        pools = {name: PoolTime(p.max_unavailable, p.size, p.started, p.done, dict(p.nodes))
                 for name, p in self.pools.items() if p.nodes or p.started is not None}

        def change(records: list[UpdateRecord]) -> list[UpdateRecord] | None:
            record = next((r for r in records if (r.version, r.started_at) == key), None)
            if record is None:
                return None
            record.pools = {**record.pools, **pools}
            return records

        if not await write_records(self.cluster, change):
            self._dirty.set()  # the record is not there yet (or the write failed): again with the next write


def _read(reader: Callable[[dict[str, Any]], Any], obj: dict[str, Any]) -> Any:
    try:
        return reader(obj)
    except Refused:
        return None
