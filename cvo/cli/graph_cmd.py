"""``cvo graph build`` and ``cvo graph serve``: an update graph of your own, and an update service serving it.

``build`` reads releases (directories or images) and, with ``--graph-data``, a cincinnati-graph-data checkout,
and prints the graph builder's graph (:mod:`cvo.updates.build`); ``--channel`` prints what the update service
answers a cluster of that channel instead.  ``serve`` answers the update service's API from such a graph
(:mod:`cvo.updates.serve`) until interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cvo.cli.common import EXIT_OK, CommandFailed, UsageError
from cvo.cli.images import ImageFlags, add_registry_flags, is_image, pull
from cvo.cli.output import JSON, STRUCTURED, TEXT, add_output_flag, dump
from cvo.log import get_logger

if TYPE_CHECKING:
    from cvo.updates.build import ReleaseInfo
    from cvo.updates.graph import Graph

log = get_logger("cvo.graph")

GRAPH_EXAMPLES = """\
Examples:
  # A graph of the demo releases, then an update service answering from it on 127.0.0.1:8081
  cvo graph build payloads/demo-4.16.0 payloads/demo-4.16.3 payloads/demo-4.17.0 -o json > graph.json
  cvo graph serve graph.json
"""
BUILD_EXAMPLES = """\
Examples:
  # The graph builder's graph of three release directories, as JSON
  cvo graph build payloads/demo-4.16.0 payloads/demo-4.16.3 payloads/demo-4.17.0 -o json

  # With channels and blocked edges from a cincinnati-graph-data checkout
  cvo graph build payloads/demo-4.16.0 payloads/demo-4.16.3 payloads/demo-4.17.0 --graph-data hack/demo-graph-data

  # Release images, and what the service answers a cluster in stable-4.16 (a file:// upstream)
  cvo graph build oci:releases:4.16.0 oci:releases:4.16.3 --channel stable-4.16 -o json
"""
SERVE_EXAMPLES = """\
Examples:
  # Serve graph.json on 127.0.0.1:8081; ask it as the CVO does
  cvo graph serve graph.json
  curl -H 'Accept: application/json' 'http://127.0.0.1:8081/api/upgrades_info/v1/graph?channel=stable-4.16&arch=amd64'

  # On another port
  cvo graph serve graph.json --address 127.0.0.1:9000
