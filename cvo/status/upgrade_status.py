"""The ``oc adm upgrade status`` assessment of the control plane and the update's health, as data.

A port of the semantics of openshift/oc ``pkg/cli/admin/upgrade/status``: ``assessControlPlaneStatus``,
``coInsights``, ``versionsFromHistory``, ``baselineDuration``, ``estimateCompletion`` and
``timewiseComplete`` (controlplane.go), ``assessUpdateInsights`` (health.go) and the checks of
``options.Run`` (status.go).  Nothing here reads a clock or a cluster: the ClusterVersion and the
ClusterOperators (views, :mod:`cvo.objects`) and ``now`` go in, an :class:`UpgradeStatus` comes out,
rendered by :mod:`cvo.status.upgrade_text` or turned into the Update Status API's field names by :func:`to_data`.

With the machine config pools, their nodes and rendered configs (:mod:`cvo.status.upgrade_nodes`,
workerpool.go) and the firing alerts (:mod:`cvo.status.upgrade_alerts`, alerts.go), it is the whole of
``options.Run``'s assessment.  oc compares machine-config's ``operator-image``
version with the image of its operator Deployment; ``mco_image`` is that image when the caller knows
it (``None``: the check is skipped, where oc's mocked runs would see an empty image).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cvo.monitoring.answers import Alert
from cvo.objects import ClusterOperator, ClusterVersion, Condition, Time
from cvo.objects.clusterversion import UpdateHistory
from cvo.objects.condition import find_last
from cvo.status.godur import MINUTE, SECOND, ZERO_TIME, go_round, go_truncate
from cvo.status.gosort import go_sort_slice
from cvo.status.pending_release import PendingRelease, pending_release
from cvo.status.upgrade_alerts import alert_insights
from cvo.status.upgrade_insight import (
    ERROR,
    IMPACT_API_AVAILABILITY,
    IMPACT_NONE,
    IMPACT_UPDATE_STALLED,
    INFO,
    WARNING,
    Insight,
    Resource,
    since_ns,
)
from cvo.status.upgrade_insight import (
    StatusUnavailable as StatusUnavailable,  # re-exported (it was defined here)
)
from cvo.status.upgrade_nodes import Machines, Pools, assess_pools

MACHINE_CONFIG = "machine-config"
CV_GROUP = "config.openshift.io"

# Assessments (controlplane.go).
PROGRESSING = "Progressing"
PROGRESSING_SLOW = "Progressing - Slow"
COMPLETED = "Completed"
STALLED = "Stalled"

UNAVAILABLE_WARNING = 5 * MINUTE
UNAVAILABLE_ERROR = 20 * MINUTE
DEGRADED_WARNING = 5 * MINUTE
DEGRADED_ERROR = 40 * MINUTE

RUNBOOK_DOWN = "https://github.com/openshift/runbooks/blob/master/alerts/cluster-monitoring-operator/ClusterOperatorDown.md"
RUNBOOK_DEGRADED = ("https://github.com/openshift/runbooks/blob/master/alerts/cluster-monitoring-operator/"
                    "ClusterOperatorDegraded.md")
DOCS_HISTORY = ("https://docs.openshift.com/container-platform/latest/updating/troubleshooting_updates/"
                "gathering-data-cluster-update.html#gathering-clusterversion-history-cli_troubleshooting_updates")
NO_FAILING_DESCRIPTION = ("Current status of Cluster Version reconciliation is unclear.  See 'oc -n "
                          "openshift-cluster-version logs -l k8s-app=cluster-version-operator --tail -1' to debug.")


@dataclass(frozen=True)
class UpdatingOperator:
    name: str
    condition: Condition  # its Progressing=True condition


@dataclass
class Operators:
    total: int = 0
    unavailable: int = 0
    degraded: int = 0  # available but degraded
    updated: int = 0
    waiting: int = 0  # not updated, Progressing=False
    updating: list[UpdatingOperator] = field(default_factory=list)

    def status_summary(self) -> str:
        parts = [f"{self.total - self.unavailable - self.degraded} Healthy"]
        if self.unavailable > 0:
            parts.append(f"{self.unavailable} Unavailable")
        if self.degraded > 0:
            parts.append(f"{self.degraded} Available but degraded")
        return ", ".join(parts)


@dataclass(frozen=True)
class Versions:
    target: str = "unknown"
    previous: str = "unknown"
    is_target_install: bool = False
    is_previous_partial: bool = False
    is_multi_arch_migration: bool = False

    def __str__(self) -> str:
        if self.is_target_install:
            return f"{self.target} (a new install)"
        if self.is_previous_partial:
            return f"{self.target} (from incomplete {self.previous})"
        if self.is_multi_arch_migration:
            return f"{self.target} to Multi-Architecture"
        return f"{self.target} (from {self.previous})"


@dataclass
class ControlPlane:
    """oc's ``controlPlaneStatusDisplayData``, durations in nanoseconds."""

    assessment: str = PROGRESSING
    completion: float = 0.0  # percent
    completion_at: int = ZERO_TIME
    started_at: int | None = None
    duration: int = 0  # rounded as oc prints it
    updating_for: int = 0  # not rounded
    est_duration: int = 0
    est_time_to_complete: int = 0
    operators: Operators = field(default_factory=Operators)
    target_version: Versions = field(default_factory=Versions)

    @property
    def completed(self) -> bool:
        return self.operators.updated == self.operators.total

    @property
    def estimated_completed_at(self) -> int | None:
        if not self.est_time_to_complete or self.completed:
            return None
        return self.completion_at + self.est_time_to_complete


