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
import math
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
from cvo.status.node_forecast import DRAINING, REBOOTING, NodeProgress, PoolProgress, node_model  # noqa: E402
from cvo.status.update_records import (  # noqa: E402
    MAX_RECORDS,
    NodeTime,
    OperatorTime,
    PoolTime,
    UpdateRecord,
)
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


def error_rows(errors: dict[float, dict[str, list[float]]]) -> tuple[list[str], list[str], list[str]]:
    """The table's rows (with *bound* when measured), and the fractions where the goal is met and missed (why)."""
    rows, met, missed = [], [], []
    for f in FRACTIONS:
        cvo, oc = errors[f]["cvo"], errors[f]["oc"]
        cvo_median, oc_median = statistics.median(cvo), statistics.median(oc)
        bound = f" {statistics.median(errors[f]['bound']):.1%} |" if "bound" in errors[f] else ""
        rows.append(f"| {f:.0%} | {cvo_median:.1%} | {oc_median:.1%} | {oc_median / cvo_median:.1f}× | "
                    f"{statistics.quantiles(cvo, n=10)[-1]:.1%} | {statistics.quantiles(oc, n=10)[-1]:.1%} |{bound}")
        if cvo_median <= 0.15 and oc_median >= 2 * cvo_median:
            met.append(f"{f:.0%}")
        else:
            why = "over 15 %" if cvo_median > 0.15 else f"oc's error only {oc_median / cvo_median:.1f}× cvo's"
            missed.append(f"{f:.0%} ({why})")
    return rows, met, missed


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
    rows, met, missed = error_rows(errors)
    lines += rows
    lines += ["", f"Goal met at: {', '.join(met) or 'none'}; missed at: {', '.join(missed) or 'none'}. Early in "
              "the update the stall is still ahead in most runs, on an operator nothing can name in advance: how "
              "much it delays the end depends on which operator it hits (20–40 minutes on the critical path, "
              "less off it), which no forecast can know (see *bound*), and oc's estimate from the previous "
              "update's duration, which had a stall too, is not far off then. Later cvo knows whether the stall "
              "has happened (an operator done far beyond its usual time, or waited on past it) while oc "
              "extrapolates from the share of operators updated, which the graph's long tail (a few run levels "
              "with slow operators) makes misleading.", ""]
    return lines + node_section(runs)


if __name__ == "__main__":
    print("\n".join(forecast_section(int(sys.argv[1]) if len(sys.argv) > 1 else 3)))


# --- the node phases ------------------------------------------------------------------------------------
#
# The same updates of the corpus's graph, now with the machine-config operator's part: a master pool of 3
# nodes one at a time (the machine-config ClusterOperator reports its version when the masters are done, so its
# duration is theirs) and worker pools that start with it and go on after the ClusterVersion completes.  Each
# cluster has its own mean drain (1-3 min) and reboot (3-7 min); a node takes them ±30 %; in a third of the
# updates a PodDisruptionBudget holds one worker node's drain 10-40 minutes (until an admin acts).

CLUSTERS = (("3 workers", {"worker": (3, 1)}), ("30 workers + 10 infra", {"worker": (30, 3), "infra": (10, 1)}),
            ("120 workers, 10 %", {"worker": (120, 12)}))  # pool: (nodes, maxUnavailable)
MASTERS = 3
PDB_SHARE = 1 / 3
PDB_HOLD = (600.0, 2400.0)
OC_DRAIN, OC_REBOOT = 600.0, 300.0  # oc's node estimates: +10m draining, +5m updating or rebooting (workerpool.go)


@dataclass
class PoolRun:
    """One pool in one update: each node's (picked, drained, done), seconds from the update's start."""

    width: int
    nodes: dict[str, tuple[float, float, float]]


def roll_pool(names: list[str], width: int, start: float, phases: list[tuple[float, float]]) -> PoolRun:
    """The machine-config operator's rollout: ``width`` nodes at a time, the next picked when one is done."""
    slots = [start] * width
    nodes = {}
    for name, (drain, reboot) in zip(names, phases, strict=True):
        begin = heapq.heappop(slots)
        nodes[name] = (begin, begin + drain, begin + drain + reboot)
        heapq.heappush(slots, begin + drain + reboot)
    return PoolRun(width, nodes)


