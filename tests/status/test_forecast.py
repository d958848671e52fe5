"""The graph-aware forecast: expected durations, the critical path, the recorder on a cluster."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from cvo.clock import Clock, to_rfc3339
from cvo.cluster.embedded.server import SimCluster
from cvo.runner.durations import RECORDS_REF, DurationRecorder, LiveForecast, record_progress, save_record
from cvo.runner.events import Progress, Waiting
from cvo.runner.sweep_events import decode
from cvo.status.forecast import (
    DurationModel,
    OperatorGraph,
    co_state,
    duration_model,
    expected_durations,
    forecast,
)
from cvo.status.godur import MINUTE, SECOND, to_ns
from cvo.status.update_records import (
    INSTALL,
    MAX_ATTEMPTS_KEPT,
    AttemptTime,
    OperatorTime,
    UpdateRecord,
    parse_records,
    records_configmap,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = to_ns(T0)

# node 0 (a, then b) -> node 2 (d); node 1 (c) -> node 2; node 3 (e) alone
GRAPH = OperatorGraph(operators={0: ("a", "b"), 1: ("c",), 2: ("d",), 3: ("e",)},
                      predecessors={0: (), 1: (), 2: (0, 1), 3: ()}, order=(0, 1, 2, 3))
MEANS = {"a": 300.0, "b": 600.0, "c": 1200.0, "d": 120.0, "e": 60.0}


def one_record(durations: dict[str, float]) -> DurationModel:
    """One recorded update: every operator's usual time is what it took then, with nothing to vary."""
    return duration_model([UpdateRecord("1", "x", {k: OperatorTime(0, v) for k, v in durations.items()})])


def varied_records(count: int, overrun: dict[int, tuple[str, float]] | None = None) -> list[UpdateRecord]:
    """``count`` updates of GRAPH's operators, each within ±10 % of MEANS; ``overrun``: update i had operator
    X overrun by S seconds."""
    records = []
    for i in range(count):
        factor = 0.9 + 0.2 * ((i * 7) % 11) / 10
        took = {k: v * factor for k, v in MEANS.items()}
        if overrun and i in overrun:
            name, extra = overrun[i]
            took[name] += extra
        records.append(UpdateRecord(f"4.{i}.0", f"t{i}", {k: OperatorTime(0, v) for k, v in took.items()}))
    return records


def test_the_longest_remaining_path_ends_the_update() -> None:
    # a + b = 15m, c = 20m: node 2 starts at 20m, d ends at 22m
    result = forecast(GRAPH, one_record(MEANS), done=(), updating={}, now=NOW)
    assert result is not None and result.remaining == 22 * MINUTE == result.path_remaining
    assert result.low == result.high == 22 * MINUTE and result.details() == ""
    assert [s.name for s in result.critical_path] == ["c", "d"]
    assert result.summary(NOW) == "22m remaining on the critical path, done at 2026-01-01T00:22:00Z (from 1 recorded update)"


def test_done_and_updating_operators_shorten_it() -> None:
    # c done; a done; b updating for 4 of its 10 minutes: node 0 ends at 6m, d at 8m
    result = forecast(GRAPH, one_record(MEANS), done={"a", "c"}, updating={"b": NOW - 4 * MINUTE}, now=NOW)
    assert result is not None and result.remaining == 8 * MINUTE
    assert [(s.name, s.state) for s in result.critical_path] == [("b", "updating"), ("d", "pending")]


def test_an_overdue_operator_still_needs_a_quarter_of_its_usual_time() -> None:
    result = forecast(GRAPH, one_record(MEANS), done={"a", "b", "d", "e"}, updating={"c": NOW - 60 * MINUTE}, now=NOW)
    assert result is not None and result.remaining == 5 * MINUTE  # a quarter of c's 20 minutes


