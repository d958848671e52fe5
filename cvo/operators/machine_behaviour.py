"""How the simulated machine-config operator's pools and nodes behave: the ``nodes`` and ``pools`` keys of
the ``machine-config`` entry of a behaviour file.

    machine-config:
      nodes: {drain: 30s, reboot: 90s, fail: [worker-2]}   # per node; a failing node goes Degraded
      pools:
        master: 3                                         # nodes
        worker: {nodes: 3, max-unavailable: 1}            # an integer or a percentage ("50%")
        infra: {nodes: 2, paused: true}

Without ``pools`` the pools are master and worker of 3 nodes each; without ``nodes`` a drain takes 30 s and a
reboot 90 s.  Nodes are named after their pool: ``master-0``, ``worker-1``, ``infra-0``, …
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cvo.operators.durations import label, parse_duration, show

MAX_NODES = 1000  # per pool
_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?$", re.ASCII)
_PERCENT = re.compile(r"^(\d{1,3})%$", re.ASCII)


@dataclass(frozen=True)
class PoolBehaviour:
    name: str
    nodes: int = 3
    max_unavailable: int | str = 1  # nodes, or a percentage of the pool's ("10%"): the pool's spec.maxUnavailable
    paused: bool = False

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.nodes)]


@dataclass(frozen=True)
class MachinesBehaviour:
    pools: tuple[PoolBehaviour, ...] = (PoolBehaviour("master"), PoolBehaviour("worker"))
    drain: float = 30.0
    reboot: float = 90.0
    fail: frozenset[str] = frozenset()  # nodes that go Degraded instead of rebooting into the new config


def _max_unavailable(value: Any, where: str) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, str) and (match := _PERCENT.match(value.strip())) and 1 <= int(match.group(1)) <= 100:
        return value.strip()
    raise ValueError(f"{where}: {show(value)} is not a number of nodes (1 or more) or a percentage (1% to 100%)")


def _pool(name: Any, value: Any, where: str) -> PoolBehaviour:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{where}: {show(name)} is not a pool name (lower-case letters, digits and '-')")
    spot = f"{where}.{label(name)}"
    if isinstance(value, int) and not isinstance(value, bool):
        value = {"nodes": value}
    if not isinstance(value, Mapping):
        raise ValueError(f"{spot}: expected a number of nodes or {{nodes, max-unavailable?, paused?}}")
    unknown = set(value) - {"nodes", "max-unavailable", "paused"}
    if unknown:
        raise ValueError(f"{spot}: unknown key {show(sorted(unknown, key=str)[0])}; known: max-unavailable, nodes, paused")
    nodes = value.get("nodes", 3)
    if not isinstance(nodes, int) or isinstance(nodes, bool) or not 0 <= nodes <= MAX_NODES:
        raise ValueError(f"{spot}.nodes: expected an integer from 0 to {MAX_NODES:,}")
    paused = value.get("paused", False)
    if not isinstance(paused, bool):
        raise ValueError(f"{spot}.paused: expected true or false")
    return PoolBehaviour(name, nodes, _max_unavailable(value.get("max-unavailable", 1), f"{spot}.max-unavailable"),
                         paused)


def parse_machines(nodes: Any, pools: Any, what: str) -> MachinesBehaviour:
    """The ``nodes`` and ``pools`` of an operator's behaviour (either may be ``None``)."""
    out = MachinesBehaviour()
    if pools is not None:
        if not isinstance(pools, Mapping) or not pools:
            raise ValueError(f"{what}.pools: expected a mapping of pool name to its nodes")
        parsed = tuple(_pool(name, value, f"{what}.pools") for name, value in pools.items())
        out = MachinesBehaviour(pools=parsed)
    if nodes is None:
        return out
    if not isinstance(nodes, Mapping):
        raise ValueError(f"{what}.nodes: expected {{drain?, reboot?, fail?}}")
    unknown = set(nodes) - {"drain", "reboot", "fail"}
    if unknown:
        raise ValueError(f"{what}.nodes: unknown key {show(sorted(unknown, key=str)[0])}; known: drain, fail, reboot")
    fail = nodes.get("fail", [])
    if not isinstance(fail, list) or not all(isinstance(n, str) for n in fail):
        raise ValueError(f"{what}.nodes.fail: expected a list of node names (e.g. worker-1)")
    names = {n for p in out.pools for n in p.node_names()}
    for name in fail:
        if name not in names:
            raise ValueError(f"{what}.nodes.fail: no node is named {show(name)} (nodes are named after their pool: "
                             f"{', '.join(p.name + '-0' for p in out.pools[:3])}, …)")
    return MachinesBehaviour(out.pools, parse_duration(nodes.get("drain", out.drain), f"{what}.nodes.drain"),
                             parse_duration(nodes.get("reboot", out.reboot), f"{what}.nodes.reboot"), frozenset(fail))
