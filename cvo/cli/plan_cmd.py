"""``cvo plan``: print the sweep plan of a release without touching a cluster."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cvo.cli.common import EXIT_OK, UsageError, add_payload_flags, load, non_negative_int, payload_options
from cvo.payload.graph import GraphCycleError, Mode
from cvo.plan.build import make_plan
from cvo.plan.output import write_dot, write_json, write_mermaid, write_text

if TYPE_CHECKING:
    from cvo.operators.behaviour import Behaviours
    from cvo.plan.build import Plan

HELP = "print the task graph a sweep of RELEASE_DIR would run (dry run)"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("plan", help=HELP, description=HELP.capitalize() + ".")
    add_payload_flags(parser)
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.UPDATE.value,
                        help="install (flattened), update (by run level; default) or reconcile (permuted)")
    parser.add_argument("--attempt", type=non_negative_int, default=0, metavar="N",
                        help="reconcile attempt number, 0 or more: picks the permutation (default 0)")
    parser.add_argument("--show-excluded", action="store_true", help="list the documents the filters excluded")
    parser.add_argument("-o", "--output", choices=["text", "json", "dot", "mermaid", "html"], default="text",
                        help="html: the timeline page of cvo report for the plan, with the estimated critical path "
                             "when the operators' durations are known (docs/report.md)")
    durations = parser.add_mutually_exclusive_group()
    durations.add_argument("--operators", type=Path, metavar="FILE",
                           help="-o html: operator behaviours (their delays) to estimate the critical path with")
    durations.add_argument("--scenario", type=Path, metavar="FILE",
                           help="-o html: the operator behaviours of this scenario file")
    parser.set_defaults(func=run)


def _behaviours(args: argparse.Namespace) -> Behaviours | None:
    """The operators' durations: ``--operators FILE`` or a scenario's ``operators``; None when not given."""
    if args.operators is not None:
        from cvo.cli.backend import load_behaviours

        return load_behaviours(args)
    if args.scenario is not None:
        from cvo.scenario.model import ScenarioError, load_scenario

        try:
            return load_scenario(args.scenario).behaviours
        except ScenarioError as err:
            raise UsageError(str(err)) from None
    return None


def write_html(plan: Plan, args: argparse.Namespace) -> None:
    from cvo.report.estimate import estimate_timeline
    from cvo.report.html import render_html

    behaviours = _behaviours(args)
    timeline = estimate_timeline(plan, behaviours)
    source = "durations: " + (str(args.operators or args.scenario) if behaviours is not None else "unknown")
    sys.stdout.write(render_html(timeline, f"cvo plan: {plan.mode} {plan.release.version} ({plan.profile})", source))


def run(args: argparse.Namespace) -> int:
    if args.output != "html" and (args.operators is not None or args.scenario is not None):
        raise UsageError("--operators and --scenario give durations for -o html only")
    options = payload_options(args)
    release = load(args, options)
    mode = Mode(args.mode)
    try:
        plan = make_plan(release, mode, profile=options.load_filter.profile,
                         feature_set=options.load_filter.feature_set,
                         feature_gates=options.load_filter.feature_gates,
                         apply_filter=options.apply_filter, attempt=args.attempt)
    except GraphCycleError as err:
        raise UsageError(str(err)) from None
    out = sys.stdout
    if args.output == "html":
        write_html(plan, args)
    elif args.output == "json":
        write_json(plan, out)
    elif args.output == "dot":
        write_dot(plan, out)
    elif args.output == "mermaid":
        write_mermaid(plan, out)
    else:
        write_text(plan, out, show_excluded=args.show_excluded)
    return EXIT_OK
