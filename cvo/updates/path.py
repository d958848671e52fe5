"""The way from one release to another over an update graph when no single edge leads there: fewest updates,
then the newest releases (at each step the newest release that still reaches the target in the fewest
updates: an EUS-to-EUS path goes through the newest odd minor release with an edge to the target).

Every edge counts, conditional ones too (a cluster may take a conditional update when its risks do not
apply, or are accepted); each hop carries its risks (every conditional-edge entry naming that edge) and its
gates: the cluster's ``Upgradeable=False`` now blocks every minor hop (the CVO's ``Upgradeable`` precondition,
pkg/payload/precondition/clusterversion/upgradeable.go, lets patch updates through).  A hop from the cluster's
current version also carries the ``Recommended`` condition the cluster's status gives its target.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cvo.payload import semver
from cvo.updates.graph import Graph
from cvo.updates.model import Risk

PATCH, MINOR, MAJOR, UNKNOWN = "patch", "minor", "major", "unknown"


class NoPath(ValueError):
    """No path: ``str()`` says why (a version not in the graph, or no edges leading there)."""


@dataclass(frozen=True)
class Gate:
    """A reason the cluster may not take a minor update now (its ``Upgradeable=False`` condition)."""

    type: str
    reason: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "status": "False", "reason": self.reason, "message": self.message}


@dataclass(frozen=True)
class Hop:
    source: str
    target: str
    image: str
    kind: str  # patch, minor or major (unknown for a version that is not SemVer)
    risks: tuple[Risk, ...] = ()
    gates: tuple[Gate, ...] = ()
    recommended: Mapping[str, Any] | None = None  # the cluster's Recommended condition for this target, as JSON

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from": self.source, "to": self.target, "image": self.image, "kind": self.kind,
                               "risks": [r.to_json() for r in self.risks],
                               "gates": [g.to_json() for g in self.gates]}
        if self.recommended is not None:
            out["recommended"] = dict(self.recommended)
        return out


@dataclass(frozen=True)
class UpdatePath:
    source: str
    target: str
    hops: tuple[Hop, ...] = ()
    channel: str = ""
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "channel": self.channel, "updates": len(self.hops),
                "hops": [h.to_json() for h in self.hops]}


def update_kind(source: str, target: str) -> str:
    try:
        a, b = semver.parse(source), semver.parse(target)
    except semver.SemverError:
        return UNKNOWN
    if a.major != b.major:
        return MAJOR
    return MINOR if a.minor != b.minor else PATCH


def _parse(version: str, what: str) -> semver.Version:
    try:
        return semver.parse(version)
    except semver.SemverError as err:
        raise NoPath(f"{what} {version!r} is not a semantic version: {err}") from None


def plan_path(graph: Graph, source: str, target: str, *, channel: str = "", gate: Gate | None = None,
              recommended: Mapping[str, Mapping[str, Any]] | None = None) -> UpdatePath:
    """The path from ``source`` to ``target`` over ``graph`` (a graph as the update service answers a cluster:
    versions without ``+ARCH``); :class:`NoPath` when there is none.  ``gate``: the cluster's
    ``Upgradeable=False``; ``recommended``: the Recommended condition of the cluster's conditional updates by
    target version (for the first hop)."""
    _parse(source, "the current version")
    _parse(target, "the target version")
    versions = [n.version for n in graph.nodes]
    index: dict[str, int] = {}
    for i, v in enumerate(versions):
        index.setdefault(v, i)
    where = f" in channel {channel}'s graph" if channel else " in the graph"
    for version, what in ((source, "the current version"), (target, "the target version")):
        if version not in index:
            raise NoPath(f"{what} {version} is not{where} ({len(versions)} releases)")
    if source == target:
        return UpdatePath(source, target, (), channel, ("already at the target version",))
    successors: dict[str, set[str]] = {}
    predecessors: dict[str, set[str]] = {}

    def add(a: str, b: str) -> None:
        successors.setdefault(a, set()).add(b)
        predecessors.setdefault(b, set()).add(a)

    for i, j in graph.edges:
        if 0 <= i < len(versions) and 0 <= j < len(versions):
            add(versions[i], versions[j])
    risks: dict[tuple[str, str], list[Risk]] = {}
    for entry in graph.conditional_edges:
        for a, b in entry.edges:
            if a in index and b in index:
                add(a, b)
                listed = risks.setdefault((a, b), [])
                listed += [r for r in entry.risks if r not in listed]
    distance = {target: 0}  # updates from each release to the target
    queue = deque([target])
    while queue and source not in distance:
        current = queue.popleft()
        for previous in predecessors.get(current, ()):
            if previous not in distance:
                distance[previous] = distance[current] + 1
                queue.append(previous)
    if source not in distance:
        raise NoPath(f"no updates lead from {source} to {target}{where}")
    hops: list[Hop] = []
    current = source
    while current != target:
        step = max((s for s in successors[current] if distance.get(s) == distance[current] - 1), key=_key)
        kind = update_kind(current, step)
        gates = (gate,) if gate is not None and kind != PATCH else ()
        condition = (recommended or {}).get(step) if current == source else None
        hops.append(Hop(current, step, graph.nodes[index[step]].payload, kind, tuple(risks.get((current, step), ())),
                        gates, condition))
        current = step
    return UpdatePath(source, target, tuple(hops), channel)


def _key(version: str) -> tuple[semver.Version, str]:
    """Newest first; a version that is not SemVer (a hostile graph) sorts below every other."""
    try:
        return semver.parse(version), version
    except semver.SemverError:
        return semver.Version(0, 0, 0, ("0",)), version