@dataclass
class UpgradeStatus:
    """Everything the view shows: whether an update runs, the control plane, the health insights."""

    now: int
    updating: bool
    control_plane: ControlPlane | None = None
    insights: list[Insight] = field(default_factory=list)  # sorted; "Update is proceeding well" when none
    health_detailed: bool = False  # oc prints the long form only when there are real insights
    operators: list[dict[str, Any]] = field(default_factory=list)  # per-operator status insights (API shape)
    pending: PendingRelease | None = None  # not updating: a requested release not accepted (ReleaseAccepted)
    pools: Pools | None = None  # the nodes of each machine config pool, when they were read


def is_platform_operator(co: ClusterOperator) -> bool:
    """A ClusterOperator of the payload: annotated ``include.``/``exclude.release.openshift.io/…``."""
    return any(k.startswith(("exclude.release.openshift.io/", "include.release.openshift.io/"))
               for k in co.metadata.annotations)


def latest_transition(cv: ClusterVersion | Mapping[str, Any] | None,
                      cos: Sequence[ClusterOperator | Mapping[str, Any]]) -> int | None:
    """The moment saved objects describe: the latest ``lastTransitionTime`` of the ClusterVersion's and the
    ClusterOperators' conditions (oc's mocked "now", without the nanoseconds it adds)."""
    conditions = [*(ClusterVersion.of(cv).status.conditions if cv is not None else ()),
                  *(c for co in cos for c in ClusterOperator.of(co).status.conditions)]
    times = [c.since for c in conditions if c.since is not None]
    return max(times) if times else None


# --- ClusterOperators -----------------------------------------------------------------------------


def _co_insights(name: str, available: Condition | None, degraded: Condition | None, now: int) -> list[Insight]:
    """``coInsights``: unavailable for 5 minutes (20: an error), degraded for 5 minutes (40: an error)."""
    scope = (Resource(CV_GROUP, "ClusterOperator", name),)
    found = []
    if available is not None and available.status == "False" and now > since_ns(available) + UNAVAILABLE_WARNING:
        level = ERROR if now > since_ns(available) + UNAVAILABLE_ERROR else WARNING
        found.append(Insight(available.since, "ControlPlane", scope, level, IMPACT_API_AVAILABILITY,
                             f"Cluster Operator {name} is unavailable ({available.reason})",
                             available.message or "<no message>", RUNBOOK_DOWN))
    if degraded is not None and degraded.status == "True" and now > since_ns(degraded) + DEGRADED_WARNING:
        level = ERROR if now > since_ns(degraded) + DEGRADED_ERROR else WARNING
        found.append(Insight(degraded.since, "ControlPlane", scope, level, IMPACT_API_AVAILABILITY,
                             f"Cluster Operator {name} is degraded ({degraded.reason})",
                             degraded.message or "<no message>", RUNBOOK_DEGRADED))
    return found


