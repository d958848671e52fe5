"""The fuzz targets of cvo.monitoring (tests/support/fuzz_monitoring.py), bounded for make test; make fuzz runs
them longer."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings

from tests.support import fuzz_monitoring as t

BOUNDED = settings(max_examples=80, derandomize=True, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@BOUNDED
@given(t.TARGETS["promql-answer"][0])
@example(b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1e400"]}]}}')
@example(b'{"status":"success","data":{"resultType":"vector","result":[{"metric":[],"value":[1,"1"]}]}}')
@example(b"[" * 5000)
def test_promql_answer(body: bytes) -> None:
    t.promql_answer_target(body)


@BOUNDED
@given(t.TARGETS["alerts-answer"][0])
@example(b'{"status":"success","data":{"alerts":[{"labels":{"alertname":1},"annotations":[]}]}}')
def test_alerts_answer(body: bytes) -> None:
    t.alerts_answer_target(body)


@settings(BOUNDED, max_examples=30)
@given(t.TARGETS["prometheus-response"][0])
@example({"status": 200, "headers": [("Content-Length", "999999")], "body": b'{"status":"success"}'})
@example({"status": 301, "headers": [("Location", "http://127.0.0.1:1/")], "body": b""})
@example({"status": 200, "headers": [], "body": b'{"status":"success","data":{"resultType":"vector","result":'
                                                 b'[{"metric":{},"value":[1,"1"]}]}}'})
def test_prometheus_response(spec: Any) -> None:
    t.prometheus_response_target(spec)
