"""The reader of Prometheus' /api/v1/alerts answer (cvo.status.recommend_alerts) under any input: alerts, or
AlertsInvalid with one line; and the command over any alerts file: oc's text, or one error line with exit 2."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvo.cli.main import main
from cvo.monitoring.answers import Alert
from cvo.status.recommend import alert_conditions
from cvo.status.recommend_alerts import MAX_ALERTS_BYTES, AlertsInvalid, parse_alerts
from tests.support.recommend_objects import DEGRADED

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20)
labels = st.dictionaries(st.sampled_from(["alertname", "severity", "namespace", "poddisruptionbudget",
                                          "openShiftUpdatePrecheck", "other"]) | st.text(max_size=10),
                         st.sampled_from(["ClusterOperatorDown", "critical", "true", "KubeNodeNotReady",
                                          "PodDisruptionBudgetAtLimit", ""]) | st.text(max_size=20), max_size=5)
annotations = st.dictionaries(st.sampled_from(["summary", "description", "message", "runbook_url"]),
                              st.text(max_size=30), max_size=4)
alerts = st.builds(Alert, labels=labels, annotations=annotations,
                   state=st.sampled_from(["firing", "pending", "inactive", ""]),
                   active_at=st.sampled_from(["2025-01-28T23:00:54.844366438Z", ""]), value=st.sampled_from(["1e+00", ""]))


def answer(found: list[Alert]) -> bytes:
    return orjson.dumps({"status": "success", "data": {"alerts": [
        {"labels": dict(a.labels), "annotations": dict(a.annotations), "state": a.state, "activeAt": a.active_at,
         "value": a.value, "partialResponseStrategy": "WARN"} for a in found]}})


def one_line_or_alerts(data: bytes) -> tuple[Alert, ...] | None:
    try:
        return parse_alerts(data)
    except AlertsInvalid as err:
        assert str(err) and "\n" not in str(err) and len(str(err)) < 600
        return None


@given(st.binary(max_size=300))
def test_any_bytes_are_alerts_or_one_line(data: bytes) -> None:
    one_line_or_alerts(data)


@given(json_values)
def test_any_json_is_alerts_or_one_line(value: Any) -> None:
    one_line_or_alerts(orjson.dumps(value))
    one_line_or_alerts(orjson.dumps({"status": "success", "data": {"alerts": value}}))
    one_line_or_alerts(orjson.dumps({"data": {"alerts": [value]}}))
    one_line_or_alerts(orjson.dumps({"data": {"alerts": [{"labels": value, "annotations": value, "state": value}]}}))


@given(st.lists(alerts, max_size=8))
def test_an_answer_reads_back_as_its_alerts_and_groups_without_error(found: list[Alert]) -> None:
    read = parse_alerts(answer(found))
    assert list(read) == found
    conditions = alert_conditions(read)
    firing = [a for a in found if a.labels.get("alertname") and a.state != "pending"]
    assert len([c for c in conditions if c.status == "False"]) <= len(firing)
    assert all(c.acceptance_name for c in conditions if c.status != "True")


def test_nulls_read_as_absent_as_in_go() -> None:
    assert parse_alerts(b'{"data": {"alerts": [{"labels": null, "annotations": null, "state": null}]}}') == (Alert(),)


def test_the_size_cap() -> None:
    with pytest.raises(AlertsInvalid, match="over 32 MiB"):
        parse_alerts(b" " * (MAX_ALERTS_BYTES + 1))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.one_of(st.binary(max_size=200), json_values.map(orjson.dumps),
                         st.lists(alerts, max_size=4).map(answer)))
def test_the_command_over_any_alerts_file(content: bytes, tmp_path_factory: pytest.TempPathFactory,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path_factory.mktemp("alerts") / "alerts.json"
    path.write_bytes(content)
    capsys.readouterr()
    code = main(["upgrade", "recommend", "--from-file", str(DEGRADED), "--alerts-file", str(path)])
    out, err = capsys.readouterr()
    if code == 2:
        assert out == "" and len(err.splitlines()) == 1 and err.startswith(f"error: {path}: ")
    else:
        assert code == 0 and "Updates to 4.16:" in out and "Traceback" not in err
