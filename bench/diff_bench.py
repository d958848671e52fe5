"""``make bench``'s diff section: ``cvo diff`` of the corpus beside ``cvo plan`` of the same release, as whole processes.

The corpus is installed once into an embedded cluster (SQLite store); the release diffed is the corpus with its
version strings changed (:func:`bench.scale.derived_release`), i.e. the upgrade every run of the benchmark would
take next.  Each round runs, one after the other: ``cvo plan NEXT -o json`` with the plan cache holding it
(*plan warm*, what a user's second plan costs), ``cvo plan`` with only the parse cache warm (a reconcile attempt
not planned before: *plan parse-warm*), ``cvo diff NEXT -o json`` against the cluster (*diff upgrade*) and
``cvo diff CORPUS -o json`` (the release the cluster runs: *diff reconcile*, nothing differs).  Medians; the goal
(issue 24): the upgrade's diff within 2× the plan of the same release.
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
CORPUS = REPO.parent / "shared" / "corpus" / "ocp-5.0-nightly"
sys.path.insert(0, str(REPO))

from bench.measure import cvo, run_process  # noqa: E402
from bench.scale import derived_release  # noqa: E402

CORPUS_VERSION = "5.0.0-0.nightly-2026-08-22-120000"
NEXT_VERSION = "5.0.1-0.nightly-2026-09-05-120000"
GOAL = 2.0  # the diff of an upgrade within this many times the plan of the same release


def timed(argv: list[str], env: dict[str, str], expect: int | tuple[int, ...]) -> float:
    """Wall seconds of one whole process that must exit ``expect`` (``cvo diff``: 1 when something differs)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (expect if isinstance(expect, tuple) else (expect,)):
        raise SystemExit(f"benchmark command exited {proc.returncode}, not {expect}: {' '.join(argv)}\n"
                         f"{proc.stderr.decode()[-2000:]}")
    return elapsed


def diff_section(repeats: int) -> list[str]:
    tmp = Path(tempfile.mkdtemp(prefix="cvo-bench-diff-"))
    try:
        env = dict(os.environ, CVO_CACHE_DIR=str(tmp / "cache"))
        state = tmp / "cluster.db"
        nxt = derived_release(CORPUS, CORPUS_VERSION, NEXT_VERSION, tmp / "next")
        run_process(cvo("install", str(CORPUS), "--state", str(state), "-o", "json"), env)
        run_process(cvo("plan", "-o", "json", str(nxt)), env)  # fills the parse and plan caches
        upgrade = cvo("diff", str(nxt), "--state", str(state), "-o", "json")
        reconcile = cvo("diff", str(CORPUS), "--state", str(state), "-o", "json")
        timed(upgrade, env, 1)
        timed(reconcile, env, (0, 1))
        runs: dict[str, list[float]] = {k: [] for k in ("plan warm", "plan parse-warm", "diff upgrade",
                                                        "diff reconcile", "plan cold", "diff cold")}
        for i in range(repeats):
            # nothing cached (a release never seen, a store never opened by this user): each with a cache of its own
            for what, argv, code in (("plan cold", cvo("plan", "-o", "json", str(nxt)), 0), ("diff cold", upgrade, 1)):
                cold = dict(env, CVO_CACHE_DIR=str(tmp / f"cold-{what[0]}-{i}"))
                runs[what].append(timed(argv, cold, code))
            runs["plan warm"].append(timed(cvo("plan", "-o", "json", str(nxt)), env, 0))
            runs["plan parse-warm"].append(timed(cvo("plan", "-o", "json", "--mode", "reconcile", "--attempt",
                                                     str(1000 + i), str(nxt)), env, 0))
            runs["diff upgrade"].append(timed(upgrade, env, 1))
            runs["diff reconcile"].append(timed(reconcile, env, (0, 1)))
        med = {k: statistics.median(v) for k, v in runs.items()}
        said = {what: next((line.partition(": ")[2] for line in subprocess.run(
            cvo("diff", str(release), "--state", str(state)), env=env, capture_output=True, text=True,
            check=False).stdout.splitlines() if line.startswith(f"{what} to ")), "") for what, release in
            (("update", nxt), ("reconcile", CORPUS))}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ratio = med["diff upgrade"] / med["plan warm"]
    uncached, parse_warm = med["diff cold"] / med["plan cold"], med["diff upgrade"] / med["plan parse-warm"]
    lines = [
        "## `cvo diff` of the corpus against the embedded cluster, beside `cvo plan`",
        "",
        f"The corpus installed into an embedded cluster (SQLite store), then whole processes, one of each kind per "
        f"round, medians of {repeats} rounds: *plan cold* and *diff cold*: nothing cached (a release never seen "
        f"before, as before each upgrade to a new release: every manifest parsed, every stored row checked); *plan "
        f"warm*: `cvo plan NEXT -o json` with the plan cached; *plan parse-warm*: the parse cache warm, the plan not "
        f"cached; *diff upgrade*: `cvo diff NEXT -o json` against the cluster with the parse cache warm (NEXT: the "
        f"corpus as the next version: {said['update']}); *diff reconcile*: `cvo diff` of the release the cluster "
        f"runs ({said['reconcile']}).",
        "",
        "| run | seconds | × plan warm |",
        "|---|---|---|",
        *(f"| {k} | {v:.3f} | {v / med['plan warm']:.2f} |" for k, v in med.items()),
        "",
        f"Goal (issue 24): the upgrade's diff within {GOAL:g}× `cvo plan` of the same release, as whole processes. "
        f"With the same caches on both sides: nothing cached {uncached:.2f}× ({'met' if uncached <= GOAL else 'not met'}), "
        f"the parse cache warm {parse_warm:.2f}× ({'met' if parse_warm <= GOAL else 'not met'}); against a plan "
        f"cvo has cached whole (the diff caches no result: the cluster is one of its inputs) {ratio:.2f}× "
        f"({'met' if ratio <= GOAL else 'not met'}). Where the diff's time goes "
        f"(in-process timers): imports (asyncio for the cluster's API among them), loading the release from the "
        f"parse cache (as the plan), opening the embedded store (rows checked before are known by digest, the "
        f"CRDs it serves decoded), one get per object, decoding each manifest and comparing it with the live "
        f"object (a byte-for-byte JSON comparison of each field first, the merge's own rule only where that "
        f"differs), and the unified diffs of the objects that differ.",
        "",
    ]
    return lines
