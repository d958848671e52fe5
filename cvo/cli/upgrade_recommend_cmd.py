"""``cvo upgrade recommend``: ``oc adm upgrade recommend``, the update precheck, on any backend or saved objects.

Reads the ClusterVersion and the firing alerts (``--alerts-file``: Prometheus' ``/api/v1/alerts`` answer, read
strictly by :mod:`cvo.status.recommend_alerts`; or the CVO's monitoring flags, :mod:`cvo.cli.monitoring_flags`:
``Prometheus(...).alerts()``), prints :func:`cvo.status.recommend.recommend`'s text.  ``--mock-clusterversion``
is oc's hidden test flag (the ClusterVersion file; its alerts in the ``-alerts.json`` beside it, when there).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from typing import TYPE_CHECKING

from cvo.cli.backend import (
    ClusterOptions,
    Reader,
    add_backend_flags,
    add_saved_flags,
    backend_clock,
    open_reader,
)
from cvo.cli.common import EXIT_FAILED, EXIT_OK, CommandFailed, UsageError, print_error
from cvo.cli.monitoring_flags import ALERTS_PATH, add_monitoring_flags, file_alerts, monitoring_options
from cvo.cluster.api import cv_ref
from cvo.objects import ClusterVersion

if TYPE_CHECKING:
    from cvo.monitoring.client import MonitoringOptions
    from cvo.status.recommend import AcceptableCondition

HELP = "show the updates the cluster can take and the issues to weigh first, like 'oc adm upgrade recommend'"
DESCRIPTION = (
    "Display cluster update recommendations, as 'oc adm upgrade recommend' does: the ClusterVersion's Failing "
    "and Progressing conditions, the firing alerts that matter to an update (critical ones, PodDisruptionBudget, "
    "image pulls, nodes, those labelled openShiftUpdatePrecheck), then the recent updates of each minor version "
    "and their known issues. Read-only. With --version, the context of one target, and exit 1 unless every "
    "issue found was named in --accept. Without alert data (no --alerts-file, no --metrics-url, or a Prometheus "
    "that does not answer) the alert check is recommended/Alert=Unknown."
)
EXAMPLES = """\
Examples:
  # The recent updates of each minor version, and what to weigh before taking one
  cvo upgrade recommend --metrics-url https://thanos-querier.example:9091 --metrics-token-file token

  # Every known update, older releases too
  cvo upgrade recommend --show-outdated-releases

  # One target: exit 0 only if every issue that applies was accepted (a script's gate)
  cvo upgrade recommend --version 4.16.32 --accept Failing,AlertNoData --quiet

  # From saved objects and a saved answer of Prometheus' /api/v1/alerts
  cvo upgrade recommend --from-file clusterversion.yaml --alerts-file alerts.json
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("upgrade-recommend", prog="cvo upgrade recommend", help=HELP, description=DESCRIPTION,
                            epilog=EXAMPLES)
    parser.add_argument("--show-outdated-releases", action="store_true",
                        help="display additional older releases.  These releases may be exposed to known issues "
                             "which have been fixed in more recent releases.  But all updates will contain fixes not "
                             "present in your current release.")
    parser.add_argument("--version", dest="target_version", default="", metavar="VERSION",
                        help="select a particular target release to display by version")
    parser.add_argument("--quiet", action="store_true",
                        help="when --quiet is true and --version is set, only print unaccepted issue names")
    parser.add_argument("--accept", action="append", default=[], metavar="A,B",
                        help="comma-delimited names for issues that you find acceptable.  With --version, any "
                             "unaccepted issues will result in a non-zero exit code.")
    alerts = parser.add_argument_group("alerts")
    alerts.add_argument("--alerts-file", metavar="PATH",
                        help="the firing alerts: a saved answer of Prometheus' /api/v1/alerts (JSON)")
    alerts.add_argument("--mock-clusterversion", metavar="PATH", help=argparse.SUPPRESS)  # oc's hidden test flag
    add_monitoring_flags(parser, alerts=True)
    add_backend_flags(parser)
    add_saved_flags(parser)
    parser.set_defaults(func=run)


# --- the alert check ------------------------------------------------------------------------------------


