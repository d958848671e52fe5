"""``RunGraph``: run task nodes in parallel, never before all their predecessors succeeded.

The lowest-numbered ready node is dispatched first, up to ``max_parallel`` at once.  A node that
fails blocks its descendants only: independent branches keep going.  Cancelling the caller
cancels the running nodes; nodes that never ran are reported as incomplete.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from cvo.payload.graph import Task

NodeFn = Callable[[int, list[Task]], Coroutine[Any, Any, None]]  # an async def: asyncio.create_task runs it


@dataclass
class GraphResult:
    errors: dict[int, BaseException] = field(default_factory=dict)  # node -> error
    completed: set[int] = field(default_factory=set)
    incomplete: list[int] = field(default_factory=list)  # never ran or interrupted, in node order
    cancelled: bool = False

    def incomplete_message(self, graph: nx.DiGraph[int]) -> str:
        first = next((n for n in self.incomplete if graph.nodes[n]["tasks"]), None)
        if first is None:
            return f"{len(self.incomplete)} incomplete task nodes"
        return f"{len(self.incomplete)} incomplete task nodes, beginning with {graph.nodes[first]['tasks'][0]}"


async def _cancel(running: dict[asyncio.Task[None], int], result: GraphResult) -> None:
    result.cancelled = True
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)
    running.clear()


async def run_graph(graph: nx.DiGraph[int], max_parallel: int, fn: NodeFn, deadline: float | None = None) -> GraphResult:
    """Run every node; at ``deadline`` (loop time) cancel what still runs and return (``cancelled``)."""
    order = sorted(graph.nodes)
    waiting_on = {n: graph.in_degree(n) for n in order}  # predecessors not yet completed
    ready = [n for n in order if waiting_on[n] == 0]  # a heap: the lowest-numbered ready node first
    result = GraphResult()
    running: dict[asyncio.Task[None], int] = {}
    limit = max(1, max_parallel)

    try:
        while True:
            while ready and len(running) < limit:
                node = heapq.heappop(ready)
                running[asyncio.create_task(fn(node, graph.nodes[node]["tasks"]), name=f"node {node}")] = node
            if not running:
                break
            timeout = None if deadline is None else max(0.0, deadline - asyncio.get_running_loop().time())
            done, _ = await asyncio.wait(running, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if not done:  # the deadline passed
                await _cancel(running, result)
                break
            for finished in done:
                node = running.pop(finished)
                error = finished.exception() if not finished.cancelled() else asyncio.CancelledError()
                if error is None:
                    result.completed.add(node)
                    for successor in graph.successors(node):
                        waiting_on[successor] -= 1
                        if waiting_on[successor] == 0:
                            heapq.heappush(ready, successor)
                else:
                    result.errors[node] = error
    except asyncio.CancelledError:
        await _cancel(running, result)
        raise
    finally:
        result.incomplete = [n for n in order if n not in result.completed and n not in result.errors]
    return result
