"""What the embedded API server does to an object, as pure functions: the rules a real kube-apiserver applies.

Server-managed metadata (uid, resourceVersion, generation, creationTimestamp), optimistic-concurrency
preconditions, what counts as a change (generation moves only outside metadata and status; a write that
changes nothing is not a write), immutable Job templates, and a CRD's status (NamesAccepted, Established).
Used by :class:`cvo.cluster.embedded.server.SimCluster`, which holds the objects and the watches.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson

from cvo.clock import to_rfc3339
from cvo.cluster.api import ApiError, ApiErrorKind, Object, Ref
from cvo.cluster.embedded.kinds import NAMESPACE, KindInfo, accepted_names

# Metadata only the server sets; a request's values are ignored.
SERVER_METADATA = frozenset({"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
                             "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"})
UNVERSIONED = frozenset({"metadata", "status"})  # top-level keys whose changes do not bump generation


def check_job_immutable(ref: Ref, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """A Job's pod template (and selector) cannot change after creation, as on a real server."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    for key in ("template", "selector"):
        if key in new_spec and new_spec.get(key) != old_spec.get(key):
            raise ApiError(ApiErrorKind.INVALID, f'Job.batch "{ref.name}" is invalid: spec.{key}: Invalid value: '
                           f"field is immutable", ref)


def kind_text(info: KindInfo) -> str:
    return f"{info.kind}.{info.group}" if info.group else info.kind


def uid_for(counter: int) -> str:
    return f"00000000-0000-4000-8000-{counter:012x}"


def encode(ref: Ref, obj: Object) -> bytes:
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError as e:
        raise ApiError(ApiErrorKind.INVALID, f"{ref} is invalid: not representable as JSON: {e}", ref) from e


def request_metadata(obj: Object, ref: Ref) -> dict[str, Any]:
    """The request's metadata without the server-managed fields, with the normalised name and namespace."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_METADATA}
    meta["name"] = ref.name
    if ref.namespace:
        meta["namespace"] = ref.namespace
    else:
        meta.pop("namespace", None)
    return meta


def compose(obj: Mapping[str, Any], meta: dict[str, Any], status: Any) -> Object:
    """``obj`` with ``meta`` as metadata and ``status`` as status (absent when ``None``); a shallow copy."""
    new = {k: v for k, v in obj.items() if k != "status"}
    new["metadata"] = meta
    if status is not None:
        new["status"] = status
    return new


def default_status(ref: Ref, status: Any) -> Any:
    if (ref.group, ref.kind) == NAMESPACE and status is None:
        return {"phase": "Active"}
    return status


def check_preconditions(ref: Ref, info: KindInfo, stored: Object, request: Object) -> None:
    requested = request.get("metadata") or {}
    meta = stored["metadata"]
    if requested.get("uid") and requested["uid"] != meta.get("uid"):
        raise ApiError(ApiErrorKind.CONFLICT, f'Operation cannot be fulfilled on {info.resource} "{ref.name}": '
                       f"Precondition failed: UID in precondition: {requested['uid']}, UID in object meta: "
                       f"{meta.get('uid')}", ref)
    if requested.get("resourceVersion") and requested["resourceVersion"] != meta.get("resourceVersion"):
        raise ApiError(ApiErrorKind.CONFLICT, f'Operation cannot be fulfilled on {info.resource} "{ref.name}": '
                       "the object has been modified; please apply your changes to the latest version and try "
                       "again", ref)


def spec_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether anything outside metadata and status differs (what bumps metadata.generation)."""
    keys = (old.keys() | new.keys()) - UNVERSIONED
    return any(old.get(k) != new.get(k) for k in keys)


def same_object(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Equal apart from metadata.resourceVersion: such a write changes nothing."""
    if old.keys() != new.keys():
        return False
    strip = {"resourceVersion"}
    old_meta = {k: v for k, v in old["metadata"].items() if k not in strip}
    new_meta = {k: v for k, v in new["metadata"].items() if k not in strip}
    return old_meta == new_meta and all(old[k] == new[k] for k in new if k != "metadata")


def is_established(status: Any) -> bool:
    conditions = status.get("conditions") or [] if isinstance(status, dict) else []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def crd_status(crd: Mapping[str, Any], old: Any, established: bool, now: datetime) -> dict[str, Any]:
    """NamesAccepted, Established (or Installing), acceptedNames and storedVersions for a CRD."""
    old = old if isinstance(old, dict) else {}
    previous = {c.get("type"): c for c in old.get("conditions") or []}
    stamp = to_rfc3339(now)
    wanted = [("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
              ("Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
              if established else ("Established", "False", "Installing", "the initial names have been accepted")]
    conditions = [condition(previous.get(t), t, s, r, m, stamp) for t, s, r, m in wanted]
    conditions += [c for t, c in previous.items() if t not in ("NamesAccepted", "Established")]
    storage = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]
    stored_versions = list(old.get("storedVersions") or [])
    stored_versions += [v for v in storage if v not in stored_versions]
    return {**old, "conditions": conditions, "acceptedNames": accepted_names(crd),
            "storedVersions": stored_versions}


def condition(previous: Mapping[str, Any] | None, type_: str, status: str, reason: str, message: str,
               stamp: str) -> dict[str, Any]:
    """A condition whose lastTransitionTime only moves when its status changes."""
    if previous and previous.get("status") == status and previous.get("lastTransitionTime"):
        stamp = previous["lastTransitionTime"]
    return {"type": type_, "status": status, "lastTransitionTime": stamp, "reason": reason, "message": message}
