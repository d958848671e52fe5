"""Events capture: ``--events FILE`` writes a sweep's events as JSON lines; the reader takes them (and
``--log-format json`` output) back, and refuses hostile input with one line naming the file and line."""

from __future__ import annotations

import io
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvo.cli.main import main
from cvo.cli.progress import LogReporter
from cvo.log import configure
from cvo.report import events_io
from cvo.report.events_io import EventsError, EventsWriter, event_line, read_events, read_stream
from cvo.runner.sweep_events import BY_NAME, Event, UnknownEvent, decode
from tests.support.helpers import PAYLOADS

T0 = datetime(2026, 1, 1, tzinfo=UTC)
OLD = str(PAYLOADS / "demo-4.16.0")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)
field_names = st.text(min_size=1, max_size=12) | st.sampled_from(events_io.RESERVED)
times = st.integers(0, 10**7).map(lambda s: T0 + timedelta(seconds=s, microseconds=s % 7))
events = st.builds(
    UnknownEvent, times,
    st.text(min_size=1, max_size=30).filter(lambda s: s.strip() == s and "\n" not in s and s not in BY_NAME),
    st.dictionaries(field_names, json_values, max_size=5))



@settings(max_examples=200, deadline=None)
@given(st.lists(events, max_size=8))
def test_writer_and_reader_round_trip(stream: list[Event]) -> None:
    raw = b"".join(event_line(e) for e in stream)
    if not stream:
        with pytest.raises(EventsError, match="no sweep events"):
            read_stream(io.BytesIO(raw), "x.jsonl")
        return
    back = read_stream(io.BytesIO(raw), "x.jsonl")
    assert back.skipped == 0
    assert [(e.time, e.name, e.fields) for e in back.events] == [(e.time, e.name, e.fields) for e in stream]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=80) | st.builds(lambda d: json.dumps(d).encode(), json_values), max_size=6))
def test_any_bytes_give_events_or_one_line_error(lines: list[bytes]) -> None:
    raw = b"\n".join(lines)
    try:
        result = read_stream(io.BytesIO(raw), "hostile.jsonl")
    except EventsError as err:
        message = str(err)
        assert message.startswith("hostile.jsonl") and "\n" not in message
    else:
        assert result.events and all(isinstance(e.name, str) and e.time.tzinfo is not None for e in result.events)


@pytest.mark.parametrize(("text", "message"), [
    ('{"event": "a", "time": "2026-01-01T00:00:00+00:00"}\n{"event": "b", "time": \n', "bad.jsonl:2: not a JSON object"),
    ('[1, 2]\n', "bad.jsonl: no sweep events"),
    ('{"event": "a", "time": "yesterday"}\n', "bad.jsonl:1: the time is not an ISO-8601 time: 'yesterday'"),
    ('{"event": "a", "time": 5}\n', "bad.jsonl:1: the time is not an ISO-8601 text: 5"),
    ('{"event": 7, "time": "2026-01-01T00:00:00"}\n', "bad.jsonl:1: the event name is not a short text: 7"),
    ('{"event": "a", "sim_time": "2026-01-01T00:00:00"}\n{', "bad.jsonl:2: not a JSON object"),
    ("", "bad.jsonl: no sweep events"),
    ("plain text only\n", "bad.jsonl: no sweep events"),
])
def test_bad_files_name_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(EventsError) as err:
        read_events(path)
    assert str(err.value).startswith(str(path).rsplit("/", 1)[0]) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_size_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = event_line(decode(T0, "task.started", {"task": "x" * 100}))
    path = tmp_path / "big.jsonl"
    path.write_bytes(good * 3)
    monkeypatch.setattr(events_io, "MAX_LINE_BYTES", 64)
    with pytest.raises(EventsError, match=r"big.jsonl:1: the line is longer than 0 KiB"):
        read_events(path)
    monkeypatch.setattr(events_io, "MAX_LINE_BYTES", 1024)
    monkeypatch.setattr(events_io, "MAX_EVENTS", 2)
    with pytest.raises(EventsError, match=r"big.jsonl:3: more than 2 events"):
        read_events(path)
    monkeypatch.setattr(events_io, "MAX_FILE_BYTES", len(good) * 2)
    with pytest.raises(EventsError, match=r"big.jsonl: \d+ bytes is more than"):
        read_events(path)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(EventsError, match="cannot read the events file: No such file"):
        read_events(tmp_path / "nope.jsonl")
    with pytest.raises(EventsError, match="is a directory"):
        read_events(tmp_path)


def test_log_format_json_output_reads_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """stderr of ``--log-format json -vv``: the sweep's events, its other lines skipped."""
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    configure("json", 2)
    sent = [decode(T0, "sweep.started", {"version": "1.0", "mode": "install"}),
            decode(T0 + timedelta(seconds=3), "task.started", {"task": 'configmap "a/b" (1 of 2)', "node": 0}),
            decode(T0 + timedelta(seconds=90), "operator.ready", {"operator": "dns", "waited": 87.0})]
    from cvo.log import get_logger

    get_logger("cvo.cli").info("cluster", backend="embedded")  # another logger's line: no sim_time
    reporter = LogReporter()
    for event in sent:
        reporter.emit(event)
    stream.write("error: the sweep failed\n")  # the command's own last line
    got = read_stream(io.BytesIO(stream.getvalue().encode()), "stderr.log")
    assert [(e.time, e.name, e.fields) for e in got.events] == [(e.time, e.name, e.fields) for e in sent]
    assert got.skipped == 2


