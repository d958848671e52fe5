"""``cvo upgrade status``: ``oc adm upgrade status`` on any backend, or on saved objects (``--from-file``).

Reads the ClusterVersion, the ClusterOperators, machine-config's operator Deployment (when there is one)
and the update-duration records; prints :mod:`cvo.status.upgrade_text`.  With records and a release
directory for the target, a forecast from the task graph is added (:mod:`cvo.status.forecast`).  When the
cluster is not updating but a requested release has not been accepted (``ReleaseAccepted`` not True), it says
which and why under oc's "The cluster is not updating." (:mod:`cvo.status.pending_release`).
"""

from __future__ import annotations

import argparse
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
from cvo.cli.common import EXIT_OK, CommandFailed, terminal_width
from cvo.cli.output import STRUCTURED, TEXT, add_output_flag, dump
from cvo.cluster.api import CLUSTER_OPERATOR, ApiError, ApiErrorKind, ReadOnlyCluster, Ref, cv_ref
from cvo.objects import ClusterOperator, ClusterVersion, Deployment
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
"""
MCO_DEPLOYMENT = Ref("apps", "Deployment", "openshift-machine-config-operator", "machine-config-operator")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("upgrade-status", prog="cvo upgrade status", help=HELP, description=DESCRIPTION,
                            epilog=EXAMPLES)
    add_backend_flags(parser, runs_the_clock=False)
    add_saved_flags(parser)
    parser.add_argument("--details", choices=DETAILS, default="none",
                        help="show the long form of a section: operators (the updating ClusterOperators, and the "
                             "forecast's critical path), health (every insight with its description), all")
    add_output_flag(parser, (TEXT, *STRUCTURED), "cvo upgrade status -o yaml",
                    what="the assessment (text: as oc prints it)")
    parser.set_defaults(func=run)


def _mco_image(deployment: Deployment | None) -> str | None:
    """The image of machine-config's operator container; ``None`` without its Deployment."""
    if deployment is None:
        return None
    container = deployment.container("machine-config-operator")
    return "" if container is None else container.image


async def _optional(cluster: ReadOnlyCluster, ref: Ref) -> dict[str, Any] | None:
    try:
        return await cluster.get(ref)
    except ApiError as err:
        if err.kind not in (ApiErrorKind.FORBIDDEN, ApiErrorKind.UNAUTHORIZED, ApiErrorKind.NO_KIND_MATCH):
            raise
        return None


@dataclass
class Found:
    """What the assessment reads, in views (:mod:`cvo.objects`); the records as they are (their own reader)."""

    cv: ClusterVersion | None
    cos: list[ClusterOperator]
    now: datetime
    mco: Deployment | None
    records: dict[str, Any] | None


def run(args: argparse.Namespace) -> int:
    from cvo.runner.durations import RECORDS_REF, cluster_forecast, no_forecast_reason
    from cvo.status.godur import parse_time, to_ns
    from cvo.status.pending_release import pending_data, pending_text
    from cvo.status.upgrade_status import StatusUnavailable, assess
    from cvo.status.upgrade_text import render, to_data

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
            read.append(Found(None if cv is None else ClusterVersion.read(cv), cos, now,
                              None if mco is None else Deployment.read(mco), records))

    run_loop(main)
    found = read[0]
    now = to_ns(found.now)
    given = getattr(args, "now", None)
    exact = parse_time(given) if given is not None and uses_saved_objects(args) else None
    if exact is not None:
        now = exact  # --now to the nanosecond (the clock keeps microseconds)
    try:
        status = assess(found.cv, found.cos, now, _mco_image(found.mco))
    except StatusUnavailable as err:
        raise CommandFailed(str(err)) from None
    forecast = cluster_forecast(found.cv.body if found.cv else None, [dict(co.body) for co in found.cos],
                                found.records, now) if status.updating else None
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
