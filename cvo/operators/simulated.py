"""Simulated operators: stand-ins for the operators of a payload, driven by what the sweep applies.

Each ClusterOperator of a registered release is driven by the Deployments of its component (by
file name, as openshift/enhancements dev-guide/cluster-version-operator/dev/clusteroperator.md describes).  When those Deployments are in the cluster at a release's
version (``RELEASE_VERSION`` in a container's env, or the release's images), the operator *rolls
out* that version: it reports Progressing, and after its behaviour's delay the release's
``status.versions`` with ``Available=True`` and ``Degraded=False`` — or misbehaves as configured.
An operator whose component has no Deployment rolls out when the sweep first reads its
ClusterOperator.  An operator whose Deployment sorts after its ClusterOperator never starts before
the sweep waits on it: the trap that same clusteroperator.md warns of.

All timing runs on the event loop's clock, so virtual time makes hours pass in milliseconds.
Status is written with :mod:`cvo.operators.library.clusteroperator`, the library real operators use.

Like real operators, the simulated ones outlive API errors: a report that fails is written again
after a back-off (1 s doubling to 10 s) until it lands, so a rollout never stops half-way with its
``target`` set; a watch that fails is opened again and every operator looks at the cluster again
(events may have been missed); a decision that could not read the cluster is made again later.
Transient errors are best retried below, by the cluster the simulator is given (``cvo
sim-operators`` gives it a :class:`~cvo.cluster.persist.PersistentCluster`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cvo.clock import Clock
from cvo.cluster.api import (
    CLUSTER_OPERATOR,
    ApiError,
    ApiErrorKind,
    Cluster,
    Object,
    Ref,
    WatchEvent,
    co_ref,
    cv_ref,
)
from cvo.cluster.informer import Backoff, Informer
from cvo.cluster.intercept import read_hooks
from cvo.gates.olm import ENV_NAME
from cvo.log import get_logger
from cvo.objects.rollout import compute
from cvo.operators.behaviour import Behaviour, Behaviours
from cvo.operators.library.clusteroperator import Condition, report_status
from cvo.operators.library.conditions import OperatorConditions
from cvo.operators.machine_config import MachineConfigSimulator
from cvo.operators.retrying import RETRY_CAP, RETRY_INITIAL, retrying
from cvo.operators.rollouts import Progress, progress
from cvo.payload.fields import dig, entries, mapping
from cvo.payload.graph import operator_versions
from cvo.payload.loader import Release
from cvo.payload.manifest import Manifest
from cvo.payload.operators import is_cluster_operator, operator_deployments
from cvo.payload.workloads import STATUS_FROM, WorkloadSpec, specs_of

log = get_logger("cvo.cluster.embedded")
T = TypeVar("T")
MACHINE_CONFIG = "machine-config"  # the operator whose behaviour may ask for pools and nodes
ROLLOUT_RECHECK = 5.0  # seconds between looks at a rollout when no Deployment event came (a watch may miss one)


@dataclass
class OperatorModel:
    """What the registered releases say about one operator."""

    name: str
    versions: dict[str, dict[str, str]] = field(default_factory=dict)  # release -> declared status.versions
    deployments: dict[str, dict[Ref, tuple[str, ...]]] = field(default_factory=dict)  # release -> ref -> images
    target: str | None = None  # the release it rolls out (or rolled out)
    task: asyncio.Task[None] | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # one of its Deployments changed


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """A Deployment's containers; fields of the wrong type count as absent (cvo lint: malformed-object)."""
    return entries(dig(obj, "spec", "template", "spec", "containers"))


def _images(obj: dict[str, Any]) -> tuple[str, ...]:
    return tuple(c.get("image", "") if isinstance(c.get("image", ""), str) else "" for c in _containers(obj))


def _env(obj: dict[str, Any], name: str) -> str | None:
    for container in _containers(obj):
        for env in entries(container.get("env")):
            if env.get("name") == name and isinstance(env.get("value"), str):
                return str(env["value"])
    return None


