"""What the CVO's typed Go clients send that a manifest leaves out: zero values of required fields.

A Go struct serialises every field without ``omitempty``: a manifest that leaves out a required
field still reaches the server as ``null``, ``false``, ``0`` or ``""``.  cvo sends plain JSON, so
for kinds whose CRD the payload carries it fills the CRD's required top-level fields the same way
(OpenShift's SecurityContextConstraints manifests rely on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cvo.payload.manifest import Manifest

_ZERO: dict[str, Any] = {"boolean": False, "integer": 0, "number": 0, "string": "", "object": {}, "array": []}


def required_zero_values(manifests: Sequence[Manifest]) -> dict[tuple[str, str], dict[str, Any]]:
    """(group, kind) -> {required top-level field: the value Go would send when it is unset}."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for m in manifests:
        if m.kind != "CustomResourceDefinition" or m.group != "apiextensions.k8s.io":
            continue
        spec = m.copy_obj().get("spec") or {}  # not m.obj: that would keep every CRD decoded
        kind = (spec.get("names") or {}).get("kind")
        for version in spec.get("versions") or []:
            schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
            props = schema.get("properties") or {}
            zeros = {}
            for name in schema.get("required") or []:
                prop = props.get(name) or {}
                if prop.get("nullable"):
                    zeros[name] = None
                elif prop.get("type") in _ZERO:
                    zeros[name] = _ZERO[prop["type"]]
            if zeros and kind and version.get("storage", version.get("served", True)):
                out[(str(spec.get("group", "")), str(kind))] = zeros
    return out


def fill_required(obj: dict[str, Any], zeros: dict[str, Any]) -> dict[str, Any]:
    for name, value in zeros.items():
        if name not in obj:
            obj[name] = value if not isinstance(value, dict | list) else type(value)()
    return obj
