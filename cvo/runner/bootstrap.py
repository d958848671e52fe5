"""``cvo bootstrap``: what a cluster needs before cvo can run there.

The manifests/ directory of this project holds the CustomResourceDefinitions of ClusterVersion and
ClusterOperator (OpenShift's own, unchanged) and of OperatorCondition (OLM's v1 and v2), the
namespace ``openshift-cluster-version``, the RBAC cvo and its simulated operators run with, and the
ValidatingAdmissionPolicy (and its binding) that lets no service account but cvo's change an
OperatorCondition's ``spec.overrides`` (docs/gates.md).
:func:`bootstrap` applies them through the :class:`~cvo.cluster.api.Cluster` interface, one at a
time in file order, like ``kubectl apply``: create what is missing, update what differs, leave the
rest alone, so a second run changes nothing.  Then it waits (with a watch, and a timeout) until
every CustomResourceDefinition is Established, i.e. its kind is served.

An object is *unchanged* when every field the manifest sets has the same value in the live object
(what the server defaults does not count) and the live object carries the hash of the manifest
(so a field removed from a manifest is noticed too).  Otherwise the live object is *configured*:
its top-level fields are replaced by the manifest's, labels and annotations are merged, status is
left alone.

:func:`schema_problems` checks an object against a CustomResourceDefinition's structural schema
the way the API server's validation does (types, required fields, enums, patterns, lengths, list
types), so tests can tell whether a real server would accept what cvo writes.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import site
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Object, Ref
from cvo.cluster.informer import Informer
from cvo.payload.loader import LoadError, load_release
from cvo.payload.manifest import Manifest
from cvo.runner.apply import contains

CRD_GROUP = "apiextensions.k8s.io"
CRD_KIND = "CustomResourceDefinition"
HASH_ANNOTATION = "cvo.openshift.io/bootstrap-hash"
MANIFESTS_ENV = "CVO_MANIFESTS"
# The version a plain manifest directory is loaded as; the manifests do not depend on it.
MANIFESTS_VERSION = "0.0.0"
# A file every copy of the directory has: how a candidate directory is recognised.
MARKER = "0000_00_cvo_01_clusterversions.crd.yaml"
DEFAULT_TIMEOUT = 60.0

CREATED, CONFIGURED, UNCHANGED = "created", "configured", "unchanged"


# --- finding and loading the manifests ------------------------------------------------------------


def manifest_dirs() -> list[Path]:
    """Where the manifests are looked for, in order.

    ``$CVO_MANIFESTS``; ``cvo/manifests`` inside the package (package data, if the build puts it
    there); the ``manifests/`` directory beside the package (a source checkout, an editable
    install); ``<prefix>/share/cvo/manifests`` (data files of a wheel, installed into a virtualenv or
    system-wide, or with ``pip install --user``).
    """
    package = Path(__file__).resolve().parent.parent  # cvo/, from cvo/runner/bootstrap.py
    shared = Path("share") / "cvo" / "manifests"
    candidates = [package / "manifests", package.parent / "manifests", Path(sys.prefix) / shared,
                  Path(site.getuserbase()) / shared]
    if env := os.environ.get(MANIFESTS_ENV):
        candidates.insert(0, Path(env))
    return candidates


def find_manifests(explicit: Path | None = None) -> Path:
    """The directory to apply: ``explicit`` if given, otherwise the first of :func:`manifest_dirs` that has them."""
    if explicit is not None:
        if not explicit.is_dir():
            raise LoadError([f"{explicit}: not a directory"])
        return explicit
    for candidate in manifest_dirs():
        if (candidate / MARKER).is_file():
            return candidate
    where = ", ".join(str(c) for c in manifest_dirs())
    raise LoadError([f"cvo's bootstrap manifests are not installed (looked in {where}); "
                     f"pass --manifests DIR or set ${MANIFESTS_ENV}"])


def load_manifests(directory: Path) -> list[Manifest]:
    """The documents of ``directory`` in payload order (file name, then document), as ``cvo plan`` loads them."""
    release = load_release(directory, version=MANIFESTS_VERSION, use_cache=False)
    if release.excluded:
        lines = [f"{e.manifest.describe()}: excluded: {e.reason}" for e in release.excluded]
        raise LoadError(lines)
    if not release.manifests:
        raise LoadError([f"{directory}: no manifests"])
    return release.manifests


# --- applying ---------------------------------------------------------------------------------------


def resource_name(obj: Mapping[str, Any]) -> str:
    """``kind.group/name`` as kubectl prints it: ``customresourcedefinition.apiextensions.k8s.io/x``."""
    ref = Ref.of(obj)
    kind = ref.kind.lower()
    return f"{kind}.{ref.group}/{ref.name}" if ref.group else f"{kind}/{ref.name}"


def manifest_hash(obj: Mapping[str, Any]) -> str:
    """A stable hash of what the manifest asks for (its JSON with sorted keys, without the hash itself)."""
    meta = dict(obj.get("metadata") or {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != HASH_ANNOTATION}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    body = {**obj, "metadata": meta}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def desired_object(m: Manifest) -> Object:
    """The manifest's object with the hash annotation, without status (the server owns it)."""
    obj = m.copy_obj()
    obj.pop("status", None)
    meta = obj.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), HASH_ANNOTATION: manifest_hash(obj)}
    return obj


