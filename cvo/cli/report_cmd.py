"""``cvo report EVENTS``: a sweep's timeline with its critical path, as one HTML page or as text."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cvo.cli.common import EXIT_OK, UsageError

HELP = "show a sweep's events as a timeline with its critical path: one self-contained HTML page, or text"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("report", help=HELP, description=HELP.capitalize() + " (docs/report.md).")
    parser.add_argument("events", type=Path, metavar="EVENTS",
                        help="JSON lines of events: from --events FILE, or --log-format json -vv stderr ('-': stdin)")
    parser.add_argument("-o", "--format", dest="format", choices=["html", "text"], default="html",
                        help="html (default): one page, no network needed to view it; text: for a terminal")
    parser.add_argument("--output", type=Path, default=None, metavar="FILE", help="write to FILE (default: stdout)")
    parser.add_argument("--title", default=None, help="the page's title (default: from the events)")
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


def default_title(timeline: object) -> str:
    from cvo.report.model import Timeline

    assert isinstance(timeline, Timeline)
    sweeps = [f"{s.mode} {s.version}".strip() for s in timeline.sweeps if s.mode or s.version]
    return "cvo sweep report" + (f": {', '.join(dict.fromkeys(sweeps))}" if sweeps else "")


def run(args: argparse.Namespace) -> int:
    from cvo.payload.limits import display_name
    from cvo.report.events_io import EventsError, read_events
    from cvo.report.model import build_timeline

    try:
        read = read_events(args.events)
    except EventsError as err:
        raise UsageError(str(err)) from None
    timeline = build_timeline(read.events)
    title = args.title if args.title is not None else default_title(timeline)
    source = "<stdin>" if str(args.events) == "-" else display_name(str(args.events))
    if args.format == "text":
        from cvo.report.text import render_text

        text = render_text(timeline, title)
    else:
        from cvo.report.html import render_html

        text = render_html(timeline, title, source)
    write_output(args.output, text)
    return EXIT_OK
