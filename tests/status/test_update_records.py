"""The update-duration records' storage format: written, read back, bounded, and any ConfigMap data taken."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.status.forecast import duration_model
from cvo.status.update_records import (
    FIRST_ATTEMPTS_KEPT,
    INSTALL,
    MAX_ATTEMPTS_KEPT,
    MAX_MESSAGE,
    MAX_RECORDS,
    MAX_RECORDS_BYTES,
    RECORDS_KEY,
    UPDATE,
    AttemptTime,
    OperatorTime,
    UpdateRecord,
    of_mode,
    parse_records,
    records_configmap,
)


def test_records_round_trip_and_keep_the_most_recent() -> None:
    records = [UpdateRecord(f"4.{i}.0", f"t{i}", {"a": OperatorTime(i, i + 1.5)}) for i in range(MAX_RECORDS + 3)]
    running = UpdateRecord("5.0.0", "now", {"a": OperatorTime(0, 2)}, partial=True)
    configmap = records_configmap([*records, running])
    parsed = parse_records(configmap)
    assert [r.version for r in parsed] == [*(f"4.{i}.0" for i in range(3, MAX_RECORDS + 3)), "5.0.0"]
    assert parsed[-2].operators["a"].duration == 1.5 and not parsed[-2].partial
    assert parsed[-1].partial and parsed[-1].took() == {"a": 2.0}
    assert duration_model(parsed).records == MAX_RECORDS  # the partial record is not a recorded update


def test_records_stay_small() -> None:
    big = [UpdateRecord(f"4.{i}.0", "t", {f"operator-{k}-{'x' * 200}": OperatorTime(k, k + 1) for k in range(200)})
           for i in range(MAX_RECORDS)]
    configmap = records_configmap(big)
    assert len(configmap["data"][RECORDS_KEY]) <= MAX_RECORDS_BYTES
    kept = parse_records(configmap)
    assert 1 <= len(kept) < MAX_RECORDS and kept[-1].version == f"4.{MAX_RECORDS - 1}.0"


def test_a_record_without_a_mode_is_an_update_and_modes_are_kept_apart() -> None:
    raw = json.dumps([{"version": "1", "startedAt": "t", "operators": {}},
                      {"version": "2", "startedAt": "t", "mode": INSTALL, "operators": {}},
                      {"version": "3", "startedAt": "t", "mode": "sideways", "operators": {}}])
    parsed = parse_records({"data": {RECORDS_KEY: raw}})
    assert [r.version for r in of_mode(parsed)] == ["1", "3"] and [r.version for r in of_mode(parsed, INSTALL)] == ["2"]


seconds = st.floats(0, 1e6, allow_nan=False).map(lambda f: round(f, 3))
texts = st.text(max_size=MAX_MESSAGE)
attempts = st.builds(AttemptTime, st.integers(0, 100), seconds, seconds | st.none(), texts, texts)
records = st.builds(
    UpdateRecord, texts, texts, st.dictionaries(texts, st.builds(OperatorTime, seconds, seconds | st.none()), max_size=5),
    st.booleans(), mode=st.sampled_from([UPDATE, INSTALL]), attempts=st.lists(attempts, max_size=MAX_ATTEMPTS_KEPT),
    attempt_count=st.integers(0, 100), ended_at=st.text(max_size=64), result=st.sampled_from(["", "completed", "timeout"]))


def _as_written(record: UpdateRecord) -> UpdateRecord:
    """What a record reads back as: attempts only with a count, a failure's message only with its reason, the
    result only with an end."""
    kept = [AttemptTime(a.number, a.started, a.ended, a.reason, a.message if a.reason else "") for a in record.attempts]
    return UpdateRecord(record.version, record.started_at, record.operators, record.partial, record.mode,
                        kept if record.attempt_count else [], record.attempt_count,
                        record.ended_at, record.result if record.ended_at else "")


@settings(max_examples=200, deadline=None)
@given(st.lists(records, max_size=4))
def test_written_records_read_back(written: list[UpdateRecord]) -> None:
    complete = [r for r in written if not r.partial]
    partial = [r for r in written if r.partial][-1:]
    assert parse_records(records_configmap(written)) == [_as_written(r) for r in [*complete, *partial]]


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                           lambda x: st.lists(x, max_size=3) | st.dictionaries(
                               st.sampled_from(["operators", "started", "done", "a", "attempts", "attempt",
                                                "attemptCount", "ended", "reason", "mode", "partial", "endedAt"]),
                               x, max_size=4), max_leaves=20)


@given(st.text(max_size=200) | json_values.map(json.dumps))  # NaN, huge integers: json writes what orjson refuses
def test_any_configmap_data_parses_or_is_ignored(raw: str) -> None:
    for record in parse_records({"data": {RECORDS_KEY: raw}}):
        assert isinstance(record.version, str) and record.mode in (UPDATE, INSTALL)
        assert isinstance(record.attempt_count, int) and record.attempt_count >= 0
        assert len(record.attempts) <= MAX_ATTEMPTS_KEPT and len(record.ended_at) <= 64
        for times in record.operators.values():
            assert isinstance(times.started, float) and (times.done is None or isinstance(times.done, float))
        for attempt in record.attempts:
            assert isinstance(attempt.number, int) and isinstance(attempt.started, float)
            assert len(attempt.reason) <= MAX_MESSAGE and len(attempt.message) <= MAX_MESSAGE


def test_no_more_attempts_are_read_than_a_record_keeps() -> None:
    assert 0 < FIRST_ATTEMPTS_KEPT < MAX_ATTEMPTS_KEPT  # the recorder keeps the first ones and the last ones
    raw = json.dumps([{"version": "1", "startedAt": "t", "operators": {}, "attemptCount": 40,
                       "attempts": [{"attempt": n, "started": n} for n in range(40)]}])
    parsed = parse_records({"data": {RECORDS_KEY: raw}})
    assert parsed[0].attempt_count == 40 and len(parsed[0].attempts) == MAX_ATTEMPTS_KEPT
