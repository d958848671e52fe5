"""The CVO's monitoring flags: options from them, one error line for bad ones (cvo run refuses them first)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cvo.cli.common import UsageError
from cvo.cli.main import main
from cvo.cli.monitoring_flags import add_monitoring_flags, condition_registry, monitoring_options
from cvo.clock import Clock
from cvo.monitoring.client import MonitoringOptions, Prometheus
from cvo.updates.conditions import PromQL


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_monitoring_flags(parser)
    return parser.parse_args(list(argv))


def test_no_url_no_monitoring() -> None:
    assert monitoring_options(parse()) is None
    registry = condition_registry(None, Clock())
    promql = registry.conditions["PromQL"].condition  # type: ignore[attr-defined]
    assert isinstance(promql, PromQL) and promql.prometheus is None


def test_options(tmp_path: Path) -> None:
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("t")
    ca.write_text("")
    got = monitoring_options(parse("--metrics-url", "http://127.0.0.1:9090", "--metrics-token-file", str(token),
                                   "--metrics-ca-file", str(ca), "--metrics-timeout", "5"))
    assert got == MonitoringOptions("http://127.0.0.1:9090", str(token), str(ca), 5.0)
    assert monitoring_options(parse("--metrics-url", "https://t:9091", "--metrics-ca-bundle-file", str(ca))) == \
        MonitoringOptions("https://t:9091", "", str(ca))
    promql = condition_registry(got, Clock()).conditions["PromQL"].condition  # type: ignore[attr-defined]
    assert isinstance(promql.prometheus, Prometheus)


@pytest.mark.parametrize(("argv", "error"), [
    (["--metrics-token-file", "x"], "--metrics-token-file and --metrics-ca-bundle-file need --metrics-url"),
    (["--metrics-url", "thanos:9091"], "--metrics-url: error parsing promql url 'thanos:9091': want http(s)://HOST[:PORT][/PATH]"),
    (["--metrics-url", "http://h", "--metrics-token-file", "/nonexistent/token"],
     "--metrics-token-file: /nonexistent/token: no such file"),
    (["--metrics-url", "http://h", "--metrics-timeout", "0"], "--metrics-timeout: 0 is not a positive number of seconds"),
])
def test_bad_flags(argv: list[str], error: str) -> None:
    with pytest.raises(UsageError) as err:
        monitoring_options(parse(*argv))
    assert str(err.value) == error


def test_cvo_run_refuses_bad_monitoring_flags_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--state", str(tmp_path / "c.json"), "--metrics-url", "nope"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().splitlines() == [
        "error: --metrics-url: error parsing promql url 'nope': want http(s)://HOST[:PORT][/PATH]"]
