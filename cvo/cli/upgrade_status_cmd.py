"""``cvo upgrade status``: ``oc adm upgrade status`` on any backend, or on saved objects (``--from-file``).

Reads the ClusterVersion, the ClusterOperators, machine-config's operator Deployment (when there is one),
the MachineConfigPools, the Nodes and the rendered MachineConfigs the nodes name (when served and readable),
the firing alerts (``--alerts-file``, or Prometheus at ``--metrics-url``) and the update-duration records;
prints :mod:`cvo.status.upgrade_text`.  With records and a release
directory for the target, a forecast from the task graph is added (:mod:`cvo.status.forecast`).  When the
cluster is not updating but a requested release has not been accepted (``ReleaseAccepted`` not True), it says
which and why under oc's "The cluster is not updating." (:mod:`cvo.status.pending_release`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cvo.cli.backend import (
    ClusterOptions,
    add_backend_flags,
    add_saved_flags,
    backend_clock,
    open_reader,
    uses_saved_objects,
)
from cvo.cli.common import EXIT_OK, CommandFailed, UsageError, terminal_width
from cvo.cli.monitoring_flags import ALERTS_PATH, add_monitoring_flags, file_alerts, monitoring_options
from cvo.cli.output import STRUCTURED, TEXT, add_output_flag, dump
from cvo.cluster.api import CLUSTER_OPERATOR, ApiError, ApiErrorKind, ReadOnlyCluster, Ref, cv_ref
from cvo.monitoring.answers import Alert
from cvo.objects import ClusterOperator, ClusterVersion, Deployment, MachineConfig, MachineConfigPool, Node
from cvo.status.node_state import CURRENT_CONFIG, DESIRED_CONFIG
from cvo.status.upgrade_nodes import Machines
from cvo.status.upgrade_text import DETAILS

HELP = "show the progress and health of the cluster's update, like 'oc adm upgrade status'"
DESCRIPTION = (
    "Show where the cluster's update is: how far the control plane has got and for how long, the operators "
    "still updating, health problems and when the update should end, line for line as 'oc adm upgrade "
    "status' prints it, with a forecast from the task graph and the durations of earlier updates."
)
EXAMPLES = """\
Examples:
  # The update in progress on the embedded cluster
  cvo upgrade status

  # Every updating operator and every health insight
  cvo upgrade status --details all

  # From a must-gather, as things stood at a given moment
  cvo upgrade status --from-file must-gather/cluster-scoped-resources --now 2024-05-01T12:00:00Z

  # With the alerts that were firing (a saved answer of Prometheus' /api/v1/alerts)
  cvo upgrade status --from-file must-gather/cluster-scoped-resources --alerts-file alerts.json
"""
MCO_DEPLOYMENT = Ref("apps", "Deployment", "openshift-machine-config-operator", "machine-config-operator")
MC_GROUP = "machineconfiguration.openshift.io"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("upgrade-status", prog="cvo upgrade status", help=HELP, description=DESCRIPTION,
                            epilog=EXAMPLES)
    add_backend_flags(parser, runs_the_clock=False)
    add_saved_flags(parser)
    parser.add_argument("--details", choices=DETAILS, default="none",
                        help="show the long form of a section: operators (the updating ClusterOperators, and the "
                             "forecast's critical path), nodes (every node, not the first ten), health (every "
                             "insight with its description), all")
    parser.add_argument("--alerts-file", metavar="PATH",
                        help="the firing alerts: a saved answer of Prometheus' /api/v1/alerts (JSON); without it "
                             "and without --metrics-url no alert is looked at")
    parser.add_argument("--mock-clusterversion", metavar="PATH", help=argparse.SUPPRESS)  # oc's hidden test flag
    add_monitoring_flags(parser)
    add_output_flag(parser, (TEXT, *STRUCTURED), "cvo upgrade status -o yaml",
                    what="the assessment (text: as oc prints it)")
    parser.set_defaults(func=run)


def _mco_image(deployment: Deployment | None) -> str | None:
    """The image of machine-config's operator container; ``None`` without its Deployment."""
    if deployment is None:
        return None
    container = deployment.container("machine-config-operator")
    return "" if container is None else container.image


