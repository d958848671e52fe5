"""Which kinds the simulated API server serves, their scope, and which have a status subresource.

Three sources, looked up in this order:

* kinds bootstrapped into every cluster (ClusterVersion, ClusterOperator, OperatorCondition);
* kinds defined by an Established CustomResourceDefinition (registered by the cluster);
* whole API groups: the built-in Kubernetes groups and the groups OpenShift's aggregated API
  servers serve.  Any kind in such a group is served at any version; scope and status
  subresource come from the tables below, and a kind missing from them takes its scope from
  the request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cvo.cluster.api import CLUSTER_OPERATOR, CLUSTER_VERSION, OPERATOR_CONDITION
from cvo.payload.shapes import object_problem

GroupKind = tuple[str, str]

BUILTIN_GROUPS = frozenset({
    "", "apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io",
    "admissionregistration.k8s.io", "policy", "networking.k8s.io", "scheduling.k8s.io",
    "storage.k8s.io", "coordination.k8s.io", "discovery.k8s.io", "autoscaling", "certificates.k8s.io",
    "flowcontrol.apiserver.k8s.io", "node.k8s.io", "apiregistration.k8s.io", "resource.k8s.io",
})

OPENSHIFT_API_GROUPS = frozenset({
    "apps.openshift.io", "authorization.openshift.io", "build.openshift.io", "image.openshift.io",
    "oauth.openshift.io", "project.openshift.io", "quota.openshift.io", "route.openshift.io",
    "security.openshift.io", "template.openshift.io", "user.openshift.io",
})

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
NAMESPACE = ("", "Namespace")

CLUSTER_SCOPED: frozenset[GroupKind] = frozenset({
    ("", "Namespace"), ("", "Node"), ("", "PersistentVolume"), ("", "ComponentStatus"),
    ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    CRD, ("apiregistration.k8s.io", "APIService"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "StorageClass"), ("storage.k8s.io", "CSIDriver"), ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"), ("storage.k8s.io", "VolumeAttributesClass"),
    ("networking.k8s.io", "IngressClass"), ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"), ("node.k8s.io", "RuntimeClass"),
    ("certificates.k8s.io", "CertificateSigningRequest"), ("certificates.k8s.io", "ClusterTrustBundle"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("resource.k8s.io", "DeviceClass"), ("resource.k8s.io", "ResourceSlice"),
    ("security.openshift.io", "SecurityContextConstraints"), ("security.openshift.io", "RangeAllocation"),
    ("quota.openshift.io", "ClusterResourceQuota"), ("project.openshift.io", "Project"),
    ("project.openshift.io", "ProjectRequest"), ("user.openshift.io", "User"), ("user.openshift.io", "Group"),
    ("user.openshift.io", "Identity"), ("user.openshift.io", "UserIdentityMapping"),
    ("oauth.openshift.io", "OAuthClient"), ("oauth.openshift.io", "OAuthAccessToken"),
    ("oauth.openshift.io", "OAuthAuthorizeToken"), ("oauth.openshift.io", "UserOAuthAccessToken"),
    ("image.openshift.io", "Image"), ("image.openshift.io", "ImageSignature"),
    ("authorization.openshift.io", "ClusterRole"), ("authorization.openshift.io", "ClusterRoleBinding"),
    ("template.openshift.io", "BrokerTemplateInstance"),
})

NAMESPACED: frozenset[GroupKind] = frozenset({
    ("", "Pod"), ("", "Service"), ("", "ConfigMap"), ("", "Secret"), ("", "ServiceAccount"),
    ("", "Endpoints"), ("", "Event"), ("", "LimitRange"), ("", "ResourceQuota"),
    ("", "PersistentVolumeClaim"), ("", "ReplicationController"), ("", "PodTemplate"),
    ("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("apps", "ReplicaSet"),
    ("apps", "ControllerRevision"), ("batch", "Job"), ("batch", "CronJob"),
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "RoleBinding"),
    ("policy", "PodDisruptionBudget"), ("networking.k8s.io", "NetworkPolicy"),
    ("networking.k8s.io", "Ingress"), ("autoscaling", "HorizontalPodAutoscaler"),
    ("coordination.k8s.io", "Lease"), ("discovery.k8s.io", "EndpointSlice"),
    ("resource.k8s.io", "ResourceClaim"), ("resource.k8s.io", "ResourceClaimTemplate"),
    ("route.openshift.io", "Route"), ("image.openshift.io", "ImageStream"),
    ("image.openshift.io", "ImageStreamTag"), ("image.openshift.io", "ImageTag"),
    ("apps.openshift.io", "DeploymentConfig"), ("build.openshift.io", "Build"),
    ("build.openshift.io", "BuildConfig"), ("template.openshift.io", "Template"),
    ("template.openshift.io", "TemplateInstance"), ("authorization.openshift.io", "Role"),
    ("authorization.openshift.io", "RoleBinding"), ("authorization.openshift.io", "RoleBindingRestriction"),
    ("quota.openshift.io", "AppliedClusterResourceQuota"),
})

STATUS_SUBRESOURCE: frozenset[GroupKind] = frozenset({
    ("", "Pod"), ("", "Service"), ("", "Namespace"), ("", "Node"), ("", "PersistentVolume"),
    ("", "PersistentVolumeClaim"), ("", "ReplicationController"), ("", "ResourceQuota"),
    ("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("apps", "ReplicaSet"),
    ("batch", "Job"), ("batch", "CronJob"), ("policy", "PodDisruptionBudget"),
    ("autoscaling", "HorizontalPodAutoscaler"), ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "ServiceCIDR"), CRD, ("apiregistration.k8s.io", "APIService"),
    ("certificates.k8s.io", "CertificateSigningRequest"), ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("storage.k8s.io", "VolumeAttachment"), ("resource.k8s.io", "ResourceClaim"),
    ("route.openshift.io", "Route"), ("image.openshift.io", "ImageStream"), ("build.openshift.io", "Build"),
    ("build.openshift.io", "BuildConfig"), ("apps.openshift.io", "DeploymentConfig"),
    ("quota.openshift.io", "ClusterResourceQuota"), ("template.openshift.io", "TemplateInstance"),
    ("template.openshift.io", "BrokerTemplateInstance"),
})


@dataclass(frozen=True, slots=True)
class KindInfo:
    """How the server serves one kind."""

    group: str
    kind: str
    plural: str
    versions: frozenset[str] | None = None  # None: any version
    namespaced: bool | None = None  # None: unknown, the request decides
    status_subresource: bool = False

    def serves_version(self, version: str) -> bool:
        return self.versions is None or version in self.versions

    @property
    def resource(self) -> str:
        """``plural.group`` (``plural`` for the core group), as in API error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def guess_plural(kind: str) -> str:
    """The resource name Kubernetes' RESTMapper guesses for a kind (``UnsafeGuessKindToResource``)."""
    lower = kind.lower()
    if not lower:
        return lower
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"apps/v1"`` → ``("apps", "v1")``; ``"v1"`` → ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


