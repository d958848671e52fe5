"""Firing alerts as risks (pkg/risk/alert, alert_test.go's cases; testdata/alerts.json copied from the CVO at 6e71933
into tests/gates/data/alerts.json)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cvo.gates.risks.alert import AlertRisks, alerts_to_risks
from cvo.updates.model import ALWAYS, MatchingRule, Risk

DATA = Path(__file__).parent / "data" / "alerts.json"
T1, T2 = "2026-03-04T00:41:00Z", "2026-03-04T00:38:00.5Z"


@dataclass(frozen=True)
class Alert:
    labels: Mapping[str, str]
    annotations: Mapping[str, str] = field(default_factory=dict)
    state: str = "firing"
    active_at: str = ""
    value: str = "1e+00"


ANNOTATIONS = {"summary": "summary", "description": "description", "message": "message"}


def test_basic_case() -> None:
    alerts = [
        Alert({"alertname": "PodDisruptionBudgetLimit", "severity": "critical", "namespace": "namespace",
               "poddisruptionbudget": "some-pdb"},
              {**ANNOTATIONS, "runbook_url": "http://runbook.example.com/runbooks/abc.md"}, active_at=T1),
        Alert({"alertname": "not-important"}, state="pending"),
        Alert({"alertname": "PodDisruptionBudgetAtLimit", "severity": "severity", "namespace": "namespace",
               "poddisruptionbudget": "some-pdb"},
              {**ANNOTATIONS, "runbook_url": "http://runbook.example.com/runbooks/bbb.md"}, active_at=T1),
        Alert({"alertname": "PodDisruptionBudgetAtLimit", "severity": "severity", "namespace": "namespace",
               "poddisruptionbudget": "another-pdb"},
              {**ANNOTATIONS, "runbook_url": "http://runbook.example.com/runbooks/bbb.md"}, active_at=T2),
    ]
    at_limit = ("severity alert PodDisruptionBudgetAtLimit firing, which might slow node drains. Namespace=namespace, "
                "PodDisruptionBudget={}. summary. The alert description is: description | message "
                "http://runbook.example.com/runbooks/bbb.md")
    assert alerts_to_risks(alerts) == (
        Risk("PodDisruptionBudgetAtLimit", "summary.", "http://runbook.example.com/runbooks/bbb.md",
             (MatchingRule(ALWAYS),),
             ({"type": "Applies", "status": "True", "reason": "Alert:firing", "lastTransitionTime": "2026-03-04T00:38:00Z",
               "message": at_limit.format("some-pdb") + "; " + at_limit.format("another-pdb")},)),
        Risk("PodDisruptionBudgetLimit", "summary.", "http://runbook.example.com/runbooks/abc.md",
             (MatchingRule(ALWAYS),),
             ({"type": "Applies", "status": "True", "reason": "Alert:firing", "lastTransitionTime": T1,
               "message": "critical alert PodDisruptionBudgetLimit firing, suggesting significant cluster issues worth "
                          "investigating. Namespace=namespace, PodDisruptionBudget=some-pdb. summary. The alert "
                          "description is: description | message http://runbook.example.com/runbooks/abc.md"},)),
    )


def _from_file() -> list[Alert]:
    return [Alert(a["labels"], a.get("annotations", {}), a["state"], a["activeAt"], a["value"])
            for a in json.loads(DATA.read_text())["alerts"]]


def test_from_file() -> None:
    assert alerts_to_risks(_from_file()) == (Risk(
        "TestAlert", "Test summary.", "https://github.com/openshift/runbooks/tree/master/alerts?runbook=notfound",
        (MatchingRule(ALWAYS),),
        ({"type": "Applies", "status": "True", "reason": "Alert:firing", "lastTransitionTime": "2026-03-04T00:38:19Z",
          "message": "critical alert TestAlert firing, suggesting significant cluster issues worth investigating. Test "
                     "summary. The alert description is: Test description. <alert does not have a runbook_url "
                     "annotation>"},)),)


def test_update_slowing_alerts_and_prechecks() -> None:
    alerts = [Alert({"alertname": "KubeNodeNotReady", "severity": "warning"}, {"summary": "node down."}, active_at=T1),
              Alert({"alertname": "Custom", "severity": "info", "openShiftUpdatePrecheck": "true"}, active_at=T1),
              Alert({"alertname": "Other", "severity": "warning"}, active_at=T1),
              Alert({"severity": "critical"}, active_at=T1)]
    risks = alerts_to_risks(alerts)
    assert [(r.name, r.message) for r in risks] == [("Custom", "Custom."), ("KubeNodeNotReady", "node down.")]
    assert risks[0].conditions[0]["message"] == ("info alert Custom firing, suggesting issues worth investigating "
                                                 "before updating the cluster. Custom. The alert has no description. "
                                                 "<alert does not have a runbook_url annotation>")
    assert "which may slow workload redistribution during rolling node updates" in risks[1].conditions[0]["message"]


class Reader:
    def __init__(self, answers: list[Sequence[Alert] | Exception]) -> None:
        self.answers = answers

    async def alerts(self) -> Sequence[Alert]:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_source_applies_to_every_version_and_keeps_the_last_alerts_on_failure() -> None:
    source = AlertRisks(Reader([_from_file(), OSError("connection refused"), []]))
    first = asyncio.run(source.risks(["1.2.3"]))
    assert [r.name for r in first.risks] == ["TestAlert"] and first.versions == {"TestAlert": ("1.2.3",)}
    assert asyncio.run(source.risks(["1.2.3"])) == first  # stale cache, no error (ocAlertGetter.Get)
    assert asyncio.run(source.risks(["1.2.3"])).risks == ()


@given(st.lists(st.builds(Alert, st.dictionaries(st.sampled_from(["alertname", "severity", "namespace",
                                                                  "openShiftUpdatePrecheck"]), st.text(max_size=8)),
                          st.dictionaries(st.sampled_from(["summary", "description", "message", "runbook_url"]),
                                          st.text(max_size=8)),
                          st.sampled_from(["firing", "pending", "inactive"]), st.text(max_size=30)), max_size=6))
def test_any_alerts(alerts: list[Alert]) -> None:
    risks = alerts_to_risks(alerts)
    assert [r.name for r in risks] == sorted({r.name for r in risks})
    assert all(r.conditions[0]["type"] == "Applies" and r.message.endswith(".") for r in risks)
