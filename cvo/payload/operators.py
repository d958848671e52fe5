"""Which Deployments of a payload are the operators behind its ClusterOperators.

The CVO's contract (openshift/enhancements dev-guide/cluster-version-operator/dev/clusteroperator.md) ties a ClusterOperator to "the deployment for the operator that is
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
    """ClusterOperator name -> the Deployments of its component that run its operator, in payload order.

    Those are the component's Deployments that sort before the ClusterOperator (a component may
    deploy more operators later, e.g. OLM's run level 51); when none does, all of the component's
    Deployments: the trap clusteroperator.md warns of, where the operator comes after the ClusterOperator it reports.
    """
    by_component: dict[str, list[tuple[int, Manifest]]] = defaultdict(list)
    for index, m in enumerate(manifests):
        parsed = parse_filename(m.file)
        if parsed and m.kind == "Deployment" and m.group == "apps" and m.annotations.get(DELETE_ANNOTATION) != "true":
            by_component[parsed[1]].append((index, m))
    out: dict[str, list[Manifest]] = {}
    for index, m in enumerate(manifests):
        if is_cluster_operator(m):
            parsed = parse_filename(m.file)
            candidates = by_component.get(parsed[1], []) if parsed else []
            before = [d for i, d in candidates if i < index]
            out[m.name] = before or [d for _, d in candidates]
    return out
