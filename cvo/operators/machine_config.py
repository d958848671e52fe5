"""The simulated machine-config operator's pools and nodes: what ``oc adm upgrade status`` reads of them.

At install it creates the MachineConfigPools of its behaviour (``master``, ``worker``, custom ones), their
Nodes and one rendered MachineConfig per pool, annotated with the release it belongs to.  On an update it
renders new configs (pkg/controller/render: the pool's ``spec.configuration``), and every pool not paused
moves its nodes to them ``maxUnavailable`` at a time (pkg/controller/node/node_controller.go
``getAllCandidateMachines``), each node as the machine-config daemon does it (pkg/daemon/update.go): the
``desiredConfig`` annotation, ``state`` Working, cordon and drain (``desiredDrain``/``lastAppliedDrain``,
pkg/controller/drain/drain_controller.go; a Pod whose PodDisruptionBudget allows no disruption holds the
drain), ``state`` Rebooting, then ``currentConfig`` and ``state`` Done, uncordoned.  A node the behaviour
names in ``fail`` goes ``state`` Degraded instead.  A second after its nodes' steps the pool's status is
written as pkg/controller/node/status.go ``calculateStatus`` does.

:meth:`MachineConfigSimulator.update` returns when the master pool is done: the machine-config
ClusterOperator reports its new version then; the other pools go on in the background.  All waits are
``asyncio.sleep`` on the event loop, so the injected clock (virtual time) drives them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from cvo.clock import Clock, to_rfc3339
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Object, Ref
from cvo.cluster.intercept import pod_evicter
from cvo.log import get_logger
from cvo.objects.machineconfig import GROUP, RELEASE_IMAGE_VERSION
from cvo.objects.machineconfigpool import LabelSelector, scaled_max_unavailable
from cvo.operators.machine_behaviour import MachinesBehaviour, PoolBehaviour
from cvo.operators.machine_config_operator import REQUIRED, RequiredPools
from cvo.operators.retrying import retrying
from cvo.payload.fields import dig, entries, mapping
from cvo.payload.gostrings import go_quote
from cvo.status.node_state import (
    CURRENT_CONFIG,
    DESIRED_CONFIG,
    DESIRED_DRAIN,
    LAST_APPLIED_DRAIN,
    REASON,
    STATE,
    STATE_DEGRADED,
    STATE_DONE,
    STATE_REBOOTING,
    STATE_UNRECONCILABLE,
    STATE_WORKING,
)
from cvo.status.upgrade_nodes import MASTER, WORKER, selector_matches

log = get_logger("cvo.operators.machine_config")
T = TypeVar("T")
API_VERSION = f"{GROUP}/v1"
ROLE_LABEL = "node-role.kubernetes.io/"
POLL = 30.0  # seconds between looks at a pool that cannot go on (paused, a degraded node in the way)
# pkg/controller/drain/drain_controller.go ``DefaultConfig``: a drain attempt gives up after DrainHelperTimeout and
# is tried again DrainRequeueDelay later, DrainRequeueFailingDelay once it has failed for DrainRequeueFailingThreshold;
# past DrainTimeoutDuration the controller says so (an event, the MCCDrainErr metric) and goes on trying
DRAIN_HELPER_TIMEOUT, DRAIN_REQUEUE, DRAIN_REQUEUE_FAILING = 90.0, 60.0, 300.0
DRAIN_FAILING_THRESHOLD, DRAIN_TIMEOUT = 600.0, 3600.0
DAEMON_DRAIN_TIMEOUT = 3600.0  # pkg/daemon/drain.go ``performDrain``: the daemon waits an hour, then goes Degraded
STATUS_DELAY = 1.0  # seconds: a pool's status follows its nodes' steps this late, once for all of them
EVICTION_RETRY = 5.0  # seconds between evictions a PodDisruptionBudget refused (k8s.io/kubectl pkg/drain evictPods)
NODE_CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110"}  # what a created node's kubelet reports


def rendered_name(pool: str, version: str) -> str:
    """``rendered-POOL-HASH``, as pkg/controller/render names the config it generates for a pool."""
    return f"rendered-{pool}-{hashlib.sha256(f'{pool}:{version}'.encode()).hexdigest()[:32]}"


def pool_ref(name: str) -> Ref:
    return Ref(GROUP, "MachineConfigPool", "", name)


def node_ref(name: str) -> Ref:
    return Ref("", "Node", "", name)


def _condition(type_: str, status: bool, now: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": "True" if status else "False", "reason": reason, "message": message,
            "lastTransitionTime": now}


def _merge_conditions(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """New conditions keep the ``lastTransitionTime`` of an old one of the same type and status."""
    before = {c.get("type"): c for c in old}
    out = []
    for cond in new:
        prior = before.get(cond["type"])
        if prior is not None and prior.get("status") == cond["status"] and prior.get("lastTransitionTime"):
            cond = {**cond, "lastTransitionTime": prior["lastTransitionTime"]}
        out.append(cond)
    return out


def _roles(pool: str) -> dict[str, str]:
    """A node's role labels: a custom pool's nodes are workers too, as OpenShift's custom pools are."""
    labels = {f"{ROLE_LABEL}{pool}": ""}
    if pool != MASTER:
        labels[f"{ROLE_LABEL}{WORKER}"] = ""
    return labels


