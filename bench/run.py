"""``make bench``: measure cvo on the real corpus and scaled copies; rewrite docs/benchmarks.md.

Every figure is a median over repeated runs measured side by side in this one run; the machines
are noisy, so compare ratios within a table rather than numbers across tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "ocp-5.0-nightly"
sys.path.insert(0, str(REPO))

from bench.acting_bench import acting_section  # noqa: E402
from bench.diff_bench import diff_section  # noqa: E402
from bench.failover import failover_section  # noqa: E402
from bench.forecast_bench import forecast_section  # noqa: E402
from bench.graph_bench import graph_section  # noqa: E402
from bench.images_bench import images_section  # noqa: E402
from bench.kube import kube_section  # noqa: E402
from bench.measure import Run, cvo, run_process  # noqa: E402
from bench.nodes_bench import nodes_section  # noqa: E402
from bench.report_bench import report_section  # noqa: E402
from bench.scale import derived_release, scaled_corpus  # noqa: E402


def median_run(runs: list[Run]) -> tuple[float, int]:
    return statistics.median(r.seconds for r in runs), max(r.max_rss_kb for r in runs)


def count_documents(target: Path, env: dict[str, str]) -> int:
    out = subprocess.run(cvo("plan", "-o", "json", str(target)), env=env, check=True, capture_output=True).stdout
    doc = json.loads(out)
    return int(doc["total"]) + len(doc["excluded"])


# The stand-in for the CVO's own loader (LoadUpdate plus its task graph takes about as long as this
# parse, measured side by side on the corpus: issue 16): PyYAML's C loader over every manifest file,
# in a child process that reports the parse alone.  PyYAML cannot even load the corpus without the
# constructor for the YAML '=' value.
CSAFE_PARSE = """
import sys, time, yaml
from pathlib import Path
files = sorted(p for d in ("manifests", "release-manifests") for p in (Path(sys.argv[1]) / d).iterdir()
               if p.suffix in (".yaml", ".yml", ".json"))
class Loader(yaml.CSafeLoader):
    pass
Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))
data = [p.read_bytes() for p in files]
started = time.perf_counter()
for b in data:
    list(yaml.load_all(b, Loader=Loader))
