"""The happens-before graph of a payload: ``pkg/payload/task_graph.go`` over networkx.

The construction is the CVO's, step by step, so node numbering matches it: one node with every
task; ``split_on_jobs`` isolates each ``batch/v1`` Job as a barrier; ``parallelize`` replaces a
node by steps of parallel nodes from a break function (by run level and component for updates,
flattened for install and reconcile), with empty anchor and spacer nodes where the CVO adds them.
The result is a list of :class:`TaskNode` (the CVO's node indexes), each with ``tasks``: the ordered
list of :class:`Task` run serially in that node, and ``outs``; :func:`build_graph` turns it into a
``networkx.DiGraph`` for the runner.  networkx is imported only there (its import costs ~100 ms, more
than a cached ``cvo plan`` of the corpus): the plan needs only the node list, its steps and edges.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

from cvo.payload.filters import ApplyFilter, apply_exclusion
from cvo.payload.manifest import CREATE_ONLY_ANNOTATION, DELETE_ANNOTATION, Manifest

# ^0000_(\d+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_ with Go's ASCII-only \d.
RUNLEVEL_PATTERN = re.compile(r"^0000_(\d+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_", re.ASCII)


class Mode(StrEnum):
    INSTALL = "install"  # the CVO's InitializingPayload
    UPDATE = "update"  # UpdatingPayload
    RECONCILE = "reconcile"  # ReconcilingPayload


def parse_filename(name: str) -> tuple[str, str] | None:
    """(run level, component) of a payload file name, or ``None`` when it does not match."""
    match = RUNLEVEL_PATTERN.match(name)
    return (match.group(1), match.group(2)) if match else None


@dataclass(frozen=True)
class Wait:
    """What a task's completion waits for, beyond a successful apply."""

    kind: str
    name: str
    versions: tuple[tuple[str, str], ...] = ()  # (name, version) pairs that must match
    conditions: tuple[tuple[str, str], ...] = ()  # (type, status) pairs that must hold
    report_only: tuple[tuple[str, str], ...] = ()  # checked, reported, not blocking
    not_true: tuple[str, ...] = ()  # condition types that must not be True

    def describe(self) -> str:
        parts = [f"{n}={v}" for n, v in self.versions]
        parts += [f"{t}={s}" for t, s in self.conditions]
        parts += [f"{t}!=True" for t in self.not_true]
        text = ", ".join(parts)
        if self.report_only:
            text += " (reported only: " + ", ".join(f"{t}={s}" for t, s in self.report_only) + ")"
        return text

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name}
        if self.versions:
            out["versions"] = [{"name": n, "version": v} for n, v in self.versions]
        out["conditions"] = [{"type": t, "status": s} for t, s in self.conditions]
        if self.not_true:
            out["notTrue"] = list(self.not_true)
        if self.report_only:
            out["reportOnly"] = [{"type": t, "status": s} for t, s in self.report_only]
        return out


def operator_versions(m: Manifest) -> tuple[tuple[str, str], ...]:
    """The ``status.versions`` a ClusterOperator manifest declares."""
    status = m.obj.get("status")
    versions = status.get("versions") if isinstance(status, dict) else None
    if not isinstance(versions, list):
        return ()
    out = []
    for item in versions:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            out.append((item["name"], str(item.get("version", ""))))
    return tuple(out)


def wait_for(m: Manifest, mode: Mode) -> Wait | None:
    """What the CVO waits for before it counts the task as done (pkg/cvo/internal/operatorstatus.go `checkOperatorHealth`)."""
    if m.kind == "ClusterOperator" and m.group == "config.openshift.io":
        if mode is Mode.INSTALL:
            return Wait("ClusterOperator", m.name, conditions=(("Available", "True"),),
                        report_only=(("Degraded", "False"),))
        return Wait("ClusterOperator", m.name, versions=operator_versions(m),
                    conditions=(("Available", "True"), ("Degraded", "False")), not_true=("Upgrading",))
    if m.kind == "CustomResourceDefinition" and m.group == "apiextensions.k8s.io":
        return Wait("CustomResourceDefinition", m.name, conditions=(("Established", "True"),))
    return None


