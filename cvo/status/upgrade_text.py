"""``cvo upgrade status`` as text (oc's layout, line for line) and as data (the Update Status API's names).

A port of the output of openshift/oc ``pkg/cli/admin/upgrade/status``: the control plane template and
``Write`` (controlplane.go), the health table and its long form (health.go), and what ``options.Run``
prints around them (status.go), the node tables and the worker pools (workerpool.go ``writePools``,
``WriteNodes``).
cvo's own addition, the graph-aware forecast (:mod:`cvo.status.forecast`), adds a ``Forecast:`` line and,
with ``--details=operators``, the critical path; without a forecast the text is exactly oc's.
"""

from __future__ import annotations

from typing import Any

from cvo.status.forecast import Forecast
from cvo.status.godur import SECOND, go_truncate, rfc3339, short_duration, tabwrite
from cvo.status.upgrade_insight import LEVEL_NAMES, Insight, since_ns
from cvo.status.upgrade_nodes import (
    ASSESSMENT_NAMES,
    DRAINING,
    MASTER,
    N_PROGRESSING,
    PAUSED,
    PHASE_NAMES,
    PoolRow,
)
from cvo.status.upgrade_status import ControlPlane, UpgradeStatus

DETAILS = ("none", "all", "nodes", "health", "operators")  # oc's order
MAX_NODES = 10  # WriteNodes: without --details=nodes, further nodes in good states are only counted
NOT_UPDATING = "The cluster is not updating.\n"


def _vague_under(actual: int, estimated: int, multi_arch: bool) -> str:
    """oc's ``vagueUnder``."""
    if multi_arch:
        return "N/A for Multi-Architecture Migration"
    if actual < -10 * 60 * SECOND:
        return f"N/A; estimate duration was {short_duration(estimated)}"
    if actual < 10 * 60 * SECOND:
        return "<10m"
    return short_duration(actual)


def ellipsis(text: str, most: int) -> str:
    """controlplane.go ``ellipsis``: at most ``most`` characters, the last three "..." when cut."""
    if len(text) <= most:
        return text
    return text[:max(most, 3) - 3] + "..."


def control_plane_text(cp: ControlPlane, detailed: bool, now: int, forecast: Forecast | None = None) -> str:
    """``controlPlaneStatusDisplayData.Write``: the completed form, or the template and the updating table."""
    ops = cp.operators
    if ops.updated == ops.total:
        return (f"= Control Plane =\nUpdate to {cp.target_version.target} successfully completed at "
                f"{rfc3339(cp.completion_at)} (duration: {short_duration(cp.duration)})\n")
    lines = ["= Control Plane =",
             f"Assessment:      {cp.assessment}",
             f"Target Version:  {cp.target_version}"]
    if ops.updating:
        lines.append(f"Updating:        {', '.join(o.name for o in ops.updating)}")
    lines.append(f"Completion:      {cp.completion:.0f}% ({ops.updated} operators updated, {len(ops.updating)} "
                 f"updating, {ops.waiting} waiting)")
    duration = f"Duration:        {short_duration(cp.duration)}"
    if cp.est_time_to_complete:
        duration += (f" (Est. Time Remaining: "
                     f"{_vague_under(cp.est_time_to_complete, cp.est_duration, cp.target_version.is_multi_arch_migration)})")
    lines.append(duration)
    if forecast is not None:
        lines.append(f"Forecast:        {forecast.summary(now)}")
    lines.append(f"Operator Health: {ops.status_summary()}")
    text = "\n".join(lines) + "\n"
    if detailed and ops.updating:
        rows = "\nNAME\tSINCE\tREASON\tMESSAGE\n"
        for o in ops.updating:
            # a multi-line message: its further lines in the MESSAGE column, under the first (as oc writes them)
            first, *more = o.condition.message.split("\n")
            rows += (f"{o.name}\t{short_duration(now - since_ns(o.condition))}\t{ellipsis(o.condition.reason or '-', 20)}\t"
                     f"{first}\n")
            rows += "".join(f"\t\t\t{line}\n" for line in more)
        text += "\nUpdating Cluster Operators" + tabwrite(rows)
    if detailed and forecast is not None and forecast.critical_path:
        rows = "\nNAME\tSTATE\tEXPECTED\tENDS IN\n"
        for step in forecast.critical_path:
            rows += f"{step.name}\t{step.state}\t{short_duration(step.expected)}\t{short_duration(step.finish - now)}\n"
        text += "\nCritical Path (forecast)" + tabwrite(rows)
        text += forecast.details()
    return text