_NOT_READABLE = (ApiErrorKind.FORBIDDEN, ApiErrorKind.UNAUTHORIZED, ApiErrorKind.NO_KIND_MATCH)


async def _optional(cluster: ReadOnlyCluster, ref: Ref) -> dict[str, Any] | None:
    try:
        return await cluster.get(ref)
    except ApiError as err:
        if err.kind not in _NOT_READABLE:
            raise
        return None


async def _machines(cluster: ReadOnlyCluster, saved: bool = False) -> Machines | None:
    """The pools, the nodes and the rendered configs the nodes name (status.go ``Run``: oc gets each config a
    node's ``currentConfig`` or ``desiredConfig`` names, not every MachineConfig); ``None`` where pools or
    nodes are not served or not readable.  A config that is not there leaves its nodes' version unknown
    (oc fails the whole command on it).  ``saved``: saved objects, checked against their kinds' schemas when their
    files were read (cvo/cluster/saved/reader.py): not checked again."""
    if not (await cluster.serves(f"{MC_GROUP}/v1", "MachineConfigPool") and await cluster.serves("v1", "Node")):
        return None
    try:
        pools = [MachineConfigPool.read(o, checked_already=saved) for o in await cluster.list(MC_GROUP,
                                                                                             "MachineConfigPool")]
        nodes = [Node.read(o, checked_already=saved) for o in await cluster.list("", "Node")]
    except ApiError as err:
        if err.kind not in _NOT_READABLE:
            raise
        return None
    names = dict.fromkeys(n.metadata.annotations.get(key, "") for n in nodes for key in (CURRENT_CONFIG, DESIRED_CONFIG))
    configs = []
    for name in names:
        if name:
            found = await _optional(cluster, Ref(MC_GROUP, "MachineConfig", "", name))
            if found is not None:
                configs.append(MachineConfig.read(found))
    return Machines(pools, nodes, configs)


@dataclass
class Found:
    """What the assessment reads, in views (:mod:`cvo.objects`); the records as they are (their own reader)."""

    cv: ClusterVersion | None
    cos: list[ClusterOperator]
    now: datetime
    mco: Deployment | None
    records: dict[str, Any] | None
    machines: Machines | None


OC_NANOSECONDS = 368975  # oc's examples_test.go: "add some nanoseconds to exercise rounding"
MOCK_KINDS = ("co", "mcp", "mc", "node")  # status.go Complete: the files beside the ClusterVersion's, required


def _mock(args: argparse.Namespace) -> None:
    """oc's ``--mock-clusterversion NAME-cv.yaml`` (``mockData``): the objects of the files beside it, the
    alerts of ``NAME-alerts.json`` if there, "now" the latest condition change plus oc's nanoseconds."""
    import os

    path = args.mock_clusterversion
    for flag, given in (("--from-file", args.from_file), ("--alerts-file", args.alerts_file),
                        ("--metrics-url", args.metrics_url), ("--now", args.now)):
        if given:
            raise UsageError(f"--mock-clusterversion reads the files beside its own; it cannot be used with {flag}")
    if not path.endswith("-cv.yaml"):
        raise UsageError(f"--mock-clusterversion: {path}: not a NAME-cv.yaml file")
    base = path.removesuffix("-cv.yaml")
    files = [path, *(f"{base}-{kind}.yaml" for kind in MOCK_KINDS)]
    for file in files:
        if not os.path.isfile(file):
            raise UsageError(f"--mock-clusterversion: {file}: no such file")
    deployment = f"{base}-mco-deployment.yaml"
    args.from_file = files + ([deployment] if os.path.isfile(deployment) else [])
    alerts = f"{base}-alerts.json"
    args.alerts_file = alerts if os.path.isfile(alerts) else None


