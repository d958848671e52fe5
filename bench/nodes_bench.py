"""``make bench``'s "nodes" section: issue 25's speed goals for pools and nodes, as whole processes.

*Replay*: ``cvo replay`` of a patch update of a 500-node cluster in three pools (master 3, worker 397 and infra
100, 10 % of a pool at a time, drains of 1 m and reboots of 2 m on the simulated clock) until every node is
updated; goal ≤ 5 s wall.  *Status*: ``cvo upgrade status --from-file`` on the saved objects of that cluster
mid-update (``cvo get -o yaml`` once the ClusterVersion completed and the worker pools still roll) beside the
same command on a 5-node cluster (master 1, worker 4) saved the same way, its workers still rolling too,
alternating; goal ≤ 1.5×.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.measure import cvo  # noqa: E402

PAYLOADS = REPO / "payloads"
REPLAY_GOAL = 5.0
STATUS_GOAL = 1.5
BIG = {"master": 3, "worker": 397, "infra": 100}
# 5 nodes whose workers still roll when the ClusterVersion completes, as the 500-node cluster's do (with 3 masters
# and 2 workers the workers were done before the masters, and the command printed one line: no comparison)
SMALL = {"master": 1, "worker": 4}


def behaviours(pools: dict[str, int]) -> str:
    lines = ["default: {delay: 10s}", "machine-config:", "  nodes: {drain: 1m, reboot: 2m}", "  pools:"]
    lines += [f"    {name}: {{nodes: {n}, max-unavailable: \"10%\"}}" for name, n in pools.items()]
    return "\n".join(lines) + "\n"


def scenario(pools: dict[str, int]) -> str:
    ops = "\n".join("  " + line for line in behaviours(pools).splitlines())
    return (f"name: a {sum(pools.values())}-node patch update\ncluster:\n  installed: {PAYLOADS / 'demo-4.16.0'}\n"
            f"operators:\n{ops}\noptions: {{timeout: 2h}}\nactions:\n  - upgrade: {PAYLOADS / 'demo-4.16.3'}\n"
            "  - at: 3h\n    wait: true\nexpect:\n  result: completed\n  objects:\n"
            + "".join(f"    - {{apiVersion: machineconfiguration.openshift.io/v1, kind: MachineConfigPool, name: {name}, "
                      f"fields: {{status/machineCount: {n}, status/updatedMachineCount: {n}}}}}\n"
                      for name, n in pools.items()))


def timed(argv: list[str], env: dict[str, str], stdout: int | None = subprocess.DEVNULL) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE if stdout is None else stdout,
                          stderr=subprocess.PIPE, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark command exited {proc.returncode}: {' '.join(argv)}\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout or ""


def saved(pools: dict[str, int], work: Path, env: dict[str, str]) -> Path:
    """The cluster's objects mid-update: the ClusterVersion at 4.16.3, the worker pools still rolling."""
    state, ops, out = work / f"{sum(pools.values())}.db", work / f"{sum(pools.values())}.yaml", work / "saved"
    ops.write_text(behaviours(pools))
    out.mkdir(exist_ok=True)
    timed(cvo("install", str(PAYLOADS / "demo-4.16.0"), "--state", str(state), "--operators", str(ops)), env)
    timed(cvo("upgrade", "--to", str(PAYLOADS / "demo-4.16.3"), "--state", str(state), "--operators", str(ops)), env)
    _, text = timed(cvo("get", "-o", "yaml", "--state", str(state)), env, stdout=None)
    path = out / f"{sum(pools.values())}-nodes.yaml"
    path.write_text(text)
    return path


def nodes_section(repeats: int) -> list[str]:
    work = Path(tempfile.mkdtemp(prefix="cvo-bench-nodes-"))
    try:
        env = dict(os.environ, CVO_CACHE_DIR=str(work / "cache"))
        replay_file = work / "500-nodes.yaml"
        replay_file.write_text(scenario(BIG))
        timed(cvo("replay", "-q", str(replay_file)), env)  # fills the parse cache
        big, small = saved(BIG, work, env), saved(SMALL, work, env)
        for path in (big, small):  # the same phase: the control plane done, the worker pools rolling
            shown = timed(cvo("upgrade", "status", "--from-file", str(path)), env, stdout=None)[1]
            if "= Worker Upgrade =" not in shown or "Progressing" not in shown:
                raise SystemExit(f"benchmark: {path.name} is not saved mid-rollout:\n{shown[:2000]}")
        replays: list[float] = []
        on_big: list[float] = []
        on_small: list[float] = []
        for i in range(repeats):
            replays.append(timed(cvo("replay", "-q", str(replay_file)), env)[0])
            pair = [(big, on_big), (small, on_small)]
            for path, into in pair if i % 2 == 0 else reversed(pair):
                into.append(timed(cvo("upgrade", "status", "--from-file", str(path)), env)[0])
        nodes_shown = timed(cvo("upgrade", "status", "--from-file", str(big), "--details", "nodes"), env,
                            stdout=None)[1].count("\nworker-") + 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    replay, status_big, status_small = (statistics.median(v) for v in (replays, on_big, on_small))
    ratio = status_big / status_small
    return [
        "## Pools and nodes: a 500-node update replayed, and `cvo upgrade status` on 500 nodes",
        "",
        f"Whole processes, medians of {repeats} runs. *Replay*: `cvo replay` of a patch update (demo 4.16.0 → "
        f"4.16.3) of a 500-node cluster in three pools (master 3, worker 397, infra 100; 10 % of a pool at a time, "
        "drains of 1 m and reboots of 2 m on the simulated clock) until every node is updated. *Status*: "
        "`cvo upgrade status --from-file` on the cluster's saved objects once the ClusterVersion completed and the "
        "worker pools still roll, beside the same on a 5-node cluster (master 1, worker 4) saved the same way, its "
        "workers still rolling too (both print the control plane, the worker pools and their nodes, the health "
        "and, from the update's own record of its nodes, the forecast).",
        "",
        "| what | cvo | goal |",
        "|---|---|---|",
        f"| replay of the 500-node update | {replay:.2f} s | ≤ {REPLAY_GOAL:.0f} s "
        f"({'met' if replay <= REPLAY_GOAL else 'not met'}) |",
        f"| `upgrade status`, 500 nodes against 5 | {status_big:.3f} s against {status_small:.3f} s: {ratio:.2f}× | "
        f"≤ {STATUS_GOAL}× ({'met' if ratio <= STATUS_GOAL else 'not met'}) |",
        "",
        f"(`--details nodes` on the 500-node objects lists {nodes_shown} worker nodes.)",
    ]
