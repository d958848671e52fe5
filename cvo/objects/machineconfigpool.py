"""MachineConfigPool (``machineconfiguration.openshift.io/v1``): a set of nodes (its ``nodeSelector``) that the
machine-config operator moves to one rendered config, ``maxUnavailable`` at a time unless ``paused``.

No CRD of it is in ``manifests/`` (the machine-config operator installs it), so its schema is declared here:
the part of openshift/api ``machineconfiguration/v1/types.go`` ``MachineConfigPool`` that the views hold,
with apimachinery's ``LabelSelector`` (``pkg/apis/meta/v1/types.go``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cvo.objects.base import Kind, Object, declared
from cvo.objects.condition import Condition, find_last
from cvo.objects.machineconfig import GROUP
from cvo.objects.view import View
from cvo.payload.gostrings import go_quote

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
    max_unavailable: Any = None  # an integer or a percentage ("10%"); None: 1 (see scaled_max_unavailable)
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


_ATOI = re.compile(r"[+-]?[0-9]+", re.ASCII)
_INT32, _INT64 = 2**31, 2**63


def scaled_max_unavailable(value: Any, machines: int) -> int:
    """How many of a pool's ``machines`` may be away updating at once: machine-config-operator
    pkg/controller/node/node_controller.go ``maxUnavailable``, through k8s.io/apimachinery pkg/util/intstr
    ``GetScaledValueFromIntOrPercent(value, machines, false)``.  No value is 1; an integer is itself (a
    negative one too: no node is ever picked); ``"N%"`` is N percent of the machines rounded down; a result of
    0 is 1.  Anything else raises :class:`ValueError` with the controller's error (it then leaves the pool as
    it is): a string without ``%`` or whose number ``strconv.Atoi`` refuses, and what an ``IntOrString`` cannot
    decode (a fraction, a boolean, a list, an integer beyond int32)."""
    if value is None:
        return 1
    if isinstance(value, int) and not isinstance(value, bool) and -_INT32 <= value < _INT32:
        scaled = value
    elif isinstance(value, str):
        if not value.endswith("%"):
            raise ValueError("maxUnavailable: invalid value for IntOrString: invalid type: string is not a percentage")
        number = value[:-1]
        if not _ATOI.fullmatch(number):
            raise ValueError(f"maxUnavailable: invalid value for IntOrString: invalid value {go_quote(value)}: "
                             f"strconv.Atoi: parsing {go_quote(number)}: invalid syntax")
        if not -_INT64 <= int(number) < _INT64:
            raise ValueError(f"maxUnavailable: invalid value for IntOrString: invalid value {go_quote(value)}: "
                             f"strconv.Atoi: parsing {go_quote(number)}: value out of range")
        scaled = math.floor(float(int(number)) * float(machines) / 100)
    else:
        raise ValueError("maxUnavailable: invalid value for IntOrString: invalid type: neither int nor percentage")
    return 1 if scaled == 0 else scaled