def _is_updated(co: ClusterOperator, name: str, target: str, mco_image: str | None) -> bool:
    versions = co.status.versions
    if name == MACHINE_CONFIG and mco_image is not None and any(
            v.name == "operator-image" and v.version != mco_image for v in versions):
        return False  # its operator image is still changing: a multi-arch migration
    return any(v.name == "operator" and v.version == target for v in versions)


def _operator_insight(name: str, updated: bool, progressing: Condition | None, available: Condition | None,
                      degraded: Condition | None) -> dict[str, Any]:
    """The ClusterOperatorProgressInsight status of one operator (its Updating and Healthy conditions)."""
    if updated:
        updating = {"type": "Updating", "status": "False", "reason": "Updated"}
    elif progressing is not None and progressing.status == "True":
        updating = {"type": "Updating", "status": "True", "reason": "Progressing", "message": progressing.message}
    else:
        updating = {"type": "Updating", "status": "False", "reason": "Pending"}
    if available is None or available.status != "True":
        healthy = {"type": "Healthy", "status": "False", "reason": "Unavailable",
                   "message": available.message if available else ""}
    elif degraded is not None and degraded.status == "True":
        healthy = {"type": "Healthy", "status": "False", "reason": "Degraded", "message": degraded.message}
    else:
        healthy = {"type": "Healthy", "status": "True", "reason": "AsExpected"}
    return {"name": name, "conditions": [updating, healthy]}


# --- the estimate ---------------------------------------------------------------------------------


def baseline_duration(history: Sequence[UpdateHistory]) -> int:
    """``baselineDuration``: the last completed update's duration (neither the current one nor the
    install), else an hour."""
    if len(history) < 3:
        return 60 * MINUTE
    for item in history[1:-1]:
        if item.state == COMPLETED:
            return _ns(item.completion_time) - _ns(item.started_time)
    return 60 * MINUTE


def timewise_complete(co_completion: float) -> float:
    """``timewiseComplete``: the share of the time an update takes by the share of operators updated
    (oc's curve fit: 97 % of the operators at 67 % of the time)."""
    x = co_completion
    if x < 0.25:
        return -0.03078788 + 2.62886 * x - 3.823954 * x ** 2
    if x < 0.9:
        return 0.1851215 + 1.64994 * x - 4.676898 * x ** 2 + 5.451824 * x ** 3 - 2.125286 * x ** 4
    return 25053.32 - 107394.3 * x + 172527.2 * x ** 2 - 123107 * x ** 3 + 32921.81 * x ** 4


def estimate_completion(baseline: int, to_last_observed_progress: int, updating_for: int,
                        co_completion: float) -> int:
    """``estimateCompletion``: the time remaining, 20 % over (or under, when late), in nanoseconds."""
    if co_completion >= 1:
        return 0
    completion = timewise_complete(co_completion)
    if co_completion > 0 and completion > 0 and to_last_observed_progress > 5 * MINUTE:
        total_seconds = (to_last_observed_progress / SECOND) / completion
    else:
        total_seconds = baseline / SECOND
    remaining = total_seconds - updating_for / SECOND
    overestimate = 1.2 if remaining >= 0 else 1 / 1.2
    estimate = math.trunc(remaining * overestimate) * SECOND  # time.Duration(float) * time.Second
    return go_round(estimate, MINUTE) if estimate > 10 * MINUTE else go_round(estimate, SECOND)


# --- versions -------------------------------------------------------------------------------------


def _ns(when: Time | None) -> int:
    """A timestamp in nanoseconds; Go's zero time when there is none."""
    return ZERO_TIME if when is None else when.ns


