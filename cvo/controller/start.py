"""``cvo run``'s wiring: options in, one replica running until cancelled (``pkg/start/start.go``).

The command line parses the flags into :class:`Options` and hands over, in a :class:`Context`, what only it
may choose: the clock, how to open the cluster (a backend), where the events go and, on the embedded
cluster, the simulated operators and how to take its sweep lock.  :func:`run` does the rest, as the CVO's
``Options.Run`` does: the metrics endpoint, the Lease's namespace, the elector, the release catalogue, a
controller for every term this replica leads, and what runs beside it while it leads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from cvo.clock import Clock
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref
from cvo.cluster.persist import Budget, steady
from cvo.controller.http import Endpoint, Health
from cvo.controller.lease import LEASE_NAMESPACE, LeaderElector, LeaseTimings, lease_ref
from cvo.controller.loop import Controller, ControllerOptions
from cvo.controller.metrics import MetricsReporter, Snapshot
from cvo.controller.replica import Replica
from cvo.images.pull import PullOptions
from cvo.log import get_logger
from cvo.monitoring.client import MonitoringOptions, Prometheus
from cvo.operators.behaviour import Behaviours
from cvo.operators.simulated import OperatorSimulator
from cvo.payload.filters import ApplyFilter, LoadFilter
from cvo.payload.loader import Release
from cvo.runner.available_updates import RefreshOptions
from cvo.runner.blockers import risk_sources
from cvo.runner.events import Fanout, Reporter
from cvo.runner.feature_gates import read_gates
from cvo.runner.releases import FILE_SCHEME, Catalogue, Releases, default_loader
from cvo.runner.retrieve import Retriever
from cvo.updates.conditions import Registry
from cvo.updates.featuregates import cvo_gates
from cvo.updates.poll import PollState

log = get_logger("cvo.controller")


@dataclass(frozen=True)
class Options:
    """How the controller runs (``pkg/start/start.go`` ``Options``): ``cvo run``'s flags, checked."""

    identity: str  # --identity: this replica's holder identity on the Lease
    interval: float = 180.0  # --interval: the reconcile interval; apply timeouts and back-off derive from it
    timings: LeaseTimings = field(default_factory=LeaseTimings)  # --lease-duration, --renew-deadline, --retry-period
    lease_namespace: str = LEASE_NAMESPACE  # --lease-namespace: where the Lease named 'version' lives
    own_release: Path | None = None  # --release DIR: what to install into a cluster without a release
    own_image: str = ""  # --release IMAGE: the same, as a pull spec (pulled when needed)
    pull: PullOptions | None = None  # how release images are pulled (registry flags); None: the defaults
    releases: Path | None = None  # --releases DIR: the catalogue spec.desiredUpdate.version is looked up in
    load_filter: LoadFilter | None = None  # the payload selection flags: what is read of a release
    capabilities: ApplyFilter | None = None  # --capabilities, --feature-gates: what the sweeps apply
    listen: tuple[str, int] | None = None  # --listen HOST:PORT: /healthz, /readyz and /metrics; None: nowhere
    updates: RefreshOptions | None = None  # --update-service and its options: how available updates are polled
    monitoring: MonitoringOptions | None = None  # --metrics-url and its options: PromQL risks, firing alerts


class Connected(Protocol):
    """The cluster as the command line opened it (:class:`cvo.cli.backend.Backend`)."""

    @property
    def cluster(self) -> Cluster: ...

    @property
    def description(self) -> str: ...


class Lock(Protocol):
    """A lock held while leading (the embedded cluster's sweep lock)."""

    def release(self) -> None: ...


@dataclass
class Context:
    """What the command line chose for the controller (``pkg/start/start.go`` ``Context``: its clients)."""

    clock: Clock  # the cluster's clock (virtual on the embedded cluster, at its speed)
    open_cluster: Callable[[], AbstractAsyncContextManager[Connected]]  # connects, riding out any outage
    reporter: Reporter  # the log, and --events
    # The embedded cluster only: the simulated operators that run while leading, and the sweep lock taken
    # before (given the elector: the lock is waited for only while the lease is held; None: lost first).
    simulate: Behaviours | None = None
    take_lock: Callable[[LeaderElector], Awaitable[Lock | None]] | None = None


class EndpointFailed(Exception):
    """The endpoint cannot listen where it was told (the port is taken, or not this process's to bind)."""


