"""The graph-aware forecast: records, expected durations, the critical path, the recorder on a cluster."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from cvo.clock import Clock, to_rfc3339
from cvo.cluster.embedded.server import SimCluster
from cvo.runner.durations import RECORDS_REF, DurationRecorder, LiveForecast, save_record
from cvo.runner.events import Event, Progress, Waiting
from cvo.status.forecast import (
    MAX_RECORDS,
    OperatorGraph,
    OperatorTime,
    UpdateRecord,
    co_state,
    expected_durations,
    forecast,
    parse_records,
    records_configmap,
)
from cvo.status.godur import MINUTE, SECOND, to_ns

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = to_ns(T0)

# node 0 (a, then b) -> node 2 (d); node 1 (c) -> node 2; node 3 (e) alone
GRAPH = OperatorGraph(operators={0: ("a", "b"), 1: ("c",), 2: ("d",), 3: ("e",)},
                      predecessors={0: (), 1: (), 2: (0, 1), 3: ()}, order=(0, 1, 2, 3))
MEANS = {"a": 300.0, "b": 600.0, "c": 1200.0, "d": 120.0, "e": 60.0}


def test_the_longest_remaining_path_ends_the_update() -> None:
    # a + b = 15m, c = 20m: node 2 starts at 20m, d ends at 22m
    result = forecast(GRAPH, MEANS, done=(), updating={}, now=NOW, records=3)
    assert result is not None and result.remaining == 22 * MINUTE
    assert [s.name for s in result.critical_path] == ["c", "d"]
    assert result.summary(NOW) == "22m remaining on the critical path, done at 2026-01-01T00:22:00Z (from 3 recorded updates)"


def test_done_and_updating_operators_shorten_it() -> None:
    # c done; a done; b updating for 4 of its 10 minutes: node 0 ends at 6m, d at 8m
    result = forecast(GRAPH, MEANS, done={"a", "c"}, updating={"b": NOW - 4 * MINUTE}, now=NOW, records=1)
    assert result is not None and result.remaining == 8 * MINUTE
    assert [(s.name, s.state) for s in result.critical_path] == [("b", "updating"), ("d", "pending")]


def test_an_overdue_operator_still_needs_a_quarter_of_its_mean() -> None:
    result = forecast(GRAPH, MEANS, done={"a", "b", "d", "e"}, updating={"c": NOW - 60 * MINUTE}, now=NOW, records=1)
    assert result is not None and result.remaining == 5 * MINUTE  # a quarter of c's 20 minutes


def test_an_operator_without_records_gets_the_median() -> None:
    result = forecast(GRAPH, {"a": 60.0, "b": 60.0, "c": 600.0}, done=(), updating={}, now=NOW, records=1)
    # d and e unknown: median(60, 60, 600) = 60 s each; c + d = 11m
    assert result is not None and result.remaining == 11 * MINUTE


def test_no_records_no_forecast() -> None:
    assert forecast(GRAPH, {}, done=(), updating={}, now=NOW, records=0) is None


def test_expected_durations_are_means_of_finished_operators() -> None:
    records = [UpdateRecord("1", "x", {"a": OperatorTime(10, 70), "b": OperatorTime(0, None)}),
               UpdateRecord("2", "y", {"a": OperatorTime(0, 120)})]
    assert expected_durations(records) == {"a": 90.0}


def test_records_round_trip_and_keep_the_most_recent() -> None:
    records = [UpdateRecord(f"4.{i}.0", f"t{i}", {"a": OperatorTime(i, i + 1.5)}) for i in range(MAX_RECORDS + 3)]
    configmap = records_configmap(records)
    parsed = parse_records(configmap)
    assert [r.version for r in parsed] == [f"4.{i}.0" for i in range(3, MAX_RECORDS + 3)]
    assert parsed[-1].operators["a"].duration == 1.5


json_values = st.recursive(st.none() | st.integers() | st.floats() | st.text(max_size=5),
                           lambda x: st.lists(x, max_size=3) | st.dictionaries(
                               st.sampled_from(["operators", "started", "done", "a"]), x, max_size=3), max_leaves=15)


@given(st.text(max_size=200) | json_values.map(json.dumps))  # NaN, huge integers: json writes what orjson refuses
def test_any_configmap_data_parses_or_is_ignored(raw: str) -> None:
    for record in parse_records({"data": {"records.json": raw}}):
        for times in record.operators.values():
            assert isinstance(times.started, float)


def test_co_state_reads_versions_and_progressing() -> None:
    cos = [{"metadata": {"name": "a"}, "status": {"versions": [{"name": "operator", "version": "2"}]}},
           {"metadata": {"name": "b"}, "status": {"versions": [{"name": "operator", "version": "1"}], "conditions": [
               {"type": "Progressing", "status": "True", "lastTransitionTime": to_rfc3339(T0)}]}},
           {"metadata": {"name": "c"}, "status": "broken"}]
    assert co_state(cos, "2") == ({"a"}, {"b": NOW})


def test_recorder_and_save_on_a_cluster() -> None:
    recorder = DurationRecorder("4.17.0", T0)
    recorder.emit(Event(T0 + timedelta(minutes=3), "operator.done",
                        {"operator": "etcd", "started": to_rfc3339(T0 + timedelta(minutes=1))}))
    recorder.emit(Event(T0 + timedelta(minutes=9), "operator.done", {"operator": "etcd", "started": "junk"}))
    recorder.emit(Event(T0 + timedelta(minutes=4), "operator.ready", {"operator": "dns"}))
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


def test_live_forecast_follows_the_sweep() -> None:
    progress = Progress()
    now = T0 + timedelta(minutes=2)
    live = LiveForecast(GRAPH, [UpdateRecord("1", "x", {k: OperatorTime(0, v) for k, v in MEANS.items()})],
                        lambda: progress, lambda: now)
    live.emit(Event(now, "operator.done", {"operator": "a"}))
    live.emit(Event(now, "operator.done", {"operator": "c"}))
    progress.waiting["b"] = Waiting("task", "b", now - timedelta(minutes=1), error=None)  # type: ignore[arg-type]
    result = live()
    assert result is not None and result.remaining == (9 + 2) * MINUTE
    assert result.finish == to_ns(now) + 11 * MINUTE
    assert result.to_data(to_ns(now))["remainingSeconds"] == 11 * MINUTE // SECOND


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
