"""``cvo report [EVENTS]``: a sweep's timeline with its critical path, as one HTML page or as text.

From an events file (``--events FILE``, ``--log-format json -vv`` stderr), or, without one, from the records
cvo keeps on the cluster (:mod:`cvo.report.records`): the embedded cluster (``--state``), a real one
(``--kubeconfig``/``--context``) or saved objects (``--from-file``), read-only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cvo.cli.common import EXIT_OK, CommandFailed, UsageError, add_saved_flags, uses_saved_objects

if TYPE_CHECKING:
    from cvo.cluster.api import Object, ReadOnlyCluster, Ref
    from cvo.report.model import Timeline

HELP = "show a sweep's events (or the cluster's records of its sweeps) as a timeline with its critical path"
DESCRIPTION = """\
Show a sweep as a timeline with its critical path: one self-contained HTML page, or text (docs/report.md).

With EVENTS, from a sweep's events: the JSON lines of --events FILE (install, upgrade, reconcile, replay,
run), or of --log-format json -vv on stderr ('-': stdin).

Without EVENTS, from the records cvo keeps on the cluster: the ClusterVersion's history (a sweep per
entry), the sweep records in openshift-cluster-version/cvo-update-durations (when each ClusterOperator was
first waited on and done, the attempts) and the ClusterOperators' conditions (for the newest sweep without
a record). Coarser than events: a bar per ClusterOperator wait, the critical path through the release's
task graph. The cluster: the embedded one (--state), a real one (--kubeconfig/--context), or saved objects
(--from-file, as 'cvo upgrade status' reads them)."""


EXAMPLES = """\
Examples:
  # Keep the events of an upgrade, then see them as a page
  cvo upgrade --to payloads/demo-4.16.3 --events upgrade.jsonl
  cvo report upgrade.jsonl --output-file upgrade.html

  # The same in the terminal
  cvo report upgrade.jsonl -o text

  # No events kept: the sweeps the embedded cluster's records tell of, the last one
  cvo report --sweep last -o text
