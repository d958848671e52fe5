"""ClusterOperators whose status comes from workloads: the release's components that ship no operator.

A ClusterOperator manifest annotated ``release.cvo.dev/status-from-workloads`` names the workloads that make up
its component (Deployments, DaemonSets, StatefulSets, Jobs: by namespace and name, or by namespace and labels),
as a YAML list::

    release.cvo.dev/status-from-workloads: |
      - {kind: Deployment, namespace: shop, name: web}
      - {kind: StatefulSet, namespace: shop, selector: {app.kubernetes.io/part-of: shop}}
    release.cvo.dev/version-from: label:app.kubernetes.io/version   # or annotation:KEY, or image

:func:`derive` turns the live workloads into what an operator would report (kstatus's rules,
:mod:`cvo.objects.rollout`): ``Available`` while every workload serves, ``Progressing`` while one rolls out,
``Degraded`` when one has failed (with its own condition's message) or runs no readable version, and the
versions the manifest declares once every workload has rolled out at one version.  :class:`WorkloadReporter`
writes that status on every change of those workloads, while a sweep runs (the sweep then waits on the
ClusterOperator as on any other).

May import: ``cvo.payload``, ``cvo.objects``, ``cvo.cluster`` (the interface), this package's library.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cvo.clock import Clock
from cvo.cluster.api import ApiError, Cluster, WatchEvent
from cvo.cluster.informer import Backoff, Informer
from cvo.log import get_logger
from cvo.objects.rollout import RolloutStatus, compute
from cvo.operators.library.clusteroperator import Condition, report_status
from cvo.payload import semver
from cvo.payload.fields import dig, entries, mapping, string
from cvo.payload.workloads import (
    WorkloadRef,
    WorkloadSpec,
)

log = get_logger("cvo.operators.workloads")

MAX_MATCHES = 50  # a selector's matches looked at (sorted by name): the status of hundreds is not read each change


def _version(obj: Mapping[str, Any], source: str) -> str:
    if source == "image":
        containers = entries(dig(obj, "spec", "template", "spec", "containers"))
        image = string(containers[0].get("image")) if containers else ""
        name = image.rpartition("/")[2]
        return name.partition("@")[0].rpartition(":")[2] if ":" in name.partition("@")[0] else ""
    where, _, key = source.partition(":")
    values = mapping(dig(obj, "metadata", "labels" if where == "label" else "annotations"))
    return string(values.get(key))


def _what(ref: WorkloadRef, obj: Mapping[str, Any]) -> str:
    return f"{ref.kind.lower()} {ref.namespace}/{string(dig(obj, 'metadata', 'name'))}"


def _serves(obj: Mapping[str, Any], kind: str) -> bool:
    """Old or new pods answer: a Deployment's Available condition, a DaemonSet's or StatefulSet's ready pods."""
    if kind == "Deployment":
        return any(c.get("type") == "Available" and c.get("status") == "True"
                   for c in entries(dig(obj, "status", "conditions")))
    if kind == "DaemonSet":
        return isinstance(dig(obj, "status", "numberAvailable"), int) and dig(obj, "status", "numberAvailable") > 0
    if kind == "StatefulSet":
        return isinstance(dig(obj, "status", "readyReplicas"), int) and dig(obj, "status", "readyReplicas") > 0
    return False


@dataclass
class Derived:
    versions: dict[str, str] | None  # None: keep what is reported (not every workload rolled out at one version)
    conditions: list[Condition] = field(default_factory=list)


