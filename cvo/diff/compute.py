"""What a sweep would do to each object of a release, decided by the rules of :func:`cvo.runner.apply.apply_task`.

Per task, in the plan's order (run level by run level for an update):

    skipped (capability, override, feature gate) ──► not listed
    release.openshift.io/delete ───────────────────► deleted, in update mode when the object exists
    not there ─────────────────────────────────────► added (the object as cvo creates it)
    create-only, or a ClusterOperator ─────────────► never updated (a ClusterOperator's metadata: reconcile only)
    merge() sends nothing ─────────────────────────► unchanged
    a Job whose pod template changed ──────────────► replaced (deleted and created again)
    otherwise ─────────────────────────────────────► changed: the fields cvo writes (:mod:`cvo.diff.fields`)

The desired object is built as the sweep builds it (:func:`cvo.runner.apply.desired_object`): Secrets'
``stringData`` as ``data``, the zero values Go sends for a CRD's required fields, ``OPERATOR_CONDITION_NAME``
in an operator's Deployment when the cluster serves OperatorConditions.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from cvo.cluster.api import Ref
from cvo.diff.fields import changed_paths, empty_value, pair
from cvo.gates.olm import inject_env
from cvo.payload.fields import mapping
from cvo.payload.graph import Mode, Task
from cvo.payload.manifest import Manifest
from cvo.payload.operators import operator_deployments
from cvo.payload.schema import fill_required, required_zero_values
from cvo.payload.shapes import shape_problem
from cvo.plan.build import Plan
from cvo.runner.apply import SKIPPED_KEYS, TYPED_GROUPS, contains, desired_object, merge

ACTIONS = ("added", "changed", "replaced", "deleted", "invalid")
MASK = "***"  # a Secret's values never show (kubectl diff masks them the same way)


@dataclass(frozen=True)
class ObjectDiff:
    """One object the sweep would change."""

    action: str  # one of ACTIONS
    api_version: str
    kind: str
    namespace: str
    name: str
    runlevel: str | None  # the manifest's run level (its file name's 0000_NN), None without one
    component: str | None
    file: str  # the manifest's path in the release
    before: dict[str, Any] | None  # the live object, restricted to the fields shown; None: added
    after: dict[str, Any] | None  # what cvo would write, restricted the same way; None: deleted
    fields: tuple[str, ...] = ()  # the changed fields' paths (changed, replaced)
    message: str = ""  # invalid: why the sweep would fail this task

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def kind_name(self) -> str:
        """``Kind.group`` as kubectl names a kind (``Kind`` for the core group)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


@dataclass
class Diff:
    """Every object a sweep of ``version`` would change against ``against``, in sweep order."""

    version: str
    image: str
    against: str  # "cluster: …", "release 4.16.3", "saved objects from …"
    mode: Mode
    objects: list[ObjectDiff] = field(default_factory=list)
    unchanged: int = 0
    skipped: int = 0  # left out at apply time (capabilities, overrides, feature gates)

    @property
    def differs(self) -> bool:
        return bool(self.objects)


@dataclass(frozen=True)
class Mutations:
    """What the sweep adds to a manifest before it sends it (:meth:`cvo.runner.tasks.TaskRunner._mutator`)."""

    zeros: Mapping[tuple[str, str], dict[str, Any]]
    operators: Mapping[tuple[str, str], str]  # (namespace, Deployment) -> its ClusterOperator (OLM's injection)

    @classmethod
    def of(cls, plan: Plan, olm: bool, decode: Callable[[Manifest], dict[str, Any]] | None = None) -> Mutations:
        manifests = plan.release.manifests
        owners: dict[tuple[str, str], str] = {}
        if olm:
            for co, deployments in operator_deployments(manifests).items():
                for d in deployments:
                    owners.setdefault((d.namespace, d.name), co)
        # Only the CRDs of kinds the release holds objects of (a CRD is named PLURAL.GROUP): the rest add nothing
        groups = {m.group for m in manifests if m.kind != "CustomResourceDefinition"}
        crds = [m for m in manifests if m.kind != "CustomResourceDefinition" or m.name.partition(".")[2] in groups]
        return cls(required_zero_values(crds, decode), owners)

    def desired(self, task: Task, fresh: dict[str, Any] | None = None) -> dict[str, Any]:
        """The object the sweep sends for ``task``; ``fresh``: a private decode of its manifest to build it from."""
        m = task.manifest
        zeros = self.zeros.get((m.group, m.kind))
        operator = self.operators.get((m.namespace, m.name)) if (m.group, m.kind) == ("apps", "Deployment") else None

        def mutate(obj: dict[str, Any]) -> dict[str, Any]:
            if zeros is not None:
                obj = fill_required(obj, zeros)
            return inject_env(obj, operator) if operator is not None else obj

        return desired_object(task, mutate, fresh)


