"""The ``pools`` and ``nodes`` expectations: what they read of the simulated machine-config operator's pools
and nodes at the end of a replay, that a wrong one FAILs, and that an unknown key is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from cvo.scenario.expect import evaluate
from cvo.scenario.model import ScenarioError, load_scenario
from cvo.scenario.replay import replay

DEMO = Path(__file__).resolve().parents[2] / "payloads" / "demo-4.16.0"
SCENARIO = f"""
name: pools at install
description: a cluster installed with one master and two workers
cluster: {{installed: {DEMO}}}
operators:
  machine-config: {{pools: {{master: 1, worker: {{nodes: 2, paused: true}}}}}}
options: {{timeout: 1h}}
expect:
"""


def _checks(tmp_path: Path, expect: str) -> list[tuple[str, bool, str]]:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO + expect)
    return [(c.name, c.ok, c.detail) for c in evaluate(replay(load_scenario(path)))]


def test_pools_and_nodes_pass_and_fail_on_what_the_cluster_holds(tmp_path: Path) -> None:
    checks = _checks(tmp_path, """
  pools:
    - {name: worker, assessment: Completed, completion: 100, machines: 2, updated: 2, paused: true}
    - {name: worker, updated: 3}
    - {name: infra, absent: true}
    - {name: master, absent: true}
  nodes:
    - {name: worker-1, pool: worker, version: 4.16.0, phase: Updated, assessment: Completed, state: Done}
    - {name: master-0, pool: worker}
    - {name: worker-2}
""")
    assert [(name, ok) for name, ok, _ in checks] == [
        ("pool worker assessment=Completed completion=100 machines=2 updated=2 paused=True", True),
        ("pool worker updated=3", False),
        ("pool infra absent=True", True),
        ("pool master absent=True", False),
        ("node worker-1 pool=worker version=4.16.0 phase=Updated assessment=Completed state=Done", True),
        ("node master-0 pool=worker", False),
        ("node worker-2 ", False),
    ]
    assert [detail for _, ok, detail in checks if not ok] == [
        "updated is 2", "the pool is there", "pool is 'master'", "no such Node"]


@pytest.mark.parametrize(("expect", "message"), [
    ("  pools: [{name: worker, finished: true}]", "expect.pools: unknown key 'finished'"),
    ("  nodes: [{name: worker-0, ready: true}]", "expect.nodes: unknown key 'ready'"),
    ("  nodes: {name: worker-0}", "expect.nodes: expected a list"),
])
def test_a_malformed_expectation_names_the_file_and_key(tmp_path: Path, expect: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        _checks(tmp_path, expect + "\n")