def _release_version_env(obj: dict[str, Any]) -> str | None:
    return _env(obj, "RELEASE_VERSION")


class OperatorSimulator:
    def __init__(self, cluster: Cluster, clock: Clock, behaviours: Behaviours | None = None,
                 rollouts: bool = False) -> None:
        self.cluster = cluster
        # the cluster's controllers act (cvo.operators.rollouts.controllers_act): versions wait on real rollouts
        self.rollouts = rollouts
        self.clock = clock
        self.behaviours = behaviours or Behaviours()
        self.operators: dict[str, OperatorModel] = {}
        self.releases: list[str] = []  # registration order, newest last
        self._by_deployment: dict[Ref, set[str]] = defaultdict(set)
        self._tasks: list[asyncio.Task[None]] = []
        self._informers: list[Informer] = []  # the Deployments and ClusterOperators, while running
        self._origin: float | None = None
        self._lock = asyncio.Lock()
        # Namespaces the payload uses but never creates: in a real cluster operators create them
        # for their operands, so the simulated operators do too, when they start.
        self.operand_namespaces: set[str] = set()
        self._reading: set[str] = set()  # operators whose "first read" decision is in progress
        self._namespaces_done: set[str] = set()  # operand namespaces already ensured
        self.machines: MachineConfigSimulator | None = None  # pools and nodes, if machine-config's behaviour asks
        self._windows: set[str] = set()  # operators whose Upgradeable window runs
        self._remove_read_hook: Any = None
        self._again: set[str] = set()  # operators with a decision scheduled again after an API error
        # ClusterOperators derived from workloads: on a cluster without controllers, their Deployments are rolled
        # out here (status written after the operator's behaviour delay), as a deployment controller would
        self._derived: list[WorkloadSpec] = []
        self._rolling: dict[Ref, asyncio.Task[None]] = {}

    # --- releases ------------------------------------------------------------------------------

    def register_release(self, release: Release) -> None:
        """Learn a release's operators, their declared versions and the Deployments that drive them."""
        cluster_operators: dict[str, Manifest] = {}
        for m in release.manifests:
            if is_cluster_operator(m):
                cluster_operators.setdefault(m.name, m)
        derived, _ = specs_of(release.manifests)
        self._derived = [d for d in self._derived if d.operator not in {s.operator for s in derived}] + derived
        for name, deployments in operator_deployments(release.manifests).items():
            co = cluster_operators[name]
            if STATUS_FROM in co.annotations:
                continue  # its status comes from its workloads (cvo.operators.workloads), not from an operator
            model = self.operators.setdefault(name, OperatorModel(name))
            model.versions[release.version] = dict(operator_versions(co))
            refs = {Ref(d.group, d.kind, d.namespace, d.name): _images(d.copy_obj()) for d in deployments}
            model.deployments[release.version] = refs
            for ref in refs:
                self._by_deployment[ref].add(name)
        if release.version in self.releases:
            self.releases.remove(release.version)
        self.releases.append(release.version)
        created = {m.name for m in release.manifests if m.kind == "Namespace" and m.group == ""}
        self.operand_namespaces |= {m.namespace for m in release.manifests if m.namespace} - created
        if self._origin is not None:  # already running: the new operators start as the others did
            self._tasks.append(asyncio.get_running_loop().create_task(self._catch_up(), name="sim new release"))

    async def prefer(self, version: str) -> None:
        """The ClusterVersion moved to ``version``: it becomes the newest release, and every operator
        looks again.  (An operator whose Deployments are the same in two releases runs the newest
        one that matches, so the order decides.)"""
        if version not in self.releases or self.releases[-1] == version:
            return
        self.releases.remove(version)
        self.releases.append(version)
        for model in list(self.operators.values()):
            await self._reconsider_or_later(model)

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Watch the cluster, and catch up with what is already there (operators restarting)."""
        self._origin = self.clock.monotonic()
        await self._create_operand_namespaces()
        # Followed for good: a watch (or a decision) that fails with an API error is opened again after a
        # back-off (1 s doubling to 10 s), and every operator looks at the cluster again (events were missed).
        backoff = Backoff(RETRY_INITIAL, RETRY_CAP)
        self._informers = [
            Informer(self.cluster, "apps", "Deployment", baseline=False, on_watch=self._rewatched,
                     on_event=self._deployment_event, backoff=backoff, task_name="sim deployments"),
            Informer(self.cluster, *CLUSTER_OPERATOR, baseline=False, on_watch=self._rewatched,
                     on_event=self._operator_event, backoff=backoff, task_name="sim clusteroperators")]
        await asyncio.gather(*(informer.start() for informer in self._informers))
        hooks = read_hooks(self.cluster)  # the embedded cluster's (through any wrappers)
        if hooks is not None:
            self._remove_read_hook = hooks.on_read(self._on_read)
        await self._start_operators()

    async def _create_operand_namespaces(self) -> None:
        for namespace in sorted(self.operand_namespaces - self._namespaces_done):
            self._namespaces_done.add(namespace)
            try:
                await self._create_namespace(namespace)
            except ApiError as err:
                log.info("operand namespace not created yet; retrying", namespace=namespace, error=str(err))
                self._tasks.append(asyncio.create_task(
                    self._retrying(f"create namespace {namespace}", functools.partial(self._create_namespace, namespace)),
                    name=f"sim namespace {namespace}"))

    async def _create_namespace(self, namespace: str) -> None:
        if await self.cluster.get(Ref("", "Namespace", "", namespace)) is None:
            try:
                await self.cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            except ApiError as err:
                if err.kind is not ApiErrorKind.ALREADY_EXISTS:
                    raise

    def _roll_derived(self, obj: Object) -> None:
        """A Deployment of a derived ClusterOperator, on a cluster without controllers: after the operator's delay,
        the status kube-controller-manager's deployment controller writes once every replica is up."""
        if self.rollouts or not self._derived:
            return
        spec = next((s for s in self._derived
                     if any(r.kind == "Deployment" and r.matches(obj) for r in s.workloads)), None)
        generation = dig(obj, "metadata", "generation")
        if spec is None or (dig(obj, "status", "observedGeneration") == generation and compute(obj).current):
            return
        ref = Ref.of(obj)
        old = self._rolling.pop(ref, None)
        if old is not None:
            old.cancel()
        delay = self.behaviours.for_operator(spec.operator).delay

        async def roll() -> None:
            await asyncio.sleep(delay)
            live = await self._retrying(f"read {ref}", functools.partial(self.cluster.get, ref))
            if live is None:
                return
            replicas = dig(live, "spec", "replicas")
            count = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1
            status = {"observedGeneration": dig(live, "metadata", "generation") or 1, "replicas": count,
                      "updatedReplicas": count, "readyReplicas": count, "availableReplicas": count,
                      "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                      "message": "Deployment has minimum availability."},
                                     {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                                      "message": f'ReplicaSet "{ref.name}" has successfully progressed.'}]}
            with contextlib.suppress(ApiError):  # changed meanwhile: its next event rolls it again
                await self.cluster.update_status({**live, "status": status})

        self._rolling[ref] = asyncio.get_running_loop().create_task(roll(), name=f"sim rollout {ref}")

    async def _start_operators(self) -> None:
        """Upgradeable windows for operators that have none yet, then every operator looks at the cluster."""
        if self._derived and not self.rollouts:
            for live in await self._retrying("list deployments", lambda: self.cluster.list("apps", "Deployment")):
                self._roll_derived(live)
        for name, model in list(self.operators.items()):
            b = self.behaviours.for_operator(name)
            if b.upgradeable is not None and name not in self._windows:
                self._windows.add(name)
                self._tasks.append(asyncio.create_task(self._upgradeable_window(name, b), name=f"sim gate {name}"))
            await self._reconsider_or_later(model)

    async def _catch_up(self) -> None:
        """A release registered while running: its operand namespaces and new operators, as at start."""
        await self._create_operand_namespaces()
        await self._start_operators()

    def _machines(self, name: str) -> MachineConfigSimulator | None:
        """The pools and nodes machine-config rolls, when its behaviour has ``nodes`` or ``pools``."""
        behaviour = self.behaviours.for_operator(name).machines if name == MACHINE_CONFIG else None
        if behaviour is not None and self.machines is None:
            self.machines = MachineConfigSimulator(self.cluster, self.clock, behaviour)
        return self.machines if behaviour is not None else None

    async def stop(self) -> None:
        if self.machines is not None:
            await self.machines.stop()
        if self._remove_read_hook is not None:
            self._remove_read_hook()
            self._remove_read_hook = None
        for informer in self._informers:
            await informer.stop()
        self._informers.clear()
        tasks = self._tasks + [m.task for m in self.operators.values() if m.task is not None] + list(
            self._rolling.values())
        self._rolling.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        self._windows.clear()  # a restart starts the windows again, as operators restarting would

    async def _rewatched(self, first: bool) -> None:
        """A watch opened again after a failure may have missed events: every operator looks again."""
        if not first:
            for model in list(self.operators.values()):
                await self._reconsider(model)

    async def _deployment_event(self, event: WatchEvent) -> None:
        ref = Ref.of(event.obj)
        if event.type != "DELETED":
            self._roll_derived(event.obj)
        for name in sorted(self._by_deployment.get(ref, ())):
            self.operators[name].changed.set()
            await self._reconsider(self.operators[name])

    async def _operator_event(self, event: WatchEvent) -> None:
        if event.type == "ADDED":
            name = dig(event.obj, "metadata", "name")
            model = self.operators.get(name) if isinstance(name, str) else None
            if model is not None and not self._has_deployments(model):
                await self._reconsider(model)

    def _on_read(self, ref: Ref) -> None:
        if (ref.group, ref.kind) != CLUSTER_OPERATOR:
            return
        model = self.operators.get(ref.name)
        if model is None or self._has_deployments(model) or ref.name in self._reading:
            return  # reads made while deciding (the simulator's own) do not start another decision
        self._reading.add(ref.name)

        async def decide() -> None:
            try:
                await self._reconsider_or_later(model)
            finally:
                self._reading.discard(ref.name)

        self._tasks.append(asyncio.get_running_loop().create_task(decide(), name=f"sim read {ref.name}"))

    def _has_deployments(self, model: OperatorModel) -> bool:
        return any(model.deployments.values())

    # --- API errors: what an operator's reconcile loop does ------------------------------------

    async def _retrying(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        return await retrying(what, call, logger=log)

    async def _reconsider_or_later(self, model: OperatorModel) -> None:
        """Decide now; if the cluster cannot be read, decide again later (in the background)."""
        try:
            await self._reconsider(model)
        except ApiError as err:
            log.info("operator could not look at the cluster; trying again", operator=model.name, error=str(err))
            self._again_later(model)

    def _again_later(self, model: OperatorModel) -> None:
        if model.name in self._again:
            return
        self._again.add(model.name)

        async def again() -> None:
            try:
                await self._retrying(f"decide {model.name}", lambda: self._reconsider(model))
            finally:
                self._again.discard(model.name)

        self._tasks.append(asyncio.get_running_loop().create_task(again(), name=f"sim again {model.name}"))

    # --- deciding what to roll out --------------------------------------------------------------

    async def _deployed_version(self, model: OperatorModel) -> str | None:
        """The newest registered release whose Deployments for this operator are all in the cluster."""
        for version in reversed(self.releases):
            refs = model.deployments.get(version)
            if not refs:
                continue
            for ref, images in refs.items():
                live = await self.cluster.get(ref)
                if live is None:
                    break
                env = _release_version_env(live)
                if env is not None and env != version:
                    break
                if env is None and _images(live) != images:
                    break
            else:
                return version
        return None

    async def _desired_version(self, model: OperatorModel) -> str | None:
        """For an operator without Deployments: the release the sweep is working towards."""
        cv = await self.cluster.get(cv_ref())
        version = mapping(dig(cv, "status", "desired")).get("version")
        if version in model.versions and await self.cluster.get(co_ref(model.name)) is not None:
            return str(version)
        return None

    async def _reconsider(self, model: OperatorModel) -> None:
        async with self._lock:
            if self._has_deployments(model):
                version = await self._deployed_version(model)
            else:
                version = await self._desired_version(model)
            if version is None or version == model.target:
                return
            live = await self.cluster.get(co_ref(model.name))
            # What the ClusterOperator reports, as it is (written back as the old versions while rolling out).
            reported: dict[Any, Any] = {v.get("name"): v.get("version") for v in entries(dig(live, "status", "versions"))}
            model.target = version
            if model.task is not None:
                model.task.cancel()
            if reported and reported == model.versions[version] and self._is_available(live):
                if (machines := self._machines(model.name)) is not None:  # its pools and nodes, if not there yet
                    model.task = asyncio.create_task(machines.install(version), name=f"sim machines {version}")
                return  # already there: an operator restarting with nothing to do
            log.detail("operator rolling out", operator=model.name, version=version)  # its wait says so
            model.task = asyncio.create_task(self._rollout(model, version, reported),
                                             name=f"sim rollout {model.name}")

    @staticmethod
    def _is_available(live: Object | None) -> bool:
        for cond in entries(dig(live, "status", "conditions")):
            if cond.get("type") == "Available":
                return bool(cond.get("status") == "True")
        return False

    # --- the rollout timeline -------------------------------------------------------------------

    def _state(self, b: Behaviour, t: float, version: str, new: dict[str, str], old: dict[str, str],
               install: bool) -> tuple[dict[str, str], list[Condition]]:
        ready = t >= b.delay
        versions = new if (ready and not b.never_versions) or b.version_early else old
        if b.never_available:
            available = Condition("Available", "False", "OperandsUnavailable",
                                  "Operands never become available (simulated)")
        elif ready:
            up = True
            if b.flapping > 0 and b.flaps > 0:
                k = int((t - b.delay) // b.flapping)
                up = k >= 2 * b.flaps or k % 2 == 0
            available = (Condition("Available", "True", "AsExpected", f"Operands are available at {version}") if up
                         else Condition("Available", "False", "Flapping", "Operands are restarting (simulated flapping)"))
        elif install:
            available = Condition("Available", "False", "Starting", f"Waiting for operands of {version} to start")
        else:
            available = Condition("Available", "True", "AsExpected", "Previous operands are serving")
        degraded = b.degraded is not None and b.degraded.contains(t)
        conditions = [
            available,
            Condition("Degraded", "True", "SimulatedDegradation", b.degraded_message) if degraded
            else Condition("Degraded", "False", "AsExpected"),
            Condition("Progressing", "False", "AsExpected", f"Deployed {version}") if ready
            else Condition("Progressing", "True", "Upgrading" if not install else "Installing", f"Moving to {version}"),
        ]
        if b.upgrading_condition:
            conditions.append(Condition("Upgrading", "False", "UpgradeDone", f"Successfully upgraded to {version}")
                              if ready else Condition("Upgrading", "True", "Migrating", f"Upgrading to {version}"))
        return versions, conditions

    def _edges(self, b: Behaviour) -> list[float]:
        edges = {0.0, b.delay}
        if b.degraded is not None:
            edges.update(b.degraded.edges())
        if b.flapping > 0:
            edges.update(b.delay + k * b.flapping for k in range(1, 2 * b.flaps + 1))
        return sorted(e for e in edges if e >= 0)

    async def _rollout(self, model: OperatorModel, version: str, reported: dict[str, str]) -> None:
        b = self.behaviours.for_operator(model.name)
        new = model.versions[version]
        install = not reported
        start = self.clock.monotonic()
        machines = self._machines(model.name)
        for edge in self._edges(b):
            await asyncio.sleep(max(0.0, start + edge - self.clock.monotonic()))
            if edge >= b.delay and self.rollouts and model.deployments.get(version):
                await self._until_rolled_out(model, version, b, reported, install)
                start = self.clock.monotonic() - edge  # later edges (flapping, degraded windows) follow the rollout
            if machines is not None and edge >= b.delay:  # machine-config: new versions once the master pool is done
                previous = reported.get("operator")
                await (machines.install(version) if install else machines.update(version, previous))
                machines = None
            versions, conditions = self._state(b, edge, version, new, reported, install)
            await self._report(model.name, versions if versions else None, conditions)

    async def _until_rolled_out(self, model: OperatorModel, version: str, b: Behaviour, reported: dict[str, str],
                                install: bool) -> None:
        """Until every Deployment of ``model`` at ``version`` has rolled out, reporting what it waits on (a change
        at a time): Progressing names the Deployment and its kstatus message; a failed one makes it Degraded."""
        last: Progress | None = None
        while True:
            model.changed.clear()
            refs = sorted(model.deployments[version], key=lambda r: (r.namespace, r.name))
            lives = {ref: await self._retrying(f"read {ref}", functools.partial(self.cluster.get, ref)) for ref in refs}
            now = progress(lives)
            if now.done:
                return
            if now != last:
                versions, conditions = self._state(b, -1.0, version, model.versions[version], reported, install)
                await self._report(model.name, versions if versions else None, self._waiting(conditions, now, version))
                last = now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(model.changed.wait(), ROLLOUT_RECHECK)

    @staticmethod
    def _waiting(conditions: list[Condition], now: Progress, version: str) -> list[Condition]:
        out = []
        for c in conditions:
            if c.type == "Progressing":
                c = Condition("Progressing", "True", c.reason, f"Moving to {version}: {now.failed or now.waiting}")
            elif c.type == "Degraded" and now.failed:
                c = Condition("Degraded", "True", "DeploymentRolloutFailed", now.failed)
            elif c.type == "Available" and now.failed and c.status == "False":
                c = Condition("Available", "False", "DeploymentRolloutFailed", now.failed)
            out.append(c)
        return out

    async def _report(self, name: str, versions: dict[str, str] | None, conditions: list[Condition]) -> None:
        """Report the ClusterOperator's status (timestamps of the moment of each try) until it lands."""

        async def write() -> None:
            await report_status(self.cluster, name, self.clock.now(), versions=versions, conditions=conditions)

        await self._retrying(f"report clusteroperator {name}", write)

    async def _upgradeable_window(self, name: str, b: Behaviour) -> None:
        assert b.upgradeable is not None and self._origin is not None
        for index, edge in enumerate(b.upgradeable.edges()):
            await asyncio.sleep(max(0.0, self._origin + edge - self.clock.monotonic()))
            blocked = index == 0
            status, reason, message = (("False", b.upgradeable_reason, b.upgradeable_message) if blocked
                                       else ("True", "AsExpected", ""))
            if b.use_operator_condition:
                await self._set_operator_condition(name, status, reason, message)
            else:
                await self._report(name, None, [Condition("Upgradeable", status, reason, message)])

    async def _set_operator_condition(self, name: str, status: str, reason: str, message: str) -> None:
        """Report through the OperatorCondition, found the way a real operator finds it: the
        ``OPERATOR_CONDITION_NAME`` cvo injected into its Deployment, in the Deployment's namespace."""
        model = self.operators[name]
        while True:  # like an operator's reconcile loop: retry until its Deployment and condition exist
            for version in reversed(self.releases):
                for ref in model.deployments.get(version, {}):
                    try:
                        env = _env(await self.cluster.get(ref) or {}, ENV_NAME)
                        if env is None:
                            continue
                        conditions = OperatorConditions(self.cluster, name=env, namespace=ref.namespace,
                                                        clock=self.clock)
                        await conditions.set("Upgradeable", status, reason, message)
                        return
                    except ApiError as err:
                        log.info("operator could not report its OperatorCondition yet", operator=name, error=str(err))
            await asyncio.sleep(10.0)