"""


def sweep_number(text: str) -> int:
    if text == "last":
        return -1
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a sweep number (1, 2, …; -1 or 'last': the last)") from None
    if value == 0:
        raise argparse.ArgumentTypeError("sweeps are counted from 1 (-1 or 'last': the last)")
    return value


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("report", help=HELP, description=DESCRIPTION, epilog=EXAMPLES,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("events", type=Path, metavar="EVENTS", nargs="?", default=None,
                        help="JSON lines of events: from --events FILE, or --log-format json -vv stderr ('-': stdin); "
                             "leave it out to read the cluster's records")
    parser.add_argument("-o", "--output", "--format", dest="format", choices=["html", "text"], default=None,
                        type=_format_name,
                        help="html: one page, no network needed to view it; text: for a terminal (default: text on a "
                             "terminal, html to a file or a pipe)")
    parser.add_argument("--output-file", dest="output_file", type=Path, default=None, metavar="FILE",
                        help="write to FILE (default: stdout)")
    parser.add_argument("--title", default=None, help="the page's title (default: from the events)")
    parser.add_argument("--sweep", type=sweep_number, default=None, metavar="N",
                        help="only the N-th sweep, counted from 1 in the file (its sweep.started events) or in the "
                             "ClusterVersion's history (oldest first); -1 or 'last' the last, -2 the one before")
    add_saved_flags(parser)
    parser.set_defaults(func=run)


def write_output(path: Path | None, text: str) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    from cvo.payload.limits import display_name

    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise UsageError(f"{display_name(str(path))}: cannot write the report: {err.strerror or err}") from None


def default_title(timeline: object, sweep: int | None = None) -> str:
    from cvo.report.model import Timeline

    assert isinstance(timeline, Timeline)
    sweeps = [f"{s.mode} {s.version}".strip() for s in timeline.sweeps if s.mode or s.version]
    head = "cvo report from the cluster's records" if timeline.from_records else "cvo sweep report"
    return (head + (f": {', '.join(dict.fromkeys(sweeps))}" if sweeps else "")
            + (f" (sweep {sweep})" if sweep is not None else ""))


def _from_events(args: argparse.Namespace) -> tuple[Timeline, str]:
    from cvo.payload.limits import display_name
    from cvo.report.events_io import EventsError, read_events
    from cvo.report.model import build_timeline

    for flag, given in (("--from-file", uses_saved_objects(args)), ("--now", args.now is not None),
                        ("--state", args.state is not None), ("--kubeconfig", bool(args.kubeconfig)),
                        ("--context", bool(args.context))):
        if given:
            raise UsageError(f"{flag}: cvo report EVENTS reads the events file, not a cluster "
                             "(leave EVENTS out to read the cluster's records)")
    try:
        read = read_events(args.events, args.sweep)
    except EventsError as err:
        raise UsageError(str(err)) from None
    return build_timeline(read.events), "<stdin>" if str(args.events) == "-" else display_name(str(args.events))


async def _optional(cluster: ReadOnlyCluster, ref: Ref) -> Object | None:
    from cvo.cluster.api import ApiError, ApiErrorKind

    try:
        return await cluster.get(ref)
    except ApiError as err:
        if err.kind not in (ApiErrorKind.FORBIDDEN, ApiErrorKind.UNAUTHORIZED, ApiErrorKind.NO_KIND_MATCH,
                            ApiErrorKind.NOT_FOUND):
            raise
        return None


def _graph_of(image: str, mode: str) -> Any:
    from cvo.payload.graph import Mode
    from cvo.runner.durations import release_graph

    return release_graph(image, None, Mode(mode))


def _from_cluster(args: argparse.Namespace) -> tuple[Timeline, str]:
    from cvo.cli.backend import ClusterOptions, backend_clock, open_reader
    from cvo.cluster.api import CLUSTER_OPERATOR, cv_ref
    from cvo.objects import ClusterOperator, ClusterVersion
    from cvo.report.model import select_sweep
    from cvo.report.records import ClusterRecords, records_timeline
    from cvo.runner.durations import RECORDS_REF
    from cvo.status.update_records import parse_records

    if args.now is not None and not uses_saved_objects(args):
        raise UsageError("--now is for saved objects (--from-file)")
    backend_options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(backend_options)
    found: dict[str, Any] = {}

    async def main() -> None:
        async with open_reader(backend_options, clock) as backend:
            cluster = backend.steady
            cv = await _optional(cluster, cv_ref())
            found["cv"] = None if cv is None else ClusterVersion.read(cv)
            found["cos"] = [ClusterOperator.read(o) for o in await cluster.list(*CLUSTER_OPERATOR)] \
                if cv is not None else []
            found["records"] = await _optional(cluster, RECORDS_REF)
            found["now"] = clock.now()
            found["where"] = backend.description

    run_loop(main)
    records = parse_records(found["records"])
    if found["cv"] is None and not records:
        raise CommandFailed(f"{found['where']}: no ClusterVersion and no sweep records: nothing to report")
    cos = sorted(found["cos"], key=lambda o: o.name)
    timeline = records_timeline(ClusterRecords(found["cv"], cos, records, found["now"], found["where"]), _graph_of)
    if args.sweep is not None:
        try:
            timeline = select_sweep(timeline, args.sweep)
        except IndexError:
            raise UsageError(f"--sweep {args.sweep}: the cluster's records hold {len(timeline.sweeps)} sweep(s)") \
                from None
    return timeline, found["where"]


def _format_name(text: str) -> str:
    """-o's value; a file name there (what --output meant before it meant the format, as everywhere) says where
    a file goes."""
    if text not in ("html", "text") and ("." in text or "/" in text):
        raise argparse.ArgumentTypeError(f"{text!r} looks like a file: -o/--output is the format (html or text); "
                                         f"write to a file with --output-file {text}")
    return text


def _format(args: argparse.Namespace) -> str:
    """-o/--output, as everywhere the format: text on a terminal, html to a file or a pipe unless given; an HTML
    page is not printed on a terminal (a hint to write it to a file instead)."""
    to_terminal = args.output_file is None and sys.stdout.isatty()
    if args.format is None:
        return "text" if to_terminal else "html"
    if args.format == "html" and to_terminal:
        raise UsageError("an HTML page is no use on a terminal: write it to a file (--output-file report.html) "
                         "and open it in a browser, or show text (-o text)")
    return str(args.format)


def run(args: argparse.Namespace) -> int:
    fmt = _format(args)
    if args.events is not None:
        timeline, source = _from_events(args)
    else:
        timeline, source = _from_cluster(args)
    title = args.title if args.title is not None else default_title(timeline, args.sweep)
    if fmt == "text":
        from cvo.report.text import render_text

        text = render_text(timeline, title)
    else:
        from cvo.report.html import render_html

        text = render_html(timeline, title, source)
    write_output(args.output_file, text)
    return EXIT_OK