def versions_from_history(history: Sequence[UpdateHistory], cv_scope: Resource,
                          control_plane_completed: bool) -> tuple[Versions, list[Insight]]:
    """``versionsFromHistory``: target and previous version, and the "never completed" insight."""
    target = history[0].version if history else "unknown"
    if len(history) == 1:
        return Versions(target=target, is_target_install=True), []
    if not history:
        return Versions(), []
    previous = history[1].version
    partial = history[1].state == "Partial"
    versions = Versions(target, previous, False, partial, multi_arch_migration(history))
    if control_plane_completed or not partial:
        return versions, []
    last_complete = next((h.version for h in history[2:] if h.state == COMPLETED), "unknown")
    started = history[0].started_time
    insight = Insight(None if started is None else started.ns, "ControlPlane", (cv_scope,), WARNING, IMPACT_NONE,
                      f"Previous update to {previous} never completed, last complete update was {last_complete}",
                      f"Current update to {target} was initiated while the previous update to version {previous} "
                      "was still in progress", DOCS_HISTORY)
    return versions, [insight]


# --- the control plane ----------------------------------------------------------------------------


def _cv_insights(cv: ClusterVersion, name: str, now: int) -> list[Insight]:
    scope = (Resource(CV_GROUP, "ClusterVersion", name),)
    failing = cv.status.condition("Failing")
    if failing is None:
        return [Insight(now, "ControlPlane", scope, WARNING, IMPACT_UPDATE_STALLED,
                        f"Cluster Version {name} has no Failing condition", NO_FAILING_DESCRIPTION, RUNBOOK_DEGRADED)]
    if failing.status != "False":
        verb = "may be" if failing.status == "Unknown" else "is"
        return [Insight(failing.since, "ControlPlane", scope, WARNING, IMPACT_UPDATE_STALLED,
                        f"Cluster Version {name} {verb} failing to proceed with the update ({failing.reason})",
                        failing.message, RUNBOOK_DEGRADED)]
    return []


def assess_control_plane(cv: ClusterVersion, cos: Sequence[ClusterOperator], now: int,
                         mco_image: str | None = None) -> tuple[ControlPlane, list[Insight], list[dict[str, Any]]]:
    """``assessControlPlaneStatus``: the control plane's display data, its insights, and each operator's
    status insight."""
    data = ControlPlane()
    cv_name = cv.name
    target = cv.status.desired.version
    insights = _cv_insights(cv, cv_name, now)
    operator_insights = []
    last_observed_progress: int | None = None
    mco_started_updating: int | None = None
    ops = data.operators
    for co in cos:
        if not is_platform_operator(co):
            continue
        name = co.name
        updated = _is_updated(co, name, target, mco_image)
        if updated:
            ops.updated += 1
        conditions = co.status.conditions
        available, degraded = find_last(conditions, "Available"), find_last(conditions, "Degraded")
        progressing = find_last(conditions, "Progressing")
        ops.total += 1
        if progressing is not None:
            if last_observed_progress is None or since_ns(progressing) > last_observed_progress:
                last_observed_progress = since_ns(progressing)
            if not updated and progressing.status == "True":
                ops.updating.append(UpdatingOperator(name, progressing))
            if not updated and progressing.status == "False":
                ops.waiting += 1
            if progressing.status == "True" and name == MACHINE_CONFIG and not updated:
                mco_started_updating = since_ns(progressing)
        if available is None or available.status != "True":
            ops.unavailable += 1
        elif degraded is not None and degraded.status == "True":
            ops.degraded += 1
        insights.extend(_co_insights(name, available, degraded, now))
        operator_insights.append(_operator_insight(name, updated, progressing, available, degraded))

    completed = ops.updated == ops.total
    data.assessment = COMPLETED if completed else PROGRESSING
    if mco_started_updating is not None and ops.total - ops.updated == 1:
        last_observed_progress = mco_started_updating  # daemonsets flip Progressing while nodes reboot

    history = cv.status.history
    to_last_observed_progress = 0
    if history:
        started = history[0].started_time
        started_ns = _ns(started)
        data.started_at = None if started is None else started.ns
        observed = last_observed_progress if last_observed_progress is not None else ZERO_TIME
        if not observed > started_ns:
            observed = now
        to_last_observed_progress = observed - started_ns
        if history[0].state == COMPLETED:
            data.completion_at = _ns(history[0].completion_time)
        else:
            data.completion_at = now
        data.updating_for = data.completion_at - started_ns
        data.duration = go_round(data.updating_for, MINUTE if data.updating_for > 10 * MINUTE else SECOND)

    data.target_version, version_insights = versions_from_history(
        history, Resource(CV_GROUP, "ClusterVersion", cv_name), completed)
    insights.extend(version_insights)

    co_completion = ops.updated / ops.total if ops.total else math.nan
    data.completion = co_completion * 100.0
    if co_completion <= 1 and data.assessment != COMPLETED:
        data.est_time_to_complete = estimate_completion(baseline_duration(history), to_last_observed_progress,
                                                        data.updating_for, co_completion)
        data.est_duration = go_truncate(data.updating_for + data.est_time_to_complete, MINUTE)
        if data.est_time_to_complete < -10 * MINUTE:
            data.assessment = STALLED
        elif data.est_time_to_complete < 0:
            data.assessment = PROGRESSING_SLOW
    return data, insights, operator_insights


