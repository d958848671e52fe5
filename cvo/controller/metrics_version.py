"""The ClusterVersion's metric families (``pkg/cvo/metrics.go`` ``operatorMetrics.Collect``).

``cluster_version`` (one series per type), ``cluster_version_available_updates``,
``cluster_version_capability``, the ClusterVersion's conditions as ``cluster_operator_up`` and
``cluster_operator_conditions`` with ``name="version"``, ``cluster_version_conditional_update_condition_seconds``
(``collectConditionalUpdates``) and ``cluster_version_risk_conditions`` (``collectConditionalUpdateRisks``,
only under the ClusterUpdateAcceptRisks gate), all from the object's spec and status as the watch delivered it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from cvo.payload.fields import dig

# The help text exactly as pkg/cvo/metrics.go has it (a raw string: its line breaks and trailing blanks too).
VERSION_HELP = """Reports the version of the cluster in terms of seconds since
the epoch. Type 'current' is the version being applied and
the value is the creation date of the payload. The type
'desired' is returned if spec.desiredUpdate is set but the
operator has not yet updated and the value is the most\x20
recent status transition time. The type 'failure' is set\x20
if an error is preventing sync or upgrade with the last\x20
transition timestamp of the condition. The type 'completed'\x20
is the timestamp when the last image was successfully
applied. The type 'cluster' is the creation date of the
cluster version object and the current version. The type
'updating' is set when the cluster is transitioning to a
new version but has not reached the completed state and
is the time the update was started. The type 'initial' is
set to the oldest entry in the history. The from_version label
will be set to the last completed version for most types, the
initial version for 'cluster', empty for 'initial', and the
penultimate completed version for 'completed'.
."""
DEFAULT_UPSTREAM = "<default>"
RECOMMENDED = "Recommended"  # internal.ConditionalUpdateConditionTypeRecommended
APPLIES = "Applies"  # internal.ConditionalUpdateRiskConditionTypeApplies


@dataclass(frozen=True)
class VersionInputs:
    """What the families take from the process rather than the object."""

    update_service: str = ""  # --update-service (the CVO's flag): the upstream label when set
    accept_risks: bool = False  # shouldReconcileAcceptRisks: risks' Applies conditions are exported


def seconds(value: Any) -> float:
    """An RFC 3339 time as whole seconds since the epoch (Go's ``Time.Unix()``); 0 when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return float(int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()))
    except ValueError:
        return 0.0


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def conditions(obj: Any) -> list[dict[str, Any]]:
    found = dig(obj, "status", "conditions") if isinstance(obj, dict) else None
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def condition(obj: Any, type_: str) -> dict[str, Any] | None:
    return next((c for c in conditions(obj) if c.get("type") == type_), None)


def dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def cluster_version_families(cv: dict[str, Any] | None, inputs: VersionInputs, up: GaugeMetricFamily,
                             conds: GaugeMetricFamily) -> Iterator[Metric]:
    """The families above; the ClusterVersion's ``cluster_operator_up``/``_conditions`` series go into
    ``up``/``conds``, which the caller yields with the ClusterOperators'.  ``cv`` None: not found."""
    version = GaugeMetricFamily("cluster_version", VERSION_HELP, labels=["type", "version", "image", "from_version"])
    updates = GaugeMetricFamily("cluster_version_available_updates",
                                "Report the count of available versions for an upstream and channel.",
                                labels=["upstream", "channel"])
    capability = GaugeMetricFamily("cluster_version_capability", "Report currently enabled cluster capabilities.  "
                                   "0 is disabled, and 1 is enabled.", labels=["name"])
    recommended = GaugeMetricFamily("cluster_version_conditional_update_condition_seconds",
                                    "Reports when the Recommended condition status on a conditional update changed "
                                    "to its current state.", labels=["version", "condition", "status", "reason"])
    risks = GaugeMetricFamily("cluster_version_risk_conditions", "Report the risk conditions for the cluster version. "
                              "-1 is Unknown, 0 is False and 1 is True.", labels=["condition", "risk", "reason"])
    desired = dig(cv, "status", "desired") if cv is not None else None
    current = (text(desired.get("version")), text(desired.get("image"))) if isinstance(desired, dict) else ("", "")
    completed = ""
    if cv is None:
        up.add_metric(["version", "", "ClusterVersionNotFound"], 0.0)
        conds.add_metric(["version", "Available", "ClusterVersionNotFound"], 0.0)
    else:
        completed = _history(cv, current, version)
        _available_updates(cv, inputs, updates)
        _capabilities(cv, capability)
        for c in conditions(cv):
            if c.get("status") not in ("True", "False"):
                continue
            value = 1.0 if c.get("status") == "True" else 0.0
            if c.get("type") == "Available":
                up.add_metric(["version", completed, text(c.get("reason"))], value)
            conds.add_metric(["version", text(c.get("type")), text(c.get("reason"))], value)
        for update in dicts(dig(cv, "status", "conditionalUpdates")):
            for c in dicts(update.get("conditions")):
                if c.get("type") == RECOMMENDED:
                    recommended.add_metric([text(dig(update, "release", "version")), RECOMMENDED,
                                            text(c.get("status")), text(c.get("reason"))],
                                           seconds(c.get("lastTransitionTime")))
        if inputs.accept_risks:
            for risk in dicts(dig(cv, "status", "conditionalUpdateRisks")):
                for c in dicts(risk.get("conditions")):
                    if c.get("type") == APPLIES:
                        risks.add_metric([APPLIES, text(risk.get("name")), text(c.get("reason"))],
                                         {"True": 1.0, "Unknown": -1.0}.get(text(c.get("status")), 0.0))
    version.add_metric(["current", current[0], current[1], completed], 0.0)  # no release creation date: 0
    yield from (version, updates, capability, recommended, risks)


def _history(cv: dict[str, Any], current: tuple[str, str], family: GaugeMetricFamily) -> str:
    """``cluster_version``'s completed, initial, cluster, desired, failure and updating series; the last
    completed version (the ``from_version`` of most of them)."""
    history = dicts(dig(cv, "status", "history"))
    completed: dict[str, Any] = {}
    for i, entry in enumerate(history):
        if entry.get("state") == "Completed":
            completed = entry
            previous = next((h for h in history[i + 1:] if h.get("state") == "Completed"), {})
            family.add_metric(["completed", text(entry.get("version")), text(entry.get("image")),
                               text(previous.get("version"))], seconds(entry.get("completionTime")))
            break
    done = text(completed.get("version"))
    created = seconds(dig(cv, "metadata", "creationTimestamp"))
    initial = history[-1] if history else {}
    family.add_metric(["initial", text(initial.get("version")), text(initial.get("image")), ""], created)
    # the initial version only once the cluster reached a level (installs still running are left out)
    family.add_metric(["cluster", current[0], current[1], text(initial.get("version")) if done else ""], created)
    update = dig(cv, "spec", "desiredUpdate")
    pending = isinstance(update, dict) and text(update.get("image")) != current[1]
    if isinstance(update, dict) and pending:
        family.add_metric(["desired", text(update.get("version")), text(update.get("image")), done],
                          _most_recent(cv, history))
    failing = condition(cv, "Failing")
    if failing is not None and failing.get("status") == "True":
        what = (text(update.get("version")), text(update.get("image"))) if isinstance(update, dict) and pending \
            else current
        family.add_metric(["failure", what[0], what[1], done], seconds(failing.get("lastTransitionTime")))
    if history and history[0].get("state") == "Partial":
        family.add_metric(["updating", text(history[0].get("version")), text(history[0].get("image")), done],
                          seconds(history[0].get("startedTime")))
    return done


def _available_updates(cv: dict[str, Any], inputs: VersionInputs, family: GaugeMetricFamily) -> None:
    """Only when an upstream, updates, or a successful retrieval are there."""
    available = dicts(dig(cv, "status", "availableUpdates"))
    upstream = text(dig(cv, "spec", "upstream"))
    retrieved = condition(cv, "RetrievedUpdates")
    if upstream or available or (retrieved is not None and retrieved.get("status") == "True"):
        family.add_metric([inputs.update_service or upstream or DEFAULT_UPSTREAM, text(dig(cv, "spec", "channel"))],
                          float(len(available)))


def _capabilities(cv: dict[str, Any], family: GaugeMetricFamily) -> None:
    """1 for each enabled capability, then 0 for each known one that is not."""
    status = dig(cv, "status", "capabilities")
    status = status if isinstance(status, dict) else {}
    enabled = _strings(status.get("enabledCapabilities"))
    for name in enabled:
        family.add_metric([name], 1.0)
    for name in _strings(status.get("knownCapabilities")):
        if name not in enabled:
            family.add_metric([name], 0.0)


def _most_recent(cv: dict[str, Any], history: list[dict[str, Any]]) -> float:
    """``mostRecentTimestamp``: the latest of history[0]'s start and completion, the conditions' transitions
    and the object's creation."""
    times = [seconds(dig(cv, "metadata", "creationTimestamp"))]
    if history:
        times += [seconds(history[0].get("startedTime")), seconds(history[0].get("completionTime"))]
    times += [seconds(c.get("lastTransitionTime")) for c in conditions(cv)]
    return max(times)
