"""parse_graph on what an update service may answer: Go's json.Unmarshal texts for each refusal (the
``ResponseInvalid`` message), Go's leniency where it is lenient, and hypothesis over hostile bodies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.updates.graph import ConditionalEdges, Graph, GraphInvalid, Node, parse_graph
from cvo.updates.model import MatchingRule, Risk


@pytest.mark.parametrize(("body", "error"), [
    (b"<html><body>502 Bad Gateway</body></html>", "invalid character '<' looking for beginning of value"),
    (b"", "unexpected end of JSON input"),
    (b'{"nodes": [{"version": "4.1.0", "payl', "unexpected end of JSON input"),
    (b'{"nodes": [', "unexpected end of JSON input"),
    (b"[]", "json: cannot unmarshal array into Go value of type cincinnati.graph"),
    (b'"graph"', "json: cannot unmarshal string into Go value of type cincinnati.graph"),
    (b"42", "json: cannot unmarshal number into Go value of type cincinnati.graph"),
    (b'{"nodes": {}}', "json: cannot unmarshal object into Go struct field graph.Nodes of type []cincinnati.node"),
    (b'{"nodes": [1]}', "json: cannot unmarshal number into Go struct field graph.Nodes of type cincinnati.node"),
    (b'{"nodes": [{"version": "4.1.0", "payload": 5}]}',
     "json: cannot unmarshal number into Go struct field node.Nodes.payload of type string"),
    (b'{"nodes": [{"version": "4.1.0", "metadata": []}]}',
     "json: cannot unmarshal array into Go struct field node.Nodes.metadata of type map[string]interface {}"),
    (b'{"nodes": [{"version": "v4.0.0-0.1"}]}', 'Invalid character(s) found in major number "v4"'),
    (b'{"nodes": [{"version": "4-0-0+0.1"}]}', "No Major.Minor.Patch elements found"),
    (b'{"nodes": [{"version": null}]}', "Version string empty"),
    (b'{"nodes": [{"version": 4}]}', "json: cannot unmarshal number into Go struct field node.Nodes.version of type "
                                     "string"),
    (b'{"nodes": [{"version": "4.1.0", "payload": 1.5}]}',  # a string field: Go does not quote the number
     "json: cannot unmarshal number into Go struct field node.Nodes.payload of type string"),
    # a custom unmarshaler's error ends decoding, ahead of a type error found before it; document order
    (b'{"nodes": [{"version": "4.1.0", "payload": 1}, {"version": "x"}]}', "No Major.Minor.Patch elements found"),
    (b'{"edges": [[0, "1"]], "nodes": [{"version": "x"}]}',
     "json: cannot unmarshal string into Go struct field graph.Edges of type int"),
    (b'{"edges": {}}', "json: cannot unmarshal object into Go struct field graph.Edges of type []cincinnati.edge"),
    (b'{"edges": [[0, 1, 2]]}', "expected 2 fields, found 3"),
    (b'{"edges": [[0]]}', "expected 2 fields, found 1"),
    (b'{"edges": [null]}', "expected 2 fields, found 0"),
    (b'{"edges": [[0, 1.5]]}', "json: cannot unmarshal number 1.5 into Go struct field graph.Edges of type int"),
    (b'{"edges": [[0, 1e2]]}', "json: cannot unmarshal number 1e2 into Go struct field graph.Edges of type int"),
    (b'{"edges": [[0, 99999999999999999999]]}',
     "json: cannot unmarshal number 99999999999999999999 into Go struct field graph.Edges of type int"),
    (b'{"edges": [[0, "1"]]}', "json: cannot unmarshal string into Go struct field graph.Edges of type int"),
    (b'{"edges": [{"from": 0}]}', "json: cannot unmarshal object into Go struct field graph.Edges of type []int"),
    (b'{"conditionalEdges": [{"edges": [{"from": 1, "to": "4.1.1"}]}]}',
     "json: cannot unmarshal number into Go struct field conditionalEdge.conditionalEdges.edges.from of type string"),
    (b'{"conditionalEdges": [{"risks": [{"name": ["x"]}]}]}',
     "json: cannot unmarshal array into Go struct field ConditionalUpdateRisk.conditionalEdges.risks.name of type "
     "string"),
    (b'{"nodes": [] "edges": []}', "invalid character '\"' after object key:value pair"),
    (b'{"edges": [[0 1]]}', "invalid character '1' after array element"),
    (b'{"nodes" []}', "invalid character '[' after object key"),
    (b"{nodes: []}", "invalid character 'n' looking for beginning of object key string"),
    (b'{"nodes": []} trailing', "invalid character 't' after top-level value"),
    (b'{"nodes": NaN}', "invalid character 'N' looking for beginning of value"),
    (b'{"a": "\\x"}', "invalid character 'x' in string escape code"),
    (b'{"nodes": [{"version": "4.1.0", "metadata": {"a": {"b": [1e400]}}}]}',
     "json: cannot unmarshal number 1e400 into Go struct field node.Nodes.metadata of type float64"),
    (b"[" * 100001 + b"]" * 100001, "exceeded max depth"),
])
def test_refusals_are_gos_words(body: bytes, error: str) -> None:
    with pytest.raises(GraphInvalid) as err:
        parse_graph(body)
    assert str(err.value) == error


def test_go_leniency_absent_fields_case_folded_names_unknown_fields() -> None:
    body = b'{"NODES": [{"Version": "4.1.0", "extra": 1}, {"payload": "p"}, null], "Edges": null, "x": [1]}'
    assert parse_graph(body) == Graph((Node("4.1.0", ""), Node("0.0.0", "p"), Node("0.0.0", "")), (), ())
    assert parse_graph(b"null") == Graph()
    assert parse_graph(b'{"nodes": [{"version": "4.1.0", "metadata": {"url": 5, "a": {"b": []}}}]}').nodes[0] \
        .metadata == {"url": 5, "a": {"b": []}}


def test_invalid_utf8_is_replaced_as_go_replaces_it() -> None:
    assert parse_graph(b'{"nodes": [{"version": "4.1.0", "payload": "q\xff"}]}').nodes[0].payload == "q\ufffd"


def test_a_full_graph_round_trips() -> None:
    g = Graph((Node("4.1.0", "a", {"url": "u"}), Node("4.1.1", "b")), ((0, 1),),
              (ConditionalEdges((("4.1.0", "4.1.1"),), (Risk("R", "m", "u", (MatchingRule("PromQL", "up"),
                                                                                 MatchingRule("Always"))),)),))
    assert parse_graph(g.dumps()) == g


# --- hypothesis: any body is a graph or a one-line GraphInvalid ---------------------------------------------

_scalar = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | \
    st.text(max_size=8) | st.sampled_from(["4.1.0", "4.1.0-rc.1", "v4", "4.1", "01.2.3", "4.1.0+b", "multi"])
_key = st.sampled_from(["nodes", "edges", "conditionalEdges", "version", "payload", "metadata", "from", "to",
                        "risks", "name", "matchingRules", "type", "promql", "Nodes", "url", "x"])
_json = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_key, inner, max_size=5),
                     max_leaves=25)


def _check(body: bytes) -> Graph | None:
    try:
        return parse_graph(body)
    except GraphInvalid as err:
        assert str(err) and "\n" not in str(err)
        return None


@settings(max_examples=300, deadline=None)
@given(_json)
def test_any_json_is_a_graph_or_a_one_line_refusal(value: Any) -> None:
    graph = _check(json.dumps(value).encode())
    if graph is not None:
        for node in graph.nodes:
            assert isinstance(node.version, str) and isinstance(node.payload, str)
        assert all(isinstance(a, int) and isinstance(b, int) for a, b in graph.edges)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | _json.map(lambda v: json.dumps(v).encode()).flatmap(
    lambda b: st.integers(0, len(b)).map(lambda i: b[:i])))
def test_any_bytes_or_truncation_is_a_graph_or_a_one_line_refusal(body: bytes) -> None:
    _check(body)
