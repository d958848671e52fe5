"""The two sides of a diff: the release's plan, and the live objects it is compared with.

Against a cluster (any backend, or saved objects) the sweep's settings come from the ClusterVersion as the
sync worker takes them (pkg/cvo/sync_worker.go): the mode (no release yet: install; the same version:
reconcile; another: update), ``spec.overrides`` (an unmanaged object is skipped), and the capabilities it
had enabled (still enabled, ``SetCapabilities``).  Against another release the live side is what cvo wrote
for that release's manifests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from cvo.cluster.api import Reader, Ref, cv_ref
from cvo.diff.compute import Diff, Mutations, diff_plan, ordered_tasks, ref_of, wanted_refs
from cvo.gates.olm import OC_API_VERSION, OC_KIND
from cvo.payload.capabilities import still_enabled
from cvo.payload.fields import dig, entries
from cvo.payload.filters import ApplyFilter, LoadFilter, Override
from cvo.payload.graph import Mode
from cvo.payload.loader import Release
from cvo.plan.build import Plan, make_plan

PARALLEL_READS = 16  # gets in flight at once against a cluster


def plan_of(release: Release, mode: Mode, load_filter: LoadFilter, apply_filter: ApplyFilter) -> Plan:
    return make_plan(release, mode, profile=load_filter.profile, feature_set=load_filter.feature_set,
                     feature_gates=load_filter.feature_gates, apply_filter=apply_filter)


def mode_for(cv: dict[str, Any] | None, version: str) -> Mode:
    """The sweep a release would get on a cluster whose ClusterVersion is ``cv`` (pkg/cvo/cvo.go ``sync``)."""
    running = dig(cv or {}, "status", "desired", "version")
    if not running:
        return Mode.INSTALL
    return Mode.RECONCILE if running == version else Mode.UPDATE


def cluster_filter(cv: dict[str, Any] | None, base: ApplyFilter) -> ApplyFilter:
    """``base`` (the flags) with the ClusterVersion's overrides and the capabilities it keeps enabled."""
    previous = dig(cv or {}, "status", "capabilities", "enabledCapabilities")
    kept = still_enabled(base.enabled_capabilities, base.known_capabilities,
                         [c for c in previous if isinstance(c, str)] if isinstance(previous, list) else [])
    overrides = tuple(Override.from_dict(o) for o in entries(dig(cv or {}, "spec", "overrides")))
    return ApplyFilter(enabled_capabilities=kept.enabled, known_capabilities=base.known_capabilities,
                       overrides=overrides, feature_gates=base.feature_gates)


async def read_live(reader: Reader, refs: Iterable[Ref], parallel: int = PARALLEL_READS,
                    ) -> dict[Ref, dict[str, Any] | None]:
    """Every object of ``refs`` as the cluster has it (``None``: not there), ``parallel`` reads at a time.

    ``parallel`` readers take the next ref in turn (not a task per ref: against the embedded cluster, whose
    gets never wait, creating a thousand tasks cost as much as the reads)."""
    wanted = list(dict.fromkeys(refs))
    found: dict[Ref, dict[str, Any] | None] = {}
    queue = iter(wanted)

    async def worker() -> None:
        for ref in queue:
            found[ref] = await reader.get(ref)

    await asyncio.gather(*(worker() for _ in range(min(parallel, len(wanted)))))
    return {ref: found[ref] for ref in wanted}


async def against_cluster(reader: Reader, release: Release, load_filter: LoadFilter, apply_filter: ApplyFilter,
                          where: str) -> Diff:
    """What a sweep of ``release`` would change on the cluster ``reader`` reads."""
    cv = await reader.get(cv_ref())
    plan = plan_of(release, mode_for(cv, release.version), load_filter, cluster_filter(cv, apply_filter))
    olm = await reader.serves(OC_API_VERSION, OC_KIND)
    live = await read_live(reader, wanted_refs(plan))
    return diff_plan(plan, live, where, olm=olm)


def written_objects(plan: Plan) -> dict[Ref, dict[str, Any] | None]:
    """What a sweep of ``plan`` leaves on a cluster: each applied manifest as cvo sends it."""
    mutations = Mutations.of(plan, olm=False)
    out: dict[Ref, dict[str, Any] | None] = {}
    for task in ordered_tasks(plan):
        if task.skip is None and not task.delete and task.invalid_delete is None:
            out[ref_of(task)] = mutations.desired(task)
    return out


def against_release(release: Release, old: Release, load_filter: LoadFilter, apply_filter: ApplyFilter) -> Diff:
    """What an update from ``old`` to ``release`` would change on a cluster that ran ``old``'s sweep."""
    before = written_objects(plan_of(old, Mode.RECONCILE, load_filter, apply_filter))
    plan = plan_of(release, Mode.UPDATE, load_filter, apply_filter)
    return diff_plan(plan, before, f"release {old.version}", olm=False)