# --- health ---------------------------------------------------------------------------------------


def assess_insights(insights: Sequence[Insight], updating_for: int, now: int) -> tuple[list[Insight], bool]:
    """``assessUpdateInsights``: complete insights, newest first (Go's ``sort.Slice``: not stable), then by
    level (highest first, stable); "Update is proceeding well" when there are none (and then the long form is
    not worth showing)."""
    kept = [i for i in insights if not i.incomplete]
    go_sort_slice(kept, lambda a, b: _started(a) > _started(b))
    kept.sort(key=lambda i: -i.level)
    if not kept:
        return [Insight(now - updating_for, "", (), INFO, IMPACT_NONE, "Update is proceeding well")], False
    return kept, True


def _started(insight: Insight) -> int:
    return ZERO_TIME if insight.started_at is None else insight.started_at


def multi_arch_migration(history: Sequence[UpdateHistory]) -> bool:
    """``multiArchMigration``: the same version again, from another image."""
    return len(history) > 1 and history[0].version == history[1].version and history[0].image != history[1].image


def assess(cv: ClusterVersion | Mapping[str, Any] | None, cos: Sequence[ClusterOperator | Mapping[str, Any]],
           now: int, mco_image: str | None = None, machines: Machines | None = None,
           alerts: Sequence[Alert] | None = None) -> UpgradeStatus:
    """The whole view at ``now`` (nanoseconds), or :class:`StatusUnavailable` with oc's message (status.go
    ``Run``).  With ``machines`` the pools and nodes are assessed too (and an update whose worker pools are
    still outdated is shown though the ClusterVersion is done); with ``alerts`` (Prometheus' firing alerts)
    their insights are added.  Objects not read into views yet are read here (:meth:`cvo.objects.Object.of`)."""
    if cv is None:
        raise StatusUnavailable("no cluster version information available - you must be connected to an OpenShift "
                                "version 4 server to fetch the current version")
    if not cos:
        raise StatusUnavailable("no cluster operator information available - you must be connected to an OpenShift "
                                "version 4 server")
    cv_view, co_views = ClusterVersion.of(cv), [ClusterOperator.of(co) for co in cos]
    progressing = cv_view.status.condition("Progressing")
    if progressing is None:
        raise StatusUnavailable("no current Progressing info, see `oc describe clusterversion` for more details.")
    history = cv_view.status.history
    pools = None
    if machines is not None:
        multi_arch = multi_arch_migration(history) and progressing.status == "True"
        pools = assess_pools(cv_view, machines, multi_arch, now)
    if progressing.status != "True" and not (pools is not None and pools.worker_outdated):
        # and a release asked for that has not started, if one was
        return UpgradeStatus(now=now, updating=False, pending=pending_release(cv_view))
    started_time = history[0].started_time if history else progressing.last_transition_time
    started = ZERO_TIME if started_time is None else started_time.ns
    updating_for = go_round(now - started, SECOND)
    insights = list(pools.insights) if pools is not None else []
    insights.extend(alert_insights(alerts or (), started))
    control_plane, cp_insights, operator_insights = assess_control_plane(cv_view, co_views, now, mco_image)
    insights.extend(cp_insights)
    sorted_insights, detailed = assess_insights(insights, updating_for, now)
    return UpgradeStatus(now, True, control_plane, sorted_insights, detailed, operator_insights, pools=pools)
