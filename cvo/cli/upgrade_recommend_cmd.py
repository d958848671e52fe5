"""``cvo upgrade recommend``: ``oc adm upgrade recommend``, the update precheck, on any backend or saved objects.

Reads the ClusterVersion and the firing alerts (``--alerts-file``: Prometheus' ``/api/v1/alerts`` answer; or
``--metrics-url``: that API asked), prints :func:`cvo.status.recommend.recommend`'s text.  ``--mock-clusterversion``
is oc's hidden test flag (the ClusterVersion file; its alerts in the ``-alerts.json`` beside it, when there).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from dataclasses import dataclass
from typing import Any

from cvo.cli.backend import (
    ClusterOptions,
    Reader,
    add_backend_flags,
    add_saved_flags,
    backend_clock,
    open_reader,
)
from cvo.cli.common import EXIT_FAILED, EXIT_OK, CommandFailed, UsageError, print_error
from cvo.cluster.api import cv_ref

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
ALERTS_PATH = "/api/v1/alerts"


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
    _add_monitoring_flags(alerts)
    alerts.add_argument("--mock-clusterversion", metavar="PATH", help=argparse.SUPPRESS)  # oc's hidden test flag
    add_backend_flags(parser)
    add_saved_flags(parser)
    parser.set_defaults(func=run)


# --- until cvo/cli/monitoring_flags.py and cvo.monitoring.client are merged (their names, kept) ---------


@dataclass(frozen=True)
class MonitoringOptions:
    url: str
    token_file: str | None = None
    ca_file: str | None = None
    timeout: float = 30.0


def _add_monitoring_flags(group: Any) -> None:
    """``add_monitoring_flags``: the CVO's Prometheus flags."""
    group.add_argument("--metrics-url", metavar="URL",
                       help="the cluster's Prometheus (or Thanos querier): its alerts are asked at URL/api/v1/alerts")
    group.add_argument("--metrics-token-file", metavar="PATH", help="a bearer token for --metrics-url, in a file")
    group.add_argument("--metrics-ca-file", metavar="PATH", help="the CA bundle --metrics-url's certificate is "
                                                                 "checked against (default: the system's)")


def _monitoring_options(args: argparse.Namespace) -> MonitoringOptions | None:
    """``monitoring_options``: ``None`` without ``--metrics-url``."""
    url = getattr(args, "metrics_url", None)
    if not url:
        return None
    return MonitoringOptions(url, getattr(args, "metrics_token_file", None), getattr(args, "metrics_ca_file", None))


def fetch_alerts(options: MonitoringOptions) -> bytes:
    """``Prometheus.alerts()``'s request: ``GET URL/api/v1/alerts``; :class:`OSError` or ``ValueError`` when
    there is no answer (unreachable, not HTTP 200, a token or CA file that cannot be read)."""
    import ssl

    import urllib3

    from cvo.payload.limits import read_input
    from cvo.status.recommend_alerts import MAX_ALERTS_BYTES

    headers = {"Accept": "application/json"}
    if options.token_file:
        token = read_input(options.token_file, options.token_file, 64 * 1024).decode("utf-8", "replace").strip()
        headers["Authorization"] = f"Bearer {token}"
    context = ssl.create_default_context(cafile=options.ca_file) if options.ca_file else None
    pool = urllib3.PoolManager(ssl_context=context, timeout=urllib3.Timeout(options.timeout), retries=False)
    try:
        response = pool.request("GET", options.url.rstrip("/") + ALERTS_PATH, headers=headers,
                                preload_content=False)
    except urllib3.exceptions.HTTPError as err:
        raise OSError(str(err)) from None
    try:
        body = response.read(MAX_ALERTS_BYTES + 1)
    finally:
        response.release_conn()
    if response.status != 200:
        raise ValueError(f"HTTP {response.status} from {ALERTS_PATH}")
    return bytes(body)


# --- the alert check ------------------------------------------------------------------------------------


