"""The task graph, checked against the CVO's own examples (pkg/payload/task_graph_test.go)."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.payload.graph import (
    GraphCycleError,
    Mode,
    Task,
    TaskNode,
    _Builder,
    build_graph,
    build_nodes,
    by_number_and_component,
    check_acyclic,
    flatten_by_number_and_component,
    make_tasks,
    max_workers,
    node_steps,
    parse_filename,
    predecessors,
    shift_order,
    steps,
    to_digraph,
    wait_for,
)
from cvo.payload.manifest import Manifest


def manifest(name: str, kind: str = "Pod", api: str = "v1", namespace: str = "", annotations: dict | None = None,
             raw: bytes = b"{}") -> Manifest:
    return Manifest(name, f"release-manifests/{name}", 1, api, kind, name, namespace, annotations or {}, raw)


def pod(name: str) -> Task:
    parsed = parse_filename(name)
    return Task(0, 0, manifest(name), parsed[0] if parsed else None, parsed[1] if parsed else None)


def job(name: str) -> Task:
    parsed = parse_filename(name)
    return Task(0, 0, manifest(name, "Job", "batch/v1"), parsed[0] if parsed else None,
                parsed[1] if parsed else None)


def names(nodes: list[TaskNode]) -> list[list[str]]:
    return [[t.manifest.file for t in n.tasks] for n in nodes]


def shape(nodes: list[TaskNode]) -> list[tuple[list[str], list[int], list[int]]]:
    return [([t.manifest.file for t in n.tasks], n.ins, n.outs) for n in nodes]


# --- file names -----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "expected"), [
    ("0000_50_cluster-ingress-operator_00-namespace.yaml", ("50", "cluster-ingress-operator")),
    ("0000_03_config-operator_01_proxy.crd.yaml", ("03", "config-operator")),
    ("0000_10_a_file.yaml", ("10", "a")),
    ("0000_01_x-y-z_file1", ("01", "x-y-z")),
    ("0000_05_a_b_c.yaml", ("05", "a")),
    ("0001_00_cluster-version-operator_03_service.yaml", None),  # CVO PR #1027
    ("0000_90_openshift-cluster-image-policy.yaml", None),  # no "_" after the component
    ("0000_5_x--y_file.yaml", None),  # double dash
    ("0000_٣_x_file.yaml", None),  # \d is ASCII only, as in Go
    ("00_namespace.yaml", None),
])
def test_parse_filename(name: str, expected: tuple[str, str] | None) -> None:
    assert parse_filename(name) == expected


def test_run_levels_are_strings_not_numbers() -> None:
    tasks = [pod("0000_05_a_0"), pod("0000_5_b_0")]
    # "05" and "5" are different levels: no parallel step, one merged serial node.
    assert names(by_number_and_component(tasks)[0]) == [["0000_05_a_0", "0000_5_b_0"]]


# --- Split (Test_TaskGraph_Split) -------------------------------------------------------------


def split(tasks: list[Task]) -> list[tuple[list[str], list[int], list[int]]]:
    b = _Builder(tasks)
    b.split(lambda t: t.manifest.is_job)
    return shape(b.nodes)


def test_split_cases() -> None:
    assert split([pod("p")]) == [(["p"], [], [])]
    assert split([job("j"), pod("p")]) == [(["j"], [], [1]), (["p"], [0], [])]
    assert split([pod("p"), job("j")]) == [(["j"], [1], []), (["p"], [], [0])]
    assert split([pod("p1"), pod("p2"), job("j"), pod("p3")]) == [
        (["j"], [1], [2]), (["p1", "p2"], [], [0]), (["p3"], [0], [])]
    assert split([pod("a"), pod("b"), job("j1"), pod("c"), job("j2"), pod("d")]) == [
        (["j1"], [1], [3]), (["a", "b"], [], [0]), (["j2"], [3], [4]), (["c"], [0], [2]), (["d"], [2], [])]
    assert split([job("j1"), pod("a"), pod("b"), job("j2")]) == [
        (["j1"], [], [2]), (["j2"], [2], []), (["a", "b"], [0], [1])]


# --- ByNumberAndComponent ---------------------------------------------------------------------


def test_by_number_and_component_cases() -> None:
    assert by_number_and_component([]) == []
    assert by_number_and_component([pod("a")]) == []
    assert names(by_number_and_component([pod("a"), pod("b"), pod("c")])[0]) == [["a", "b", "c"]]
    assert by_number_and_component([pod("0000_01_x-y-z_file1")]) == []
    assert names(by_number_and_component([pod("0000_01_x-y-z_file1"), pod("0000_01_x-y-z_file2")])[0]) == [
        ["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"]]
    assert names(by_number_and_component([pod("a"), pod("0000_01_x-y-z_file1"), pod("c")])[0]) == [
        ["a", "0000_01_x-y-z_file1", "c"]]
    assert names(by_number_and_component([pod("0000_01_a-b-c_file1"), pod("0000_01_x-y-z_file2")])[0]) == [
        ["0000_01_a-b-c_file1"], ["0000_01_x-y-z_file2"]]
    got = by_number_and_component([
        pod("0000_01_a-b-c_file1"), pod("0000_01_x-y-z_file1"), pod("0000_01_x-y-z_file2"),
        pod("a"), pod("0000_01_x-y-z_file2"), pod("0000_01_x-y-z_file3"),
    ])
    assert [names(step) for step in got] == [
        [["0000_01_a-b-c_file1"], ["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"]],
        [["a", "0000_01_x-y-z_file2", "0000_01_x-y-z_file3"]],
    ]


# --- FlattenByNumberAndComponent --------------------------------------------------------------


def test_flatten_by_number_and_component_cases() -> None:
    assert flatten_by_number_and_component([]) == []
    assert flatten_by_number_and_component([pod("a")]) == []
    assert names(flatten_by_number_and_component([pod("a"), pod("b"), pod("c")])[0]) == [["a"], ["b"], ["c"]]
    assert names(flatten_by_number_and_component([pod("0000_01_x-y-z_file1"), pod("0000_01_x-y-z_file2")])[0]) == [
        ["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"]]
    assert names(flatten_by_number_and_component([pod("a"), pod("0000_01_x-y-z_file1"), pod("c")])[0]) == [
        ["a"], ["0000_01_x-y-z_file1"], ["c"]]
    got = flatten_by_number_and_component([
        pod("0000_01_a-b-c_file1"), pod("0000_01_x-y-z_file1"), pod("0000_01_x-y-z_file2"),
        pod("a"), pod("0000_01_x-y-z_file2"), pod("0000_01_x-y-z_file3"),
    ])
    assert names(got[0]) == [["0000_01_a-b-c_file1"], ["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"], ["a"],
                             ["0000_01_x-y-z_file2", "0000_01_x-y-z_file3"]]
    got = flatten_by_number_and_component([
        pod("0000_01_a-b-c_file1"), pod("0000_01_x-y-z_file1"), pod("0000_01_x-y-z_file2"),
        pod("0000_02_x-y-z_file2"), pod("0000_02_x-y-z_file3"),
    ])
    assert names(got[0]) == [["0000_01_a-b-c_file1"], ["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"],
                             ["0000_02_x-y-z_file2", "0000_02_x-y-z_file3"]]


# --- ShiftOrder -------------------------------------------------------------------------------


@pytest.mark.parametrize(("step", "stride", "before", "after"), [
    (0, 8, ["1", "2"], ["1", "2"]),
    (1, 8, ["1", "2"], ["2", "1"]),
    (2, 8, ["1", "2"], ["1", "2"]),
    (1, 2, ["1", "2", "3"], ["2", "3", "1"]),
    (2, 3, ["1", "2", "3"], ["3", "1", "2"]),
])
def test_shift_order(step: int, stride: int, before: list[str], after: list[str]) -> None:
    def fixed(_tasks: list[Task]) -> list[list[TaskNode]]:
        return [[TaskNode([pod(f"0000_0{n}_x-y-z_file1")]) for n in before]]

    got = shift_order(fixed, step, stride)([])
    assert [n.tasks[0].manifest.file for n in got[0]] == [f"0000_0{n}_x-y-z_file1" for n in after]


# --- Split + Parallelize (Test_TaskGraph_example) ---------------------------------------------


def example(tasks: list[Task]) -> list[tuple[list[str], list[int], list[int]]]:
    b = _Builder(tasks)
    b.split(lambda t: t.manifest.is_job)
    b.parallelize(by_number_and_component)
    return shape(b.nodes)


def test_task_graph_examples() -> None:
    assert example([pod("a"), job("0000_50_a_0")]) == [(["0000_50_a_0"], [1], []), (["a"], [], [0])]
    assert example([pod("a"), job("0000_50_a_0"), pod("0000_50_a_1"), pod("0000_50_a_2")]) == [
        (["0000_50_a_0"], [1], [2]), (["a"], [], [0]), (["0000_50_a_1", "0000_50_a_2"], [0], [])]
    assert example([job("a"), pod("0000_50_a_0"), pod("0000_50_b_0"), pod("0000_50_b_1")]) == [
        (["a"], [], [1]), ([], [0], [2, 3]), (["0000_50_a_0"], [1], []), (["0000_50_b_0", "0000_50_b_1"], [1], [])]
    assert example([job("a"), pod("0000_50_a_0"), pod("0000_50_b_0"), pod("0000_50_b_1"), pod("0000_50_c_0"),
                    job("b")]) == [
        (["a"], [], [2]),
        (["b"], [6], []),
        ([], [0], [3, 4, 5]),
        (["0000_50_a_0"], [2], [6]),
        (["0000_50_b_0", "0000_50_b_1"], [2], [6]),
        (["0000_50_c_0"], [2], [6]),
        ([], [3, 4, 5], [1]),
    ]
    assert example([pod("0000_07_a_0"), pod("0000_08_a_0"), pod("0000_09_a_0"), pod("0000_09_a_1"),
                    pod("0000_09_b_0"), pod("0000_09_b_1"), pod("0000_10_a_0"), pod("0000_10_a_1"),
                    pod("0000_11_a_0"), pod("0000_11_a_1")]) == [
        ([], [], [1]),
        (["0000_07_a_0", "0000_08_a_0"], [0], [2, 3]),
        (["0000_09_a_0", "0000_09_a_1"], [1], [4]),
        (["0000_09_b_0", "0000_09_b_1"], [1], [4]),
        (["0000_10_a_0", "0000_10_a_1", "0000_11_a_0", "0000_11_a_1"], [2, 3], []),
    ]


def test_bulk_add() -> None:
    b = _Builder([pod("a"), pod("b")])
    assert b._bulk_add([TaskNode([pod("c")]), TaskNode([pod("d")])], [0]) == [1, 2]
    assert shape(b.nodes) == [(["a", "b"], [], [1, 2]), (["c"], [0], []), (["d"], [0], [])]


def test_spacer_between_two_parallel_steps() -> None:
    # Two consecutive multi-component levels: M x N edges are replaced by one empty spacer node.
    got = example([pod("0000_10_a_0"), pod("0000_10_b_0"), pod("0000_20_c_0"), pod("0000_20_d_0")])
    assert got == [
        ([], [], [1, 2]),
        (["0000_10_a_0"], [0], [3]),
        (["0000_10_b_0"], [0], [3]),
        ([], [1, 2], [4, 5]),
        (["0000_20_c_0"], [3], []),
        (["0000_20_d_0"], [3], []),
    ]


# --- modes, networkx graph, cycles, waits -----------------------------------------------------


def corpus_like() -> list[Manifest]:
    files = ["0000_03_a_crd.yaml", "0000_10_a_deploy.yaml", "0000_10_b_deploy.yaml", "0000_20_c_x.yaml",
             "0000_30_d_job.yaml", "0000_40_e_x.yaml", "0000_40_f_x.yaml"]
    out = []
    for f in files:
        kind, api = ("Job", "batch/v1") if "job" in f else ("ConfigMap", "v1")
        out.append(manifest(f, kind, api))
    return out


def test_modes_build_different_graphs() -> None:
    ms = corpus_like()
    update = build_graph(make_tasks(ms, Mode.UPDATE), Mode.UPDATE)
    install = build_graph(make_tasks(ms, Mode.INSTALL), Mode.INSTALL)
    assert isinstance(update, nx.DiGraph)
    # update: a, then {a10 | b10}, then c, then the Job, then {e | f}
    assert [[[t.manifest.file for t in update.nodes[n]["tasks"]] for n in step] for step in steps(update)] == [
        [["0000_03_a_crd.yaml"]],
        [["0000_10_a_deploy.yaml"], ["0000_10_b_deploy.yaml"]],
        [["0000_20_c_x.yaml"]],
        [["0000_30_d_job.yaml"]],
        [["0000_40_e_x.yaml"], ["0000_40_f_x.yaml"]],
    ]
    # install: run levels flattened, but the Job is still a barrier
    assert [[[t.manifest.file for t in install.nodes[n]["tasks"]] for n in step] for step in steps(install)] == [
        [["0000_03_a_crd.yaml"], ["0000_10_a_deploy.yaml"], ["0000_10_b_deploy.yaml"], ["0000_20_c_x.yaml"]],
        [["0000_30_d_job.yaml"]],
        [["0000_40_e_x.yaml"], ["0000_40_f_x.yaml"]],
    ]
    assert max_workers(Mode.UPDATE, update) == 16
    assert max_workers(Mode.INSTALL, install) == install.number_of_nodes()


def test_reconcile_is_permuted_reproducibly_and_rotated_by_attempt() -> None:
    ms = [manifest(f"0000_{n:02d}_c{n}_x.yaml") for n in range(12)]

    def order(attempt: int) -> list[str]:
        g = build_graph(make_tasks(ms, Mode.RECONCILE), Mode.RECONCILE, attempt)
        return [g.nodes[n]["tasks"][0].manifest.file for n in sorted(g.nodes) if g.nodes[n]["tasks"]]

    assert order(0) == order(0)  # reproducible
    assert sorted(order(0)) == sorted(f"0000_{n:02d}_c{n}_x.yaml" for n in range(12))
    assert order(0) != [f"0000_{n:02d}_c{n}_x.yaml" for n in range(12)]  # permuted
    # attempts 0..7 share a permutation (epoch 0) and rotate it; attempt 8 starts a new epoch
    base = order(0)
    shift = int(1 * 12 / 8) % 12
    assert order(1) == base[shift:] + base[:shift]
    assert order(8) != order(0)
    g = build_graph(make_tasks(ms, Mode.RECONCILE), Mode.RECONCILE)
    assert max_workers(Mode.RECONCILE, g) == 2


def test_cycle_is_reported_with_its_nodes() -> None:
    g = nx.DiGraph()
    g.add_node(0, tasks=[pod("0000_10_a_x")])
    g.add_node(1, tasks=[pod("0000_20_b_x")])
    g.add_edges_from([(0, 1), (1, 0)])
    with pytest.raises(GraphCycleError, match=r"cycle: node 0 \(pod \"0000_10_a_x\".*-> node 1 .* -> node 0"):
        check_acyclic(g)


def test_every_payload_graph_is_acyclic_and_keeps_every_task_once() -> None:
    ms = corpus_like() * 3
    for mode in Mode:
        tasks = make_tasks(ms, mode)
        g = build_graph(tasks, mode)
        assert nx.is_directed_acyclic_graph(g)
        placed = [t for n in g.nodes for t in g.nodes[n]["tasks"]]
        assert sorted(t.index for t in placed) == list(range(1, len(ms) + 1))


def test_task_string_and_flags() -> None:
    ms = [
        manifest("0000_50_x_ns.yaml", "Namespace"),
        Manifest("0000_50_x_cm.yaml", "p", 1, "v1", "ConfigMap", "cfg", "ns1",
                 {"release.openshift.io/create-only": "TRUE"}, b"{}"),
        Manifest("0000_50_x_old.yaml", "p", 1, "v1", "Secret", "old", "ns1",
                 {"release.openshift.io/delete": "true"}, b"{}"),
        Manifest("0000_50_x_bad.yaml", "p", 1, "v1", "Secret", "bad", "ns1",
                 {"release.openshift.io/delete": "yes"}, b"{}"),
    ]
    tasks = make_tasks(ms, Mode.UPDATE)
    assert str(tasks[0]) == 'namespace "0000_50_x_ns.yaml" (1 of 4)'
    assert str(tasks[1]) == 'configmap "ns1/cfg" (2 of 4)'
    assert tasks[1].create_only and not tasks[1].delete
    assert tasks[2].delete and tasks[2].invalid_delete is None
    assert tasks[3].invalid_delete == 'invalid delete annotation "release.openshift.io/delete" value: "yes"'


def test_waits_depend_on_kind_and_mode() -> None:
    co = Manifest("0000_50_x_co.yaml", "p", 1, "config.openshift.io/v1", "ClusterOperator", "x", "", {},
                  b'{"status":{"versions":[{"name":"operator","version":"4.16.0"},{"name":"x","version":"1.2"}]}}')
    crd = manifest("0000_50_x_crd.yaml", "CustomResourceDefinition", "apiextensions.k8s.io/v1")
    update = wait_for(co, Mode.UPDATE)
    assert update is not None
    assert update.versions == (("operator", "4.16.0"), ("x", "1.2"))
    assert update.conditions == (("Available", "True"), ("Degraded", "False"))
    assert update.not_true == ("Upgrading",)
    install = wait_for(co, Mode.INSTALL)
    assert install is not None and install.versions == () and install.conditions == (("Available", "True"),)
    assert install.report_only == (("Degraded", "False"),)
    crd_wait = wait_for(crd, Mode.UPDATE)
    assert crd_wait is not None and crd_wait.conditions == (("Established", "True"),)
    assert wait_for(manifest("0000_50_x_cm.yaml", "ConfigMap"), Mode.UPDATE) is None


# --- the plan's graph without networkx -----------------------------------------------------------

_FILES = st.lists(
    st.tuples(st.sampled_from(["0000_03", "0000_10", "0000_20", "0000_30", "zz"]),
              st.sampled_from(["a", "b", "c"]), st.booleans()),
    max_size=30,
)


@given(files=_FILES, attempt=st.integers(min_value=0, max_value=20))
def test_node_list_steps_and_edges_are_networkx_s(files: list[tuple[str, str, bool]], attempt: int) -> None:
    """The plan reads the node list directly; it must say what the networkx graph says, node for node."""
    ms = [manifest(f"{level}_{component}_{i}.yaml", *(("Job", "batch/v1") if is_job else ("ConfigMap", "v1")))
          for i, (level, component, is_job) in enumerate(files)]
    for mode in Mode:
        nodes = build_nodes(make_tasks(ms, mode), mode, attempt)
        graph = to_digraph(nodes)
        assert node_steps(nodes) == steps(graph)
        assert predecessors(nodes) == [sorted(graph.predecessors(n)) for n in sorted(graph.nodes)]
        assert max_workers(mode, len(nodes)) == max_workers(mode, graph)


def test_a_cycle_in_the_node_list_is_named_as_networkx_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = pod("0000_10_a_x"), pod("0000_20_b_x")

    def cyclic(self: _Builder, _break: object) -> None:
        self.nodes = [TaskNode([a], [1], [1]), TaskNode([b], [0], [0])]

    monkeypatch.setattr(_Builder, "parallelize", cyclic)
    assert node_steps([TaskNode([a], [1], [1]), TaskNode([b], [0], [0])]) is None
    with pytest.raises(GraphCycleError, match=r"cycle: node 0 \(pod \"0000_10_a_x\".*-> node 1 .* -> node 0"):
        build_nodes([a, b], Mode.UPDATE)
