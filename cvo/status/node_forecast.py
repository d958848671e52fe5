"""The nodes' part of an update's forecast: how long each MachineConfigPool still needs, from the recorded nodes.

The machine-config operator moves a pool's nodes to the new config ``maxUnavailable`` at a time
(pkg/controller/node/node_controller.go ``getAllCandidateMachines``); each node is drained (as long as a
PodDisruptionBudget holds it), then written, rebooted and uncordoned (pkg/daemon/update.go).  The records
keep each node's two phases (:class:`cvo.status.update_records.NodeTime`): the drain and the rest (the
*reboot*).  A pool's remaining time in one simulated future (:func:`sample_pool`): every node still to go
draws a recorded drain and a recorded reboot (resampled from every recorded node: a drain a budget held
comes back as often as it happened), a node under way draws what is left of a phase longer than it has
been in it, and the nodes are scheduled ``maxUnavailable`` at a time, the next one taking the first slot
that frees.  A pool that has not started starts with the machine-config operator (it renders the new
configs when the CVO reaches its manifests); a paused pool is excluded (its nodes wait for the admin, and
oc's assessment says *Excluded*).

Pure functions over typed views and records; :mod:`cvo.status.forecast` draws them beside the
ClusterOperators' part.
"""

from __future__ import annotations

import bisect
import heapq
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cvo.objects.machineconfigpool import MachineConfigPool, scaled_max_unavailable
from cvo.objects.node import Node
from cvo.status.godur import SECOND, parse_time
from cvo.status.node_state import CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN, STATE
from cvo.status.update_records import UPDATE, UpdateRecord
from cvo.status.upgrade_nodes import MASTER, WORKER, Machines, config_versions, which_pool

MACHINE_CONFIG = "machine-config"  # the ClusterOperator whose update starts the pools' rollout
STATE_DONE = "Done"
MIN_SHARE_LEFT = 0.25  # a node in a phase longer than any recorded one still needs this share of the median

PENDING, DRAINING, REBOOTING, DONE = "pending", "draining", "rebooting", "done"


def pool_width(value: Any, nodes: int) -> int:
    """How many of a pool's ``nodes`` update at once (:func:`cvo.objects.machineconfigpool.scaled_max_unavailable`);
    0 when none ever will: a negative value, or one the node controller refuses (it then leaves the pool as it is)."""
    try:
        return max(0, scaled_max_unavailable(value, nodes))
    except ValueError:
        return 0


@dataclass(frozen=True)
class NodeModel:
    """The recorded nodes' phases (seconds), every pool and every recorded update together."""

    drains: tuple[float, ...]  # sorted
    reboots: tuple[float, ...]  # sorted

    @property
    def usable(self) -> bool:
        return bool(self.drains) and bool(self.reboots)


def node_model(records: Iterable[UpdateRecord]) -> NodeModel:
    """The phases of every node the records saw through both (a node's times are whole once it is done, so a
    partial record's finished nodes count too)."""
    drains: list[float] = []
    reboots: list[float] = []
    for record in records:
        if record.mode != UPDATE:
            continue
        for pool in record.pools.values():
            for node in pool.nodes.values():
                if node.drain is not None and node.reboot is not None:
                    drains.append(node.drain)
                    reboots.append(node.reboot)
    return NodeModel(tuple(sorted(drains)), tuple(sorted(reboots)))


@dataclass(frozen=True)
class NodeProgress:
    """A node under way: its phase and since when (nanoseconds; None: not known, taken as just begun)."""

    name: str
    phase: str  # DRAINING or REBOOTING
    since: int | None


@dataclass(frozen=True)
class PoolProgress:
    """What a pool still has to do: its nodes under way, how many are still to go, how many at once."""

    name: str
    width: int  # maxUnavailable, scaled; 0: no node ever updates (a value the node controller refuses)
    paused: bool
    running: tuple[NodeProgress, ...]
    pending: int
    started: bool  # the pool's rollout has begun (a node picked or already at the new config)

    @property
    def left(self) -> int:
        return len(self.running) + self.pending


def node_phase(node: Node, target: str) -> str:
    """Where ``node`` is on its way to the config ``target`` (the pool's ``spec.configuration.name``), from the
    machine-config daemon's annotations (pkg/daemon/constants)."""
    a = node.metadata.annotations
    if a.get(CURRENT_CONFIG) == target and a.get(STATE) == STATE_DONE:
        return DONE
    if a.get(DESIRED_CONFIG) != target:
        return PENDING
    drain = a.get(DESIRED_DRAIN, "")
    if drain.startswith("drain-") and a.get(LAST_APPLIED_DRAIN) == drain:
        return REBOOTING
    return DRAINING


