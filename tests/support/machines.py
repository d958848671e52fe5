"""Builders of MachineConfigPools, Nodes and rendered MachineConfigs for the upgrade status tests, as the
machine-config operator writes them (annotations of openshift/machine-config-operator
``pkg/daemon/constants/constants.go``)."""

from __future__ import annotations

from typing import Any

MC = "machineconfiguration.openshift.io/"
ROLE = "node-role.kubernetes.io/"


def rendered(pool: str, version: str | None) -> dict[str, Any]:
    """``rendered-POOL-VERSION``, naming ``version`` (None: a config that names no release)."""
    notes = {} if version is None else {MC + "release-image-version": version}
    return {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": f"rendered-{pool}-{version}", "annotations": notes}, "spec": {}}


def pool(name: str, target: str, *, paused: bool = False, selector: Any = "role",
         max_unavailable: Any = None) -> dict[str, Any]:
    """A pool whose configuration is ``rendered-NAME-TARGET``; by default it selects the nodes of role NAME."""
    spec: dict[str, Any] = {"paused": paused, "configuration": {"name": f"rendered-{name}-{target}"}}
    if selector == "role":
        spec["nodeSelector"] = {"matchLabels": {ROLE + name: ""}}
    elif selector is not None:
        spec["nodeSelector"] = selector
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
            "metadata": {"name": name}, "spec": spec, "status": {}}


def node(name: str, role: str, current: str | None, desired: str | None = None, *, state: str = "Done",
         drain: tuple[str, str] | None = None, ready: str = "True", ready_since: str = "2024-03-01T10:00:00Z",
         unschedulable: bool = False, reason: str = "", roles: tuple[str, ...] = ()) -> dict[str, Any]:
    """A node of ``role`` on ``rendered-ROLE-CURRENT`` wanting ``rendered-ROLE-DESIRED`` (the same by default);
    ``drain`` is (desiredDrain, lastAppliedDrain)."""
    notes: dict[str, str] = {}
    if current is not None:
        notes[MC + "currentConfig"] = f"rendered-{role}-{current}"
        notes[MC + "desiredConfig"] = f"rendered-{role}-{desired or current}"
    if state:
        notes[MC + "state"] = state
    if reason:
        notes[MC + "reason"] = reason
    if drain is not None:
        notes[MC + "desiredDrain"], notes[MC + "lastAppliedDrain"] = drain
    labels = {ROLE + r: "" for r in (role, *roles)}
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": name, "labels": labels, "annotations": notes},
                           "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady",
                                                      "message": "kubelet says so",
                                                      "lastTransitionTime": ready_since}]}}
    if unschedulable:
        obj["spec"] = {"unschedulable": True}
    return obj
