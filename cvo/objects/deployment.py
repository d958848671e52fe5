"""Deployment (``apps/v1``), the fields cvo reads of one it did not write (machine-config's operator image).

No CRD declares a built-in kind, so its schema is declared here: the part of k8s.io/api
``apps/v1/types.go`` ``Deployment`` and ``core/v1/types.go`` ``Container`` that the views hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cvo.objects.base import Kind, Object, declared
from cvo.objects.view import View

_CONTAINERS: dict[str, Any] = {"type": "array", "items": {"type": "object", "properties": {
    "name": {"type": "string"}, "image": {"type": "string"}}}}
SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "apiVersion": {"type": "string"}, "kind": {"type": "string"},
    "spec": {"type": "object", "properties": {
        "replicas": {"type": "integer"},
        "template": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"containers": _CONTAINERS, "initContainers": _CONTAINERS}}}}}}}}


@dataclass(frozen=True)
class Container(View):
    name: str = ""
    image: str = ""


@dataclass(frozen=True)
class PodSpec(View):
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()


@dataclass(frozen=True)
class PodTemplate(View):
    spec: PodSpec = field(default_factory=PodSpec)


@dataclass(frozen=True)
class DeploymentSpec(View):
    replicas: int | None = None
    template: PodTemplate = field(default_factory=PodTemplate)


@dataclass(frozen=True)
class Deployment(Object):
    KIND = Kind("apps", "Deployment", declared(SCHEMA))

    spec: DeploymentSpec = field(default_factory=DeploymentSpec)

    def container(self, name: str) -> Container | None:
        return next((c for c in self.spec.template.spec.containers if c.name == name), None)
