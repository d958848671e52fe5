"""``cvo get``: the objects cvo reads from a cluster, saved as one ``kind: List`` that ``--from-file`` reads back.

A must-gather of cvo's own: the ClusterVersion, the ClusterOperators, the OperatorConditions, the FeatureGate,
the ConfigMaps cvo reads (its sweep records, the admin gates and acknowledgements), and what ``cvo upgrade
status`` reads of the nodes as oc does: the MachineConfigPools, the Nodes, the rendered MachineConfigs the nodes
name (not every MachineConfig: rendered ones are up to a megabyte each) and the machine-config operator's
Deployment.  Every read-only
command then works on the file as on the cluster (``cvo status --from-file``, ``cvo upgrade status
--from-file``, ``cvo report --from-file``, ``cvo upgrade --dry-run --from-file``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cvo.cli.backend import ClusterOptions, add_backend_flags, backend_clock, open_reader
from cvo.cli.common import EXIT_OK, UsageError
from cvo.cli.output import JSON, NAME, YAML, add_output_flag, dump, kubectl_name
from cvo.cluster.api import ApiError, ApiErrorKind
from cvo.status.node_state import CURRENT_CONFIG, DESIRED_CONFIG

HELP = "save what cvo reads from a cluster as one kind: List, for --from-file (a must-gather of cvo's own)"
DESCRIPTION = ("Print the objects cvo reads from the cluster as one 'kind: List' document: the ClusterVersion, the "
               "ClusterOperators, the OperatorConditions, the FeatureGate, the ConfigMaps cvo reads (its sweep "
               "records, admin gates and acknowledgements), and the MachineConfigPools, the Nodes, the MachineConfigs "
               "the nodes name and the machine-config operator's Deployment. Every command that reads a cluster reads the file back "
               "with --from-file FILE.")
EPILOG = """\
Examples:
  # Save the cluster as cvo sees it, and look at it later (or elsewhere)
  cvo get -o yaml > cluster.yaml
  cvo status --from-file cluster.yaml
  cvo upgrade status --from-file cluster.yaml --details all

  # Only the ClusterOperators
  cvo get clusteroperators -o json
"""

MC_GROUP = "machineconfiguration.openshift.io"
NODES_NAME = ("<named by the nodes>",)  # names: those the saved Nodes' config annotations name
# (resource name, group, kind, namespace or None for every namespace, names or None for all): what cvo reads
SAVED: tuple[tuple[str, str, str, str | None, tuple[str, ...] | None], ...] = (
    ("clusterversions", "config.openshift.io", "ClusterVersion", None, None),
    ("clusteroperators", "config.openshift.io", "ClusterOperator", None, None),
    ("operatorconditions", "operators.coreos.com", "OperatorCondition", None, None),
    ("featuregates", "config.openshift.io", "FeatureGate", None, None),
    ("configmaps", "", "ConfigMap", "openshift-cluster-version", None),
    ("configmaps", "", "ConfigMap", "openshift-config-managed", ("admin-gates",)),
    ("configmaps", "", "ConfigMap", "openshift-config", ("admin-acks",)),
    ("machineconfigpools", MC_GROUP, "MachineConfigPool", None, None),
    ("nodes", "", "Node", None, None),
    ("machineconfigs", MC_GROUP, "MachineConfig", None, NODES_NAME),  # the nodes' currentConfig/desiredConfig
    ("deployments", "apps", "Deployment", "openshift-machine-config-operator", ("machine-config-operator",)),
)
RESOURCES = sorted({r[0] for r in SAVED})


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("get", help=HELP, description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("resources", nargs="*", metavar="RESOURCE", choices=[[], *RESOURCES],
                        help=f"only these ({', '.join(RESOURCES)}; default: all of them)")
    add_output_flag(parser, (YAML, JSON, NAME), "cvo get -o yaml > cluster.yaml", what="the objects")
    parser.set_defaults(output=YAML)
    add_backend_flags(parser, runs_the_clock=False)
    parser.set_defaults(func=run)


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    """As ``kubectl get -o yaml`` writes it, without managedFields (noise for a reader of the file)."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("managedFields", None)
    return {**obj, "metadata": meta}


def _configs_named(items: list[dict[str, Any]]) -> list[str]:
    """The MachineConfigs the saved Nodes' ``currentConfig`` and ``desiredConfig`` annotations name."""
    names: list[str] = []
    for obj in items:
        if obj.get("kind") == "Node" and isinstance(annotations := (obj.get("metadata") or {}).get("annotations"), dict):
            names.extend(str(annotations[key]) for key in (CURRENT_CONFIG, DESIRED_CONFIG) if annotations.get(key))
    return names


def run(args: argparse.Namespace) -> int:
    wanted = set(args.resources or RESOURCES)
    backend_options = ClusterOptions.from_args(args)
    if backend_options.saved:
        raise UsageError("--from-file: cvo get reads a cluster; the file is already what it would write")
    clock, run_loop = backend_clock(backend_options)
    items: list[dict[str, Any]] = []

    async def main() -> None:
        async with open_reader(backend_options, clock, say_where=True) as backend:
            cluster = backend.steady
            for resource, group, kind, namespace, names in SAVED:
                if resource not in wanted:
                    continue
                try:
                    found = await cluster.list(group, kind, namespace)
                except ApiError as err:
                    if err.kind in (ApiErrorKind.NO_KIND_MATCH, ApiErrorKind.NOT_FOUND, ApiErrorKind.FORBIDDEN):
                        continue  # a kind the cluster does not serve (or lets us read) is not saved
                    raise
                if names is NODES_NAME:
                    names = tuple(_configs_named(items))
                for obj in sorted(found, key=lambda o: (o.get("metadata", {}).get("namespace") or "",
                                                        o.get("metadata", {}).get("name") or "")):
                    if names is None or obj.get("metadata", {}).get("name") in names:
                        items.append(_clean(dict(obj)))

    run_loop(main)
    if args.output == NAME:
        for obj in items:
            group = str(obj.get("apiVersion", "")).rpartition("/")[0]
            sys.stdout.write(kubectl_name(group, str(obj.get("kind", "")), obj["metadata"]["name"]) + "\n")
        return EXIT_OK
    sys.stdout.write(dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items},
                          args.output))
    return EXIT_OK
