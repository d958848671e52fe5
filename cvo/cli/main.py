"""The ``cvo`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cvo import __version__
from cvo.cli import (
    bootstrap_cmd,
    lint_cmd,
    override_cmd,
    plan_cmd,
    replay_cmd,
    simop_cmd,
    status_cmd,
    sweep_cmd,
)
from cvo.cli.common import EXIT_USAGE, UsageError, print_error
from cvo.log import configure


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cvo",
        description="Walk an OpenShift-style release payload the way the Cluster Version Operator does: "
        "plan it, lint it, sweep it into a cluster and gate its upgrades.",
    )
    parser.add_argument("--version", action="version", version=f"cvo {__version__}")
    parser.add_argument("--log-format", choices=["text", "json"], default="text",
                        help="log lines on stderr as text (default) or JSON")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-v info, -vv debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in (plan_cmd, lint_cmd, sweep_cmd, status_cmd, override_cmd, replay_cmd, bootstrap_cmd, simop_cmd):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure(args.log_format, args.verbose)
    try:
        return int(args.func(args))
    except UsageError as err:
        print_error(str(err))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
