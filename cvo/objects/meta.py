"""``metadata``: the part of every object the API server validates itself, so no CRD declares it.

Its schema is declared here (k8s.io/apimachinery ``pkg/apis/meta/v1/types.go`` ``ObjectMeta``, the fields
cvo reads) and put in place of a CRD's bare ``metadata: {type: object}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cvo.objects.times import Time
from cvo.objects.view import View

_STRING: dict[str, Any] = {"type": "string"}
_TIME: dict[str, Any] = {"type": "string", "format": "date-time"}
_STRINGS_MAP: dict[str, Any] = {"type": "object", "additionalProperties": _STRING}
OBJECT_META_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": _STRING, "generateName": _STRING, "namespace": _STRING, "uid": _STRING, "resourceVersion": _STRING,
        "generation": {"type": "integer"}, "creationTimestamp": _TIME, "deletionTimestamp": _TIME,
        "deletionGracePeriodSeconds": {"type": "integer"}, "labels": _STRINGS_MAP, "annotations": _STRINGS_MAP,
        "finalizers": {"type": "array", "items": _STRING},
        "ownerReferences": {"type": "array", "items": {"type": "object", "properties": {
            "apiVersion": _STRING, "kind": _STRING, "name": _STRING, "uid": _STRING,
            "controller": {"type": "boolean"}, "blockOwnerDeletion": {"type": "boolean"}}}},
        "managedFields": {"type": "array", "items": {"type": "object"}},
    },
}


@dataclass(frozen=True)
class OwnerReference(View):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


@dataclass(frozen=True)
class ObjectMeta(View):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owner_references: tuple[OwnerReference, ...] = ()
