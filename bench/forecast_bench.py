"""The forecast benchmark: how far cvo's forecast and oc's estimate are from the true end of an update.

Simulated upgrades of the corpus's task graph (update mode: run levels, parallel components, 16
workers, the lowest-numbered ready node first, tasks of a node in order).  Every ClusterOperator has its
own mean duration (most 1–8 minutes, a few slow ones 15–25); in each update it takes its mean ±30 %
(uniform), and one operator, chosen at random, stalls for 20–40 minutes more.  Other tasks take
:data:`APPLY_SECONDS` each.  A warm-up of updates fills the history and cvo's duration records.

At 25 %, 50 % and 75 % of each update's true duration, both predict the time remaining from what the
cluster shows then: cvo from its records and the graph (:func:`cvo.status.forecast.forecast`), oc from the
previous update's duration and the share of operators updated, with the last Progressing transition
(:func:`cvo.status.upgrade_status.estimate_completion`, as ``oc adm upgrade status`` computes it).  The
error is ``|predicted − true| / true`` remaining time; the table gives medians over the runs.
"""

from __future__ import annotations

import heapq
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "ocp-5.0-nightly"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from cvo.objects import ClusterVersion  # noqa: E402
from cvo.payload.graph import Mode, build_graph, make_tasks, max_workers, wait_for  # noqa: E402
from cvo.payload.loader import load_release  # noqa: E402
from cvo.status.forecast import DurationModel, OperatorGraph, duration_model, forecast, operator_graph  # noqa: E402
from cvo.status.godur import SECOND  # noqa: E402
from cvo.status.update_records import MAX_RECORDS, OperatorTime, UpdateRecord  # noqa: E402
from cvo.status.upgrade_status import MACHINE_CONFIG, baseline_duration, estimate_completion  # noqa: E402

APPLY_SECONDS = 0.5
FRACTIONS = (0.25, 0.5, 0.75)
SLOW_OPERATORS = 3
WARM_UP = 5


@dataclass
class Shape:
    """The graph as the simulation needs it: per node its tasks (an operator name, or None for an apply)."""

    tasks: dict[int, list[str | None]]
    predecessors: dict[int, tuple[int, ...]]
    workers: int
    operators: list[str]
    forecast_graph: OperatorGraph


def corpus_shape(corpus: Path = CORPUS) -> Shape:
    release = load_release(corpus)
    graph = build_graph(make_tasks(release.manifests, Mode.UPDATE), Mode.UPDATE)
    tasks: dict[int, list[str | None]] = {}
    for node, attrs in graph.nodes(data=True):
        names: list[str | None] = []
        for task in attrs.get("tasks") or []:
            wait = wait_for(task.manifest, Mode.UPDATE)
            names.append(wait.name if wait is not None and wait.kind == "ClusterOperator" else None)
        tasks[node] = names
    operators = sorted({n for names in tasks.values() for n in names if n is not None})
    return Shape(tasks, {n: tuple(graph.predecessors(n)) for n in graph.nodes}, max_workers(Mode.UPDATE, graph),
                 operators, operator_graph(graph))


@dataclass
class Update:
    """One simulated update: each operator's start and end (seconds from the update's start), its total."""

    times: dict[str, tuple[float, float]]
    total: float


def simulate(shape: Shape, durations: dict[str, float]) -> Update:
    """List scheduling of the nodes on ``shape.workers`` workers, the lowest-numbered ready node first."""
    remaining_preds = {n: len(p) for n, p in shape.predecessors.items()}
    successors: dict[int, list[int]] = {n: [] for n in shape.tasks}
    for n, preds in shape.predecessors.items():
        for p in preds:
            successors[p].append(n)
    ready = sorted(n for n, count in remaining_preds.items() if count == 0)
    heapq.heapify(ready)
    running: list[tuple[float, int]] = []
    times: dict[str, tuple[float, float]] = {}
    now = 0.0
    while ready or running:
        while ready and len(running) < shape.workers:
            node = heapq.heappop(ready)
            t = now
            for name in shape.tasks[node]:
                if name is None:
                    t += APPLY_SECONDS
                else:
                    start = t
                    t += durations[name]
                    times.setdefault(name, (start, t))
            heapq.heappush(running, (t, node))
        now, node = heapq.heappop(running)
        for succ in successors[node]:
            remaining_preds[succ] -= 1
            if remaining_preds[succ] == 0:
                heapq.heappush(ready, succ)
    return Update(times, now)


NOISE = (0.7, 1.3)  # each operator's duration in an update: its mean times a factor drawn from this range
STALL = (1200.0, 2400.0)  # seconds one operator of every update stalls for
BOUND_SAMPLES = 300


