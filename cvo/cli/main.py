"""The ``cvo`` command line."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence

from cvo import __version__
from cvo.cli.common import (
    EXIT_FAILED,
    EXIT_USAGE,
    CommandFailed,
    Parser,
    UsageError,
    add_global_flags,
    describe_api_error,
    print_error,
)
from cvo.cli.signals import Interrupted, terminate_like_interrupt
from cvo.log import configure

# The cyclic collector's first generation runs every GC_THRESHOLD allocations instead of Python's 700: a
# command that decodes a store or a release makes hundreds of thousands of small dicts and lists, none of
# them cyclic garbage, and with the default the collector walks them again and again (a tenth of
# `cvo diff`'s time on the corpus).  Cycles are still collected, only less often.
GC_THRESHOLD = (50_000, 10, 10)
# Commands that read, print and end within seconds: the collector is off (their memory is what they decode,
# freed when they exit); every other command may run for hours (a sweep, a controller, a watch) and keeps it.
SHORT_LIVED = frozenset({"plan", "lint", "diff", "get", "report"})

# command -> (module that registers it, one-line help).  Only the module of the command being run
# is imported: a warm `cvo plan` of the corpus must not pay for the sweep's and the client's imports.
COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("plan_cmd", "show what a sweep of a release would do, without a cluster (dry run)"),
    "lint": ("lint_cmd", "check a release for problems a sweep would trip over (exit 1 on errors)"),
    "install": ("sweep_cmd", "install a release into an empty cluster and wait until it is done"),
    "upgrade": ("sweep_cmd", "list the cluster's updates, or upgrade to --to VERSION|DIR or --to-image IMAGE"),
    "reconcile": ("sweep_cmd", "re-apply the current release once, repairing drift"),
    "diff": ("diff_cmd", "show what a sweep of a release would change on the cluster (or against another release), "
             "as kubectl diff"),
    "release": ("release_cmd", "build, describe, extract and sign release images, as 'oc adm release'"),
    "status": ("status_cmd", "show the cluster's version and its operators"),
    "get": ("get_cmd", "save what cvo reads from a cluster as one kind: List, for --from-file"),
    # `cvo upgrade status` (see _aliased): `cvo upgrade --to DIR` keeps its own parser
    "upgrade-status": ("upgrade_status_cmd", "show the update's progress and health, like 'oc adm upgrade status'"),
    "upgrade-recommend": ("upgrade_recommend_cmd", "show the updates the cluster can take and the issues to weigh "
                          "first, like 'oc adm upgrade recommend'"),
    "upgrade-channel": ("upgrade_channel_cmd", "set or clear the update channel, like 'oc adm upgrade channel'"),
    "upgrade-accept": ("upgrade_accept_cmd", "accept risks exposed to conditional updates, like 'oc adm upgrade accept'"),
    "upgrade-ack": ("upgrade_ack_cmd", "acknowledge an update gate of admin-gates (or list them)"),
    "apply": ("objects_cmd", "create or update objects from a file, as 'kubectl apply -f'"),
    "patch": ("objects_cmd", "change fields of an object (a JSON merge or JSON patch), as 'kubectl patch'"),
    "delete": ("objects_cmd", "delete objects, as 'kubectl delete'"),
    "override": ("override_cmd", "let an operator's minor updates through, or hold them back: an admin override"),
    "replay": ("replay_cmd", "replay scenario files on a simulated cluster; print the timeline and PASS/FAIL"),
    "report": ("report_cmd", "show a sweep's events, or the cluster's records of its sweeps, as a timeline with its critical path"),
    "bootstrap": ("bootstrap_cmd", "install the ClusterVersion, ClusterOperator and OperatorCondition CRDs and RBAC"),
    "sim-operators": ("simop_cmd", "run the simulated operators of a release against a cluster"),
    "run": ("run_cmd", "run the controller: watch the ClusterVersion and act on it until stopped (leader-elected)"),
    "version": ("version_cmd", "print cvo's version and, when connected, the cluster's version"),
    "graph": ("graph_cmd", "build an update graph from releases and serve it as an update service"),
    "upgrade-path": ("upgrade_path_cmd", "plan the updates from the cluster's version to another over the update graph"),
    "completion": ("completion_cmd", "print the shell completion script for bash, zsh or fish"),
}


EXAMPLES = """\
Examples:
  # The story of 'make demo': install, take a patch, see a minor update held back, override, upgrade
  cvo install payloads/demo-4.16.0 --operators payloads/demo-operators.yaml
  cvo upgrade --to payloads/demo-4.16.3 --operators payloads/demo-operators.yaml
  cvo upgrade --to payloads/demo-4.17.0 --dry-run
  cvo override etcd Upgradeable=True --reason MigrationVerified --message "storage migration checked"
  cvo upgrade --to payloads/demo-4.17.0 --operators payloads/demo-operators.yaml
  cvo status

  # Releases as images: build one, describe it, upgrade to it by digest (docs/images.md)
  cvo release new --from-dir payloads/demo-4.16.3 --to oci:releases:4.16.3
  cvo release info oci:releases:4.16.3

  # Every command's own examples
  cvo install --help