def _alerts_file(path: str, display: str) -> bytes:
    from cvo.payload.limits import InputError, read_input
    from cvo.status.recommend_alerts import MAX_ALERTS_BYTES

    try:
        return read_input(path, display, MAX_ALERTS_BYTES)
    except InputError as err:
        raise UsageError(str(err)) from None


def _parsed(data: bytes, display: str) -> Any:
    from cvo.status.recommend_alerts import AlertsInvalid, parse_alerts

    try:
        return parse_alerts(data)
    except AlertsInvalid as err:
        raise UsageError(f"{display}: not Prometheus' {ALERTS_PATH} answer: {err}") from None


def alert_check(args: argparse.Namespace) -> list[Any]:
    """precheck.go's checks (alerts.go ``options.alerts``): the conditions from the firing alerts, or
    ``recommended/Alert=Unknown`` without alert data.  A bad ``--alerts-file`` is a usage error."""
    from cvo.payload.limits import display_name, printable
    from cvo.status.recommend import alert_conditions, no_alert_data, no_test_data
    from cvo.status.recommend_alerts import AlertsInvalid, parse_alerts

    if args.mock_clusterversion:  # oc's mockData.load: the alerts beside the ClusterVersion, if there
        path = args.mock_clusterversion.replace("-cv.yaml", "-alerts.json", 1)
        if not os.path.lexists(path):
            return [no_test_data(path)]
        return alert_conditions(_parsed(_alerts_file(path, display_name(path)), display_name(path)))
    if args.alerts_file:
        display = display_name(args.alerts_file)
        return alert_conditions(_parsed(_alerts_file(args.alerts_file, display), display))
    options = _monitoring_options(args)
    if options is None:
        if args.from_file:
            return [no_alert_data("saved objects (--from-file) hold no alerts; give --alerts-file with a saved "
                                  f"answer of Prometheus' {ALERTS_PATH}")]
        return [no_alert_data("no --metrics-url or --alerts-file to read the firing alerts from")]
    where = printable(options.url, 200)
    try:
        return alert_conditions(parse_alerts(fetch_alerts(options)))
    except (OSError, ValueError) as err:  # AlertsInvalid is a ValueError: an answer that is not alerts
        what = "answered no alerts" if isinstance(err, AlertsInvalid) else "did not answer"
        return [no_alert_data(f"Prometheus at {where} {what}: {printable(str(err), 300)}")]


# --- the command ----------------------------------------------------------------------------------------


def accepted(values: list[str]) -> list[str]:
    """``--accept``, as pflag's ``StringSlice`` reads it: each value a line of CSV, repeated flags added up."""
    names: list[str] = []
    for value in values:
        if value:
            names.extend(next(csv.reader([value])))
    return names


async def refresh_graph(reader: Reader) -> None:
    """When no controller runs, the graph should be fetched first, as the controller would fetch it
    (``cvo.runner.available_updates.refresh_updates``, the graph-client's).  Until that is merged, the status is
    shown as the cluster holds it; saved objects are never refreshed."""
    return None


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
    from cvo.objects import ClusterVersion
    from cvo.status.recommend import OptionsError, complete, recommend

    _check_flags(args)
    try:
        options = complete(args.target_version, quiet=args.quiet, show_outdated_releases=args.show_outdated_releases,
                           accept=accepted(args.accept))
    except OptionsError as err:
        raise CommandFailed(str(err)) from None  # oc: kcmdutil.CheckErr, exit 1
    backend_options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(backend_options)
    read: list[dict[str, Any] | None] = []

    async def main() -> None:
        async with open_reader(backend_options, clock) as reader:
            if not backend_options.saved:
                await refresh_graph(reader)
            read.append(await reader.steady.get(cv_ref()))

    run_loop(main)
    cv = None if read[0] is None else ClusterVersion.read(read[0])
    result = recommend(cv, alert_check(args) if cv is not None else [], options)  # oc: no ClusterVersion, no check
    for to_err, text in result.writes:
        stream = sys.stderr if to_err else sys.stdout
        stream.write(text)
        stream.flush()  # oc's two streams, in the order it writes them
    if result.error is not None:
        print_error(result.error)
        return EXIT_FAILED
    return EXIT_OK
