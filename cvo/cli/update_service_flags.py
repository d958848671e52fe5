"""The update service's flags (``--update-service``, its CA file and timeout) and the options they make, for
``cvo run`` and for the commands that fetch the graph themselves when no controller runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from cvo.cli.common import UsageError
from cvo.operators.behaviour import parse_duration

if TYPE_CHECKING:  # imported when the options are made (cvo --help imports every command)
    from cvo.runner.available_updates import RefreshOptions


def add_update_service_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("available updates (the update service the CVO polls)")
    group.add_argument("--update-service", default="", metavar="URL",
                       help="the preferred update service: overrides ClusterVersion spec.upstream (the CVO's "
                            "flag); a file:// URL reads a graph file (cvo's extension). Without it, and without "
                            "spec.upstream, a real cluster asks the CVO's default "
                            "(https://api.openshift.com/api/upgrades_info/v1/graph) and the embedded one none "
                            "(RetrievedUpdates=False, NoUpstream)")
    group.add_argument("--update-service-ca-file", default=None, metavar="FILE",
                       help="PEM trust roots for an https update service, instead of the system's (the CVO "
                            "takes them from the cluster's Proxy trustedCA)")
    group.add_argument("--update-service-timeout", default="60s", metavar="DURATION",
                       help="how long one request to the update service may take, body included (default 60s; "
                            "the CVO allows 60m)")


def refresh_options(args: argparse.Namespace, real_cluster: bool, minimum_interval: float) -> RefreshOptions:
    """The flags checked (a :class:`UsageError` for a bad one) and made into the options of a refresh; the
    CVO's default update service only on a real cluster."""
    from pathlib import Path

    from cvo.runner.available_updates import RefreshOptions
    from cvo.updates.client import UpdateServiceOptions
    from cvo.updates.poll import DEFAULT_UPDATE_SERVICE

    try:
        timeout = parse_duration(args.update_service_timeout, "--update-service-timeout", minimum=0.001)
    except ValueError as err:
        raise UsageError(str(err)) from None
    ca = Path(args.update_service_ca_file) if args.update_service_ca_file else None
    if ca is not None and not ca.is_file():
        raise UsageError(f"--update-service-ca-file {ca}: not a file")
    return RefreshOptions(update_service=args.update_service, minimum_interval=minimum_interval,
                          default_update_service=DEFAULT_UPDATE_SERVICE if real_cluster else "",
                          client=UpdateServiceOptions(timeout=timeout, ca_file=ca, user_agent="cvo"))
