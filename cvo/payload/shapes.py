"""The shape a manifest must have where the CVO decodes it into a typed Go struct.

The CVO's resource builders decode a CustomResourceDefinition, a Deployment, a Job, a ConfigMap or
a ClusterOperator into its Go type before applying it; a field of the wrong type (``spec: 5``,
``versions: 5``, ``status: [1, 2]``) fails that task.  cvo checks the fields it reads the same way,
so such a manifest is a lint error (``malformed-object``) and fails its task with a message naming
the field, never with a Python exception.
"""

from __future__ import annotations

from typing import Any

from cvo.payload.fields import type_name
from cvo.payload.manifest import Manifest

_STR, _BOOL, _INT, _MAP, _LIST = "a string", "a boolean", "an integer", "an object", "a list"


def _type_ok(value: Any, want: str) -> bool:
    if want == _STR:
        return isinstance(value, str)
    if want == _BOOL:
        return isinstance(value, bool)
    if want == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if want == _MAP:
        return isinstance(value, dict)
    return isinstance(value, list)


class _Checker:
    """Collects the first problem; every check is a no-op once one is found."""

    def __init__(self) -> None:
        self.problem: str | None = None

    def field(self, obj: Any, path: str, want: str, required: bool = False) -> Any:
        """``obj[key]`` for the last key of ``path`` if it has type ``want`` (``None`` when absent)."""
        if self.problem is not None or not isinstance(obj, dict):
            return None
        key = path.rpartition(".")[2].partition("[")[0]
        value = obj.get(key)
        if value is None:
            if required:
                self.problem = f"{path} is required"
            return None
        if not _type_ok(value, want):
            self.problem = f"{path} must be {want}, not {type_name(value)}"
            return None
        return value

    def items(self, value: Any, path: str, want: str) -> list[Any]:
        """The items of list ``value``, each of type ``want``."""
        if self.problem is not None or not isinstance(value, list):
            return []
        for i, item in enumerate(value):
            if not _type_ok(item, want):
                self.problem = f"{path}[{i}] must be {want}, not {type_name(item)}"
                return []
        return value

    def string_map(self, obj: Any, path: str) -> None:
        value = self.field(obj, path, _MAP)
        for key, item in (value or {}).items():
            if self.problem is None and not isinstance(item, str):
                self.problem = f"{path}.{key} must be a string, not {type_name(item)}"


def _crd(c: _Checker, obj: dict[str, Any]) -> None:
    spec = c.field(obj, "spec", _MAP, required=True)
    c.field(spec, "spec.group", _STR)
    c.field(spec, "spec.scope", _STR)
    names = c.field(spec, "spec.names", _MAP)
    for key in ("plural", "kind", "singular", "listKind"):
        c.field(names, f"spec.names.{key}", _STR)
    c.field(spec, "spec.subresources", _MAP)
    for i, version in enumerate(c.items(c.field(spec, "spec.versions", _LIST), "spec.versions", _MAP)):
        where = f"spec.versions[{i}]"
        c.field(version, f"{where}.name", _STR, required=True)
        c.field(version, f"{where}.served", _BOOL)
        c.field(version, f"{where}.storage", _BOOL)
        c.field(version, f"{where}.subresources", _MAP)
        schema = c.field(c.field(version, f"{where}.schema", _MAP), f"{where}.schema.openAPIV3Schema", _MAP)
        c.items(c.field(schema, f"{where}.schema.openAPIV3Schema.required", _LIST),
                f"{where}.schema.openAPIV3Schema.required", _STR)
        props = c.field(schema, f"{where}.schema.openAPIV3Schema.properties", _MAP)
        for name, prop in (props or {}).items():
            path = f"{where}.schema.openAPIV3Schema.properties.{name}"
            if c.problem is None and not isinstance(prop, dict):
                c.problem = f"{path} must be an object, not {type_name(prop)}"
            c.field(prop, f"{path}.type", _STR)
            c.field(prop, f"{path}.nullable", _BOOL)


def _pod_template(c: _Checker, spec: Any, where: str) -> None:
    template = c.field(spec, f"{where}.template", _MAP)
    c.string_map(c.field(template, f"{where}.template.metadata", _MAP), f"{where}.template.metadata.labels")
    pod = c.field(template, f"{where}.template.spec", _MAP)
    for key in ("containers", "initContainers"):
        path = f"{where}.template.spec.{key}"
        for i, container in enumerate(c.items(c.field(pod, path, _LIST), path, _MAP)):
            c.field(container, f"{path}[{i}].name", _STR)
            c.field(container, f"{path}[{i}].image", _STR)
            env = c.field(container, f"{path}[{i}].env", _LIST)
            for j, var in enumerate(c.items(env, f"{path}[{i}].env", _MAP)):
                c.field(var, f"{path}[{i}].env[{j}].name", _STR)
                c.field(var, f"{path}[{i}].env[{j}].value", _STR)


def _deployment(c: _Checker, obj: dict[str, Any]) -> None:
    spec = c.field(obj, "spec", _MAP)
    c.field(spec, "spec.replicas", _INT)
    _pod_template(c, spec, "spec")


def _job(c: _Checker, obj: dict[str, Any]) -> None:
    _pod_template(c, c.field(obj, "spec", _MAP), "spec")


def _config_map(c: _Checker, obj: dict[str, Any]) -> None:
    c.string_map(obj, "data")
    c.string_map(obj, "binaryData")


def _cluster_operator(c: _Checker, obj: dict[str, Any]) -> None:
    c.field(obj, "spec", _MAP)
    status = c.field(obj, "status", _MAP)
    for key, fields in (("versions", ("name", "version")), ("relatedObjects", ("group", "resource", "name", "namespace")),
                        ("conditions", ("type", "status", "reason", "message"))):
        path = f"status.{key}"
        for i, item in enumerate(c.items(c.field(status, path, _LIST), path, _MAP)):
            for name in fields:
                c.field(item, f"{path}[{i}].{name}", _STR)


_CHECKS = {
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
    ("apps", "Deployment"): _deployment,
    ("batch", "Job"): _job,
    ("", "ConfigMap"): _config_map,
    ("config.openshift.io", "ClusterOperator"): _cluster_operator,
}


def object_problem(group: str, kind: str, obj: dict[str, Any]) -> str | None:
    """The first field of ``obj`` whose type its kind's Go struct would refuse, or ``None``."""
    c = _Checker()
    metadata = c.field(obj, "metadata", _MAP)
    c.string_map(metadata, "metadata.labels")
    c.items(c.field(metadata, "metadata.ownerReferences", _LIST), "metadata.ownerReferences", _MAP)
    check = _CHECKS.get((group, kind))
    if check is not None and c.problem is None:
        check(c, obj)
    return c.problem


_UNCHECKED = None  # Manifest._shape's default: not checked yet
_FINE = ""  # checked: no problem


def shape_problem(m: Manifest, decoded: dict[str, Any] | None = None) -> str | None:
    """:func:`object_problem` for a manifest, remembered on it.

    The object is decoded for the check and dropped (unless something else already decoded it, or the
    caller passes its own fresh decode of ``m``, which is only read): a sweep checks every manifest on
    every attempt, and :attr:`Manifest.obj` would keep every object of the release decoded for the rest
    of the process, beside the cluster's own copies.
    """
    known = m._shape
    if known is _UNCHECKED:
        obj = decoded if decoded is not None else m._obj if m._obj is not None else m.copy_obj()
        problem = object_problem(m.group, m.kind, obj)
        m._shape = known = _FINE if problem is None else problem
    return None if known == _FINE else str(known)
