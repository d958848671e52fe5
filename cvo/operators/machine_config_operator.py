"""The machine-config operator's own ClusterOperator status as its pools make it (openshift/machine-config-operator
pkg/operator/sync.go ``syncRequiredMachineConfigPools``, pkg/operator/status.go ``syncDegradedStatus``,
``syncUpgradeableStatus``, ``machineConfigPoolStatus``, ``isMachineConfigPoolConfigurationValid``).

Each sync (the operator's ``syncAll``, queued again at once after a failure and, after a success, by a change of
a pool) polls the pools every second until the required ones (labelled
``operator.machineconfiguration.openshift.io/required-for-upgrade``: master) are Updated at the release and no
pool is Degraded, for at most 10 minutes per required node::

    poll ── required pools done, no pool Degraded ──> synced (the version is reported; Degraded cleared)
     │  └─ a pool Degraded ──> Upgradeable=False DegradedPool at once, poll on
     └─ time out ──> Degraded=True RequiredPoolsFailed "Unable to apply V: during syncRequiredMachineConfigPools:
                     [context deadline exceeded, <the last reason>]", sync again

A degraded worker pool counts as much as the master one: it holds the version while the control plane updates,
and after that makes the ClusterOperator Degraded ("Failed to resync V because: ...") as the real one does.
Of the configuration checks only those on the names and the rendered config's release are made (the
controller version, the ``source`` list and the OS image are not simulated).  Where no pool is required (a
behaviour without a master pool; every real cluster has one) or the required pools have no node, the poll
looks once instead of timing out at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

from cvo.clock import Clock
from cvo.cluster.api import ApiError, Cluster, Object, Ref, co_ref
from cvo.log import get_logger
from cvo.objects.machineconfig import GROUP, RELEASE_IMAGE_VERSION
from cvo.operators.library.clusteroperator import Condition, report_status
from cvo.operators.retrying import retrying
from cvo.payload.fields import dig, entries, mapping
from cvo.payload.gostrings import go_quote

log = get_logger("cvo.operators.machine_config")
NAME = "machine-config"
REQUIRED = "operator.machineconfiguration.openshift.io/required-for-upgrade"  # sync.go
POLL = 1.0  # seconds: syncRequiredMachineConfigPools' wait.PollUntilContextTimeout interval
PER_NODE = 600.0  # seconds of the poll's timeout per required node ("a 10 minute timeout per required node")
RESYNC = 600.0  # seconds between syncs with no pool change seen (changes made by others)
TASK = "RequiredPools"  # operator.go's syncFuncs name; the Degraded reason is taskFailed(TASK)


def _condition(pool: Mapping[str, Any], type_: str) -> Mapping[str, Any]:
    """sync.go ``isPoolStatusConditionTrue`` / ``getPoolStatusConditionMessage``: the first of the type."""
    return next((c for c in entries(dig(pool, "status", "conditions")) if c.get("type") == type_), {})


def _true(pool: Mapping[str, Any], type_: str) -> bool:
    return _condition(pool, type_).get("status") == "True"


def _count(pool: Mapping[str, Any], field: str) -> int:
    value = dig(pool, "status", field)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _name(obj: Mapping[str, Any], *path: str) -> str:
    value = dig(obj, *path)
    return value if isinstance(value, str) else ""


def pool_status_text(pool: Mapping[str, Any]) -> str:
    """status.go ``machineConfigPoolStatus``."""
    if _true(pool, "RenderDegraded"):
        c = _condition(pool, "RenderDegraded")
        return (f"pool is degraded because rendering fails with {go_quote(str(c.get('reason', '')))}: "
                f"{go_quote(str(c.get('message', '')))}")
    if _true(pool, "NodeDegraded"):
        c = _condition(pool, "NodeDegraded")
        return (f"pool is degraded because nodes fail with {go_quote(str(c.get('reason', '')))}: "
                f"{go_quote(str(c.get('message', '')))}")
    if _true(pool, "Updated"):
        return f"all {_count(pool, 'machineCount')} nodes are at latest configuration " \
               f"{_name(pool, 'status', 'configuration', 'name')}"
    if _true(pool, "Updating"):
        return (f"{_count(pool, 'updatedMachineCount')} (ready {_count(pool, 'readyMachineCount')}) out of "
                f"{_count(pool, 'machineCount')} nodes are updating to latest configuration "
                f"{_name(pool, 'spec', 'configuration', 'name')}")
    return "<unknown>"


def configuration_error(pool: Mapping[str, Any], release: str, configs: Mapping[str, Object | None]) -> str | None:
    """status.go ``isMachineConfigPoolConfigurationValid``, its checks on names and the release: ``None`` when the
    pool's current configuration is a rendered config of ``release``."""
    name = _name(pool, "metadata", "name")
    if not _name(pool, "spec", "configuration", "name"):
        return f"configuration spec for pool {name} is empty: {pool_status_text(pool)}"
    current = _name(pool, "status", "configuration", "name")
    if not current:
        return f"configuration status for pool {name} is empty: {pool_status_text(pool)}"
    rendered = configs.get(current)
    if rendered is None:
        return f'machineconfig.machineconfiguration.openshift.io "{current}" not found'
    annotations = mapping(dig(rendered, "metadata", "annotations"))
    if RELEASE_IMAGE_VERSION not in annotations:
        return f"unable to access annotation {RELEASE_IMAGE_VERSION} for {current} expected: {release}"
    if annotations[RELEASE_IMAGE_VERSION] != release:
        return (f"release image version mismatch for {name} in {current} expected: {release} got: "
                f"{annotations[RELEASE_IMAGE_VERSION]}")
    return None