@dataclass
class NodeUpdate:
    update: Update  # the ClusterOperators' part (machine-config's time: the masters')
    pools: dict[str, PoolRun]

    @property
    def total(self) -> float:
        return max([self.update.total, *(end for p in self.pools.values() for _, _, end in p.nodes.values())])


def node_phases(pools: dict[str, tuple[int, int]], drain: float, reboot: float, rng: random.Random,
                ) -> dict[str, list[tuple[float, float]]]:
    out = {name: [(drain * rng.uniform(*NOISE), reboot * rng.uniform(*NOISE)) for _ in range(count)]
           for name, (count, _) in {"master": (MASTERS, 1), **pools}.items()}
    if rng.random() < PDB_SHARE:
        held = rng.choice(sorted(n for n in out if n != "master"))
        i = rng.randrange(len(out[held]))
        d, r = out[held][i]
        out[held][i] = (d + rng.uniform(*PDB_HOLD), r)
    return out


def simulate_nodes(shape: Shape, durations: dict[str, float], pools: dict[str, tuple[int, int]],
                   phases: dict[str, list[tuple[float, float]]]) -> NodeUpdate:
    masters = roll_pool([f"master-{i}" for i in range(MASTERS)], 1, 0.0, phases["master"])
    durations = {**durations, MACHINE_CONFIG: max(end for _, _, end in masters.nodes.values())}
    update = simulate(shape, durations)
    start = update.times[MACHINE_CONFIG][0]
    runs = {"master": roll_pool([f"master-{i}" for i in range(MASTERS)], 1, start, phases["master"])}
    for name, (count, width) in pools.items():
        runs[name] = roll_pool([f"{name}-{i:03d}" for i in range(count)], width, start, phases[name])
    return NodeUpdate(update, runs)


def node_record(i: int, run: NodeUpdate, at: float | None = None) -> UpdateRecord:
    """The record cvo keeps of ``run`` (only what happened by ``at``: the running update's partial record)."""
    limit = math.inf if at is None else at
    ops = {n: OperatorTime(s, e if e <= limit else None) for n, (s, e) in run.update.times.items() if s <= limit}
    pools = {}
    for name, p in run.pools.items():
        nodes = {n: NodeTime(s, d if d <= limit else None, e if e <= limit else None)
                 for n, (s, d, e) in p.nodes.items() if s <= limit}
        pools[name] = PoolTime(p.width, len(p.nodes), min((t.started for t in nodes.values()), default=None),
                               None, nodes)
    return UpdateRecord(str(i), "2026-01-01T00:00:00Z", ops, partial=at is not None, pools=pools)


def pool_state(run: NodeUpdate, at: float) -> list[PoolProgress]:
    """What the pools show at ``at``: nodes done, under way (in which phase, since when), still to go."""
    out = []
    for name, p in run.pools.items():
        running, pending, started = [], 0, False
        for node, (s, d, e) in sorted(p.nodes.items()):
            if s > at:
                pending += 1
                continue
            started = True
            if e > at:
                draining = at < d
                running.append(NodeProgress(node, DRAINING if draining else REBOOTING,
                                            int((s if draining else d) * SECOND)))
        out.append(PoolProgress(name, p.width, False, tuple(running), pending, started))
    return out


def cvo_node_forecast(shape: Shape, run: NodeUpdate, at: float, model: DurationModel,
                      records: list[UpdateRecord], i: int) -> float:
    """cvo's forecast at ``at``, as ``cvo upgrade status`` makes it: the ClusterOperators as before, the pools from
    the nodes recorded in earlier updates and in this one so far."""
    update = run.update
    took = {n: end - start for n, (start, end) in update.times.items() if end <= at}
    updating = {n: int(start * SECOND) for n, (start, end) in update.times.items() if start <= at < end}
    nodes = node_model([*records, node_record(i, run, at)])
    result = forecast(shape.forecast_graph, model, took, updating, int(at * SECOND), took=took,
                      pools=pool_state(run, at), nodes=nodes)
    assert result is not None
    return result.remaining / SECOND