@dataclass(slots=True, eq=False)
class Task:
    index: int  # 1-based position in the payload
    total: int
    manifest: Manifest
    runlevel: str | None
    component: str | None
    wait: Wait | None = None
    skip: str | None = None  # apply-time exclusion: stays in Total, never counted as Done

    @property
    def delete(self) -> bool:
        return self.manifest.annotations.get(DELETE_ANNOTATION) == "true"

    @property
    def invalid_delete(self) -> str | None:
        value = self.manifest.annotations.get(DELETE_ANNOTATION)
        if value is None or value == "true":
            return None
        return f'invalid delete annotation "{DELETE_ANNOTATION}" value: "{value}"'

    @property
    def create_only(self) -> bool:
        return self.manifest.annotations.get(CREATE_ONLY_ANNOTATION, "").lower() == "true"

    def __str__(self) -> str:
        return f"{self.manifest.resource_id} ({self.index} of {self.total})"


@dataclass(eq=False)
class TaskNode:
    tasks: list[Task] = field(default_factory=list)
    ins: list[int] = field(default_factory=list)
    outs: list[int] = field(default_factory=list)


BreakFunc = Callable[[list[Task]], list[list[TaskNode]]]


def _match(task: Task) -> tuple[str, str] | None:
    if task.runlevel is None:
        return None
    return (task.runlevel, task.component or "")


def by_number_and_component(tasks: list[Task]) -> list[list[TaskNode]]:
    """Sequential steps of parallel nodes (update mode); consecutive single-component levels merge."""
    if len(tasks) <= 1:
        return []
    matches = [_match(t) for t in tasks]
    count = len(tasks)
    buckets: list[list[TaskNode]] = []
    last: TaskNode | None = None
    i = 0
    while i < count:
        base = matches[i]
        j = i + 1
        groups: list[TaskNode] = []
        while j < count:
            nxt = matches[j]
            if base is None or nxt is None or base[0] != nxt[0]:
                break
            if base[1] != nxt[1]:
                groups.append(TaskNode(tasks[i:j]))
                i = j
            base = nxt
            j += 1
        if groups:
            groups.append(TaskNode(tasks[i:j]))
            i = j
            buckets.append(groups)
            last = None
            continue
        if last is None:
            last = TaskNode(list(tasks[i:j]))
            buckets.append([last])
        else:
            last.tasks.extend(tasks[i:j])
        i = j
    return buckets


def flatten_by_number_and_component(tasks: list[Task]) -> list[list[TaskNode]]:
    """One step of parallel nodes (install and reconcile): run-level order is dropped.

    Every maximal run of one (run level, component), and every unparseable file, becomes a node
    of its own (the CVO's merge accumulator only ever holds the first run).
    """
    if len(tasks) <= 1:
        return []
    matches = [_match(t) for t in tasks]
    count = len(tasks)
    groups: list[TaskNode] = []
    i = 0
    while i < count:
        base = matches[i]
        j = i + 1
        while j < count:
            nxt = matches[j]
            if base is None or nxt is None or base[0] != nxt[0]:
                break
            if base[1] != nxt[1]:
                groups.append(TaskNode(tasks[i:j]))
                i = j
            base = nxt
            j += 1
        # The CVO's merge accumulator is only ever used for the first run: after it, ``groups`` is
        # non-empty and each run gets a node of its own.  The net effect is this one line.
        groups.append(TaskNode(list(tasks[i:j])))
        i = j
    return [groups]


def shift_order(break_fn: BreakFunc, step: int, stride: int) -> BreakFunc:
    """Rotate each step left, so successive reconcile attempts start at different nodes."""

    def shifted(tasks: list[Task]) -> list[list[TaskNode]]:
        steps = break_fn(tasks)
        for i, nodes in enumerate(steps):
            size = len(nodes)
            if size == 0:
                continue
            shift = step % size if size < stride else int(step * size / stride) % size
            steps[i] = nodes[shift:] + nodes[:shift]
        return steps

    return shifted


