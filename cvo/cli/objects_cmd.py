"""``cvo apply -f FILE``, ``cvo patch KIND NAME -p JSON``, ``cvo delete KIND NAME``: an admin's hands on any object, as
kubectl's, on every backend (the embedded cluster of ``--state`` above all, which has no kubectl).

What the admin does in an update's story: create a workload and the PodDisruptionBudget that guards it, unpause a
MachineConfigPool, delete the budget that holds a drain.  The lines printed are kubectl's
(``poddisruptionbudget.policy/db created``, ``machineconfigpool.machineconfiguration.openshift.io/infra patched``,
``poddisruptionbudget.policy "db" deleted``); anything wrong is one ``error:`` line and exit 1.  Kinds are named
as kubectl names them (:mod:`cvo.cli.kind_names`).  A patch is a JSON merge patch (RFC 7386, ``--type merge``)
or a JSON patch (RFC 6902, ``--type json``), read again and applied again after a Conflict.
"""

from __future__ import annotations

import argparse
import copy
import json
from typing import Any

from cvo.cli.backend import ClusterOptions, add_backend_flags, backend_clock, open_backend
from cvo.cli.common import EXIT_OK, CommandFailed, UsageError, describe_api_error
from cvo.cli.kind_names import KindName, builtin_kinds, crd_kinds, resolve, unknown
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref
from cvo.cluster.persist import reread_on_conflict

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
DEFAULT_NAMESPACE = "default"  # kubectl's, without a context naming another

APPLY_EXAMPLES = """\
Examples:
  # A database on worker-0 and the PodDisruptionBudget that wants it always available (make demo's)
  cvo apply -f hack/demo-db.yaml --state .cvo-demo-state.db
"""
PATCH_EXAMPLES = """\
Examples:
  # Unpause a MachineConfigPool: the machine-config operator updates its nodes again
  cvo patch mcp infra --type merge -p '{"spec":{"paused":false}}'

  # Let two nodes of the worker pool update at once
  cvo patch machineconfigpool worker -p '{"spec":{"maxUnavailable":2}}'

  # A JSON patch (RFC 6902)
  cvo patch pdb db -n demo --type json -p '[{"op":"replace","path":"/spec/minAvailable","value":0}]'
"""
DELETE_EXAMPLES = """\
Examples:
  # The budget that holds a node's drain: the drain goes through
  cvo delete pdb db -n demo

  # Every object of a file
  cvo delete -f hack/demo-db.yaml
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    apply = sub.add_parser("apply", help="create or update objects from a file, as 'kubectl apply -f'",
                           description="Create each object of FILE (YAML or JSON documents, or a kind: List), or "
                           "update it when it exists (its metadata merged, the rest replaced), as 'kubectl apply "
                           "-f' prints it: created, configured or unchanged.", epilog=APPLY_EXAMPLES)
    apply.add_argument("-f", "--filename", required=True, metavar="FILE",
                       help="a YAML or JSON file of objects, or a directory of them")
    apply.add_argument("-n", "--namespace", help=f"for objects that name none (default {DEFAULT_NAMESPACE})")
    add_backend_flags(apply, runs_the_clock=False)
    apply.set_defaults(func=run_apply)

    patch = sub.add_parser("patch", help="change fields of an object, as 'kubectl patch'",
                           description="Change fields of one object with a JSON merge patch (RFC 7386: the "
                           "default) or a JSON patch (RFC 6902), read again and applied again if someone wrote "
                           "it meanwhile.", epilog=PATCH_EXAMPLES)
    patch.add_argument("kind", metavar="KIND", help="as kubectl names it: mcp, machineconfigpool, pdb, pods.v1, …")
    patch.add_argument("name", metavar="NAME", help="the object's name")
    patch.add_argument("-p", "--patch", required=True, metavar="JSON", help="the patch")
    patch.add_argument("--type", choices=("merge", "json"), default="merge",
                       help="merge: a JSON merge patch (default); json: a JSON patch")
    patch.add_argument("-n", "--namespace", help=f"of a namespaced object (default {DEFAULT_NAMESPACE})")
    add_backend_flags(patch, runs_the_clock=False)
    patch.set_defaults(func=run_patch)

    delete = sub.add_parser("delete", help="delete objects, as 'kubectl delete'",
                            description="Delete one object (KIND NAME), or every object of a file (-f); the "
                            "server's garbage collector deletes what they own.", epilog=DELETE_EXAMPLES)
    delete.add_argument("kind", metavar="KIND", nargs="?", help="as kubectl names it: pdb, pod, mcp, …")
    delete.add_argument("name", metavar="NAME", nargs="?", help="the object's name")
    delete.add_argument("-f", "--filename", metavar="FILE", help="delete the objects of this file instead")
    delete.add_argument("-n", "--namespace", help=f"of a namespaced object (default {DEFAULT_NAMESPACE})")
    delete.add_argument("--ignore-not-found", action="store_true", help="an object that is not there is no error")
    add_backend_flags(delete, runs_the_clock=False)
    delete.set_defaults(func=run_delete)


# --- patches --------------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 ``MergePatch``: objects merge key by key, ``null`` removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class PatchError(ValueError):
    """A JSON patch that cannot be applied (the API server's 422)."""


def _pointer(path: object) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]] if path else []