"""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command is fully registered (the others get their help line)."""
    parser = Parser(
        prog="cvo",
        description="Walk an OpenShift-style release payload the way the Cluster Version Operator does: "
        "plan it, lint it, sweep it into a cluster and gate its upgrades.",
        epilog=EXAMPLES,
    )
    parser.add_argument("--version", action="version", version=f"cvo {__version__}")
    add_global_flags(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    wanted = None if only is None else COMMANDS[only][0]
    imported: set[str] = set()
    for command, (module_name, help_text) in COMMANDS.items():
        if wanted is None or module_name == wanted:
            if module_name not in imported:  # a module registers all of its commands at once
                importlib.import_module(f"cvo.cli.{module_name}").register(sub)
                imported.add(module_name)
        else:
            sub.add_parser(command, help=help_text)
    for command_parser in {id(p): p for p in sub.choices.values()}.values():
        add_global_flags(command_parser, top=False)
    for listed in sub._choices_actions:  # `cvo upgrade status` is how it is typed: listed so, not as upgrade-status
        if listed.dest.startswith("upgrade-"):
            listed.metavar = listed.dest.replace("-", " ", 1)
    return parser


# ``cvo upgrade WORD …`` -> the command ``upgrade-WORD``, as oc's ``oc adm upgrade status|channel|accept|recommend``
UPGRADE_VIEWS = ("status", "channel", "accept", "recommend", "path", "ack")


def _aliased(argv: list[str]) -> list[str]:
    """``cvo upgrade status …`` is the command ``upgrade-status`` (and so for :data:`UPGRADE_VIEWS`):
    ``upgrade`` itself takes no positional argument (its release is ``--to``), so one of those words right
    after it can only mean the view."""
    command = next((i for i, a in enumerate(argv) if a in COMMANDS), None)
    if command is not None and argv[command] == "upgrade":
        word = argv[command + 1] if command + 1 < len(argv) else ""
        if word in UPGRADE_VIEWS and f"upgrade-{word}" in COMMANDS:
            return [*argv[:command], f"upgrade-{word}", *argv[command + 2:]]
    return argv


def _command(argv: Sequence[str]) -> str | None:
    """The sub-command in ``argv`` (the first argument naming one), if any."""
    return next((a for a in argv if a in COMMANDS), None)


def _early_log_format(argv: Sequence[str]) -> str:
    """``--log-format`` as given anywhere in ``argv``, before parsing: argparse's own errors follow it."""
    found = "text"
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--log-format" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--log-format="):
            found = arg.split("=", 1)[1]
    return "json" if found == "json" else "text"


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # a process of its own (a caller in-process keeps its collector's settings)
        gc.freeze()  # what the imports made lives as long as the process: no collection walks it again
        gc.set_threshold(*GC_THRESHOLD)
    if argv is None and "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (cvo completion SHELL)
        import argcomplete

        argcomplete.autocomplete(build_parser())  # writes the candidates and exits
    arguments = _aliased(list(sys.argv[1:] if argv is None else argv))
    configure(_early_log_format(arguments), 0, color="--no-color" not in arguments)
    with_nul = next((a for a in arguments if "\x00" in a), None)
    if with_nul is not None:  # only a caller in-process can pass one: exec's argv are C strings
        print_error(f"argument {with_nul!r} contains a NUL byte, which no path, name or value may hold")
        return EXIT_USAGE
    command = _command(arguments)
    if argv is None and command in SHORT_LIVED:
        gc.disable()
    parser = build_parser(command)
    args = parser.parse_args(arguments)  # SystemExit: --help, --version (0) or one error line (2)
    configure(args.log_format, args.verbose, color=not args.no_color)
    try:
        with terminate_like_interrupt():
            return int(args.func(args))
    except Interrupted as stopped:
        print_error("interrupted")
        return stopped.exit_code
    except UsageError as err:
        print_error(str(err), whole=getattr(err, "whole", False))
        return EXIT_USAGE
    except CommandFailed as err:
        print_error(str(err))
        return EXIT_FAILED
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as err:
        # The cluster's errors, imported only when something failed: `cvo plan` never loads the cluster API.
        from cvo.cluster.api import ApiError
        from cvo.objects import SchemaMissing

        if isinstance(err, SchemaMissing):  # the CRDs the objects read are checked against (cvo.objects.crds)
            print_error(str(err))
            return EXIT_FAILED
        if not isinstance(err, ApiError):
            raise
        print_error(describe_api_error(err))
        return 1


if __name__ == "__main__":
    sys.exit(main())