def permute_order(break_fn: BreakFunc, rng: random.Random) -> BreakFunc:
    """Shuffle each step's nodes with ``rng`` (reproducible per seed; not Go's math/rand stream)."""

    def permuted(tasks: list[Task]) -> list[list[TaskNode]]:
        steps = break_fn(tasks)
        for nodes in steps:
            rng.shuffle(nodes)
        return steps

    return permuted


class _Builder:
    """The CVO's index-based TaskGraph, kept only while building."""

    def __init__(self, tasks: list[Task]) -> None:
        self.nodes: list[TaskNode] = [TaskNode(list(tasks))]

    def split(self, on: Callable[[Task], bool]) -> None:
        i = 0
        while i < len(self.nodes):
            node = self.nodes[i]
            tasks = node.tasks
            if len(tasks) > 1:
                for j, task in enumerate(tasks):
                    if not on(task):
                        continue
                    if j > 0:
                        nxt = len(self.nodes)
                        self.nodes.append(TaskNode(tasks[:j], list(node.ins), [i]))
                        for pos in node.ins:
                            self.nodes[pos].outs = [nxt if o == i else o for o in self.nodes[pos].outs]
                        node.ins = [nxt]
                    if j < len(tasks) - 1:
                        nxt = len(self.nodes)
                        self.nodes.append(TaskNode(tasks[j + 1:], [i], list(node.outs)))
                        for pos in node.outs:
                            self.nodes[pos].ins = [nxt if o == i else o for o in self.nodes[pos].ins]
                        node.outs = [nxt]
                    node.tasks = tasks[j:j + 1]
                    break
            i += 1

    def _bulk_add(self, nodes: list[TaskNode], ins: list[int]) -> list[int]:
        start = len(self.nodes)
        self.nodes.extend(nodes)
        new = list(range(start, len(self.nodes)))
        if not ins:
            return new
        for k in new:
            self.nodes[k].ins = list(ins)
        for k in ins:
            outs = self.nodes[k].outs
            for n in new:
                if n not in outs:
                    outs.append(n)
        return new

    def parallelize(self, break_fn: BreakFunc) -> None:
        i = 0
        while i < len(self.nodes):
            node = self.nodes[i]
            results = break_fn(node.tasks)
            if not results or (len(results) == 1 and len(results[0]) == 1):
                i += 1
                continue
            node.tasks = []
            outs = node.outs
            node.outs = []
            frontier = [i]
            for step in results:
                if not step:
                    continue
                if len(frontier) == 1 or len(step) == 1:
                    frontier = self._bulk_add(step, frontier)
                else:  # M x N: an empty spacer node instead of M*N edges
                    frontier = self._bulk_add([TaskNode()], frontier)
                    frontier = self._bulk_add(step, frontier)
            if outs:
                anchor = len(self.nodes)
                right = TaskNode([], [], list(outs))
                self.nodes.append(right)
                for j in outs:
                    self.nodes[j].ins = [anchor if o == i else o for o in self.nodes[j].ins]
                for j in frontier:
                    self.nodes[j].outs = [anchor]
                    right.ins.append(j)
            i += 1


class GraphCycleError(ValueError):
    pass


def make_tasks(manifests: Sequence[Manifest], mode: Mode, apply_filter: ApplyFilter | None = None) -> list[Task]:
    total = len(manifests)
    tasks = []
    for index, m in enumerate(manifests, start=1):
        parsed = parse_filename(m.file)
        task = Task(
            index=index,
            total=total,
            manifest=m,
            runlevel=parsed[0] if parsed else None,
            component=parsed[1] if parsed else None,
            wait=wait_for(m, mode),
        )
        if apply_filter is not None:
            task.skip = apply_exclusion(m, apply_filter)
        tasks.append(task)
    return tasks


