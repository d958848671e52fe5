"""The update service's graph, as the Cincinnati v1 graph API serves it (pkg/cincinnati/cincinnati.go
``graph``, ``node``, ``edge``, ``conditionalEdges``): nodes (a version, its payload image and metadata),
edges as pairs of node indexes, and conditional edges (``from``/``to`` versions with their risks).

:func:`parse_graph` reads an answer (hostile input: see its docstring); :meth:`Graph.to_json` writes one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cvo.updates.model import MatchingRule, Risk


class GraphInvalid(ValueError):
    """The answer is no graph; ``str()`` says what is wrong (the ``ResponseInvalid`` message's tail)."""


@dataclass(frozen=True)
class Node:
    version: str
    payload: str
    metadata: Mapping[str, str] = field(default_factory=dict)  # e.g. io.openshift.upgrades.graph.release.channels


@dataclass(frozen=True)
class ConditionalEdges:
    edges: tuple[tuple[str, str], ...]  # (from version, to version)
    risks: tuple[Risk, ...]


@dataclass(frozen=True)
class Graph:
    nodes: tuple[Node, ...] = ()
    edges: tuple[tuple[int, int], ...] = ()
    conditional_edges: tuple[ConditionalEdges, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [{"version": n.version, "payload": n.payload, "metadata": dict(n.metadata)} for n in self.nodes],
            "edges": [[a, b] for a, b in self.edges],
            "conditionalEdges": [
                {"edges": [{"from": a, "to": b} for a, b in c.edges], "risks": [r.to_json() for r in c.risks]}
                for c in self.conditional_edges
            ],
        }

    def dumps(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":"), sort_keys=False).encode()


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise GraphInvalid(f"{what} is not a string")
    return value


def _risk(data: Any) -> Risk:
    if not isinstance(data, Mapping):
        raise GraphInvalid("a conditional edge's risk is not an object")
    rules: list[MatchingRule] = []
    for rule in data.get("matchingRules") or []:
        if not isinstance(rule, Mapping):
            raise GraphInvalid("a matching rule is not an object")
        promql = rule.get("promql")
        query = promql.get("promql", "") if isinstance(promql, Mapping) else ""
        rules.append(MatchingRule(str(rule.get("type", "")), query if isinstance(query, str) else ""))
    return Risk(_str(data.get("name", ""), "a risk's name"), _str(data.get("message", ""), "a risk's message"),
                _str(data.get("url", ""), "a risk's url"), tuple(rules))


def parse_graph(body: bytes) -> Graph:
    """The graph in ``body`` (JSON), or :class:`GraphInvalid`.  Node metadata keeps string values only."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise GraphInvalid(f"the response is not JSON: {err}") from None
    if not isinstance(data, Mapping):
        raise GraphInvalid("the response is not a JSON object")
    nodes: list[Node] = []
    for node in data.get("nodes") or []:
        if not isinstance(node, Mapping):
            raise GraphInvalid("a node is not an object")
        metadata = node.get("metadata") or {}
        meta = {k: v for k, v in metadata.items() if isinstance(k, str) and isinstance(v, str)} \
            if isinstance(metadata, Mapping) else {}
        nodes.append(Node(_str(node.get("version"), "a node's version"), _str(node.get("payload"), "a node's payload"),
                          meta))
    edges: list[tuple[int, int]] = []
    for edge in data.get("edges") or []:
        if (not isinstance(edge, list) or len(edge) != 2
                or not all(isinstance(i, int) and not isinstance(i, bool) for i in edge)):
            raise GraphInvalid(f"invalid edge {json.dumps(edge)[:80]}: an edge is a pair of node indexes")
        edges.append((edge[0], edge[1]))
    conditional: list[ConditionalEdges] = []
    for entry in data.get("conditionalEdges") or []:
        if not isinstance(entry, Mapping):
            raise GraphInvalid("a conditional edge is not an object")
        pairs = []
        for e in entry.get("edges") or []:
            if not isinstance(e, Mapping):
                raise GraphInvalid("a conditional edge's edge is not an object")
            pairs.append((_str(e.get("from"), "a conditional edge's from"), _str(e.get("to"), "a conditional edge's to")))
        conditional.append(ConditionalEdges(tuple(pairs), tuple(_risk(r) for r in entry.get("risks") or [])))
    return Graph(tuple(nodes), tuple(edges), tuple(conditional))