def test_install_writes_its_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "install.jsonl"
    assert main(["install", OLD, "--state", "none", "--events", str(path)]) == 0
    got = read_events(path).events
    names = [e.name for e in got]
    assert names[0] == "sweep.started" and "sweep.completed" in names
    assert names[-1] == "cluster.requests" and got[-1].fields["verbs"]["create"] > 100
    started = [e for e in got if e.name == "node.started"]
    assert started and all({"runlevel", "component", "after"} <= set(e.fields) for e in started)
    tasks = [e for e in got if e.name.startswith("task.")]
    assert tasks and all(isinstance(e.fields.get("node"), int) for e in tasks)
    ready = [e for e in got if e.name == "operator.ready"]
    assert ready and all(e.fields["task"].startswith('clusteroperator "') for e in ready)
    assert [e.time for e in got] == sorted(e.time for e in got)


def test_events_file_that_cannot_be_written_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code = main(["install", OLD, "--state", "none", "--events", str(tmp_path / "no" / "such" / "dir.jsonl")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [f"error: {tmp_path}/no/such/dir.jsonl: cannot write the events file: "
                                "No such file or directory"]


def test_writer_flushes_every_event(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with EventsWriter(path) as writer:
        writer.emit(UnknownEvent(T0, "newer.event", {"time": "a field named time"}))
        assert read_events(path).events[0].fields == {"time": "a field named time"}


def test_replay_writes_one_scenarios_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "slow.jsonl"
    assert main(["replay", "-q", str(PAYLOADS.parent / "scenarios" / "upgrade-slow-operator.yaml"),
                 "--events", str(path)]) == 0
    got = read_events(path).events
    assert got[0].name == "scenario.started" and got[-1].name == "scenario.finished"
    ready = [e for e in got if e.name == "operator.ready" and e.fields["operator"] == "dns"]
    first_wait = next(e for e in got if e.name == "task.waiting" and e.fields["operator"] == "dns")
    assert len(ready) == 1 and ready[0].time - first_wait.time > timedelta(minutes=40)  # over many attempts
    requests = [e for e in got if e.name == "cluster.requests"]
    assert len(requests) == 1 and requests[0].fields["verbs"]["update_status"] > 0


def test_replay_events_needs_one_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenarios = PAYLOADS.parent / "scenarios"
    capsys.readouterr()
    code = main(["replay", str(scenarios / "clean-install.yaml"), str(scenarios / "job-barrier.yaml"),
                 "--events", str(tmp_path / "e.jsonl")])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: --events: one events file takes the replay of one scenario, not 2"]
    assert not (tmp_path / "e.jsonl").exists()


def _sweep(writer: EventsWriter, at: int, version: str) -> None:
    t = T0 + timedelta(minutes=at)
    writer.emit(decode(t, "sweep.started", {"version": version, "mode": "reconcile"}))
    writer.emit(decode(t + timedelta(seconds=1), "task.started", {"task": 'configmap "a/b" (1 of 1)', "node": 0}))
    writer.emit(decode(t + timedelta(seconds=2), "sweep.completed", {"version": version}))


def test_a_controllers_file_is_appended_to_and_numbered_by_sweep(tmp_path: Path) -> None:
    """``cvo run --events``: each line says its sweep; a restarted controller continues the count."""
    path = tmp_path / "run.jsonl"
    with EventsWriter(path, append=True) as writer:
        writer.emit(decode(T0, "controller.started", {}))
        _sweep(writer, 1, "a")
        _sweep(writer, 2, "b")
    with EventsWriter(path, append=True) as writer:
        _sweep(writer, 3, "c")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["sweep"] for line in lines] == [0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    for number, version in ((1, "a"), (2, "b"), (3, "c"), (-1, "c"), (-2, "b"), (-3, "a")):
        events = read_events(path, number).events
        assert [e.name for e in events] == ["sweep.started", "task.started", "sweep.completed"]
        assert {e.fields["version"] for e in events if "version" in e.fields} == {version}
        assert all("sweep" not in e.fields for e in events)  # the line's, not the event's
    for number in (4, -4):
        with pytest.raises(EventsError) as err:
            read_events(path, number)
        assert str(err.value) == f"{path}: no sweep {number}: the file has 3 sweep(s) (sweep.started events)"


def test_one_sweep_is_read_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.jsonl"
    with EventsWriter(path, append=True) as writer:
        for n in range(4):
            _sweep(writer, n, str(n))
    monkeypatch.setattr(events_io, "MAX_EVENTS", 3)  # the limit counts the events kept: one sweep's
    assert len(read_events(path, 2).events) == len(read_events(path, -1).events) == 3
    with pytest.raises(EventsError, match=r"run.jsonl:4: more than 3 events"):
        read_events(path)
    with path.open("ab") as f:
        f.write(b'{"event": "broken"\n')  # after the sweeps asked for: not read
    assert len(read_events(path, 1).events) == 3
    with pytest.raises(EventsError, match=r"run.jsonl:13: not a JSON object"):
        read_events(path, -1)


def test_report_picks_a_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.jsonl"
    with EventsWriter(path, append=True) as writer:
        _sweep(writer, 1, "4.16.0")
        _sweep(writer, 5, "4.16.3")
    capsys.readouterr()
    assert main(["report", str(path), "--sweep", "last", "-o", "text"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cvo sweep report: reconcile 4.16.3 (sweep -1)\n") and "4.16.0" not in out
