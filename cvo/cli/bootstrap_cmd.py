"""``cvo bootstrap``: install the CRDs and RBAC cvo needs into a cluster, like ``kubectl apply -f manifests/``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cvo.cli.backend import ClusterOptions, add_backend_flags, backend_clock, open_backend
from cvo.cli.common import EXIT_FAILED, EXIT_OK, UsageError, print_error
from cvo.cluster.api import ApiError
from cvo.operators.behaviour import parse_duration
from cvo.payload.loader import LoadError
from cvo.runner.bootstrap import (
    DEFAULT_TIMEOUT,
    Applied,
    BootstrapResult,
    bootstrap,
    find_manifests,
    load_manifests,
)

HELP = ("install the ClusterVersion, ClusterOperator and OperatorCondition CRDs, cvo's RBAC and its admission "
        "policy (idempotent)")
DESCRIPTION = (
    "Apply cvo's own manifests (the namespace openshift-cluster-version, the CustomResourceDefinitions of "
    "ClusterVersion, ClusterOperator and OperatorCondition, the RBAC cvo runs with, and the "
    "ValidatingAdmissionPolicy that keeps OperatorConditions' spec.overrides for admins) in file order: create "
    "what is missing, update what differs, leave the rest; then wait until every CRD is Established. "
    "Prints one line per object, like kubectl apply. Running it again changes nothing."
)


EXAMPLES = """\
Examples:
  # Prepare a kind cluster for cvo (run it again at any time: it changes nothing)
  cvo bootstrap --context kind-kind

  # A cluster of another kubeconfig, giving its CRDs two minutes to be Established
  cvo bootstrap --kubeconfig ~/.kube/lab.yaml --timeout 2m
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("bootstrap", help=HELP, description=DESCRIPTION, epilog=EXAMPLES)
    parser.add_argument("--manifests", type=Path, default=None, metavar="DIR",
                        help="apply this directory of manifests instead of the one shipped with cvo")
    parser.add_argument("--timeout", default=f"{DEFAULT_TIMEOUT:g}s", metavar="DURATION",
                        help=f"how long to wait for the CRDs to be Established (default {DEFAULT_TIMEOUT:g}s)")
    add_backend_flags(parser, runs_the_clock=False)
    parser.set_defaults(func=run)


# --- the command ------------------------------------------------------------------------------------------


def _show(applied: Applied) -> None:
    if applied.action:
        print(f"{applied.name} {applied.action}", flush=True)
    else:
        print_error(f"{applied.name}: {applied.error}")


def run(args: argparse.Namespace) -> int:
    try:
        timeout = parse_duration(args.timeout, "--timeout")
    except ValueError as err:
        raise UsageError(str(err)) from None
    try:
        manifests = load_manifests(find_manifests(args.manifests))
    except LoadError as err:
        raise UsageError("\n".join(err.errors)) from None
    backend_options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(backend_options)

    async def main() -> BootstrapResult:
        async with open_backend(backend_options, clock, simulate_operators=False, say_where=True) as backend:
            return await bootstrap(backend.cluster, manifests, timeout=timeout, on_applied=_show)

    try:
        result = run_loop(main)
    except ApiError as err:
        print_error(str(err))
        return EXIT_FAILED
    if result.established:
        print(f"Established: {', '.join(result.established)}", file=sys.stderr)
    for name, why in result.not_established.items():
        print_error(f"customresourcedefinition.apiextensions.k8s.io/{name} is not Established after "
                    f"{args.timeout}: {why}")
    failed = sum(1 for a in result.applied if not a.action)
    if failed:
        print_error(f"{failed} of {len(result.applied)} objects could not be applied")
    return EXIT_OK if result.ok else EXIT_FAILED
