"""manifests/controller/monitoring/: the PrometheusRules and ServiceMonitor for the Prometheus Operator, and the
same groups as a plain rule file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.support.promtool import RULES

MONITORING = RULES.parents[1]
CONTROLLER = MONITORING.parent


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_the_plain_rule_file_holds_the_prometheusrules_groups() -> None:
    (manifest,) = sorted(MONITORING.glob("*.yaml"))
    docs = documents(manifest)
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("ServiceMonitor", "cluster-version-operator"), ("PrometheusRule", "cluster-version-operator"),
        ("PrometheusRule", "cluster-version-operator-accept-risks")]
    assert all(d["apiVersion"] == "monitoring.coreos.com/v1" and d["metadata"]["namespace"] == "openshift-cluster-version"
               for d in docs)
    groups = [g for d in docs if d["kind"] == "PrometheusRule" for g in d["spec"]["groups"]]
    assert yaml.safe_load(RULES.read_text()) == {"groups": groups}
    # the CVO's gate annotation: applied by the CVO only when ClusterUpdateAcceptRisks is on
    assert docs[2]["metadata"]["annotations"]["release.openshift.io/feature-gate"] == "ClusterUpdateAcceptRisks"
    assert [r["alert"] for r in docs[2]["spec"]["groups"][0]["rules"]] == ["OpenShiftUpdateRiskMightApply"]
    # no Go template left: the CVO's {{ "{{ ... }}" }} escapes are rendered, as pkg/payload/render.go renders them
    assert '{{ "' not in RULES.read_text() and '{{ "' not in manifest.read_text().split("---", 1)[1]


def test_the_servicemonitor_scrapes_cvos_service_so_the_rules_labels_match() -> None:
    """The rules select job="cluster-version-operator" and endpoint="metrics": the Prometheus Operator sets
    job to the Service's name and endpoint to its port's name."""
    (monitor,) = [d for d in documents(next(MONITORING.glob("*.yaml"))) if d["kind"] == "ServiceMonitor"]
    (service,) = [d for p in sorted(CONTROLLER.glob("*.yaml")) for d in documents(p) if d["kind"] == "Service"]
    assert service["metadata"]["name"] == "cluster-version-operator"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"] == "metrics"
    assert endpoint["scheme"] == "http" and endpoint["interval"] == "30s"
