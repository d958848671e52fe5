"""OperatorCondition (``operators.coreos.com``): an operator's word on its upgrades, and an admin's override.

Checked against the storage version (v2) of ``manifests/0000_00_cvo_01_operatorconditions.crd.yaml``, whose
schema is v1's and ``spec.conditions`` (both versions share one storage schema); the fields are
operator-framework/api ``pkg/operators/v2/operatorcondition_types.go``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cvo.objects.base import Kind, Object, crd
from cvo.objects.condition import MetaCondition
from cvo.objects.view import View


@dataclass(frozen=True)
class OperatorConditionSpec(View):
    service_accounts: tuple[str, ...] = ()
    deployments: tuple[str, ...] = ()
    overrides: tuple[MetaCondition, ...] = ()
    conditions: tuple[MetaCondition, ...] = ()


@dataclass(frozen=True)
class OperatorConditionStatus(View):
    conditions: tuple[MetaCondition, ...] = ()


@dataclass(frozen=True)
class OperatorCondition(Object):
    KIND = Kind("operators.coreos.com", "OperatorCondition",
                crd("0000_00_cvo_01_operatorconditions.crd.yaml", "v2"))

    spec: OperatorConditionSpec = field(default_factory=OperatorConditionSpec)
    status: OperatorConditionStatus = field(default_factory=OperatorConditionStatus)