print(time.perf_counter() - started)
"""


def csafe_parse(target: Path) -> float:
    out = subprocess.run([sys.executable, "-c", CSAFE_PARSE, str(target)], check=True, capture_output=True).stdout
    return float(out)


def compile_cvo() -> None:
    """Byte-compile cvo's modules, as ``pip install`` does: with PYTHONDONTWRITEBYTECODE set (this
    machine sets it) an editable install would otherwise compile every module on every run."""
    import compileall

    compileall.compile_dir(str(REPO / "cvo"), quiet=1)


def bench_plan(target: Path, repeats: int, cache_root: Path, with_csafe: bool = False) -> dict[str, tuple[float, int]]:
    """Every kind of run once per round, the rounds one after another (so that all see the same machine).

    *cold*: ``--no-cache``; *fill*: an empty cache (parses, writes the parse and plan caches); *warm*:
    the plan cache holds this plan; *parse-warm*: the parse cache holds every file but the plan cache
    does not (another ``--mode`` each time); *serial*: ``--no-cache`` with one parser process."""
    base = dict(os.environ)
    warm_env = dict(base, CVO_CACHE_DIR=str(cache_root / "warm"))
    run_process(cvo("plan", "-o", "json", str(target)), warm_env)  # fills the warm cache
    runs: dict[str, list[Run]] = {k: [] for k in ("cold", "fill", "warm", "parse-warm", "serial")}
    csafe: list[float] = []
    for i in range(repeats):
        fill_dir = cache_root / f"fill{i}"
        runs["cold"].append(run_process(cvo("plan", "-o", "json", "--no-cache", str(target)), warm_env))
        runs["fill"].append(run_process(cvo("plan", "-o", "json", str(target)), dict(base, CVO_CACHE_DIR=str(fill_dir))))
        shutil.rmtree(fill_dir, ignore_errors=True)
        runs["warm"].append(run_process(cvo("plan", "-o", "json", str(target)), warm_env))
        # Options never planned before (a new reconcile attempt each round): the plan cache misses, the
        # parse cache has every file.
        runs["parse-warm"].append(run_process(
            cvo("plan", "-o", "json", "--mode", "reconcile", "--attempt", str(1000 + i), str(target)), warm_env))
        if i < max(3, repeats // 2):
            runs["serial"].append(run_process(cvo("plan", "-o", "json", "--no-cache", str(target)),
                                              dict(warm_env, CVO_PARSE_JOBS="1")))
        if with_csafe:
            csafe.append(csafe_parse(target))
            runs.setdefault("python", []).append(run_process([sys.executable, "-c", "pass"], base))
            runs.setdefault("imports", []).append(run_process(
                [sys.executable, "-c", "import cvo.cli.main, cvo.cli.plan_cmd, cvo.plan.cache"], base))
    out = {k: median_run(v) for k, v in runs.items()}
    if csafe:
        out["csafe"] = (statistics.median(csafe), 0)
        out["read"] = (read_and_hash(target, repeats), 0)
    return out


def read_and_hash(target: Path, repeats: int) -> float:
    """In the bench's process: what a warm plan does besides starting: read every file, hash it all."""
    from cvo.payload.loader import read_release

    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        read_release(target).fingerprint()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_parsers(repeats: int) -> dict[str, float]:
    """In-process parse of every corpus file: PyYAML's C loader vs cvo's go-yaml-compatible builder."""
    import yaml

    from cvo.payload.yamlorjson import load_documents

    files = sorted(p for d in ("manifests", "release-manifests") for p in (CORPUS / d).iterdir()
                   if p.suffix in (".yaml", ".yml", ".json"))
    data = [p.read_bytes() for p in files]

    class Loader(yaml.CSafeLoader):
        pass

    # PyYAML cannot even load the corpus without this: it rejects the YAML '=' value.
    Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))

    def pyyaml() -> None:
        for b in data:
            list(yaml.load_all(b, Loader=Loader))

    def ours() -> None:
        for b in data:
            load_documents(b)

    out = {}
    for name, fn in (("PyYAML CSafeLoader", pyyaml), ("cvo yamlparse", ours)):
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        out[name] = statistics.median(times)
    out["bytes"] = float(sum(len(b) for b in data))
    return out


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()}"


Section = Callable[[int], list[str]]