def _bootstrap(group_kind: GroupKind, versions: Iterable[str], namespaced: bool) -> KindInfo:
    group, kind = group_kind
    return KindInfo(group, kind, guess_plural(kind), frozenset(versions), namespaced, True)


BOOTSTRAP_KINDS: dict[GroupKind, KindInfo] = {
    CLUSTER_VERSION: _bootstrap(CLUSTER_VERSION, ["v1"], False),
    CLUSTER_OPERATOR: _bootstrap(CLUSTER_OPERATOR, ["v1"], False),
    OPERATOR_CONDITION: _bootstrap(OPERATOR_CONDITION, ["v1", "v2"], True),
}


def builtin_kind(group: str, kind: str) -> KindInfo:
    """What the tables say about a kind of a group served wholesale."""
    namespaced = True if (group, kind) in NAMESPACED else False if (group, kind) in CLUSTER_SCOPED else None
    return KindInfo(group, kind, guess_plural(kind), None, namespaced, (group, kind) in STATUS_SUBRESOURCE)


def crd_problem(crd: Mapping[str, Any]) -> str | None:
    """Why the server would reject this CustomResourceDefinition, or ``None``.

    ``None`` also promises that :func:`crd_kind` and :func:`accepted_names` can read it: every field
    they read has its type (the API server's schema validation, which a real server does first).
    """
    shape = object_problem(*CRD, dict(crd))
    if shape is not None:
        return shape
    spec = crd["spec"]
    names = spec.get("names") or {}
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    if not group or not plural or not kind:
        return "spec.group, spec.names.plural and spec.names.kind are required"
    name = (crd.get("metadata") or {}).get("name")
    if name != f"{plural}.{group}":
        return f'metadata.name: Invalid value: "{name}": must be spec.names.plural+"."+spec.group'
    if not spec.get("versions"):
        return "spec.versions: Required value: must have exactly one version marked as storage version"
    return None