async def run(options: Options, context: Context) -> None:
    """One replica until cancelled: observe, lead when elected (:class:`~cvo.controller.replica.Replica`)."""
    snapshot, health = Snapshot(), Health()
    async with _serving(options.listen, snapshot, health) as endpoint, context.open_cluster() as backend:
        log.info("controller", backend=backend.description, identity=options.identity,
                 listen=f"{endpoint.address[0]}:{endpoint.address[1]}" if endpoint else "nowhere",
                 lease=f"{options.lease_namespace}/version")
        await ensure_namespace(steady(backend.cluster, Budget.of(None)), options.lease_namespace)
        elector = LeaderElector(backend.cluster, context.clock, options.identity, options.timings,
                                lease_ref(options.lease_namespace))
        leading = _Leading(context, elector)
        own = FILE_SCHEME + str(options.own_release.resolve()) if options.own_release else options.own_image
        retriever = Retriever(options.pull or PullOptions(), own_image=own)
        releases = Releases(Catalogue(options.releases), default_loader(options.load_filter), retriever)
        reporter = Fanout(context.reporter, MetricsReporter(snapshot))
        # The risks of conditional updates (pkg/cvo/cvo.go New: the condition registry over the cluster's
        # Prometheus, optr.risks = the firing alerts and optr.upgradeable) and the CVO's feature gates, read once at
        # start as pkg/start/start.go processInitialFeatureGate reads them.
        prometheus = Prometheus(options.monitoring) if options.monitoring is not None else None
        selection = options.load_filter or LoadFilter()
        try:
            gates, _ = await read_gates(steady(backend.cluster, Budget.of(None)), "", feature_set=selection.feature_set,
                                        enabled=selection.feature_gates)
        except ApiError as err:  # not readable with this account's rights: the flags' gates, and say so
            log.warning("the FeatureGate is not readable; the feature gates are the flags'", error=str(err))
            gates = cvo_gates(None, "", feature_set=selection.feature_set, enabled=selection.feature_gates)
        snapshot.update_service = options.updates.update_service if options.updates is not None else ""
        snapshot.accept_risks = gates.accept_risks

        def retrieved(state: PollState) -> None:  # cluster_version_operator_update_retrieval_timestamp_seconds
            when = state.value.last_sync_or_config_change if state.value is not None else None
            snapshot.set_update_retrieval(when.timestamp() if when is not None else None)

        controller_options = ControllerOptions(interval=options.interval, capabilities=options.capabilities,
                                               own_image=own, updates=options.updates,
                                               registry=Registry(prometheus, context.clock), gated=gates.accept_risks,
                                               on_updates=retrieved)

        def make_controller(fenced: Cluster) -> Controller:
            with_sources = dataclasses.replace(controller_options, risk_sources=risk_sources(fenced, prometheus))
            return Controller(fenced, context.clock, releases, reporter, with_sources, on_release=leading.on_release)

        await Replica(backend.cluster, elector, make_controller, snapshot, health, leading.start,
                      leading.stop).run()


@asynccontextmanager
async def _serving(listen: tuple[str, int] | None, snapshot: Snapshot, health: Health) -> AsyncIterator[Endpoint | None]:
    """The probes' and metrics' endpoint, listening before the cluster is opened (a bad address fails at once)."""
    if listen is None:
        yield None
        return
    try:
        endpoint = Endpoint(listen[0], listen[1], snapshot, health)
    except OSError as err:
        raise EndpointFailed(err.strerror or str(err)) from None
    endpoint.start()
    try:
        yield endpoint
    finally:
        endpoint.close()


class _Leading:
    """What runs beside the controller while this replica leads: the sweep lock, the simulated operators."""

    def __init__(self, context: Context, elector: LeaderElector) -> None:
        self.context = context
        self.elector = elector
        self.known: list[Release] = []  # every release a controller involved, for the next simulator
        self.simulator: OperatorSimulator | None = None
        self.lock: Lock | None = None

    def on_release(self, release: Release) -> None:
        if all(r.image != release.image for r in self.known):
            self.known.append(release)
            if self.simulator is not None:
                self.simulator.register_release(release)

    async def start(self, fenced: Cluster) -> None:
        if self.context.take_lock is not None:
            self.lock = await self.context.take_lock(self.elector)
        if self.context.simulate is not None:
            simulator = self.simulator = OperatorSimulator(fenced, self.context.clock, self.context.simulate)
            for release in self.known:
                simulator.register_release(release)
            await simulator.start()

    async def stop(self) -> None:
        simulator, self.simulator = self.simulator, None
        if simulator is not None:
            await simulator.stop()
        lock, self.lock = self.lock, None
        if lock is not None:
            lock.release()


async def ensure_namespace(cluster: Cluster, namespace: str) -> None:
    """The Lease's namespace (``cvo bootstrap`` creates it on a real cluster; the embedded one may lack it)."""
    try:
        if await cluster.get(Ref("", "Namespace", "", namespace)) is None:
            await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    except ApiError as err:
        if err.kind not in (ApiErrorKind.ALREADY_EXISTS, ApiErrorKind.FORBIDDEN):
            raise  # Forbidden: a least-privilege service account; the namespace is the manifests' to create
