"""``cvo lint``: findings that would hurt a sweep, with how to fix each."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from cvo.cli.common import EXIT_FAILED, EXIT_OK, add_payload_flags, load, payload_options
from cvo.cli.output import STRUCTURED, TEXT, add_output_flag, dump, is_structured
from cvo.plan.lint import Severity, lint

HELP = "check a release for problems a sweep would trip over (exit 1 on errors)"
DESCRIPTION = (
    "Check RELEASE_DIR for the problems a sweep would trip over: a ClusterOperator that would be waited on "
    "before its operator is deployed, the same object in two files, annotations the CVO refuses, documents "
    "no cluster profile includes... Each finding names its file and document, its rule and how to fix it. "
    "Exits 1 when there is an error, 0 otherwise."
)
EXAMPLES = """\
Examples:
  # Check a release before publishing it
  cvo lint payloads/demo-4.16.0

  # Errors only, as JSON for a CI job
  cvo lint payloads/demo-4.16.0 --min-severity error -o json

  # What a single-node cluster would trip over
  cvo lint payloads/demo-4.16.0 --profile single-node-developer
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("lint", help=HELP, description=DESCRIPTION, epilog=EXAMPLES)
    add_payload_flags(parser, read_only=True)
    add_output_flag(parser, (TEXT, *STRUCTURED), "cvo lint DIR -o json | jq '.findings[].rule'",
                    what="the findings and their summary")
    parser.add_argument("--min-severity", choices=[s.value for s in Severity], default="info",
                        help="hide findings below this severity (default: show all)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    options = payload_options(args)
    release = load(options, args.log_format)
    rank = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    limit = rank[Severity(args.min_severity)]
    findings = [f for f in lint(release) if rank[f.severity] <= limit]
    counts = Counter(str(f.severity) for f in findings)
    if is_structured(args.output):
        doc = {
            "version": release.version,
            "findings": [f.to_json() for f in findings],
            "summary": {s.value: counts.get(s.value, 0) for s in Severity},
        }
        sys.stdout.write(dump(doc, args.output))
    else:
        for f in findings:
            where = f.file + (f"#{f.document}" if f.document else "")
            print(f"{where}: {f.severity}: {f.message} [{f.rule}]")
        print(
            f"{len(release.all_manifests)} documents in {release.version}: "
            f"{counts.get('error', 0)} errors, {counts.get('warning', 0)} warnings, {counts.get('info', 0)} info"
        )
    return EXIT_FAILED if counts.get("error") else EXIT_OK
