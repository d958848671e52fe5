"""The health insights ``oc adm upgrade status`` derives from firing alerts.

A port of openshift/oc ``pkg/cli/admin/upgrade/status/alerts.go`` ``parseAlertDataToInsights``: an alert
that started firing during the update, or one known to affect updates (the PodDisruptionBudget ones) whenever
it started, of severity warning or critical, and not pending, becomes an insight scoped to the alert.  The
alerts are Prometheus' ``/api/v1/alerts`` answer as :mod:`cvo.status.recommend_alerts` (a file) or
:class:`cvo.monitoring.client.Prometheus` (a server) read it.
"""

from __future__ import annotations

from collections.abc import Iterable

from cvo.monitoring.answers import Alert
from cvo.objects.times import parse_time
from cvo.status.upgrade_insight import CRITICAL, INFO, WARNING, Insight, Resource

# alerts.go ``allowedAlerts``: shown even when they fired before the update began
KNOWN_TO_AFFECT_UPDATES = frozenset({"PodDisruptionBudgetLimit", "PodDisruptionBudgetAtLimit"})
IMPACT_UNKNOWN = "Unknown"
NO_RUNBOOK = "<alert does not have a runbook_url annotation>"


def _level(severity: str) -> int:
    """``alertImpactLevel``."""
    return {"warning": WARNING, "critical": CRITICAL}.get(severity, INFO)


def _active_at(alert: Alert) -> int | None:
    """``activeAt`` in nanoseconds; ``None`` (Go's zero time: printed "-") when absent or not a time."""
    return parse_time(alert.active_at) if alert.active_at else None


def alert_insights(alerts: Iterable[Alert], started_at: int) -> list[Insight]:
    """``parseAlertDataToInsights``: the insights of ``alerts`` for an update that started at ``started_at``
    (nanoseconds)."""
    found = []
    for alert in alerts:
        name = alert.labels.get("alertname", "")
        if not name:
            continue
        active_at = _active_at(alert)
        during = active_at is not None and started_at < active_at
        if name in KNOWN_TO_AFFECT_UPDATES:
            description = ("Alert known to affect updates started firing during the update." if during else
                           "Alert known to affect updates has been firing since before the update started.")
        elif during:
            description = "Alert started firing during the update."
        else:
            continue
        if alert.state == "pending":
            continue
        level = _level(alert.labels.get("severity", ""))
        if level < WARNING:
            continue
        notes = alert.annotations
        said, message = notes.get("description", ""), notes.get("message", "")
        if said and message:
            description += f" The alert description is: {said} | {message}"
        elif said or message:
            description += f" The alert description is: {said or message}"
        else:
            description += " The alert has no description."
        summary = notes.get("summary", "") or name
        found.append(Insight(active_at, "Cluster",
                             (Resource("config.openshift.io", "Alert", name, alert.labels.get("namespace", "")),),
                             level, IMPACT_UNKNOWN, f"Alert is firing: {summary}", description,
                             notes.get("runbook_url", "") or NO_RUNBOOK))
    return found