def test_an_operator_without_records_gets_the_median() -> None:
    result = forecast(GRAPH, one_record({"a": 60.0, "b": 60.0, "c": 600.0}), done=(), updating={}, now=NOW)
    # d and e unknown: median(60, 60, 600) = 60 s each; c + d = 11m
    assert result is not None and result.remaining == 11 * MINUTE


def test_no_records_no_forecast() -> None:
    assert forecast(GRAPH, duration_model([]), done=(), updating={}, now=NOW) is None


def test_the_model_tells_overruns_from_variation() -> None:
    model = duration_model(varied_records(10, {2: ("a", 1800.0), 6: ("e", 1500.0)}))
    assert model.records == 10 and model.overruns_per_update == (0, 0, 1, 0, 0, 0, 1, 0, 0, 0)
    assert [round(x, -2) for x in sorted(model.excesses)] == [1500, 1800]  # beyond the medians (±10 % of 60 s, 300 s)
    assert model.usual["a"] < 320 and model.usual["e"] < 64  # the overruns are not usual
    assert 0.02 < model.spread < 0.2
    assert expected_durations(varied_records(10, {2: ("a", 1800.0)}))["a"] == model.usual["a"]


def test_the_model_needs_three_records_of_an_operator_to_call_an_overrun() -> None:
    model = duration_model(varied_records(2, {1: ("a", 1800.0)}))
    assert model.excesses == () and model.overruns_per_update == (0, 0)


def test_an_overrun_still_to_come_is_allowed_for() -> None:
    # every recorded update had one operator overrun by 30 minutes: at the start, one is still to come
    model = duration_model(varied_records(10, {i: ("abcde"[i % 5], 1800.0) for i in range(10)}))
    start = forecast(GRAPH, model, done=(), updating={}, now=NOW)
    assert start is not None and start.path_remaining < 25 * MINUTE
    assert start.remaining > start.path_remaining + 10 * MINUTE and start.allowance == start.remaining - start.path_remaining
    assert start.low < start.remaining < start.high
    assert "for overruns and variation" in start.details()
    # once an operator done is seen to have overrun, none is expected any more
    took = {"c": 1200.0 + 1800.0, "e": 60.0}
    later = forecast(GRAPH, model, done=took, updating={}, now=NOW, took=took)
    assert later is not None and later.remaining < later.path_remaining + 2 * MINUTE
    # without knowing how long the operators done took, an overrun may still be to come
    unknown = forecast(GRAPH, model, done=took, updating={}, now=NOW)
    assert unknown is not None and unknown.remaining > later.remaining


def test_an_operator_waiting_past_its_usual_time_is_overrunning() -> None:
    model = duration_model(varied_records(10, {i: ("abcde"[i % 5], 1800.0) for i in range(10)}))
    # c (20 minutes) waited on for 40: overrunning; what is left is what the recorded overruns leave
    result = forecast(GRAPH, model, done={"a", "b", "e"}, updating={"c": NOW - 40 * MINUTE}, now=NOW,
                      took={"a": 300.0, "b": 600.0, "e": 60.0})
    assert result is not None
    assert 5 * MINUTE < result.remaining < 20 * MINUTE  # not a quarter of 20m: about 50m minus 40, then d


def test_a_forecast_is_a_function_of_its_inputs() -> None:
    model = duration_model(varied_records(10, {i: ("abcde"[i % 5], 1800.0) for i in range(10)}))
    first = forecast(GRAPH, model, done={"a"}, updating={"b": NOW - MINUTE}, now=NOW, took={"a": 290.0})
    again = forecast(GRAPH, model, done={"a"}, updating={"b": NOW - MINUTE}, now=NOW, took={"a": 290.0})
    assert first == again


def test_co_state_reads_versions_and_progressing() -> None:
    cos = [{"metadata": {"name": "a"}, "status": {"versions": [{"name": "operator", "version": "2"}]}},
           {"metadata": {"name": "b"}, "status": {"versions": [{"name": "operator", "version": "1"}], "conditions": [
               {"type": "Progressing", "status": "True", "lastTransitionTime": to_rfc3339(T0)}]}},
           {"metadata": {"name": "c"}, "status": "broken"}]
    assert co_state(cos, "2") == ({"a"}, {"b": NOW})


