"""``make fuzz``: run the fuzz targets for a given time and write a minimal reproducer for every crash.

Two fuzzers share the time: hypothesis over :data:`fuzz_targets.TARGETS` (it shrinks every failure to
a minimal example), and a byte-mutation fuzzer seeded with the real corpus, the demo payloads and
the scenario files (failures are minimized by removing chunks while the same crash remains).
Every input runs under a time limit (a hang is a crash) and the process under a memory limit (an
input that exhausts memory is a crash, not a dead machine).  Exit 1 when anything was found.

    python tests/support/fuzz_main.py --seconds 600 --out fuzz-findings
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import random
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.support is importable

from tests.support import fuzz_targets as t

INPUT_SECONDS = 20  # one input taking longer is a hang
MEMORY_BYTES = 3 * 1024**3  # one process using more is an exhaustion


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"the input took more than {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def guarded(target: Callable[[Any], None], counter: list[int]) -> Callable[[Any], None]:
    def run(value: Any) -> None:
        counter[0] += 1
        with time_limit(INPUT_SECONDS):
            target(value)

    return run


def signature(err: BaseException) -> str:
    """The crash's identity: exception type and the innermost frame in cvo (or the test)."""
    frames = traceback.extract_tb(err.__traceback__)
    inner = next((f for f in reversed(frames) if "/cvo/" in f.filename), frames[-1] if frames else None)
    where = f"{Path(inner.filename).name}:{inner.lineno}" if inner else "?"
    return f"{type(err).__name__}@{where}"


@dataclass
class Findings:
    out: Path
    seen: set[str] = field(default_factory=set)
    count: int = 0

    def record(self, target: str, err: BaseException, reproducer: Any, note: str = "") -> None:
        sig = f"{target}:{signature(err)}"
        if sig in self.seen:
            return
        self.seen.add(sig)
        self.count += 1
        self.out.mkdir(parents=True, exist_ok=True)
        stem = f"{target}-{hashlib.sha256(sig.encode()).hexdigest()[:10]}"
        if isinstance(reproducer, bytes):
            (self.out / f"{stem}.bin").write_bytes(reproducer)
        text = "".join(traceback.format_exception(err))
        (self.out / f"{stem}.txt").write_text(
            f"target: {target}\ncrash: {sig}\n{note}\nminimal input:\n{reproducer!r}\n\n{text}")
        print(f"FOUND {sig} -> {self.out / stem}.txt", flush=True)


# --- hypothesis ---------------------------------------------------------------------------------

def run_hypothesis(name: str, deadline: float, findings: Findings, counter: list[int]) -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    strategy, target = t.TARGETS[name]
    run = guarded(target, counter)
    db = DirectoryBasedExampleDatabase(str(findings.out / ".hypothesis"))
    while time.monotonic() < deadline:  # in batches of 20: a slow target (commands per input) stops near it
        @settings(max_examples=20, deadline=None, database=db, derandomize=False, print_blob=True,
                  suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.target, Phase.shrink])
        @given(strategy)
        def prop(value: Any) -> None:
            run(value)

        try:
            prop()
        except Exception as err:
            notes = "\n".join(getattr(err, "__notes__", []))
            findings.record(name, err, notes, "(hypothesis, shrunk)")


# --- mutation fuzzer ----------------------------------------------------------------------------