def pool_progress(pool: MachineConfigPool, nodes: Sequence[Node], times: Mapping[str, tuple[int | None, int | None]],
                  stale: bool = False) -> PoolProgress:
    """``pool`` now; ``times``: per node, when it was picked and drained (nanoseconds, from the update's record).
    ``stale``: the pool's config is not the target release's yet (the machine-config operator has not rendered
    it): every node is still to go, when the operator gets to it."""
    width = pool_width(pool.spec.max_unavailable, len(nodes))
    if stale:
        return PoolProgress(pool.name, width, pool.spec.paused, (), len(nodes), started=False)
    target = pool.spec.configuration.name
    running: list[NodeProgress] = []
    pending = done = 0
    for node in sorted(nodes, key=lambda n: n.name):
        phase = node_phase(node, target) if target else DONE
        started, drained = times.get(node.name, (None, None))
        if phase == DONE:
            done += 1
        elif phase == PENDING:
            pending += 1
        else:
            running.append(NodeProgress(node.name, phase, started if phase == DRAINING else drained))
    return PoolProgress(pool.name, width, pool.spec.paused, tuple(running), pending, started=bool(running) or done > 0)


def _left(rng: random.Random, recorded: Sequence[float], spent: float) -> float:
    """What is left of a phase ``spent`` seconds in: a recorded duration longer than that, drawn, minus it
    (``recorded`` sorted, as :func:`node_model` keeps them).  Past every recorded one (a drain a
    PodDisruptionBudget holds, never seen before): as long again as it has taken, the median of a wait whose
    end nothing bounds, and at least a share of the usual phase."""
    first = bisect.bisect_right(recorded, spent)
    if first < len(recorded):
        return recorded[rng.randrange(first, len(recorded))] - spent
    return max(spent, recorded[len(recorded) // 2] * MIN_SHARE_LEFT)


def sample_pool(rng: random.Random, pool: PoolProgress, model: NodeModel, now: int) -> float:
    """One simulated remaining time (seconds, from when the pool starts) of ``pool``: its nodes ``width`` at a time."""
    slots = [0.0] * max(0, pool.width - len(pool.running))
    for node in pool.running:
        spent = 0.0 if node.since is None else max(0.0, (now - node.since) / SECOND)
        if node.phase == DRAINING:
            slots.append(_left(rng, model.drains, spent) + rng.choice(model.reboots))
        else:
            slots.append(_left(rng, model.reboots, spent))
    if not slots:
        slots = [0.0]
    heapq.heapify(slots)
    if pool.pending:
        drains = rng.choices(model.drains, k=pool.pending)
        reboots = rng.choices(model.reboots, k=pool.pending)
        for drain, reboot in zip(drains, reboots, strict=True):
            heapq.heapreplace(slots, slots[0] + drain + reboot)
    return max(slots)


def record_times(record: UpdateRecord | None) -> dict[str, dict[str, tuple[int | None, int | None]]]:
    """Per pool, per node: when the running update's record saw it picked and drained (nanoseconds)."""
    if record is None:
        return {}
    start = parse_time(record.started_at)
    if start is None:
        return {}
    out: dict[str, dict[str, tuple[int | None, int | None]]] = {}
    for name, pool in record.pools.items():
        out[name] = {node: (start + round(t.started * SECOND),
                            None if t.drained is None else start + round(t.drained * SECOND))
                     for node, t in pool.nodes.items()}
    return out


def pools_progress(machines: Machines, version: str, record: UpdateRecord | None) -> list[PoolProgress]:
    """Every pool's progress towards ``version`` (oc's ``whichPool`` puts each node in one pool; a name twice: the
    first), with the times the running update's ``record`` saw its nodes picked and drained.  A pool whose config
    belongs to another release (its rendered MachineConfig's release annotation) has not started."""
    pools, nodes = machines.pools, machines.nodes
    versions = config_versions(machines.configs)
    first: dict[str, MachineConfigPool] = {}
    for pool in pools:
        first.setdefault(pool.name, pool)
    master, worker = first.get(MASTER), first.get(WORKER)
    custom = [p for name, p in first.items() if name not in (MASTER, WORKER)]
    members: dict[str, list[Node]] = {}
    for node in nodes:
        members.setdefault(which_pool(node, master, worker, custom), []).append(node)
    times = record_times(record)
    return [pool_progress(pool, members.get(name, []), times.get(name, {}),
                          stale=versions.get(pool.spec.configuration.name, version) != version)
            for name, pool in first.items()]
