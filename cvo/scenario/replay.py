"""Replaying a scenario: one embedded cluster, simulated operators and sweeps on a virtual clock."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cvo.clock import Clock, run_virtual, to_rfc3339
from cvo.cluster.api import ApiError, ApiErrorKind, Ref, cv_ref
from cvo.cluster.embedded.server import SimCluster
from cvo.gates.olm import OC_GROUP, OC_KIND
from cvo.images.errors import ImageError
from cvo.images.pull import pull_release
from cvo.images.reference import looks_like_image
from cvo.operators.behaviour import Behaviour, Behaviours, parse_duration
from cvo.operators.library.clusteroperator import Condition, report_status
from cvo.operators.simulated import OperatorSimulator
from cvo.payload.conditions import current_version
from cvo.payload.filters import KNOWN_CAPABILITIES, ApplyFilter
from cvo.payload.graph import Mode
from cvo.payload.loader import LoadError, Release, load_release
from cvo.runner.durations import RECORDS_REF
from cvo.runner.events import Recorder
from cvo.runner.node_durations import NodeRecorder
from cvo.runner.sweep import SweepOptions, SweepResult
from cvo.runner.sweep_events import (
    ClusterRequests,
    Event,
    Kind,
    P,
    ScenarioAction,
    ScenarioFinished,
    ScenarioOverrun,
    ScenarioStarted,
    SweepCancelled,
    SweepDeferred,
)
from cvo.runner.upgrade import UpgradeController
from cvo.runner.worker import Worker
from cvo.scenario.model import Action, Scenario, ScenarioError, monitoring_answers
from cvo.status.upgrade_nodes import MC_GROUP
from cvo.updates.conditions import StaticRegistry
from cvo.updates.evaluate import available_from_json, conditional_from_json, evaluate, status_lists
from cvo.updates.featuregates import accepted_risk_names, cvo_gates

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)  # every replay starts here: timestamps are reproducible


@dataclass
class SweepRun:
    kind: str  # install, upgrade, reconcile
    release: Release
    mode: Mode
    task: asyncio.Task[SweepResult]
    worker: Worker | UpgradeController
    cancelled: bool = False
    force: bool = False


@dataclass
class ReplayOutcome:
    scenario: Scenario
    events: list[Event]
    result: str  # completed, degraded, timeout, failed, cancelled, blocked, none
    last: SweepResult | None
    cluster_version: dict[str, Any]
    cluster_operators: list[dict[str, Any]]
    started: datetime
    finished: datetime
    objects: dict[Ref, dict[str, Any]] = field(default_factory=dict)
    # offset (seconds from the start) -> (when, ClusterVersion, ClusterOperators, records ConfigMap) taken then
    snapshots: dict[float, tuple[datetime, dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]] = field(
        default_factory=dict)
    # offset -> the MachineConfigPools, Nodes and MachineConfigs then (only when pools are served)
    machines: dict[float, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def elapsed(self) -> float:
        return (self.finished - self.started).total_seconds()


class Replay:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.clock = Clock(EPOCH)
        self.recorder = Recorder()
        self.cluster = SimCluster(clock=self.clock, openshift_apis=scenario.openshift_apis)
        self.releases: dict[Path, Release] = {}
        self.current: SweepRun | None = None
        self.last: SweepRun | None = None
        self.simulator: OperatorSimulator | None = None
        self._deferred: asyncio.Task[None] | None = None  # an upgrade waiting for the install to finish
        self.overrun = False  # the last sweep ran past the replay's limit and was stopped
        # the scenario's simulated monitoring (its answers change with `monitoring` actions)
        self.monitoring = dict(scenario.monitoring) if scenario.monitoring is not None else None

    def emit(self, kind: Kind[P], /, *args: P.args, **fields: P.kwargs) -> None:
        self.recorder.emit(kind(self.clock.now(), *args, **fields))

    def release(self, value: Any, where: str) -> Release:
        """A release directory (relative to the scenario file) or a release image (``oci:DIR[:TAG]`` relative to
        it too, or a registry's pull spec), pulled into the image cache."""
        if not isinstance(value, str):
            raise ScenarioError(f"{self.scenario.path}: {where}: expected a release directory path or image")
        if looks_like_image(value):
            spec = value
            if spec.startswith("oci:") and not spec[4:].startswith("/"):
                spec = f"oci:{self.scenario.resolve(spec[4:])}"
            key = Path(spec)
            if key not in self.releases:
                try:
                    pulled = pull_release(spec)
                    self.releases[key] = load_release(pulled.directory, release_image=pulled.pull_spec)
                except (ImageError, LoadError) as err:
                    problem = str(err) if isinstance(err, ImageError) else err.errors[0]
                    raise ScenarioError(f"{self.scenario.path}: {where}: {problem}") from None
            return self.releases[key]
        path = self.scenario.resolve(value)
        if path not in self.releases:
            try:
                self.releases[path] = load_release(path)
            except LoadError as err:
                raise ScenarioError(f"{self.scenario.path}: {where}: {err.errors[0]}") from None
        return self.releases[path]

    def options(self) -> SweepOptions:
        caps = self.scenario.capabilities
        apply_filter = ApplyFilter(enabled_capabilities=frozenset(KNOWN_CAPABILITIES if caps is None else caps))
        return SweepOptions(interval=self.scenario.interval, timeout=self.scenario.timeout, capabilities=apply_filter)

    # --- sweeps ---------------------------------------------------------------------------------

    async def _stop_current(self, reason: str) -> None:
        self._drop_deferred()
        run = self.current
        if run is None or run.task.done():
            return
        run.cancelled = True
        run.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run.task
        self.emit(SweepCancelled, version=run.release.version, reason=reason)

    def _drop_deferred(self) -> None:
        if self._deferred is not None and not self._deferred.done():
            self._deferred.cancel()
        self._deferred = None

    def _installing(self) -> bool:
        run = self.current
        return run is not None and run.mode is Mode.INSTALL and not run.task.done()

    def _defer_until_installed(self, release: Release) -> None:
        """The CVO ignores a version change while it initializes (pkg/cvo/sync_worker.go `SyncWorker.Update`): the install goes
        on, and the new desired release is picked up once the install completed (Reconciling →
        Updating).  An install that never completes never starts the upgrade."""
        install = self.current
        assert install is not None
        self._drop_deferred()
        self.emit(SweepDeferred, version=release.version, running=install.release.version,
                  reason="Ignoring detected version change during payload initialization")

        async def after_install() -> None:
            await asyncio.wait({install.task})  # never cancels the install; our own cancel propagates
            if self.current is not install or install.cancelled or install.task.cancelled():
                return
            if install.task.exception() is not None or not install.task.result().completed:
                return
            self._deferred = None
            await self.start_sweep("upgrade", release, Mode.UPDATE)

        self._deferred = asyncio.create_task(after_install(), name=f"deferred upgrade {release.version}")

    async def start_sweep(self, kind: str, release: Release, mode: Mode, force: bool = False) -> None:
        await self._stop_current(f"new work: {kind} {release.version}")
        runner: Worker | UpgradeController
        if kind == "upgrade":
            # the action wrote spec.desiredUpdate: the request is the cluster's, as with a controller (it waits)
            runner = UpgradeController(self.cluster, await self._running_release(), release, self.recorder,
                                       self.clock, self.options(), force=force, write_spec=False)
        else:
            runner = Worker(self.cluster, release, mode, self.recorder, self.clock, self.options())
        task = asyncio.create_task(runner.run(), name=f"{kind} {release.version}")
        self.current = self.last = SweepRun(kind, release, mode, task, runner, force=force)

    async def _running_release(self) -> Release:
        """The release the cluster runs now (its ClusterVersion's desired image)."""
        cv = await self.cluster.get(cv_ref()) or {}
        image = ((cv.get("status") or {}).get("desired") or {}).get("image")
        for release in self.releases.values():
            if release.image == image:
                return release
        raise ScenarioError(f"{self.scenario.path}: the cluster runs {image!r}, which no action loaded")

    async def _install_before(self, path: Path | str) -> None:
        """``cluster.installed``: a completed install before the timeline starts (operators quick)."""
        release = self.release(str(path), "cluster.installed")
        quick = OperatorSimulator(self.cluster, self.clock, Behaviours(default=Behaviour(delay=1.0)))
        quick.register_release(release)
        await quick.start()
        quiet = Recorder()
        result = await Worker(self.cluster, release, Mode.INSTALL, quiet, self.clock, self.options()).run()
        await quick.stop()
        if not result.completed:
            raise ScenarioError(f"{self.scenario.path}: cluster.installed: the install did not complete: "
                                f"{result.message}")

    # --- actions ----------------------------------------------------------------------------------

    async def do(self, action: Action) -> None:
        where = f"actions[{action.index}] ({action.kind})"
        value = action.value
        self.emit(ScenarioAction, action=action.kind, value=value if not isinstance(value, dict) else dict(value))
        if action.kind == "install":
            release = self.release(value, where)
            self._register(release)
            await self.start_sweep("install", release, Mode.INSTALL)
        elif action.kind in ("upgrade", "force"):
            target = value.get("to") if isinstance(value, dict) else value
            force = action.kind == "force" or bool(isinstance(value, dict) and value.get("force"))
            release = self.release(target, where)
            self._register(release)
            cv = await self.cluster.get(cv_ref())
            if cv is None:
                raise ScenarioError(f"{self.scenario.path}: {where}: nothing installed to upgrade")
            spec = dict(cv.get("spec") or {})
            accepted = (spec.get("desiredUpdate") or {}).get("acceptRisks")
            # the risks the admin accepted stay with the new target, as 'oc adm upgrade --to' keeps them
            spec["desiredUpdate"] = {"version": release.version, "image": release.image, "force": force,
                                     **({"acceptRisks": accepted} if accepted else {})}
            await self.cluster.update({**cv, "spec": spec})
            if self._installing():
                self._defer_until_installed(release)
            else:
                await self.start_sweep("upgrade", release, Mode.UPDATE, force=force)
        elif action.kind == "reconcile":
            release = await self._current_release(where)
            await self.start_sweep("reconcile", release, Mode.RECONCILE)
        elif action.kind == "cancel":
            await self._stop_current("cancelled by the scenario")
        elif action.kind == "resume":
            if self.last is None:
                raise ScenarioError(f"{self.scenario.path}: {where}: nothing to resume")
            await self.start_sweep(self.last.kind, self.last.release, self.last.mode, force=self.last.force)
        elif action.kind == "set-condition":
            await self._set_condition(value, where)
        elif action.kind == "delete":
            await self.cluster.delete(self._ref(value, where))
        elif action.kind in ("apply", "patch"):
            await self._apply(action.kind, value, where)
            if (self._ref(value, where) if action.kind == "patch" else Ref.of(value)) == cv_ref():
                await self.evaluate_updates()  # e.g. acceptRisks changed: the CVO evaluates again at once
        elif action.kind == "cv-override":
            cv = await self.cluster.get(cv_ref()) or {}
            await self.cluster.update({**cv, "spec": {**(cv.get("spec") or {}), "overrides": list(value or [])}})
        elif action.kind in ("override", "clear-override"):
            await self._override(action.kind, value, where)
        elif action.kind == "patch-status":
            ref = self._ref(value, where)
            live = await self.cluster.get(ref)
            if live is None:
                raise ScenarioError(f"{self.scenario.path}: {where}: {ref} does not exist")
            await self.cluster.update_status(_merge_patch(live, value.get("merge") or {}))
            if ref == cv_ref():  # conditional updates without a Recommended condition: evaluated at once
                await self.evaluate_updates()
        elif action.kind == "monitoring":
            assert self.monitoring is not None
            self.monitoring.update(monitoring_answers(value))
            await self.evaluate_updates()
        elif action.kind == "fail-requests":
            self._fail_requests(value, where)
        elif action.kind == "wait":
            pass
        else:
            raise ScenarioError(f"{self.scenario.path}: {where}: the action {action.kind!r} is not supported yet")

    async def evaluate_updates(self) -> None:
        """The ClusterVersion's conditional updates evaluated against the scenario's simulated monitoring
        (pkg/cvo/availableupdates.go ``evaluateConditionalUpdates``; with ``options.feature-set`` enabling
        ClusterUpdateAcceptRisks, ``spec.desiredUpdate.acceptRisks`` honoured and the gated fields written, as
        status.go writes them): each gets its Recommended condition, and the recommended ones are listed."""
        if self.monitoring is None:
            return
        now = self.clock.now()  # when the evaluation starts (reading the ClusterVersion takes simulated time)
        for _attempt in range(5):
            cv = await self.cluster.get(cv_ref())
            if cv is None:
                return
            status = dict(cv.get("status") or {})
            conditional = conditional_from_json(status.get("conditionalUpdates"))
            if not conditional:
                return
            desired = (cv.get("spec") or {}).get("desiredUpdate")
            version = current_version([h for h in status.get("history") or [] if isinstance(h, dict)])
            gated = cvo_gates(None, version, feature_set=self.scenario.feature_set).accept_risks
            found = await evaluate(available_from_json(status.get("availableUpdates")), conditional,
                                   StaticRegistry(self.monitoring), accepted_risk_names(desired), gated, now=now)
            image = str((status.get("desired") or {}).get("image") or "")
            lists = status_lists(found, gated, image, now)
            status["availableUpdates"] = None if lists.available is None else [r.to_json() for r in lists.available]
            status["conditionalUpdates"] = [u.to_json(gated) for u in lists.conditional]
            if lists.risks:
                status["conditionalUpdateRisks"] = [r.to_json(with_conditions=True) for r in lists.risks]
            else:
                status.pop("conditionalUpdateRisks", None)
            try:
                await self.cluster.update_status({**cv, "status": status})
                return
            except ApiError as err:
                if err.kind != ApiErrorKind.CONFLICT:
                    raise

    async def _evaluate_every_interval(self) -> None:
        """syncAvailableUpdates' cadence: the evaluation again every ``options.interval``."""
        while True:
            await asyncio.sleep(self.scenario.interval)
            await self.evaluate_updates()

    def _register(self, release: Release) -> None:
        assert self.simulator is not None
        self.simulator.register_release(release)

    async def _current_release(self, where: str) -> Release:
        """The release the cluster runs (not the last one named: a blocked upgrade's target is not it)."""
        cv = await self.cluster.get(cv_ref()) or {}
        if ((cv.get("status") or {}).get("desired") or {}).get("image"):
            return await self._running_release()
        if self.last is not None:
            return self.last.release
        if self.scenario.installed is not None:
            return self.release(str(self.scenario.installed), where)
        raise ScenarioError(f"{self.scenario.path}: {where}: no release to reconcile")

    def _ref(self, value: Any, where: str) -> Ref:
        if not isinstance(value, dict) or "kind" not in value or "name" not in value:
            raise ScenarioError(f"{self.scenario.path}: {where}: expected {{kind, name, namespace?, apiVersion?}}")
        api = str(value.get("apiVersion", "v1"))
        group = api.rpartition("/")[0] if "/" in api else ""
        return Ref(group, str(value["kind"]), str(value.get("namespace", "")), str(value["name"]))

    async def _set_condition(self, value: Any, where: str) -> None:
        if not isinstance(value, dict) or not {"clusteroperator", "type", "status"} <= set(value):
            raise ScenarioError(f"{self.scenario.path}: {where}: expected {{clusteroperator, type, status, reason?, "
                                f"message?}}")
        condition = Condition(str(value["type"]), str(value["status"]), str(value.get("reason", "")),
                              str(value.get("message", "")))
        await report_status(self.cluster, str(value["clusteroperator"]), self.clock.now(), conditions=[condition])

    async def _apply(self, kind: str, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise ScenarioError(f"{self.scenario.path}: {where}: expected an object")
        if kind == "apply":
            ref = Ref.of(value)
            live = await self.cluster.get(ref)
            if live is None:
                await self.cluster.create(dict(value))
            else:
                await self.cluster.update({**value, "metadata": {**live["metadata"], **value.get("metadata", {})}})
            return
        ref = self._ref(value, where)
        live = await self.cluster.get(ref)
        if live is None:
            raise ScenarioError(f"{self.scenario.path}: {where}: {ref} does not exist")
        await self.cluster.update(_merge_patch(live, value.get("merge") or {}))

    async def _override(self, kind: str, value: Any, where: str) -> None:
        """An admin's OperatorCondition override, as ``cvo override NAME TYPE=STATUS`` writes it."""
        if not isinstance(value, dict) or "name" not in value or (kind == "override" and "status" not in value):
            raise ScenarioError(f"{self.scenario.path}: {where}: expected {{name, status, type?, reason?, message?}}")
        type_ = str(value.get("type", "Upgradeable"))
        matches = [o for o in await self.cluster.list(OC_GROUP, OC_KIND) if o["metadata"]["name"] == value["name"]]
        if not matches:
            raise ScenarioError(f"{self.scenario.path}: {where}: no OperatorCondition named {value['name']!r}")
        oc = matches[0]
        spec = dict(oc.get("spec") or {})
        overrides = [o for o in spec.get("overrides") or [] if o.get("type") != type_]
        if kind == "override":
            overrides.append({"type": type_, "status": str(value["status"]), "reason": str(value.get("reason", "AdminOverride")),
                              "message": str(value.get("message", "")), "lastTransitionTime": to_rfc3339(self.clock.now())})
        spec["overrides"] = overrides
        await self.cluster.update({**oc, "spec": spec})

    def _fail_requests(self, value: Any, where: str) -> None:
        if not isinstance(value, dict) or "kind" not in value:
            raise ScenarioError(f"{self.scenario.path}: {where}: expected {{kind, name?, namespace?, error, count}}")
        try:
            error = ApiErrorKind(value.get("error", "Timeout"))
        except ValueError:
            known = ", ".join(k.value for k in ApiErrorKind)
            raise ScenarioError(f"{self.scenario.path}: {where}: unknown error {value.get('error')!r}; known: {known}") from None
        api = str(value.get("apiVersion", "v1"))
        group = api.rpartition("/")[0] if "/" in api else ""
        target: Any = self._ref(value, where) if "name" in value else (group, str(value["kind"]))
        self.cluster.inject_failure(target, error, count=int(value.get("count", 1)))

    # --- the timeline -------------------------------------------------------------------------------

    async def run(self) -> ReplayOutcome:
        loop = asyncio.get_running_loop()
        for obj in self.scenario.objects:
            await self.cluster.create(dict(obj))
        if self.scenario.installed is not None:
            await self._install_before(self.scenario.installed)
        self.simulator = OperatorSimulator(self.cluster, self.clock, self.scenario.behaviours)
        if self.scenario.installed is not None:
            self.simulator.register_release(self.release(str(self.scenario.installed), "cluster.installed"))
        await self.simulator.start()
        # as a controller does between sweeps: the worker pools' nodes go on after an update completed
        nodes = NodeRecorder(self.cluster, self.clock)
        await nodes.start()
        started = self.clock.now()
        origin = loop.time()
        self.emit(ScenarioStarted, scenario=self.scenario.name)
        snapshots: dict[float, tuple[datetime, dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]] = {}
        machines: dict[float, list[dict[str, Any]]] = {}
        takers = [asyncio.create_task(self._snapshot_at(origin + at, at, snapshots, machines), name=f"snapshot {at}")
                  for at in snapshot_times(self.scenario)]
        if self.monitoring is not None:
            await self.evaluate_updates()
            takers.append(asyncio.create_task(self._evaluate_every_interval(), name="available updates"))
        try:
            for action in self.scenario.actions:
                await asyncio.sleep(max(0.0, origin + action.at - loop.time()))
                await self.do(action)
            await self._settle_bounded()
        finally:
            for taker in takers:
                taker.cancel()
            self._drop_deferred()
            await nodes.stop()
            await self.simulator.stop()
        finished = self.clock.now()
        # what the replay asked of the cluster, per verb (the simulated operators' requests included): cvo report
        self.emit(ClusterRequests, verbs=dict(sorted(self.cluster.stats.verbs.items())))
        self.emit(ScenarioFinished)
        return ReplayOutcome(
            scenario=self.scenario, events=self.recorder.events, result=self._result(), last=self._last_result(),
            cluster_version=await self.cluster.get(cv_ref()) or {},
            cluster_operators=sorted(await self.cluster.list("config.openshift.io", "ClusterOperator"),
                                     key=lambda o: o["metadata"]["name"]),
            started=started, finished=finished, objects=await self._snapshot(), snapshots=snapshots,
            machines=machines,
        )

    async def _snapshot_at(self, when: float, at: float, into: dict[float, Any],
                           machines: dict[float, list[dict[str, Any]]]) -> None:
        """What ``cvo upgrade status`` reads, as it is ``at`` seconds into the replay."""
        await asyncio.sleep(max(0.0, when - asyncio.get_running_loop().time()))
        into[at] = (self.clock.now(), await self.cluster.get(cv_ref()) or {},
                    sorted(await self.cluster.list("config.openshift.io", "ClusterOperator"),
                           key=lambda o: o["metadata"]["name"]),
                    await self.cluster.get(RECORDS_REF))
        if await self.cluster.serves(f"{MC_GROUP}/v1", "MachineConfigPool"):
            machines[at] = [o for group, kind in ((MC_GROUP, "MachineConfigPool"), ("", "Node"),
                                                  (MC_GROUP, "MachineConfig"))
                            for o in await self.cluster.list(group, kind)]

    async def _settle(self) -> None:
        """After the last action: wait for the running sweep, and for an upgrade deferred behind it."""
        while True:
            run = self.current
            if run is not None and not run.task.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await run.task
            if self._deferred is not None and not self._deferred.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await self._deferred
            if self.current is run:
                return

    def settle_limit(self) -> float:
        """How long after the last action the replay waits for the sweeps to end: a sweep ends within
        ``options.timeout`` (an upgrade deferred behind an install: two of them), so twice that plus
        two intervals is generous.  A sweep that runs longer is a bug; the watchdog keeps the replay
        (and the test suite) from spinning on it forever."""
        return 2 * self.scenario.timeout + 2 * self.scenario.interval

    async def _settle_bounded(self) -> None:
        settle = asyncio.create_task(self._settle(), name="settle")
        done, _ = await asyncio.wait({settle}, timeout=self.settle_limit())
        if settle in done:
            settle.result()
            return
        self.overrun = True
        run = self.current
        self.emit(ScenarioOverrun, limit=self.settle_limit(),
                  version=run.release.version if run is not None else "", kind=run.kind if run is not None else "")
        self._drop_deferred()
        if run is not None and not run.task.done():
            run.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run.task
        settle.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await settle

    async def _snapshot(self) -> dict[Ref, dict[str, Any]]:
        """Every object in the cluster at the end (``list`` does not wake the simulated operators)."""
        objects: dict[Ref, dict[str, Any]] = {}
        for group, kind in sorted({(r.group, r.kind) for r in self.cluster.refs()}):
            for obj in await self.cluster.list(group, kind):
                objects[Ref.of(obj)] = obj
        return objects

    def _last_result(self) -> SweepResult | None:
        if self.last is None or not self.last.task.done() or self.last.task.cancelled():
            return None
        return self.last.task.result()

    def _result(self) -> str:
        if self.overrun:
            return "overrun"
        if self.last is None:
            return "none"
        if self.last.cancelled or self.last.task.cancelled():
            return "cancelled"
        result = self.last.task.result()
        if result.blocked:
            return "blocked"
        if result.completed:
            return "degraded" if result.report_errors else "completed"
        return "timeout"


def _merge_patch(live: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(live)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge_patch(out[key], value)
        else:
            out[key] = value
    return out


def snapshot_times(scenario: Scenario) -> list[float]:
    """The offsets at which ``expect.upgrade-status`` entries look at the cluster (``at``)."""
    times = {parse_duration(spec["at"], "expect.upgrade-status.at")
             for spec in scenario.expect.get("upgrade-status") or [] if isinstance(spec, dict) and "at" in spec}
    return sorted(times)


def replay(scenario: Scenario) -> ReplayOutcome:
    return run_virtual(lambda: Replay(scenario).run())
