"""``cvo status``: the ClusterVersion and the ClusterOperators, like ``oc get clusterversion,co``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from cvo.cli.backend import add_backend_flags, add_saved_flags, backend_clock, open_backend
from cvo.cli.common import EXIT_OK, CommandFailed
from cvo.cluster.api import CLUSTER_OPERATOR, cv_ref
from cvo.gates.olm import OC_API_VERSION, OC_GROUP, OC_KIND

HELP = "show the ClusterVersion and every ClusterOperator"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("status", help=HELP, description=HELP.capitalize() + ".")
    add_backend_flags(parser)
    add_saved_flags(parser)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    clock, run_loop = backend_clock(args)
    found: dict[str, Any] = {}

    async def main() -> None:
        async with open_backend(args, clock, simulate_operators=False, create=False) as backend:
            cluster = backend.steady  # reads ride out a failing server for a while (cvo.cluster.persist)
            found["cv"] = await cluster.get(cv_ref())
            found["cos"] = sorted(await cluster.list(*CLUSTER_OPERATOR),
                                  key=lambda o: o.get("metadata", {}).get("name", ""))
            found["now"] = clock.now()
            served = await cluster.serves(OC_API_VERSION, OC_KIND)
            found["ocs"] = await cluster.list(OC_GROUP, OC_KIND) if served else []

    run_loop(main)
    if found.get("cv") is None:
        raise CommandFailed("no cluster has been installed yet: there is no ClusterVersion (cvo install RELEASE_DIR)")
    if args.output == "json":
        doc = {"clusterVersion": found["cv"], "clusterOperators": found["cos"],
               "operatorConditions": found["ocs"]}
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        from cvo.status.text import write_status_text

        write_status_text(found["cv"], found["cos"], found["now"], sys.stdout, found["ocs"])
    return EXIT_OK
