"""What kubectl accepts as a kind on its command line, resolved to a group and kind: ``pdb``, ``pod``, ``pods``,
``Pod``, ``poddisruptionbudgets.policy``, ``mcp``, ``machineconfigpool.machineconfiguration.openshift.io``.

The built-in kinds come from the embedded server's tables (:mod:`cvo.cluster.embedded.kinds`, the groups a
Kubernetes and OpenShift API server serve), with kubectl's short names (``kubectl api-resources``); custom
kinds from the cluster's CustomResourceDefinitions (``spec.names``: kind, plural, singular, shortNames; their
scope), on any backend.  Pure functions over those.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cvo.cluster.embedded.kinds import BOOTSTRAP_KINDS, CLUSTER_SCOPED, NAMESPACED, guess_plural
from cvo.payload.fields import dig, mapping

# kubectl api-resources' SHORTNAMES of the kinds a cluster cvo talks to serves (and OpenShift's own)
SHORT_NAMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "ConfigMap"): ("cm",), ("", "Endpoints"): ("ep",), ("", "Event"): ("ev",), ("", "LimitRange"): ("limits",),
    ("", "Namespace"): ("ns",), ("", "Node"): ("no",), ("", "PersistentVolumeClaim"): ("pvc",),
    ("", "PersistentVolume"): ("pv",), ("", "Pod"): ("po",), ("", "ReplicationController"): ("rc",),
    ("", "ResourceQuota"): ("quota",), ("", "ServiceAccount"): ("sa",), ("", "Service"): ("svc",),
    ("apps", "DaemonSet"): ("ds",), ("apps", "Deployment"): ("deploy",), ("apps", "ReplicaSet"): ("rs",),
    ("apps", "StatefulSet"): ("sts",), ("batch", "CronJob"): ("cj",), ("policy", "PodDisruptionBudget"): ("pdb",),
    ("networking.k8s.io", "NetworkPolicy"): ("netpol",), ("networking.k8s.io", "Ingress"): ("ing",),
    ("autoscaling", "HorizontalPodAutoscaler"): ("hpa",), ("storage.k8s.io", "StorageClass"): ("sc",),
    ("scheduling.k8s.io", "PriorityClass"): ("pc",),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("crd", "crds"),
    ("config.openshift.io", "ClusterOperator"): ("co",),
    ("machineconfiguration.openshift.io", "MachineConfigPool"): ("mcp",),
    ("machineconfiguration.openshift.io", "MachineConfig"): ("mc",),
    ("security.openshift.io", "SecurityContextConstraints"): ("scc",),
    ("apps.openshift.io", "DeploymentConfig"): ("dc",), ("image.openshift.io", "ImageStream"): ("is",),
    ("image.openshift.io", "ImageStreamTag"): ("istag",), ("build.openshift.io", "BuildConfig"): ("bc",),
}


@dataclass(frozen=True)
class KindName:
    """A kind as the API serves it: its group, Kind, plural, whether namespaced, and the names kubectl takes."""

    group: str
    kind: str
    plural: str
    namespaced: bool
    short: tuple[str, ...] = field(default=())

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def typed(self) -> str:
        """``poddisruptionbudget.policy`` (``pod`` for the core group): how kubectl names what it changed."""
        return f"{self.singular}.{self.group}" if self.group else self.singular

    @property
    def resource(self) -> str:
        """``poddisruptionbudgets.policy``: how the API server names it in its errors."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def names(self) -> set[str]:
        return {self.singular, self.plural, self.kind.lower(), *self.short}


def builtin_kinds() -> list[KindName]:
    out = [KindName(g, k, guess_plural(k).lower(), (g, k) in NAMESPACED, SHORT_NAMES.get((g, k), ()))
           for g, k in sorted(NAMESPACED | CLUSTER_SCOPED)]
    out += [KindName(info.group, info.kind, info.plural.lower(), bool(info.namespaced),
                     SHORT_NAMES.get((info.group, info.kind), ())) for info in BOOTSTRAP_KINDS.values()]
    return out


def crd_kinds(crds: Iterable[Mapping[str, Any]]) -> list[KindName]:
    """The kinds the CustomResourceDefinitions define (whatever is not well-formed is left out)."""
    out = []
    for crd in crds:
        names = mapping(dig(crd, "spec", "names"))
        group, kind, plural = dig(crd, "spec", "group"), names.get("kind"), names.get("plural")
        if not all(isinstance(v, str) and v for v in (group, kind, plural)):
            continue
        short = tuple(s.lower() for s in names.get("shortNames") or () if isinstance(s, str))
        singular = names.get("singular")
        if isinstance(singular, str) and singular:
            short += (singular.lower(),)
        out.append(KindName(str(group), str(kind), str(plural).lower(), dig(crd, "spec", "scope") != "Cluster",
                            short or SHORT_NAMES.get((str(group), str(kind)), ())))
    return out


def resolve(name: str, kinds: Iterable[KindName]) -> KindName | None:
    """The kind ``name`` means (``pdb``, ``Pod``, ``pods``, ``deployments.apps``, ``Deployment.apps``), or None.
    A name several groups define is the one of the core group, else the first by group (kubectl's preference
    of its built-in groups, roughly)."""
    base, _, group = name.strip().partition(".")
    base = base.lower()
    matches = [k for k in kinds if base in k.names() and (not group or k.group == group)]
    if not matches:
        return None
    return min(matches, key=lambda k: (k.group != "", k.group))


def unknown(name: str, kinds: Iterable[KindName]) -> str:
    """The error for a kind nobody serves: kubectl's words, with the closest names (a typo)."""
    every = sorted({n for k in kinds for n in k.names()})
    close = difflib.get_close_matches(name.lower(), every, n=3, cutoff=0.7)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f'the server doesn\'t have a resource type "{name}"{hint}'
