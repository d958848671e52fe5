"""``cvo sim-operators``: the simulated operators as a process of their own, against any cluster.

The embedded cluster runs simulated operators inside ``cvo install`` and ``cvo upgrade``; a real
cluster (kind, say) has no operators behind the payload's ClusterOperators, so nothing would ever
report them Available.  This command runs the same behaviour models
(:class:`~cvo.operators.simulated.OperatorSimulator`, configured by ``--operators``) beside any cluster:
it watches Deployments and reports ClusterOperator status and OperatorCondition conditions through
the API with the :mod:`cvo.operators.library` library, printing one line per report.

Which operators: those of the releases given with ``--release``, and of the release the
ClusterVersion's ``status.desired.image`` names when it is a ``file://`` release directory (the
last completed release too, during an upgrade).  The ClusterVersion is watched: when ``cvo upgrade
--to`` sets a new desired release, its operators are simulated from then on (the simulator
restarts with every known release, as operators restart; rollouts already done are not redone).

Against the embedded cluster's store it runs on that cluster's virtual clock, and every report is in
the store as soon as it is made, so it can run beside other cvo commands on the same ``--state``;
against a real cluster it runs on the real clock until interrupted (SIGINT: exit 130, SIGTERM: 143).

API errors never end it: transient ones (an API server restarting, 429, 5xx) are retried for as
long as it runs (:class:`~cvo.cluster.persist.PersistentCluster` with no deadline, or
``--duration``'s), others by the operators' own reconcile loops (:mod:`cvo.operators.simulated`), and
the ClusterVersion is watched again after any error.

This module is the command line only (flags, signals, the backend, the summary line); the process itself
is :mod:`cvo.operators.process`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import Any

from cvo.cli.backend import (
    ClusterOptions,
    add_backend_flags,
    add_behaviour_flags,
    backend_clock,
    load_behaviours,
    open_backend,
)
from cvo.cli.common import EXIT_FAILED, EXIT_OK, UsageError, describe_api_error, print_error
from cvo.cli.images import ImageFlags, add_registry_flags
from cvo.clock import Clock
from cvo.cluster.api import ApiError, Cluster
from cvo.cluster.persist import Budget
from cvo.images.pull import PullOptions
from cvo.operators.behaviour import Behaviours, parse_duration
from cvo.operators.process import run_operators
from cvo.payload.loader import LoadError, Release, load_release

HELP = "run the simulated operators of a release against a cluster (kind, or the embedded cluster's state)"
DESCRIPTION = (
    "Run the simulated operators of the embedded cluster as a process of their own, against any cluster: "
    "they watch the payload's Deployments and report ClusterOperator status and OperatorCondition "
    "conditions through the API, as the operators of a real payload would. The releases are those given "
    "with --release and the one the ClusterVersion's status.desired.image names (a file:// directory), "
    "followed as cvo upgrade moves it. Runs until interrupted (Ctrl-C), or --once, or for --duration."
)
EXAMPLES = """\
Examples:
  # The demo's operators on a kind cluster, in the background, logging to a file (the demo's images do not
  # exist, so its Deployments never roll out on kind: do not wait for them)
  cvo sim-operators --context kind-kind --operators payloads/demo-operators.yaml --rollouts ignore > sim.log &

  # Report once for the release the cluster runs, then exit
  cvo sim-operators --context kind-kind --once

  # Also know a release before the cluster asks for it, and stop after an hour
  cvo sim-operators --context kind-kind --release payloads/demo-4.17.0 --duration 1h
