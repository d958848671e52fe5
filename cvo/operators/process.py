"""The simulated operators as a process of their own, beside any cluster (``cvo sim-operators``).

:class:`SimOperators` runs an :class:`~cvo.operators.simulated.OperatorSimulator` for the releases it
knows, follows the ClusterVersion (a new ``status.desired.image`` that is a ``file://`` release directory
restarts the simulator with that release too, as operators restart), and prints one line per report
through :class:`ReportingCluster`.  :func:`run_operators` is the whole process: until stopped, for a
duration, or once caught up.  The command line (flags, signals, the backend) is :mod:`cvo.cli.simop_cmd`.

May import: ``cvo.payload``, ``cvo.cluster`` (the interface), ``cvo.gates``, and this package.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from cvo.clock import Clock, to_rfc3339
from cvo.cluster.api import (
    CLUSTER_OPERATOR,
    CLUSTER_VERSION,
    ApiError,
    ApiErrorKind,
    Cluster,
    Object,
    Ref,
    WatchEvent,
    cv_ref,
)
from cvo.cluster.informer import Backoff, Informer
from cvo.cluster.intercept import Call, Interceptor, read_hooks
from cvo.gates.olm import OC_GROUP, OC_KIND
from cvo.images.errors import ImageError
from cvo.images.pull import PullOptions, pull_release
from cvo.images.reference import looks_like_image
from cvo.operators.behaviour import Behaviours
from cvo.operators.rollouts import controllers_act
from cvo.operators.simulated import OperatorSimulator
from cvo.payload.loader import LoadError, Release, load_release

RESTART_DELAY = 1.0  # seconds before watching (and reading) the ClusterVersion again after a failure


# --- what the operators report -------------------------------------------------------------------------

CONDITION_ORDER = ("Available", "Progressing", "Degraded", "Upgradeable", "Upgrading")
HAPPY = {"Available": "True", "Progressing": "False", "Degraded": "False", "Upgradeable": "True",
         "Upgrading": "False"}


def _conditions_text(conditions: list[dict[str, Any]]) -> str:
    order = {t: i for i, t in enumerate(CONDITION_ORDER)}
    parts = []
    for cond in sorted(conditions, key=lambda c: (order.get(c.get("type", ""), len(order)), c.get("type", ""))):
        type_, status = cond.get("type", ""), cond.get("status", "")
        text = f"{type_}={status}"
        if HAPPY.get(type_) != status and cond.get("reason"):
            text += f" ({cond['reason']})"
        parts.append(text)
    return " ".join(parts)


def describe_report(verb: str, obj: Object) -> str | None:
    """One line for a write the simulated operators made, or ``None`` for writes not worth a line."""
    ref = Ref.of(obj)
    if (ref.group, ref.kind) == CLUSTER_OPERATOR and verb == "update_status":
        status = obj.get("status") or {}
        line = f"clusteroperator/{ref.name}: {_conditions_text(status.get('conditions') or [])}"
        versions = " ".join(f"{v.get('name')}={v.get('version')}" for v in status.get("versions") or [])
        return f"{line}; versions {versions}" if versions else line
    if (ref.group, ref.kind) == (OC_GROUP, OC_KIND):
        conditions = (obj.get("spec") or {}).get("conditions") or []
        messages = "; ".join(c.get("message", "") for c in conditions if c.get("message"))
        line = f"operatorcondition {ref.namespace}/{ref.name}: {_conditions_text(conditions)}"
        return f"{line}: {messages}" if messages else line
    if verb == "create":
        return f"{ref.kind.lower()}/{ref.name} created"
    return None


class ReportingCluster(Interceptor):
    """The cluster as one simulator sees it: its writes are printed, and its read hooks can be removed.

    Its read hooks are the underlying cluster's (the embedded one has them; on another cluster a hook
    is never called), so the simulator behaves exactly as it would on that cluster.
    """

    def __init__(self, cluster: Cluster, clock: Clock, out: TextIO, err: TextIO) -> None:
        super().__init__(cluster)
        self.clock = clock
        self.out = out
        self.err = err
        self.reports = 0
        self.failures = 0
        self._removers: list[Callable[[], None]] = []

    def on_read(self, callback: Callable[[Ref], object]) -> Callable[[], None]:
        """The underlying cluster's :meth:`~cvo.cluster.api.ReadHooks.on_read`, removed again by :meth:`detach`."""
        hooks = read_hooks(self.inner)
        if hooks is None:
            return lambda: None
        remove = hooks.on_read(callback)
        self._removers.append(remove)
        return remove

    def detach(self) -> None:
        for remove in self._removers:
            remove()
        self._removers.clear()

    def _print(self, line: str) -> None:
        print(f"{to_rfc3339(self.clock.now())} {line}", file=self.out, flush=True)

    async def intercept_object_write(self, call: Call, obj: Object, send: Callable[[], Awaitable[Object]]) -> Object:
        try:
            result = await send()
        except ApiError as err:
            if call.verb != "create" or err.kind is not ApiErrorKind.ALREADY_EXISTS:  # losing a create race is normal
                self.failures += 1
                print(f"{to_rfc3339(self.clock.now())} report failed: {call.verb} {Ref.of(obj)}: {err}",
                      file=self.err, flush=True)
            raise
        line = describe_report(call.verb, result)
        if line is not None:
            self.reports += 1
            self._print(line)
        return result


