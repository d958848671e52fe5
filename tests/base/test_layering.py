"""The package layering: lower layers never import higher ones, and nothing imports in a cycle.

The layers, from the bottom (docs/architecture.md has the picture):

    payload                      pure: manifests, load, filters, graph (no cluster)
    cluster, objects             the Cluster interface and what wraps any backend; typed views of objects read
    cluster.embedded, cluster.kube, cluster.saved   the backends (none imports another)
    plan, gates, status          pure decisions over data
    operators                    simulated operators and the operator library
    runner                       the sync worker: applies, waits, reports
    controller                   the long-running, leader-elected loop over the runner (cvo run)
    diff                         what a sweep would change, before it runs (cvo diff; beside the controller)
    scenario                     replays of the runner on the embedded cluster
    report                       sweep reports: events in, timeline and critical path out
    cli                          argument parsing and printing

``cvo.log`` and ``cvo.clock`` are shared by every layer.  A module may import its own package and
any package below it; the cli may import anything.  Imports inside functions count too (they are
how the CLI keeps start-up fast, not a way around the layering).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2] / "cvo"
SHARED = {"cvo", "cvo.log", "cvo.clock", "cvo.__main__"}
# package -> rank; a module may import packages of a lower or equal rank (equal: only its own package,
# except where ALSO allows siblings).
RANK = {"cvo.payload": 0, "cvo.cluster": 1, "cvo.objects": 1, "cvo.images": 1, "cvo.verify": 1, "cvo.updates": 1, "cvo.monitoring": 1, "cvo.cluster.embedded": 2, "cvo.cluster.kube": 2,
        "cvo.cluster.saved": 2, "cvo.plan": 2,
        "cvo.gates": 2, "cvo.status": 3, "cvo.operators": 4, "cvo.runner": 5, "cvo.controller": 6, "cvo.diff": 6,
        "cvo.scenario": 7, "cvo.report": 8, "cvo.cli": 9}


def package_of(module: str) -> str:
    best = ""
    for pkg in RANK:
        if (module == pkg or module.startswith(pkg + ".")) and len(pkg) > len(best):
            best = pkg
    return best or module


def modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = path
    return out


def imports(path: Path, module: str, known: Iterable[str] = ()) -> set[str]:
    """The cvo modules ``module`` imports (``from pkg import sub`` counts as ``pkg.sub`` when it is a module)."""
    known = set(known)
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("cvo"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if not target.startswith("cvo"):
                continue
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            found.update(subs or [target])
    return found


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in modules() if m not in SHARED and package_of(m) not in RANK]
    assert unplaced == [], "modules outside every package: " + ", ".join(sorted(unplaced))


def test_top_level_holds_only_the_shared_modules() -> None:
    loose = sorted(p.name for p in ROOT.glob("*.py") if p.stem not in {"__init__", "__main__", "log", "clock"})
    assert loose == []


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_upward_import(module: str) -> None:
    if module in SHARED:
        return
    mine = package_of(module)
    for target in imports(modules()[module], module):
        if target in SHARED or target == "cvo":
            continue
        theirs = package_of(target)
        if theirs == mine or mine == "cvo.cli":
            continue
        assert theirs in RANK, f"{module} imports {target}, which is in no layer"
        assert RANK[theirs] < RANK[mine], (
            f"{module} ({mine}) imports {target} ({theirs}): a layer may only import layers below it")


@pytest.mark.parametrize("layer", ["cvo.payload", "cvo.plan"])
def test_the_pure_core_never_imports_a_cluster_or_the_runner(layer: str) -> None:
    """Load, filter, graph and plan are pure functions over data: testable without any cluster."""
    for module, path in modules().items():
        if package_of(module) != layer:
            continue
        bad = sorted(t for t in imports(path, module) if t.startswith(("cvo.cluster", "cvo.runner")))
        assert bad == [], f"{module} imports {', '.join(bad)}"


@pytest.mark.parametrize("package", sorted(m for m, p in modules().items() if p.name == "__init__.py"))
def test_every_package_says_what_it_holds_and_may_import(package: str) -> None:
    doc = ast.get_docstring(ast.parse(modules()[package].read_text())) or ""
    assert len(doc.splitlines()) >= 2 and "TODO" not in doc, f"{package}: no docstring saying what it holds"
    if package != "cvo":
        assert "May import:" in doc, f"{package}: its docstring does not say what it may import"


def test_no_import_cycles() -> None:
    graph = nx.DiGraph()
    all_modules = modules()
    for module, path in all_modules.items():
        graph.add_node(module)
        for target in imports(path, module, all_modules):
            while target and target not in all_modules:
                target = target.rpartition(".")[0]
            if target and target != module:
                graph.add_edge(module, target)
    cycles = list(nx.simple_cycles(graph))
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def test_only_the_cli_and_the_scenario_player_pick_a_backend() -> None:
    """Nothing above the interface knows which backend it talks to."""
    allowed = {"cvo.cli", "cvo.scenario", "cvo.cluster.embedded", "cvo.cluster.kube"}
    for module, path in modules().items():
        if package_of(module) in allowed:
            continue
        bad = sorted(t for t in imports(path, module) if t.startswith(("cvo.cluster.embedded", "cvo.cluster.kube")))
        assert bad == [], f"{module} imports a backend: {', '.join(bad)}"


def test_the_backends_never_import_each_other() -> None:
    for module, path in modules().items():
        mine = package_of(module)
        if mine not in ("cvo.cluster.embedded", "cvo.cluster.kube"):
            continue
        other = "cvo.cluster.kube" if mine == "cvo.cluster.embedded" else "cvo.cluster.embedded"
        assert not any(t.startswith(other) for t in imports(path, module)), f"{module} imports {other}"