def run(args: argparse.Namespace) -> int:
    from cvo.monitoring.answers import MonitoringError
    from cvo.monitoring.client import Prometheus
    from cvo.payload.limits import printable
    from cvo.runner.durations import RECORDS_REF, cluster_forecast, no_forecast_reason
    from cvo.status.godur import ZERO_TIME, parse_time, to_ns
    from cvo.status.pending_release import pending_data, pending_text
    from cvo.status.upgrade_status import StatusUnavailable, assess, latest_transition
    from cvo.status.upgrade_text import render, to_data

    if args.mock_clusterversion:
        _mock(args)
    backend_options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(backend_options)
    read: list[Found] = []

    async def main() -> None:
        async with open_reader(backend_options, clock) as backend:
            cluster = backend.steady
            cv = await cluster.get(cv_ref())
            cos = sorted((ClusterOperator.read(o) for o in await cluster.list(*CLUSTER_OPERATOR)),
                         key=lambda o: o.name)
            now = clock.now()
            # optional reads: without them (unserved, or not readable with the user's rights) oc's view stays
            mco = await _optional(cluster, MCO_DEPLOYMENT) if await cluster.serves("apps/v1", "Deployment") else None
            records = await _optional(cluster, RECORDS_REF)
            machines = await _machines(cluster, saved=uses_saved_objects(args))
            read.append(Found(None if cv is None else ClusterVersion.read(cv), cos, now,
                              None if mco is None else Deployment.read(mco), records, machines))

    if args.alerts_file and args.metrics_url:
        raise UsageError("--alerts-file and --metrics-url both give the alerts: choose one")
    if uses_saved_objects(args) and args.metrics_url:
        raise UsageError("--metrics-url cannot be used with --from-file (saved objects: nothing is fetched; give "
                         f"--alerts-file with a saved answer of Prometheus' {ALERTS_PATH})")
    monitoring = monitoring_options(args)
    alerts: list[Alert] = list(file_alerts(args.alerts_file)) if args.alerts_file else []
    given_alerts = bool(args.alerts_file) or monitoring is not None
    run_loop(main)
    if monitoring is not None:  # on real time, whatever the cluster's clock
        try:
            alerts.extend(asyncio.run(Prometheus(monitoring).alerts()))
        except MonitoringError as err:  # status.go: the rest of the command works without them
            print(f"note: no alerts in 'Update Health': {printable(str(err), 300)}", file=sys.stderr)
    found = read[0]
    now = to_ns(found.now)
    given = getattr(args, "now", None)
    exact = parse_time(given) if given is not None and uses_saved_objects(args) else None
    if exact is not None:
        now = exact  # --now to the nanosecond (the clock keeps microseconds)
    if args.mock_clusterversion:
        latest = latest_transition(found.cv, found.cos)
        now = (ZERO_TIME if latest is None else latest) + OC_NANOSECONDS
    try:
        status = assess(found.cv, found.cos, now, _mco_image(found.mco), found.machines,
                        alerts if given_alerts else None)
    except StatusUnavailable as err:
        raise CommandFailed(str(err)) from None
    forecast = cluster_forecast(found.cv.body if found.cv else None, [dict(co.body) for co in found.cos],
                                found.records, now, machines=found.machines) if status.updating else None
    if args.output == TEXT:
        sys.stdout.write(render(status, args.details, forecast))
        if status.pending is not None:  # oc stops at "not updating"; cvo says what was asked for and why it waits
            sys.stdout.write("\n" + pending_text(status.pending, terminal_width(sys.stdout)))
        why = "" if forecast is not None or not status.updating else no_forecast_reason(
            found.cv.body if found.cv else None, found.records)
        if why:  # on stderr: stdout stays exactly what oc prints for the same objects
            print(f"note: no forecast: {why}", file=sys.stderr)
    else:
        doc = to_data(status, forecast)
        if not status.updating:  # a requested release not accepted, or null
            doc["pendingRelease"] = pending_data(status.pending)
        sys.stdout.write(dump(doc, args.output))
    return EXIT_OK
