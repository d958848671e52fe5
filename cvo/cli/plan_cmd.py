"""``cvo plan``: print the sweep plan of a release without touching a cluster.

A finished plan is cached (``cvo.plan.cache``): the files are read and hashed every time, and when
they, the options and cvo's code are what they were, the stored output is printed without parsing,
graph building or formatting.  ``--no-cache`` bypasses it, as it bypasses the parse cache.  The HTML
page is not cached: it depends on the operators' durations in other files.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cvo.cli.common import (
    EXIT_OK,
    PayloadOptions,
    UsageError,
    add_payload_flags,
    add_saved_flags,
    finish,
    non_negative_int,
    payload_options,
    read,
    uses_saved_objects,
)
from cvo.cli.load_progress import for_terminal
from cvo.payload.cache import default_cache_dir
from cvo.payload.loader import Release

if TYPE_CHECKING:
    from cvo.operators.behaviour import Behaviours
    from cvo.plan.build import Plan
    from cvo.status.forecast import Expected

HELP = "show what a sweep of a release would do, without a cluster (dry run)"
DESCRIPTION = (
    "Show the task graph a sweep of RELEASE_DIR would walk, without touching any cluster: its steps, the nodes "
    "that run side by side, every task with the manifest it comes from, and what each ClusterOperator task "
    "waits for. The order depends on the mode: an update goes run level by run level, an install starts "
    "everything at once, a reconcile shuffles the order."
)
EXAMPLES = """\
Examples:
  # What an update to this release would do, step by step
  cvo plan payloads/demo-4.17.0

  # The install of a release, as JSON for a script
  cvo plan payloads/demo-4.16.0 --mode install -o json

  # Every object the release applies, one kind/name a line, as kubectl -o name prints them
  cvo plan payloads/demo-4.17.0 -o name

  # The graph as a picture (Graphviz: dot -Tsvg plan.dot > plan.svg)
  cvo plan payloads/demo-4.17.0 -o dot > plan.dot

  # A timeline page, with the critical path estimated from how long the operators take
  cvo plan payloads/demo-4.17.0 -o html --operators payloads/demo-operators.yaml > plan.html

  # What a single-node cluster would get, and what that profile leaves out
  cvo plan payloads/demo-4.16.0 --profile single-node-developer --show-excluded
"""

# The values of cvo.payload.graph.Mode (tested): the graph module is imported only when a plan is built.
MODES = ("install", "update", "reconcile")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("plan", help=HELP, description=DESCRIPTION, epilog=EXAMPLES)
    add_payload_flags(parser, read_only=True)
    parser.add_argument("--mode", choices=MODES, default="update",
                        help="install (flattened), update (by run level; default) or reconcile (permuted)")
    parser.add_argument("--attempt", type=non_negative_int, default=0, metavar="N",
                        help="reconcile attempt number, 0 or more: picks the permutation (default 0)")
    parser.add_argument("--show-excluded", action="store_true", help="list the documents the filters excluded")
    parser.add_argument("-o", "--output", choices=["text", "json", "yaml", "name", "dot", "mermaid", "html"],
                        default="text", metavar="FORMAT",
                        help="text (default); json, or yaml: the same document; name: one line per task that is "
                             "applied, in the plan's order, as 'kubectl get -o name' prints it (kind.group/name) "
                             "followed by '-n NAMESPACE' for a namespaced object, so that each line is arguments "
                             "for kubectl (e.g. cvo plan DIR -o name | xargs -L1 kubectl get); dot, mermaid: "
                             "the graph; html: the timeline page of cvo report for the plan, with the estimated "
                             "critical path when the operators' durations are known (docs/report.md)")
    durations = parser.add_mutually_exclusive_group()
    durations.add_argument("--operators", type=Path, metavar="FILE",
                           help="-o html: operator behaviours (their delays) to estimate the critical path with")
    durations.add_argument("--scenario", type=Path, metavar="FILE",
                           help="-o html: the operator behaviours of this scenario file")
    durations.add_argument("--recorded", action="store_true",
                           help="-o html: the durations recorded on the cluster (--state, --kubeconfig/--context, "
                                "or --from-file), as the forecast of 'cvo upgrade status' uses them: each operator's "
                                "mean over the recorded sweeps of the plan's mode (installs for --mode install, "
                                "else updates)")
    add_saved_flags(parser)
    from cvo.cli.diff_cmd import add_diff_from_flag

    add_diff_from_flag(parser)
    parser.set_defaults(func=run)


def recorded_durations(args: argparse.Namespace, mode: str) -> tuple[Expected, str]:
    """The expected durations the cluster's sweep records give for a plan of ``mode`` (read-only), and the
    cluster's name."""
    from cvo.cli.backend import ClusterOptions, backend_clock, open_reader
    from cvo.cli.report_cmd import _optional
    from cvo.runner.durations import RECORDS_REF
    from cvo.status.forecast import expected_durations
    from cvo.status.update_records import INSTALL, UPDATE, parse_records

    backend_options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(backend_options)
    found: dict[str, Any] = {}

    async def main() -> None:
        async with open_reader(backend_options, clock) as backend:
            found["records"] = await _optional(backend.steady, RECORDS_REF)
            found["where"] = backend.description

    run_loop(main)
    return (expected_durations(parse_records(found["records"]), INSTALL if mode == "install" else UPDATE),
            found["where"])


def _behaviours(args: argparse.Namespace) -> Behaviours | None:
    """The operators' durations: ``--operators FILE`` or a scenario's ``operators``; None when not given."""
    if args.operators is not None:
        from cvo.cli.backend import ClusterOptions, load_behaviours

        return load_behaviours(ClusterOptions.from_args(args))
    if args.scenario is not None:
        from cvo.scenario.model import ScenarioError, load_scenario

        try:
            return load_scenario(args.scenario).behaviours
        except ScenarioError as err:
            raise UsageError(str(err)) from None
    return None