def pools_text(workers: list[PoolRow]) -> str:
    """``writePools``: the worker pools' table."""
    rows = "\nWORKER POOL\tASSESSMENT\tCOMPLETION\tSTATUS\n"
    for pool in workers:
        o = pool.overview
        if not pool.nodes:
            rows += f"{pool.name}\tEmpty\t\t{o.total} Total\n"
            continue
        status = f"{o.available} Available, {o.progressing} Progressing, {o.draining} Draining"
        # oc ranges over a Go map here (a random order when both show); this is the map literal's order
        for what, count in (("Excluded", o.excluded), ("Degraded", o.degraded)):
            if count > 0:
                status += f", {count} {what}"
        rows += f"{pool.name}\t{pool.assessment}\t{pool.completion:.0f}% ({o.total - o.outdated}/{o.total})\t{status}\n"
    return tabwrite(rows)


def nodes_text(pool: PoolRow | None, detailed: bool) -> str:
    """``poolDisplayData.WriteNodes``: a pool's node table, the first ten nodes and every node in a bad state
    unless ``detailed``, the rest counted."""
    if pool is None or not pool.nodes:
        return ""
    if pool.name == MASTER:
        if pool.completion == 100:
            return f"\nAll control plane nodes successfully updated to {pool.nodes[0].version}\n"
        head = "\nControl Plane Nodes"
    else:
        head = f"\nWorker Pool Nodes: {pool.name}"
    rows = "\nNAME\tASSESSMENT\tPHASE\tVERSION\tEST\tMESSAGE\n"
    total = completed = available = progressing = outdated = draining = excluded = 0
    for i, node in enumerate(pool.nodes):
        if not detailed and i >= MAX_NODES and not node.is_degraded and (not node.is_unavailable or node.is_updating):
            total += 1
            completed += node.is_updated
            outdated += not node.is_updated
            available += not node.is_unavailable
            draining += node.phase == DRAINING
            excluded += node.phase == PAUSED
            progressing += node.assessment == N_PROGRESSING
            continue
        rows += (f"{node.name}\t{ASSESSMENT_NAMES[node.assessment]}\t{PHASE_NAMES[node.phase]}\t"
                 f"{node.version or '?'}\t{node.estimate}\t{node.message}\n")
    text = head + tabwrite(rows)
    if total > 0:
        text += (f"...\nOmitted additional {total} Total, {completed} Completed, {available} Available, {progressing} "
                 f"Progressing, {outdated} Outdated, {draining} Draining, {excluded} Excluded, and 0 Degraded nodes.\n"
                 "Pass along --details=nodes to see all information.\n")
    return text


def _since(insight: Insight, now: int) -> str:
    if insight.started_at is None:
        return "-"
    return short_duration(go_truncate(now - insight.started_at, SECOND))


def _resource_kind(group: str, kind: str) -> str:
    text = f"{kind.lower()}s"
    return f"{text}.{group}: " if group else f"{text}: "


def health_text(insights: list[Insight], detailed: bool, now: int) -> str:
    """``updateHealthData.Write``: the table, or with ``detailed`` the long form."""
    out = ["= Update Health =\n"]
    if detailed:
        pad = len("Description: ")
        for i, insight in enumerate(insights):
            out.append(f"Message: {insight.summary}\n")
            out.append(f"  {'Since:':<{pad}}{_since(insight, now)}\n")
            out.append(f"  {'Level:':<{pad}}{LEVEL_NAMES.get(insight.level, 'Unknown')}\n")
            out.append(f"  {'Impact:':<{pad}}{insight.impact_type}\n")
            out.append(f"  {'Reference:':<{pad}}{insight.reference}\n")
            if insight.resources:
                kinds: dict[str, list[str]] = {}
                for r in insight.resources:
                    name = f"{r.namespace}/{r.name}" if r.namespace else r.name
                    kinds.setdefault(_resource_kind(r.group, r.kind), []).append(name)
                kind_pad = max(len(k) for k in kinds)
                out.append("  Resources:\n")
                for kind in sorted(kinds):
                    out.append(f"    {kind:<{kind_pad}}{', '.join(sorted(kinds[kind]))}\n")
            description = insight.description.replace("\n", "\n" + " " * (pad + 2) + ", ")
            out.append(f"  {'Description:':<{pad}}{description}\n")
            if i + 1 < len(insights):
                out.append("\n")
        return "".join(out)
    rows = "SINCE\tLEVEL\tIMPACT\tMESSAGE\n" + "".join(
        f"{_since(i, now)}\t{LEVEL_NAMES.get(i.level, 'Unknown')}\t{i.impact_type}\t{i.summary}\n" for i in insights)
    out.append(tabwrite(rows))
    if len(insights) > 1 or insights[0].level != 0:
        out.append("\nRun with --details=health for additional description and links to related online documentation\n")
    return "".join(out)


