"""``cvo upgrade path --to VERSION``: the updates from the cluster's version to VERSION over the update graph
(:mod:`cvo.updates.path`), each with its risks and gates; ``-o json|yaml|dot``.

The graph is ``--graph FILE|URL`` (a file as ``cvo graph build`` writes it, or an update service's URL), else
the cluster's ``spec.upstream`` (the default update service when it is empty) asked for ``spec.channel`` as
the CVO asks it.  The cluster also gives the current version (unless ``--from``), its architecture, its
``Upgradeable`` condition (a gate on minor hops) and the ``Recommended`` conditions of its conditional
updates.  With ``--from`` and ``--graph`` no cluster is read.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cvo.cli.backend import ClusterOptions, add_backend_flags, add_saved_flags, backend_clock, open_reader
from cvo.cli.common import EXIT_OK, CommandFailed, UsageError
from cvo.cli.output import STRUCTURED, TEXT, add_output_flag, dump

if TYPE_CHECKING:
    from cvo.objects import ClusterVersion
    from cvo.updates.graph import Graph
    from cvo.updates.path import UpdatePath

HELP = "plan the updates from the cluster's version to another over the update graph"
DESCRIPTION = (
    "Plan the way from the cluster's version to --to VERSION when no single update leads there: the fewest "
    "updates, then the newest releases, each update with the risks its conditional edge declares and the gates "
    "the cluster's Upgradeable condition puts on minor updates now."
)
EXAMPLES = """\
Examples:
  # From the embedded cluster's version, over its channel's graph from its upstream
  cvo upgrade path --to 4.17.0

  # Over a graph file, from a given version, without a cluster
  cvo upgrade path --graph graph.json --channel stable-4.17 --from 4.16.0 --to 4.17.0

  # As a Graphviz drawing
  cvo upgrade path --to 4.17.0 -o dot | dot -Tsvg > path.svg
