"""One measured run of each tool on a fresh control plane: ``cvo install`` with sim-operators, and
``kubectl apply --server-side`` repeated until its errors stop falling."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.kube.events import Breakdown, breakdown, events
from bench.kube.prepare import Prepared
from bench.kube.processes import Stamped, cvo_argv, process_cpu_ms, timed
from bench.kube.server import (
    bootstrap,
    control_plane,
    crd_times,
    request_counts,
    requests_between,
    start_sim_operators,
)
from bench.kube.settings import KUBECTL, PROCESS_TIMEOUT, TIMEOUT


@dataclass
class ToolRun:
    wall: float | None
    requests: Counter[str]
    errors: int  # documents not applied (kubectl) / task failures (cvo)
    ok: bool
    note: str = ""
    breakdown: Breakdown | None = None
    passes: list[tuple[float, int, int]] = field(default_factory=list)  # kubectl: (wall, requests, errors) per pass
    cpu: float = 0.0  # the tool's own CPU seconds
    helper_cpu: float = 0.0  # cvo: sim-operators' CPU seconds during the run
    crds: list[tuple[str, float, float]] = field(default_factory=list)  # cvo: CRDs it created: name, created, Established (s)


def cvo_run(prep: Prepared, env: dict[str, str], behaviours: Path) -> ToolRun:
    sim: Stamped | None = None
    with control_plane() as cp:
        try:
            bootstrap(cp, env)
            sim = start_sim_operators(cp, env, [prep.directory], behaviours)
            before, sim_cpu = request_counts(cp), process_cpu_ms(sim.proc)
            run = timed(cvo_argv("--log-format", "json", "install", str(prep.directory), "--kubeconfig",
                                 cp.kubeconfig_path, "-o", "json", "--timeout", TIMEOUT), env)
            requests = requests_between(before, request_counts(cp))
            sim_cpu = process_cpu_ms(sim.proc) - sim_cpu
            try:
                crds = crd_times(cp, run.started)
            except (OSError, ValueError, KeyError):  # only for the text: the run itself counts
                crds = []
        finally:
            if sim is not None:
                sim.stop()
    evs = events(run.stderr)
    report: dict[str, Any] = {}
    with contextlib.suppress(json.JSONDecodeError):
        report = json.loads(run.stdout)
    ok = run.code == 0 and bool(report.get("ok"))
    if ok:
        note = ""
    elif run.wall is None:
        note = f"killed after {PROCESS_TIMEOUT:.0f} s"
    else:
        note = f"exit {run.code}: {report.get('message') or ' '.join(run.stderr.strip().splitlines()[-1:])}"
    b = breakdown(evs, run.started, run.wall or PROCESS_TIMEOUT)
    return ToolRun(run.wall, requests, b.task_failures, ok, note, b, cpu=run.cpu, helper_cpu=sim_cpu / 1000,
                   crds=crds)


MAX_KUBECTL_PASSES = 4


def kubectl_version() -> str | None:
    if not os.access(KUBECTL, os.X_OK):
        return None
    try:
        out = subprocess.run([str(KUBECTL), "version", "--client", "-o", "json"], capture_output=True, timeout=60,
                             check=True).stdout
        return str(json.loads(out)["clientVersion"]["gitVersion"])
    except (subprocess.SubprocessError, OSError, ValueError, KeyError):
        return "unknown version"


def kubectl_run(prep: Prepared, env: dict[str, str], work: Path) -> ToolRun:
    """``kubectl apply --server-side`` over the files: the first pass is the measurement; further passes
    (same server) show what it takes kubectl to apply everything it can."""
    cache = Path(tempfile.mkdtemp(prefix="kubectl-cache-", dir=work))
    passes: list[tuple[float, int, int]] = []
    first: ToolRun | None = None
    try:
        with control_plane() as cp:
            bootstrap(cp, env)  # the same starting state as cvo's runs
            argv = [str(KUBECTL), "--kubeconfig", cp.kubeconfig_path, "--cache-dir", str(cache), "apply",
                    "--server-side", "--force-conflicts", "-f", str(prep.directory / "manifests"),
                    "-f", str(prep.directory / "release-manifests")]
            for _ in range(MAX_KUBECTL_PASSES):
                before = request_counts(cp)
                run = timed(argv, env)
                requests = requests_between(before, request_counts(cp))
                applied = sum(1 for line in run.stdout.splitlines() if line.endswith(" serverside-applied"))
                errors = prep.documents - applied
                if run.wall is None:
                    if first is None:
                        return ToolRun(None, requests, errors, False, f"killed after {PROCESS_TIMEOUT:.0f} s")
                    break
                passes.append((run.wall, requests["total"], errors))
                if first is None:
                    unmapped = run.stderr.count("resource mapping not found")
                    server = sum(1 for line in run.stderr.splitlines() if line.startswith("Error from server"))
                    note = (f"{unmapped} of a kind not served yet (its CRD is in the same apply), "
                            f"{server} rejected by the server")
                    first = ToolRun(run.wall, requests, errors, errors == 0, note, cpu=run.cpu)
                if errors == 0 or (len(passes) > 1 and errors >= passes[-2][2]):
                    break
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    assert first is not None
    first.passes = passes
    return first
