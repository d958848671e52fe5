"""``cvo status``: the ClusterVersion and the ClusterOperators, like ``oc get clusterversion,co``.

``-w``/``--watch`` prints them, then again whenever the ClusterVersion, a ClusterOperator or an
OperatorCondition changes (``kubectl get -w``), until Ctrl-C (which ends a watch normally: exit 0): the way
to follow a controller (``cvo run``) at work.  On a terminal the text view is redrawn in place, cut to the
terminal's height (as ``watch`` does), so the ClusterVersion's line never scrolls away; piped, text views are
separated by a blank line; ``-o json`` prints one document per line, ``-o yaml`` one document after each ``---``.

``-o wide`` adds columns to the tables, ``-o name`` prints ``kubectl get -o name`` lines (the ClusterVersion,
then every ClusterOperator), ``--no-headers`` leaves the tables' header lines out (:mod:`cvo.cli.output`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from datetime import datetime

from cvo.cli.backend import (
    ClusterOptions,
    Reader,
    add_backend_flags,
    add_saved_flags,
    backend_clock,
    open_reader,
    uses_saved_objects,
)
from cvo.cli.common import EXIT_OK, CommandFailed, UsageError, terminal_rows, terminal_width
from cvo.cli.output import (
    NAME,
    STRUCTURED,
    TEXT,
    WIDE,
    add_no_headers_flag,
    add_output_flag,
    dump,
    kubectl_name,
)
from cvo.cluster.api import CLUSTER_OPERATOR, CLUSTER_VERSION, ReadOnlyCluster, cv_ref
from cvo.gates.olm import OC_API_VERSION, OC_GROUP, OC_KIND
from cvo.objects import ClusterOperator, ClusterVersion, Object, OperatorCondition

HELP = "show the cluster's version and its operators"
DESCRIPTION = (
    "Show the cluster's version and every operator's, as 'oc get clusterversion,clusteroperators' does, then "
    "whether minor updates may start (Upgradeable) and, if not, which operator or admin override holds "
    "them back. Reading creates no cluster: with none installed yet it says so and exits 1."
)
EXAMPLES = """\
Examples:
  # The embedded cluster
  cvo status

  # Follow it while it changes (another command or 'cvo run' is upgrading it), until Ctrl-C
  cvo status -w

  # More columns: the desired version, Failing, Upgradeable and the operators' reasons
  cvo status -o wide

  # A kind cluster, as JSON
  cvo status --context kind-kind -o json

  # A cluster you cannot reach, from the objects of a must-gather
  cvo status --from-file must-gather/cluster-scoped-resources
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("status", help=HELP, description=DESCRIPTION, epilog=EXAMPLES)
    add_backend_flags(parser, runs_the_clock=False)
    add_saved_flags(parser)
    add_output_flag(parser, (TEXT, *STRUCTURED, WIDE, NAME), "cvo status -o wide; cvo status -o name",
                    what="the ClusterVersion and the ClusterOperators")
    add_no_headers_flag(parser, "cvo status -o wide --no-headers")
    parser.add_argument("-w", "--watch", action="store_true",
                        help="print again whenever the ClusterVersion, a ClusterOperator or an OperatorCondition "
                             "changes, until Ctrl-C (-o json: one document per line; -o yaml: documents "
                             "separated by ---; e.g. cvo status -w -o json | jq .clusterVersion.status.desired)")
    parser.set_defaults(func=run)


@dataclass
class Found:
    """What ``cvo status`` shows, read once into views (:mod:`cvo.objects`)."""

    cv: ClusterVersion | None
    cos: list[ClusterOperator]
    ocs: list[OperatorCondition]
    now: datetime


async def _read(cluster: ReadOnlyCluster, now: datetime) -> Found:
    raw = await cluster.get(cv_ref())
    cos = sorted((ClusterOperator.read(o) for o in await cluster.list(*CLUSTER_OPERATOR)), key=lambda o: o.name)
    served = await cluster.serves(OC_API_VERSION, OC_KIND)
    ocs = [OperatorCondition.read(o) for o in await cluster.list(OC_GROUP, OC_KIND)] if served else []
    return Found(None if raw is None else ClusterVersion.read(raw), cos, ocs, now)


def _render(found: Found, output: str, *, one_line: bool = False, headers: bool = True) -> str:
    assert found.cv is not None
    if output in STRUCTURED:  # the objects as read: a field of the wrong shape is left out (and warned about)
        doc = {"clusterVersion": found.cv.body, "clusterOperators": [co.body for co in found.cos],
               "operatorConditions": [oc.body for oc in found.ocs]}
        return dump(doc, output, stream=one_line)
    if output == NAME:  # as `oc get clusterversion,clusteroperators -o name`
        return "".join(f"{name}\n" for name, _ in _names(found))
    import io

    from cvo.status.text import write_status_text

    out = io.StringIO()
    write_status_text(found.cv, found.cos, found.now, out, found.ocs, wide=output == WIDE,
                      headers=headers, width=None if output == WIDE else terminal_width(sys.stdout))
    return out.getvalue()


