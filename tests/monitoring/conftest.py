"""The Prometheus client against hostile servers and against Debian's real prometheus (tests.support.prometheus).

``real_prometheus``: one prometheus per module, scraping ``exporter`` every second (each test sets its own
series and waits for it with ``wait_for``); ``real_prometheus_tls``: the same behind TLS with a test CA."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.prometheus import Exporter, PrometheusServer


@pytest.fixture(scope="module")
def exporter() -> Iterator[Exporter]:
    exp = Exporter().start()
    try:
        yield exp
    finally:
        exp.stop()


@pytest.fixture(scope="module")
def real_prometheus(tmp_path_factory: pytest.TempPathFactory, exporter: Exporter) -> Iterator[PrometheusServer]:
    with PrometheusServer(tmp_path_factory.mktemp("prometheus"), [exporter.target]) as server:
        yield server


@pytest.fixture(scope="module")
def real_prometheus_tls(tmp_path_factory: pytest.TempPathFactory, exporter: Exporter) -> Iterator[PrometheusServer]:
    with PrometheusServer(tmp_path_factory.mktemp("prometheus-tls"), [exporter.target], tls=True) as server:
        yield server