def crd_kind(crd: Mapping[str, Any]) -> KindInfo:
    """The kind a (valid) CustomResourceDefinition defines: served versions, scope, status subresource."""
    spec = crd["spec"]
    served = [v for v in spec["versions"] if v.get("served", True)]
    legacy_status = "status" in (spec.get("subresources") or {})
    status = legacy_status or any("status" in (v.get("subresources") or {}) for v in served)
    return KindInfo(spec["group"], spec["names"]["kind"], spec["names"]["plural"],
                    frozenset(v["name"] for v in served), spec.get("scope", "Namespaced") == "Namespaced", status)


def accepted_names(crd: Mapping[str, Any]) -> dict[str, Any]:
    """``status.acceptedNames``: the requested names with the server's defaults filled in."""
    names = dict(crd["spec"]["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", names["kind"] + "List")
    return names


class ServedKinds:
    """Discovery for the simulated server; scenarios may flip ``openshift_apis`` or set ``served_groups``."""

    def __init__(self, openshift_apis: bool = True, served_groups: Iterable[str] | None = None) -> None:
        self.openshift_apis = openshift_apis
        # When set, exactly these groups are served wholesale (instead of the built-in + OpenShift ones).
        self.served_groups: frozenset[str] | None = None if served_groups is None else frozenset(served_groups)
        self._crds: dict[str, KindInfo] = {}  # CRD name → the kind it serves
        self._crd_kinds: dict[GroupKind, KindInfo] = {}

    def groups(self) -> frozenset[str]:
        if self.served_groups is not None:
            return self.served_groups
        return BUILTIN_GROUPS | OPENSHIFT_API_GROUPS if self.openshift_apis else BUILTIN_GROUPS

    def lookup(self, group: str, kind: str) -> KindInfo | None:
        """The kind if served at some version."""
        info = BOOTSTRAP_KINDS.get((group, kind)) or self._crd_kinds.get((group, kind))
        if info is not None:
            return info
        return builtin_kind(group, kind) if group in self.groups() else None

    def serves(self, api_version: str, kind: str) -> bool:
        group, version = split_api_version(api_version)
        info = self.lookup(group, kind)
        return info is not None and info.serves_version(version)

    def describe(self, group: str, kind: str) -> KindInfo:
        """What is known about a kind, served or not (for scope and error messages)."""
        return self.lookup(group, kind) or builtin_kind(group, kind)

    def register_crd(self, name: str, info: KindInfo) -> None:
        if name in self._crds:
            self._crds[name] = info
            self._reindex()
        else:  # appended last, so it wins its (group, kind) just as a re-index would decide
            self._crds[name] = info
            self._crd_kinds[(info.group, info.kind)] = info

    def unregister_crd(self, name: str) -> KindInfo | None:
        info = self._crds.pop(name, None)
        self._reindex()
        return info

    def _reindex(self) -> None:
        self._crd_kinds = {(i.group, i.kind): i for i in self._crds.values()}