def operator_means(shape: Shape, rng: random.Random) -> dict[str, float]:
    means = {name: rng.uniform(60, 480) for name in shape.operators}
    for name in rng.sample(shape.operators, SLOW_OPERATORS):
        means[name] = rng.uniform(900, 1500)
    return means


def draw(means: dict[str, float], rng: random.Random) -> dict[str, float]:
    durations = {name: mean * rng.uniform(*NOISE) for name, mean in means.items()}
    stalled = rng.choice(sorted(durations))
    durations[stalled] += rng.uniform(*STALL)
    return durations


def oc_estimate(update: Update, at: float, baseline_history: list[dict[str, str]]) -> float:
    """oc's Est. Time Remaining (seconds) at ``at``: operators updated, last Progressing transition, baseline."""
    updated = [n for n, (_, end) in update.times.items() if end <= at]
    transitions = [t for start, end in update.times.values() for t in (start, end) if t <= at]
    last = max(transitions, default=0.0)
    pending = [n for n in update.times if n not in updated]
    mco = update.times.get(MACHINE_CONFIG)
    if pending == [MACHINE_CONFIG] and mco is not None and mco[0] <= at:
        last = mco[0]  # oc: the MCO's start when it is the last one updating
    if last <= 0:
        last = at
    completion = len(updated) / len(update.times)
    history = ClusterVersion.read({"status": {"history": baseline_history}}).status.history
    estimate = estimate_completion(baseline_duration(history), int(last * SECOND), int(at * SECOND),
                                   completion)
    return estimate / SECOND


def cvo_forecast(shape: Shape, update: Update, at: float, model: DurationModel) -> float:
    """cvo's forecast at ``at``: what the live display (or ``cvo upgrade status`` with the update's partial
    record) knows then: the operators done and how long they took, those waited on and since when."""
    took = {n: end - start for n, (start, end) in update.times.items() if end <= at}
    updating = {n: int(start * SECOND) for n, (start, end) in update.times.items() if start <= at < end}
    result = forecast(shape.forecast_graph, model, took, updating, int(at * SECOND), took=took)
    assert result is not None
    return result.remaining / SECOND


def bound_forecast(shape: Shape, means: dict[str, float], update: Update, at: float,
                   samples: int = BOUND_SAMPLES) -> float:
    """A lower bound for any forecast, not one a cluster could make: the median remaining time under the
    generator's own model (each operator's true mean, ±30 % uniform, one stall of 20-40 minutes on an
    operator chosen uniformly), conditioned exactly on what the update shows at ``at`` (the operators done and
    how long they took: a stall already seen, or not; the waits under way)."""
    graph = shape.forecast_graph
    rng = random.Random(1)
    names = [n for node in graph.order for n in graph.operators.get(node, ())]
    done = {n for n, (_, end) in update.times.items() if end <= at}
    waited = {n: at - start for n, (start, end) in update.times.items() if start <= at < end}
    stalled_already = any(end - start > NOISE[1] * means[n] + 1e-9 for n, (start, end) in update.times.items()
                          if end <= at)
    candidates = [n for n in names if n not in done]
    ends: list[tuple[float, float]] = []
    for _ in range(samples):
        stall = None if stalled_already or not candidates else rng.choice(candidates)
        likelihood, left = 1.0, {}
        for name in candidates:
            extra = rng.uniform(*STALL) if name == stall else 0.0
            low, high = NOISE
            if name in waited:  # its duration given the wait: the factor must exceed (wait - extra) / mean
                low = max(low, (waited[name] - extra) / means[name])
                likelihood *= max(0.0, high - low) / (NOISE[1] - NOISE[0])
                left[name] = max(0.0, means[name] * rng.uniform(min(low, high), high) + extra - waited[name])
            else:
                left[name] = means[name] * rng.uniform(low, high) + extra
        finish: dict[int, float] = {}
        for node in graph.order:
            t = max((finish[p] for p in graph.predecessors.get(node, ())), default=0.0)
            finish[node] = t + sum(left.get(n, 0.0) for n in graph.operators.get(node, ()))
        ends.append((max(finish.values()), likelihood))
    if sum(w for _, w in ends) <= 0:
        ends = [(end, 1.0) for end, _ in ends]
    ends.sort()
    total, running = sum(w for _, w in ends), 0.0
    for end, w in ends:
        running += w
        if running >= total / 2:
            return end
    return ends[-1][0]


def _history(totals: list[float]) -> list[dict[str, str]]:
    """A ClusterVersion history for oc's baseline: the current update, the completed ones, the install."""
    def entry(total: float) -> dict[str, str]:
        return {"state": "Completed", "startedTime": "2026-01-01T00:00:00Z",
                "completionTime": f"2026-01-01T{int(total // 3600):02d}:{int(total % 3600 // 60):02d}:"
                                  f"{int(total % 60):02d}Z"}
    return [{"state": "Partial"}, *[entry(t) for t in reversed(totals)], {"state": "Completed"}]