def seeds() -> dict[str, list[bytes]]:
    """Seed inputs per byte target: real files, small ones first."""
    yaml_files = sorted((p for p in t.CORPUS.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml", ".json")),
                        key=lambda p: p.stat().st_size)
    templates = [p for p in yaml_files if p.parent.name == "manifests"]
    manifests = [p for p in yaml_files if p.parent.name != "manifests"][:300]
    manifests += sorted(t.PAYLOADS.glob("*/release-manifests/*.yaml"))[:50]
    scenarios = sorted((t.REPO / "scenarios").glob("*.yaml"))
    operators = sorted(t.PAYLOADS.glob("*operators*.yaml")) + scenarios
    read = lambda paths: [p.read_bytes() for p in paths]  # noqa: E731
    return {"parse": read(manifests) or [b"kind: ConfigMap\n"], "template": read(templates) or [b"{{.ReleaseImage}}"],
            "behaviours": read(operators) or [b"etcd: {delay: 1m}\n"], "scenario": read(scenarios) or [b"name: x\n"],
            "state": state_seeds(), "events": events_seeds(), "saved-file": t.saved_file_seeds(),
            "graph": graph_seeds(),
            "promql-answer": PROMQL_SEEDS, "alerts-answer": ALERTS_SEEDS}


def graph_seeds() -> list[bytes]:
    from tests.support.fuzz_graph import BYTE_SEEDS

    return BYTE_SEEDS



# What a Prometheus answers: an instant query's vectors (one sample of 1, two series, a string, an error)
PROMQL_SEEDS = [
    b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1700000000.1,"1"]}]}}',
    b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0"]},'
    b'{"metric":{"i":"2"},"value":[1,"NaN"]}]},"warnings":["w"]}',
    b'{"status":"success","data":{"resultType":"string","result":[1700000000,"text"]}}',
    b'{"status":"error","errorType":"bad_data","error":"1:5: parse error: unclosed left parenthesis"}',
]
ALERTS_SEEDS = [
    b'{"status":"success","data":{"alerts":[{"labels":{"alertname":"ClusterOperatorDegraded","name":"etcd",'
    b'"severity":"warning"},"annotations":{"summary":"s","description":"d","runbook_url":"https://r"},'
    b'"state":"firing","activeAt":"2025-01-28T23:00:54.844366438Z","value":"1e+00",'
    b'"partialResponseStrategy":"WARN"}]}}',
]


def events_seeds() -> list[bytes]:
    """The events of two scenario replays (a slow operator over seven attempts, a failed branch), whole and cut
    to their first lines: mutated, they probe the events reader, the timeline and the pages."""
    from cvo.report.events_io import event_line
    from cvo.scenario.model import load_scenario
    from cvo.scenario.replay import replay

    out = []
    for name in ("upgrade-slow-operator.yaml", "failed-branch-independent-finish.yaml"):
        lines = [event_line(e) for e in replay(load_scenario(t.REPO / "scenarios" / name)).events]
        out += [b"".join(lines[:40]), b"".join(lines[:400]), b"".join(lines)]
    return out


def state_seeds() -> list[bytes]:
    """A real store (a small cluster, made once) and a JSON state of cvo 0.1: mutated, they probe the reader."""
    import tempfile

    from cvo.clock import Clock, run_virtual
    from cvo.cluster.embedded.server import SimCluster

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "seed.db"

        async def make() -> None:
            cluster = SimCluster(Clock(), path=path)
            await cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "seed", "namespace": "default"}, "data": {"a": "1"}})
            await cluster.close()

        run_virtual(make)
        store = path.read_bytes()
    legacy = (b'{"format": 1, "clock_time": "2025-01-01T00:00:00Z", "resource_version": 2, "uid_counter": 1, '
              b'"objects": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}]}')
    return [store, legacy]


BYTE_TARGETS: dict[str, Callable[[bytes], None]] = {
    "parse": t.parse_target,
    "template": lambda data: t.template_target(data.decode("utf-8", "surrogateescape")),
    "behaviours": t.behaviours_target,
    "scenario": t.scenario_target,
    "state": t.state_target,
    "events": t.events_target,
    "saved-file": t.saved_file_target,
    "graph": t.GRAPH_TARGETS["graph-body"][1],
    "promql-answer": t.TARGETS["promql-answer"][1],
    "alerts-answer": t.TARGETS["alerts-answer"][1],
}
TOKENS = [s.encode("utf-8", "surrogatepass") for s in t.YAML_TOKENS + t.TEMPLATE_TOKENS] + [
    b"[" * 300, b"{a: " * 250, b"- " * 50, b"&x [*x]", b"<<: *a\n", b"\x00", b"\xff\xfe", b"\n---\n" * 50,
]