"""
DOT = "dot"
DEFAULT_UPSTREAM = "https://api.openshift.com/api/upgrades_info/v1/graph"  # pkg/cvo/availableupdates.go defaultUpdateService
FETCH_TIMEOUT = 60.0
MAX_GRAPH_BODY = 64 << 20


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("upgrade-path", prog="cvo upgrade path", help=HELP, description=DESCRIPTION,
                            epilog=EXAMPLES)
    parser.add_argument("--to", dest="to_version", required=True, metavar="VERSION", help="the version to reach")
    parser.add_argument("--from", dest="from_version", default=None, metavar="VERSION",
                        help="start from this version instead of the cluster's current one")
    parser.add_argument("--graph", default=None, metavar="FILE|URL",
                        help="the update graph: a file ('cvo graph build -o json'), or an update service's URL "
                             "(default: the cluster's spec.upstream, else the default update service)")
    parser.add_argument("--channel", default=None, metavar="CHANNEL",
                        help="the channel whose graph to plan over (default: the cluster's spec.channel)")
    parser.add_argument("--arch", default=None, metavar="GOARCH",
                        help="the architecture asked for (default: the cluster's: multi for a multi-architecture "
                             "release, else this machine's)")
    add_backend_flags(parser)
    add_saved_flags(parser)
    add_output_flag(parser, (TEXT, *STRUCTURED, DOT), "cvo upgrade path --to 4.17.0 -o dot",
                    what="the path (dot: a Graphviz digraph)")
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class ClusterFacts:
    """What the path needs from the ClusterVersion."""

    version: str = ""
    channel: str = ""
    upstream: str = ""
    cluster_id: str = ""
    architecture: str = ""
    upgradeable: tuple[str, str] | None = None  # (reason, message) of Upgradeable=False
    recommended: dict[str, dict[str, Any]] | None = None  # target version -> its Recommended condition

    @classmethod
    def of(cls, cv: ClusterVersion) -> ClusterFacts:
        status, spec = cv.status, cv.spec
        condition = status.condition("Upgradeable")
        gate = (condition.reason, condition.message) if condition is not None and condition.status == "False" else None
        recommended: dict[str, dict[str, Any]] = {}
        for update in status.conditional_updates:
            found = update.condition("Recommended")
            if found is not None:
                recommended[update.release.version] = {"type": found.type, "status": found.status,
                                                       "reason": found.reason, "message": found.message}
        return cls(status.desired.version or status.current_version, spec.channel, spec.upstream, spec.cluster_id,
                   status.desired.architecture, gate, recommended)


def read_cluster(args: argparse.Namespace) -> ClusterFacts:
    from cvo.cluster.api import cv_ref
    from cvo.objects import ClusterVersion

    options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(options)
    found: list[ClusterFacts] = []

    async def main() -> None:
        async with open_reader(options, clock) as backend:
            cv = await backend.steady.get(cv_ref())
            if cv is None:
                raise CommandFailed("the cluster has no ClusterVersion 'version': nothing to plan from "
                                    "(give --from VERSION and --graph)")
            found.append(ClusterFacts.of(ClusterVersion.read(cv)))

    run_loop(main)
    return found[0]


def _read_file(path: Path) -> bytes:
    from cvo.payload.limits import InputError, read_input

    try:
        return read_input(path, str(path), MAX_GRAPH_BODY)
    except InputError as err:
        raise UsageError(str(err)) from None


def _fetch(upstream: str, *, arch: str, channel: str, cluster_id: str, version: str) -> bytes:
    import asyncio

    from cvo.updates.client import UpdateServiceOptions, fetch_graph
    from cvo.updates.errors import UpdateError

    options = UpdateServiceOptions(timeout=FETCH_TIMEOUT, max_body=MAX_GRAPH_BODY)
    try:
        return asyncio.run(fetch_graph(upstream, arch=arch, channel=channel, cluster_id=cluster_id, version=version,
                                       options=options))
    except UpdateError as err:  # RetrievedUpdates=False on a cluster: here the command fails with its reason
        raise CommandFailed(f"{upstream}: {err.reason}: {err.message}") from None


def load_graph(args: argparse.Namespace, facts: ClusterFacts, channel: str, arch: str, source: str) -> Graph:
    from cvo.updates.build import ARCH_KEY
    from cvo.updates.graph import GraphInvalid, parse_graph
    from cvo.updates.serve import PolicyError, check_params, filter_graph

    where = args.graph or facts.upstream or DEFAULT_UPSTREAM
    if args.graph is not None and "://" not in args.graph:
        body = _read_file(Path(args.graph))
    else:
        if not channel:
            raise UsageError("no channel: the cluster has no spec.channel; give --channel (cvo upgrade channel sets it)")
        body = _fetch(where, arch=arch, channel=channel, cluster_id=facts.cluster_id, version=source)
    try:
        graph = parse_graph(body)
    except GraphInvalid as err:
        raise CommandFailed(f"{where}: not an update graph: {err}") from None
    if any(ARCH_KEY in n.metadata for n in graph.nodes):  # the graph builder's graph: answer as the service would
        if not channel:
            raise UsageError(f"{where} holds every channel: give --channel (or set the cluster's spec.channel)")
        try:
            channel, arch = check_params(channel, arch)
        except PolicyError as err:
            raise UsageError(f"--channel/--arch: {err.value}") from None
        graph = filter_graph(graph, channel, arch)
    return graph


def run(args: argparse.Namespace) -> int:
    from cvo.payload.arch import go_arch
    from cvo.updates.path import Gate, NoPath, plan_path

    needs_cluster = args.from_version is None or args.graph is None
    facts = read_cluster(args) if needs_cluster else ClusterFacts()
    source = args.from_version or facts.version
    if not source:
        raise CommandFailed("the cluster reports no current version: give --from VERSION")
    channel = args.channel if args.channel is not None else facts.channel
    arch = args.arch or ("multi" if facts.architecture == "Multi" else go_arch())
    graph = load_graph(args, facts, channel, arch, source)
    gate = Gate("Upgradeable", *facts.upgradeable) if facts.upgradeable is not None else None
    try:
        path = plan_path(graph, source, args.to_version, channel=channel, gate=gate, recommended=facts.recommended)
    except NoPath as err:
        raise CommandFailed(str(err)) from None
    if args.output == TEXT:
        sys.stdout.write(render_text(path))
    elif args.output == DOT:
        sys.stdout.write(render_dot(path))
    else:
        sys.stdout.write(dump(path.to_json(), args.output))
    return EXIT_OK


def render_text(path: UpdatePath) -> str:
    from cvo.payload.limits import printable

    where = f" in {path.channel}" if path.channel else ""
    if not path.hops:
        return f"Already at {path.source}: no update needed.\n"
    count = len(path.hops)
    lines = [f"Update path from {path.source} to {path.target}{where}: {count} update{'s' if count > 1 else ''}", ""]
    rows = [("STEP", "FROM", "TO", "KIND", "RISKS", "GATES")]
    for i, hop in enumerate(path.hops, 1):
        risks = ",".join(printable(r.name, 60) for r in hop.risks) or "-"
        gates = ",".join(f"{g.type}=False" for g in hop.gates) or "-"
        rows.append((str(i), printable(hop.source, 40), printable(hop.target, 40), hop.kind, risks, gates))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]) - 1)]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
              for row in rows]
    notes: list[str] = []
    for i, hop in enumerate(path.hops, 1):
        for risk in hop.risks:
            notes.append(f"  step {i}, risk {printable(risk.name, 60)}: {printable(risk.message, 400)}"
                         + (f" ({printable(risk.url, 200)})" if risk.url else ""))
        if hop.recommended is not None:
            rec = hop.recommended
            notes.append(f"  step {i}, Recommended={rec.get('status', '')} ({rec.get('reason', '')}) for this "
                         f"cluster now: {printable(str(rec.get('message', '')), 400)}")
        for gate in hop.gates:
            notes.append(f"  step {i}, gate {gate.type}=False ({printable(gate.reason, 80)}): "
                         f"{printable(gate.message, 400)}")
    if notes:
        lines += ["", "Details:", *notes]
    return "\n".join(lines) + "\n"


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def render_dot(path: UpdatePath) -> str:
    """A Graphviz digraph of the path: a conditional update dashed and labelled with its risks, a gated one red."""
    lines = [f"digraph {_dot_quote('update path')} {{", "  rankdir=LR;", "  node [shape=box];"]
    versions = [path.source, *(h.target for h in path.hops)]
    for version in dict.fromkeys(versions):
        lines.append(f"  {_dot_quote(version)};")
    for hop in path.hops:
        attrs = [f"label={_dot_quote(hop.kind + ''.join(chr(10) + r.name for r in hop.risks))}"]
        if hop.risks:
            attrs.append("style=dashed")
        if hop.gates:
            attrs.append("color=red")
        lines.append(f"  {_dot_quote(hop.source)} -> {_dot_quote(hop.target)} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
