"""Firing alerts as risks (pkg/risk/alert/alert.go ``alertsToRisks``): critical alerts, and the alerts that
slow an update (PodDisruptionBudgetAtLimit, KubeContainerWaiting, node and virtualization alerts, any
labelled ``openShiftUpdatePrecheck="true"``), each a risk named after the alert with an ``Applies=True``
condition, for every update.  Alerts come through :class:`AlertReader` (the cluster's Prometheus
``/api/v1/alerts``); a failed read keeps the last alerts read, as the CVO's ``ocAlertGetter`` does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from cvo.gates.risks.versions import ALWAYS_RULES
from cvo.log import get_logger
from cvo.updates.model import Risk
from cvo.updates.sources import SourcedRisks

ALERT = "Alert"
APPLIES = "Applies"
NOT_FOUND_RUNBOOK = "https://github.com/openshift/runbooks/tree/master/alerts?runbook=notfound"
PDB_LIMIT = "PodDisruptionBudgetLimit"
PDB_AT_LIMIT = "PodDisruptionBudgetAtLimit"
PULL_WAITING = frozenset({"KubeContainerWaiting"})
NODES = frozenset({"KubeletHealthState", "KubeNodeNotReady", "KubeNodeReadinessFlapping", "KubeNodeUnreachable"})
VIRT = frozenset({"VirtHandlerDaemonSetRolloutFailing", "VMCannotBeEvicted"})

log = get_logger("cvo.gates.risks")


class Alert(Protocol):
    """One entry of ``/api/v1/alerts`` (``cvo.monitoring.client.Alert`` has this shape)."""

    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def annotations(self) -> Mapping[str, str]: ...
    @property
    def state(self) -> str: ...
    @property
    def active_at(self) -> str: ...


class AlertReader(Protocol):
    async def alerts(self) -> Sequence[Alert]: ...


def _time(text: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _rfc3339(text: str) -> str:
    """``metav1.Time`` marshals to whole seconds in UTC."""
    parsed = _time(text)
    return parsed.strftime("%Y-%m-%dT%H:%M:%SZ") if parsed else text


def condition_message(name: str, severity: str, state: str, impact: str, details: str) -> str:
    """``internal.AlertConditionMessage``."""
    return f"{severity} alert {name} {state}, {impact}. {details}"


def _add(risks: dict[str, Risk], name: str, message: str, url: str, condition: dict[str, Any]) -> None:
    """``getRisk``: a new risk, or the same risk's ``Applies`` message extended, keeping the earliest time."""
    risk = risks.get(name)
    if risk is None:
        risks[name] = Risk(name, message, url, ALWAYS_RULES, (condition,))
        return
    conditions = [dict(c) for c in risk.conditions]
    for c in conditions:
        if c.get("type") == condition["type"]:
            c["message"] = f"{c.get('message', '')}; {condition['message']}"
            old, new = _time(str(c.get("lastTransitionTime", ""))), _time(condition["lastTransitionTime"])
            if old is not None and new is not None and old > new:
                c["lastTransitionTime"] = condition["lastTransitionTime"]
            break
    risks[name] = Risk(risk.name, risk.message, risk.url, risk.matching_rules, tuple(conditions))


def alerts_to_risks(alerts: Sequence[Alert]) -> tuple[Risk, ...]:
    """``alertsToRisks``: the risks, sorted by name."""
    risks: dict[str, Risk] = {}
    for alert in alerts:
        name = alert.labels.get("alertname", "")
        if not name or alert.state == "pending":
            continue
        summary = alert.annotations.get("summary", "") or name
        if not summary.endswith("."):
            summary += "."
        message, description = alert.annotations.get("message", ""), alert.annotations.get("description", "")
        if message and description:
            desc = f" The alert description is: {description} | {message}"
        elif description or message:
            desc = f" The alert description is: {description or message}"
        else:
            desc = " The alert has no description."
        runbook = alert.annotations.get("runbook_url", "")
        url = runbook or NOT_FOUND_RUNBOOK
        details = f"{summary}{desc} {runbook or '<alert does not have a runbook_url annotation>'}"
        severity = alert.labels.get("severity", "")
        pdb = f"Namespace={alert.labels.get('namespace', '')}, " \
              f"PodDisruptionBudget={alert.labels.get('poddisruptionbudget', '')}. "
        since = _rfc3339(alert.active_at)

        def applies(reason: str, impact: str, details: str, name: str = name, severity: str = severity,
                    state: str = alert.state, since: str = since) -> dict[str, Any]:
            return {"type": APPLIES, "status": "True", "reason": reason, "lastTransitionTime": since,
                    "message": condition_message(name, severity, state, impact, details)}

        reason = f"Alert:{alert.state}"
        if severity == "critical":
            if name == PDB_LIMIT:
                details = pdb + details
            _add(risks, name, summary, url,
                 applies(reason, "suggesting significant cluster issues worth investigating", details))
        elif name == PDB_AT_LIMIT:
            _add(risks, name, summary, url, applies(reason, "which might slow node drains", pdb + details))
        elif name in PULL_WAITING or name in NODES or name in VIRT:
            _add(risks, name, summary, url,
                 applies(reason, "which may slow workload redistribution during rolling node updates", details))
        elif alert.labels.get("openShiftUpdatePrecheck", "") == "true":
            _add(risks, name, summary, url,
                 applies(reason, "suggesting issues worth investigating before updating the cluster", details))
    return tuple(risks[k] for k in sorted(risks))


class AlertRisks:
    """``alert.New``: the risks of the alerts firing now, applying to every update."""

    def __init__(self, reader: AlertReader, name: str = ALERT) -> None:
        self.name = name
        self.reader = reader
        self._cached: Sequence[Alert] = ()

    async def risks(self, versions: Sequence[str]) -> SourcedRisks:
        try:
            self._cached = await self.reader.alerts()
        except Exception as err:  # any failure of the read: ocAlertGetter.Get logs it and uses its cache
            log.error("Failed to refresh alerts, using stale cache instead", error=str(err))
        risks = alerts_to_risks(self._cached)
        return SourcedRisks(risks, {r.name: tuple(versions) for r in risks})