def mutate(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    for _ in range(rng.randint(1, 4)):
        n = len(data)
        i = rng.randint(0, n)
        j = min(n, i + rng.randint(0, 64))
        op = rng.randrange(8)
        if op == 0 and n:
            data = data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
        elif op == 1:
            data = data[:i] + rng.choice(TOKENS) + data[i:]
        elif op == 2:
            data = data[:i] + data[j:]
        elif op == 3:
            data = data[:j] + data[i:j] * rng.randint(2, 50) + data[j:]
        elif op == 4:
            data = data[:i]
        elif op == 5 and others:
            other = rng.choice(others)
            k = rng.randint(0, len(other))
            data = data[:i] + other[k:k + rng.randint(1, 400)] + data[j:]
        elif op == 6:  # an anchor here, aliases there
            data = data[:i] + b"&z " + data[i:j] + b"\nq: [" + b"*z, " * rng.randint(1, 200) + b"*z]\n" + data[j:]
        else:
            data = data[:i] + data[i:j].upper() + data[j:]
    return data


def crash_of(target: Callable[[bytes], None], data: bytes) -> BaseException | None:
    try:
        with time_limit(INPUT_SECONDS):
            target(data)
    except (Exception, MemoryError, RecursionError) as err:
        return err
    return None


def minimize(target: Callable[[bytes], None], data: bytes, sig: str, budget: float) -> bytes:
    """Remove chunks, halving their size, while the crash keeps its signature (ddmin-like)."""
    end = time.monotonic() + budget
    chunk = max(1, len(data) // 2)
    while chunk >= 1 and time.monotonic() < end:
        i, shrunk = 0, False
        while i < len(data) and time.monotonic() < end:
            candidate = data[:i] + data[i + chunk:]
            err = crash_of(target, candidate)
            if err is not None and signature(err) == sig:
                data, shrunk = candidate, True
            else:
                i += chunk
        if not shrunk:
            chunk //= 2
    return data


def run_mutations(deadline: float, findings: Findings, counters: dict[str, list[int]], rng: random.Random) -> None:
    pool = seeds()
    names = list(BYTE_TARGETS)
    while time.monotonic() < deadline:
        name = rng.choice(names)
        inputs = pool[name]
        data = mutate(rng, rng.choice(inputs), inputs)
        counters[f"mutate-{name}"][0] += 1
        err = crash_of(BYTE_TARGETS[name], data)
        if err is not None:
            sig = signature(err)
            small = minimize(BYTE_TARGETS[name], data, sig, budget=30)
            findings.record(f"mutate-{name}", crash_of(BYTE_TARGETS[name], small) or err, small,
                            f"(mutation of a seed, minimized from {len(data)} to {len(small)} bytes)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    sys.setrecursionlimit(3000)
    findings = Findings(args.out)
    counters: dict[str, list[int]] = {name: [0] for name in t.TARGETS}
    counters.update({f"mutate-{name}": [0] for name in BYTE_TARGETS})
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    start = time.monotonic()
    # Half the time for hypothesis (shared by its targets), half for the mutation fuzzer.
    share = args.seconds / 2 / len(t.TARGETS)
    for name in t.TARGETS:  # each its share from when it starts: one that overran takes none from the next
        run_hypothesis(name, time.monotonic() + share, findings, counters[name])
    run_mutations(start + args.seconds, findings, counters, rng)
    total = sum(c[0] for c in counters.values())
    print(f"fuzz: {total:,} inputs in {time.monotonic() - start:.0f}s (seed {seed}): "
          + ", ".join(f"{k} {v[0]:,}" for k, v in counters.items()))
    print(f"fuzz: {findings.count} crash(es) found" + (f"; reproducers in {args.out}/" if findings.count else ""))
    return 1 if findings.count else 0


if __name__ == "__main__":
    sys.exit(main())
