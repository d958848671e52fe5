"""Applying one manifest the way the CVO's resource builders do (lib/resourcemerge, pkg/cvo/internal/generic.go `applyUnstructured`).

* Missing objects are created; create-only objects are never updated.  In install mode cvo sends
  the create first and reads the object only when it already exists (the CVO reads first).
* Existing objects are updated only when a field the manifest sets differs from the live object.
  cvo compares "the manifest is contained in the live object" rather than the CVO's per-type merge
  code: fields the server defaults (and the manifest leaves out) never count as drift, fields the
  manifest sets are enforced.  Labels and annotations are merged (added or overwritten, never
  removed), as ``EnsureObjectMeta`` does; for custom resources they are replaced together with a
  changed spec, and metadata-only drift is left alone, as ``applyUnstructured`` does.
* ``release.openshift.io/delete: "true"`` deletes the object in update mode only and does not
  wait for it to disappear; an invalid value fails the task.
* A ClusterOperator is created by the precreate pass and never updated, except its metadata in
  reconcile mode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref
from cvo.payload.errors import UpdateError
from cvo.payload.fields import entries, mapping
from cvo.payload.graph import Mode, Task
from cvo.payload.schema import secret_string_data
from cvo.payload.shapes import shape_problem

# Groups whose kinds the CVO applies with typed clients (label/annotation merge).
TYPED_GROUPS = frozenset({
    "", "apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io",
    "policy", "networking.k8s.io", "scheduling.k8s.io", "storage.k8s.io", "apiregistration.k8s.io",
    "security.openshift.io", "image.openshift.io", "config.openshift.io", "operators.coreos.com",
})
SKIPPED_KEYS = frozenset({"apiVersion", "kind", "metadata", "status"})
Mutator = Callable[[dict[str, Any]], dict[str, Any]]
MERGED_MAPS = {("v1", "ConfigMap"): ("data", "binaryData")}


@dataclass
class DeleteTracker:
    """Deletes the CVO requested and whether it saw them finish (in memory, lost on restart, as in the CVO)."""

    requested: dict[Ref, bool] = field(default_factory=dict)  # ref -> verified gone

    def in_progress(self) -> list[Ref]:
        return sorted(ref for ref, verified in self.requested.items() if not verified)


@dataclass
class ApplyOutcome:
    action: str  # created, updated, unchanged, deleted, delete-verified, skipped
    live: dict[str, Any] | None = None


def _empty(value: Any) -> bool:
    """Values a server drops when it stores an object (``{}``, ``[]``, ``""``, ``false``, ``null``)."""
    return value is None or value is False or value == "" or value == {} or value == []


def contains(desired: Any, live: Any) -> bool:
    """Whether every field ``desired`` sets has the same value in ``live`` (extra live fields are fine).

    A field the manifest sets to an empty value matches a live object without it: the server
    omits such values when it stores the object, so they are not drift.
    """
    if _empty(desired) and _empty(live):
        return True
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return False
        return all((contains(v, live[k]) if k in live else _empty(v)) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return False
        return all(contains(d, lv) for d, lv in zip(desired, live, strict=True))
    if isinstance(desired, bool) or isinstance(live, bool):
        return desired is live
    return bool(desired == live)


def _merge_meta(live_meta: dict[str, Any], desired_meta: dict[str, Any]) -> bool:
    changed = False
    for key in ("labels", "annotations"):
        wanted = mapping(desired_meta.get(key))
        if not wanted:
            continue
        current = mapping(live_meta.get(key))
        live_meta[key] = current
        for k, v in wanted.items():
            if current.get(k) != v:
                current[k] = v
                changed = True
    return changed


# Fields the CVO's typed clients do not know and so never send (OpenShift's legacy RBAC fields).
DROPPED_FIELDS = {
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("userNames", "groupNames"),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("userNames", "groupNames"),
}


def desired_object(task: Task, mutate: Mutator | None = None, fresh: dict[str, Any] | None = None) -> dict[str, Any]:
    """What to send for ``task``; ``fresh``: a private decode of its manifest to build it from (else one is made)."""
    obj = fresh if fresh is not None else task.manifest.copy_obj()
    if (task.manifest.group, task.manifest.kind) == ("", "Secret"):
        obj = secret_string_data(obj)
    for key in DROPPED_FIELDS.get((task.manifest.group, task.manifest.kind), ()):
        obj.pop(key, None)
    if mutate is not None:
        obj = mutate(obj)
    if task.manifest.kind == "Deployment" and task.manifest.group == "apps" and isinstance(obj.get("spec", {}), dict):
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)  # a manifest that omits replicas means 1
    return obj


def merge(desired: dict[str, Any], live: dict[str, Any], typed: bool) -> dict[str, Any] | None:
    """The object to send as an update, or ``None`` when the live object already matches."""
    merged = dict(live)
    merged["metadata"] = dict(mapping(live.get("metadata")))
    desired_meta = mapping(desired.get("metadata"))
    body_changed = False
    merge_keys = MERGED_MAPS.get((desired.get("apiVersion", ""), desired.get("kind", "")), ())
    for key, value in desired.items():
        if key in SKIPPED_KEYS or (key not in live and _empty(value)):
            continue
        if not contains(value, live.get(key)):
            # ConfigMap data is merged key by key: keys only the live object has are kept.
            merged[key] = {**mapping(live.get(key)), **value} if key in merge_keys and isinstance(value, dict) else value
            body_changed = True
    if typed:
        meta_changed = _merge_meta(merged["metadata"], desired_meta)
        return merged if body_changed or meta_changed else None
    if not body_changed:
        return None
    for key in ("labels", "annotations", "ownerReferences"):
        if key in desired_meta:
            merged["metadata"][key] = desired_meta[key]
        else:
            merged["metadata"].pop(key, None)
    return merged


async def apply_task(cluster: Cluster, task: Task, mode: Mode, deletes: DeleteTracker,
                     mutate: Mutator | None = None) -> ApplyOutcome:
    """Apply ``task`` once; raises :class:`ApiError` (retried by the caller) or :class:`UpdateError`.

    ``mutate`` adjusts the desired object first (cvo injects ``OPERATOR_CONDITION_NAME``).
    """
    m = task.manifest
    if (problem := task.invalid_delete) is not None:
        raise UpdateError("UpdatePayloadResourceInvalid", f"Could not update {task}: {problem}", task=str(task))
    cluster_operator = m.kind == "ClusterOperator" and m.group == "config.openshift.io"
    # One decode for the shape check and the object sent (the check only reads it); used once.
    fresh = None if task.delete or cluster_operator else m.copy_obj()

    def desired() -> dict[str, Any]:
        nonlocal fresh
        obj, fresh = fresh, None
        return desired_object(task, mutate, obj)

    if not task.delete and (problem := shape_problem(m, fresh)) is not None:
        # The CVO's typed decode fails the same way: the task fails, the rest of the payload goes on.
        raise UpdateError("UpdatePayloadResourceInvalid", f"Could not update {task}: {problem}",
                          nested=f"{m.describe()}: {problem}", task=str(task))
    ref = Ref(m.group, m.kind, m.namespace, m.name)
    if task.delete:
        return await _delete(cluster, ref, mode, deletes)
    if not await cluster.serves(m.api_version, m.kind):
        raise ApiError(ApiErrorKind.NO_KIND_MATCH, f'no matches for kind "{m.kind}" in version "{m.api_version}"', ref)
    if mode is Mode.INSTALL and not cluster_operator:
        # An install finds an empty cluster: create first and read only what already exists (one
        # request per new object instead of a GET that fails and then a create).
        try:
            return ApplyOutcome("created", await cluster.create(desired()))
        except ApiError as err:
            if err.kind is not ApiErrorKind.ALREADY_EXISTS:
                raise
    live = await cluster.get(ref)
    if cluster_operator:
        return await _cluster_operator(cluster, task, live, mode)
    if live is None:
        created = await cluster.create(desired())
        return ApplyOutcome("created", created)
    if task.create_only:
        return ApplyOutcome("unchanged", live)
    wanted = desired()
    update = merge(wanted, live, typed=m.group in TYPED_GROUPS)
    if update is None:
        return ApplyOutcome("unchanged", live)
    if (m.group, m.kind) == ("batch", "Job") and not contains(mapping(wanted.get("spec")).get("template"),
                                                              mapping(live.get("spec")).get("template")):
        # A Job's pod template is immutable: a new release's Job replaces the old one.
        await cluster.delete(ref)
        return ApplyOutcome("replaced", await cluster.create(wanted))
    return ApplyOutcome("updated", await cluster.update(update))


async def precreate_cluster_operator(cluster: Cluster, task: Task, create_first: bool = False) -> dict[str, Any] | None:
    """The precreate pass: create the ClusterOperator (no status but relatedObjects) if it is missing.

    ``create_first`` (install mode) skips the read: AlreadyExists means there is nothing to do.
    Returns the object as created (with its relatedObjects), ``None`` when it was there already."""
    m = task.manifest
    ref = Ref(m.group, m.kind, "", m.name)
    if not create_first and await cluster.get(ref) is not None:
        return None
    obj = task.manifest.copy_obj()
    related = entries(mapping(obj.get("status")).get("relatedObjects"))  # apply_task names a malformed one
    obj.pop("status", None)
    if not isinstance(obj.get("spec"), dict):
        obj["spec"] = {}  # the CVO's typed client always sends spec; OpenShift's CRD requires it
    if related:  # ObjectReference fields are always sent by Go, empty or not
        related = [{"group": "", "resource": "", "name": "", **r} for r in related]
    try:
        created = await cluster.create(obj)
        if related:
            created["status"] = {**(created.get("status") or {}), "relatedObjects": related}
            created = await cluster.update_status(created)
        return created
    except ApiError as err:
        if err.kind not in (ApiErrorKind.ALREADY_EXISTS, ApiErrorKind.CONFLICT):
            raise
        return None


async def _cluster_operator(cluster: Cluster, task: Task, live: dict[str, Any] | None, mode: Mode) -> ApplyOutcome:
    if live is None:
        created = await precreate_cluster_operator(cluster, task, create_first=True)
        return ApplyOutcome("created", created if created is not None else await cluster.get(Ref.of(task.manifest.obj)))
    if mode is Mode.RECONCILE:
        merged = dict(live)
        merged["metadata"] = dict(mapping(live.get("metadata")))
        if _merge_meta(merged["metadata"], mapping(task.manifest.obj.get("metadata"))):
            return ApplyOutcome("updated", await cluster.update(merged))
    return ApplyOutcome("unchanged", live)


async def _delete(cluster: Cluster, ref: Ref, mode: Mode, deletes: DeleteTracker) -> ApplyOutcome:
    if mode is not Mode.UPDATE:
        return ApplyOutcome("skipped")
    tracked = ref in deletes.requested
    live = await cluster.get(ref)
    if live is None:
        deletes.requested[ref] = True
        return ApplyOutcome("delete-verified")
    if tracked:
        return ApplyOutcome("deleted")  # requested earlier and still there (or reappeared): no action
    await cluster.delete(ref)
    deletes.requested[ref] = False
    return ApplyOutcome("deleted")
