"""A forecast of an update's end that knows the task graph and the recorded durations (beyond oc's estimate).

oc estimates the remaining time from the previous update's total duration and the share of
ClusterOperators already updated.  cvo records, on the cluster, how long each ClusterOperator took to
reach the new version in each update (:mod:`cvo.status.update_records`, a ConfigMap the sweeps write,
``docs/upgrade-status.md``; installs are recorded too, and kept apart), and walks the
release's task graph: every node runs its ClusterOperator waits in order, after its predecessors, so the
update ends when the longest remaining path does.  The same records give ``cvo plan -o html --recorded``
its durations (:func:`expected_durations`) and ``cvo report`` its timeline.

What the records say (:func:`duration_model`):

- each operator's *usual* duration: the median of its recorded durations that were not overruns, and how
  much usual durations vary around it (one spread, pooled over the operators, on a log scale);
- *overruns*: a recorded duration more than :data:`OVERRUN_SIGMAS` standard deviations above the
  operator's median (on a log scale, the deviation estimated robustly from all operators' records, so that
  the overruns themselves do not widen it), at least :data:`OVERRUN_FLOOR` times the median and
  :data:`OVERRUN_MIN_SECONDS` over it, is an operator stalling.  How many overruns each recorded
  update had and by how much they overran are kept, for any operator: a stall is not a property of one
  operator, and nothing in the records says which one stalls next.

The forecast (:func:`forecast`) simulates the rest of the update :data:`SAMPLES` times (a fixed seed: the
same state gives the same forecast).  Each operator still to finish takes its usual duration, varied by the
spread; the overruns still to come are drawn from the recorded updates' counts, given what the current
update has shown (overruns seen in operators already done or waiting past their usual time, and how many
operators are left to overrun), each on an operator chosen at random among those that have not shown
how long they take and an excess drawn from the recorded ones.  An operator already waited on for a while
takes what is left of a duration longer than that wait: drawn given the wait, so one past its usual time
is likely overrunning, and its likelihood weighs the simulation.  The forecast is the median of the
simulated ends (as likely earlier as later), with the 10th and 90th percentiles as a range; the critical
path shown is the one the usual durations give.

Pure functions: the records, the graph's shape, which operators are done (and how long they took, when
known) and which are updating since when, and ``now`` (nanoseconds) go in; a :class:`Forecast` comes out,
or ``None`` without records.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from cvo.payload.graph import Mode, wait_for
from cvo.status.godur import SECOND, parse_time, rfc3339, short_duration
from cvo.status.node_forecast import MACHINE_CONFIG, NodeModel, PoolProgress, sample_pool
from cvo.status.update_records import UPDATE, UpdateRecord

MIN_SHARE_LEFT = 0.25  # an operator waited on past every plausible duration still needs this share of its usual one
SAMPLES = 500  # simulated ends of the update per forecast
POOL_SAMPLES = 100  # simulated remaining times of each MachineConfigPool per forecast
SEED = 20260101  # the simulation's seed: a forecast is a function of its inputs
OVERRUN_SIGMAS = 2.5  # an overrun is this many (robust) standard deviations above the operator's median ...
OVERRUN_FLOOR = 1.25  # ... and at least this many times it ...
OVERRUN_MIN_SECONDS = 60.0  # ... and at least this much longer
MIN_RATIOS = 10  # durations of operators with 3 or more records needed to tell overruns from variation
_NORMAL = statistics.NormalDist()


def _samples(records: Iterable[UpdateRecord]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {}
    for record in records:
        if record.partial:
            continue
        for name, seconds in record.took().items():
            samples.setdefault(name, []).append(seconds)
    return samples


class Expected(dict[str, float]):
    """Each operator's expected duration in seconds: its usual recorded duration (the mapping), and for an
    operator without records the median of the others (:meth:`of`).  ``records``: how many records."""

    records: int = 0

    def of(self, name: str) -> float:
        if name in self:
            return self[name]
        return statistics.median(self.values()) if self else 0.0


def expected_durations(records: Iterable[UpdateRecord], mode: str = UPDATE) -> Expected:
    """Each operator's usual duration in seconds in the completed records of ``mode``: the median of its
    recorded durations, overruns left out (:func:`duration_model`).  The one source of expected durations:
    the forecast's critical path and the estimated critical path of ``cvo plan -o html --recorded``."""
    model = duration_model(list(records), mode)
    expected = Expected(model.usual)
    expected.records = model.records
    return expected


