"""The critical path: the chain of nodes (and back-offs) that decided a sweep's total time.

Within an attempt the path ends at the node that ended last (of several cut at the deadline: the one
running longest) and walks back, each time to the node it ran after (``node.started``'s ``after``)
that ended last; when the events do not say what a node ran after, to the node that ended last before
it started.  Between attempts the back-off is on the path.  What is left between links (a node waiting
for a free worker, the status writes around an attempt) is a ``gap`` link, so the links cover the
sweep from start to end and their shares add up to 1.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from cvo.report.fmt import duration
from cvo.report.model import AttemptSpan, NodeSpan, SweepSpan

EPSILON = 1e-6


@dataclass
class Link:
    kind: str  # node, backoff, gap
    start: float
    end: float
    share: float  # of the sweep's duration
    label: str
    what: str = ""  # what took the time (the longest task or wait of a node)
    attempt: int | None = None
    node: int | None = None
    operators: tuple[tuple[str, float], ...] = ()  # ClusterOperators waited on in this link: (name, seconds)

    @property
    def duration(self) -> float:
        return self.end - self.start


def attempt_chain(attempt: AttemptSpan) -> list[NodeSpan]:
    """The nodes of one attempt on its critical path, first to last."""
    nodes = attempt.nodes
    if not nodes:
        return []
    by_id = {n.node: n for n in nodes}
    last = max(nodes, key=lambda n: (n.end, -n.start, -n.node))
    chain, seen = [last], {last.node}
    current = last
    while True:
        if current.after is not None:
            candidates = [by_id[p] for p in current.after if p in by_id and p not in seen]
        else:
            candidates = [n for n in nodes if n.node not in seen and n.end <= current.start + EPSILON]
        if not candidates:
            break
        current = max(candidates, key=lambda n: (n.end, -n.start, -n.node))
        chain.append(current)
        seen.add(current.node)
    chain.reverse()
    return chain


def _node_link(node: NodeSpan, start: float, end: float, total: float, coarse: bool = False) -> Link:
    waited: dict[str, float] = defaultdict(float)
    for task in node.tasks:
        if task.wait is not None:
            overlap = min(task.wait.end, end) - max(task.wait.start, start)
            if overlap > 0:
                waited[task.wait.operator] += overlap
    longest = max(node.tasks, key=lambda t: t.duration, default=None)
    what = ""
    if longest is not None:
        what = f"{longest.task}: {duration(longest.duration)}"
        if longest.wait is not None:
            what += (f", waited {duration(longest.wait.duration)} for clusteroperator {longest.wait.operator}"
                     + (" (ready)" if longest.wait.ready else f" ({longest.outcome})"))
    where = " ".join(x for x in (node.runlevel and f"run level {node.runlevel}", node.component) if x)
    label = ("" if coarse else f"attempt {node.attempt}, ") + f"node {node.node}" + (f" ({where})" if where else "")
    operators = tuple(sorted(waited.items(), key=lambda kv: (-kv[1], kv[0])))
    return Link("node", start, end, (end - start) / total if total > 0 else 0.0, label, what, node.attempt,
                node.node, operators)


# What a gap is when the times come from the cluster's records (cvo.report.records): only the ClusterOperator
# waits are recorded, so between them is whatever else the sweep did.
COARSE_GAP = "not recorded (applying objects, back-offs, workers, status writes)"


def critical_path(sweep: SweepSpan, coarse: bool = False) -> list[Link]:
    """Links covering the sweep from its start to its end, in time order.  ``coarse``: the sweep's times come
    from the cluster's records, and the gaps are named for what they hold there (:data:`COARSE_GAP`)."""
    total = sweep.duration
    links: list[Link] = []
    cursor = sweep.start

    def gap(until: float, label: str, attempt: int | None = None) -> None:
        nonlocal cursor
        if until - cursor > EPSILON:
            links.append(Link("gap", cursor, until, (until - cursor) / total if total > 0 else 0.0, label,
                              attempt=attempt))
        cursor = max(cursor, until)

    for attempt in sweep.attempts:
        gap(attempt.start, "before the attempt", attempt.number)
        for node in attempt_chain(attempt):
            gap(node.start, COARSE_GAP if coarse else "waiting to start (a worker, or the status write)",
                attempt.number)
            end = max(cursor, min(node.end, sweep.end))
            if end - cursor > EPSILON:
                links.append(_node_link(node, cursor, end, total, coarse))
            cursor = end
        gap(attempt.end, COARSE_GAP if coarse else f"end of attempt {attempt.number} ({attempt.outcome})",
            attempt.number)
        if attempt.backoff is not None and attempt.backoff.end - cursor > EPSILON:
            end = min(attempt.backoff.end, sweep.end)
            if end - cursor > EPSILON:
                woken = " (woken by a ClusterOperator change)" if attempt.backoff.woken else ""
                links.append(Link("backoff", cursor, end, (end - cursor) / total if total > 0 else 0.0,
                                  f"back-off after attempt {attempt.number}{woken}",
                                  f"{attempt.reason}: {attempt.message}".strip(": "), attempt.number))
                cursor = end
    gap(sweep.end, "after the last attempt")
    return links


@dataclass
class Cause:
    name: str  # "clusteroperator dns", "applying", "back-off", "other"
    seconds: float
    share: float


def causes(links: list[Link], total: float, coarse: bool = False) -> list[Cause]:
    """What the critical path's time went to, largest first: each operator's waits, applying, back-offs, the rest
    (``coarse``: from the cluster's records, where the rest is :data:`COARSE_GAP`)."""
    seconds: dict[str, float] = defaultdict(float)
    for link in links:
        if link.kind == "node":
            waited = sum(s for _, s in link.operators)
            for name, s in link.operators:
                seconds[f"clusteroperator {name}"] += s
            seconds["applying"] += max(0.0, link.duration - waited)
        elif link.kind == "backoff":
            seconds["back-off between attempts"] += link.duration
        else:
            seconds[COARSE_GAP if coarse else "other (workers, status writes)"] += link.duration
    out = [Cause(name, s, s / total if total > 0 else 0.0) for name, s in seconds.items() if s > EPSILON]
    return sorted(out, key=lambda c: (-c.seconds, c.name))
