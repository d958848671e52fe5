"""ClusterOperator (``config.openshift.io/v1``): what every operator reports its status on.

Checked against ``manifests/0000_00_cvo_01_clusteroperators.crd.yaml``; the fields are openshift/api
``config/v1/types_cluster_operator.go``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cvo.objects.base import Kind, Object, crd
from cvo.objects.condition import Condition, find
from cvo.objects.view import View

OPERATOR = "operator"  # the version entry an operator reports for itself


@dataclass(frozen=True)
class OperandVersion(View):
    name: str = ""
    version: str = ""


@dataclass(frozen=True)
class ObjectReference(View):
    group: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True)
class ClusterOperatorStatus(View):
    conditions: tuple[Condition, ...] = ()
    versions: tuple[OperandVersion, ...] = ()
    related_objects: tuple[ObjectReference, ...] = ()
    extension: Mapping[str, Any] = field(default_factory=dict)

    def condition(self, type_: str) -> Condition | None:
        return find(self.conditions, type_)

    def version(self, name: str = OPERATOR) -> str:
        """The version of operand ``name`` (the operator's own by default); "" when it reports none."""
        return next((v.version for v in self.versions if v.name == name), "")


@dataclass(frozen=True)
class ClusterOperator(Object):
    KIND = Kind("config.openshift.io", "ClusterOperator", crd("0000_00_cvo_01_clusteroperators.crd.yaml", "v1"))

    status: ClusterOperatorStatus = field(default_factory=ClusterOperatorStatus)
