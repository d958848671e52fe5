"""``cvo version``: cvo's own version and, when a cluster is there, the cluster's (like ``oc version``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cvo import __version__
from cvo.cli.backend import ClusterOptions, NoCluster, add_backend_flags, backend_clock, open_backend
from cvo.cli.common import EXIT_FAILED, EXIT_OK
from cvo.cli.output import STRUCTURED, TEXT, add_output_flag, dump, is_structured
from cvo.cluster.api import ApiError, cv_ref
from cvo.payload.conditions import current_version

HELP = "print cvo's version and, when connected, the cluster's version and which cluster it is"
DESCRIPTION = ("Print cvo's version and, when there is a cluster, which one it is and the release it runs, as "
               "'oc version' does. Asking creates no cluster.")
EPILOG = """\
Examples:
  # cvo's version, and the embedded cluster's if there is one
  cvo version

  # cvo's version and a real cluster's
  cvo version --context kind-kind

  # cvo's version only: no cluster is read
  cvo version --client
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("version", help=HELP, description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--client", action="store_true", help="print cvo's version only")
    add_output_flag(parser, (TEXT, *STRUCTURED), "cvo version -o json | jq -r .openshiftVersion",
                    what="the versions (json, yaml: clientVersion, cluster and openshiftVersion, as 'oc version "
                         "-o json' names them; null when unknown)")
    add_backend_flags(parser, runs_the_clock=False)
    parser.set_defaults(func=run)


def _print(args: argparse.Namespace, doc: dict[str, Any], server: str | None) -> None:
    """The versions as text (``server``: the Server Version line's value) or as ``-o json|yaml``."""
    if is_structured(args.output):
        sys.stdout.write(dump(doc, args.output))
        return
    print(f"Client Version: {__version__}")
    if doc.get("cluster"):
        print(f"Cluster: {doc['cluster']}")
    if server is not None:
        print(f"Server Version: {server}")


def run(args: argparse.Namespace) -> int:
    doc: dict[str, Any] = {"clientVersion": {"version": __version__}}
    if args.client:
        _print(args, doc, None)
        return EXIT_OK
    doc.update(cluster=None, openshiftVersion=None)
    backend_options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(backend_options)
    found: dict[str, Any] = {}

    async def main() -> None:
        async with open_backend(backend_options, clock, simulate_operators=False, create=False) as backend:
            found["where"] = backend.description
            found["cv"] = await backend.steady.get(cv_ref())

    try:
        run_loop(main)
    except NoCluster:
        _print(args, doc, "none (no cluster has been installed yet)")
        return EXIT_OK
    except ApiError as err:  # as oc version: the client's version stands, the server's is unknown
        _print(args, doc, None)
        print(f"Server Version: unknown ({err})", file=sys.stderr)
        return EXIT_FAILED
    cv = found.get("cv")
    status = cv.get("status") if isinstance(cv, dict) else None
    history = status.get("history") if isinstance(status, dict) else None
    entries = [h for h in history if isinstance(h, dict)] if isinstance(history, list) else []
    version = str(current_version(entries) or "")
    doc.update(cluster=found["where"], openshiftVersion=version or None)
    _print(args, doc, version or "none (no release installed)")
    return EXIT_OK
