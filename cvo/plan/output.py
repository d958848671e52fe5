"""Printing a plan: text for people, JSON for scripts, DOT and Mermaid for pictures."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

import orjson

from cvo.payload.graph import Task
from cvo.plan.build import Plan, plan_json


def _node_label(plan: Plan, node: int) -> str:
    tasks = plan.node_tasks(node)
    if not tasks:
        return "(anchor)"
    first, last = tasks[0], tasks[-1]
    levels = sorted({t.runlevel or "-" for t in tasks})
    components = sorted({t.component or "(unparsed)" for t in tasks})
    where = f"runlevel {','.join(levels)}; {', '.join(components[:3])}" + (
        f" +{len(components) - 3} more" if len(components) > 3 else ""
    )
    return f"{where}; tasks {first.index}-{last.index}" if first is not last else f"{where}; task {first.index}"


def _task_line(task: Task) -> str:
    line = f"{task} {task.manifest.path}"
    if task.manifest.document > 1:
        line += f"#{task.manifest.document}"
    flags = []
    if task.delete:
        flags.append("delete")
    if task.create_only:
        flags.append("create-only")
    if task.skip:
        flags.append(f"skip: {task.skip}")
    if flags:
        line += "  [" + "; ".join(flags) + "]"
    return line


def write_text(plan: Plan, out: TextIO, show_excluded: bool = False) -> None:
    release = plan.release
    with_tasks = sum(1 for n in plan.node_ids if plan.node_tasks(n))
    skipped = sum(1 for t in plan.tasks if t.skip)
    out.write(
        f"Release {release.version} ({release.image})\n"
        f"Mode {plan.mode}: {len(plan.tasks)} tasks in {with_tasks} nodes over {len(plan.steps)} steps, "
        f"up to {plan.workers} workers\n"
        f"Profile {plan.profile}, feature set {plan.feature_set or 'Default'}"
        + (f", feature gates {','.join(sorted(plan.feature_gates))}" if plan.feature_gates else "")
        + "\n"
    )
    out.write(
        f"Excluded at load: {len(release.excluded)} documents"
        + ("" if show_excluded or not release.excluded else " (--show-excluded lists them)")
        + f"; skipped at apply: {skipped} tasks; waits on {len(plan.waited_operators)} ClusterOperators\n"
    )
    for step_number, nodes in enumerate(plan.steps, start=1):
        kind = "1 node" if len(nodes) == 1 else f"{len(nodes)} parallel nodes"
        out.write(f"\nStep {step_number} ({kind})\n")
        for node in nodes:
            after = plan.after(node)
            out.write(f"  node {node}: {_node_label(plan, node)}")
            out.write(f" (after node {', '.join(map(str, after))})\n" if after else "\n")
            for task in plan.node_tasks(node):
                out.write(f"    {_task_line(task)}\n")
                if task.wait is not None:
                    out.write(f"      waits for {task.wait.kind} {task.wait.name}: {task.wait.describe()}\n")
    if show_excluded and release.excluded:
        out.write(f"\nExcluded ({len(release.excluded)})\n")
        for e in release.excluded:
            m = e.manifest
            name = f"{m.namespace}/{m.name}" if m.namespace else m.name
            out.write(f"  {m.kind} {name} {m.path}#{m.document}: {e.reason}\n")
        reasons = Counter(e.reason for e in release.excluded)
        out.write("  by reason: " + "; ".join(f"{n} {r}" for r, n in reasons.most_common(5)) + "\n")
    if release.skipped_files:
        out.write(f"\nFiles not read ({len(release.skipped_files)})\n")
        for s in release.skipped_files:
            out.write(f"  {s.path}: {s.reason}\n")


def write_json(plan: Plan, out: TextIO) -> None:
    out.write(orjson.dumps(plan_json(plan), option=orjson.OPT_INDENT_2).decode())
    out.write("\n")


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def write_dot(plan: Plan, out: TextIO) -> None:
    out.write("digraph tasks {\n  labelloc=t;\n  rankdir=TB;\n")
    out.write(f'  label="{_dot_escape(plan.release.version)} ({plan.mode})";\n')
    for node in plan.node_ids:
        tasks = plan.node_tasks(node)
        label = "\\n".join([_dot_escape(str(t)) for t in tasks] or ["no manifests"])
        shape = "box" if tasks else "point"
        out.write(f'  {node} [ label="{label}" shape="{shape}" ];\n')
    for src, dst in plan.edges:
        out.write(f"  {src} -> {dst};\n")
    out.write("}\n")


def _mermaid_escape(text: str) -> str:
    return text.replace('"', "#quot;")


def write_mermaid(plan: Plan, out: TextIO) -> None:
    out.write("flowchart TD\n")
    for node in plan.node_ids:
        tasks = plan.node_tasks(node)
        if tasks:
            label = "<br/>".join(_mermaid_escape(str(t)) for t in tasks)
            out.write(f'  n{node}["{label}"]\n')
        else:
            out.write(f"  n{node}(( ))\n")
    for src, dst in plan.edges:
        out.write(f"  n{src} --> n{dst}\n")
