"""``promtool test rules`` on series cvo itself exports.

A test describes what cvo's ``/metrics`` answers at every scrape (an exposition, or :data:`DOWN` when the
scrape fails, or :data:`GONE` when there is no target); :func:`input_series` turns those scrapes into
promtool's ``input_series`` as a Prometheus scraping cvo would have stored them: the target's labels
added (those the Prometheus Operator's ServiceMonitor gives: ``job``, ``namespace``, ``endpoint``, …), an
``up`` series per scrape, and a stale marker when a series disappears from a scrape.  :func:`run_promtool`
writes the test file and runs Debian's promtool on it; a missing promtool fails the test (``make
monitoring-tools`` installs it).
"""

from __future__ import annotations

import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

RULES = (Path(__file__).resolve().parents[2] / "manifests" / "controller" / "monitoring" / "prometheus"
         / "cluster-version-operator.rules.yaml")
# What a ServiceMonitor on cvo's Service (manifests/controller/03_service.yaml) attaches to every series.
TARGET = {"job": "cluster-version-operator", "namespace": "openshift-cluster-version", "endpoint": "metrics",
          "service": "cluster-version-operator", "instance": "10.128.0.7:9099",
          "pod": "cluster-version-operator-6b5f8d7c9-x2x7q", "container": "cluster-version-operator"}
INTERVAL = 30  # seconds: the ServiceMonitor's interval, and the rules' evaluation interval here


class _Down:
    """The target is there but the scrape fails: ``up`` 0, cvo's series go stale."""


class _Gone:
    """No target at all (the Service or its endpoints went away): no ``up`` either."""


DOWN, GONE = _Down(), _Gone()
Scrape = str | _Down | _Gone


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is not installed: run `make monitoring-tools` (Debian's prometheus package)")
    return path


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def series_name(name: str, labels: Mapping[str, str]) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def parse_scrape(exposition: str) -> dict[str, float]:
    """One scrape as Prometheus stores it: series name (with the target's labels) -> value.  A label the
    exposition sets that the target also sets is kept as ``exported_LABEL`` (``honor_labels: false``)."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            labels = {(f"exported_{k}" if k in TARGET else k): v for k, v in sample.labels.items()}
            out[series_name(sample.name, {**labels, **TARGET})] = float(sample.value)
    return out


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def input_series(scrapes: Sequence[Scrape]) -> list[dict[str, str]]:
    """promtool's input_series for scrapes taken every :data:`INTERVAL` seconds from time 0."""
    stored: list[dict[str, float]] = []
    for scrape in scrapes:
        if isinstance(scrape, str):
            stored.append({**parse_scrape(scrape), series_name("up", TARGET): 1.0})
        elif isinstance(scrape, _Down):
            stored.append({series_name("up", TARGET): 0.0})
        else:
            stored.append({})
    names = sorted({name for scrape in stored for name in scrape})
    out = []
    for name in names:
        values, present = [], False
        for scrape in stored:
            if name in scrape:
                values.append(_number(scrape[name]))
                present = True
            else:
                values.append("stale" if present else "_")
                present = False
        out.append({"series": name, "values": " ".join(values)})
    return out


@dataclass(frozen=True)
class Expect:
    """One ``alert_rule_test``: at ``at`` seconds, ``alert`` has exactly these alerts (labels, annotations)."""

    at: int
    alert: str
    alerts: Sequence[tuple[Mapping[str, str], Mapping[str, str]]] = ()

    def to_yaml(self) -> dict[str, Any]:
        return {"eval_time": f"{self.at}s", "alertname": self.alert,
                "exp_alerts": [{"exp_labels": dict(labels), "exp_annotations": dict(annotations)}
                               for labels, annotations in self.alerts]}


def scrapes(seconds: int, at: Callable[[int], Scrape]) -> list[Scrape]:
    """What cvo answers at every scrape from 0 to ``seconds`` (inclusive)."""
    return [at(t) for t in range(0, seconds + 1, INTERVAL)]


def run_promtool(tmp: Path, series: Sequence[Scrape], expects: Sequence[Expect],
                 rules: Path = RULES) -> subprocess.CompletedProcess[str]:
    """Write the unit test into ``tmp`` and run ``promtool test rules`` on it (the caller checks the result)."""
    test = {"rule_files": [str(rules)], "evaluation_interval": f"{INTERVAL}s",
            "tests": [{"interval": f"{INTERVAL}s", "input_series": input_series(series),
                       "alert_rule_test": [e.to_yaml() for e in expects]}]}
    path = tmp / "rules-test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False, width=1 << 16))
    return subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True, text=True, timeout=120,
                          check=False)


def scrape_url(url: str, timeout: float = 5.0) -> Scrape:
    """One real scrape of ``url`` (cvo's endpoint): its exposition, or :data:`DOWN` when it does not answer 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return str(response.read().decode()) if response.status == 200 else DOWN
    except (urllib.error.URLError, OSError):
        return DOWN