async def alert_check(args: argparse.Namespace, monitoring: MonitoringOptions | None) -> list[AcceptableCondition]:
    """precheck.go's checks (alerts.go ``options.alerts``): the conditions from the firing alerts, or
    ``recommended/Alert=Unknown`` without alert data."""
    from cvo.payload.limits import printable
    from cvo.status.recommend import alert_conditions, no_alert_data, no_test_data

    if args.mock_clusterversion:  # oc's mockData.load: the alerts beside the ClusterVersion, if there
        path = args.mock_clusterversion.replace("-cv.yaml", "-alerts.json", 1)
        return alert_conditions(file_alerts(path)) if os.path.lexists(path) else [no_test_data(path)]
    if args.alerts_file:
        return alert_conditions(file_alerts(args.alerts_file))
    if monitoring is None:
        if args.from_file:
            return [no_alert_data("saved objects (--from-file) hold no alerts; give --alerts-file with a saved "
                                  f"answer of Prometheus' {ALERTS_PATH}")]
        return [no_alert_data("no --metrics-url or --alerts-file to read the firing alerts from")]
    from cvo.monitoring.answers import MonitoringError
    from cvo.monitoring.client import Prometheus

    try:
        return alert_conditions(await Prometheus(monitoring).alerts())
    except MonitoringError as err:
        return [no_alert_data(f"Prometheus at {printable(monitoring.url, 200)}: {printable(str(err), 300)}")]


# --- the command ----------------------------------------------------------------------------------------


def accepted(values: list[str]) -> list[str]:
    """``--accept``, as pflag's ``StringSlice`` reads it: each value a line of CSV, repeated flags added up."""
    names: list[str] = []
    for value in values:
        if value:
            names.extend(next(csv.reader([value])))
    return names


async def refresh_available_updates(options: ClusterOptions, reader: Reader,
                                    monitoring: MonitoringOptions | None = None) -> None:
    """Fetch the graph and write the available and conditional updates as the controller's
    ``syncAvailableUpdates`` would, when no controller does it: the listing's retrieval
    (:func:`cvo.cli.upgrade_list_cmd.refresh_available_updates`), PromQL risks asked of ``--metrics-url`` as a
    controller given that flag asks them; saved objects are never refreshed."""
    from cvo.cli.upgrade_list_cmd import refresh_available_updates as refresh

    await refresh(options, reader, monitoring)


def _check_flags(args: argparse.Namespace) -> None:
    if args.mock_clusterversion:
        for flag, given in (("--from-file", args.from_file), ("--alerts-file", args.alerts_file),
                            ("--metrics-url", args.metrics_url)):
            if given:
                raise UsageError(f"--mock-clusterversion reads the alerts beside its file; it cannot be used with {flag}")
        args.from_file = [args.mock_clusterversion]
    if args.from_file and args.metrics_url:
        raise UsageError("--metrics-url cannot be used with --from-file (saved objects: nothing is fetched; give "
                         "--alerts-file with a saved answer of Prometheus' /api/v1/alerts)")
    if args.alerts_file and args.metrics_url:
        raise UsageError("--alerts-file and --metrics-url both give the alerts: choose one")


def run(args: argparse.Namespace) -> int:
    from cvo.status.recommend import OptionsError, complete, recommend

    _check_flags(args)
    monitoring = monitoring_options(args)
    try:
        options = complete(args.target_version, quiet=args.quiet, show_outdated_releases=args.show_outdated_releases,
                           accept=accepted(args.accept))
    except OptionsError as err:
        raise CommandFailed(str(err)) from None  # oc: kcmdutil.CheckErr, exit 1
    backend_options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(backend_options)
    found: list[ClusterVersion | None] = []
    checked: list[AcceptableCondition] = []

    async def main() -> None:
        async with open_reader(backend_options, clock) as reader:
            await refresh_available_updates(backend_options, reader, monitoring)
            cv = await reader.steady.get(cv_ref())
        found.append(None if cv is None else ClusterVersion.read(cv, source=reader.where))
        if cv is not None:  # oc: without a ClusterVersion, Run returns before the precheck
            checked.extend(await alert_check(args, monitoring))

    run_loop(main)
    result = recommend(found[0], checked, options)
    for to_err, text in result.writes:
        stream = sys.stderr if to_err else sys.stdout
        stream.write(text)
        stream.flush()  # oc's two streams, in the order it writes them
    if result.error is not None:
        print_error(result.error)
        return EXIT_FAILED
    return EXIT_OK