def write_html(plan: Plan, args: argparse.Namespace) -> str:
    from cvo.report.estimate import estimate_timeline
    from cvo.report.html import render_html

    durations: Behaviours | Expected | None
    if wants_records(args):
        durations, where = recorded_durations(args, args.mode)
        kind = "install" if args.mode == "install" else "update"
        count = f"{durations.records} recorded {kind}{'s' if durations.records != 1 else ''}"
        source = (f"durations: recorded on {where} ({count}, {len(durations)} operators)" if durations
                  else f"durations: none recorded on {where} (no record of an {kind})")
    else:
        durations = _behaviours(args)
        source = "durations: " + (str(args.operators or args.scenario) if durations is not None else "unknown")
    timeline = estimate_timeline(plan, durations)
    return render_html(timeline, f"cvo plan: {plan.mode} {plan.release.version} ({plan.profile})", source)


def wants_records(args: argparse.Namespace) -> bool:
    return bool(args.recorded or uses_saved_objects(args))


def output_options(args: argparse.Namespace, options: PayloadOptions) -> list[str]:
    """Every option the printed plan depends on, beyond the files read, in a fixed order."""
    lf, af = options.load_filter, options.apply_filter
    return [
        "profile", lf.profile, "feature-set", lf.feature_set, "feature-gates", ",".join(sorted(lf.feature_gates)),
        "exclude", "" if lf.exclude_id is None else "=" + lf.exclude_id,
        "major", "" if lf.major_version is None else str(lf.major_version),
        "capabilities", ",".join(sorted(af.enabled_capabilities)),
        "apply-gates", "(not filtered)" if af.feature_gates is None else ",".join(sorted(af.feature_gates)),
        "mode", args.mode, "attempt", str(args.attempt), "output", args.output,
        "show-excluded", str(bool(args.show_excluded)),
        # In the release as read too; here so that each image gets an entry of its own.
        "release-image", options.release_image or "", "version", options.version or "",
    ]


def task_names(plan: Plan) -> list[str]:
    """``-o name``: the tasks the sweep applies (not those skipped), in the order the text view lists them
    (step, node, task), as ``kubectl get -o name`` names them, ``-n NAMESPACE`` after a namespaced one."""
    from cvo.cli.output import group_of, kubectl_name, one_word

    lines = []
    for nodes in plan.steps:
        for node in nodes:
            for task in plan.node_tasks(node):
                if task.skip:
                    continue
                m = task.manifest
                name = kubectl_name(group_of(m.api_version), m.kind, m.name)
                lines.append(f"{name} -n {one_word(m.namespace)}" if m.namespace else name)
    return lines


def render(args: argparse.Namespace, options: PayloadOptions, release: Release) -> str:
    from cvo.payload.graph import GraphCycleError, Mode
    from cvo.plan.build import make_plan
    from cvo.plan.output import write_dot, write_json, write_mermaid, write_text

    try:
        plan = make_plan(release, Mode(args.mode), profile=options.load_filter.profile,
                         feature_set=options.load_filter.feature_set,
                         feature_gates=options.load_filter.feature_gates,
                         apply_filter=options.apply_filter, attempt=args.attempt)
    except GraphCycleError as err:
        raise UsageError(str(err)) from None
    if args.output == "html":
        return write_html(plan, args)
    if args.output == "yaml":
        from cvo.cli.output import dump
        from cvo.plan.build import plan_json

        return dump(plan_json(plan), "yaml")
    if args.output == "name":
        return "".join(f"{line}\n" for line in task_names(plan))
    out = io.StringIO()
    if args.output == "json":
        write_json(plan, out)
    elif args.output == "dot":
        write_dot(plan, out)
    elif args.output == "mermaid":
        write_mermaid(plan, out)
    else:
        write_text(plan, out, show_excluded=args.show_excluded)
    return out.getvalue()


def run(args: argparse.Namespace) -> int:
    from cvo.plan.cache import PlanCache, code_fingerprint, plan_key

    if args.diff_from is not None:  # what the sweep would change, instead of the plan (cvo diff)
        from cvo.cli.diff_cmd import run_plan_diff

        return run_plan_diff(args)
    if args.output != "html" and (args.operators is not None or args.scenario is not None or wants_records(args)):
        raise UsageError("--operators, --scenario, --recorded and --from-file give durations for -o html only")
    if uses_saved_objects(args) and (args.operators is not None or args.scenario is not None):
        raise UsageError("--from-file: the durations come from the saved records; --operators and --scenario "
                         "give other ones")
    if args.now is not None and not uses_saved_objects(args):
        raise UsageError("--now is for saved objects (--from-file)")
    options = payload_options(args)
    progress = for_terminal(getattr(args, "log_format", "text"))
    try:
        files = read(options, progress)
        cache = entry = key = None
        if options.use_cache and not files.errors and args.output != "html":
            names = output_options(args, options)
            cache = PlanCache(default_cache_dir())
            entry = cache.entry_path(files.root, names)
            key = plan_key(files.fingerprint(), names, code_fingerprint())
            stored = cache.get(entry, key)
            if stored is not None:
                sys.stdout.write(stored.decode("utf-8", "surrogateescape"))
                return EXIT_OK
        release = finish(files, options, progress)
    finally:
        if progress is not None:
            progress.close()
    text = render(args, options, release)
    sys.stdout.write(text)
    if cache is not None and entry is not None and key is not None:
        cache.put(entry, key, text.encode("utf-8", "surrogateescape"))
    return EXIT_OK
