"""Why a node is unavailable, and the machine-config daemon's annotations that say where a node is.

A port of openshift/oc ``pkg/cli/admin/upgrade/status/mco/layered_node_state.go`` (``LayeredNodeState``:
``IsUnavailable``, ``GetUnavailableReason``, ``GetUnavailableMessage``, ``GetUnavailableDescription``,
``GetUnavailableSince``, ``SeriouslyUnavailable``) and the constants of ``mco/daemon_constants.go`` and
``mco/controller_common_constants.go`` it reads.  ``SeriouslyUnavailable`` reads ``now`` where oc reads the
wall clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from cvo.objects import MachineConfigPool, Node
from cvo.payload.gostrings import go_quote
from cvo.status.godur import MINUTE, ZERO_TIME

# status/mco/daemon_constants.go
CURRENT_CONFIG = "machineconfiguration.openshift.io/currentConfig"
DESIRED_CONFIG = "machineconfiguration.openshift.io/desiredConfig"
CURRENT_IMAGE = "machineconfiguration.openshift.io/currentImage"
DESIRED_IMAGE = "machineconfiguration.openshift.io/desiredImage"
STATE = "machineconfiguration.openshift.io/state"
REASON = "machineconfiguration.openshift.io/reason"
DESIRED_DRAIN = "machineconfiguration.openshift.io/desiredDrain"
LAST_APPLIED_DRAIN = "machineconfiguration.openshift.io/lastAppliedDrain"
DRAIN = "drain"
STATE_WORKING, STATE_DONE, STATE_DEGRADED = "Working", "Done", "Degraded"
STATE_REBOOTING, STATE_UNRECONCILABLE = "Rebooting", "Unreconcilable"
# status/mco/controller_common_constants.go
LAYERING_ENABLED = "machineconfiguration.openshift.io/layering-enabled"
LAYERED_IMAGE = "machineconfiguration.openshift.io/newestImageEquivalentConfig"

# layered_node_state.go: why a node is unavailable
MCD_WORK_IN_PROGRESS = "Machine Config Daemon is processing the node"
UNSCHEDULABLE = "Node is marked unschedulable"
NOT_READY = "Not ready"
DISK_PRESSURE = "Disk pressure"
NETWORK_UNAVAILABLE = "Network unavailable"


@dataclass(frozen=True)
class _Bad:
    reason: str
    message: str = ""
    since: int | None = None


class NodeState:
    """``LayeredNodeState``: the reasons a node is unavailable, gathered as its checks run."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.annotations = node.metadata.annotations
        self.unavailable: list[_Bad] = []

    def _mcd_state(self, state: str) -> bool:
        return self.annotations.get(STATE, "") == state != ""

    def _done(self) -> bool:
        """``isNodeDone``: config and image done, the daemon Done."""
        a = self.annotations
        current, desired = a.get(CURRENT_CONFIG, ""), a.get(DESIRED_CONFIG, "")
        if not current or not desired or current != desired:
            return False
        if DESIRED_IMAGE in a or CURRENT_IMAGE in a:
            d, c = a.get(DESIRED_IMAGE, ""), a.get(CURRENT_IMAGE, "")
            if not d or not c or d != c:
                return False
        return self._mcd_state(STATE_DONE)

    def _ready(self) -> bool:
        """``checkNodeReady``: Ready, no disk pressure, network, schedulable."""
        ok = True
        for c in self.node.status.conditions:
            reason = ""
            if c.type == "Ready" and c.status != "True":
                reason = NOT_READY
            elif c.type == "DiskPressure" and c.status != "False":
                reason = DISK_PRESSURE
            elif c.type == "NetworkUnavailable" and c.status != "False":
                reason = NETWORK_UNAVAILABLE
            if reason:
                self.unavailable.append(_Bad(reason, c.message, c.since))
                ok = False
        if self.node.spec.unschedulable:
            self.unavailable.append(_Bad(UNSCHEDULABLE))
            ok = False
        return ok

    def _desired_image_is_pools(self, pool: MachineConfigPool) -> bool:
        """``isImageAnnotationEqualToPool`` for the desired image."""
        value = self.annotations.get(DESIRED_IMAGE, "")
        image = pool.metadata.annotations.get(LAYERED_IMAGE, "")
        if LAYERING_ENABLED in pool.metadata.labels and image:
            if value == image:
                return True
            self.unavailable.append(_Bad(f"Node has an unexpected annotation {LAYERED_IMAGE}={image}"))
            return False
        return value == ""

    def is_unavailable(self, pool: MachineConfigPool) -> bool:
        """``IsUnavailable``."""
        if self._ready():
            if self._done() or self._mcd_state(STATE_DEGRADED) or self._mcd_state(STATE_UNRECONCILABLE):
                return False
            self.unavailable.append(_Bad(MCD_WORK_IN_PROGRESS))
        return self._desired_image_is_pools(pool)

    def unavailable_since(self) -> int | None:
        times = [b.since for b in self.unavailable if b.since is not None]
        return min(times) if times else None

    def reason(self) -> str:
        return " | ".join(b.reason for b in self.unavailable)

    def seriously_unavailable(self, now: int) -> bool:
        for b in self.unavailable:
            if b.reason in (UNSCHEDULABLE, MCD_WORK_IN_PROGRESS):
                continue
            since = since_ns_of(b.since)
            if b.reason == NOT_READY and now - since < 5 * MINUTE:
                continue
            if b.reason in (DISK_PRESSURE, NETWORK_UNAVAILABLE) and now - since < MINUTE:
                continue
            return True
        return False

    def message(self) -> str:
        name = self.node.name
        said = {NOT_READY: f"Node {name} is not ready", DISK_PRESSURE: f"Node {name} has disk pressure",
                NETWORK_UNAVAILABLE: f"Node {name} has unavailable network"}
        return " | ".join(said.get(b.reason, b.reason) for b in self.unavailable)

    def description(self) -> str:
        conditions = {NOT_READY: ("Ready", "True"), DISK_PRESSURE: ("DiskPressure", "False"),
                      NETWORK_UNAVAILABLE: ("NetworkUnavailable", "False")}
        out = []
        for b in self.unavailable:
            if b.reason in conditions:
                type_, good = conditions[b.reason]
                out.append(f"Node has a {type_}!={good} condition with Reason {go_quote(b.reason)} and message "
                           f"{go_quote(b.message)}")
            else:
                out.append(b.reason)
        return " | ".join(out)


def since_ns_of(when: int | None) -> int:
    return ZERO_TIME if when is None else when
