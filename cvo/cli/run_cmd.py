"""``cvo run``: the controller, as the CVO runs in a cluster (flags, the backend, signals; the wiring is
:mod:`cvo.controller.start`, the loop :mod:`cvo.controller.loop`).

Exit codes: it runs until stopped.  SIGTERM (a pod being deleted): the sweep in progress is cancelled,
the requests in flight finish, the lease is released, exit 0.  SIGINT: the same, exit 130.  Bad flags
or a bad release directory: 2.  API errors never end it.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
import socket
import sys
import uuid
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from cvo.cli.backend import (
    Backend,
    ClusterOptions,
    add_backend_flags,
    add_behaviour_flags,
    backend_clock,
    check_speed,
    controller_lock_record,
    load_behaviours,
    open_backend,
    state_path,
)
from cvo.cli.common import EXIT_OK, OutputOptions, UsageError, payload_options
from cvo.cli.images import ImageFlags, check_image, is_image
from cvo.cli.monitoring_flags import add_monitoring_flags, monitoring_options
from cvo.cli.progress import LogReporter
from cvo.cli.signals import Interrupted, cancelled_by_signals
from cvo.cli.sweep_cmd import MIN_INTERVAL, _add_selection
from cvo.cli.update_service_flags import add_update_service_flags, refresh_options
from cvo.cluster.persist import Budget
from cvo.log import configure, get_logger
from cvo.operators.behaviour import Behaviours, parse_duration
from cvo.report.events_io import EventsError, EventsWriter
from cvo.runner.events import Fanout

if TYPE_CHECKING:  # cvo run imports the controller when it runs (cvo --help imports every command)
    from cvo.cluster.embedded.sweep_lock import SweepLock
    from cvo.controller import start
    from cvo.controller.lease import LeaderElector

HELP = "run the controller: watch the ClusterVersion and act on it until stopped (leader-elected)"
DESCRIPTION = """\
Run cvo as the Cluster Version Operator runs: a long-lived controller.

It watches the ClusterVersion (spec.desiredUpdate, overrides, capabilities), the ClusterOperators and
OperatorConditions, and drives the sync worker: it installs when the cluster has no completed
release (the release being installed, else spec.desiredUpdate, else --release), updates through the
upgrade gates when spec.desiredUpdate differs from the current release (a new desiredUpdate in the
middle of an update retargets it), and once complete re-applies the release every --interval,
repairing drift.  It never exits on API errors: it reports them in conditions and logs and retries
with the CVO's back-off.

Releases are images, as on OpenShift: spec.desiredUpdate.image a pull spec (REGISTRY/REPO@sha256:...,
oci:DIR), pulled with the registry flags and the cluster's pull secret (openshift-config/pull-secret),
and verified against the running release's keys as the CVO verifies them (docs/images.md).  Directories
work too: spec.desiredUpdate.image file://DIR, or spec.desiredUpdate.version looked up in the
--releases catalogue (its sub-directories, by release-metadata version).  A desired release that
cannot be pulled, verified or found is reported as ReleaseAccepted=False (reason RetrievePayload),
and the controller keeps running.

