"""``cvo diff``: what a sweep of a release would change, object by object, before it runs (:mod:`cvo.diff`).

Also ``cvo plan RELEASE --diff-from RELEASE|cluster`` and ``cvo upgrade --to … --dry-run --diff``, through
:func:`run_plan_diff` and :func:`upgrade_diff`.  Exit codes as ``kubectl diff``: 0 no differences, 1
differences, 2 an error (bad input, a cluster that cannot be read).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cvo.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    PayloadOptions,
    UsageError,
    add_payload_flags,
    add_saved_flags,
    describe_api_error,
    load,
    payload_options,
    print_error,
    uses_saved_objects,
)
from cvo.cli.output import STRUCTURED, TEXT, add_output_flag, dump

if TYPE_CHECKING:
    from cvo.cli.backend import Reader
    from cvo.diff.compute import Diff
    from cvo.payload.loader import Release

EXIT_DIFFERS = 1  # kubectl diff: differences found
EXIT_ERROR = EXIT_USAGE  # kubectl diff: greater than 1 on an error
CLUSTER = "cluster"  # --from/--diff-from: the live cluster (a directory of that name: ./cluster)

HELP = "show what a sweep of a release would change on the cluster (or against another release), as kubectl diff"
DESCRIPTION = (
    "Show, object by object and in sweep order, what a sweep of RELEASE would change: the objects it adds, the "
    "objects it deletes (release.openshift.io/delete), and for the rest a unified diff of exactly the fields cvo "
    "would write under its merge rules (a field the manifest does not set is never drift: what the server defaults "
    "or an operator owns does not show). Then the counts per kind and run level. Against the cluster (the embedded "
    "one, --kubeconfig/--context, or saved objects with --from-file) the sweep is the one the ClusterVersion calls "
    "for (install, reconcile the same version, update to another), with its overrides and capabilities; with "
    "--from RELEASE, the update from that release. Exit 0: no differences, 1: differences, 2: an error."
)
EXAMPLES = """\
Examples:
  # What an upgrade to this release would change on the embedded cluster
  cvo diff payloads/demo-4.17.0

  # The drift a reconcile would repair (the release the cluster runs)
  cvo diff payloads/demo-4.16.3

  # Two releases against each other, no cluster
  cvo diff payloads/demo-4.17.0 --from payloads/demo-4.16.3

  # Saved objects ('cvo get -o yaml > cluster.yaml'), as data
  cvo diff payloads/demo-4.17.0 --from-file cluster.yaml -o json | jq '.summary'
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("diff", help=HELP, description=DESCRIPTION, epilog=EXAMPLES)
    add_payload_flags(parser, read_only=True)
    parser.add_argument("--from", dest="diff_from", default=CLUSTER, metavar="RELEASE|cluster",
                        help="what RELEASE is compared with: the cluster (default) or another release's directory "
                             "or image")
    add_output_flag(parser, (TEXT, *STRUCTURED), "cvo diff DIR -o json | jq .summary",
                    what="the diff and its counts")
    add_saved_flags(parser)
    parser.set_defaults(func=run)


def add_diff_from_flag(parser: argparse.ArgumentParser) -> None:
    """``cvo plan``'s ``--diff-from RELEASE|cluster``."""
    parser.add_argument("--diff-from", dest="diff_from", default=None, metavar="RELEASE|cluster",
                        help="instead of the plan, what a sweep of RELEASE would change against another release or "
                             "the cluster (as 'cvo diff RELEASE --from …'; -o text, json or yaml)")


def add_diff_flag(parser: argparse.ArgumentParser) -> None:
    """``cvo upgrade``'s ``--diff`` (with ``--dry-run``)."""
    parser.add_argument("--diff", action="store_true",
                        help="with --dry-run: also what the upgrade would change, object by object (as 'cvo diff')")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except UsageError as err:
        print_error(str(err), whole=getattr(err, "whole", False))
        return EXIT_ERROR
    except CommandFailed as err:
        print_error(str(err))
        return EXIT_ERROR


def run_plan_diff(args: argparse.Namespace) -> int:
    """``cvo plan RELEASE --diff-from …``: ``cvo diff`` with the plan's flags."""
    if args.output not in (TEXT, *STRUCTURED):
        raise UsageError(f"--diff-from: -o {args.output} is a plan's format; a diff is text, json or yaml")
    if args.operators is not None or args.scenario is not None or args.recorded:
        raise UsageError("--diff-from: --operators, --scenario and --recorded are for -o html")
    return run(args)


def _run(args: argparse.Namespace) -> int:
    options = payload_options(args)
    log_format = getattr(args, "log_format", "text")
    release = load(options, log_format)
    if args.diff_from == CLUSTER:
        changes = _against_cluster(args, options, release)
    else:
        if uses_saved_objects(args):
            raise UsageError(f"--from-file: saved objects are the live side; drop it to compare with {args.diff_from}")
        old = load(_other_release(args, options, args.diff_from), log_format)
        from cvo.diff.sources import against_release

        changes = against_release(release, old, options.load_filter, options.apply_filter)
    _print(changes, args.output)
    return EXIT_DIFFERS if changes.differs else EXIT_OK


def _other_release(args: argparse.Namespace, options: PayloadOptions, given: str) -> PayloadOptions:
    """The payload options of the release compared with: the same selection, its own directory or image."""
    from cvo.cli.images import ImageFlags, is_image, pull

    if is_image(given):
        pulled = pull(given, ImageFlags.from_args(args))
        return replace(options, directory=pulled.directory, image=given, release_image=pulled.pull_spec, version=None)
    return replace(options, directory=Path(given), image=None, release_image=None, version=None)


def _against_cluster(args: argparse.Namespace, options: PayloadOptions, release: Release) -> Diff:
    from cvo.cli.backend import ClusterOptions, backend_clock, open_reader
    from cvo.cluster.api import ApiError

    cluster = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(cluster)

    async def main() -> Diff:
        async with open_reader(cluster, clock, say_where=True, snapshot=True) as reader:
            return await upgrade_diff(reader, release, options)

    try:
        return run_loop(main)
    except ApiError as err:
        raise CommandFailed(describe_api_error(err)) from None


async def upgrade_diff(reader: Reader, release: Release, options: PayloadOptions) -> Diff:
    """What a sweep of ``release`` would change on the cluster ``reader`` reads (``upgrade --dry-run --diff``)."""
    from cvo.diff.sources import against_cluster

    return await against_cluster(reader.steady, release, options.load_filter, options.apply_filter,
                                 f"cluster ({reader.where or reader.description})")


def _print(changes: Diff, fmt: str) -> None:
    from cvo.diff.render import document, text

    sys.stdout.write(dump(document(changes), fmt) if fmt in STRUCTURED else text(changes))


def print_diff(changes: Diff | None, fmt: str) -> None:
    """``upgrade --dry-run --diff``: the diff after the gates, a blank line between (nothing when not asked for)."""
    if changes is not None:
        print()
        _print(changes, fmt)


def with_diff(data: dict[str, Any], changes: Diff | None) -> dict[str, Any]:
    """``upgrade --dry-run -o json|yaml``: the gates' document, with the diff's under ``diff`` when asked for."""
    from cvo.diff.render import document

    return data if changes is None else {**data, "diff": document(changes)}
