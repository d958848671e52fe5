"""``cvo plan``: print the sweep plan of a release without touching a cluster."""

from __future__ import annotations

import argparse
import sys

from cvo.cli.common import EXIT_OK, UsageError, add_payload_flags, load, non_negative_int, payload_options
from cvo.payload.graph import GraphCycleError, Mode
from cvo.plan.build import make_plan
from cvo.plan.output import write_dot, write_json, write_mermaid, write_text

HELP = "print the task graph a sweep of RELEASE_DIR would run (dry run)"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("plan", help=HELP, description=HELP.capitalize() + ".")
    add_payload_flags(parser)
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.UPDATE.value,
                        help="install (flattened), update (by run level; default) or reconcile (permuted)")
    parser.add_argument("--attempt", type=non_negative_int, default=0, metavar="N",
                        help="reconcile attempt number, 0 or more: picks the permutation (default 0)")
    parser.add_argument("--show-excluded", action="store_true", help="list the documents the filters excluded")
    parser.add_argument("-o", "--output", choices=["text", "json", "dot", "mermaid"], default="text")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
    if args.output == "json":
        write_json(plan, out)
    elif args.output == "dot":
        write_dot(plan, out)
    elif args.output == "mermaid":
        write_mermaid(plan, out)
    else:
        write_text(plan, out, show_excluded=args.show_excluded)
    return EXIT_OK
