"""pkg/cincinnati/cincinnati_test.go ``TestGetUpdates``, case by case, against a real update service on
127.0.0.1: the query the CVO sends, the current release, the updates and the conditional updates."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.updates.client import UpdateServiceOptions, fetch_graph
from cvo.updates.errors import UpdateError
from cvo.updates.graph import ConditionalEdges, Graph, Node, parse_graph
from cvo.updates.model import ConditionalUpdate, MatchingRule, Release, Risk
from cvo.updates.select import Selection, parse_metadata, select_updates
from tests.support.update_service import FixedRegistry, UpdateService

CLIENT_ID = "01234567-0123-0123-0123-0123456789ab"
CHANNEL = "test-channel"
IMG = "quay.io/openshift-release-dev/ocp-release:"
CH = "io.openshift.upgrades.graph.release.channels"


def n(version: str, channels: str = "test-channel") -> dict[str, Any]:
    return {"version": version, "payload": IMG + version,
            "metadata": {"url": f"https://example.com/errata/{version}", CH: channels}}


def rel(version: str, *channels: str) -> Release:
    return Release(version, IMG + version, f"https://example.com/errata/{version}", channels or ("test-channel",))


BUG_A = {"url": "https://example.com/bug/123", "name": "BugA",
         "message": "On clusters with a Proxy configured, everything breaks.",
         "matchingRules": [{"type": "PromQL", "promql": {"promql": 'max(cluster_proxy_enabled{type=~"https?"})'}}]}
BUG_B = {"url": "https://example.com/bug/456", "name": "BugB",
         "message": "All 4.1.0 clusters are incompatible with 4.1.3, and must pass through 4.1.2 on their way to "
                    "4.1.3 to avoid breaking.",
         "matchingRules": [{"type": "Always"}]}
RISK_A = Risk("BugA", BUG_A["message"], BUG_A["url"],
              (MatchingRule("PromQL", 'max(cluster_proxy_enabled{type=~"https?"})'),))
RISK_B = Risk("BugB", BUG_B["message"], BUG_B["url"], (MatchingRule("Always"),))
UNKNOWN_RULE = {**BUG_B, "matchingRules": [{"type": "does-not-exist"}]}

CURRENT = rel("4.1.0", "channel-a", "test-channel")

CASES: list[tuple[str, dict[str, Any]]] = [
    ("one update available", dict(
        version="4.1.0", graph={"nodes": [n("4.1.0", "test-channel,channel-a"), n("4.1.1")], "edges": [[0, 1]]},
        current=CURRENT, available=(rel("4.1.1"),))),
    ("two updates available", dict(
        version="4.1.0",
        graph={"nodes": [n("4.1.0", "test-channel,channel-a"), n("4.1.1", "test-channel,channel-a"), n("4.1.2"),
                         n("4.1.3")], "edges": [[0, 1], [0, 2], [1, 2], [2, 3]]},
        current=CURRENT, available=(rel("4.1.1", "channel-a", "test-channel"), rel("4.1.2")))),
    ("no updates available", dict(
        version="4.1.0-0.okd-0",
        graph={"nodes": [n("4.1.0-0.okd-0", "test-channel,channel-a"), n("4.1.1"), n("4.1.2")], "edges": [[1, 2]]},
        current=rel("4.1.0-0.okd-0", "channel-a", "test-channel"))),
    ("single to multi arch, only current version available", dict(
        version="4.1.2", arch="Multi", current_arch="test-arch", query_arch="multi",
        graph={"nodes": [n("4.1.0"), n("4.1.1"), n("4.1.2"), n("4.1.3")], "edges": [[0, 1]]},
        current=rel("4.1.2"), available=(rel("4.1.2"),))),
    ("single to multi arch, current version not found", dict(
        version="4.1.2", arch="Multi", current_arch="test-arch", query_arch="multi",
        graph={"nodes": [n("4.1.0"), n("4.1.1"), n("4.1.3")], "edges": [[0, 1]]},
        err='VersionNotFound: currently reconciling cluster version 4.1.2 not found in the "test-channel" channel')),
    ("multi to multi arch, one update available", dict(
        version="4.1.0", arch="Multi", current_arch="Multi", query_arch="multi",
        graph={"nodes": [n("4.1.0", "test-channel,channel-a"), n("4.1.1")], "edges": [[0, 1]]},
        current=CURRENT, available=(rel("4.1.1"),))),
    ("conditional updates available", dict(
        version="4.1.0",
        graph={"nodes": [n("4.1.0", "test-channel,channel-a"), n("4.1.1", "test-channel,channel-a"), n("4.1.2"),
                         n("4.1.3")], "edges": [[0, 1], [0, 2], [1, 2], [2, 3]],
               "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "4.1.3"}], "risks": [BUG_A, BUG_B]}]},
        current=CURRENT, available=(rel("4.1.1", "channel-a", "test-channel"), rel("4.1.2")),
        conditional=(ConditionalUpdate(rel("4.1.3"), (RISK_A, RISK_B)),))),
    ("conditional updates available, but have no recognized rules", dict(
        version="4.1.0",
        graph={"nodes": [n("4.1.0", "test-channel,channel-a"), n("4.1.1", "test-channel,channel-a")],
               "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "4.1.1"}], "risks": [BUG_A, UNKNOWN_RULE]}]},
        current=CURRENT)),
    ("conditional updates available, and overlap with unconditional edge", dict(
        version="4.1.0",
        graph={"nodes": [n("4.1.0", "test-channel,channel-a"), n("4.1.1")], "edges": [[0, 1]],
               "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "4.1.1"}], "risks": [BUG_A]}]},
        current=CURRENT, conditional=(ConditionalUpdate(rel("4.1.1"), (RISK_A,)),))),
    ("multiple conditional updates with a single target", dict(
        version="4.1.0",
        graph={"nodes": [n("4.1.0", "test-channel,channel-a"), n("4.1.1")],
               "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "4.1.1"}], "risks": [BUG_A]},
                                    {"edges": [{"from": "4.1.0", "to": "4.1.1"}], "risks": [BUG_B]}]},
        current=CURRENT)),
    ("condition with risks after invalid risk", dict(
        version="4.1.0",
        graph={"nodes": [n("4.1.0", "test-channel,channel-a"), n("4.1.1")],
               "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "4.1.1"}], "risks": [UNKNOWN_RULE, BUG_B]}]},
        current=CURRENT)),
    ("unknown version", dict(
        version="4.1.0", graph={"nodes": [n("4.1.1", "test-channel,channel-a")]},
        err='VersionNotFound: currently reconciling cluster version 4.1.0 not found in the "test-channel" channel')),
]


def get_updates(service: UpdateService, version: str, arch: str, current_arch: str) -> Selection:
    """``Client.GetUpdates``: download, parse, select."""
    body = asyncio.run(fetch_graph(service.url, arch=arch, channel=CHANNEL, cluster_id=CLIENT_ID, version=version,
                                   options=UpdateServiceOptions(timeout=10)))
    return select_updates(parse_graph(body), version, arch, FixedRegistry(), current_arch=current_arch,
                          channel=CHANNEL)


@pytest.mark.parametrize(("name", "case"), CASES, ids=[c[0] for c in CASES])
def test_get_updates(name: str, case: dict[str, Any]) -> None:
    arch = case.get("arch", "test-arch")
    with UpdateService() as service:
        service.graph = case["graph"]
        if "err" in case:
            with pytest.raises(UpdateError) as err:
                get_updates(service, case["version"], arch, case.get("current_arch", arch))
            assert str(err.value) == case["err"]
        else:
            got = get_updates(service, case["version"], arch, case.get("current_arch", arch))
            assert got.current == case["current"]
            assert got.updates == case.get("available", ())
            assert got.conditional == case.get("conditional", ())
    assert len(service.requests) == 1
    request = service.requests[0]
    assert request.query == {"arch": [case.get("query_arch", "test-arch")], "channel": [CHANNEL],
                             "id": [CLIENT_ID], "version": [case["version"]]}
    assert request.headers["Accept"] == "application/json"


# --- beyond the CVO's cases: what its code does (or, where it panics, what cvo does instead) -------------


def graph(*nodes: Node, edges: tuple[tuple[int, int], ...] = (), conditional: Any = ()) -> Graph:
    return Graph(tuple(nodes), edges, conditional)


def node(version: str, **metadata: Any) -> Node:
    return Node(version, IMG + version, metadata)


def test_an_edge_to_a_missing_node_is_response_invalid_where_the_cvo_panics() -> None:
    g = graph(node("4.1.0"), node("4.1.1"), edges=((0, 1), (0, 7)))
    with pytest.raises(UpdateError) as err:
        select_updates(g, "4.1.0", "amd64", FixedRegistry())
    assert err.value.reason == "ResponseInvalid"
    assert err.value.message == "invalid recommended update node: edge [0,7] points to no node (the graph has 2)"
    negative = graph(node("4.1.0"), edges=((0, -1),))
    with pytest.raises(UpdateError, match="edge \\[0,-1\\] points to no node"):
        select_updates(negative, "4.1.0", "amd64", FixedRegistry())


def test_an_edge_to_a_missing_node_elsewhere_is_ignored_as_the_cvo_ignores_it() -> None:
    g = graph(node("4.1.0"), node("4.1.1"), edges=((0, 1), (5, 9)))
    assert select_updates(g, "4.1.0", "amd64", FixedRegistry()).updates == (Release("4.1.1", IMG + "4.1.1"),)


def test_a_conditional_edge_to_a_missing_node_is_response_invalid() -> None:
    g = graph(node("4.1.0"), conditional=(ConditionalEdges((("4.1.0", "4.1.9"),), (RISK_B,)),))
    with pytest.raises(UpdateError) as err:
        select_updates(g, "4.1.0", "amd64", FixedRegistry())
    assert (err.value.reason, err.value.message) == ("ResponseInvalid", "no node for conditional update 4.1.9")


def test_duplicate_nodes_the_first_is_current_and_edges_keep_their_indexes() -> None:
    g = graph(Node("4.1.0", "first"), Node("4.1.0", "second"), node("4.1.1"), node("4.1.2"),
              edges=((1, 3), (0, 2)))
    got = select_updates(g, "4.1.0", "amd64", FixedRegistry())
    assert got.current.image == "first"
    assert [r.version for r in got.updates] == ["4.1.1"]


def test_the_current_version_matches_without_build_metadata() -> None:
    g = graph(node("4.1.0+abc"), node("4.1.1"), edges=((0, 1),))
    got = select_updates(g, "4.1.0", "amd64", FixedRegistry())
    assert got.current.version == "4.1.0+abc" and got.updates[0].version == "4.1.1"


@pytest.mark.parametrize(("metadata", "errors"), [
    ({"url": 5}, "URL is not a string: 5"),
    ({"url": 1.5}, "URL is not a string: 1.5"),
    ({"url": "https://x/\n"}, 'invalid release URL: parse "https://x/\\n": net/url: invalid control character in URL'),
    ({"release.openshift.io/architecture": "amd64"}, 'unrecognized release.openshift.io/architecture value "amd64"'),
    ({"release.openshift.io/architecture": True}, "release.openshift.io/architecture is not a string: true"),
    ({CH: ""}, f"{CH} is an empty string"),
    ({CH: ",a,"}, f'{CH} entry 2 is an empty string: ",a,"\n{CH} entry 0 is an empty string: ",a,"'),
    ({CH: ","}, f'{CH} entry 1 is an empty string: ","\n{CH} entry 0 is an empty string: ","\n'
                f"no non-empty channels in {CH} []"),
    ({CH: ["a"]}, f"{CH} is not a string: [a]"),
    ({"url": 1e6, CH: {"b": 1, "a": None}}, f"URL is not a string: 1e+06\n{CH} is not a string: map[a:<nil> b:1]"),
])
def test_parse_metadata_errors_are_the_cvos(metadata: dict[str, Any], errors: str) -> None:
    assert parse_metadata(metadata)[3] == errors


def test_invalid_metadata_on_the_current_node_update_and_conditional_target() -> None:
    bad = {"release.openshift.io/architecture": "amd64"}
    msg = 'unrecognized release.openshift.io/architecture value "amd64"'
    for g, what in [(graph(node("4.1.0", **bad)), "current"),
                    (graph(node("4.1.0"), node("4.1.1", **bad), edges=((0, 1),)), "recommended update"),
                    (graph(node("4.1.0"), node("4.1.1", **bad),
                           conditional=(ConditionalEdges((("4.1.0", "4.1.1"),), (RISK_B,)),)), "conditional update")]:
        with pytest.raises(UpdateError) as err:
            select_updates(g, "4.1.0", "amd64", FixedRegistry())
        assert (err.value.reason, err.value.message) == ("ResponseInvalid", f"invalid {what} node: {msg}")


def test_multi_metadata_and_sorted_channels() -> None:
    g = graph(node("4.1.0", **{"release.openshift.io/architecture": "multi", CH: "b,a"}))
    assert select_updates(g, "4.1.0", "Multi", FixedRegistry()).current == \
        Release("4.1.0", IMG + "4.1.0", "", ("a", "b"), "Multi")


def test_a_pruned_rule_with_others_left_keeps_the_target_with_the_valid_rules() -> None:
    mixed = Risk("Mixed", "m", "u", (MatchingRule("does-not-exist"), MatchingRule("Always")))
    g = graph(node("4.1.0"), node("4.1.1"), conditional=(ConditionalEdges((("4.1.0", "4.1.1"),), (mixed,)),))
    got = select_updates(g, "4.1.0", "amd64", FixedRegistry())
    assert got.conditional[0].risks[0].matching_rules == (MatchingRule("Always"),)


# --- hypothesis: GetUpdates' rules hold on any graph -------------------------------------------------------

_versions = st.sampled_from(["4.1.0", "4.1.1", "4.1.2", "4.2.0", "4.1.0+b"])
_rules = st.lists(st.sampled_from([MatchingRule("Always"), MatchingRule("PromQL", "up"), MatchingRule("PromQL"),
                                   MatchingRule("bogus")]), max_size=3)


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    nodes = tuple(Node(v, draw(st.sampled_from(["a", "b", "c", v]))) for v in draw(st.lists(_versions, max_size=6)))
    n = len(nodes)
    edges = tuple(draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0))),
                                max_size=8))) if n else ()
    conditional = tuple(ConditionalEdges(
        tuple(draw(st.lists(st.tuples(_versions, st.sampled_from([x.version for x in nodes] or ["4.1.1"])),
                            max_size=3))),
        tuple(Risk(f"R{i}", "m", "u", tuple(draw(_rules))) for i in range(draw(st.integers(0, 2)))))
        for _ in range(draw(st.integers(0, 3))))
    return Graph(nodes, edges, conditional)


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_get_updates_rules_hold_on_any_graph(g: Graph) -> None:
    try:
        got = select_updates(g, "4.1.0", "amd64", FixedRegistry())
    except UpdateError as err:
        assert err.reason in ("VersionNotFound", "ResponseInvalid")
        if err.reason == "VersionNotFound":
            assert all(n.version.split("+")[0] != "4.1.0" for n in g.nodes)
        return
    current = next(i for i, n in enumerate(g.nodes) if n.version.split("+")[0] == "4.1.0")
    targets = {g.nodes[b].payload for a, b in g.edges if a == current}
    conditional_images = [c.release.image for c in got.conditional]
    assert {u.image for u in got.updates} <= targets
    assert not {u.image for u in got.updates} & set(conditional_images)  # both: conditional only
    assert len(conditional_images) == len(set(conditional_images))  # a target twice: dropped
    for update in got.conditional:
        assert all(r.matching_rules for r in update.risks)  # a risk left without rules drops its target
        assert all(m.type == "Always" or (m.type == "PromQL" and m.promql) for r in update.risks
                   for m in r.matching_rules)