"""
DEFAULT_ADDRESS = "127.0.0.1:8081"  # the policy engine's default address and port
MAX_GRAPH_FILE = 256 << 20


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    graph = sub.add_parser("graph", help="build an update graph from releases and serve it as an update service",
                           description="An update graph of your own: build it from releases as Cincinnati's graph "
                                       "builder does, serve it as the update service does (docs/graph.md).",
                           epilog=GRAPH_EXAMPLES)
    verbs = graph.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True

    build = verbs.add_parser("build", help="build a Cincinnati graph from release directories or images",
                             description="Build the update graph of RELEASEs: their versions, previous/next edges "
                                         "from their release-metadata, channels, and the blocked and conditional "
                                         "edges of a cincinnati-graph-data directory.", epilog=BUILD_EXAMPLES)
    build.add_argument("releases", nargs="+", metavar="RELEASE",
                       help="a release directory, or a release image (REGISTRY/REPO@sha256:…, REGISTRY/REPO:TAG, "
                            "oci:DIR[:TAG])")
    build.add_argument("--graph-data", type=Path, default=None, metavar="DIR",
                       help="a cincinnati-graph-data checkout: its version file, channels/ and blocked-edges/ "
                            "(and raw/metadata.json when present)")
    build.add_argument("--arch", default=None, metavar="GOARCH",
                       help="the architecture of the releases given as directories, and of the answer with "
                            "--channel (default: this machine's, as cvo's clusters report theirs)")
    build.add_argument("--channel", default=None, metavar="CHANNEL",
                       help="print what the update service answers a cluster in CHANNEL (of --arch) instead of "
                            "the whole graph: usable as a file:// upstream")
    add_registry_flags(build, timeout=True)
    add_output_flag(build, (TEXT, *STRUCTURED), "cvo graph build DIR… -o json > graph.json",
                    what="the graph (text: a summary by channel)")
    build.set_defaults(func=run_build)

    serve = verbs.add_parser("serve", help="serve a graph with the update service's HTTP API",
                             description="Answer GET /api/upgrades_info/v1/graph (and /graph) from GRAPH as "
                                         "Cincinnati's policy engine does: filtered by channel and architecture, "
                                         "400 for a missing or invalid channel, 406 for an Accept it cannot "
                                         "serve.  Runs until interrupted.", epilog=SERVE_EXAMPLES)
    serve.add_argument("graph", type=Path, metavar="GRAPH",
                       help="a graph as 'cvo graph build -o json' writes it (versions with +ARCH, "
                            "io.openshift.upgrades.graph.release.arch metadata)")
    serve.add_argument("--address", default=DEFAULT_ADDRESS, metavar="HOST:PORT",
                       help=f"where to listen (default {DEFAULT_ADDRESS}: loopback only; port 0 picks a free one)")
    serve.set_defaults(func=run_serve)


def _directory_release(directory: Path, arch: str) -> ReleaseInfo:
    from cvo.payload.limits import InputError, read_input
    from cvo.payload.manifest import ManifestError
    from cvo.updates.build import read_release_info

    path = directory / "release-manifests" / "release-metadata"
    try:
        data = read_input(path, str(path))
        return read_release_info(data, str(path), f"file://{directory.resolve()}", arch)
    except (InputError, ManifestError) as err:
        raise UsageError(str(err)) from None


def _image_release(spec: str, flags: ImageFlags) -> ReleaseInfo:
    from cvo.payload.limits import InputError, read_input
    from cvo.payload.manifest import ManifestError
    from cvo.updates.build import MULTI, read_release_info

    pulled = pull(spec, flags)
    path = pulled.directory / "release-manifests" / "release-metadata"
    arch = MULTI if pulled.index is not None else (pulled.config.architecture or "amd64")
    try:
        return read_release_info(read_input(path, f"{spec}: release-metadata"), f"{spec}: release-metadata",
                                 pulled.pull_spec, arch, pulled.digest)
    except (InputError, ManifestError) as err:
        raise UsageError(str(err)) from None


def build_from_args(args: argparse.Namespace) -> Graph:
    from cvo.payload.arch import go_arch
    from cvo.payload.limits import InputError
    from cvo.updates.build import build_graph
    from cvo.updates.graph_data import read_graph_data

    arch = args.arch or go_arch()
    flags: ImageFlags | None = None
    releases = []
    for spec in args.releases:
        if is_image(spec):
            flags = flags or ImageFlags.from_args(args)
            releases.append(_image_release(spec, flags))
        elif Path(spec).is_dir():
            releases.append(_directory_release(Path(spec), arch))
        else:
            raise UsageError(f"{spec}: neither a release directory nor a release image")
    try:
        data = None if args.graph_data is None else read_graph_data(args.graph_data)
        graph = build_graph(releases, data)
    except InputError as err:
        raise UsageError(str(err)) from None
    if args.channel is not None:
        from cvo.updates.serve import PolicyError, check_params, filter_graph

        try:
            channel, arch = check_params(args.channel, arch)
        except PolicyError as err:
            raise UsageError(f"--channel/--arch: {err.value}") from None
        graph = filter_graph(graph, channel, arch)
    return graph


def summary(graph: Graph) -> str:
    """The text output: releases, edges and conditional edges, and the releases of every channel."""
    from cvo.updates.build import CHANNELS_KEY

    by_channel: dict[str, list[str]] = {}
    for node in graph.nodes:
        for channel in filter(None, node.metadata.get(CHANNELS_KEY, "").split(",")):
            by_channel.setdefault(channel, []).append(node.version)
    conditional = sum(len(c.edges) for c in graph.conditional_edges)
    lines = [f"{len(graph.nodes)} releases, {len(graph.edges)} edges, {conditional} conditional edges"]
    if by_channel:
        width = max(len(c) for c in by_channel)
        lines += ["", f"{'CHANNEL':<{width}}  RELEASES"]
        lines += [f"{c:<{width}}  {' '.join(v)}" for c, v in sorted(by_channel.items())]
    return "\n".join(lines) + "\n"


def run_build(args: argparse.Namespace) -> int:
    graph = build_from_args(args)
    if args.output == TEXT:
        sys.stdout.write(summary(graph))
    elif args.output == JSON:  # compact, as the update service writes it: a graph can hold 100,000 edges
        sys.stdout.write(graph.dumps().decode() + "\n")
    else:
        sys.stdout.write(dump(graph.to_json(), args.output))
    return EXIT_OK


def parse_address(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--address {text!r}: want HOST:PORT, e.g. {DEFAULT_ADDRESS}")
    return host.strip("[]") or "127.0.0.1", int(port)


def read_graph_file(path: Path) -> Graph:
    from cvo.payload.limits import InputError, read_input
    from cvo.updates.graph import GraphInvalid, parse_graph

    try:
        return parse_graph(read_input(path, str(path), MAX_GRAPH_FILE))
    except InputError as err:
        raise UsageError(str(err)) from None
    except GraphInvalid as err:
        raise UsageError(f"{path}: not an update graph: {err}") from None


def run_serve(args: argparse.Namespace) -> int:
    from cvo.updates.serve import PATH_PREFIX, Answers, make_server

    host, port = parse_address(args.address)
    graph = read_graph_file(args.graph)
    answers = Answers(graph)
    if answers.unlabelled:
        log.warning("graph.unlabelled", nodes=answers.unlabelled,
                    message="releases without io.openshift.upgrades.graph.release.arch metadata are answered to no "
                            "architecture, as the update service drops them (build the graph with cvo graph build)")
    try:
        server = make_server(answers, host, port)
    except OSError as err:
        raise CommandFailed(f"--address {args.address}: cannot listen: {err.strerror or err}") from None
    bound_host, bound_port = server.server_address[:2]
    channels = sorted({c for c, _ in answers.bodies})
    print(f"Serving {args.graph} ({len(graph.nodes)} releases; channels: {', '.join(channels) or 'none'}) at "
          f"http://{bound_host!s}:{bound_port}{PATH_PREFIX}/v1/graph", flush=True)
    log.info("graph.serving", address=f"{bound_host!s}:{bound_port}", pid=os.getpid())
    from cvo.cli.signals import Interrupted, terminate_like_interrupt

    try:
        with terminate_like_interrupt():
            server.serve_forever()
    except (KeyboardInterrupt, Interrupted):
        # a server's normal end, as for cvo run: a supervisor (systemd, kubelet) stops it with SIGTERM
        log.info("graph.stopped", address=f"{bound_host!s}:{bound_port}")
    finally:
        server.server_close()
    return EXIT_OK
