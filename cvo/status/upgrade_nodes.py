"""The nodes and machine config pools of ``oc adm upgrade status``, as data.

A port of openshift/oc ``pkg/cli/admin/upgrade/status/workerpool.go`` (``assessNodesStatus``,
``calculatePhase``, ``isNodeDraining``, ``assessMachineConfigPool``, ``machineConfigPoolInsights``,
``nodeInsights``, ``whichPool``); why a node is unavailable is :mod:`cvo.status.node_state`.  A node's
version is the ``release-image-version`` of the rendered MachineConfig its ``currentConfig`` annotation
names; it is updated when that is the version of the ClusterVersion's newest history entry.  Nothing here
reads a clock or a cluster: views and ``now`` in, :class:`Pools` out.

Odd shapes oc would panic or guess on are decided here: a pool without a node selector selects no node, a
node no pool selects is in none, a node several custom pools select is in the first of them in the order
the pools were listed (Go's map order is random), a pool listed twice (no server lists one so) counts once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cvo.objects import ClusterVersion, MachineConfig, MachineConfigPool, Node
from cvo.objects.clusterversion import UpdateHistory
from cvo.objects.machineconfigpool import LabelSelector
from cvo.status.gosort import go_sort_slice
from cvo.status.node_state import (
    CURRENT_CONFIG,
    DESIRED_CONFIG,
    DESIRED_DRAIN,
    DRAIN,
    LAST_APPLIED_DRAIN,
    REASON,
    STATE,
    STATE_DEGRADED,
    STATE_DONE,
    STATE_REBOOTING,
    STATE_UNRECONCILABLE,
    NodeState,
)
from cvo.status.upgrade_insight import (
    ERROR,
    IMPACT_UPDATE_STALLED,
    WARNING,
    Insight,
    Resource,
    StatusUnavailable,
)

MASTER, WORKER = "master", "worker"
MC_GROUP = "machineconfiguration.openshift.io"

# Node phases (workerpool.go ``nodePhase``): the order is the sort order.
DRAINING, UPDATING, REBOOTING, PAUSED, PENDING, UPDATED = range(6)
PHASE_NAMES = ("Draining", "Updating", "Rebooting", "Paused", "Pending", "Updated")
# Node assessments (``nodeAssessment``): the order is the sort order.
N_DEGRADED, N_UNAVAILABLE, N_PROGRESSING, N_EXCLUDED, N_OUTDATED, N_COMPLETED = range(6)
ASSESSMENT_NAMES = ("Degraded", "Unavailable", "Progressing", "Excluded", "Outdated", "Completed")

# Pool assessments (controlplane.go ``assessmentState``).
POOL_COMPLETED, POOL_PENDING, POOL_DEGRADED = "Completed", "Pending", "Degraded"
POOL_EXCLUDED, POOL_PROGRESSING = "Excluded", "Progressing"

IMPACT_UPDATE_SPEED = "Update Speed"
MCO_DOCS = ("https://docs.openshift.com/container-platform/latest/post_installation_configuration/"
            "machine-configuration-tasks.html#understanding-the-machine-config-operator")
PAUSED_DOCS = ("https://docs.openshift.com/container-platform/latest/support/troubleshooting/"
               "troubleshooting-operator-issues.html#troubleshooting-disabling-autoreboot-mco_troubleshooting-"
               "operator-issues")
PAUSED_DESCRIPTION = ("Pool is paused, which stops all changes to the nodes in the pool, including updates. The "
                      "nodes will not be updated until the pool is unpaused by the administrator.")


@dataclass(frozen=True)
class Machines:
    """What the nodes' assessment reads: the pools (in the order listed), the nodes, the rendered configs."""

    pools: Sequence[MachineConfigPool] = ()
    nodes: Sequence[Node] = ()
    configs: Sequence[MachineConfig] = ()


@dataclass
class NodeRow:
    """``nodeDisplayData``: one line of a node table."""

    name: str
    assessment: int
    phase: int
    version: str
    estimate: str
    message: str
    is_unavailable: bool
    is_degraded: bool
    is_updating: bool
    is_updated: bool


@dataclass
class Overview:
    """``nodesOverviewDisplayData``."""

    total: int = 0
    available: int = 0
    progressing: int = 0
    outdated: int = 0
    draining: int = 0
    excluded: int = 0
    degraded: int = 0


@dataclass
class PoolRow:
    """``poolDisplayData``: a pool's assessment, completion (percent) and its nodes, sorted."""

    name: str
    assessment: str = ""
    completion: float = 0.0
    overview: Overview = field(default_factory=Overview)
    nodes: list[NodeRow] = field(default_factory=list)


@dataclass
class Pools:
    """What the pools add to the status: the master pool, the others in the order listed, their insights."""

    control_plane: PoolRow | None = None
    workers: list[PoolRow] = field(default_factory=list)
    insights: list[Insight] = field(default_factory=list)

    @property
    def worker_outdated(self) -> bool:
        """oc's ``isWorkerPoolOutdated``: a worker pool with nodes not all updated (the update goes on)."""
        return any(p.overview.total > 0 and p.completion != 100 for p in self.workers)


