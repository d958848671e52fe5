"""The dry-run plan: a loaded release turned into its task graph, as data ready to print."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cvo.payload.filters import ApplyFilter
from cvo.payload.graph import (
    Mode,
    Task,
    TaskNode,
    build_nodes,
    make_tasks,
    max_workers,
    node_steps,
    predecessors,
    to_digraph,
)
from cvo.payload.loader import Release

if TYPE_CHECKING:
    import networkx as nx


@dataclass
class Plan:
    release: Release
    mode: Mode
    profile: str
    feature_set: str
    feature_gates: frozenset[str]
    capabilities: frozenset[str]
    nodes: list[TaskNode]  # the graph: node id = index, edges = each node's ``outs``
    tasks: list[Task]
    steps: list[list[int]] = field(default_factory=list)

    @functools.cached_property
    def graph(self) -> nx.DiGraph[int]:
        """The graph as the runner gets it (networkx is imported only when this is used)."""
        return to_digraph(self.nodes)

    @property
    def workers(self) -> int:
        return max_workers(self.mode, len(self.nodes))

    @property
    def node_ids(self) -> range:
        return range(len(self.nodes))

    @property
    def edges(self) -> list[tuple[int, int]]:
        return sorted({(i, out) for i, node in enumerate(self.nodes) for out in node.outs})

    def node_tasks(self, node: int) -> list[Task]:
        return self.nodes[node].tasks

    @functools.cached_property
    def _predecessors(self) -> list[list[int]]:
        return predecessors(self.nodes)

    def after(self, node: int) -> list[int]:
        return self._predecessors[node]

    @property
    def waited_operators(self) -> list[Task]:
        """ClusterOperator tasks the sweep waits on; a task skipped at apply time is never waited on."""
        return [t for t in self.tasks if t.wait is not None and t.wait.kind == "ClusterOperator" and t.skip is None]


def make_plan(
    release: Release,
    mode: Mode,
    *,
    profile: str,
    feature_set: str = "",
    feature_gates: frozenset[str] = frozenset(),
    apply_filter: ApplyFilter | None = None,
    attempt: int = 0,
) -> Plan:
    apply_filter = apply_filter or ApplyFilter(feature_gates=feature_gates)
    tasks = make_tasks(release.manifests, mode, apply_filter)
    nodes = build_nodes(tasks, mode, attempt)
    return Plan(
        release=release,
        mode=mode,
        profile=profile,
        feature_set=feature_set,
        feature_gates=feature_gates,
        capabilities=apply_filter.enabled_capabilities,
        nodes=nodes,
        tasks=tasks,
        steps=node_steps(nodes) or [],
    )


def task_json(task: Task) -> dict[str, Any]:
    m = task.manifest
    out: dict[str, Any] = {
        "index": task.index,
        "file": m.path,
        "document": m.document,
        "apiVersion": m.api_version,
        "kind": m.kind,
        "namespace": m.namespace,
        "name": m.name,
        "runlevel": task.runlevel,
        "component": task.component,
        "waits": task.wait.to_json() if task.wait else None,
    }
    if task.skip:
        out["skip"] = task.skip
    if task.delete:
        out["delete"] = True
    if task.create_only:
        out["createOnly"] = True
    return out


def plan_json(plan: Plan) -> dict[str, Any]:
    release = plan.release
    return {
        "version": release.version,
        "image": release.image,
        "versionHash": release.manifest_hash,
        "mode": str(plan.mode),
        "profile": plan.profile,
        "featureSet": plan.feature_set or "Default",
        "featureGates": sorted(plan.feature_gates),
        "capabilities": sorted(plan.capabilities),
        "maxWorkers": plan.workers,
        "total": len(plan.tasks),
        "excluded": [
            {
                "file": e.manifest.path,
                "document": e.manifest.document,
                "kind": e.manifest.kind,
                "namespace": e.manifest.namespace,
                "name": e.manifest.name,
                "reason": e.reason,
            }
            for e in release.excluded
        ],
        "skippedFiles": [{"file": s.path, "reason": s.reason} for s in release.skipped_files],
        "steps": plan.steps,
        "nodes": [
            {"id": node, "after": plan.after(node), "tasks": [task_json(t) for t in plan.node_tasks(node)]}
            for node in plan.node_ids
        ],
    }