@dataclass(frozen=True)
class DurationModel:
    """What the completed records say about how long operators take (:func:`duration_model`)."""

    usual: dict[str, float]  # seconds: the median of each operator's recorded durations that were not overruns
    spread: float  # how usual durations vary around the median: a standard deviation of their logarithm
    overrun_ratio: float  # a duration beyond usual × this (and OVERRUN_MIN_SECONDS more) is an overrun
    excesses: tuple[float, ...]  # seconds beyond the usual duration, of every recorded overrun
    overruns_per_update: tuple[int, ...]  # how many overruns each recorded update had
    records: int

    def overran(self, name: str, seconds: float) -> bool:
        usual = self.usual.get(name)
        return usual is not None and seconds > usual * self.overrun_ratio and seconds - usual >= OVERRUN_MIN_SECONDS


def duration_model(records: Sequence[UpdateRecord], mode: str = UPDATE) -> DurationModel:
    """The model of the completed records of ``mode`` (updates, unless asked for installs)."""
    complete = [r for r in records if not r.partial and r.mode == mode]
    samples = _samples(complete)
    median = {name: statistics.median(values) for name, values in samples.items()}
    logs = [math.log(d / median[name]) for name, values in samples.items() if len(values) >= 3 and median[name] > 0
            for d in values if d > 0]
    ratio = math.inf
    if len(logs) >= MIN_RATIOS:
        ratio = max(OVERRUN_FLOOR, math.exp(OVERRUN_SIGMAS * _robust_sigma(logs)))
    judged = {name for name, values in samples.items() if len(values) >= 3}
    first = DurationModel(median, 0.0, ratio, (), (), len(complete))
    usual_samples: dict[str, list[float]] = {}
    excesses: list[float] = []
    counts: list[int] = []
    for record in complete:
        count = 0
        for name, seconds in record.took().items():
            if name in judged and first.overran(name, seconds):
                count += 1
                excesses.append(seconds - median[name])
            else:
                usual_samples.setdefault(name, []).append(seconds)
        counts.append(count)
    usual = {name: statistics.median(usual_samples.get(name) or values) for name, values in samples.items()}
    logs = [math.log(d / usual[name]) for name, values in usual_samples.items() if len(values) >= 2
            and usual[name] > 0 for d in values if d > 0]
    spread = _robust_sigma(logs) if len(logs) >= MIN_RATIOS else 0.0
    return DurationModel(usual, spread, ratio, tuple(excesses), tuple(counts), len(complete))


def _robust_sigma(deviations: Sequence[float]) -> float:
    """A standard deviation from the median absolute deviation: what a normal distribution's would be, and
    unmoved by a minority of outliers."""
    return 1.4826 * statistics.median(abs(x) for x in deviations)


@dataclass(frozen=True)
class OperatorGraph:
    """The task graph reduced to what the forecast needs: each node's ClusterOperator waits, in order."""

    operators: dict[int, tuple[str, ...]]
    predecessors: dict[int, tuple[int, ...]]
    order: tuple[int, ...]  # topological
    places: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)  # run level, component


def operator_graph(graph: nx.DiGraph[int], mode: Mode = Mode.UPDATE) -> OperatorGraph:
    operators, places = {}, {}
    for node, attrs in graph.nodes(data=True):
        names = []
        tasks = attrs.get("tasks") or []
        for task in tasks:
            wait = wait_for(task.manifest, mode)
            if wait is not None and wait.kind == "ClusterOperator":
                names.append(wait.name)
        operators[node] = tuple(names)
        places[node] = (tasks[0].runlevel, tasks[0].component) if tasks else (None, None)
    predecessors = {node: tuple(sorted(graph.predecessors(node))) for node in graph.nodes}
    return OperatorGraph(operators, predecessors, tuple(nx.lexicographical_topological_sort(graph)), places)


@dataclass(frozen=True)
class Step:
    """An operator on the critical path: done, updating or pending, its usual duration, when it ends."""

    name: str
    state: str
    expected: int  # nanoseconds
    finish: int  # nanoseconds since the epoch


@dataclass(frozen=True)
class PoolForecast:
    """A MachineConfigPool's part of the forecast: its nodes still to update and when it is likely done."""

    name: str
    nodes_left: int
    remaining: int | None  # nanoseconds (the median); None: not counted, nothing moves until the admin acts
    held: str = ""  # why not counted: "paused", or "held" (a maxUnavailable that lets no node update)

    @property
    def paused(self) -> bool:
        return self.remaining is None


