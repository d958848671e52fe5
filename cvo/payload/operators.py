"""Which Deployments of a payload are the operators behind its ClusterOperators.

The CVO's contract (seed 004) ties a ClusterOperator to "the deployment for the operator that is
supposed to report" it; in a payload that is the Deployment in the same component (the file-name
component, ``0000_NN_<component>_``).  Deployments a manifest deletes do not count.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from cvo.payload.graph import parse_filename
from cvo.payload.manifest import DELETE_ANNOTATION, Manifest


def is_cluster_operator(m: Manifest) -> bool:
    return m.kind == "ClusterOperator" and m.group == "config.openshift.io"


def operator_deployments(manifests: Sequence[Manifest]) -> dict[str, list[Manifest]]:
    """ClusterOperator name -> the Deployments of its component, in payload order."""
    by_component: dict[str, list[Manifest]] = defaultdict(list)
    for m in manifests:
        parsed = parse_filename(m.file)
        if parsed and m.kind == "Deployment" and m.group == "apps" and m.annotations.get(DELETE_ANNOTATION) != "true":
            by_component[parsed[1]].append(m)
    out: dict[str, list[Manifest]] = {}
    for m in manifests:
        if is_cluster_operator(m):
            parsed = parse_filename(m.file)
            out[m.name] = list(by_component.get(parsed[1], [])) if parsed else []
    return out