Replicas elect a leader on the Lease openshift-cluster-version/version (coordination.k8s.io/v1) with
client-go's rules; only the leader writes, and one that loses the lease stops writing at once.
Every replica serves /healthz, /readyz and /metrics (the CVO's metric names) on --listen.

Set the target with 'cvo upgrade --to-image IMAGE' or '--to DIR' (which only set spec.desiredUpdate and
follow the status while a controller holds the lease) or 'kubectl patch clusterversion version --type
merge -p {"spec":{"desiredUpdate":{"image":"quay.example.com/ocp/release@sha256:..."}}}'.

Backends: the embedded cluster (--state FILE, shared by processes; its simulated operators run in the
leader; the clock runs at --speed, default real time), a kubeconfig (--kubeconfig/--context), or the
pod's service account (--in-cluster, the default when KUBERNETES_SERVICE_HOST is set and no other
backend is named).  SIGTERM releases the lease and exits 0."""


EXAMPLES = """\
Examples:
  # A controller for the embedded cluster: it installs 4.16.0, then re-applies it every 3 minutes
  cvo run --release payloads/demo-4.16.0

  # ... and from another terminal, ask it for an update and follow it
  cvo upgrade --to payloads/demo-4.16.3

  # Updates asked for by version alone are looked up in a directory of releases
  cvo run --release payloads/demo-4.16.0 --releases payloads

  # Its own release as an image; updates are pulled from the registry spec.desiredUpdate.image names
  cvo run --release oci:releases:4.16.0

  # In a pod, with its service account, pulling from a plain-HTTP registry; metrics on another port
  cvo run --in-cluster --release kind-registry:5000/cvo/release:4.16.0 --insecure-registry --listen 0.0.0.0:9100
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("run", help=HELP, description=DESCRIPTION, epilog=EXAMPLES,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--release", dest="own_release", default=None, metavar="RELEASE",
                        help="the release to install into a cluster that has none (the CVO's own payload): a "
                             "release directory or a release image")
    parser.add_argument("--releases", type=Path, default=None, metavar="DIR",
                        help="a catalogue of release directories: spec.desiredUpdate.version is looked up in it")
    parser.add_argument("--interval", default="3m", metavar="DURATION",
                        help="reconcile interval: a completed release is re-applied this often; apply timeouts "
                             "and back-off derive from it (default 3m; at least 1s)")
    parser.add_argument("--listen", default="127.0.0.1:9099", metavar="HOST:PORT",
                        help="serve /healthz, /readyz and /metrics here (default 127.0.0.1:9099, the CVO's "
                             "metrics port; port 0 picks a free one; 'none' serves nothing)")
    election = parser.add_argument_group("leader election (client-go's; the defaults are the CVO's)")
    election.add_argument("--lease-duration", default="137s", metavar="DURATION",
                          help="how long a replica waits after the lease last changed before taking it over")
    election.add_argument("--renew-deadline", default="107s", metavar="DURATION",
                          help="how long the leader keeps trying to renew before it stops writing")
    election.add_argument("--retry-period", default="26s", metavar="DURATION",
                          help="how often to try to acquire or renew the lease")
    election.add_argument("--identity", default=None, metavar="NAME",
                          help="this replica's holder identity (default: HOSTNAME_UUID, as the CVO)")
    election.add_argument("--lease-namespace", default="openshift-cluster-version", metavar="NS",
                          help="the namespace of the Lease named 'version' (default openshift-cluster-version)")
    parser.add_argument("--events", type=Path, default=None, metavar="FILE",
                        help="append every event of the controller's sweeps to FILE as JSON lines, each with the "
                             "number of its sweep (counted over the whole file), for 'cvo report FILE --sweep N' "
                             "(docs/report.md); the file grows with every sweep: rotate it by renaming it and "
                             "restarting")
    add_update_service_flags(parser)
    parser.add_argument("--in-cluster", action="store_true",
                        help="use the pod's service account (KUBERNETES_SERVICE_HOST, the token and CA in "
                             "/var/run/secrets/kubernetes.io/serviceaccount or $CVO_SERVICEACCOUNT_DIR)")
    _add_selection(parser)
    add_backend_flags(parser)
    add_behaviour_flags(parser)
    add_monitoring_flags(parser)  # PromQL risks of conditional updates (cli/monitoring_flags.py)
    parser.set_defaults(func=run)


def _duration(text: str, flag: str, minimum: float = 0.0) -> float:
    try:
        return parse_duration(text, flag, minimum=minimum)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _cluster_options(args: argparse.Namespace) -> ClusterOptions:
    """The cluster flags; ``--in-cluster`` is the default in a pod (when no other backend is named), and a
    controller on the embedded cluster runs in real time unless told otherwise."""
    from cvo.cluster.kube.config import in_cluster_available

    cluster = ClusterOptions.from_args(args)
    named = cluster.state is not None or cluster.kubeconfig or cluster.context
    if cluster.in_cluster and named:
        raise UsageError("--in-cluster cannot be combined with --state, --kubeconfig or --context")
    if not named and not cluster.in_cluster and in_cluster_available():
        cluster = dataclasses.replace(cluster, in_cluster=True)
    if not cluster.real and cluster.speed is None:
        cluster = dataclasses.replace(cluster, speed=1.0)
    return cluster


