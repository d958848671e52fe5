"""Install: the payload's CRDs, applied as the attempt starts instead of when their nodes come to them.

A custom resource of the payload waits for its CRD to be Established, and the API server establishes
CRDs one after another, in the order they come; a CRD deep in a long node was created seconds after the
first object waiting for it, and an install's tail was such chains.  So the CRDs whose kinds the payload
applies go first, in the order of their first custom resource, then the others (most of a payload's CRDs:
nothing in the install waits for them), a few at a time.  Each CRD's task then takes the outcome of its
early apply (a failure is its first call).  The objects and the requests are the same; only when the CRDs
are sent changes.  The CVO applies an install's manifests all at once and has no such step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from cvo.payload.fields import mapping
from cvo.payload.graph import Task
from cvo.payload.manifest import Manifest
from cvo.runner.apply import ApplyOutcome

EARLY_CRD_APPLIES = 8  # how many of the payload's CRDs are applied at once ahead of their nodes
CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
CrdIndex = dict[tuple[str, str, str], Manifest]


def payload_crds(manifests: Sequence[Manifest]) -> CrdIndex:
    """(group, kind, version) -> the payload's CRD that serves it."""
    out: CrdIndex = {}
    for m in manifests:
        if (m.group, m.kind) != CRD:
            continue
        # Any shape at all (the CRD's own task reports a malformed one): only strings are taken.
        spec = mapping(m.copy_obj().get("spec"))  # not m.obj: that would keep every CRD decoded
        group, kind = spec.get("group"), mapping(spec.get("names")).get("kind")
        if not isinstance(group, str) or not isinstance(kind, str) or not kind:
            continue
        versions = spec.get("versions")
        for v in versions if isinstance(versions, list) else []:
            if isinstance(v, dict) and v.get("served", True) and isinstance(v.get("name"), str) and v["name"]:
                out.setdefault((group, kind, v["name"]), m)
        if isinstance(spec.get("version"), str) and spec["version"]:  # apiextensions v1beta1
            out.setdefault((group, kind, spec["version"]), m)
    return out


def start_early_applies(tasks: Sequence[Task], crds: CrdIndex,
                        apply: Callable[[Task], Awaitable[ApplyOutcome]]) -> dict[int, asyncio.Future[ApplyOutcome]]:
    """Start applying the CRDs among ``tasks`` (see the module); id() of each CRD task -> its apply's outcome.

    The outcome keeps only the action, not the CRD as the server answered: an install checks no CRD's
    health, and until its node comes to it the answer would be held (the payload's CRDs are its largest
    objects)."""
    applied = [t for t in tasks if t.skip is None and not t.delete]
    first_need: dict[int, int] = {}  # id() of a CRD manifest -> index of the first task of its kinds
    for index, task in enumerate(applied):
        m = task.manifest
        crd = crds.get((m.group, m.kind, m.version))
        if crd is not None and crd is not m:
            first_need.setdefault(id(crd), index)
    ordered = [(first_need.get(id(t.manifest), len(applied) + i), t)
               for i, t in enumerate(applied) if (t.manifest.group, t.manifest.kind) == CRD]
    ordered.sort(key=lambda pair: pair[0])
    gate = asyncio.Semaphore(EARLY_CRD_APPLIES)

    async def early(task: Task) -> ApplyOutcome:
        async with gate:
            outcome = await apply(task)
        return ApplyOutcome(outcome.action)

    return {id(task): asyncio.ensure_future(early(task)) for _, task in ordered}  # the semaphore's order