def oc_node_estimate(run: NodeUpdate, at: float, history: list[dict[str, str]]) -> float:
    """The most oc's screen tells of the update's end at ``at``: its control plane's Est. Time Remaining while the
    ClusterOperators update, and the node estimates it shows (+10m draining, +5m rebooting), with the same per
    node for each node still pending (oc prints "?"), ``maxUnavailable`` at a time: oc gives no whole-update
    estimate that counts the nodes; this is the one its own figures would make."""
    update = run.update
    control_plane = oc_estimate(update, at, history) if at < update.total else 0.0
    worst = 0.0
    for name, p in run.pools.items():
        if name == "master":
            continue
        slots = [0.0] * p.width
        running = [(d, e) for s, d, e in p.nodes.values() if s <= at < e]
        for i, (d, _) in enumerate(running[:p.width]):
            slots[i] = OC_DRAIN if at < d else OC_REBOOT
        heapq.heapify(slots)
        for s, _, _ in p.nodes.values():
            if s > at:
                heapq.heapreplace(slots, slots[0] + OC_DRAIN + OC_REBOOT)
        worst = max(worst, max(slots))
    return max(control_plane, worst)


def measure_nodes(runs: int, seed: int = 7) -> dict[float, dict[str, list[float]]]:
    """Relative errors of cvo and oc at each fraction, over ``runs`` updates spread over :data:`CLUSTERS`."""
    shape = corpus_shape()
    errors: dict[float, dict[str, list[float]]] = {f: {"cvo": [], "oc": []} for f in FRACTIONS}
    for c, (_, pools) in enumerate(CLUSTERS):
        rng = random.Random(seed + c)
        means = operator_means(shape, rng)
        drain, reboot = rng.uniform(60, 180), rng.uniform(180, 420)
        records: list[UpdateRecord] = []
        totals: list[float] = []
        share = runs // len(CLUSTERS) + (1 if c < runs % len(CLUSTERS) else 0)
        for i in range(WARM_UP + share):
            run = simulate_nodes(shape, draw(means, rng), pools, node_phases(pools, drain, reboot, rng))
            if i >= WARM_UP:
                history = _history(totals[-1:])
                model = duration_model(records)
                for f in FRACTIONS:
                    at = f * run.total
                    true = run.total - at
                    errors[f]["cvo"].append(abs(cvo_node_forecast(shape, run, at, model, records, i) - true) / true)
                    errors[f]["oc"].append(abs(oc_node_estimate(run, at, history) - true) / true)
            records = [*records, node_record(i, run)][-MAX_RECORDS:]
            totals.append(run.update.total)
    return errors


def node_section(runs: int) -> list[str]:
    errors = measure_nodes(runs)
    lines = [
        "### With the node phases",
        "",
        f"The same updates ({runs} measured, spread over three clusters: "
        f"{'; '.join(name for name, _ in CLUSTERS)}; {WARM_UP} of warm-up each) with the machine-config operator's "
        f"part: {MASTERS} masters one at a time (the machine-config ClusterOperator's duration is theirs), worker "
        "pools that start with it and go on after the ClusterVersion completes, each node a drain and a reboot "
        "(the cluster's means, 1-3 and 3-7 min, ±30 %), and in a third of the updates one worker node's drain held "
        "10-40 min by a PodDisruptionBudget. The true end is the last node's. cvo forecasts the pools from the nodes "
        "its records saw (`cvo/status/node_forecast.py`); oc shows no estimate of an update's end that counts the "
        "nodes, so *oc* here is the most its screen gives: the control plane's Est. Time Remaining while the "
        "operators update, and its node estimates (+10m draining, +5m rebooting, the same for each node still "
        "pending, which oc shows as ?), maxUnavailable at a time.",
        "",
        "| elapsed | cvo median error | oc median error | oc / cvo | cvo p90 | oc p90 |",
        "|---|---|---|---|---|---|",
    ]
    rows, met, missed = error_rows(errors)
    lines += rows
    lines += ["", f"Goal (issue 25: ≤ 15 % and ≥ 2× better than oc at 50 % and 75 %) met at: {', '.join(met) or 'none'}; "
              f"missed at: {', '.join(missed) or 'none'}.", ""]
    return lines