def _walk(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise PatchError(f"the path /{'/'.join(parts)} does not exist")
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902: add, remove, replace, move, copy, test, in order, on a copy; :class:`PatchError` for one that
    cannot apply."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch is a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or op.get("op") not in ("add", "remove", "replace", "move", "copy", "test"):
            raise PatchError(f"not an operation: {json.dumps(op)[:80]}")
        kind, parts = op["op"], _pointer(op.get("path"))
        if kind in ("move", "copy"):
            source = _pointer(op.get("from"))
            value = copy.deepcopy(_walk(doc, source))
            if kind == "move":
                doc = json_patch(doc, [{"op": "remove", "path": op["from"]}])
            doc = json_patch(doc, [{"op": "add", "path": op["path"], "value": value}])
            continue
        if kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise PatchError(f"test failed at {op['path']}")
            continue
        if not parts:
            if kind == "remove":
                raise PatchError("cannot remove the whole object")
            doc = copy.deepcopy(op.get("value"))
            continue
        parent, last = _walk(doc, parts[:-1]), parts[-1]
        if kind in ("remove", "replace"):
            _walk(doc, parts)  # must exist
        if isinstance(parent, dict):
            if kind == "remove":
                del parent[last]
            else:
                parent[last] = copy.deepcopy(op.get("value"))
        elif isinstance(parent, list):
            at = len(parent) if last == "-" and kind == "add" else int(last) if last.isdigit() else -1
            if not 0 <= at <= len(parent) - (0 if kind == "add" else 1):
                raise PatchError(f"index {last} out of range at {op['path']}")
            if kind == "add":
                parent.insert(at, copy.deepcopy(op.get("value")))
            elif kind == "remove":
                del parent[at]
            else:
                parent[at] = copy.deepcopy(op.get("value"))
        else:
            raise PatchError(f"{op['path']}: its parent is not an object or a list")
    return doc


# --- the commands ---------------------------------------------------------------------------------------


async def _kinds(cluster: Cluster) -> list[KindName]:
    kinds = builtin_kinds()
    if await cluster.serves("apiextensions.k8s.io/v1", "CustomResourceDefinition"):
        kinds += crd_kinds(await cluster.list(*CRD))
    return kinds


def _ref(kind: KindName, name: str, namespace: str | None) -> Ref:
    return Ref(kind.group, kind.kind, (namespace or DEFAULT_NAMESPACE) if kind.namespaced else "", name)


def _not_found(kind: KindName, ref: Ref) -> str:
    return f'{kind.resource} "{ref.name}" not found' + (f" in namespace {ref.namespace}" if ref.namespace else "")


def _objects(path: str) -> list[dict[str, Any]]:
    from cvo.cluster.saved.reader import read_paths
    from cvo.payload.limits import InputError

    try:
        objects = [obj for _, obj in read_paths([path])]
    except InputError as err:
        raise UsageError(str(err)) from None
    except OSError as err:
        raise UsageError(f"{path}: {err.strerror}") from None
    for i, obj in enumerate(objects, start=1):
        meta = obj.get("metadata")
        if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str) or not (
                isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]):
            raise UsageError(f"{path}: object {i}: an object needs apiVersion, kind and metadata.name")
    return objects


def _of_object(obj: dict[str, Any], kinds: list[KindName], namespace: str | None) -> tuple[KindName, Ref]:
    group = obj["apiVersion"].rpartition("/")[0]
    kind = next((k for k in kinds if (k.group, k.kind) == (group, obj["kind"])), None)
    if kind is None:
        raise CommandFailed(f'no matches for kind "{obj["kind"]}" in version "{obj["apiVersion"]}"')
    given = obj["metadata"].get("namespace")
    return kind, _ref(kind, obj["metadata"]["name"], given if isinstance(given, str) and given else namespace)