class Fatal(Exception):
    """A sync error that ends the poll at once (a required pool paused)."""


def required_pools_error(pools: list[Object], release: str, configs: Mapping[str, Object | None]) -> str | None:
    """One look of ``syncRequiredMachineConfigPools``' poll: ``None`` when done, else its ``lastErr``; raises
    :class:`Fatal` for the errors that end the poll."""
    for pool in pools:
        name = _name(pool, "metadata", "name")
        if _true(pool, "Degraded"):
            return (f"MachineConfigPool {name} is not ready, retrying. Status: (pool degraded: true total: "
                    f"{_count(pool, 'machineCount')}, ready {_count(pool, 'readyMachineCount')}, updated: "
                    f"{_count(pool, 'updatedMachineCount')}, unavailable: {_count(pool, 'unavailableMachineCount')}, "
                    f"reason: {_condition(pool, 'Degraded').get('message', '')})")
        if REQUIRED not in mapping(dig(pool, "metadata", "labels")):
            continue
        invalid = configuration_error(pool, release, configs)
        if invalid is not None:
            return f"MachineConfigPool {name} has not progressed to latest configuration: {invalid}, retrying"
        generation, observed = dig(pool, "metadata", "generation"), dig(pool, "status", "observedGeneration")
        current = not isinstance(generation, int) or (isinstance(observed, int) and generation <= observed)
        if current and _true(pool, "Updated"):
            continue
        if dig(pool, "spec", "paused") is True:
            if _true(pool, "Updated"):
                raise Fatal(f"the required MachineConfigPool {name} was paused with no pending updates; no further "
                            "syncing will occur until it is unpaused")
            raise Fatal(f"required MachineConfigPool {name} is paused and cannot sync until it is unpaused")
        return (f"required MachineConfigPool {name} is not ready, retrying. Status: (total: "
                f"{_count(pool, 'machineCount')}, ready {_count(pool, 'readyMachineCount')}, updated: "
                f"{_count(pool, 'updatedMachineCount')}, unavailable: {_count(pool, 'unavailableMachineCount')}, "
                f"degraded: {_count(pool, 'degradedMachineCount')})")
    return None


def upgradeable(pools: list[Object]) -> Condition:
    """status.go ``syncUpgradeableStatus`` (no boot image skew, no layered builds simulated)."""
    if any(_true(p, "Degraded") for p in pools):
        return Condition("Upgradeable", "False", "DegradedPool",
                         "One or more machine config pools are degraded, please see `oc get mcp` for further details "
                         "and resolve before upgrading")
    return Condition("Upgradeable", "True", "AsExpected")