def derive(spec: WorkloadSpec, found: Mapping[WorkloadRef, Sequence[Mapping[str, Any]]]) -> Derived:
    """The ClusterOperator status ``spec``'s workloads give (``found``: each ref's live matches)."""
    missing = [f"{ref}: not found" for ref in spec.workloads if not found.get(ref)]
    failed, rolling, down, versions, bad = [], [], [], set(), []
    for ref in spec.workloads:
        for obj in found.get(ref, ())[:MAX_MATCHES]:
            rollout = compute(obj)
            what = _what(ref, obj)
            if rollout.status is RolloutStatus.FAILED:
                failed.append(f"{what}: {rollout.condition_message or rollout.message}")
            elif not rollout.current:
                rolling.append(f"{what}: {rollout.message}")
            if not rollout.current and not _serves(obj, ref.kind):
                down.append(f"{what}: {rollout.condition_message or rollout.message}")
            version = _version(obj, spec.version_from)
            try:
                semver.parse(version)
                versions.add(version)
            except semver.SemverError:
                bad.append(f"{what}: {spec.version_from} is {version!r}, not a version")
    problems = missing + failed + bad
    available = not missing and not down
    conditions = [
        Condition("Available", "True", "AsExpected", "All workloads serve") if available
        else Condition("Available", "False", "WorkloadsUnavailable", "; ".join(missing + down)),
        Condition("Progressing", "True", "RollingOut", "; ".join(rolling)) if rolling
        else Condition("Progressing", "False", "AsExpected", "All workloads rolled out"),
        Condition("Degraded", "True", "WorkloadsDegraded", "; ".join(problems)) if problems
        else Condition("Degraded", "False", "AsExpected"),
    ]
    if missing or rolling or failed or bad or len(versions) != 1:
        return Derived(None, conditions)
    (version,) = versions
    return Derived({name: version for name, _ in spec.versions} or {"operator": version}, conditions)


class WorkloadReporter:
    """Writes the derived ClusterOperators of ``specs`` now and on every change of their workloads' kinds."""

    def __init__(self, cluster: Cluster, clock: Clock, specs: Sequence[WorkloadSpec],
                 broken: Mapping[str, str] | None = None) -> None:
        self.cluster, self.clock, self.specs = cluster, clock, list(specs)
        self.broken = dict(broken or {})  # operator -> why its annotation is not usable: reported Degraded
        self._informers: list[Informer] = []
        self._last: dict[str, tuple[Any, ...]] = {}
        self._lock = asyncio.Lock()
        self._retries: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        kinds = sorted({(ref.group, ref.kind) for spec in self.specs for ref in spec.workloads})
        backoff = Backoff(1.0, 10.0)
        self._informers = [Informer(self.cluster, group, kind, baseline=False, on_event=self._changed,
                                    on_watch=self._rewatched, backoff=backoff, task_name=f"workloads {kind}")
                           for group, kind in kinds]
        await asyncio.gather(*(i.start() for i in self._informers))
        for name, why in sorted(self.broken.items()):
            log.warning("derived clusteroperator: unusable annotation", operator=name, error=why)
            await report_status(self.cluster, name, self.clock.now(), conditions=[
                Condition("Available", "False", "InvalidWorkloadReference", why),
                Condition("Degraded", "True", "InvalidWorkloadReference", why)])
        await self.report_all()

    async def stop(self) -> None:
        for task in self._retries:
            task.cancel()
        for informer in self._informers:
            await informer.stop()
        self._informers = []

    async def _rewatched(self, first: bool) -> None:
        if not first:
            await self.report_all()

    async def _changed(self, event: WatchEvent) -> None:
        kind = string(event.obj.get("kind"))
        for spec in self.specs:
            if any(ref.kind == kind and ref.matches(event.obj) for ref in spec.workloads):
                await self.report(spec)

    async def report_all(self) -> None:
        for spec in self.specs:
            await self.report(spec)

    async def report(self, spec: WorkloadSpec) -> None:
        async with self._lock:
            found: dict[WorkloadRef, list[dict[str, Any]]] = {}
            for ref in spec.workloads:
                live = await self.cluster.list(ref.group, ref.kind, namespace=ref.namespace)
                found[ref] = sorted((o for o in live if ref.matches(o)),
                                    key=lambda o: string(dig(o, "metadata", "name")))
            derived = derive(spec, found)
            key = (tuple(sorted((derived.versions or {}).items())), tuple(derived.conditions))
            if self._last.get(spec.operator) == key:
                return
            try:
                await report_status(self.cluster, spec.operator, self.clock.now(), versions=derived.versions,
                                    conditions=derived.conditions)
            except ApiError as err:  # written again after a back-off: a status is never lost
                log.info("derived clusteroperator status not written; again in 2s", operator=spec.operator,
                         error=str(err))
                self._retries.add(asyncio.get_running_loop().create_task(self._again(spec)))
                return
            self._last[spec.operator] = key
            log.info("derived clusteroperator status", operator=spec.operator, versions=derived.versions or {},
                     conditions=[f"{c.type}={c.status}" for c in derived.conditions])

    async def _again(self, spec: WorkloadSpec) -> None:
        await asyncio.sleep(2.0)
        await self.report(spec)
