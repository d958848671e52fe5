"""MachineConfigPool (``machineconfiguration.openshift.io/v1``): a set of nodes (its ``nodeSelector``) that the
machine-config operator moves to one rendered config, ``maxUnavailable`` at a time unless ``paused``.

No CRD of it is in ``manifests/`` (the machine-config operator installs it), so its schema is declared here:
the part of openshift/api ``machineconfiguration/v1/types.go`` ``MachineConfigPool`` that the views hold,
with apimachinery's ``LabelSelector`` (``pkg/apis/meta/v1/types.go``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cvo.objects.base import Kind, Object, declared
from cvo.objects.condition import Condition, find_last
from cvo.objects.machineconfig import GROUP
from cvo.objects.view import View

_STRING: dict[str, Any] = {"type": "string"}
_INT: dict[str, Any] = {"type": "integer"}
_SELECTOR: dict[str, Any] = {"type": "object", "properties": {
    "matchLabels": {"type": "object", "additionalProperties": _STRING},
    "matchExpressions": {"type": "array", "items": {"type": "object", "properties": {
        "key": _STRING, "operator": _STRING, "values": {"type": "array", "items": _STRING}}}}}}
_CONFIGURATION: dict[str, Any] = {"type": "object", "properties": {"name": _STRING}}
SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "apiVersion": _STRING, "kind": _STRING,
    "spec": {"type": "object", "properties": {
        "nodeSelector": _SELECTOR, "machineConfigSelector": _SELECTOR, "paused": {"type": "boolean"},
        "maxUnavailable": {"x-kubernetes-int-or-string": True}, "configuration": _CONFIGURATION}},
    "status": {"type": "object", "properties": {
        "observedGeneration": _INT, "configuration": _CONFIGURATION, "machineCount": _INT,
        "updatedMachineCount": _INT, "readyMachineCount": _INT, "unavailableMachineCount": _INT,
        "degradedMachineCount": _INT,
        "conditions": {"type": "array", "items": {"type": "object", "properties": {
            "type": _STRING, "status": _STRING, "reason": _STRING, "message": _STRING,
            "lastTransitionTime": {"type": "string", "format": "date-time"}}}}}}}}


@dataclass(frozen=True)
class Requirement(View):
    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSelector(View):
    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[Requirement, ...] = ()


@dataclass(frozen=True)
class Configuration(View):
    name: str = ""


@dataclass(frozen=True)
class MachineConfigPoolSpec(View):
    node_selector: LabelSelector | None = None
    paused: bool = False
    max_unavailable: Any = None  # an integer or a percentage ("10%"); None: 1
    configuration: Configuration = field(default_factory=Configuration)


@dataclass(frozen=True)
class MachineConfigPoolStatus(View):
    configuration: Configuration = field(default_factory=Configuration)
    machine_count: int = 0
    updated_machine_count: int = 0
    ready_machine_count: int = 0
    unavailable_machine_count: int = 0
    degraded_machine_count: int = 0
    conditions: tuple[Condition, ...] = ()

    def condition(self, type_: str) -> Condition | None:
        return find_last(self.conditions, type_)


@dataclass(frozen=True)
class MachineConfigPool(Object):
    KIND = Kind(GROUP, "MachineConfigPool", declared(SCHEMA))

    spec: MachineConfigPoolSpec = field(default_factory=MachineConfigPoolSpec)
    status: MachineConfigPoolStatus = field(default_factory=MachineConfigPoolStatus)
