"""``cvo plan -o html``: the plan's timeline before anything runs, with the estimated critical path."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.cli.main import main
from cvo.operators.behaviour import Behaviour, Behaviours
from cvo.payload.graph import Mode
from cvo.payload.loader import load_release
from cvo.plan.build import Plan, make_plan
from cvo.report.critical import critical_path
from cvo.report.estimate import estimate_timeline, task_seconds
from tests.report.test_report_render import Page
from tests.support.helpers import PAYLOADS, REPO

PATCH = PAYLOADS / "demo-4.16.3"
SLOW = REPO / "scenarios" / "upgrade-slow-operator.yaml"


@functools.cache
def plan_of(mode: Mode) -> Plan:
    return make_plan(load_release(PATCH), mode, profile="self-managed-high-availability")


OPERATORS = ["authentication", "config-operator", "dns", "etcd", "ingress", "kube-apiserver", "machine-config",
             "network", "storage"]


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(OPERATORS), st.integers(0, 7200), max_size=6), st.sampled_from(list(Mode)))
def test_the_estimate_is_the_longest_path_of_the_graph(delays: dict[str, int], mode: Mode) -> None:
    plan = plan_of(mode)
    behaviours = Behaviours(Behaviour(delay=10.0), {k: Behaviour(delay=float(v)) for k, v in delays.items()})
    sweep = estimate_timeline(plan, behaviours).sweeps[0]
    # independently: the longest path with each node weighted by its tasks' durations
    weighted = nx.DiGraph()
    for node in plan.graph.nodes:
        weighted.add_node(("in", node))
        weighted.add_edge(("in", node), ("out", node),
                          w=sum(task_seconds(t, behaviours) for t in plan.graph.nodes[node]["tasks"] if not t.skip))
    for a, b in plan.graph.edges:
        weighted.add_edge(("out", a), ("in", b), w=0.0)
    assert sweep.duration == pytest.approx(nx.dag_longest_path_length(weighted, weight="w", default_weight=0))
    links = critical_path(sweep)
    assert sum(link.share for link in links) == pytest.approx(1.0) or sweep.duration == 0
    # the path is a chain of the graph with nothing between its links: it alone makes the total
    nodes = [link.node for link in links if link.kind == "node"]
    assert all(nx.has_path(plan.graph, a, b) for a, b in itertools.pairwise(nodes))
    assert sum(link.duration for link in links if link.kind == "gap") == pytest.approx(0.0, abs=1e-6)


def test_plan_html_names_the_slow_operator_of_a_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["plan", str(PATCH), "-o", "html", "--scenario", str(SLOW)]) == 0
    page = Page(capsys.readouterr().out)
    text = " ".join(" ".join(page.text).split())
    assert "The estimated critical path: 51m00s" in text
    assert "clusteroperator dns 45m00s 88.2%" in text
    assert any(v.startswith("bar estimated crit") for k, v in page.attrs if k == "class")


def test_plan_html_without_durations_claims_no_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    capsys.readouterr()
    assert main(["plan", str(PATCH), "-o", "html", "--mode", "install"]) == 0
    page = Page(capsys.readouterr().out)
    text = " ".join(page.text)
    assert "No critical path: the operators' durations are not known" in text
    assert not any("crit" in v for k, v in page.attrs if k == "class")
    assert "run level 50" in text
    operators = tmp_path / "ops.yaml"
    operators.write_text("default: {delay: 1m}\nmonitoring: {delay: 20m}\n")
    assert main(["plan", str(PATCH), "-o", "html", "--mode", "install", "--operators", str(operators)]) == 0
    text = " ".join(" ".join(Page(capsys.readouterr().out).text).split())
    assert "clusteroperator monitoring 20m00s" in text


@pytest.mark.parametrize(("args", "message"), [
    (["-o", "text", "--operators", "x.yaml"], "error: --operators, --scenario, --recorded and --from-file give durations "
                                              "for -o html only"),
    (["-o", "html", "--scenario", "/nonexistent.yaml"], "error: /nonexistent.yaml"),
    (["-o", "html", "--operators", "/nonexistent.yaml"], "error: /nonexistent.yaml"),
])
def test_plan_html_bad_flags(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    capsys.readouterr()
    assert main(["plan", str(PATCH), *args]) == 2
    captured = capsys.readouterr()
    assert len(captured.err.splitlines()) == 1 and captured.err.startswith(message) and captured.out == ""