def render(status: UpgradeStatus, details: str = "none", forecast: Forecast | None = None) -> str:
    """The whole text of ``cvo upgrade status``."""
    if not status.updating or status.control_plane is None:
        return NOT_UPDATING
    operators = details in ("operators", "all")
    health = details in ("health", "all")
    nodes = details in ("nodes", "all")
    text = control_plane_text(status.control_plane, operators, status.now, forecast)
    pools = status.pools
    if pools is not None:
        text += nodes_text(pools.control_plane, nodes)
        if any(p.nodes for p in pools.workers):
            text += "\n= Worker Upgrade =\n" + pools_text(pools.workers)
            cp = status.control_plane
            if forecast is not None and cp.operators.updated == cp.operators.total:
                # the control plane's section is the completed form: the forecast of the rest goes here
                text += f"\nForecast:        {forecast.summary(status.now)}\n"
            text += "".join(nodes_text(p, nodes) for p in pools.workers)
    text += "\n"
    text += health_text(status.insights, status.health_detailed and health, status.now)
    return text


# --- data: the Update Status API's names --------------------------------------------------------------


def _time(ns: int | None) -> str | None:
    return None if ns is None else rfc3339(ns)


def _insight_data(insight: Insight, now: int) -> dict[str, Any]:
    """An UpdateHealthInsightStatus: startedAt, scope, impact, remediation."""
    return {
        "startedAt": _time(insight.started_at),
        "since": _since(insight, now),
        "scope": {"type": insight.scope_type,
                  "resources": [{"group": r.group, "resource": f"{r.kind.lower()}s", "name": r.name,
                                 **({"namespace": r.namespace} if r.namespace else {})} for r in insight.resources]},
        "impact": {"level": LEVEL_NAMES.get(insight.level, "Unknown"), "type": insight.impact_type,
                   "summary": insight.summary, "description": insight.description},
        "remediation": {"reference": insight.reference},
    }


def _pool_data(pool: PoolRow) -> dict[str, Any]:
    """A MachineConfigPoolProgressInsightStatus (its summaries) with its NodeStatusInsights, as oc shows them."""
    o = pool.overview
    return {
        "name": pool.name,
        "scopeType": "ControlPlane" if pool.name == MASTER else "WorkerPool",
        "assessment": pool.assessment if pool.nodes else "Empty",
        "completion": None if not pool.nodes else round(pool.completion),
        "summaries": {"total": o.total, "available": o.available, "progressing": o.progressing,
                      "outdated": o.outdated, "draining": o.draining, "excluded": o.excluded, "degraded": o.degraded},
        "nodes": [{"name": n.name, "assessment": ASSESSMENT_NAMES[n.assessment], "phase": PHASE_NAMES[n.phase],
                   "version": n.version or None, "estimate": n.estimate, "message": n.message} for n in pool.nodes],
    }


def to_data(status: UpgradeStatus, forecast: Forecast | None = None) -> dict[str, Any]:
    """The assessment as data: ``controlPlane`` is a ClusterVersionProgressInsightStatus (plus what oc
    prints that the API has no field for), ``clusterOperators`` ClusterOperatorProgressInsightStatuses,
    ``pools`` the machine config pools and their nodes (when read), ``health`` UpdateHealthInsightStatuses."""
    doc: dict[str, Any] = {"updating": status.updating, "evaluatedAt": rfc3339(status.now)}
    cp = status.control_plane
    if not status.updating or cp is None:
        return doc
    v = cp.target_version
    target: dict[str, Any] = {"version": v.target}
    if v.is_target_install:
        target["metadata"] = [{"key": "Installation"}]
    versions: dict[str, Any] = {"target": target}
    if not v.is_target_install:
        versions["previous"] = {"version": v.previous, **({"metadata": [{"key": "Partial"}]}
                                                        if v.is_previous_partial else {})}
    ops = cp.operators
    completion = None if ops.total == 0 else int(cp.completion)
    doc["controlPlane"] = {
        "name": "version",
        "assessment": cp.assessment,
        "versions": versions,
        "completionPercent": completion,
        "startedAt": _time(cp.started_at),
        "completedAt": _time(cp.completion_at) if cp.completed else None,
        "estimatedCompletedAt": _time(cp.estimated_completed_at),
        "duration": short_duration(cp.duration),
        "estimatedTimeRemaining": (None if not cp.est_time_to_complete else
                                   _vague_under(cp.est_time_to_complete, cp.est_duration, v.is_multi_arch_migration)),
        "operators": {"total": ops.total, "updated": ops.updated, "updating": [o.name for o in ops.updating],
                      "waiting": ops.waiting, "unavailable": ops.unavailable, "degraded": ops.degraded,
                      "summary": ops.status_summary()},
        "conditions": [{"type": "Updating", "status": "False" if cp.completed else "True",
                        "reason": "NotProgressing" if cp.completed else "Progressing"}],
    }
    doc["clusterOperators"] = status.operators
    if status.pools is not None:
        pools = [status.pools.control_plane] if status.pools.control_plane is not None else []
        doc["pools"] = [_pool_data(p) for p in [*pools, *status.pools.workers]]
    doc["health"] = [_insight_data(i, status.now) for i in status.insights]
    if forecast is not None:
        doc["forecast"] = forecast.to_data(status.now)
    return doc