"""
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("sim-operators", help=HELP, description=DESCRIPTION, epilog=EXAMPLES)
    parser.add_argument("--release", dest="releases", action="append", default=[], metavar="RELEASE",
                        help="a release directory or release image whose operators to simulate (repeatable; "
                             "default: the ClusterVersion's desired release, pulled when it is an image)")
    add_behaviour_flags(parser)
    add_backend_flags(parser)
    add_registry_flags(parser)
    parser.add_argument("--rollouts", choices=("auto", "wait", "ignore"), default="auto",
                        help="whether an operator reports its new version only once its Deployments have rolled out "
                             "(wait) or after its behaviour's delay alone (ignore); auto: wait where the cluster's "
                             "controllers act (its default/default ServiceAccount exists: kind, kwok, real clusters)")
    until = parser.add_mutually_exclusive_group()
    until.add_argument("--once", action="store_true",
                       help="catch up with the cluster, finish the rollouts that start, and exit")
    until.add_argument("--duration", metavar="DURATION",
                       help="run this long on the cluster's clock (e.g. 10m), then exit")
    parser.set_defaults(func=run)


# --- the command -------------------------------------------------------------------------------------------


def _load_explicit(paths: list[str], pull: PullOptions) -> list[Release]:
    from cvo.cli.images import is_image
    from cvo.operators.process import load_image

    releases = []
    for path in paths:
        try:
            releases.append(load_image(path, pull) if is_image(path) else load_release(Path(path)))
        except LoadError as err:
            raise UsageError("\n".join(f"--release {path}: {e}" for e in err.errors)) from None
    return releases


def run(args: argparse.Namespace) -> int:
    backend_options = ClusterOptions.from_args(args)
    behaviours = load_behaviours(backend_options)
    duration = None
    if args.duration is not None:
        try:
            duration = parse_duration(args.duration, "--duration")
        except ValueError as err:
            raise UsageError(str(err)) from None
    pull = ImageFlags.from_args(args, timeout=600.0).pull_options()
    explicit = _load_explicit(args.releases, pull)
    clock, run_loop = backend_clock(backend_options)
    outcome: dict[str, Any] = {"signal": None}

    async def main() -> int:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        handled: list[signal.Signals] = []

        def on_signal(signum: int) -> None:
            outcome["signal"] = signum
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, on_signal, sig)
                handled.append(sig)
        budget = Budget.of(duration)  # transient errors are retried for as long as the command runs
        try:
            async with open_backend(backend_options, clock, simulate_operators=False, budget=budget,
                                    say_where=True) as backend:
                rollouts = {"auto": None, "wait": True, "ignore": False}[args.rollouts]
                return await _run(backend.steady, clock, behaviours, explicit, stop, args.once, duration, pull,
                                  rollouts)
        finally:
            for handled_signum in handled:
                loop.remove_signal_handler(handled_signum)

    try:
        code = run_loop(main)
    except ApiError as err:
        print_error(describe_api_error(err))
        return EXIT_FAILED
    if outcome["signal"] == signal.SIGINT:
        return EXIT_INTERRUPTED
    if outcome["signal"] == signal.SIGTERM:
        return EXIT_TERMINATED
    return code


async def _run(cluster: Cluster, clock: Clock, behaviours: Behaviours, explicit: list[Release],
               stop: asyncio.Event, once: bool, duration: float | None, pull: PullOptions | None = None,
               rollouts: bool | None = None) -> int:
    if not await cluster.serves("config.openshift.io/v1", "ClusterOperator"):
        print_error("the cluster does not serve ClusterOperators (config.openshift.io/v1): run 'cvo bootstrap' first")
        return EXIT_FAILED
    outcome = await run_operators(cluster, clock, behaviours, explicit, stop, once, duration, pull=pull,
                                  rollouts=rollouts)
    why = "interrupted" if outcome.interrupted else "done"
    print(f"sim-operators: {why} after {outcome.elapsed:g}s on the cluster's clock: {outcome.reports} reports, "
          f"{outcome.failures} failed writes" + (" (written again)" if outcome.failures else ""), file=sys.stderr)
    for line in outcome.failed_rollouts:
        print_error(f"rollout failed: {line}")
    # a failed write is written again: only a broken rollout fails
    return EXIT_FAILED if outcome.failed_rollouts else EXIT_OK
