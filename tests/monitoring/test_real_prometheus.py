"""PromQL risks evaluated for real: Debian's prometheus scrapes a local exporter whose gauge decides the
risk; each test waits until the query answers before it asserts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cvo.clock import Clock
from cvo.monitoring.answers import MonitoringError
from cvo.monitoring.client import MonitoringOptions, Prometheus
from cvo.updates.conditions import Registry
from cvo.updates.evaluate import evaluate
from cvo.updates.model import ConditionalUpdate, MatchingRule, Release, Risk
from tests.support.prometheus import Exporter, PrometheusServer

QUERY = 'max(cvo_test_degraded{operator="etcd"})'


def risk(query: str) -> Risk:
    return Risk("EtcdDegraded", "etcd is degraded: updating now is risky.", "https://example.com/etcd",
                (MatchingRule("PromQL", query),))


def recommended(url: str, query: str, **options: str) -> dict[str, str]:
    async def main() -> dict[str, str]:
        registry = Registry(Prometheus(MonitoringOptions(url, **options)), Clock())
        update = ConditionalUpdate(Release("4.17.1", "quay.io/r@sha256:1"), (risk(query),))
        got = await evaluate(None, [update], registry, set(), False)
        return dict(got.conditional[0].conditions[0])
    return asyncio.run(main())


def test_a_promql_risk_turns_the_update_not_recommended_and_back(real_prometheus: PrometheusServer,
                                                                 exporter: Exporter) -> None:
    exporter.set("cvo_test_degraded", 1, operator="etcd")
    real_prometheus.wait_for(QUERY, 1)
    got = recommended(real_prometheus.url, QUERY)
    assert (got["status"], got["reason"], got["message"]) == (
        "False", "EtcdDegraded", "etcd is degraded: updating now is risky. https://example.com/etcd")
    exporter.set("cvo_test_degraded", 0, operator="etcd")
    real_prometheus.wait_for(QUERY, 0)
    got = recommended(real_prometheus.url, QUERY)
    assert (got["status"], got["reason"]) == ("True", "NotExposedToRisks")


def test_two_series_and_no_series_fail_to_evaluate(real_prometheus: PrometheusServer, exporter: Exporter) -> None:
    exporter.set("cvo_test_pair", 1, operator="a")
    exporter.set("cvo_test_pair", 1, operator="b")
    real_prometheus.wait_for("count(cvo_test_pair)", 2)
    got = recommended(real_prometheus.url, "cvo_test_pair")
    assert (got["status"], got["reason"]) == ("Unknown", "EvaluationFailed")
    assert "(invalid PromQL result length must be one, but is 2)" in got["message"]
    got = recommended(real_prometheus.url, "cvo_test_never_exported")
    assert "(invalid PromQL result length must be one, but is 0)" in got["message"]


def test_a_string_a_scalar_and_a_parse_error(real_prometheus: PrometheusServer) -> None:
    assert "(invalid PromQL result type is string, not vector)" in recommended(real_prometheus.url, '"text"')["message"]
    assert "(invalid PromQL result type is scalar, not vector)" in recommended(real_prometheus.url, "1")["message"]
    message = recommended(real_prometheus.url, "sum(")["message"]
    assert "(executing PromQL query: bad_data: " in message


def test_a_value_other_than_zero_or_one(real_prometheus: PrometheusServer, exporter: Exporter) -> None:
    exporter.set("cvo_test_two", 2)
    real_prometheus.wait_for("cvo_test_two", 2)
    assert "(invalid PromQL result (must be 0 or 1): 2)" in recommended(real_prometheus.url, "cvo_test_two")["message"]


def test_tls_with_the_ca_bundle_and_without(real_prometheus_tls: PrometheusServer, exporter: Exporter,
                                            tmp_path: Path) -> None:
    exporter.set("cvo_test_tls", 1)
    real_prometheus_tls.wait_for("cvo_test_tls", 1)
    token = tmp_path / "token"
    token.write_text("t0ken")
    got = recommended(real_prometheus_tls.url, "cvo_test_tls", ca_file=str(real_prometheus_tls.ca_path),
                      token_file=str(token))
    assert got["status"] == "False"
    got = recommended(real_prometheus_tls.url, "cvo_test_tls")
    assert got["reason"] == "EvaluationFailed" and "CERTIFICATE_VERIFY_FAILED" in got["message"]


def test_alerts_from_a_real_prometheus(real_prometheus: PrometheusServer) -> None:
    assert asyncio.run(Prometheus(MonitoringOptions(real_prometheus.url)).alerts()) == ()
    with pytest.raises(MonitoringError, match="failed to get alerts"):
        asyncio.run(Prometheus(MonitoringOptions(real_prometheus.url + "/nowhere")).alerts())