def _selects(selector: Any, labels: Mapping[str, Any]) -> bool:
    """apimachinery ``LabelSelectorAsSelector(...).Matches``; no selector (or a malformed one) matches nothing."""
    if not isinstance(selector, Mapping):
        return False
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not isinstance(expressions, list):
        return False
    if not expressions:  # the common shape, read without building a view
        return all(k in labels and str(labels[k]) == str(v) for k, v in match_labels.items())
    try:
        view = LabelSelector.build({"matchLabels": match_labels, "matchExpressions": expressions})
    except (TypeError, ValueError, AttributeError):
        return False
    return selector_matches(view, {str(k): str(v) for k, v in labels.items()})


class MachineConfigSimulator:
    """The pools and nodes of one cluster, moved between rendered configs."""

    def __init__(self, cluster: Cluster, clock: Clock, behaviour: MachinesBehaviour) -> None:
        self.cluster = cluster
        self.clock = clock
        self.behaviour = behaviour
        self._pools: dict[str, asyncio.Task[None]] = {}  # pool -> its rollout
        self._done: dict[str, asyncio.Event] = {}  # pool -> at its target config
        self._status_pending: set[str] = set()  # pools whose status is written soon
        self._status_tasks: set[asyncio.Task[None]] = set()
        self._refused: dict[str, str] = {}  # pool -> the maxUnavailable it was refused for (logged once)
        self._held: set[tuple[str, str]] = set()  # (node, pod) whose eviction a budget refuses: logged once
        self.required = RequiredPools(cluster, clock)  # the ClusterOperator's Degraded/Upgradeable from the pools

    # --- install ------------------------------------------------------------------------------------

    async def _served(self) -> bool:
        if await self.cluster.serves(API_VERSION, "MachineConfigPool") and await self.cluster.serves(
                API_VERSION, "MachineConfig"):
            return True
        log.warning("machine config pools are not served (the release ships no MachineConfigPool CRD); "
                    "no pools or nodes simulated")
        return False

    async def install(self, version: str) -> None:
        """The pools, their rendered configs and nodes at ``version``; what is already there is kept.

        A pool that selects nodes of the cluster's own (a real cluster's, not named after the pool) takes them
        as they are, annotated as at ``version``; a pool that selects none gets the behaviour's nodes."""
        if not await self._served():
            return
        now = to_rfc3339(self.clock.now())
        for pool in self.behaviour.pools:  # every pool first: which pool a node is in depends on all of them
            config = rendered_name(pool.name, version)
            await self._retrying(f"render {config}", functools.partial(self._render, pool, config, version))
            await self._retrying(f"create pool {pool.name}", functools.partial(self._create_pool, pool, config))
        for pool in self.behaviour.pools:
            config = rendered_name(pool.name, version)
            nodes = await self._retrying(f"nodes of pool {pool.name}", functools.partial(self._pool_nodes, pool.name))
            own = set(pool.node_names())
            found = [str(dig(n, "metadata", "name")) for n in nodes]
            if found and not own & set(found):
                for name in found:
                    await self._retrying(f"adopt node {name}", functools.partial(self._adopt_node, name, config))
            else:
                for name in pool.node_names():
                    await self._retrying(f"create node {name}",
                                         functools.partial(self._create_node, pool, name, config, now))
        for pool in self.behaviour.pools:
            await self._retrying(f"status of pool {pool.name}", functools.partial(self._write_pool_status, pool.name))
            await self._retrying(f"resume pool {pool.name}", functools.partial(self._resume, pool))
        if self.required.release is None:
            self.required.follow(version)

    async def _resume(self, pool: PoolBehaviour) -> None:
        """A pool whose nodes are not all at its ``spec.configuration`` (an operator restarted mid-update) rolls on."""
        if pool.name in self._pools:
            return
        live = await self.cluster.get(pool_ref(pool.name))
        target = str(dig(live, "spec", "configuration", "name") or "")
        nodes = await self._pool_nodes(pool.name)
        if target and any(mapping(dig(n, "metadata", "annotations")).get(CURRENT_CONFIG) != target for n in nodes):
            log.info("machine config pool update resumed", pool=pool.name, config=target)
            self._done[pool.name] = asyncio.Event()
            self._pools[pool.name] = asyncio.create_task(self._roll_pool(pool, target), name=f"mco pool {pool.name}")

    async def _render(self, pool: PoolBehaviour, config: str, version: str) -> None:
        if await self.cluster.get(Ref(GROUP, "MachineConfig", "", config)) is not None:
            return
        await self._create({"apiVersion": API_VERSION, "kind": "MachineConfig", "metadata": {
            "name": config, "annotations": {RELEASE_IMAGE_VERSION: version},
            "labels": {"machineconfiguration.openshift.io/role": pool.name}},
            "spec": {"config": {"ignition": {"version": "3.4.0"}}}})

    async def _create_pool(self, pool: PoolBehaviour, config: str) -> None:
        if await self.cluster.get(pool_ref(pool.name)) is not None:
            return
        await self._create({"apiVersion": API_VERSION, "kind": "MachineConfigPool", "metadata": {
            "name": pool.name, "labels": _pool_labels(pool.name)},
            "spec": {"nodeSelector": {"matchLabels": {f"{ROLE_LABEL}{pool.name}": ""}},
                     "machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": pool.name}},
                     "maxUnavailable": pool.max_unavailable, "paused": pool.paused,
                     "configuration": {"name": config}}})

    async def _create_node(self, pool: PoolBehaviour, name: str, config: str, now: str) -> None:
        node = await self.cluster.get(node_ref(name))
        if node is None:
            node = await self._create({"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                         **_roles(pool.name)},
                "annotations": _at_config(config)}, "spec": {}})
        if not entries(dig(node, "status", "conditions")):  # the kubelet's first report (pkg/kubelet/nodestatus)
            await self.cluster.update_status({**node, "status": {
                "capacity": dict(NODE_CAPACITY), "allocatable": dict(NODE_CAPACITY),
                "addresses": [{"type": "Hostname", "address": name}],
                "conditions": [
                    _condition("Ready", True, now, "KubeletReady", "kubelet is posting ready status"),
                    _condition("MemoryPressure", False, now, "KubeletHasSufficientMemory"),
                    _condition("DiskPressure", False, now, "KubeletHasNoDiskPressure"),
                    _condition("PIDPressure", False, now, "KubeletHasSufficientPID")]}})

    async def _adopt_node(self, name: str, config: str) -> None:
        """A node of the cluster's own, at ``config`` unless the daemon's annotations say otherwise (as the
        machine-config daemon's first boot writes them: pkg/daemon/daemon.go ``CheckStateOnFirstRun``)."""
        def annotate(obj: Object) -> None:
            metadata = obj.setdefault("metadata", {})
            annotations = mapping(metadata.get("annotations"))
            if CURRENT_CONFIG not in annotations:
                metadata["annotations"] = {**annotations, **_at_config(config)}

        node = await self.cluster.get(node_ref(name))
        if node is not None and CURRENT_CONFIG not in mapping(dig(node, "metadata", "annotations")):
            await self._edit(node_ref(name), annotate)
            log.info("node adopted into its pool", node=name, config=config)

    async def _create(self, obj: Object) -> Object:
        try:
            return await self.cluster.create(obj)
        except ApiError as err:
            if err.kind is not ApiErrorKind.ALREADY_EXISTS:
                raise
            return await self.cluster.get(Ref.of(obj)) or obj

    # --- update -------------------------------------------------------------------------------------

    async def update(self, version: str, previous: str | None = None) -> None:
        """Render ``version``'s configs and roll every pool; return when the master pool is done."""
        if not await self._served():
            return
        if previous is not None:
            await self.install(previous)  # a cluster installed before the pools were simulated
        for pool in self.behaviour.pools:
            config = rendered_name(pool.name, version)
            await self._retrying(f"render {config}", functools.partial(self._render, pool, config, version))
            await self._retrying(f"point pool {pool.name} at {config}",
                                 functools.partial(self._edit, pool_ref(pool.name), _spec_configuration(config)))
            old = self._pools.pop(pool.name, None)
            if old is not None:
                old.cancel()
            self._done[pool.name] = asyncio.Event()
            self._pools[pool.name] = asyncio.create_task(self._roll_pool(pool, config), name=f"mco pool {pool.name}")
        self.required.follow(version)
        await self.required.synced.wait()

    async def stop(self) -> None:
        await self.required.stop()
        tasks = list(self._pools.values()) + list(self._status_tasks)
        self._pools.clear()
        self._status_pending.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _pool_nodes(self, pool: str) -> list[Object]:
        """The nodes of ``pool``: a node is in master if master selects it, else in the first custom pool that
        does, else in worker (pkg/helpers/helpers.go ``GetPoolsForNode``: a custom pool's nodes carry
        the worker role too, and leave the worker pool)."""
        pools = {str(dig(p, "metadata", "name")): dig(p, "spec", "nodeSelector")
                 for p in await self.cluster.list(GROUP, "MachineConfigPool")}
        order = [MASTER, *sorted(n for n in pools if n not in (MASTER, WORKER)), WORKER]
        nodes = []
        for node in await self.cluster.list("", "Node"):
            labels = mapping(dig(node, "metadata", "labels"))
            if next((name for name in order if name in pools and _selects(pools[name], labels)), None) == pool:
                nodes.append(node)
        return sorted(nodes, key=lambda n: str(dig(n, "metadata", "name")))

    async def _roll_pool(self, pool: PoolBehaviour, config: str) -> None:
        """pkg/controller/node/node_controller.go ``syncMachineConfigPool``: at most ``maxUnavailable`` nodes
        away from service at once; a paused pool waits."""
        running: dict[str, asyncio.Task[None]] = {}
        try:
            while True:
                await self._retrying(f"status of pool {pool.name}", lambda: self._write_pool_status(pool.name))
                live = await self._retrying(f"read pool {pool.name}", lambda: self.cluster.get(pool_ref(pool.name)))
                nodes = await self._retrying(f"nodes of pool {pool.name}", lambda: self._pool_nodes(pool.name))
                annotations = {str(dig(n, "metadata", "name")): mapping(dig(n, "metadata", "annotations")) for n in nodes}
                if all(a.get(CURRENT_CONFIG) == config and a.get(STATE) == STATE_DONE for a in annotations.values()):
                    break
                for name, a in annotations.items():  # a node the daemon had started (before a restart) goes on
                    if name not in running and _in_progress(a, config):
                        running[name] = asyncio.create_task(self._update_node(pool, name, config), name=f"mco node {name}")
                if not dig(live, "spec", "paused") and (width := self._width(live, len(nodes))) is not None:
                    busy = {n for n, a in annotations.items() if n in running or _away(a, config)}
                    room = width - len(busy)
                    for name, a in annotations.items():
                        if room <= 0:
                            break
                        if name not in busy and a.get(CURRENT_CONFIG) != config:
                            running[name] = asyncio.create_task(self._update_node(pool, name, config),
                                                                name=f"mco node {name}")
                            room -= 1
                if running:
                    done, _ = await asyncio.wait(running.values(), timeout=POLL, return_when=asyncio.FIRST_COMPLETED)
                    for name in [n for n, t in running.items() if t in done]:
                        running.pop(name).result()
                else:
                    await asyncio.sleep(POLL)
        finally:
            for task in running.values():
                task.cancel()
        log.info("machine config pool updated", pool=pool.name, config=config)
        self._done[pool.name].set()

    def _width(self, live: Object | None, machines: int) -> int | None:
        """The pool's ``maxUnavailable`` scaled to its machines; ``None`` when it is not one: the node controller's
        ``syncMachineConfigPool`` then writes the pool's status only and returns the error (logged here once per
        value), the pool's nodes left as they are."""
        value = dig(live, "spec", "maxUnavailable")
        try:
            return scaled_max_unavailable(value, machines)
        except ValueError as err:
            name = str(dig(live, "metadata", "name"))
            if self._refused.get(name) != repr(value):
                self._refused[name] = repr(value)
                log.warning("machine config pool not updated: its maxUnavailable is not a number or a percentage",
                            pool=name, error=str(err))
            return None

    async def _update_node(self, pool: PoolBehaviour, name: str, config: str) -> None:
        """One node through the machine-config daemon's update (pkg/daemon/update.go)."""
        ref = node_ref(name)
        b = self.behaviour
        await self._step(ref, pool, {DESIRED_CONFIG: config})  # the node controller picks it
        await self._step(ref, pool, {STATE: STATE_WORKING, REASON: "", DESIRED_DRAIN: f"drain-{config}"}, cordon=True)
        daemon = asyncio.create_task(self._drain_deadline(ref, pool, name), name=f"mcd drain {name}")
        try:
            await self._drain(name)
            await asyncio.sleep(b.drain)
            await self._step(ref, pool, {LAST_APPLIED_DRAIN: f"drain-{config}"})
        finally:
            daemon.cancel()
        await self._step(ref, pool, {STATE: STATE_REBOOTING}, ready=False)
        await asyncio.sleep(b.reboot)
        if name in b.fail:
            await self._step(ref, pool, {STATE: STATE_DEGRADED, REASON: (
                f'failed to update node {name} to {config}: unexpected on-disk state (simulated)')}, ready=True)
            log.info("node degraded", node=name, config=config)
            return
        await self._step(ref, pool, {CURRENT_CONFIG: config, STATE: STATE_DONE, REASON: "",
                                     DESIRED_DRAIN: f"uncordon-{config}",
                                     LAST_APPLIED_DRAIN: f"uncordon-{config}"}, cordon=False, ready=True)

    async def _drain(self, name: str) -> None:
        """The drain controller's attempts (drain_controller.go ``drainNode``) until one evicts every Pod: each
        retries a refused eviction every 5 s for 90 s, then the node is queued again a minute later (five
        minutes once it has failed for ten); past an hour it is said once, and tried on."""
        started = self.clock.monotonic()
        said = False
        while True:
            attempt = self.clock.monotonic()
            while not await self._retrying(f"drain {name}", lambda: self._evict(name)):
                if self.clock.monotonic() - attempt >= DRAIN_HELPER_TIMEOUT:
                    break
                await asyncio.sleep(EVICTION_RETRY)
            else:
                return
            duration = attempt - started
            if duration > DRAIN_TIMEOUT and not said:
                said = True
                log.warning("drain failed", node=name, event="DrainFailed",
                            message=f"node {name}: drain exceeded timeout: 1h0m0s. Will continue to retry.")
            await asyncio.sleep(DRAIN_REQUEUE_FAILING if duration > DRAIN_FAILING_THRESHOLD else DRAIN_REQUEUE)

    async def _drain_deadline(self, ref: Ref, pool: PoolBehaviour, name: str) -> None:
        """pkg/daemon/drain.go ``performDrain``: a drain not done within an hour fails the daemon's update, which
        marks the node Degraded (daemon.go ``updateErrorState``); it waits again, and carries on once drained."""
        await asyncio.sleep(DAEMON_DRAIN_TIMEOUT)
        log.info("node degraded: its drain did not finish within an hour", node=name)
        await self._step(ref, pool, {STATE: STATE_DEGRADED, REASON: (
            f"failed to drain node: {name} after 1 hour. Please see machine-config-controller logs for more "
            "information")})

    async def _step(self, ref: Ref, pool: PoolBehaviour, annotations: dict[str, str], cordon: bool | None = None,
                    ready: bool | None = None) -> None:
        def change(obj: Object) -> None:
            metadata = obj.setdefault("metadata", {})
            metadata["annotations"] = {**mapping(metadata.get("annotations")), **annotations}
            if cordon is not None:
                spec = obj.setdefault("spec", {})
                if cordon:
                    spec["unschedulable"] = True
                else:
                    spec.pop("unschedulable", None)

        await self._retrying(f"update node {ref.name}", lambda: self._edit(ref, change))
        if ready is not None:
            await self._retrying(f"status of node {ref.name}", lambda: self._edit(ref, _ready(ready, self._now()),
                                                                                   status=True))
        self._status_soon(pool.name)

    def _status_soon(self, pool: str) -> None:
        """The pool's status a second from now, once for all the steps of its nodes until then (as the
        controller's work queue coalesces the node events of one pool)."""
        if pool in self._status_pending:
            return
        self._status_pending.add(pool)

        async def write() -> None:
            await asyncio.sleep(STATUS_DELAY)
            self._status_pending.discard(pool)
            await self._retrying(f"status of pool {pool}", lambda: self._write_pool_status(pool))

        self._status_tasks.add(task := asyncio.create_task(write(), name=f"mco status {pool}"))
        task.add_done_callback(self._status_tasks.discard)

    def _now(self) -> str:
        return to_rfc3339(self.clock.now())

    # --- drain --------------------------------------------------------------------------------------

    def _held_by(self, node: str, pod: Object, budget: str = "") -> None:
        """Log a drain a PodDisruptionBudget holds once (the drain is tried again every minute, as kubectl's)."""
        key = (node, f"{dig(pod, 'metadata', 'namespace')}/{dig(pod, 'metadata', 'name')}")
        if key not in self._held:
            self._held.add(key)
            log.info("drain held by a PodDisruptionBudget", node=node, pod=dig(pod, "metadata", "name"),
                     namespace=dig(pod, "metadata", "namespace"), **({"budget": budget} if budget else {}))

    async def _evict(self, node: str) -> bool:
        """Evict the node's Pods (k8s.io/kubectl pkg/drain ``evictPods``); ``False`` while a
        PodDisruptionBudget refuses one (the eviction API's 429: ``status.disruptionsAllowed`` is 0).

        Through the cluster's Eviction API where it has one (a real API server, whose disruption controller
        keeps the budgets' status); else the budgets are read and counted here and the Pod deleted."""
        pods = sorted((p for p in await self.cluster.list("", "Pod") if _drained(p, node)),
                      key=lambda p: (str(dig(p, "metadata", "namespace")), str(dig(p, "metadata", "name"))))
        evicter = pod_evicter(self.cluster)
        if evicter is not None:
            for pod in pods:
                if not await evicter.evict(Ref.of(pod)):
                    self._held_by(node, pod)
                    return False
            return True
        for pod in pods:
            namespace = str(dig(pod, "metadata", "namespace"))
            labels = mapping(dig(pod, "metadata", "labels"))
            budgets = [b for b in await self.cluster.list("policy", "PodDisruptionBudget", namespace)
                       if _selects(dig(b, "spec", "selector"), labels)]
            for budget in budgets:
                if await self._disruptions_allowed(budget) <= 0:
                    self._held_by(node, pod, str(dig(budget, "metadata", "name")))
                    return False
            for budget in budgets:  # the eviction API counts the disruption in the budget's status
                allowed = dig(budget, "status", "disruptionsAllowed")
                if isinstance(allowed, int) and not isinstance(allowed, bool):
                    await self.cluster.update_status({**budget, "status": {**mapping(budget.get("status")),
                                                                           "disruptionsAllowed": allowed - 1}})
            await self.cluster.delete(Ref.of(pod))
        return True

    async def _disruptions_allowed(self, budget: Object) -> int:
        """``status.disruptionsAllowed`` as written (no disruption controller runs here), else from the spec
        and the Pods it selects (pkg/controller/disruption ``getExpectedPodCount`` for integer values)."""
        allowed = dig(budget, "status", "disruptionsAllowed")
        if isinstance(allowed, int) and not isinstance(allowed, bool):
            return allowed
        namespace = str(dig(budget, "metadata", "namespace"))
        selector = dig(budget, "spec", "selector")
        healthy = sum(1 for p in await self.cluster.list("", "Pod", namespace)
                      if _selects(selector, mapping(dig(p, "metadata", "labels"))))
        spec = mapping(budget.get("spec"))
        if isinstance(spec.get("maxUnavailable"), int):
            return int(spec["maxUnavailable"])
        if isinstance(spec.get("minAvailable"), int):
            return healthy - int(spec["minAvailable"])
        return 0

    # --- status -------------------------------------------------------------------------------------

    async def _write_pool_status(self, pool: str) -> None:
        """pkg/controller/node/status.go ``calculateStatus``: the counts and Updated, Updating, Degraded,
        NodeDegraded and RenderDegraded; ``status.configuration`` moves once every node is at the target."""
        live = await self.cluster.get(pool_ref(pool))
        if live is None:
            return
        target = str(dig(live, "spec", "configuration", "name") or "")
        nodes = await self._pool_nodes(pool)
        updated = ready = unavailable = degraded = 0
        for node in nodes:
            a = mapping(dig(node, "metadata", "annotations"))
            is_updated = a.get(CURRENT_CONFIG) == a.get(DESIRED_CONFIG) == target and a.get(STATE) == STATE_DONE
            is_ready = _is_ready(node) and not dig(node, "spec", "unschedulable")
            updated += is_updated
            ready += is_updated and is_ready
            degraded += a.get(STATE) in (STATE_DEGRADED, STATE_UNRECONCILABLE)
            unavailable += not is_ready or a.get(CURRENT_CONFIG) != a.get(DESIRED_CONFIG)
        now = self._now()
        all_updated = updated == len(nodes)
        paused = bool(dig(live, "spec", "paused"))
        old = mapping(live.get("status"))
        configuration = {"name": target} if all_updated else mapping(old.get("configuration")) or {"name": target}
        node_degraded = degraded > 0
        degraded_why = _node_degraded(nodes)
        conditions = [
            _condition("Updated", all_updated and not node_degraded, now, "",
                       f"All nodes are updated with MachineConfig {target}" if all_updated else ""),
            _condition("Updating", not all_updated and not paused and not node_degraded, now, "",
                       f"All nodes are updating to MachineConfig {target}" if not all_updated and not paused else ""),
            _condition("RenderDegraded", False, now),
            _condition("NodeDegraded", node_degraded, now, *degraded_why),
            _condition("Degraded", node_degraded, now, "", degraded_why[1]),
        ]
        status = {"observedGeneration": dig(live, "metadata", "generation") or 1, "configuration": configuration,
                  "machineCount": len(nodes), "updatedMachineCount": updated, "readyMachineCount": ready,
                  "unavailableMachineCount": unavailable, "degradedMachineCount": degraded,
                  "conditions": _merge_conditions(entries(old.get("conditions")), conditions)}
        if status != old:
            await self.cluster.update_status({**live, "status": status})
            self.required.poke()

    # --- API errors ---------------------------------------------------------------------------------

    async def _edit(self, ref: Ref, change: Callable[[Object], None], status: bool = False) -> None:
        live = await self.cluster.get(ref)
        if live is None:
            return
        change(live)
        await (self.cluster.update_status(live) if status else self.cluster.update(live))

    async def _retrying(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        return await retrying(what, call, "machine-config request failed; retrying")


def _drained(pod: Object, node: str) -> bool:
    """A Pod a drain of ``node`` evicts: bound there, not already going, not a DaemonSet's (kubectl pkg/drain
    filters.go ``daemonSetFilter`` with ``IgnoreAllDaemonSets``, as the machine-config daemon drains)."""
    if dig(pod, "spec", "nodeName") != node or dig(pod, "metadata", "deletionTimestamp"):
        return False
    return not any(o.get("kind") == "DaemonSet" for o in entries(dig(pod, "metadata", "ownerReferences")))


def _at_config(config: str) -> dict[str, str]:
    """The machine-config daemon's annotations of a node that is at ``config`` and done."""
    return {CURRENT_CONFIG: config, DESIRED_CONFIG: config, STATE: STATE_DONE, REASON: "",
            DESIRED_DRAIN: f"uncordon-{config}", LAST_APPLIED_DRAIN: f"uncordon-{config}"}


def _away(annotations: Mapping[str, Any], config: str) -> bool:
    """Told to move to ``config`` and not there yet (updating, or degraded on the way)."""
    return annotations.get(DESIRED_CONFIG) == config and annotations.get(CURRENT_CONFIG) != config


def _in_progress(annotations: Mapping[str, Any], config: str) -> bool:
    """On the way to ``config`` and not degraded: a daemon that restarts carries on."""
    return _away(annotations, config) and annotations.get(STATE) not in (STATE_DEGRADED, STATE_UNRECONCILABLE)


def _spec_configuration(config: str) -> Callable[[Object], None]:
    def change(obj: Object) -> None:
        obj.setdefault("spec", {})["configuration"] = {"name": config}
    return change


def _ready(ready: bool, now: str) -> Callable[[Object], None]:
    """The node's Ready condition: False while it reboots (the kubelet is down)."""
    def change(obj: Object) -> None:
        conditions = [c for c in entries(dig(obj, "status", "conditions")) if c.get("type") != "Ready"]
        cond = (_condition("Ready", True, now, "KubeletReady", "kubelet is posting ready status") if ready
                else _condition("Ready", False, now, "KubeletNotReady", "node is rebooting (simulated)"))
        obj["status"] = {**mapping(obj.get("status")), "conditions": [cond, *conditions]}
    return change


def _is_ready(node: Object) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in entries(dig(node, "status", "conditions")))


def _node_degraded(nodes: list[Object]) -> tuple[str, str]:
    """The NodeDegraded reason and message (pkg/controller/node/status.go ``calculateStatus``): how many nodes,
    and each one's ``reason`` annotation that is not empty, joined; the pool's Degraded message is the same."""
    found = [n for n in nodes
             if mapping(dig(n, "metadata", "annotations")).get(STATE) in (STATE_DEGRADED, STATE_UNRECONCILABLE)]
    if not found:
        return "", ""
    reasons = []
    for node in found:
        reason = mapping(dig(node, "metadata", "annotations")).get(REASON)
        if isinstance(reason, str) and reason:
            reasons.append(f'Node {dig(node, "metadata", "name")} is reporting: {go_quote(reason)}')
    return f"{len(found)} nodes are reporting degraded status on sync", ", ".join(reasons)


def _pool_labels(pool: str) -> dict[str, str]:
    """As the operator's manifests/*.machineconfigpool.yaml label its pools: the master pool is required for an
    update (pkg/operator/sync.go ``requiredForUpgradeMachineConfigPoolLabelKey``)."""
    labels = {f"pools.operator.machineconfiguration.openshift.io/{pool}": ""}
    if pool == MASTER:
        labels[REQUIRED] = ""
    return labels