@dataclass
class Forecast:
    finish: int  # nanoseconds since the epoch: now + the median simulated remaining time
    remaining: int  # nanoseconds
    critical_path: list[Step]
    records: int
    path_remaining: int = 0  # nanoseconds: the critical path's end with every operator taking its usual time
    low: int = 0  # nanoseconds remaining: the 10th percentile of the simulated ends
    high: int = 0  # and the 90th
    control_plane: int = 0  # nanoseconds: the median end of the ClusterOperators' part alone
    pools: list[PoolForecast] = field(default_factory=list)  # the pools with nodes still to update

    @property
    def last_pool(self) -> PoolForecast | None:
        """The pool the update is likely to end with, when it ends after the ClusterOperators."""
        running = [p for p in self.pools if p.remaining is not None]
        last = max(running, key=lambda p: (p.remaining or 0, p.name), default=None)
        return last if last is not None and (last.remaining or 0) > self.control_plane else None

    def summary(self, now: int) -> str:
        remaining = short_duration(max(0, self.finish - now) // SECOND * SECOND)
        count = f"{self.records} recorded update" + ("" if self.records == 1 else "s")
        last = self.last_pool
        if last is None and not self.pools:
            return f"{remaining} remaining on the critical path, done at {rfc3339(self.finish)} (from {count})"
        control_plane = (f"control plane {short_duration(self.control_plane // SECOND * SECOND)}"
                         if self.control_plane >= SECOND else "control plane done")
        where = (f"when pool {last.name} is done ({last.nodes_left} node{'' if last.nodes_left == 1 else 's'} "
                 f"to go; {control_plane})" if last is not None else "when the control plane is done")
        for why, words in (("paused", "paused pool{} {} not counted"),
                           ("held", "pool{} {} not counted: its maxUnavailable lets no node update")):
            names = [p.name for p in self.pools if p.held == why]
            if names:
                where += "; " + words.format("" if len(names) == 1 else "s", ", ".join(names))
        return f"{remaining} remaining, done at {rfc3339(self.finish)} {where} (from {count})"

    @property
    def allowance(self) -> int:
        """What the forecast adds to the critical path of usual durations: overruns to come, and variation."""
        return max(0, self.remaining - self.path_remaining)

    def details(self) -> str:
        """The line under the critical path: the allowance beyond it, and the likely range."""
        if self.high - self.low < 60 * SECOND and self.allowance < 60 * SECOND:
            return ""
        return (f"Beyond the usual durations: {short_duration(self.allowance // SECOND * SECOND)} for overruns and "
                f"variation; likely {short_duration(self.low // SECOND * SECOND)} to "
                f"{short_duration(self.high // SECOND * SECOND)} remaining (10th to 90th percentile)\n")

    def to_data(self, now: int) -> dict[str, Any]:
        return {"estimatedCompletedAt": rfc3339(self.finish), "remaining": short_duration(max(0, self.remaining)),
                "controlPlaneRemainingSeconds": round(self.control_plane / SECOND),
                "pools": [{"name": p.name, "nodesLeft": p.nodes_left, "paused": p.paused,
                           "remainingSeconds": None if p.remaining is None else round(p.remaining / SECOND)}
                          for p in self.pools],
                "remainingSeconds": round(self.remaining / SECOND), "records": self.records,
                "remainingP10Seconds": round(self.low / SECOND), "remainingP90Seconds": round(self.high / SECOND),
                "criticalPathRemainingSeconds": round(self.path_remaining / SECOND),
                "criticalPath": [{"name": s.name, "state": s.state, "expectedSeconds": round(s.expected / SECOND),
                                  "finishAt": rfc3339(s.finish)} for s in self.critical_path]}


def forecast(og: OperatorGraph, model: DurationModel, done: Iterable[str], updating: Mapping[str, int],
             now: int, took: Mapping[str, float] | None = None, samples: int = SAMPLES,
             pools: Sequence[PoolProgress] = (), nodes: NodeModel | None = None) -> Forecast | None:
    """When the update ends: the median of :data:`SAMPLES` simulated ends of the graph's nodes still to run
    and of the pools' nodes still to update (:mod:`cvo.status.node_forecast`).

    ``done``: operators at the new version, ``took``: how long those of them the caller knows took (seconds);
    ``updating``: operators being waited on, and since when (nanoseconds).  An operator without a record
    usually takes the median of the others' usual durations.  ``pools``: the MachineConfigPools now,
    forecast from ``nodes`` (the recorded nodes' phases; without them the pools are left out).
    """
    if not model.usual:
        return None
    done_set = set(done)
    default = statistics.median(model.usual.values())
    path, path_end = _usual_path(og, model, done_set, updating, now, default)
    if path_end is None:
        return None
    rolling = [p for p in pools if p.left and not p.paused and p.width > 0] if nodes is not None and nodes.usable else []
    ends = _simulate(og, model, done_set, took or {}, updating, now, default, max(1, samples), rolling, nodes)
    overall = [(max((co, *pool_ends)), w) for co, pool_ends, w in ends]
    remaining = round(_quantile(overall, 0.5) * SECOND)
    per_pool = [PoolForecast(p.name, p.left, round(_quantile([(e[i], w) for _, e, w in ends], 0.5) * SECOND))
                for i, p in enumerate(rolling)]
    per_pool += [PoolForecast(p.name, p.left, None, "paused" if p.paused else "held") for p in pools
                 if p.left and (p.paused or p.width <= 0)]
    return Forecast(now + remaining, remaining, path, model.records, path_end - now,
                    round(_quantile(overall, 0.1) * SECOND), round(_quantile(overall, 0.9) * SECOND),
                    round(_quantile([(co, w) for co, _, w in ends], 0.5) * SECOND), per_pool)


def _usual_path(og: OperatorGraph, model: DurationModel, done: set[str], updating: Mapping[str, int], now: int,
                default: float) -> tuple[list[Step], int | None]:
    """The longest remaining path with every operator taking its usual duration (an updating one what is left
    of it, and never less than :data:`MIN_SHARE_LEFT` of it): what the critical path table shows."""
    finish: dict[int, int] = {}
    via: dict[int, int | None] = {}
    steps: dict[int, list[Step]] = {}
    for node in og.order:
        start, via[node] = now, None
        for pred in og.predecessors.get(node, ()):
            if finish[pred] > start:
                start, via[node] = finish[pred], pred
        t = start
        node_steps = []
        for name in og.operators.get(node, ()):
            if name in done:
                continue
            usual = int(model.usual.get(name, default) * SECOND)
            if name in updating:
                left = max(usual - (now - updating[name]), int(usual * MIN_SHARE_LEFT))
                state = "updating"
            else:
                left, state = usual, "pending"
            t += left
            node_steps.append(Step(name, state, usual, t))
        finish[node], steps[node] = t, node_steps
    if not finish:
        return [], None
    last = max(og.order, key=lambda n: (finish[n], -n))
    path: list[Step] = []
    step: int | None = last
    while step is not None:
        path[:0] = steps[step]
        step = via[step]
    return path, finish[last]


def _simulate(og: OperatorGraph, model: DurationModel, done: set[str], took: Mapping[str, float],
              updating: Mapping[str, int], now: int, default: float, samples: int,
              pools: Sequence[PoolProgress] = (), nodes: NodeModel | None = None,
              ) -> list[tuple[float, tuple[float, ...], float]]:
    """Simulated remaining times (seconds) of the update's ClusterOperators and of each pool in ``pools``, each
    with its likelihood given the waits seen.  A pool not started yet starts when the machine-config
    ClusterOperator does (its operator renders the pools' new configs then)."""
    rng = random.Random(SEED)
    names = list(dict.fromkeys(n for node in og.order for n in og.operators.get(node, ())))
    waited = {name: max(0.0, (now - updating[name]) / SECOND) for name in names if name in updating and name not in done}
    known = [n for n in names if n in done and n in took]
    overrunning = {n for n, w in waited.items() if n in model.usual and model.overran(n, w)}
    seen = sum(model.overran(n, took[n]) for n in known) + len(overrunning)
    resolved = len(known) + len(overrunning)
    open_ = [n for n in names if n not in overrunning and not (n in done and n in took)]
    counts, weights = [], []
    if model.excesses:
        for k in model.overruns_per_update:  # the overruns still to come, given those seen and those still possible
            if seen <= k <= seen + len(open_) and k <= len(names):
                counts.append(k - seen)
                weights.append(math.comb(len(names) - resolved, k - seen) / math.comb(len(names), k))
    plan = [(node, og.predecessors.get(node, ()), [n for n in og.operators.get(node, ()) if n not in done])
            for node in og.order]
    ends: list[tuple[float, tuple[float, ...], float]] = []
    mco_started = MACHINE_CONFIG in done or MACHINE_CONFIG in updating
    # each pool's own simulated remaining times, fewer than the graph's (a pool of hundreds of nodes varies
    # little), from a generator of their own: taken in turn by the graph's samples
    pool_rng = random.Random(SEED + 1)
    pool_draws = [[sample_pool(pool_rng, pool, nodes, now) for _ in range(min(samples, POOL_SAMPLES))]
                  for pool in pools] if nodes is not None else [[] for _ in pools]
    for _ in range(samples):
        to_come = rng.choices(counts, weights)[0] if counts and sum(weights) > 0 else 0
        over = overrunning | set(rng.sample(open_, to_come)) if to_come else overrunning
        likelihood = 1.0
        left: dict[str, float] = {}
        for name in names:
            if name in done:
                continue
            usual = model.usual.get(name, default)
            excess = rng.choice(model.excesses) if name in over and model.excesses else 0.0
            if name in waited:
                duration, p = _given_wait(rng, usual, model.spread, excess, waited[name])
                likelihood *= p
                left[name] = duration - waited[name]
            else:
                left[name] = usual * math.exp(model.spread * rng.gauss(0.0, 1.0)) + excess
        finish: dict[int, float] = {}
        end = 0.0
        mco_start = 0.0
        for node, preds, ops in plan:
            t = max((finish[p] for p in preds), default=0.0)
            for name in ops:
                if name == MACHINE_CONFIG and not mco_started:
                    mco_start = t
                t += left[name]
            finish[node] = t
            end = max(end, t)
        pool_ends = tuple((0.0 if pool.started else mco_start) + draws[len(ends) % len(draws)]
                          for pool, draws in zip(pools, pool_draws, strict=True))
        ends.append((end, pool_ends, likelihood))
    if sum(w for _, _, w in ends) <= 0:
        ends = [(end, pool_ends, 1.0) for end, pool_ends, _ in ends]
    return ends


def _given_wait(rng: random.Random, usual: float, spread: float, excess: float, wait: float) -> tuple[float, float]:
    """An operator's whole duration (usual × variation + ``excess``) given that it has been waited on for
    ``wait`` seconds, and how likely that wait was; past every plausible duration: the wait and
    :data:`MIN_SHARE_LEFT` of the usual duration more, hardly likely."""
    needed = wait - excess  # the usual part must exceed this
    if needed <= 0:
        return usual * math.exp(spread * rng.gauss(0.0, 1.0)) + excess, 1.0
    if spread > 0:
        z = math.log(needed / usual) / spread
        below = _NORMAL.cdf(z)
        if below < 1 - 1e-9:
            u = below + rng.random() * (1 - below)
            return usual * math.exp(spread * _NORMAL.inv_cdf(min(u, 1 - 1e-12))) + excess, 1 - below
    elif usual > needed:
        return usual + excess, 1.0
    return wait + usual * MIN_SHARE_LEFT, 1e-9


def _quantile(weighted: list[tuple[float, float]], q: float) -> float:
    """The weighted ``q`` quantile of ``(value, weight)`` pairs."""
    ordered = sorted(weighted)
    total = sum(w for _, w in ordered)
    running = 0.0
    for value, w in ordered:
        running += w
        if running >= q * total:
            return max(0.0, value)
    return max(0.0, ordered[-1][0]) if ordered else 0.0


def co_state(cos: Sequence[Mapping[str, Any]], target: str) -> tuple[set[str], dict[str, int]]:
    """From ClusterOperators: which are at ``target``, and which are updating (Progressing=True) since when."""
    done: set[str] = set()
    updating: dict[str, int] = {}
    for co in cos:
        meta = co.get("metadata") or {}
        name = meta.get("name") if isinstance(meta, Mapping) else None
        status = co.get("status") or {}
        if not isinstance(name, str) or not isinstance(status, Mapping):
            continue
        versions = status.get("versions")
        if isinstance(versions, list) and any(isinstance(v, Mapping) and v.get("name") == "operator" and v.get("version") == target for v in versions):
            done.add(name)
            continue
        conditions = status.get("conditions")
        for c in conditions if isinstance(conditions, list) else []:
            if isinstance(c, Mapping) and c.get("type") == "Progressing" and c.get("status") == "True":
                since = parse_time(c.get("lastTransitionTime"))
                if since is not None:
                    updating[name] = since
    return done, updating