def is_unchanged(desired: Mapping[str, Any], live: Mapping[str, Any]) -> bool:
    """Every field the manifest sets has its value in ``live``: top-level fields, labels and annotations."""
    meta = desired.get("metadata") or {}
    live_meta = live.get("metadata") or {}
    for key in ("labels", "annotations"):
        if not contains(meta.get(key) or {}, live_meta.get(key) or {}):
            return False
    body = {k: v for k, v in desired.items() if k not in ("apiVersion", "kind", "metadata", "status")}
    return contains(body, live)


def updated_object(desired: Mapping[str, Any], live: Mapping[str, Any]) -> Object:
    """``live`` with the manifest's top-level fields, and its labels and annotations merged in."""
    new: Object = {k: v for k, v in live.items() if k != "status"}
    new.update({k: v for k, v in desired.items() if k not in ("metadata", "status")})
    meta = dict(live.get("metadata") or {})
    for key in ("labels", "annotations"):
        wanted = (desired.get("metadata") or {}).get(key) or {}
        if wanted:
            meta[key] = {**(meta.get(key) or {}), **wanted}
    new["metadata"] = meta
    return new


async def apply_object(cluster: Cluster, desired: Object, attempts: int = 5) -> str:
    """Create or update ``desired``; returns ``created``, ``configured`` or ``unchanged``."""
    ref = Ref.of(desired)
    for _ in range(attempts):
        live = await cluster.get(ref)
        try:
            if live is None:
                await cluster.create(desired)
                return CREATED
            if is_unchanged(desired, live):
                return UNCHANGED
            await cluster.update(updated_object(desired, live))
            return CONFIGURED
        except ApiError as err:
            # Somebody else created or changed it in between: look again.
            if err.kind not in (ApiErrorKind.ALREADY_EXISTS, ApiErrorKind.CONFLICT):
                raise
    raise ApiError(ApiErrorKind.CONFLICT, f"{ref}: kept changing while being applied; gave up after {attempts} attempts",
                   ref)


# --- waiting for CRDs ------------------------------------------------------------------------------------


