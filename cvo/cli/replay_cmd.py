"""``cvo replay FILE...``: run scenario files on a virtual clock; print the timeline and a verdict."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cvo.cli.common import EXIT_FAILED, EXIT_OK, UsageError
from cvo.cli.output import STRUCTURED, TEXT, add_output_flag, dump, is_structured
from cvo.runner.sweep_events import (
    AttemptFailed,
    AttemptStarted,
    ConditionChanged,
    Event,
    NodeFailed,
    OperatorDegraded,
    OperatorReady,
    PreconditionBlocked,
    PreconditionPassed,
    ScenarioAction,
    SweepCancelled,
    SweepCompleted,
    SweepStarted,
    SweepTimeout,
    TaskFailed,
    TaskWaiting,
)

if TYPE_CHECKING:
    from cvo.scenario.expect import Check
    from cvo.scenario.replay import ReplayOutcome

HELP = "replay scenario files on a simulated cluster; print the timeline and PASS/FAIL per expectation"
DESCRIPTION = (
    "Replay scenario files on the embedded cluster, on a virtual clock: each one sets up a cluster, runs its "
    "timed actions (install, upgrade, override, drift...) with simulated operators, prints what happened "
    "when, and checks every expectation: PASS or FAIL. Exits 1 if one fails. The format: docs/scenarios.md."
)
EXAMPLES = """\
Examples:
  # One scenario, with its timeline
  cvo replay scenarios/upgrade-degraded-exceeds-40m.yaml

  # Every scenario, verdicts only
  cvo replay scenarios/*.yaml -q

  # Every scenario's timeline as a web page, in reports/
  cvo replay scenarios/*.yaml --report reports
"""

# Events shown on the timeline (everything else is in --all).
TIMELINE: frozenset[type[Event]] = frozenset({
    ScenarioAction, SweepStarted, AttemptStarted, AttemptFailed, TaskWaiting, OperatorReady, OperatorDegraded,
    NodeFailed, TaskFailed, SweepCompleted, SweepTimeout, SweepCancelled, ConditionChanged, PreconditionBlocked,
    PreconditionPassed})


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("replay", help=HELP, description=DESCRIPTION, epilog=EXAMPLES)
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="scenario files (YAML: a cluster, releases, operators' behaviour, steps and expectations; docs/scenarios.md), e.g. scenarios/*.yaml")
    parser.add_argument("--all", action="store_true", help="print every event, not only the main ones")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the verdicts")
    add_output_flag(parser, (TEXT, *STRUCTURED), "cvo replay scenarios/*.yaml -q -o json | jq '.scenarios[].passed'",
                    what="the replays (json, yaml: scenarios, each with its expectations and, without -q, its "
                         "timeline's events as the events file writes them)")
    parser.add_argument("--events", type=Path, default=None, metavar="FILE",
                        help="write the replay's events to FILE as JSON lines (one scenario FILE only; cvo report)")
    parser.add_argument("--report", type=Path, default=None, metavar="DIR",
                        help="write each scenario's timeline report to DIR/NAME.html (cvo report; docs/report.md)")
    parser.set_defaults(func=run)


def _fields(fields: dict[str, object]) -> str:
    return " ".join(f"{k}={v!r}" if isinstance(v, str) and " " in v else f"{k}={v}" for k, v in fields.items()
                    if k not in ("nested",))


def _write_events(path: Path, events: list[Event]) -> None:
    from cvo.report.events_io import EventsError, EventsWriter

    try:
        with EventsWriter(path) as writer:
            for event in events:
                writer.emit(event)
    except EventsError as err:
        raise UsageError(str(err)) from None


def _write_report(directory: Path, path: Path, name: str, events: list[Event]) -> None:
    from cvo.payload.limits import display_name
    from cvo.report.html import render_html
    from cvo.report.model import build_timeline

    target = directory / f"{path.stem}.html"
    try:
        target.write_text(render_html(build_timeline(events), f"scenario: {name}", display_name(str(path))),
                          encoding="utf-8")
    except OSError as err:
        raise UsageError(f"{display_name(str(target))}: cannot write the report: {err.strerror or err}") from None


def _scenario_doc(args: argparse.Namespace, path: Path, outcome: ReplayOutcome,
                  checks: list[Check]) -> dict[str, object]:
    """One scenario's replay for ``-o json|yaml``."""
    import orjson

    from cvo.payload.limits import display_name
    from cvo.report.events_io import event_line

    doc: dict[str, object] = {
        "name": outcome.scenario.name, "file": display_name(str(path)), "passed": all(c.ok for c in checks),
        "result": outcome.result, "simulatedSeconds": outcome.elapsed,
        "expectations": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in checks],
    }
    if not args.quiet:
        doc["events"] = [orjson.loads(event_line(e)) for e in outcome.events if args.all or type(e) in TIMELINE]
    return doc


def run(args: argparse.Namespace) -> int:
    from cvo.scenario.expect import evaluate
    from cvo.scenario.model import ScenarioError, load_scenario
    from cvo.scenario.replay import replay

    if args.events is not None and len(args.files) != 1:
        raise UsageError(f"--events: one events file takes the replay of one scenario, not {len(args.files)}")
    if args.report is not None:
        from cvo.payload.limits import display_name

        try:  # before anything is replayed: a directory that cannot be made is bad input
            args.report.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise UsageError(f"{display_name(str(args.report))}: cannot make the report directory: "
                             f"{err.strerror or err}") from None
    failed = 0
    docs: list[dict[str, object]] = []
    for path in args.files:
        try:
            scenario = load_scenario(path)
            outcome = replay(scenario)
            checks = evaluate(outcome)
        except ScenarioError as err:
            raise UsageError(str(err)) from None
        if args.events is not None:
            _write_events(args.events, outcome.events)
        if args.report is not None:
            _write_report(args.report, path, scenario.name, outcome.events)
        bad = [c for c in checks if not c.ok]
        failed += bool(bad)
        if is_structured(args.output):
            docs.append(_scenario_doc(args, path, outcome, checks))
            continue
        if not args.quiet:
            print(f"== {scenario.name} ({path})")
            for event in outcome.events:
                if args.all or type(event) in TIMELINE:
                    offset = event.time - outcome.started
                    hours, rest = divmod(int(offset.total_seconds()), 3600)
                    print(f"  {hours:02d}:{rest // 60:02d}:{rest % 60:02d} {event.name} {_fields(event.fields)}")
        for check in checks:
            if not args.quiet or not check.ok:
                print(f"  {'PASS' if check.ok else 'FAIL'} {check.name}" + ("" if check.ok else f": {check.detail}"))
        verdict = "FAIL" if bad else "PASS"
        print(f"{verdict} {scenario.name}: {len(checks) - len(bad)}/{len(checks)} expectations, "
              f"result {outcome.result}, {outcome.elapsed / 60:.1f} simulated minutes")
    if is_structured(args.output):
        sys.stdout.write(dump({"scenarios": docs, "passed": len(args.files) - failed, "failed": failed}, args.output))
    if len(args.files) > 1:
        print(f"{len(args.files) - failed} passed, {failed} failed", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK
