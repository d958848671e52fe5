"""The update service's graph, as the Cincinnati v1 graph API serves it (pkg/cincinnati/cincinnati.go
``graph``, ``node``, ``edge``, ``conditionalEdges``): nodes (a version, its payload image and metadata),
edges as pairs of node indexes, and conditional edges (``from``/``to`` versions with their risks).

:func:`parse_graph` reads an answer as the CVO's ``json.Unmarshal(body, &graph)`` does, and refuses what
that refuses with Go's own error text (it becomes the ``ResponseInvalid`` message): syntax errors as
``encoding/json``'s scanner words them, type mismatches as its ``UnmarshalTypeError``, a node version as
blang/semver's ``Parse``, an edge as ``edge.UnmarshalJSON``.  Like Go, field names match case-insensitively,
unknown fields are ignored, and absent fields are empty (a node without a version is 0.0.0).
:meth:`Graph.to_json` writes a graph.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cvo.payload.semver import SemverError, Version
from cvo.updates.model import MatchingRule, Risk


class GraphInvalid(ValueError):
    """The answer is no graph; ``str()`` is Go's error text (the ``ResponseInvalid`` message's tail)."""


@dataclass(frozen=True)
class Node:
    version: str
    payload: str
    # e.g. io.openshift.upgrades.graph.release.channels; values as JSON gave them (Go's map[string]interface{})
    metadata: Mapping[str, Any] = field(default_factory=dict)


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


# --- Go's encoding/json, as far as the graph needs it --------------------------------------------------


class _Number(str):
    """A JSON number that is no int64 (a fraction, an exponent, or too large): its text, as Go reports it."""


def _int64(value: Any) -> bool:
    return type(value) is int and -(2**63) <= value < 2**63


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN, Infinity: not JSON to Go


def _quote_char(ch: str) -> str:
    """encoding/json ``quoteChar``."""
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    quoted = json.dumps(ch)
    return "'" + quoted[1:-1] + "'"


_SYNTAX = {
    "Expecting value": "looking for beginning of value",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting ':' delimiter": "after object key",
    "Extra data": "after top-level value",
    "Invalid control character at": "in string literal",
    "Invalid \\escape": "in string escape code",
    "Invalid \\uXXXX escape": "in \\u hexadecimal character escape",
}


def _syntax_error(err: json.JSONDecodeError, text: str) -> str:
    """The scanner's ``SyntaxError`` text for where Python's decoder stopped."""
    pos = err.pos
    if err.msg.startswith("Unterminated string") or pos >= len(text) or not text[pos:].strip():
        return "unexpected end of JSON input"
    while pos < len(text) and text[pos] in " \t\r\n" and err.msg != "Extra data":
        pos += 1
    if pos >= len(text):
        return "unexpected end of JSON input"
    ch = text[pos]
    if err.msg.startswith("Invalid \\"):  # Python points at the backslash; Go at the character after it
        ch = text[pos + 1] if pos + 1 < len(text) else ch
        if err.msg.startswith("Invalid \\u"):
            tail = text[pos + 2:pos + 6]
            ch = next((c for c in tail if c not in "0123456789abcdefABCDEF"), ch)
    if err.msg == "Expecting ',' delimiter":
        where = "after array element" if _innermost(text, pos) == "[" else "after object key:value pair"
    else:
        where = next((w for m, w in _SYNTAX.items() if err.msg.startswith(m)), "looking for beginning of value")
    if ch == "N" and err.msg == "Expecting value":
        where = "looking for beginning of value"
    return f"invalid character {_quote_char(ch)} {where}"


def _innermost(text: str, pos: int) -> str:
    """Whether ``pos`` is inside an array or an object (the bracket that opened last and is still open)."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append(ch)
        elif ch in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def _kind(value: Any, literal: bool = False) -> str:
    """The JSON kind in an ``UnmarshalTypeError``; ``literal``: a number an int cannot hold as its text
    (``number 1.5``), as Go reports a number for an int."""
    if isinstance(value, bool):
        return "bool"
    if literal and (isinstance(value, _Number) or (isinstance(value, int) and not _int64(value))):
        return "number " + str(value)
    if isinstance(value, int | float | _Number):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class _Decoder:
    """Go's decoder over the parsed JSON: the first type error is kept and decoding goes on (``saveError``)."""

    def __init__(self) -> None:
        self.error: str | None = None

    def type_error(self, value: Any, struct: str, path: str, go_type: str, literal: bool = False) -> None:
        if self.error is None:
            where = f"Go struct field {struct}.{path}" if struct else "Go value"
            self.error = f"json: cannot unmarshal {_kind(value, literal)} into {where} of type {go_type}"

    def field(self, obj: Mapping[str, Any], name: str) -> Any:
        """Go's field lookup: an exact key, else the last key equal under case folding."""
        if name in obj:
            return obj[name]
        found = None
        for key, value in obj.items():
            if key.lower() == name.lower():
                found = value
        return found

    def string(self, value: Any, struct: str, path: str) -> str:
        if value is None:
            return ""
        if not isinstance(value, str) or isinstance(value, _Number):
            self.type_error(value, struct, path, "string")
            return ""
        return value

    def objects(self, value: Any, struct: str, path: str, go_type: str) -> list[Mapping[str, Any]]:
        """A JSON array of objects (``null`` elements are zero values, others a type error)."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.type_error(value, struct, path, "[]" + go_type)
            return []
        out: list[Mapping[str, Any]] = []
        for item in value:
            if item is None:
                out.append({})
            elif isinstance(item, Mapping):
                out.append(item)
            else:
                self.type_error(item, struct, path, go_type)
        return out


def _version(d: _Decoder, value: Any) -> str:
    """``semver.Version.UnmarshalJSON``: a JSON string that blang/semver parses (absent: 0.0.0)."""
    if value is _ABSENT:
        return "0.0.0"
    if value is None:
        value = ""
    # A custom unmarshaler's error ends decoding at once (an earlier type error is forgotten), with the
    # field it was decoding named when it is a type error (decodeState.addErrorContext).
    if not isinstance(value, str) or isinstance(value, _Number):
        raise GraphInvalid(f"json: cannot unmarshal {_kind(value)} into Go struct field node.Nodes.version of type "
                           "string")
    try:
        return str(Version.parse(value))
    except SemverError as err:
        raise GraphInvalid(str(err)) from None


_ABSENT = object()


def _node(d: _Decoder, obj: Mapping[str, Any]) -> Node:
    version = _version(d, obj["version"] if "version" in obj else _field_or_absent(d, obj, "version"))
    payload = d.string(d.field(obj, "payload"), "node", "Nodes.payload")
    metadata = d.field(obj, "metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        d.type_error(metadata, "node", "Nodes.metadata", "map[string]interface {}")
        metadata = None
    huge = _overflow(metadata)
    if huge is not None:  # interface{} holds numbers as float64
        d.type_error(huge, "node", "Nodes.metadata", "float64", literal=True)
    return Node(version, payload, _plain(metadata) if metadata else {})


def _plain(value: Any) -> Any:
    """Numbers as float64 holds them (a fraction's text was kept for error messages only)."""
    if isinstance(value, _Number):
        return float(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _overflow(value: Any) -> _Number | None:
    """A number in ``value`` that a float64 cannot hold."""
    if isinstance(value, _Number):
        return value if math.isinf(float(value)) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return _Number(str(value)) if abs(value) >= 2**1024 else None
    children = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
    return next((n for n in map(_overflow, children) if n is not None), None)


def _field_or_absent(d: _Decoder, obj: Mapping[str, Any], name: str) -> Any:
    if any(k.lower() == name for k in obj):
        return d.field(obj, name)
    return _ABSENT


def _edge(value: Any) -> tuple[int, int]:
    """``edge.UnmarshalJSON``: ``json.Unmarshal(data, &[]int)`` and exactly two fields; its errors end decoding."""
    if type(value) is list and len(value) == 2 and _int64(value[0]) and _int64(value[1]):
        return (value[0], value[1])
    if value is None:
        raise GraphInvalid("expected 2 fields, found 0")
    where = "Go struct field graph.Edges"
    if not isinstance(value, list):
        raise GraphInvalid(f"json: cannot unmarshal {_kind(value)} into {where} of type []int")
    for item in value:
        if item is not None and not _int64(item):
            raise GraphInvalid(f"json: cannot unmarshal {_kind(item, literal=True)} into {where} of type int")
    if len(value) != 2:
        raise GraphInvalid(f"expected 2 fields, found {len(value)}")
    return (value[0] or 0, value[1] or 0)


def _rule(d: _Decoder, obj: Mapping[str, Any]) -> MatchingRule:
    kind = d.string(d.field(obj, "type"), "ClusterCondition", "conditionalEdges.risks.matchingRules.type")
    promql = d.field(obj, "promql")
    query = ""
    if isinstance(promql, Mapping):
        query = d.string(d.field(promql, "promql"), "PromQLClusterCondition",
                         "conditionalEdges.risks.matchingRules.promql.promql")
    elif promql is not None:
        d.type_error(promql, "ClusterCondition", "conditionalEdges.risks.matchingRules.promql",
                     "v1.PromQLClusterCondition")
    return MatchingRule(kind, query)


def _risk(d: _Decoder, obj: Mapping[str, Any]) -> Risk:
    struct, path = "ConditionalUpdateRisk", "conditionalEdges.risks"
    rules = d.objects(d.field(obj, "matchingRules"), struct, path + ".matchingRules", "v1.ClusterCondition")
    conditions = d.objects(d.field(obj, "conditions"), struct, path + ".conditions", "v1.Condition")
    return Risk(d.string(d.field(obj, "name"), struct, path + ".name"),
                d.string(d.field(obj, "message"), struct, path + ".message"),
                d.string(d.field(obj, "url"), struct, path + ".url"),
                tuple(_rule(d, r) for r in rules), tuple(dict(c) for c in conditions))


def _conditional(d: _Decoder, obj: Mapping[str, Any]) -> ConditionalEdges:
    edges = d.objects(d.field(obj, "edges"), "conditionalEdges", "conditionalEdges.edges",
                      "cincinnati.conditionalEdge")
    pairs = tuple((d.string(d.field(e, "from"), "conditionalEdge", "conditionalEdges.edges.from"),
                   d.string(d.field(e, "to"), "conditionalEdge", "conditionalEdges.edges.to")) for e in edges)
    risks = d.objects(d.field(obj, "risks"), "conditionalEdges", "conditionalEdges.risks", "v1.ConditionalUpdateRisk")
    return ConditionalEdges(pairs, tuple(_risk(d, r) for r in risks))


def _load(body: bytes) -> Any:
    text = body.decode("utf-8", "replace")  # Go's decoder takes invalid UTF-8 in strings as U+FFFD
    try:
        return json.loads(text, parse_float=_Number, parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        raise GraphInvalid(_syntax_error(err, text)) from None
    except RecursionError:  # Python's decoder nests as deep as the interpreter's recursion limit (Go: 10000)
        raise GraphInvalid("exceeded max depth") from None
    except ValueError:  # NaN, Infinity, -Infinity
        start = len(text) - len(text.lstrip())
        bad = next((i for i in range(start, len(text)) if text[i] in "NI"), start)
        where = "in numeric literal" if bad > 0 and text[bad - 1] == "-" else "looking for beginning of value"
        raise GraphInvalid(f"invalid character {_quote_char(text[bad])} {where}") from None


def parse_graph(body: bytes) -> Graph:
    """The graph in ``body``, or :class:`GraphInvalid` with Go's error text (see the module's docstring)."""
    data = _load(body)
    if data is None:
        return Graph()
    d = _Decoder()
    if not isinstance(data, Mapping):
        raise GraphInvalid(f"json: cannot unmarshal {_kind(data)} into Go value of type cincinnati.graph")
    nodes: list[Node] = []
    edges: list[tuple[int, int]] = []
    conditional: list[ConditionalEdges] = []
    for key, value in data.items():  # in the document's order, as Go decodes (a later duplicate wins)
        name = key.lower()
        if name == "nodes":
            nodes = [_node(d, n) for n in d.objects(value, "graph", "Nodes", "cincinnati.node")]
        elif name == "edges":
            if value is not None and not isinstance(value, list):
                d.type_error(value, "graph", "Edges", "[]cincinnati.edge")
                edges = []
            else:
                edges = [_edge(e) for e in value or []]
        elif name == "conditionaledges":
            conditional = [_conditional(d, c) for c in d.objects(value, "graph", "conditionalEdges",
                                                                 "cincinnati.conditionalEdges")]
    if d.error is not None:
        raise GraphInvalid(d.error)
    return Graph(tuple(nodes), tuple(edges), tuple(conditional))


# --- fmt's %v, for the metadata values ParseMetadata quotes ---------------------------------------------


def go_value(value: Any) -> str:
    """``fmt.Sprintf("%v", v)`` of a value ``json.Unmarshal`` put in an ``interface{}``."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | _Number):
        return _go_g(float(value))
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _go_g(value: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)`` (fmt's %v): the shortest digits, in exponent form when
    the exponent is below -4 or at least 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    raw = (whole + fraction).rstrip("0")
    digits = raw.lstrip("0")
    point = len(whole) - (len(raw) - len(digits)) + (int(exponent) if exponent else 0)
    exp = point - 1
    if exp < -4 or exp >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"