def test_recorder_and_save_on_a_cluster() -> None:
    recorder = DurationRecorder("4.17.0", T0)
    recorder.emit(decode(T0 + timedelta(minutes=3), "operator.done",
                        {"operator": "etcd", "started": to_rfc3339(T0 + timedelta(minutes=1))}))
    recorder.emit(decode(T0 + timedelta(minutes=9), "operator.done", {"operator": "etcd", "started": "junk"}))
    recorder.emit(decode(T0 + timedelta(minutes=4), "operator.ready", {"operator": "dns"}))
    assert recorder.record.operators == {"etcd": OperatorTime(60.0, 180.0)}

    async def go() -> list[UpdateRecord]:
        cluster = SimCluster(clock=Clock(T0))
        await save_record(cluster, recorder.record)  # no namespace yet: not recorded, and not an error
        assert await cluster.get(RECORDS_REF) is None
        await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": RECORDS_REF.namespace}})
        await save_record(cluster, recorder.record)
        await save_record(cluster, recorder.record)  # the same update again: replaced, not appended
        await save_record(cluster, UpdateRecord("4.18.0", "later", {"etcd": OperatorTime(0, 240)}))
        return parse_records(await cluster.get(RECORDS_REF))

    saved = asyncio.run(go())
    assert [r.version for r in saved] == ["4.17.0", "4.18.0"]
    assert expected_durations(saved) == {"etcd": 180.0}


def test_the_running_update_keeps_a_partial_record() -> None:
    async def go() -> tuple[list[UpdateRecord], list[UpdateRecord]]:
        cluster = SimCluster(clock=Clock(T0))
        await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": RECORDS_REF.namespace}})
        await save_record(cluster, UpdateRecord("4.16.0", "before", {"etcd": OperatorTime(0, 200)}))
        recorder = DurationRecorder("4.17.0", T0)
        progress = asyncio.create_task(record_progress(cluster, recorder))
        recorder.emit(decode(T0 + timedelta(minutes=3), "operator.done",
                            {"operator": "etcd", "started": to_rfc3339(T0 + timedelta(minutes=1))}))
        for _ in range(20):  # let the task write (no time passes)
            await asyncio.sleep(0)
        running = parse_records(await cluster.get(RECORDS_REF))
        recorder.emit(decode(T0 + timedelta(minutes=5), "operator.done",
                            {"operator": "dns", "started": to_rfc3339(T0 + timedelta(minutes=4))}))
        progress.cancel()
        await asyncio.gather(progress, return_exceptions=True)
        await save_record(cluster, recorder.record)
        return running, parse_records(await cluster.get(RECORDS_REF))

    running, done = asyncio.run(go())
    assert [(r.version, r.partial) for r in running] == [("4.16.0", False), ("4.17.0", True)]
    assert running[-1].took() == {"etcd": 120.0}
    assert [(r.version, r.partial) for r in done] == [("4.16.0", False), ("4.17.0", False)]
    assert done[-1].took() == {"etcd": 120.0, "dns": 60.0}