def measure(runs: int, seed: int = 5) -> dict[float, dict[str, list[float]]]:
    """Relative errors of cvo and oc at each fraction, over ``runs`` measured updates."""
    shape = corpus_shape()
    rng = random.Random(seed)
    means = operator_means(shape, rng)
    records: list[UpdateRecord] = []
    totals: list[float] = []
    errors: dict[float, dict[str, list[float]]] = {f: {"cvo": [], "oc": [], "bound": []} for f in FRACTIONS}
    for i in range(WARM_UP + runs):
        update = simulate(shape, draw(means, rng))
        if i >= WARM_UP:
            history = _history(totals[-1:])
            model = duration_model(records)
            for f in FRACTIONS:
                at = f * update.total
                true = update.total - at
                errors[f]["cvo"].append(abs(cvo_forecast(shape, update, at, model) - true) / true)
                errors[f]["oc"].append(abs(oc_estimate(update, at, history) - true) / true)
                errors[f]["bound"].append(abs(bound_forecast(shape, means, update, at) - true) / true)
        records = [*records, UpdateRecord(str(i), str(i), {n: OperatorTime(s, e) for n, (s, e) in
                                                             update.times.items()})][-MAX_RECORDS:]
        totals.append(update.total)
    return errors


def forecast_section(repeats: int) -> list[str]:
    runs = max(50, repeats * 30)
    errors = measure(runs)
    lines = [
        "## Forecast of an update's end: cvo's graph-aware forecast vs oc's estimate",
        "",
        f"Simulated upgrades of the corpus's update graph ({runs} measured after {WARM_UP} of warm-up; "
        "`bench/forecast_bench.py`): each ClusterOperator takes its own mean ±30 % (most 1–8 min, "
        f"{SLOW_OPERATORS} slow ones 15–25 min), one operator, chosen at random, stalls 20–40 min more in every "
        "update. At each point of the true duration, the median absolute error of the predicted time remaining, "
        "relative to the true time remaining (goal: cvo ≤ 15 % and at least 2× smaller than oc's). cvo forecasts "
        f"from the records of the last {MAX_RECORDS} updates (usual durations, their spread, how many operators "
        "overran in each update and by how much) and what the update shows (operators done and how long they "
        "took, waits under way), the median of simulated ends (`docs/upgrade-status.md`). *bound* is no "
        "forecast a cluster could make: the same median under the generator's own parameters (each operator's "
        "true mean, the ±30 %, the stall's range, one stall per update), conditioned exactly on what the update "
        "shows; no forecast does much better on these runs.",
        "",
        "| elapsed | cvo median error | oc median error | oc / cvo | cvo p90 | oc p90 | bound |",
        "|---|---|---|---|---|---|---|",
    ]
    met, missed = [], []
    for f in FRACTIONS:
        cvo, oc, bound = errors[f]["cvo"], errors[f]["oc"], errors[f]["bound"]
        cvo_median, oc_median = statistics.median(cvo), statistics.median(oc)
        lines.append(f"| {f:.0%} | {cvo_median:.1%} | {oc_median:.1%} | {oc_median / cvo_median:.1f}× | "
                     f"{statistics.quantiles(cvo, n=10)[-1]:.1%} | {statistics.quantiles(oc, n=10)[-1]:.1%} | "
                     f"{statistics.median(bound):.1%} |")
        if cvo_median <= 0.15 and oc_median >= 2 * cvo_median:
            met.append(f"{f:.0%}")
        else:
            why = "over 15 %" if cvo_median > 0.15 else f"oc's error only {oc_median / cvo_median:.1f}× cvo's"
            missed.append(f"{f:.0%} ({why})")
    lines += ["", f"Goal met at: {', '.join(met) or 'none'}; missed at: {', '.join(missed) or 'none'}. Early in "
              "the update the stall is still ahead in most runs, on an operator nothing can name in advance: how "
              "much it delays the end depends on which operator it hits (20–40 minutes on the critical path, "
              "less off it), which no forecast can know (see *bound*), and oc's estimate from the previous "
              "update's duration, which had a stall too, is not far off then. Later cvo knows whether the stall "
              "has happened (an operator done far beyond its usual time, or waited on past it) while oc "
              "extrapolates from the share of operators updated, which the graph's long tail (a few run levels "
              "with slow operators) makes misleading.", ""]
    return lines


if __name__ == "__main__":
    print("\n".join(forecast_section(int(sys.argv[1]) if len(sys.argv) > 1 else 3)))
