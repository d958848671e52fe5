"""The CVO's monitoring flags (cmd/cluster-version-operator/start.go): where PromQL risks are evaluated.

``--metrics-url`` (the CVO's default is Thanos in-cluster, ``https://thanos-querier.openshift-monitoring.svc.
cluster.local:9091``; cvo has none: without the flag a PromQL risk is EvaluationFailed),
``--metrics-token-file`` (a bearer token, read on every query, never printed) and
``--metrics-ca-bundle-file`` (the CVO's name; ``--metrics-ca-file`` is accepted too).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from cvo.cli.common import UsageError
from cvo.clock import Clock
from cvo.monitoring.client import DEFAULT_TIMEOUT, MonitoringOptions, Prometheus, check_url
from cvo.updates.conditions import Registry

if TYPE_CHECKING:
    from cvo.monitoring.answers import Alert

ALERTS_PATH = "/api/v1/alerts"


def add_monitoring_flags(parser: argparse.ArgumentParser, *, alerts: bool = False) -> None:
    """The flags; ``alerts``: the command also reads the firing alerts there (``cvo upgrade recommend``)."""
    group = parser.add_argument_group("monitoring (the firing alerts, and PromQL risks of conditional updates)"
                                      if alerts else "monitoring (PromQL risks of conditional updates)")
    group.add_argument("--metrics-url", metavar="URL", default=None,
                       help=("the Prometheus API (or Thanos querier) asked for the firing alerts at URL/api/v1/alerts "
                             "and for PromQL risks" if alerts else "the Prometheus API that PromQL risks are "
                             "evaluated against") + ", e.g. https://thanos-querier.openshift-monitoring.svc:9091 "
                            "(default: none, and a PromQL risk is EvaluationFailed)")
    group.add_argument("--metrics-token-file", metavar="FILE", default=None,
                       help="a file holding the bearer token sent to --metrics-url (read on every query)")
    group.add_argument("--metrics-ca-bundle-file", "--metrics-ca-file", dest="metrics_ca_file", metavar="FILE",
                       default=None, help="the CA bundle that --metrics-url's certificate is checked against "
                                          "(default: the system's)")
    group.add_argument("--metrics-timeout", metavar="SECONDS", type=float, default=DEFAULT_TIMEOUT,
                       help=f"how long one query may take (default {DEFAULT_TIMEOUT:g}; the CVO waits 5 minutes)")


def monitoring_options(args: argparse.Namespace) -> MonitoringOptions | None:
    """The options of the flags, or None without ``--metrics-url``; :class:`UsageError` for bad ones."""
    url = getattr(args, "metrics_url", None)
    token = getattr(args, "metrics_token_file", None)
    ca = getattr(args, "metrics_ca_file", None)
    timeout = getattr(args, "metrics_timeout", DEFAULT_TIMEOUT)
    if not url:
        if token or ca:
            raise UsageError("--metrics-token-file and --metrics-ca-bundle-file need --metrics-url")
        return None
    try:
        check_url(url)
    except ValueError as err:
        raise UsageError(f"--metrics-url: {err}") from None
    for flag, path in (("--metrics-token-file", token), ("--metrics-ca-bundle-file", ca)):
        if path and not Path(path).is_file():
            raise UsageError(f"{flag}: {path}: no such file")
    if not timeout > 0:
        raise UsageError(f"--metrics-timeout: {timeout:g} is not a positive number of seconds")
    return MonitoringOptions(url, token or "", ca or "", timeout)


def condition_registry(options: MonitoringOptions | None, clock: Clock) -> Registry:
    """The CVO's condition registry (standard.NewConditionRegistry) over the flags' Prometheus, if any."""
    return Registry(Prometheus(options) if options is not None else None, clock)


def file_alerts(path: str) -> tuple[Alert, ...]:
    """The alerts of a saved answer of Prometheus' alerts API; a usage error (one line naming the file) for anything else."""
    from cvo.payload.limits import InputError, display_name, read_input
    from cvo.status.recommend_alerts import MAX_ALERTS_BYTES, AlertsInvalid, parse_alerts

    display = display_name(path)
    try:
        return parse_alerts(read_input(path, display, MAX_ALERTS_BYTES))
    except InputError as err:
        raise UsageError(str(err)) from None
    except AlertsInvalid as err:
        raise UsageError(f"{display}: not Prometheus' {ALERTS_PATH} answer: {err}") from None