def test_the_recorder_keeps_waits_attempts_and_the_end() -> None:
    recorder = DurationRecorder("4.16.0", T0, INSTALL)
    at = lambda minutes: T0 + timedelta(minutes=minutes)  # noqa: E731
    for n in range(30):  # 30 attempts of 2 minutes each
        recorder.emit(decode(at(2 * n), "attempt.started", {"attempt": n}))
        if n < 29:
            recorder.emit(decode(at(2 * n + 1), "attempt.failed", {"reason": "ClusterOperatorNotAvailable",
                                                                  "message": "dns " + "x" * 500}))
    recorder.emit(decode(at(1), "task.waiting", {"operator": "dns"}))
    recorder.emit(decode(at(2), "task.waiting", {"operator": "dns"}))  # the first wait counts
    recorder.emit(decode(at(3), "task.waiting", {"operator": "etcd"}))  # never done
    recorder.emit(decode(at(59), "operator.done", {"operator": "dns", "started": to_rfc3339(at(1))}))
    recorder.emit(decode(at(59), "sweep.completed", {}))
    record = recorder.record
    assert record.operators == {"dns": OperatorTime(60.0, 59 * 60.0), "etcd": OperatorTime(180.0)}
    assert record.attempt_count == 30 and len(record.attempts) == MAX_ATTEMPTS_KEPT
    assert [a.number for a in record.attempts] == [0, 1, 2, 3, *range(18, 30)]
    assert record.attempts[0] == AttemptTime(0, 0.0, 60.0, "ClusterOperatorNotAvailable", ("dns " + "x" * 500)[:200])
    assert record.attempts[-1] == AttemptTime(29, 58 * 60.0, 59 * 60.0)
    assert (record.result, record.ended_at) == ("completed", to_rfc3339(at(59)))
    back = parse_records(records_configmap([record]))
    assert back == [record]
    # an install's durations are not an update's: the forecast of an update does not learn from them
    assert expected_durations(back) == {} and expected_durations(back, INSTALL) == {"dns": 58 * 60.0}
    assert expected_durations(back, INSTALL).records == 1


def test_an_operator_without_records_is_expected_to_take_the_median() -> None:
    expected = expected_durations([UpdateRecord("1", "x", {"a": OperatorTime(0, 60), "b": OperatorTime(0, 600),
                                                           "c": OperatorTime(0, 120)})])
    assert expected.of("b") == 600.0 and expected.of("unknown") == 120.0


def test_live_forecast_follows_the_sweep() -> None:
    progress = Progress()
    now = T0 + timedelta(minutes=2)
    live = LiveForecast(GRAPH, [UpdateRecord("1", "x", {k: OperatorTime(0, v) for k, v in MEANS.items()})],
                        lambda: progress, lambda: now)
    live.emit(decode(now, "operator.done", {"operator": "a"}))
    live.emit(decode(now, "operator.done", {"operator": "c"}))
    progress.waiting["b"] = Waiting("task", "b", now - timedelta(minutes=1), error=None)  # type: ignore[arg-type]
    result = live()
    assert result is not None and result.remaining == (9 + 2) * MINUTE
    assert result.finish == to_ns(now) + 11 * MINUTE
    assert result.to_data(to_ns(now))["remainingSeconds"] == 11 * MINUTE // SECOND
    assert live.took == {"a": 0.0, "c": 0.0}  # the events carried no start: done as soon as waited on
    later = now + timedelta(seconds=2)
    assert live.__class__(GRAPH, [], lambda: progress, lambda: later)() is None  # no records, no forecast
    now = later
    assert live() is result  # the same state, two seconds on: the same forecast (its end does not move)
    now = later + timedelta(seconds=LiveForecast.REFRESH // SECOND)
    assert live() is not result


def test_the_live_display_shows_the_forecast() -> None:
    from cvo.cli.progress import LiveDisplay

    progress = Progress(done=3, total=10)
    now = T0 + timedelta(minutes=2)
    live = LiveForecast(GRAPH, [UpdateRecord("1", "x", {k: OperatorTime(0, v) for k, v in MEANS.items()})],
                        lambda: progress, lambda: now)
    text = _render_text(LiveDisplay(lambda: progress, lambda: now, "upgrade to 2", live))
    assert "forecast: 22m remaining on the critical path, done at 2026-01-01T00:24:00Z (from 1 recorded update)" in text
    assert "forecast" not in _render_text(LiveDisplay(lambda: progress, lambda: now, "upgrade to 2"))


def _render_text(display: object) -> str:
    from rich.console import Console

    console = Console(width=200, record=True)
    display.console = console  # type: ignore[attr-defined]  # the display fits its console's width
    console.print(display._render())  # type: ignore[attr-defined]
    return console.export_text()
