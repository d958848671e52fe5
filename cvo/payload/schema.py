"""What the CVO's typed Go clients send that a manifest leaves out: zero values of required fields.

A Go struct serialises every field without ``omitempty``: a manifest that leaves out a required
field still reaches the server as ``null``, ``false``, ``0`` or ``""``.  cvo sends plain JSON, so
for kinds whose CRD the payload carries it fills the CRD's required top-level fields the same way
(OpenShift's SecurityContextConstraints manifests rely on it).

Also what the API server does to a Secret's ``stringData`` (:func:`secret_string_data`), which both
the embedded cluster and the comparison of a manifest with the live object need.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any

from cvo.payload.fields import entries, mapping
from cvo.payload.manifest import Manifest

_ZERO: dict[str, Any] = {"boolean": False, "integer": 0, "number": 0, "string": "", "object": {}, "array": []}


def required_zero_values(manifests: Sequence[Manifest], decode: Callable[[Manifest], dict[str, Any]] | None = None,
                         ) -> dict[tuple[str, str], dict[str, Any]]:
    """(group, kind) -> {required top-level field: the value Go would send when it is unset}.  ``decode``: how a
    CRD manifest is decoded (a private copy, read only here; default :meth:`Manifest.copy_obj`)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for m in manifests:
        if m.kind != "CustomResourceDefinition" or m.group != "apiextensions.k8s.io":
            continue
        # Types are checked as they are read: a malformed CRD (cvo lint: malformed-object) adds nothing.
        spec = mapping((decode or Manifest.copy_obj)(m).get("spec"))  # not m.obj: that would keep every CRD decoded
        kind = mapping(spec.get("names")).get("kind")
        group = spec.get("group", "")
        if not isinstance(kind, str) or not isinstance(group, str):
            continue
        for version in entries(spec.get("versions")):
            schema = mapping(mapping(version.get("schema")).get("openAPIV3Schema"))
            props = mapping(schema.get("properties"))
            required = schema.get("required")
            zeros: dict[str, Any] = {}
            for name in required if isinstance(required, list) else []:
                if not isinstance(name, str):
                    continue
                prop = mapping(props.get(name))
                if prop.get("nullable") is True:
                    zeros[name] = None
                elif isinstance(prop.get("type"), str) and prop["type"] in _ZERO:
                    zeros[name] = _ZERO[prop["type"]]
            if zeros and kind and version.get("storage", version.get("served", True)) is True:
                out[(group, kind)] = zeros
    return out


def fill_required(obj: dict[str, Any], zeros: dict[str, Any]) -> dict[str, Any]:
    for name, value in zeros.items():
        if name not in obj:
            obj[name] = value if not isinstance(value, dict | list) else type(value)()
    return obj


def secret_string_data(obj: dict[str, Any]) -> dict[str, Any]:
    """A Secret as the API server stores it: ``stringData`` folded into ``data`` (base64), winning over it.

    The server never returns ``stringData`` (k8s.io/kubernetes pkg/apis/core/v1 ``Convert_v1_Secret_To_core_
    Secret``), so a manifest that uses it must be compared, and may as well be sent, in that form: otherwise
    every sweep would see it as changed and update it again.
    """
    string_data = obj.get("stringData")
    if not isinstance(string_data, dict):
        return obj
    old = obj.get("data")
    data: dict[str, Any] = dict(old) if isinstance(old, dict) else {}
    for key, value in string_data.items():
        if isinstance(value, str):
            data[key] = base64.b64encode(value.encode()).decode()
    out = {k: v for k, v in obj.items() if k != "stringData"}
    out["data"] = data
    return out
