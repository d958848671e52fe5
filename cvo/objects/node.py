"""Node (``v1``), the fields ``cvo upgrade status`` reads: the machine-config daemon's annotations, whether
the node is cordoned, and its Ready, DiskPressure and NetworkUnavailable conditions.

No CRD declares a built-in kind, so its schema is declared here: the part of k8s.io/api
``core/v1/types.go`` ``Node`` (``NodeSpec.Unschedulable``, ``NodeStatus.Conditions``) that the views hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cvo.objects.base import Kind, Object, declared
from cvo.objects.condition import Condition, find_last
from cvo.objects.view import View

_STRING: dict[str, Any] = {"type": "string"}
SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "apiVersion": _STRING, "kind": _STRING,
    "spec": {"type": "object", "properties": {"unschedulable": {"type": "boolean"}}},
    "status": {"type": "object", "properties": {
        "conditions": {"type": "array", "items": {"type": "object", "properties": {
            "type": _STRING, "status": _STRING, "reason": _STRING, "message": _STRING,
            "lastHeartbeatTime": {"type": "string", "format": "date-time"},
            "lastTransitionTime": {"type": "string", "format": "date-time"}}}}}}}}


@dataclass(frozen=True)
class NodeSpec(View):
    unschedulable: bool = False


@dataclass(frozen=True)
class NodeStatus(View):
    conditions: tuple[Condition, ...] = ()

    def condition(self, type_: str) -> Condition | None:
        return find_last(self.conditions, type_)


@dataclass(frozen=True)
class Node(Object):
    KIND = Kind("", "Node", declared(SCHEMA))

    spec: NodeSpec = field(default_factory=NodeSpec)
    status: NodeStatus = field(default_factory=NodeStatus)