class RequiredPools:
    """The operator's sync loop over its pools, for one release at a time."""

    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock
        self.release: str | None = None
        self.synced = asyncio.Event()  # the last sync of ``release`` succeeded
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._wrote: dict[str, Condition] = {}  # condition type -> what this loop last wrote

    def follow(self, release: str) -> None:
        """Sync ``release`` from now on (a new sync starts at once)."""
        if release == self.release and self._task is not None:
            return
        self.release = release
        self.synced.clear()
        if self._task is not None:
            self._task.cancel()
        self._task = asyncio.create_task(self._run(release), name=f"mco sync {release}")

    def poke(self) -> None:
        """A pool changed: an idle operator syncs again (its informer's event)."""
        self._changed.set()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _run(self, release: str) -> None:
        failed = False
        while True:
            self._changed.clear()
            try:
                error = await self._sync(release, failed)
            except ApiError as err:  # a sync that could not read: queued again, as a failed one
                log.info("machine-config sync could not read its pools; again", error=str(err))
                await asyncio.sleep(POLL)
                continue
            failed = error is not None
            if error is None:
                self.synced.set()
                await self._clear(release)
                waiter = asyncio.ensure_future(self._changed.wait())  # not wait_for: 3.11's may swallow a cancel
                try:
                    await asyncio.wait({waiter}, timeout=RESYNC)
                finally:
                    waiter.cancel()
            else:
                self.synced.clear()
                await self._degraded(release, error)

    async def _look(self, release: str) -> tuple[list[Object], str | None]:
        pools = await self.cluster.list(GROUP, "MachineConfigPool")
        names = {_name(p, "status", "configuration", "name") for p in pools} - {""}
        configs = {n: await self.cluster.get(Ref(GROUP, "MachineConfig", "", n)) for n in sorted(names)}
        return pools, required_pools_error(pools, release, configs)

    async def _sync(self, release: str, after_failure: bool) -> str | None:
        """One ``syncRequiredMachineConfigPools``: ``None`` on success, else the error it returns."""
        pools = await self.cluster.list(GROUP, "MachineConfigPool")
        required = [p for p in pools if REQUIRED in mapping(dig(p, "metadata", "labels"))]
        timeout = PER_NODE * sum(_count(p, "machineCount") for p in required)
        start = self.clock.monotonic()
        last: str | None = None
        while True:
            await asyncio.sleep(POLL)
            if last is not None and self.clock.monotonic() - start >= timeout:
                return f"during syncRequiredMachineConfigPools: [context deadline exceeded, {last}]"
            if last is not None and after_failure:  # this sync's syncProgressingStatus, written with the extension
                after_failure = False
                await self._progressing(release)
            try:
                pools, last = await self._look(release)
            except Fatal as err:
                return str(err)
            if last is None:
                return None
            await self._write([upgradeable(pools)])

    async def _versions_equal(self, release: str) -> tuple[bool, bool]:
        """(the ClusterOperator reports ``release``, it is Progressing)."""
        live = await self.cluster.get(co_ref(NAME))
        versions = {v.get("name"): v.get("version") for v in entries(dig(live, "status", "versions"))}
        progressing = any(c.get("type") == "Progressing" and c.get("status") == "True"
                          for c in entries(dig(live, "status", "conditions")))
        return versions.get("operator") == release, progressing

    async def _progressing(self, release: str) -> None:
        """status.go ``syncProgressingStatus``."""
        equal, _ = await self._versions_equal(release)
        await self._write([Condition("Progressing", "False", "", f"Cluster version is {release}") if equal
                           else Condition("Progressing", "True", "", f"Working towards {release}")])

    async def _degraded(self, release: str, error: str) -> None:
        """status.go ``syncDegradedStatus`` with the RequiredPools task's error."""
        equal, progressing = await self._versions_equal(release)
        message = (f"Failed to resync {release} because: {error}" if equal else f"Unable to apply {release}: {error}")
        log.warning("machine-config operator degraded", reason=f"{TASK}Failed", message=message)
        await self._write([
            Condition("Progressing", "True", "", f"Unable to apply {release}") if progressing
            else Condition("Progressing", "False", "", f"Error while reconciling {release}"),
            Condition("Degraded", "True", f"{TASK}Failed", message)], force=True)

    async def _clear(self, release: str) -> None:
        """status.go ``clearDegradedStatus``: only what this loop set."""
        out = []
        if self._status("Degraded") == "True":
            out.append(Condition("Degraded", "False"))
            equal, _ = await self._versions_equal(release)
            if equal:
                out.append(Condition("Progressing", "False", "", f"Cluster version is {release}"))
        if self._status("Upgradeable") == "False":
            out.append(Condition("Upgradeable", "True", "AsExpected"))
        await self._write(out)

    def _status(self, type_: str) -> str:
        wrote = self._wrote.get(type_)
        return wrote.status if wrote is not None else ""

    async def _write(self, conditions: list[Condition], force: bool = False) -> None:
        """Report the conditions that changed since this loop last wrote them (others' Upgradeable windows are
        left alone: ``Upgradeable=True`` is written only over this loop's own ``False``)."""
        wanted = [c for c in conditions if force or self._wrote.get(c.type) != c]
        wanted = [c for c in wanted if not (c.type == "Upgradeable" and c.status == "True"
                                            and self._status("Upgradeable") != "False")]
        if not wanted:
            return
        for c in wanted:
            self._wrote[c.type] = c
        await retrying("report clusteroperator machine-config",
                       lambda: report_status(self.cluster, NAME, self.clock.now(), conditions=wanted),
                       "machine-config request failed; retrying", log)
