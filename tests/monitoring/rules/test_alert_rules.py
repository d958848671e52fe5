"""The CVO's alerting rules (manifests/controller/monitoring/) under ``promtool test rules``, on the series cvo
itself exports: every scrape is cvo's real /metrics rendered from ClusterVersion and ClusterOperator states
built here, so a metric renamed on either side, or a label a rule needs that cvo does not write, fails.
The rules keep the CVO's ``for:`` durations; promtool times them (a scrape and an evaluation every 30 s)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from cvo.controller.http import Endpoint, Health
from tests.support.metrics import render, snapshot_of
from tests.support.promtool import (
    DOWN,
    GONE,
    RULES,
    Expect,
    Scrape,
    promtool,
    run_promtool,
    scrape_url,
    scrapes,
)

NS = "openshift-cluster-version"
CONSOLE = "oc adm upgrade"


def t(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cond(type_: str, status: str, reason: str = "AsExpected", when: int = 0) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": "", "lastTransitionTime": t(when)}


def cluster_version(*changes: dict[str, Any], **status: Any) -> dict[str, Any]:
    """A settled cluster on 4.16.3 as cvo writes it; ``changes`` replace conditions of the same type."""
    conditions = {c["type"]: c for c in (cond("Available", "True", "Done"), cond("Failing", "False", ""),
                                         cond("Progressing", "False", ""), cond("RetrievedUpdates", "True", ""),
                                         cond("ReleaseAccepted", "True", "PayloadLoaded"))}
    conditions.update({c["type"]: c for c in changes})
    spec = status.pop("spec", {"channel": "stable-4.16", "clusterID": "5b4a4f36-6f2c-4a3c-9d1e-2f5f7e0c1a11"})
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
            "metadata": {"name": "version", "creationTimestamp": t(0)}, "spec": spec,
            "status": {"desired": {"version": "4.16.3", "image": "quay.io/openshift-release-dev/ocp-release:4.16.3"},
                       "history": [{"state": "Completed", "version": "4.16.3", "startedTime": t(0),
                                    "completionTime": t(0), "image": "quay.io/o/r:4.16.3", "verified": True}],
                       "conditions": list(conditions.values()), **status}}


def operator(name: str, *changes: dict[str, Any]) -> dict[str, Any]:
    conditions = {c["type"]: c for c in (cond("Available", "True"), cond("Degraded", "False"),
                                         cond("Progressing", "False"), cond("Upgradeable", "True"))}
    conditions.update({c["type"]: c for c in changes})
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": name},
            "status": {"versions": [{"name": "operator", "version": "4.16.3"}],
                       "conditions": [c for c in conditions.values() if c.get("status")]}}


HEALTHY = (operator("etcd"), operator("kube-apiserver"))


def steady(cv: dict[str, Any] | None, *operators: dict[str, Any], **fields: Any) -> Callable[[int], Scrape]:
    exposition = render(snapshot_of(cv, *(operators or HEALTHY), **fields))
    return lambda _: exposition


# --- one scenario per shipped alert: (scrapes, expectations) -------------------------------------------------


DOWN_ALERT = ({"namespace": NS, "severity": "critical"}, {
                   "summary": "Cluster version operator has disappeared from Prometheus target discovery.",
                   "description": "The operator may be down or disabled. The cluster will not be kept up to date "
                   "and upgrades will not be possible. Inspect the openshift-cluster-version namespace for events or "
                   "changes to the cluster-version-operator deployment or pods to diagnose and repair. ",
                   "runbook_url": "https://github.com/openshift/runbooks/blob/master/alerts/cluster-version-operator/"
                   "ClusterVersionOperatorDown.md"})


def operator_down_scrapes() -> tuple[list[Scrape], list[Expect]]:
    healthy = steady(cluster_version())
    series = scrapes(1500, lambda s: healthy(s) if s < 300 else DOWN if s < 1200 else GONE)
    firing = [DOWN_ALERT]
    # down from 300 s: pending, firing after the rule's 10 minutes; still firing once the target is gone
    return series, [Expect(270, "ClusterVersionOperatorDown"), Expect(870, "ClusterVersionOperatorDown"),
                    Expect(900, "ClusterVersionOperatorDown", firing),
                    Expect(1500, "ClusterVersionOperatorDown", firing)]


def retrieval_scrapes() -> tuple[list[Scrape], list[Expect]]:
    failing = steady(cluster_version(cond("RetrievedUpdates", "False", "RemoteFailed")), update_retrieval=0.0)
    no_channel = steady(cluster_version(cond("RetrievedUpdates", "False", "NoChannel"), spec={}),
                        update_retrieval=0.0)
    # failing for an hour; then the channel is cleared (NoChannel), which the rule leaves alone
    series = scrapes(4200, lambda s: failing(s) if s < 3900 else no_channel(s))
    description = ("Failure to retrieve updates means that cluster administrators will need to monitor for "
                   "available updates on their own or risk falling behind on security or other bugfixes. If the "
                   "failure is expected, you can clear spec.channel in the ClusterVersion object to tell the "
                   "cluster-version operator to not retrieve updates. Failure reason RemoteFailed . For more "
                   "information refer to `oc get clusterversion/version -o=jsonpath=\"{.status.conditions[?(.type=="
                   "'RetrievedUpdates')]}{'\\n'}\"`.")
    firing = [({"namespace": NS, "severity": "warning"},
               {"summary": "Cluster version operator has not retrieved updates in 1h 0m 0s.", "description": description})]
    return series, [Expect(3570, "CannotRetrieveUpdates"), Expect(3600, "CannotRetrieveUpdates", firing),
                    Expect(4200, "CannotRetrieveUpdates")]


def update_available_scrapes() -> tuple[list[Scrape], list[Expect]]:
    upstream = "https://api.openshift.com/api/upgrades_info/v1/graph"
    spec = {"channel": "stable-4.16", "upstream": upstream}
    two = steady(cluster_version(spec=spec, availableUpdates=[
        {"version": "4.16.5", "image": "quay.io/o/r:4.16.5"}, {"version": "4.16.4", "image": "quay.io/o/r:4.16.4"}]))
    none = steady(cluster_version(spec=spec, availableUpdates=None))
    series = scrapes(600, lambda s: two(s) if s < 300 else none(s))
    firing = [({"channel": "stable-4.16", "namespace": NS, "upstream": upstream, "severity": "info"},
               {"summary": "Your upstream update recommendation service recommends you update your cluster.",
                "description": f"For more information refer to '{CONSOLE}'."})]
    return series, [Expect(0, "UpdateAvailable", firing), Expect(270, "UpdateAvailable", firing),
                    Expect(300, "UpdateAvailable")]


def release_not_accepted_scrapes() -> tuple[list[Scrape], list[Expect]]:
    refused = steady(cluster_version(cond("ReleaseAccepted", "False", "PreconditionChecks")))
    firing = [({"name": "version", "namespace": NS, "reason": "PreconditionChecks", "severity": "warning"},
               {"summary": "The desired cluster release has not been accepted for at least an hour.",
                "description": "The desired cluster release has not been accepted because PreconditionChecks, and "
                "the cluster will continue to reconcile an earlier release instead of moving towards that desired "
                f"release.  For more information refer to '{CONSOLE}'."})]
    return scrapes(3600, refused), [Expect(3570, "ClusterReleaseNotAccepted"),
                                    Expect(3600, "ClusterReleaseNotAccepted", firing)]


def not_upgradeable_scrapes() -> tuple[list[Scrape], list[Expect]]:
    blocked = steady(cluster_version(cond("Upgradeable", "False", "AdminAckRequired")))
    firing = [({"condition": "Upgradeable", "endpoint": "metrics", "name": "version", "namespace": NS,
                "severity": "info"},
               {"summary": "One or more cluster operators have been blocking minor or major version cluster updates "
                "for at least an hour.",
                "description": "In most cases, you will still be able to apply patch releases. Reason "
                f"AdminAckRequired. For more information refer to '{CONSOLE}'."})]
    return scrapes(3600, blocked), [Expect(3570, "ClusterNotUpgradeable"),
                                    Expect(3600, "ClusterNotUpgradeable", firing)]


def cluster_operator_down_scrapes() -> tuple[list[Scrape], list[Expect]]:
    # etcd unavailable from 0; the ClusterVersion missing altogether from 300 s (cvo run before cvo bootstrap)
    etcd = steady(cluster_version(), operator("etcd", cond("Available", "False", "EtcdMembersDown")),
                  operator("kube-apiserver"))
    missing = steady(None, operator("etcd", cond("Available", "False", "EtcdMembersDown")), operator("kube-apiserver"))
    series = scrapes(900, lambda s: etcd(s) if s < 300 else missing(s))

    def down(name: str, reason: str, how: str) -> tuple[dict[str, str], dict[str, str]]:
        return ({"name": name, "namespace": NS, "reason": reason, "severity": "critical"},
                {"summary": "Cluster operator has not been available for 10 minutes.",
                 "description": f"The {name} operator may be down or disabled because {reason}, and the components it "
                 f"manages may be unavailable or degraded.  Cluster upgrades may not complete. For more information "
                 f"refer to '{how}'.",
                 "runbook_url": "https://github.com/openshift/runbooks/blob/master/alerts/cluster-monitoring-operator/"
                 "ClusterOperatorDown.md"})

    etcd_down = down("etcd", "EtcdMembersDown", "oc get -o yaml clusteroperator etcd")
    return series, [Expect(570, "ClusterOperatorDown"), Expect(600, "ClusterOperatorDown", [etcd_down]),
                    Expect(900, "ClusterOperatorDown",
                           [etcd_down, down("version", "ClusterVersionNotFound", CONSOLE)])]


def degraded_scrapes() -> tuple[list[Scrape], list[Expect]]:
    # etcd Degraded=True; "network" sets no Degraded condition at all, which the rule counts as degraded;
    # kube-apiserver is healthy and the ClusterVersion is not Failing
    no_degraded = operator("network")
    no_degraded["status"]["conditions"] = [cond("Available", "True")]
    state = steady(cluster_version(), operator("etcd", cond("Degraded", "True", "EtcdEndpointsDegraded")),
                   operator("kube-apiserver"), no_degraded)

    def degraded(name: str, reason: str | None) -> tuple[dict[str, str], dict[str, str]]:
        labels = {"name": name, "namespace": NS, "severity": "warning"} | ({"reason": reason} if reason else {})
        return (labels, {"summary": "Cluster operator has been degraded for 30 minutes.",
                         "description": f"The {name} operator is degraded because {reason or ''}, and the components "
                         "it manages may have reduced quality of service.  Cluster upgrades may not complete. For "
                         f"more information refer to 'oc get -o yaml clusteroperator {name}'.",
                         "runbook_url": "https://github.com/openshift/runbooks/blob/master/alerts/"
                         "cluster-monitoring-operator/ClusterOperatorDegraded.md"})

    return scrapes(1800, state), [Expect(1770, "ClusterOperatorDegraded"),
                                  Expect(1800, "ClusterOperatorDegraded",
                                         [degraded("etcd", "EtcdEndpointsDegraded"), degraded("network", None)])]


def flapping_scrapes() -> tuple[list[Scrape], list[Expect]]:
    # etcd's Available flips at every scrape (same reason, so one cluster_operator_up series changing value)
    up = steady(cluster_version())
    down = steady(cluster_version(), operator("etcd", cond("Available", "False")), operator("kube-apiserver"))
    series = scrapes(900, lambda s: down(s) if (s // 30) % 2 else up(s))
    firing = [({"name": "etcd", "namespace": NS, "severity": "warning"},
               {"summary": "Cluster operator up status is changing often.",
                "description": "The  etcd operator behavior might cause upgrades to be unstable. For more information "
                "refer to 'oc get -o yaml clusteroperator etcd'."})]
    # three changes within 2 minutes from 90 s on: pending, firing 10 minutes later
    return series, [Expect(660, "ClusterOperatorFlapping"), Expect(690, "ClusterOperatorFlapping", firing)]


def conditional_scrapes() -> tuple[list[Scrape], list[Expect]]:
    def update(version: str, status: str, reason: str) -> dict[str, Any]:
        return {"release": {"version": version, "image": f"quay.io/o/r:{version}"},
                "risks": [{"name": "SomeRisk", "url": "https://example.com/risk", "message": "m",
                           "matchingRules": [{"type": "PromQL", "promql": {"promql": "vector(1)"}}]}],
                "conditions": [cond("Recommended", status, reason)]}

    state = steady(cluster_version(conditionalUpdates=[update("4.17.1", "Unknown", "EvaluationFailed"),
                                                       update("4.17.0", "False", "SomeRisk")]))
    firing = [({"condition": "Recommended", "reason": "EvaluationFailed", "status": "Unknown", "version": "4.17.1",
                "severity": "warning"},
               {"summary": "Cluster Version Operator cannot evaluate conditional update matches for 1h 0m 0s.",
                "description": "Failure to evaluate conditional update matches means that Cluster Version Operator "
                "cannot decide whether an update path is recommended or not."})]
    return scrapes(3600, state), [Expect(3570, "CannotEvaluateConditionalUpdates"),
                                  Expect(3600, "CannotEvaluateConditionalUpdates", firing)]


def risk_scrapes() -> tuple[list[Scrape], list[Expect]]:
    def risk(name: str, status: str, reason: str) -> dict[str, Any]:
        return {"name": name, "url": "https://example.com/risk", "message": "m",
                "matchingRules": [{"type": "Always"}], "conditions": [cond("Applies", status, reason)]}

    cv = cluster_version(conditionalUpdateRisks=[risk("EtcdSlow", "True", "Match"),
                                                 risk("Unknowable", "Unknown", "EvaluationFailed"),
                                                 risk("NotThis", "False", "NotMatch")])
    gated, ungated = steady(cv, accept_risks=True), steady(cv)
    series = scrapes(1800, lambda s: gated(s) if s < 1200 else ungated(s))

    def applies(name: str, reason: str) -> tuple[dict[str, str], dict[str, str]]:
        return ({"namespace": NS, "reason": reason, "risk": name, "severity": "warning"},
                {"summary": "The cluster might have been exposed to the conditional update risk for 15 minutes.",
                 "description": f"The conditional update risk {name} might apply to the cluster because of {reason}, "
                 "and the cluster update to a version exposed to the risk is not recommended. For more information "
                 "refer to 'oc adm upgrade'.",
                 "runbook_url": "https://github.com/openshift/runbooks/blob/master/alerts/cluster-version-operator/"
                 "OpenShiftUpdateRiskMightApply.md"})

    firing = [applies("EtcdSlow", "Match"), applies("Unknowable", "EvaluationFailed")]
    # without the ClusterUpdateAcceptRisks gate (from 1200 s) the family is empty: last_over_time keeps the
    # alert for 5 more minutes, then it resolves
    return series, [Expect(870, "OpenShiftUpdateRiskMightApply"), Expect(900, "OpenShiftUpdateRiskMightApply", firing),
                    Expect(1470, "OpenShiftUpdateRiskMightApply", firing),
                    Expect(1530, "OpenShiftUpdateRiskMightApply")]


SCENARIOS: dict[str, Callable[[], tuple[list[Scrape], list[Expect]]]] = {
    "ClusterVersionOperatorDown": operator_down_scrapes,
    "CannotRetrieveUpdates": retrieval_scrapes,
    "UpdateAvailable": update_available_scrapes,
    "ClusterReleaseNotAccepted": release_not_accepted_scrapes,
    "ClusterNotUpgradeable": not_upgradeable_scrapes,
    "ClusterOperatorDown": cluster_operator_down_scrapes,
    "ClusterOperatorDegraded": degraded_scrapes,
    "ClusterOperatorFlapping": flapping_scrapes,
    "CannotEvaluateConditionalUpdates": conditional_scrapes,
    "OpenShiftUpdateRiskMightApply": risk_scrapes,
}


def shipped_alerts() -> list[str]:
    return [r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


@pytest.mark.parametrize("alert", list(SCENARIOS))
def test_alert_on_cvo_series(alert: str, tmp_path: Path) -> None:
    series, expects = SCENARIOS[alert]()
    assert {e.alert for e in expects} == {alert}
    result = run_promtool(tmp_path, series, expects)
    assert result.returncode == 0, result.stdout + result.stderr


def test_operator_down_fires_on_scrapes_of_the_real_endpoint(tmp_path: Path) -> None:
    """Scrapes of cvo's HTTP endpoint while it answers, then of the same target with nothing listening (a port
    held by a socket that never listens: every connection is refused, for certain)."""
    endpoint = Endpoint("127.0.0.1", 0, snapshot_of(None), Health())
    endpoint.start()
    try:
        taken = [scrape_url(f"http://127.0.0.1:{endpoint.address[1]}/metrics") for _ in range(5)]  # 0 s to 120 s
    finally:
        endpoint.close()
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken += [scrape_url(f"http://127.0.0.1:{held.getsockname()[1]}/metrics") for _ in range(21)]  # to 750 s
    assert all(isinstance(s, str) and "cvo_controller_leader 0.0" in s for s in taken[:5])
    assert all(s is DOWN for s in taken[5:])
    expects = [Expect(720, "ClusterVersionOperatorDown"), Expect(750, "ClusterVersionOperatorDown", [DOWN_ALERT])]
    result = run_promtool(tmp_path, taken, expects)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_shipped_alert_has_a_scenario() -> None:
    assert sorted(shipped_alerts()) == sorted(SCENARIOS)


def test_a_renamed_family_fails_the_rule_test(tmp_path: Path) -> None:
    """The scenarios can fail: the same expectations on series where cvo misspells one family."""
    series, expects = update_available_scrapes()
    renamed = [s.replace("cluster_version_available_updates", "cluster_version_available_update")
               if isinstance(s, str) else s for s in series]
    result = run_promtool(tmp_path, renamed, expects)
    assert result.returncode != 0 and "UpdateAvailable" in result.stdout + result.stderr


def test_a_missing_promtool_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.fail.Exception, match="make monitoring-tools"):
        promtool()


def test_promtool_checks_the_rules_file() -> None:
    result = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 10 rules found" in result.stdout
