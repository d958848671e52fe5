"""Reaction delay: an upgrade in update mode, and per ClusterOperator cvo waited on, the time from its
report to cvo starting the next task that depends on it."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.kube.events import events
from bench.kube.prepare import Prepared
from bench.kube.processes import Stamped, cvo_argv, timed
from bench.kube.server import bootstrap, control_plane, start_sim_operators
from bench.kube.settings import TIMEOUT


@dataclass
class Sample:
    """One ClusterOperator cvo waited on during the upgrade."""

    operator: str
    report: float | None  # sim-operators' report Available at the new version -> next dependent start (s)
    ready: float | None  # cvo's operator.ready event -> next dependent start (s); None: no such event
    noticed: float | None  # sim-operators' report -> cvo's operator.ready event (s)
    started: str  # what started: "node N" or the task
    gating: bool  # nothing else the started task waited for finished after this operator's node
    retried: bool  # cvo gave up the wait on an API error and re-applied the task after its back-off


@dataclass
class Reaction:
    samples: list[Sample] = field(default_factory=list)
    waited: int = 0  # ClusterOperators cvo waited on during the upgrade
    operators: int = 0  # ClusterOperators in the release
    unmatched: list[str] = field(default_factory=list)  # waited on, but no dependent start or report found
    retry_errors: Counter[str] = field(default_factory=Counter)  # task.retry on ClusterOperator tasks, by error
    wall: float | None = None
    attempts: int = 0
    ok: bool = False
    note: str = ""


REPORT_LINE = re.compile(r"^\S+ clusteroperator/([^:]+): (.*?)(?:; versions (.*))?$")


def reaction(evs: list[dict[str, Any]], release_dir: Path, version: str,
             reports: list[tuple[float, str]]) -> Reaction:
    """Per ClusterOperator cvo waited on: the delay until it started the next task that depends on it."""
    import networkx as nx

    from cvo.payload.graph import Mode, build_graph, make_tasks
    from cvo.payload.loader import load_release

    release = load_release(release_dir)
    graph = build_graph(make_tasks(release.manifests, Mode.UPDATE), Mode.UPDATE)
    node_of: dict[str, int] = {}
    co_at: dict[str, tuple[int, int, str]] = {}  # operator -> (node, position in it, task)
    for node in graph.nodes:
        for i, task in enumerate(graph.nodes[node]["tasks"]):
            node_of[str(task)] = node
            if task.manifest.kind == "ClusterOperator" and task.manifest.group == "config.openshift.io":
                co_at[task.manifest.name] = (node, i, str(task))
    with_tasks = {n for n in graph.nodes if graph.nodes[n]["tasks"]}
    out = Reaction(operators=len(co_at))

    attempt = -1
    tagged: list[tuple[int, dict[str, Any]]] = []
    for e in evs:
        if e["event"] == "attempt.started":
            attempt += 1
        tagged.append((attempt, e))
        if e["event"] == "task.retry" and str(e.get("task", "")).startswith("clusteroperator "):
            on = re.search(r' on (\S+ "[^"]*")', str(e.get("message", "")))
            out.retry_errors[f"{e.get('error')}" + (f" on {on.group(1)}" if on else "")] += 1
    # The simulated operators' first report of each operator Available at the new version.
    available: dict[str, float] = {}
    for stamp, line in reports:
        match = REPORT_LINE.match(line)
        if match and "Available=True" in match.group(2) and f"={version}" in (match.group(3) or ""):
            available.setdefault(match.group(1), stamp)

    def first_dependent(name: str, a: int, begin: int, not_before: float) -> dict[str, Any] | None:
        node, position, _ = co_at[name]
        same_node = {str(t) for t in graph.nodes[node]["tasks"][position + 1:]}
        later_nodes = nx.descendants(graph, node) & with_tasks
        for b, f in tagged[begin:]:
            if b != a:
                if b > a:
                    return None
                continue
            if f["t"] < not_before:
                continue
            if f["event"] == "task.started" and f.get("task") in same_node:
                return f
            if f["event"] == "node.started" and f.get("node") in later_nodes:
                return f
            if f["event"] == "task.started" and node_of.get(str(f.get("task"))) in later_nodes:
                return f
        return None

    def gating(name: str, a: int, first: dict[str, Any]) -> bool:
        node = co_at[name][0]
        if first["event"] == "task.started" and node_of.get(str(first.get("task"))) == node:
            return True  # the next task of its own node: it waited for nothing else
        started = first["node"] if first["event"] == "node.started" else node_of[str(first.get("task"))]
        before = nx.ancestors(graph, started) & with_tasks
        done = {f.get("node"): f["t"] for b, f in tagged if b == a and f["event"] == "node.done" and f.get("node") in before}
        return node in done and done[node] >= max(done.values())

    seen: set[str] = set()
    for index, (a, e) in enumerate(tagged):
        name = str(e.get("operator"))
        if e["event"] != "task.waiting" or name in seen or name not in co_at:
            continue
        seen.add(name)
        task = co_at[name][2]
        ready_at = next(((i, f) for i, (b, f) in enumerate(tagged) if i > index and b == a
                         and f["event"] == "operator.ready" and f.get("operator") == name), None)
        reported = available.get(name)
        if reported is not None and reported < e["t"]:
            reported = None  # it was ready before cvo looked: not a reaction
        anchor = reported if reported is not None else (ready_at[1]["t"] if ready_at else None)
        first = first_dependent(name, a, index, anchor) if anchor is not None else None
        if first is None:
            out.unmatched.append(name)
            continue
        retried = any(f["event"] == "task.retry" and f.get("task") == task and e["t"] <= f["t"] <= first["t"]
                      for b, f in tagged if b == a)
        ready_delay = None
        if ready_at is not None:
            after_ready = first_dependent(name, a, ready_at[0], ready_at[1]["t"])
            ready_delay = after_ready["t"] - ready_at[1]["t"] if after_ready is not None else None
        what = f"node {first['node']}" if first["event"] == "node.started" else str(first.get("task"))
        noticed = ready_at[1]["t"] - reported if ready_at is not None and reported is not None else None
        out.samples.append(Sample(name, first["t"] - reported if reported is not None else None, ready_delay, noticed,
                                  what, gating(name, a, first), retried))
    out.waited = len(seen)
    return out


def reaction_run(prep: Prepared, nxt: Path, version: str, env: dict[str, str], at_once: Path,
                 after_a_second: Path) -> Reaction:
    sim: Stamped | None = None
    with control_plane() as cp:
        try:
            bootstrap(cp, env)
            sim = start_sim_operators(cp, env, [prep.directory], at_once)
            # The install only sets the cluster up here: a short reconcile interval keeps its back-offs short.
            install = timed(cvo_argv("--log-format", "json", "install", str(prep.directory), "--kubeconfig",
                                     cp.kubeconfig_path, "-o", "json", "--timeout", TIMEOUT, "--interval", "30s"), env)
            if install.code != 0:
                return Reaction(note=f"the install before the upgrade failed ({install.code}): "
                                     f"{install.stderr.strip().splitlines()[-1:]}")
            sim.stop()
            # The target comes from the ClusterVersion once cvo upgrade sets it (not --release).
            sim = start_sim_operators(cp, env, [prep.directory], after_a_second)
            upgrade = timed(cvo_argv("--log-format", "json", "-vv", "upgrade", "--to", str(nxt), "--kubeconfig",
                                     cp.kubeconfig_path, "-o", "json", "--timeout", TIMEOUT), env)
            reports = [(stamp, line) for stamp, stream, line in sim.lines if stream == "out" and stamp >= upgrade.started]
        finally:
            if sim is not None:
                sim.stop()
    evs = events(upgrade.stderr)
    out = reaction(evs, nxt, version, reports)
    out.wall = upgrade.wall
    out.attempts = sum(1 for e in evs if e["event"] == "attempt.started")
    out.ok = upgrade.code == 0
    if not out.ok:
        out.note = ("killed" if upgrade.wall is None else f"exit {upgrade.code}: "
                    f"{upgrade.stderr.strip().splitlines()[-1:] if upgrade.stderr.strip() else ''}")
    return out