def _options(args: argparse.Namespace, cluster: ClusterOptions) -> tuple[start.Options, Behaviours]:
    """The controller's options and the simulated operators' behaviours, from the flags (a :class:`UsageError`
    for a bad one), in the order they are checked: durations, the lease's timings, --listen, the release
    directories, --speed, --identity, --operators, the payload selection."""
    from cvo.controller import start
    from cvo.controller.http import ListenError, parse_listen
    from cvo.controller.lease import LeaseTimings

    interval = _duration(args.interval, "--interval", MIN_INTERVAL)
    timings = LeaseTimings(_duration(args.lease_duration, "--lease-duration"),
                           _duration(args.renew_deadline, "--renew-deadline"),
                           _duration(args.retry_period, "--retry-period"))
    if (problem := timings.problem()) is not None:
        raise UsageError(f"--lease-duration/--renew-deadline/--retry-period: {problem}")
    listen = None
    if args.listen != "none":
        try:
            listen = parse_listen(args.listen)
        except ListenError as err:
            raise UsageError(str(err)) from None
    own_release, own_image = None, ""
    if args.own_release is not None:
        if is_image(args.own_release):
            own_image = args.own_release
            check_image(own_image, "--release")
        else:
            own_release = Path(args.own_release)
    for flag, path in (("--release", own_release), ("--releases", args.releases)):
        if path is not None and not path.is_dir():
            raise UsageError(f"{flag} {path}: not a directory")
    check_speed(cluster)
    if args.identity is not None and not args.identity.strip():
        raise UsageError("--identity: empty")
    behaviours = load_behaviours(cluster)
    updates = refresh_options(args, cluster.real, interval)
    payload = payload_options(args)
    options = start.Options(identity=args.identity or f"{socket.gethostname()}_{uuid.uuid4()}", interval=interval,
                         timings=timings, lease_namespace=args.lease_namespace, own_release=own_release,
                         own_image=own_image, pull=ImageFlags.from_args(args, timeout=600.0).pull_options(),
                         releases=args.releases, load_filter=payload.load_filter,
                         capabilities=payload.apply_filter, listen=listen, updates=updates,
                         monitoring=monitoring_options(args))
    return options, behaviours


def run(args: argparse.Namespace) -> int:
    from cvo.controller import start

    cluster = _cluster_options(args)
    monitoring_options(args)  # bad monitoring flags are usage errors before anything starts
    options, behaviours = _options(args, cluster)
    clock, run_loop = backend_clock(cluster)
    events = _events_writer(args.events)
    output = OutputOptions.from_args(args)
    configure(output.log_format, max(output.verbose, 1))  # the controller's events are its log
    path = state_path(cluster)

    async def take_lock(elector: LeaderElector) -> start.Lock | None:
        assert path is not None
        return await _sweep_lock(path, options.identity, elector)

    def open_cluster() -> AbstractAsyncContextManager[Backend]:  # riding out any outage
        return open_backend(cluster, clock, simulate_operators=False, create=True, budget=Budget.of(None),
                            say_where=True)

    context = start.Context(clock, open_cluster, Fanout(LogReporter(), *([events] if events else [])),
                            simulate=None if cluster.real else behaviours,
                            take_lock=take_lock if path is not None else None)

    async def controller() -> None:
        try:
            await start.run(options, context)
        except start.EndpointFailed as err:
            raise UsageError(f"--listen {args.listen}: {err}") from None

    try:
        run_loop(lambda: cancelled_by_signals(controller))
    except Interrupted as stopped:
        if stopped.signum == signal.SIGTERM:
            print("cvo run: terminated; the lease is released", file=sys.stderr)
            return EXIT_OK
        raise
    finally:
        if events is not None:
            events.close()
    return EXIT_OK


def _events_writer(path: Path | None) -> EventsWriter | None:
    """``--events FILE``, opened for appending before anything runs: a path that cannot be written is a usage
    error."""
    if path is None:
        return None
    try:
        return EventsWriter(path, append=True).open()
    except EventsError as err:
        raise UsageError(str(err)) from None


async def _sweep_lock(path: Path, identity: str, elector: LeaderElector) -> SweepLock | None:
    """The embedded cluster's sweep lock, for as long as this replica leads: a foreground ``cvo upgrade`` then
    becomes the controller's client, and ``install``/``reconcile`` are refused, instead of sweeping beside it.
    A foreground sweep already running is waited for (the lease is renewed meanwhile); ``None`` if the lease
    is lost first."""
    from cvo.cluster.embedded.sweep_lock import SweepLock, SweepLockHeld

    log = get_logger("cvo.cli")
    said = False
    while elector.may_write():
        try:
            return SweepLock.acquire(path, controller_lock_record(identity))
        except SweepLockHeld as held:
            if not said:
                log.info("controller.waiting_for_sweep", message=str(held))
                said = True
        await asyncio.sleep(SWEEP_LOCK_RETRY)
    return None


SWEEP_LOCK_RETRY = 1.0  # seconds between tries for the sweep lock a foreground command holds