# --- following the ClusterVersion --------------------------------------------------------------------------


def release_images(cv: Object | None) -> list[str]:
    """The releases the ClusterVersion asks operators to run: the last completed one, then the desired one."""
    status = (cv or {}).get("status") or {}
    images: list[str] = []
    completed = next((h for h in status.get("history") or [] if h.get("state") == "Completed"), None)
    if completed and completed.get("image"):
        images.append(str(completed["image"]))
    desired = (status.get("desired") or {}).get("image")
    if desired:
        images = [i for i in images if i != desired] + [str(desired)]
    return images


def load_image(image: str, pull: PullOptions | None = None) -> Release:
    """The release a ``file://`` image or a pull spec names (pulled into the image cache with ``pull``, the
    defaults without); :class:`LoadError` for anything else."""
    if image.startswith("file://"):
        return load_release(Path(image[len("file://"):]))
    if not looks_like_image(image):
        raise LoadError([f"{image}: neither a release directory (file://…) nor a pull spec; pass --release DIR"])
    try:
        pulled = pull_release(image, pull or PullOptions())
    except ImageError as err:
        raise LoadError([str(err)]) from None
    return load_release(pulled.directory, release_image=image)


class SimOperators:
    """Runs an :class:`OperatorSimulator` for the known releases, restarting it when a new one appears."""

    def __init__(self, cluster: Cluster, clock: Clock, behaviours: Behaviours, releases: list[Release],
                 load: Callable[[str], Release] = load_image, out: TextIO | None = None,
                 err: TextIO | None = None, rollouts: bool | None = None) -> None:
        self.cluster = cluster
        self.wait_rollouts = rollouts  # versions wait on real rollouts (None: when the cluster's controllers act)
        self.clock = clock
        self.behaviours = behaviours
        self.load = load
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.releases: dict[str, Release] = {}  # image -> release, in registration order (newest last)
        for release in releases:
            self.releases[release.image] = release
        self.simulator: OperatorSimulator | None = None
        self._view: ReportingCluster | None = None
        self._unloadable: set[str] = set()
        self._lock = asyncio.Lock()
        self.reports = 0
        self.failures = 0
        self.restarts = 0
        self.ready = asyncio.Event()  # set once the ClusterVersion was read and the simulator started

    def _say(self, message: str) -> None:
        print(f"sim-operators: {message}", file=self.err, flush=True)

    async def follow(self, cv: Object | None) -> bool:
        """Register the releases ``cv`` names that are new; restart the simulator if there were any."""
        async with self._lock:
            new = False
            preferred: Release | None = None
            for image in release_images(cv):
                if image in self.releases:
                    if list(self.releases)[-1] != image:  # the desired release goes last
                        self.releases[image] = preferred = self.releases.pop(image)
                    continue
                if image in self._unloadable:
                    continue
                try:
                    release = self.load(image)
                except LoadError as err:
                    self._unloadable.add(image)
                    self._say(f"cannot simulate the operators of {image}: {err.errors[0]}")
                    continue
                self._say(f"ClusterVersion: simulating the operators of {release.version} ({image})")
                self.releases[image] = release
                new = True
            if new or (self.simulator is None and self.releases):
                await self._restart()
            elif preferred is not None and self.simulator is not None:
                await self.simulator.prefer(preferred.version)  # a known release is now the desired one
            return new

    async def _restart(self) -> None:
        await self._stop_simulator()
        view = ReportingCluster(self.cluster, self.clock, self.out, self.err)
        if self.wait_rollouts is None:
            self.wait_rollouts = await controllers_act(self.cluster)
            if self.wait_rollouts:
                self._say("the cluster's controllers act: an operator reports its new version once its Deployments "
                          "have rolled out")
        simulator = OperatorSimulator(view, self.clock, self.behaviours, rollouts=self.wait_rollouts)
        for release in self.releases.values():
            simulator.register_release(release)
        self._view, self.simulator = view, simulator
        names = sorted(simulator.operators)
        versions = ", ".join(r.version for r in self.releases.values())
        self._say(f"{len(names)} operator{'' if len(names) == 1 else 's'} of {versions}: {', '.join(names)}")
        self.restarts += 1
        await simulator.start()

    async def _stop_simulator(self) -> None:
        if self.simulator is not None:
            await self.simulator.stop()
        if self._view is not None:
            self._view.detach()
            self.reports += self._view.reports
            self.failures += self._view.failures
        self.simulator, self._view = None, None

    async def stop(self) -> None:
        async with self._lock:
            await self._stop_simulator()

    def rollouts(self) -> list[asyncio.Task[None]]:
        sim = self.simulator
        return [m.task for m in sim.operators.values() if m.task is not None] if sim is not None else []

    async def settle(self) -> None:
        """Until no rollout is running (the rollouts the cluster's current state starts, finished)."""
        while True:
            for _ in range(5):  # let what the last writes triggered start
                await asyncio.sleep(0)
            running = [t for t in self.rollouts() if not t.done()]
            if not running:
                return
            await asyncio.wait(running)

    def failed_rollouts(self) -> list[str]:
        sim = self.simulator
        if sim is None:
            return []
        out = []
        for name, model in sorted(sim.operators.items()):
            task = model.task
            if task is not None and task.done() and not task.cancelled() and task.exception() is not None:
                out.append(f"{name}: {task.exception()}")
        return out

    async def watch_cluster_version(self, stop: asyncio.Event) -> None:
        """Follow the ClusterVersion until ``stop``; a watch that fails is opened again (and the CV re-read)."""
        informer = Informer(self.cluster, *CLUSTER_VERSION, name=cv_ref().name, baseline=False,
                            on_watch=self._read_cluster_version, on_event=self._cluster_version_changed,
                            on_error=self._watch_failed, backoff=Backoff(RESTART_DELAY, RESTART_DELAY),
                            task_name="sim-operators watch clusterversion")
        await informer.start()
        try:
            await stop.wait()
        finally:
            await informer.stop()

    async def _read_cluster_version(self, first: bool) -> None:
        # Subscribed before the ClusterVersion is read: no change between the read and the watch is lost.
        await self.follow(await self.cluster.get(cv_ref()))
        if not self.ready.is_set():
            self.ready.set()
            if not self.releases:
                self._say("waiting for a ClusterVersion whose status.desired.image is a release "
                          "(cvo install RELEASE)")

    async def _cluster_version_changed(self, event: WatchEvent) -> None:
        await self.follow(event.obj)

    def _watch_failed(self, err: Exception, retry_in: float) -> None:
        # Whatever it was, the operators keep going: read and watch again.
        self._say(f"reading the ClusterVersion: {err}; trying again")


