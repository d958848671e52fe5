"""``make bench`` section "failover": the leader of two ``cvo run`` replicas killed mid-install (SIGKILL), and
how long until the other one leads and resumes the sweep, on the real test control plane.

Each run gets a fresh control plane (``tests/e2e/controlplane.py``), ``cvo bootstrap`` and ``cvo
sim-operators`` for the demo release (every operator reports 3 s after its Deployment changes), then
replica ``a`` and, once ``a`` leads, replica ``b``, both with shortened lease timings
(:data:`LEASE`).  When the ClusterVersion shows the install under way (a ``Partial`` history entry)
``a`` is killed with SIGKILL: it releases nothing.  Measured from the kill, by the wall time the
bench read each of ``b``'s log lines: ``lease.acquired`` (it leads) and ``controller.sweep`` (its
sweep has started: the install resumed); then whether ``b`` completed the install with one history
entry.  client-go's rules bound the takeover by a lease duration and two jittered retry periods
after the last renewal ``b`` saw.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.kube.processes import Stamped, cvo_argv
from bench.kube.server import api_get, bootstrap, control_plane, start_sim_operators
from bench.kube.settings import REPO

DEMO = REPO / "payloads" / "demo-4.16.0"
LEASE = {"--lease-duration": 6.0, "--renew-deadline": 4.0, "--retry-period": 1.0}  # the CVO: 137 s / 107 s / 26 s
JITTER = 1.2  # client-go's JitterFactor
BOUND = LEASE["--lease-duration"] + 2 * JITTER * LEASE["--retry-period"]
BEHAVIOURS = "default:\n  delay: 3s\n"
WAIT = 120.0  # seconds for each step of a run


def _progress(message: str) -> None:
    print(f"bench: failover: {message}", file=sys.stderr, flush=True)


def _replica(cp: Any, env: dict[str, str], name: str) -> Stamped:
    flags = [arg for flag, seconds in LEASE.items() for arg in (flag, f"{seconds:g}s")]
    return Stamped(cvo_argv("--log-format", "json", "run", "--identity", name, "--release", str(DEMO),
                            "--interval", "30s", "--listen", "none", *flags, "--kubeconfig", cp.kubeconfig_path), env)


def _event_time(replica: Stamped, event: str, after: float) -> float | None:
    """When the bench read ``replica``'s first log line of ``event`` after ``after`` (wall time)."""
    for stamp, _, line in list(replica.lines):
        if stamp >= after and line.startswith("{") and json.loads(line).get("event") == event:
            return stamp
    return None


def _cv(cp: Any) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = api_get(cp, "/apis/config.openshift.io/v1/clusterversions/version")
        return doc
    except OSError:
        return {}


def _history(cp: Any) -> list[tuple[str, str]]:
    return [(h.get("version", ""), h.get("state", "")) for h in (_cv(cp).get("status") or {}).get("history") or []]


def _until(probe: Any, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise RuntimeError(f"failover bench: no {what} within {timeout:g}s")
        time.sleep(0.05)


def _holder(cp: Any) -> str:
    try:
        lease = api_get(cp, "/apis/coordination.k8s.io/v1/namespaces/openshift-cluster-version/leases/version")
    except OSError:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def failover_once(env: dict[str, str], work: Path) -> dict[str, Any]:
    behaviours = work / "operators.yaml"
    behaviours.write_text(BEHAVIOURS)
    with control_plane() as cp:
        bootstrap(cp, env)
        sim = start_sim_operators(cp, env, [DEMO], behaviours)
        a = b = None
        try:
            a = _replica(cp, env, "a")
            _until(lambda: _holder(cp) == "a", "leader a")
            b = _replica(cp, env, "b")
            _until(lambda: b.wait_for(r'"event": "lease.held"', 0.1), "replica b seeing a's lease")
            _until(lambda: _history(cp)[:1] == [("4.16.0", "Partial")], "install under way")
            a.proc.send_signal(signal.SIGKILL)
            killed = time.time()
            a.proc.wait(timeout=10)
            _until(lambda: _event_time(b, "controller.sweep", killed) is not None, "sweep resumed by b")
            lease, sweep = _event_time(b, "lease.acquired", killed), _event_time(b, "controller.sweep", killed)
            assert lease is not None and sweep is not None
            _until(lambda: _history(cp)[:1] == [("4.16.0", "Completed")], "install completed by b", timeout=240)
            return {"lease": lease - killed, "sweep": sweep - killed, "completed": time.time() - killed,
                    "one_entry": _history(cp) == [("4.16.0", "Completed")]}
        finally:
            for replica in (a, b):
                if replica is not None:
                    replica.stop()
            sim.stop()


def failover_section(repeats: int) -> list[str]:
    runs = max(5, repeats)
    work = Path(tempfile.mkdtemp(prefix="cvo-bench-failover-"))
    env = dict(os.environ, CVO_CACHE_DIR=str(work / "cache"))
    env.pop("KUBECONFIG", None)
    results = []
    try:
        for i in range(runs):
            _progress(f"run {i + 1} of {runs}")
            results.append(failover_once(env, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def row(key: str, label: str) -> str:
        values = [r[key] for r in results]
        return f"| {label} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |"

    lease, retry = LEASE["--lease-duration"], LEASE["--retry-period"]
    within = sum(r["lease"] <= BOUND for r in results)
    return [
        "## Controller failover: the leader killed mid-install, the other replica resumes",
        "",
        f"Two `cvo run` replicas on the real test control plane, a fresh one per run, {runs} runs. Lease timings "
        f"shortened to lease duration {lease:g} s, renew deadline {LEASE['--renew-deadline']:g} s, retry period "
        f"{retry:g} s (`--lease-duration 6s --renew-deadline 4s --retry-period 1s`; the CVO's are 137 s / 107 s / "
        "26 s). The leader is killed with SIGKILL while the demo release installs (simulated operators report "
        "after 3 s); times are seconds from the kill to what the other replica logs.",
        "",
        "| from the SIGKILL to | median s | min s | max s |",
        "|---|---|---|---|",
        row("lease", "the other replica holds the lease (`lease.acquired`)"),
        row("sweep", "its sweep has started: the install resumed (`controller.sweep`)"),
        row("completed", "the install completed by it"),
        "",
        f"client-go's bound, a lease duration and two jittered retry periods ({lease:g} + 2 × {JITTER} × {retry:g} = "
        f"{BOUND:.1f} s): met in {within} of {runs} runs. The takeover is counted from the last renewal the "
        "follower *saw*, so it lands between a lease duration less one retry period and the bound. The install "
        f"ended with one history entry in {sum(r['one_entry'] for r in results)} of {runs} runs (resumed, not "
        "restarted). With the CVO's timings the same takeover takes up to 137 + 2 × 1.2 × 26 ≈ 199 s.",
        "",
    ]
