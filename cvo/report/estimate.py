"""A plan's timeline before anything runs: the graph by run level, and its estimated critical path.

Each ClusterOperator task is estimated to wait its operator's expected duration: the rollout delay of the
behaviours of an ``--operators`` file or a scenario (what the simulated operators would do), or what the
cluster's sweep records say (:func:`cvo.status.forecast.expected_durations`, the source the forecast of
``cvo upgrade status`` uses: an operator's usual recorded duration, the median of its records with overruns
left out, and the median of the others for one without).
Applying an object is estimated to take no time (on the embedded cluster it takes none; on a real one, a
request).  A node starts when every node it runs after has finished: the estimate assumes a free worker for
every node (update mode has 16; the report of the real sweep shows what waiting for one cost).  Without
known durations every task is drawn as one second and no critical path is claimed.
"""

from __future__ import annotations

import math

import networkx as nx

from cvo.operators.behaviour import MAX_DURATION, Behaviours
from cvo.payload.graph import Task
from cvo.plan.build import Plan
from cvo.report.model import AttemptSpan, NodeSpan, SweepSpan, TaskSpan, Timeline, Wait
from cvo.status.forecast import Expected

UNKNOWN_TASK_SECONDS = 1.0
# Where the operators' durations come from: simulated behaviours, or the cluster's records.
Durations = Behaviours | Expected


def _operator(task: Task) -> str | None:
    wait = task.wait
    if wait is None or wait.kind != "ClusterOperator" or task.skip is not None:
        return None
    return wait.name


def task_seconds(task: Task, behaviours: Durations | None) -> float:
    if behaviours is None:
        return UNKNOWN_TASK_SECONDS
    operator = _operator(task)
    if operator is None:
        return 0.0
    if isinstance(behaviours, Expected):
        seconds = behaviours.of(operator)
        return seconds if math.isfinite(seconds) and seconds >= 0 else MAX_DURATION
    behaviour = behaviours.for_operator(operator)
    if behaviour.never_available or behaviour.never_versions:
        return MAX_DURATION  # never ready: the estimate says so (and the sweep would time out)
    return behaviour.delay if math.isfinite(behaviour.delay) else MAX_DURATION


def _how(durations: Durations, operator: str, seconds: float) -> str:
    if not isinstance(durations, Expected):
        return f"the operator's rollout: {seconds:g} s"
    if operator in durations:
        return (f"its usual recorded duration: {seconds:.0f} s ({durations.records} recorded "
                f"sweep{'s' if durations.records != 1 else ''})")
    return f"not recorded: the median of the recorded operators, {seconds:.0f} s"


def estimate_timeline(plan: Plan, behaviours: Durations | None) -> Timeline:
    """The plan as a one-attempt sweep on estimated times (``behaviours`` None, or no records: durations
    unknown)."""
    if isinstance(behaviours, Expected) and not behaviours:
        behaviours = None
    graph: nx.DiGraph[int] = plan.graph
    attempt = AttemptSpan(0, 0.0, 0.0, outcome="estimated")
    ends: dict[int, float] = {}
    for node in nx.topological_sort(graph):
        tasks: list[Task] = graph.nodes[node]["tasks"]
        after = tuple(sorted(graph.predecessors(node)))
        start = max((ends[p] for p in after), default=0.0)
        cursor = start
        spans = []
        for task in tasks:
            seconds = 0.0 if task.skip is not None else task_seconds(task, behaviours)
            span = TaskSpan(str(task), node, cursor, cursor + seconds, "skipped" if task.skip else "estimated",
                            applied=cursor, file=task.manifest.path)
            operator = _operator(task)
            if operator is not None:
                reason = "estimated" if behaviours is not None else "duration unknown"
                span.wait = Wait(operator, cursor, cursor + seconds, ready=True, reason=reason,
                                 message=_how(behaviours, operator, seconds) if behaviours is not None else "",
                                 attempt=1)
            spans.append(span)
            cursor += seconds
        first = tasks[0] if tasks else None
        attempt.nodes.append(NodeSpan(node, 0, start, cursor, "estimated", first.runlevel if first else None,
                                      first.component if first else None, after, spans, size=len(tasks)))
        ends[node] = cursor
    attempt.nodes.sort(key=lambda n: n.node)
    end = max(ends.values(), default=0.0)
    attempt.end = end
    sweep = SweepSpan(0, plan.release.version, str(plan.mode), 0.0, end, "estimated" if behaviours else "plan",
                      [attempt], total_tasks=len(plan.tasks))
    return Timeline(None, end, [sweep], estimated=True)