# --- label selectors (apimachinery metav1.LabelSelectorAsSelector, labels.Requirement.Matches) ------------


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` match; no selector matches nothing, an empty one everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    for r in selector.match_expressions:
        present = r.key in labels
        if r.operator == "In" and not (present and labels[r.key] in r.values):
            return False
        if r.operator == "NotIn" and present and labels[r.key] in r.values:
            return False
        if r.operator == "Exists" and not present:
            return False
        if r.operator == "DoesNotExist" and present:
            return False
    return True


def check_selector(pool: MachineConfigPool) -> None:
    """``LabelSelectorAsSelector``'s refusals, as oc reports them (status.go ``Run``)."""
    selector = pool.spec.node_selector
    if selector is None:
        return
    for r in selector.match_expressions:
        valid = (r.operator in ("In", "NotIn") and len(r.values) > 0) or (
            r.operator in ("Exists", "DoesNotExist") and not r.values)
        if not valid or not r.key:
            raise StatusUnavailable(f"failed to get label selector from the pool: {pool.name}")


def which_pool(node: Node, master: MachineConfigPool | None, worker: MachineConfigPool | None,
               custom: Sequence[MachineConfigPool]) -> str:
    """``whichPool``: master first, then a custom pool, then worker; "" for none."""
    labels = node.metadata.labels
    if master is not None and selector_matches(master.spec.node_selector, labels):
        return MASTER
    for pool in custom:
        if selector_matches(pool.spec.node_selector, labels):
            return pool.name
    if worker is not None and selector_matches(worker.spec.node_selector, labels):
        return WORKER
    return ""


# --- nodes and pools (workerpool.go) ------------------------------------------------------------------


def _newest(history: Sequence[UpdateHistory], version: str) -> bool:
    """``isLatestUpdateHistoryVersionEqualTo``."""
    return bool(history) and history[0].version == version


def _draining(node: Node, updating: bool) -> bool:
    """``isNodeDraining``."""
    a = node.metadata.annotations
    desired, applied = a.get(DESIRED_DRAIN, ""), a.get(LAST_APPLIED_DRAIN, "")
    if not applied or not desired:
        return False
    if desired != applied and desired.split("-")[0] == DRAIN:
        return True
    return updating and a.get(STATE, "") == STATE_DONE


def _phase(pool: MachineConfigPool, node: Node, updating: bool, updated: bool) -> int:
    """``calculatePhase`` and ``mcdUpdatingStateToPhase``."""
    if updating and _draining(node, updating):
        return DRAINING
    if updating:
        state = node.metadata.annotations.get(STATE, "")
        return {STATE_REBOOTING: REBOOTING, STATE_DONE: UPDATED}.get(state, UPDATING)
    if updated:
        return UPDATED
    return PAUSED if pool.spec.paused else PENDING


_ESTIMATES = {PAUSED: (N_EXCLUDED, "-"), PENDING: (N_OUTDATED, "?"), DRAINING: (N_PROGRESSING, "+10m"),
              UPDATING: (N_PROGRESSING, "+5m"), REBOOTING: (N_PROGRESSING, "+5m"), UPDATED: (N_COMPLETED, "-")}


def _node_insights(pool: MachineConfigPool, node: str, summary: str, description: str, unavailable: bool,
                   updating: bool, degraded: bool, unavailable_since: int | None) -> list[Insight]:
    """``nodeInsights``."""
    scope = "ControlPlane" if pool.name == MASTER else "WorkerPool"
    resources = (Resource("", "Node", node),)
    found = []
    if unavailable and not updating:
        found.append(Insight(unavailable_since, scope, resources, WARNING, IMPACT_UPDATE_SPEED, summary, description,
                             MCO_DOCS))
    if degraded:
        found.append(Insight(None, scope, resources, ERROR, IMPACT_UPDATE_STALLED, f"Node {node} is degraded",
                             description, MCO_DOCS))
    return found


def _ellipsize_names(message: str, name: str) -> str:
    return message if len(name) < 8 else message.replace(name, "<node>")


def assess_nodes(cv: ClusterVersion, pool: MachineConfigPool, nodes: Sequence[Node], versions: Mapping[str, str],
                 multi_arch: bool, now: int) -> tuple[list[NodeRow], list[Insight]]:
    """``assessNodesStatus``: the pool's nodes, sorted by assessment, phase and name, and their insights.
    ``versions`` maps a MachineConfig's name to the release it names (only those that name one)."""
    history = cv.status.history
    rows: list[NodeRow] = []
    insights: list[Insight] = []
    for node in nodes:
        a = node.metadata.annotations
        has_desired = DESIRED_CONFIG in a
        desired_config = a.get(DESIRED_CONFIG, "")
        current_config = a.get(CURRENT_CONFIG, "")
        current_version = versions.get(current_config, "")
        desired_version = versions.get(desired_config, "")
        found_current, found_desired = current_version != "", desired_version != ""
        state = NodeState(node)
        unavailable = state.is_unavailable(pool)
        degraded = desired_config != "" and a.get(STATE, "") in (STATE_DEGRADED, STATE_UNRECONCILABLE)
        annotation_matched = current_config == desired_config
        desired_is_pools = desired_config == pool.spec.configuration.name
        updated = found_current and _newest(history, current_version) and (
            not multi_arch or not has_desired or (annotation_matched and desired_is_pools))
        updating = (not updated and found_current and found_desired and _newest(history, desired_version)
                    and not annotation_matched and desired_is_pools)
        phase = _phase(pool, node, updating, updated)
        assessment, estimate = _ESTIMATES[phase]
        message = summary = description = ""
        if unavailable and not updating:
            assessment = N_UNAVAILABLE
            message, summary, description = state.reason(), state.message(), state.description()
            estimate = "-" if updated else "?"
        if degraded:
            assessment = N_DEGRADED
            message = description = a.get(REASON, "")
            estimate = "-" if updated else "?"
        insights.extend(_node_insights(pool, node.name, summary, description, state.seriously_unavailable(now),
                                       updating, degraded, state.unavailable_since()))
        rows.append(NodeRow(node.name, assessment, phase, current_version, estimate,
                            _ellipsize_names(message, node.name), unavailable, degraded, updating, updated))
    go_sort_slice(rows, lambda x, y: (x.assessment, x.phase, x.name) < (y.assessment, y.phase, y.name))
    return rows, insights


def assess_pool(pool: MachineConfigPool, nodes: list[NodeRow]) -> tuple[PoolRow, list[Insight]]:
    """``assessMachineConfigPool`` and ``machineConfigPoolInsights``."""
    row = PoolRow(pool.name, nodes=nodes, overview=Overview(total=len(nodes)))
    o = row.overview
    updated = pending = 0
    for node in nodes:
        if not node.is_unavailable:
            o.available += 1
        if node.is_degraded:
            o.degraded += 1
        if node.phase == PAUSED:
            o.excluded += 1
            o.outdated += 1
        elif node.phase == PENDING:
            pending += 1
            o.outdated += 1
        elif node.phase in (DRAINING, UPDATING, REBOOTING):
            o.draining += node.phase == DRAINING
            o.outdated += 1
            o.progressing += not node.is_degraded
        elif node.phase == UPDATED:
            updated += 1
    if updated == len(nodes):
        row.assessment = POOL_COMPLETED
    elif pending == len(nodes):
        row.assessment = POOL_PENDING
    elif o.degraded > 0:
        row.assessment = POOL_DEGRADED
    elif o.excluded > 0:
        row.assessment = POOL_EXCLUDED
    else:
        row.assessment = POOL_PROGRESSING
    insights = []
    if o.excluded > 0 and pool.spec.paused:
        insights.append(Insight(None, "WorkerPool", (Resource(MC_GROUP, "MachineConfigPool", pool.name),), WARNING,
                                IMPACT_UPDATE_STALLED,
                                f"Outdated nodes in a paused pool '{pool.name}' will not be updated",
                                PAUSED_DESCRIPTION, PAUSED_DOCS))
    row.completion = updated / len(nodes) * 100.0 if nodes else float("nan")
    return row, insights


def config_versions(configs: Sequence[MachineConfig]) -> dict[str, str]:
    """``getOpenShiftVersionOfMachineConfig`` for every config: the first of a name wins, as in oc's loop."""
    versions: dict[str, str] = {}
    for mc in configs:
        if mc.name not in versions:
            versions[mc.name] = mc.release_version
    return {name: v for name, v in versions.items() if v}


def assess_pools(cv: ClusterVersion, machines: Machines, multi_arch: bool, now: int) -> Pools:
    """The nodes of every pool (status.go ``Run``'s loop over the pools); :class:`StatusUnavailable` for a
    pool whose node selector oc cannot read."""
    master: MachineConfigPool | None = None
    worker: MachineConfigPool | None = None
    custom: list[MachineConfigPool] = []
    first: dict[str, MachineConfigPool] = {}
    for pool in machines.pools:
        first.setdefault(pool.name, pool)  # a name twice: the first
    pools = list(first.values())
    for pool in pools:
        check_selector(pool)
        if pool.name == MASTER:
            master = pool
        elif pool.name == WORKER:
            worker = pool
        else:
            custom.append(pool)
    per_pool: dict[str, list[Node]] = {}
    for node in machines.nodes:
        per_pool.setdefault(which_pool(node, master, worker, custom), []).append(node)
    versions = config_versions(machines.configs)
    out = Pools()
    for pool in pools:
        rows, insights = assess_nodes(cv, pool, per_pool.get(pool.name, []), versions, multi_arch, now)
        out.insights.extend(insights)
        row, insights = assess_pool(pool, rows)
        out.insights.extend(insights)
        if pool.name == MASTER:
            out.control_plane = row
        else:
            out.workers.append(row)
    return out