def _names(found: Found) -> list[tuple[str, Object]]:
    """(``kubectl get -o name`` line, object): the ClusterVersion, then the ClusterOperators by name."""
    assert found.cv is not None
    named: list[tuple[str, Object]] = [(kubectl_name(*CLUSTER_VERSION, found.cv.name), found.cv)]
    return named + [(kubectl_name(*CLUSTER_OPERATOR, co.name), co) for co in found.cos]


def _changed_names(found: Found, seen: dict[str, bytes]) -> str:
    """The lines of the objects that are new or changed since ``seen`` (which is updated)."""
    import orjson

    lines = []
    for name, obj in _names(found):
        content = orjson.dumps(obj.body)
        if seen.get(name) != content:
            seen[name] = content
            lines.append(f"{name}\n")
    return "".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.watch:
        if uses_saved_objects(args):
            raise UsageError("-w cannot be used with --from-file: saved objects do not change")
        return _watch(args)
    backend_options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(backend_options)
    read: list[Found] = []

    async def main() -> None:
        async with open_reader(backend_options, clock, say_where=True) as backend:
            # reads ride out a failing server for a while (cvo.cluster.persist)
            read.append(await _read(backend.steady, clock.now()))

    run_loop(main)
    found = read[0]
    if found.cv is None:
        raise CommandFailed("no cluster has been installed yet: there is no ClusterVersion (cvo install RELEASE_DIR)")
    sys.stdout.write(_render(found, args.output, headers=not args.no_headers))
    return EXIT_OK


def _watch(args: argparse.Namespace) -> int:
    """Print, then print again on every change, until a signal (exit 130 for Ctrl-C, 143 for SIGTERM).

    In real time on either backend: on the embedded cluster, other processes' writes reach the watches
    through the store's poller (:mod:`cvo.cluster.embedded.poller`).
    """
    import signal

    from cvo.cli.signals import Interrupted, cancelled_by_signals
    from cvo.clock import run_real
    from cvo.cluster.informer import Informer

    backend_options = ClusterOptions.from_args(args)
    clock, _ = backend_clock(backend_options)

    async def watch(backend: Reader) -> None:
        from cvo.cluster.persist import Budget, steady
        from cvo.runner.upgrade import first_change

        reads = steady(backend.cluster, Budget.of(None))  # a watch rides out any outage
        watchers = [Informer(reads, *CLUSTER_VERSION), Informer(reads, *CLUSTER_OPERATOR)]
        if await reads.serves(OC_API_VERSION, OC_KIND):
            watchers.append(Informer(reads, OC_GROUP, OC_KIND))
        for w in watchers:
            await w.start()
        last, waiting_said = "", False
        seen: dict[str, bytes] = {}
        rows = terminal_rows(sys.stdout)
        redraw = rows if rows is not None and args.output in (TEXT, WIDE) else None
        try:
            while True:
                marks = [w.mark() for w in watchers]
                found = await _read(reads, clock.now())
                if found.cv is None:
                    if not waiting_said:
                        print("no ClusterVersion yet: waiting for one (cvo install, or cvo run)", file=sys.stderr,
                              flush=True)
                        waiting_said = True
                else:
                    if args.output == NAME:  # kubectl get -w -o name: the name of each object that changed
                        view = _changed_names(found, seen)
                    else:
                        view = _render(found, args.output, one_line=True, headers=not args.no_headers)
                        if view == last:
                            view = ""
                        elif redraw is not None:
                            last, view = view, _screen(view, redraw)
                        else:
                            view, last = ("\n" if last and args.output in (TEXT, WIDE) else "") + view, view
                    if view:
                        sys.stdout.write(view)
                        sys.stdout.flush()
                await first_change(watchers, marks)
        finally:
            for w in watchers:
                await w.stop()

    async def main() -> None:
        async with open_reader(backend_options, clock, say_where=True) as backend:
            await watch(backend)

    try:
        run_real(lambda: cancelled_by_signals(main))
    except Interrupted as stopped:
        if stopped.signum != signal.SIGINT:
            raise
        print(file=sys.stderr)  # Ctrl-C ends a watch (as kubectl get -w): not an error
    return EXIT_OK


CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear the screen


def _screen(view: str, rows: int) -> str:
    """``view`` as one screen: cleared first, under a line saying how to stop, cut to ``rows`` lines (the
    ClusterVersion's line first, so it is never what scrolls away) with a last line saying what was cut."""
    lines = ["cvo status -w: redrawn on every change (Ctrl-C to stop)", "", *view.rstrip("\n").split("\n")]
    if len(lines) > rows:
        cut = len(lines) - (rows - 1)
        lines = [*lines[:rows - 1], f"… {cut} more line{'s' if cut != 1 else ''} (cvo status shows them all)"]
    return CLEAR + "\n".join(lines[:-1]) + "\n" + lines[-1]