def _run(args: argparse.Namespace, body: Any) -> int:
    backend_options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(backend_options)

    async def main() -> None:
        async with open_backend(backend_options, clock, simulate_operators=False, create=False,
                                say_where=True) as backend:
            try:
                await body(backend.steady, backend.budget)
            except ApiError as err:
                raise CommandFailed(describe_api_error(err)) from None

    run_loop(main)
    return EXIT_OK


def run_apply(args: argparse.Namespace) -> int:
    objects = _objects(args.filename)

    async def body(cluster: Cluster, budget: Any) -> None:
        kinds = await _kinds(cluster)
        for obj in objects:
            kind, ref = _of_object(obj, kinds, args.namespace)
            wanted = {**obj, "metadata": {**obj["metadata"], **({"namespace": ref.namespace} if ref.namespace else {})}}

            async def write(wanted: dict[str, Any] = wanted, ref: Ref = ref) -> str:
                live = await cluster.get(ref)
                if live is None:
                    await cluster.create(wanted)
                    return "created"
                meta = {**live.get("metadata", {}), **wanted["metadata"]}
                meta["resourceVersion"] = live.get("metadata", {}).get("resourceVersion")
                merged = {**wanted, "metadata": meta, **({"status": live["status"]} if "status" in live else {})}
                if merged == live:
                    return "unchanged"
                written = await cluster.update(merged)
                return "configured" if written != live else "unchanged"

            what = await reread_on_conflict(write, budget, f"apply {ref}")
            print(f"{kind.typed}/{ref.name} {what}")

    return _run(args, body)


def run_patch(args: argparse.Namespace) -> int:
    try:
        patch = json.loads(args.patch)
    except json.JSONDecodeError as err:
        raise UsageError(f"--patch: not JSON: {err.msg} at character {err.pos}") from None
    if args.type == "merge" and not isinstance(patch, dict):
        raise UsageError("--patch: a merge patch is a JSON object, e.g. '{\"spec\":{\"paused\":false}}'")

    async def body(cluster: Cluster, budget: Any) -> None:
        kinds = await _kinds(cluster)
        kind = resolve(args.kind, kinds)
        if kind is None:
            raise CommandFailed(unknown(args.kind, kinds))
        ref = _ref(kind, args.name, args.namespace)

        async def write() -> bool:
            live = await cluster.get(ref)
            if live is None:
                raise CommandFailed(_not_found(kind, ref))
            try:
                changed = merge_patch(live, patch) if args.type == "merge" else json_patch(live, patch)
            except PatchError as err:
                raise CommandFailed(f'{kind.resource} "{ref.name}" is invalid: {err}') from None
            if not isinstance(changed, dict) or Ref.of(changed) != ref:
                raise CommandFailed(f'{kind.resource} "{ref.name}": a patch may not change the object\'s '
                                    "apiVersion, kind, name or namespace")
            if changed == live:
                return False
            return await cluster.update(changed) != live

        changed = await reread_on_conflict(write, budget, f"patch {ref}")
        print(f"{kind.typed}/{ref.name} patched" + ("" if changed else " (no change)"))

    return _run(args, body)


def run_delete(args: argparse.Namespace) -> int:
    if (args.filename is None) == (args.kind is None or args.name is None):
        raise UsageError("give KIND NAME (e.g. 'cvo delete pdb db -n demo') or -f FILE, not both")
    objects = _objects(args.filename) if args.filename is not None else []

    async def body(cluster: Cluster, budget: Any) -> None:
        kinds = await _kinds(cluster)
        if objects:
            targets = [_of_object(obj, kinds, args.namespace) for obj in objects]
        else:
            kind = resolve(args.kind, kinds)
            if kind is None:
                raise CommandFailed(unknown(args.kind, kinds))
            targets = [(kind, _ref(kind, args.name, args.namespace))]
        for kind, ref in targets:
            try:
                deleted = await cluster.delete(ref)
            except ApiError as err:
                if err.kind is not ApiErrorKind.NOT_FOUND:
                    raise
                deleted = False
            if deleted:
                print(f'{kind.typed} "{ref.name}" deleted')
            elif not args.ignore_not_found:
                raise CommandFailed(_not_found(kind, ref))

    return _run(args, body)