def ref_of(task: Task) -> Ref:
    m = task.manifest
    return Ref(m.group, m.kind, m.namespace, m.name)


def ordered_tasks(plan: Plan) -> list[Task]:
    """The plan's tasks in the order its text view lists them (step, node, task): the sweep's order."""
    return [task for nodes in plan.steps for node in nodes for task in plan.node_tasks(node)]


def _identity(obj: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    meta = mapping(obj.get("metadata"))
    shown = {k: meta[k] for k in ("name", "namespace") if k in meta}
    return {"apiVersion": api_version, "kind": kind, "metadata": shown}


def _body(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as a person reads it: its body and the metadata a manifest sets, not the server's."""
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = mapping(obj.get("metadata"))
    out["metadata"] = {k: meta[k] for k in ("name", "namespace", "labels", "annotations", "ownerReferences")
                       if k in meta}
    return out


def _meta_pair(desired: Mapping[str, Any], live: Mapping[str, Any], typed: bool, body_changed: bool,
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The labels and annotations (and ownerReferences) cvo writes, as :func:`cvo.runner.apply.merge` does:
    merged key by key for a typed kind, replaced along with a changed body for a custom resource."""
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    desired_meta, live_meta = mapping(desired.get("metadata")), mapping(live.get("metadata"))
    if typed:
        for key in ("labels", "annotations"):
            wanted, current = mapping(desired_meta.get(key)), mapping(live_meta.get(key))
            if wanted:
                before[key] = {k: current[k] for k in wanted if k in current}
                after[key] = {**before[key], **wanted}
    elif body_changed:
        for key in ("labels", "annotations", "ownerReferences"):
            if key in live_meta:
                before[key] = live_meta[key]
            if key in desired_meta:
                after[key] = desired_meta[key]
    return before, after


def _changed(task: Task, desired: dict[str, Any], live: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(before, after) of an update: the fields the manifest sets, paired (:func:`cvo.diff.fields.pair`)."""
    m = task.manifest
    before, after = _identity(live, m.api_version, m.kind), _identity(desired, m.api_version, m.kind)
    body_changed = False
    for key, value in desired.items():
        if key in SKIPPED_KEYS or (key not in live and empty_value(value)):
            continue
        if key not in live:
            after[key], body_changed = value, True
            continue
        before[key], after[key] = pair(value, live[key])
        body_changed = body_changed or not contains(value, live[key])
    meta_before, meta_after = _meta_pair(desired, live, m.group in TYPED_GROUPS, body_changed)
    before["metadata"].update(meta_before)
    after["metadata"].update(meta_after)
    return before, after


def _masked(kind: tuple[str, str], before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
    """A Secret's values replaced by ``***`` (``*** (before)`` and ``*** (after)`` where they differ)."""
    if kind != ("", "Secret"):
        return
    for key in ("data", "stringData"):
        old = mapping(before.get(key)) if before is not None else {}
        new = mapping(after.get(key)) if after is not None else {}
        same = {k for k in old if k in new and old[k] == new[k]}
        if before is not None and key in before and isinstance(before[key], dict):
            before[key] = {k: MASK if k in same else f"{MASK} (before)" for k in old}
        if after is not None and key in after and isinstance(after[key], dict):
            after[key] = {k: MASK if k in same else f"{MASK} (after)" for k in new}


def _same(desired: Mapping[str, Any], live: Mapping[str, Any], typed: bool) -> bool:
    """A fast sufficient test that :func:`cvo.runner.apply.merge` sends nothing: every field the manifest sets
    encodes to the same JSON as the live one (same values, same types, same order), and so do the labels and
    annotations a typed kind merges.  ``False`` proves nothing: merge() decides then."""
    for key, value in desired.items():
        if key in SKIPPED_KEYS:
            continue
        if key not in live:
            if not empty_value(value):
                return False
        elif orjson.dumps(value) != orjson.dumps(live[key]):
            return False
    if not typed:
        return True
    desired_meta, live_meta = mapping(desired.get("metadata")), mapping(live.get("metadata"))
    for key in ("labels", "annotations"):
        current = mapping(live_meta.get(key))
        if any(current.get(k) != v for k, v in mapping(desired_meta.get(key)).items()):
            return False
    return True


def decide(task: Task, live: dict[str, Any] | None, mode: Mode, mutations: Mutations,
           decoded: dict[str, Any] | None = None) -> ObjectDiff | None:
    """What the sweep would do to ``task``'s object, given the live one; ``None``: nothing.  ``decoded``: a
    private decode of the task's manifest made earlier (it is changed here)."""
    m = task.manifest

    def result(action: str, before: dict[str, Any] | None, after: dict[str, Any] | None, message: str = "",
               ) -> ObjectDiff:
        _masked((m.group, m.kind), before, after)
        paths = tuple(changed_paths(before, after)) if before is not None and after is not None else ()
        return ObjectDiff(action, m.api_version, m.kind, m.namespace, m.name, task.runlevel, task.component, m.path,
                          before, after, paths, message)

    if (problem := task.invalid_delete) is not None:
        return result("invalid", None, None, problem)
    if task.delete:
        if mode is not Mode.UPDATE or live is None:
            return None
        return result("deleted", _body(live), None)
    cluster_operator = (m.group, m.kind) == ("config.openshift.io", "ClusterOperator")
    if cluster_operator:
        if live is None:
            return result("added", None, _body(m.copy_obj()))
        if mode is not Mode.RECONCILE:
            return None
        before, after = _identity(live, m.api_version, m.kind), _identity(live, m.api_version, m.kind)
        meta_before, meta_after = _meta_pair(m.obj, live, True, False)
        before["metadata"].update(meta_before)
        after["metadata"].update(meta_after)
        return result("changed", before, after) if before != after else None
    fresh = decoded if decoded is not None else m.copy_obj()
    if (problem := shape_problem(m, fresh)) is not None:
        return result("invalid", None, None, problem)
    desired = mutations.desired(task, fresh)  # the shape check only read it
    if live is None:
        return result("added", None, _body(desired))
    typed = m.group in TYPED_GROUPS
    if task.create_only or _same(desired, live, typed):
        return None
    # merge() writes the labels it merges into the live metadata's maps: it gets copies of them
    scratch = {**live, "metadata": copy.deepcopy(mapping(live.get("metadata")))}
    if merge(desired, scratch, typed=typed) is None:
        return None
    before, after = _changed(task, desired, live)
    replaced = (m.group, m.kind) == ("batch", "Job") and not contains(
        mapping(desired.get("spec")).get("template"), mapping(live.get("spec")).get("template"))
    return result("replaced" if replaced else "changed", before, after)


def diff_plan(plan: Plan, live: Mapping[Ref, dict[str, Any] | None], against: str, *, olm: bool) -> Diff:
    """The diff of ``plan`` against the live objects ``live`` (every task's object looked up, ``None``: not
    there); ``olm``: the cluster serves OperatorConditions (cvo injects their names into operators)."""
    decoded: dict[int, dict[str, Any]] = {}  # the CRDs decoded for their zero values, decided on next

    def decode(m: Manifest) -> dict[str, Any]:
        obj = decoded[id(m)] = m.copy_obj()
        return obj

    mutations = Mutations.of(plan, olm, decode)
    out = Diff(plan.release.version, plan.release.image, against, plan.mode)
    for task in ordered_tasks(plan):
        if task.skip is not None:
            out.skipped += 1
            continue
        found = decide(task, live.get(ref_of(task)), plan.mode, mutations, decoded.pop(id(task.manifest), None))
        if found is None:
            out.unchanged += 1
        else:
            out.objects.append(found)
    return out


def wanted_refs(plan: Plan) -> Sequence[Ref]:
    """The objects a diff of ``plan`` reads (each once, in sweep order)."""
    return list(dict.fromkeys(ref_of(t) for t in ordered_tasks(plan) if t.skip is None))