def _condition(obj: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return cond
    return None


def is_established(crd: Mapping[str, Any] | None) -> bool:
    cond = _condition(crd, "Established")
    return cond is not None and cond.get("status") == "True"


def _why_not_established(crd: Mapping[str, Any] | None) -> str:
    if crd is None:
        return "it does not exist"
    for type_ in ("NamesAccepted", "Established"):
        cond = _condition(crd, type_)
        if cond is not None and cond.get("status") != "True":
            return f"{type_}={cond.get('status')} ({cond.get('reason', '')}): {cond.get('message', '')}"
    return "no Established condition yet"


async def wait_established(cluster: Cluster, names: Iterable[str], timeout: float) -> dict[str, str]:
    """Wait until every named CRD is Established; returns the ones that are not, with why, after ``timeout``."""
    pending = sorted(set(names))
    if not pending:
        return {}
    # Subscribed before the reads: no change is missed.  No list of every CRD: one read of each named one.
    informer = Informer(cluster, CRD_GROUP, CRD_KIND, baseline=False, keep_objects=True)
    await informer.start()
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    last: dict[str, Object | None] = {}
    try:
        for name in pending:
            while True:
                mark = informer.mark(name)
                crd = informer.cached(name)
                last[name] = crd if crd is not None else await cluster.get(Ref(CRD_GROUP, CRD_KIND, "", name))
                remaining = end - loop.time()
                if is_established(last[name]) or remaining <= 0 or \
                        not await informer.wait_change(name, mark, remaining):
                    break
    finally:
        await informer.stop()
    return {name: _why_not_established(last.get(name)) for name in pending if not is_established(last.get(name))}


# --- the whole bootstrap --------------------------------------------------------------------------------


@dataclass
class Applied:
    name: str  # kubectl style: kind.group/name
    action: str  # created, configured, unchanged; "" when it failed
    error: str = ""


@dataclass
class BootstrapResult:
    applied: list[Applied] = field(default_factory=list)
    not_established: dict[str, str] = field(default_factory=dict)  # CRD name -> why
    established: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.not_established and all(a.action for a in self.applied)


async def bootstrap(cluster: Cluster, manifests: Iterable[Manifest], *, timeout: float = DEFAULT_TIMEOUT,
                    on_applied: Callable[[Applied], object] | None = None) -> BootstrapResult:
    """Apply every manifest in order (a failure does not stop the others), then wait for the CRDs."""
    result = BootstrapResult()
    crds: list[str] = []
    for m in manifests:
        desired = desired_object(m)
        name = resource_name(desired)
        try:
            applied = Applied(name, await apply_object(cluster, desired))
            if (m.group, m.kind) == (CRD_GROUP, CRD_KIND):
                crds.append(m.name)
        except ApiError as err:
            applied = Applied(name, "", str(err))
        result.applied.append(applied)
        if on_applied is not None:
            on_applied(applied)
    result.not_established = await wait_established(cluster, crds, timeout)
    result.established = [n for n in crds if n not in result.not_established]
    return result


# --- what a real API server accepts -----------------------------------------------------------------------


@dataclass
class SchemaCheck:
    errors: list[str] = field(default_factory=list)  # what the server rejects (422 Invalid)
    pruned: list[str] = field(default_factory=list)  # unknown fields the server silently drops


def crd_schema(crd: Mapping[str, Any], version: str) -> Mapping[str, Any]:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("name") == version:
            return ((v.get("schema") or {}).get("openAPIV3Schema")) or {}
    raise KeyError(f"{(crd.get('metadata') or {}).get('name')}: no version {version}")


def schema_problems(crd: Mapping[str, Any], obj: Mapping[str, Any]) -> SchemaCheck:
    """Check ``obj`` against the structural schema of its version in ``crd``.

    What the API server checks on create and update: ``type``, ``nullable``, ``required``,
    ``enum``, ``pattern``, ``minLength``/``maxLength``, ``minItems``/``maxItems``,
    ``minimum``/``maximum``, ``format: date-time``, ``x-kubernetes-list-type`` map/set uniqueness;
    fields the schema does not know (and that are not under ``x-kubernetes-preserve-unknown-fields``)
    are reported as pruned.  CEL rules (``x-kubernetes-validations``) are not evaluated.
    The contents of ``metadata`` are not checked.
    """
    version = str(obj.get("apiVersion", "")).rpartition("/")[2]
    check = SchemaCheck()
    schema = crd_schema(crd, version)
    # metadata is the server's (ObjectMeta, validated apart): present or not, never pruned here.
    body = {k: ({} if k == "metadata" else v) for k, v in obj.items()}
    _check(schema, body, "", check)
    return check


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _check(schema: Mapping[str, Any], value: Any, path: str, check: SchemaCheck) -> None:
    where = path or "<root>"
    if value is None:
        if not schema.get("nullable"):
            check.errors.append(f'{where}: Invalid value: "null": {where} in body must be of type '
                                f'{schema.get("type", "object")}')
        return
    type_ = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, int | str) or isinstance(value, bool):
            check.errors.append(f"{where}: Invalid value: must be an integer or a string")
        return
    if type_ and not _JSON_TYPES.get(type_, lambda v: True)(value):
        check.errors.append(f"{where}: Invalid value: {_show(value)}: {where} in body must be of type {type_}")
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{e}"' for e in schema["enum"])
        check.errors.append(f"{where}: Unsupported value: {_show(value)}: supported values: {allowed}")
    if isinstance(value, str):
        _check_string(schema, value, where, check)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            check.errors.append(f"{where}: Invalid value: {value}: should be greater than or equal to {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            check.errors.append(f"{where}: Invalid value: {value}: should be less than or equal to {schema['maximum']}")
    elif isinstance(value, list):
        _check_list(schema, value, path, check)
    elif isinstance(value, dict):
        _check_object(schema, value, path, check)


def _check_string(schema: Mapping[str, Any], value: str, where: str, check: SchemaCheck) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        check.errors.append(f"{where}: Invalid value: {_show(value)}: {where} in body should be at least "
                            f"{schema['minLength']} chars long")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        check.errors.append(f"{where}: Too long: may not be more than {schema['maxLength']} bytes")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        check.errors.append(f"{where}: Invalid value: {_show(value)}: {where} in body should match "
                            f"'{schema['pattern']}'")
    if schema.get("format") == "date-time" and not _RFC3339.match(value):
        check.errors.append(f"{where}: Invalid value: {_show(value)}: {where} in body must be of type date-time")


def _check_list(schema: Mapping[str, Any], value: list[Any], path: str, check: SchemaCheck) -> None:
    where = path or "<root>"
    if "minItems" in schema and len(value) < schema["minItems"]:
        check.errors.append(f"{where}: Invalid value: {len(value)}: {where} in body should have at least "
                            f"{schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        check.errors.append(f"{where}: Too many: {len(value)}: must have at most {schema['maxItems']} items")
    items = schema.get("items")
    for i, item in enumerate(value):
        if isinstance(items, Mapping):
            _check(items, item, f"{path}[{i}]", check)
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                check.errors.append(f"{path}[{i}]: Duplicate value: {_show(item)}")
            seen.append(item)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen_keys: set[str] = set()
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = orjson.dumps([item.get(k) for k in keys]).decode()
            if key in seen_keys:
                check.errors.append(f"{path}[{i}]: Duplicate value: map[{', '.join(f'{k}:{item.get(k)}' for k in keys)}]")
            seen_keys.add(key)


def _check_object(schema: Mapping[str, Any], value: dict[str, Any], path: str, check: SchemaCheck) -> None:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in value:
            field_path = f"{path}.{name}" if path else name
            check.errors.append(f"{field_path}: Required value")
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        field_path = f"{path}.{key}" if path else key
        if key in properties:
            _check(properties[key], item, field_path, check)
        elif isinstance(additional, Mapping):
            _check(additional, item, field_path, check)
        elif additional is True or schema.get("x-kubernetes-preserve-unknown-fields"):
            continue
        elif not (path == "" and key in ("apiVersion", "kind")):
            check.pruned.append(field_path)


def _show(value: Any) -> str:
    text = orjson.dumps(value).decode() if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 80 else text[:77] + "..."