PLAN_COLD_GOAL = 0.5  # cold (empty cache) at most this share of the C-loader parse
PLAN_WARM_GOAL = 0.1
PLAN_RSS_GOAL_MB = 80


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def plan_section(repeats: int) -> list[str]:
    lines = ["## `cvo plan -o json` on the corpus, as a whole process", ""]
    parsers = bench_parsers(repeats)
    mb = parsers["bytes"] / 1e6
    py, ours = parsers["PyYAML CSafeLoader"], parsers["cvo yamlparse"]
    lines += [
        f"Parsing alone, in the bench's process, {mb:.1f} MB of manifests (median of {repeats}):",
        "",
        "| parser | seconds | MB/s | ratio |",
        "|---|---|---|---|",
        f"| PyYAML `CSafeLoader` (Python constructor) | {py:.3f} | {mb / py:.1f} | 1.00 |",
        f"| cvo `yamlparse` (libyaml events, own builder, go-yaml v2 rules) | {ours:.3f} | {mb / ours:.1f} | "
        f"{py / ours:.2f}× faster |",
        "",
    ]
    tmp = Path(tempfile.mkdtemp(prefix="cvo-bench-"))
    try:
        rows = []
        for factor in (1, 5, 20):
            target = CORPUS if factor == 1 else scaled_corpus(CORPUS, factor, tmp / f"x{factor}")
            result = bench_plan(target, repeats if factor < 20 else max(3, repeats // 2), tmp / f"cache{factor}",
                                with_csafe=factor == 1)
            docs = count_documents(target, dict(os.environ, CVO_CACHE_DIR=str(tmp / f"cache{factor}" / "warm")))
            rows.append((factor, docs, result))
            shutil.rmtree(tmp / f"x{factor}", ignore_errors=True)
        lines += [
            f"Whole `cvo plan -o json` processes, cvo's modules byte-compiled (as `pip install` leaves them; "
            f"this machine sets PYTHONDONTWRITEBYTECODE, so an editable install would compile every module on "
            f"every run). Each round runs every kind once, one after the other; medians of {repeats} rounds "
            "(3 at 20×). *cold*: `--no-cache`, parsing in this process and one forked child per other core; "
            "*serial*: `--no-cache` with one process; *fill*: an empty cache (parses, writes the parse and plan "
            "caches); *warm*: the plan cache holds this plan (the files are read and hashed, nothing is parsed); "
            "*parse-warm*: the parse cache holds every file, the plan cache not this plan (a reconcile attempt not planned before). "
            "Peak RSS is the largest of the runs of that kind.",
            "",
            "| corpus | documents | cold s | serial s | fill s | warm s | parse-warm s | warm ms / 1k docs | "
            "peak RSS cold MB | fill MB | warm MB | parse-warm MB |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for factor, docs, r in rows:
            lines.append(
                f"| {factor}× | {docs} | {r['cold'][0]:.3f} | {r['serial'][0]:.3f} | {r['fill'][0]:.3f} | "
                f"{r['warm'][0]:.3f} | {r['parse-warm'][0]:.3f} | {1000 * r['warm'][0] / docs * 1000:.1f} | "
                f"{r['cold'][1] / 1024:.0f} | {r['fill'][1] / 1024:.0f} | {r['warm'][1] / 1024:.0f} | "
                f"{r['parse-warm'][1] / 1024:.0f} |")
        base = rows[0][2]
        lines += [
            "",
            "Growth relative to 1× (linear would be 5.0 and 20.0): "
            + ", ".join(
                f"{f}×: cold {r['cold'][0] / base['cold'][0]:.1f}, warm {r['warm'][0] / base['warm'][0]:.1f}, "
                f"parse-warm {r['parse-warm'][0] / base['parse-warm'][0]:.1f}"
                for f, _, r in rows[1:]
            ),
            "",
        ]
        csafe = base["csafe"][0]
        cold = max(base["cold"][0], base["fill"][0])
        warm = base["warm"][0]
        rss = max(base[k][1] for k in ("cold", "fill", "warm", "parse-warm")) / 1024
        lines += [
            f"Goals against the PyYAML C-loader parse of the corpus measured in the same rounds (a child process "
            f"timing the parse alone; median {csafe:.3f} s), the in-run stand-in for the CVO's loader "
            f"(issue 16): cold (the slower of *cold* and *fill*) ≤ {PLAN_COLD_GOAL}×: {_verdict(cold <= PLAN_COLD_GOAL * csafe)} "
            f"({cold:.3f} s, {cold / csafe:.2f}×); warm ≤ {PLAN_WARM_GOAL}×: "
            f"{_verdict(warm <= PLAN_WARM_GOAL * csafe)} ({warm:.3f} s, {warm / csafe:.3f}×); peak RSS of every "
            f"1× run ≤ {PLAN_RSS_GOAL_MB} MB: {_verdict(rss <= PLAN_RSS_GOAL_MB)} ({rss:.0f} MB).",
            "",
            f"Where the time goes (profiles: `python -X importtime`, cProfile; the parts measured in the same "
            f"rounds). *warm* {warm:.3f} s: Python's start-up {base['python'][0]:.3f} s (`python -c pass`), cvo's "
            f"imports {base['imports'][0] - base['python'][0]:.3f} s more (argparse, dataclasses and inspect, "
            f"hashlib, orjson with its datetime/uuid imports, the loader; networkx, structlog, the YAML parser "
            f"and the cluster API are no longer imported), reading and hashing the {mb:.1f} MB "
            f"{base['read'][0]:.3f} s (SHA-256 of every file, which is what makes the cache exact), and printing "
            f"the stored plan. *cold* {base['cold'][0]:.3f} s: parsing is {ours:.3f} s of CPU in one process "
            f"(cvo's builder over libyaml's events, 2.4× PyYAML's constructor but still Python), split over "
            f"{os.cpu_count()} processes; the rest is start-up, reading, building manifests and the graph "
            f"(networkx no longer: the plan reads the CVO's node list) and writing JSON. A faster cold plan "
            f"needs a parser that builds Go's values in C.",
            "",
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return lines


CORPUS_VERSION = "5.0.0-0.nightly-2026-08-22-120000"
NEXT_VERSION = "5.0.1-0.nightly-2026-09-05-120000"


def remove_state(state: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{state}{suffix}").unlink(missing_ok=True)


def sweep_once(release: Path, target: Path, state: Path, env: dict[str, str]) -> dict[str, float]:
    """One install of ``release`` then an upgrade to ``target``, each a whole ``cvo`` process."""
    remove_state(state)
    out: dict[str, float] = {}
    for step, argv in (("install", cvo("install", str(release), "--state", str(state), "-o", "json")),
                       ("upgrade", cvo("upgrade", "--to", str(target), "--state", str(state), "-o", "json"))):
        with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
            start = time.perf_counter()
            proc = subprocess.Popen(argv, stdout=out_file, stderr=err_file, env=env)  # files: pipes could fill
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            out_file.seek(0)
            err_file.seek(0)
            stdout, stderr = out_file.read(), err_file.read()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"benchmark {step} failed: {stderr.decode()[-2000:]}")
        doc = json.loads(stdout)
        out[f"{step}_wall"] = wall
        out[f"{step}_sim"] = float(doc["simulatedSeconds"])
        out[f"{step}_tasks"] = float(doc["total"])
        out[f"{step}_rss"] = usage.ru_maxrss / 1024
        out[f"{step}_sweep"] = float(doc["wallSeconds"])
        out[f"{step}_attempts"] = float(doc["attempts"])
    return out


def sweep_section(repeats: int) -> list[str]:
    lines = ["## Simulated sweeps of the corpus (`cvo install`, then `cvo upgrade` to a derived next version)", ""]
    tmp = Path(tempfile.mkdtemp(prefix="cvo-bench-sweep-"))
    runs = max(3, repeats // 2)
    try:
        rows = []
        for factor in (1, 5, 20):
            base = CORPUS if factor == 1 else scaled_corpus(CORPUS, factor, tmp / f"x{factor}")
            nxt = derived_release(base, CORPUS_VERSION, NEXT_VERSION, tmp / f"next{factor}")
            env = dict(os.environ, CVO_CACHE_DIR=str(tmp / "cache"))
            sweep_once(base, nxt, tmp / "warmup.db", env)  # fills the parse cache: sweeps, not parsing, are measured
            samples = [sweep_once(base, nxt, tmp / f"state{factor}.db", env) for _ in range(runs if factor < 20 else 3)]
            rows.append((factor, {k: statistics.median(s[k] for s in samples) for k in samples[0]}))
        lines += [
            f"Every ClusterOperator reports after its default simulated delay (30–180 s, fixed per operator "
            f"name). Median of {runs} runs (3 at 20×), parse cache warm. *process* is the whole `cvo` command "
            "(start-up, load, sweep, report); *sweep* is the sweep alone.",
            "",
            "| corpus | step | tasks | attempts | process wall s | sweep wall s | simulated | s per attempt | "
            "task applies/s | peak RSS MB |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for factor, r in rows:
            for step in ("install", "upgrade"):
                tasks, attempts, sweep = r[f"{step}_tasks"], r[f"{step}_attempts"], max(r[f"{step}_sweep"], 1e-9)
                lines.append(
                    f"| {factor}× | {step} | {tasks:.0f} | {attempts:.0f} | {r[f'{step}_wall']:.2f} | {sweep:.2f} | "
                    f"{r[f'{step}_sim'] / 60:.1f} min | {sweep / attempts:.2f} | {tasks * attempts / sweep:.0f} | "
                    f"{r[f'{step}_rss']:.0f} |")
        base = rows[0][1]

        def per_attempt(r: dict[str, float], step: str) -> float:
            return r[f"{step}_sweep"] / r[f"{step}_attempts"]

        lines += [
            "",
            "Every attempt re-applies the whole payload (unchanged objects cost a read and a compare), so the "
            "fair measure of growth is the time per attempt; how many attempts a sweep needs depends on the "
            "simulated operators (a scaled copy has more operators, so a slower slowest one per run level, and "
            "a first install attempt can end on the one operator whose delay outlasts it).",
            "",
            "Relative to 1× (linear would be 5.0 and 20.0): " + ", ".join(
                f"{f}×: install {r['install_sweep'] / base['install_sweep']:.1f} "
                f"({per_attempt(r, 'install') / per_attempt(base, 'install'):.1f} per attempt), upgrade "
                f"{r['upgrade_sweep'] / base['upgrade_sweep']:.1f} "
                f"({per_attempt(r, 'upgrade') / per_attempt(base, 'upgrade'):.1f} per attempt); "
                f"peak RSS {r['install_rss'] / base['install_rss']:.1f}×" for f, r in rows[1:]) + ".",
            "",
        ]
        by_factor = dict(rows)
        if 20 in by_factor and 5 in by_factor:
            top = by_factor[20]["upgrade_rss"]
            small, mid = base["upgrade_rss"], by_factor[5]["upgrade_rss"]
            per_low, per_high = (mid - small) / 4, (top - mid) / 15
            linear = per_high <= 1.25 * per_low
            lines += [
                f"Goal: the 20× upgrade's peak RSS ≤ {SWEEP_RSS_GOAL_MB} MB, growing linearly with the copies: "
                f"{_verdict(top <= SWEEP_RSS_GOAL_MB and linear)} ({top:.0f} MB; {per_low:.0f} MB per copy from "
                f"1× to 5×, {per_high:.0f} MB per copy from 5× to 20×). Per copy an upgrade holds both releases "
                "as their JSON bytes (~10 MB each), the cluster's objects as bytes (~8 MB) and their bookkeeping; "
                "nothing holds decoded copies of a release (a manifest's object is decoded when applied and "
                "dropped), the parse cache is read one entry at a time and a file's bytes are dropped once "
                "parsed, and the CRD watch lists nothing at start (the list decoded every CRD at once: 200 MB "
                "at 20×).",
                "",
            ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return lines


SWEEP_RSS_GOAL_MB = 1000

STORE_BASELINE = 0.30  # seconds: the corpus install sweep in memory before the store (docs/benchmarks.md, 2026-11-23)
STORE_GOAL = 1.5  # the store may cost at most this factor of the baseline


def install_once(release: Path, state: str, env: dict[str, str]) -> tuple[float, float, float]:
    """One ``cvo install`` process: (sweep wall s, process wall s, peak RSS MB)."""
    if state != "none":
        remove_state(Path(state))
    argv = cvo("install", str(release), "--state", state, "-o", "json")
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out_file, stderr=err_file, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out_file.seek(0)
        err_file.seek(0)
        stdout, stderr = out_file.read(), err_file.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"benchmark install failed: {stderr.decode()[-2000:]}")
    return float(json.loads(stdout)["wallSeconds"]), wall, usage.ru_maxrss / 1024


# One more store install, timed inside the process: the store's own calls, wrapped (argv: stats file, cvo args…).
STORE_PROFILE = r"""
import json, sys, time
from cvo.cluster.embedded import store as st
acc = {}
def wrap(name):
    inner = getattr(st.Store, name)
    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            n, total = acc.get(name, (0, 0.0))
            acc[name] = (n + 1, total + time.perf_counter() - t)
    setattr(st.Store, name, timed)
for name in ("open", "begin", "commit", "_flush", "close", "_record", "changes"):
    wrap(name)
from cvo.cli.main import main
out = sys.argv[1]
sys.argv = ["cvo", *sys.argv[2:]]
try:
    code = main()
finally:
    with open(out, "w") as f:
        json.dump(acc, f)
sys.exit(code)
"""


def store_profile(release: Path, state: Path, env: dict[str, str], tmp: Path) -> tuple[float, dict[str, list[float]]]:
    """The sweep wall time of one more store install and the time spent in the store's calls."""
    remove_state(state)
    stats = tmp / "store-profile.json"
    out = subprocess.run([sys.executable, "-c", STORE_PROFILE, str(stats), "install", str(release), "--state",
                          str(state), "-o", "json"], env=env, capture_output=True, check=True).stdout
    return float(json.loads(out)["wallSeconds"]), json.loads(stats.read_text())


def store_section(repeats: int) -> list[str]:
    """The corpus install with the cluster in memory (``--state none``) and on the SQLite store, interleaved."""
    tmp = Path(tempfile.mkdtemp(prefix="cvo-bench-store-"))
    runs = max(5, repeats)
    try:
        env = dict(os.environ, CVO_CACHE_DIR=str(tmp / "cache"))
        install_once(CORPUS, "none", env)  # fills the parse cache
        memory, store = [], []
        for _ in range(runs):  # alternate, so both see the same machine
            memory.append(install_once(CORPUS, "none", env))
            store.append(install_once(CORPUS, str(tmp / "cluster.db"), env))
        db_size = (tmp / "cluster.db").stat().st_size / 1e6
        profiled_wall, calls = store_profile(CORPUS, tmp / "cluster.db", env, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(rows: list[tuple[float, float, float]], i: int) -> float:
        return statistics.median(r[i] for r in rows)

    sweep_mem, sweep_store = med(memory, 0), med(store, 0)
    limit = STORE_BASELINE * STORE_GOAL
    verdict = "met" if sweep_store <= limit else "not met"
    return [
        "## The embedded cluster's store: the corpus install in memory and on SQLite",
        "",
        f"`cvo install` of the corpus (1,002 manifests, 33 ClusterOperators), parse cache warm, {runs} runs of each "
        "kind alternating. *memory* is `--state none`; *store* commits every write to the SQLite store "
        "(`docs/sweep.md`, \"The store\") before it returns. *sweep* is the sweep alone, *process* the whole command.",
        "",
        "| cluster | sweep wall s | process wall s | peak RSS MB |",
        "|---|---|---|---|",
        f"| memory | {sweep_mem:.3f} | {med(memory, 1):.2f} | {max(r[2] for r in memory):.0f} |",
        f"| store | {sweep_store:.3f} | {med(store, 1):.2f} | {max(r[2] for r in store):.0f} |",
        "",
        f"The store costs {sweep_store / sweep_mem:.2f}× the in-memory sweep measured beside it; the database "
        f"ends at {db_size:.1f} MB. Goal: the store's sweep within {STORE_GOAL}× of the {STORE_BASELINE:.2f} s "
        f"in-memory sweep before the store (≤ {limit:.2f} s): **{verdict}** ({sweep_store:.3f} s).",
        "",
        *store_findings(sweep_mem, sweep_store, limit, profiled_wall, calls),
    ]


def store_findings(sweep_mem: float, sweep_store: float, limit: float, wall: float,
                   calls: dict[str, list[float]]) -> list[str]:
    """Where the store's share of the sweep goes, from the profiled run."""
    def secs(name: str) -> float:
        return float(calls.get(name, [0, 0.0])[1])

    def count(name: str) -> int:
        return int(calls.get(name, [0, 0.0])[0])

    flush, commit, close = secs("_flush"), secs("commit"), secs("close")
    own = secs("open") + secs("begin") + commit + close + secs("changes")
    return [
        f"Where the store's time goes (one more store run, {wall:.3f} s, the store's calls timed inside the "
        f"process): {count('_record')} writes in {count('commit')} transactions (a group commit per event-loop "
        f"turn; each writer waits for its commit, so a node's next write comes a transaction later, and the "
        f"longest chains of writes set how many there are) take {commit:.3f} s (inserting the rows "
        f"{flush:.3f} s, SQLite's COMMIT, appending to the write-ahead log, {commit - flush:.3f} s); closing "
        f"the database {close:.3f} s (SQLite checkpoints the write-ahead log into the database file, with its "
        f"two fsyncs, when the last connection closes: what the store's checkpoint thread, every 32 commits "
        f"during the sweep, left of it); opening, beginning transactions and looking for other "
        f"processes' writes {own - commit - close:.3f} s: {own:.3f} s in all, against the "
        f"{sweep_store - sweep_mem:.3f} s between the medians. The in-memory sweep measured beside it is "
        f"{sweep_mem:.3f} s (loading the release from the parse cache, the sweep, listing the ClusterOperators), "
        + (f"already {sweep_mem - limit:.3f} s over the goal: even a store that cost nothing would miss it; what "
           f"remains is the sweep itself (checking, encoding and dispatching {count('_record')} writes, the "
           "events and their log)." if sweep_mem > limit else
           f"so the store's own share is what misses the goal, by {sweep_mem + own - limit:.3f} s."
           if sweep_mem + own > limit else "and the store's share fits within the goal."),
        "",
    ]


SECTIONS: dict[str, Section] = {"plan": plan_section, "sweep": sweep_section, "store": store_section,
                                "kube": kube_section, "forecast": forecast_section, "report": report_section,
                                "failover": failover_section, "images": images_section, "graph": graph_section,
                                "diff": diff_section, "acting": acting_section,
                                "nodes": nodes_section}


def _sections(text: str) -> dict[str, list[str]]:
    """The sections of an earlier docs/benchmarks.md, by name (between the section markers)."""
    out: dict[str, list[str]] = {}
    name: str | None = None
    for line in text.splitlines():
        if line.startswith("<!-- section:"):
            name = line[len("<!-- section:"):-len(" -->")]
            out[name] = []
        elif line.startswith("<!-- end:"):
            name = None
        elif name is not None:
            out[name].append(line)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "benchmarks.md")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"error: the corpus is missing: {CORPUS}")
    lines = [
        "# Benchmarks",
        "",
        f"Written by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC: {machine()}.",
        "Medians of repeated runs measured side by side in this run; see `bench/run.py` for the method.",
        "",
    ]
    compile_cvo()  # every section runs cvo as installed: its modules byte-compiled
    previous = _sections(args.output.read_text()) if args.only and args.output.exists() else {}
    for name, section in SECTIONS.items():
        if args.only and name not in args.only:
            if name in previous:  # --only keeps the other sections of the file as they were measured
                lines += [f"<!-- section:{name} -->", *previous[name], f"<!-- end:{name} -->"]
            continue
        print(f"bench: {name} …", file=sys.stderr, flush=True)
        started = datetime.now(UTC)
        lines += [f"<!-- section:{name} -->", *section(args.repeats),
                  f"(measured {started:%Y-%m-%d %H:%M} UTC)", "", f"<!-- end:{name} -->"]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("\n".join(lines) + "\n")
    print(f"bench: wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