def break_function(mode: Mode, attempt: int = 0) -> BreakFunc:
    if mode is Mode.UPDATE:
        return by_number_and_component
    if mode is Mode.INSTALL:
        return flatten_by_number_and_component
    # Reconcile: permuted by epoch = attempt // 8, rotated by attempt % 8 (PR #166, #569).
    return shift_order(permute_order(flatten_by_number_and_component, random.Random(attempt // 8)), attempt % 8, 8)


def max_workers(mode: Mode, graph: nx.DiGraph[int] | int) -> int:
    """The mode's parallelism; ``graph`` is the graph or its number of nodes."""
    if mode is Mode.INSTALL:
        return max(1, graph if isinstance(graph, int) else graph.number_of_nodes())
    if mode is Mode.UPDATE:
        return 16
    return 2


def build_nodes(tasks: list[Task], mode: Mode, attempt: int = 0) -> list[TaskNode]:
    """The task graph for ``mode`` as the CVO's node list (index = node id, ``outs`` = edges).

    Raises :class:`GraphCycleError` naming a cycle if there is one.
    """
    builder = _Builder(tasks)
    builder.split(lambda t: t.manifest.is_job)
    builder.parallelize(break_function(mode, attempt))
    nodes = builder.nodes
    if node_steps(nodes) is None:
        check_acyclic(to_digraph(nodes))  # names the cycle as networkx finds it
    return nodes


def to_digraph(nodes: list[TaskNode]) -> nx.DiGraph[int]:
    """``nodes`` as a ``networkx.DiGraph``: integer nodes carrying ``tasks``, an edge per ``outs`` entry."""
    import networkx as nx

    graph: nx.DiGraph[int] = nx.DiGraph()
    for index, node in enumerate(nodes):
        graph.add_node(index, tasks=node.tasks)
    for index, node in enumerate(nodes):
        for out in node.outs:
            graph.add_edge(index, out)
    return graph


def build_graph(tasks: list[Task], mode: Mode, attempt: int = 0) -> nx.DiGraph[int]:
    """The task graph for ``mode``; raises :class:`GraphCycleError` naming a cycle if there is one."""
    return to_digraph(build_nodes(tasks, mode, attempt))


def predecessors(nodes: list[TaskNode]) -> list[list[int]]:
    """For each node, the sorted nodes with an edge to it (from ``outs``, as the graph's edges are)."""
    preds: list[set[int]] = [set() for _ in nodes]
    for index, node in enumerate(nodes):
        for out in node.outs:
            preds[out].add(index)
    return [sorted(p) for p in preds]


def node_steps(nodes: list[TaskNode]) -> list[list[int]] | None:
    """Nodes with tasks grouped by depth, as :func:`steps` gives for the graph; ``None`` on a cycle.

    The same generations as ``networkx.topological_generations`` (Kahn's algorithm by levels): a
    node's generation is one more than its deepest predecessor's.
    """
    outs = [set(node.outs) for node in nodes]
    indegree = [0] * len(nodes)
    for targets in outs:
        for target in targets:
            indegree[target] += 1
    generation = [i for i, d in enumerate(indegree) if d == 0]
    seen = 0
    out: list[list[int]] = []
    while generation:
        seen += len(generation)
        with_tasks = sorted(n for n in generation if nodes[n].tasks)
        if with_tasks:
            out.append(with_tasks)
        following = []
        for n in generation:
            for m in outs[n]:
                indegree[m] -= 1
                if indegree[m] == 0:
                    following.append(m)
        generation = following
    return out if seen == len(nodes) else None


def check_acyclic(graph: nx.DiGraph[int]) -> None:
    import networkx as nx

    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return
    names = []
    for src, _dst in cycle:
        tasks = graph.nodes[src].get("tasks") or []
        names.append(f"node {src}" + (f" ({tasks[0]})" if tasks else ""))
    names.append(names[0])
    raise GraphCycleError("task graph has a cycle: " + " -> ".join(names))


def steps(graph: nx.DiGraph[int]) -> list[list[int]]:
    """Nodes with tasks grouped by depth: each group can run in parallel once the earlier ones did."""
    import networkx as nx

    out = []
    for generation in nx.topological_generations(graph):
        nodes = sorted(n for n in generation if graph.nodes[n]["tasks"])
        if nodes:
            out.append(nodes)
    return out
