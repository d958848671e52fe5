"""``make bench``'s "acting" section: the corpus installed on a control plane that acts (kube-controller-manager,
kube-scheduler, kwok: ``ControlPlane(acting=True)``) beside the API-server-only one, as whole processes.

Each run gets a fresh control plane; ``cvo sim-operators`` reports every ClusterOperator (``delay: 0s``), and on
the acting plane only once the operator's Deployments have really rolled out on kwok's Nodes (``--rollouts auto``
finds the controllers).  Per run: cvo's wall time, the API server's requests, and the CPU every process used
during the install (etcd, kube-apiserver, the acting components, cvo, sim-operators).  That CPU over the
machine's cores is the *CPU bound*: the least wall time the install could take were every core busy all along;
the goal (issue 26) is cvo's wall time within 1.3x of it on the acting plane.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.kube.prepare import Prepared, prepare
from bench.kube.processes import cvo_argv, process_cpu_ms, timed
from bench.kube.server import (
    bootstrap,
    builtin_kinds,
    control_plane,
    request_counts,
    requests_between,
    start_sim_operators,
)
from bench.kube.settings import BEHAVIOURS, TIMEOUT

GOAL = 1.3  # cvo's wall time on the acting plane within this many times the CPU bound


@dataclass
class Run:
    acting: bool
    wall: float
    requests: int
    cpu: float  # every process's CPU seconds during the install
    ok: bool
    note: str = ""

    @property
    def bound(self) -> float:
        return self.cpu / (os.cpu_count() or 1)


def _plane_cpu_ms(cp: Any) -> int:
    procs = [getattr(cp, "_etcd", None), getattr(cp, "_apiserver", None), *getattr(cp, "_components", {}).values()]
    return sum(process_cpu_ms(p) for p in procs)


def one_run(prep: Prepared, env: dict[str, str], behaviours: Path, acting: bool) -> Run:
    from tests.e2e.controlplane import ControlPlane

    cp = ControlPlane(acting=acting)
    cp.start()
    sim = None
    try:
        bootstrap(cp, env)
        sim = start_sim_operators(cp, env, [prep.directory], behaviours)
        before, plane0, sim0 = request_counts(cp), _plane_cpu_ms(cp), process_cpu_ms(sim.proc)
        run = timed(cvo_argv("install", str(prep.directory), "--kubeconfig", cp.kubeconfig_path, "-o", "json",
                             "--timeout", TIMEOUT), env)
        requests = requests_between(before, request_counts(cp))["total"]
        cpu = (_plane_cpu_ms(cp) - plane0 + process_cpu_ms(sim.proc) - sim0) / 1000 + run.cpu
    finally:
        if sim is not None:
            sim.stop()
        cp.stop()
    note = "" if run.code == 0 else f"exit {run.code}: {' '.join(run.stderr.strip().splitlines()[-1:])[:200]}"
    return Run(acting, run.wall or float("nan"), requests, cpu, run.code == 0, note)


def acting_section(repeats: int) -> list[str]:
    from tests.e2e.controlplane import ACTING_BINARIES, ensure_binaries

    ensure_binaries(ACTING_BINARIES)
    work = Path(tempfile.mkdtemp(prefix="cvo-bench-acting-"))
    env = dict(os.environ, CVO_CACHE_DIR=str(work / "cache"))
    env.pop("KUBECONFIG", None)
    try:
        with control_plane() as cp:
            prep = prepare(work / "release", builtin_kinds(cp))
        subprocess.run(cvo_argv("plan", "-o", "json", str(prep.directory)), env=env, check=True, timeout=300,
                       stdout=subprocess.DEVNULL)
        behaviours = work / "operators.yaml"
        behaviours.write_text(BEHAVIOURS)
        runs: list[Run] = []
        for i in range(repeats):
            for acting in ((False, True) if i % 2 == 0 else (True, False)):
                runs.append(one_run(prep, env, behaviours, acting))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return render(runs, prep, repeats)


def render(runs: list[Run], prep: Prepared, repeats: int) -> list[str]:
    def med(acting: bool, key: str) -> float:
        values = [getattr(r, key) for r in runs if r.acting is acting and r.ok]
        return statistics.median(values) if values else float("nan")

    cores = os.cpu_count() or 1
    ratio = med(True, "wall") / med(True, "bound")
    lines = [
        "## The corpus on a control plane that acts, beside the API-server-only one",
        "",
        f"`cvo install` of the corpus ({prep.documents} documents the API server serves) with `cvo sim-operators` "
        f"(`delay: 0s`), each run on a fresh control plane, medians of {repeats} runs each, alternating. *API "
        "only*: etcd and kube-apiserver; nothing acts, every ClusterOperator is reported at once. *acting*: plus "
        "kube-controller-manager, kube-scheduler and kwok (3 fake Nodes); every Deployment really rolls out, and "
        "sim-operators reports an operator only once its Deployments have. *CPU*: what every process used during "
        f"the install (the control plane's, cvo's, sim-operators'); *CPU bound*: that over the {cores} cores, the "
        "least wall time the install could take.",
        "",
        "| control plane | cvo wall | requests | CPU (all processes) | CPU bound | wall / bound |",
        "|---|---|---|---|---|---|",
    ]
    for acting, label in ((False, "API only"), (True, "acting")):
        lines.append(f"| {label} | {med(acting, 'wall'):.1f} s | {med(acting, 'requests'):.0f} | "
                     f"{med(acting, 'cpu'):.1f} s | {med(acting, 'bound'):.1f} s | "
                     f"{med(acting, 'wall') / med(acting, 'bound'):.2f}× |")
    failed = [r for r in runs if not r.ok]
    lines += ["", f"On the acting plane cvo's wall time is **{ratio:.2f}×** the CPU bound: the goal is ≤ {GOAL}× "
                  f"({'met' if ratio <= GOAL else 'not met'}); the acting plane costs "
                  f"{med(True, 'wall') / med(False, 'wall'):.2f}× the API-only wall time."]
    if failed:
        lines += ["", "Runs that failed: " + "; ".join(f"{'acting' if r.acting else 'API only'}: {r.note}"
                                                       for r in failed)]
    return lines