# --- the process ----------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """How a run of the simulated operators ended."""

    interrupted: bool  # stopped from outside (a signal), not done
    elapsed: float  # seconds on the cluster's clock
    reports: int
    failures: int  # writes that failed (each is written again by the operator's reconcile loop)
    failed_rollouts: list[str] = field(default_factory=list)


async def run_operators(cluster: Cluster, clock: Clock, behaviours: Behaviours, explicit: list[Release],
                        stop: asyncio.Event, once: bool, duration: float | None,
                        out: TextIO | None = None, err: TextIO | None = None,
                        pull: PullOptions | None = None, rollouts: bool | None = None) -> Outcome:
    """Simulate the operators until ``stop`` is set, ``duration`` has passed on the cluster's clock, or (with
    ``once``) the rollouts the cluster's current state starts are done."""
    runner = SimOperators(cluster, clock, behaviours, explicit, load=lambda image: load_image(image, pull),
                          out=out, err=err, rollouts=rollouts)
    started = clock.monotonic()
    follower = asyncio.create_task(runner.watch_cluster_version(stop), name="sim-operators clusterversion")
    stopped = asyncio.create_task(stop.wait(), name="sim-operators stop")
    work: asyncio.Future[Any] | None = None
    if once:
        work = asyncio.ensure_future(_after_catching_up(runner))
    elif duration is not None:
        work = asyncio.ensure_future(asyncio.sleep(duration))
    try:
        await asyncio.wait([t for t in (stopped, follower, work) if t is not None], return_when=asyncio.FIRST_COMPLETED)
    finally:
        tasks = [t for t in (work, follower, stopped) if t is not None]
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        failed = runner.failed_rollouts()
        await runner.stop()
    for result in results:
        if isinstance(result, Exception):
            raise result
    return Outcome(interrupted=stop.is_set(), elapsed=clock.monotonic() - started, reports=runner.reports,
                   failures=runner.failures, failed_rollouts=failed)


async def _after_catching_up(runner: SimOperators) -> None:
    await runner.ready.wait()
    await runner.settle()
