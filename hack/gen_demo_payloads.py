#!/usr/bin/env python3
"""Generate the demo release payloads under ``payloads/``.

Three releases of a small OpenShift-like product are written, each laid out the
way the Cluster Version Operator expects a release directory::

    payloads/demo-<version>/manifests/             CVO's own manifests (Go-templated)
    payloads/demo-<version>/release-manifests/     everything else, plus
        release-metadata                          Cincinnati metadata (JSON)
        image-references                          ImageStream named <version> (JSON)

Releases: 4.16.0, 4.16.3 (patch: same structure, new versions/digests) and
4.17.0 (minor: Kubernetes bump, one component dropped with a delete manifest,
one component added).

Usage::

    python hack/gen_demo_payloads.py            # rewrite payloads/
    python hack/gen_demo_payloads.py --check    # verify payloads/ is up to date
    python hack/gen_demo_payloads.py --out DIR  # write somewhere else

Python 3.11, stdlib + PyYAML only. Output is fully deterministic (no clocks, no
randomness; image digests are sha256(tag + ":" + version)).
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "payloads"

REGISTRY = "quay.io/demo/release"

HA = "include.release.openshift.io/self-managed-high-availability"
SNO = "include.release.openshift.io/single-node-developer"
CAPABILITY = "capability.openshift.io/name"
CREATE_ONLY = "release.openshift.io/create-only"
DELETE = "release.openshift.io/delete"
FEATURE_SET = "release.openshift.io/feature-set"
FEATURE_GATE = "release.openshift.io/feature-gate"
EXCLUDE_HOSTED = "exclude.release.openshift.io/internal-openshift-hosted"
INJECT_PROXY = "config.openshift.io/inject-proxy"

# Same regex the CVO uses (pkg/payload/task_graph.go), used by the self-check.
FILENAME_RE = re.compile(r"^0000_(\d+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_", re.ASCII)


# --------------------------------------------------------------------------------------------
# Releases
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    version: str
    previous: tuple[str, ...]
    channels: str  # comma separated, deliberately not sorted (the CVO sorts them)
    kube: str  # kube-apiserver / kube-controller-manager / kube-scheduler operand
    etcd: str
    coredns: str
    haproxy: str
    samples: bool  # cluster-samples-operator shipped (dropped in 4.17)
    samples_tombstone: bool  # ship the delete manifest for its Deployment
    olm: bool  # cluster-olm-operator shipped (new in 4.17)
    ingress_idle_termination: bool  # CRD schema addition in 4.17

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def dirname(self) -> str:
        return f"demo-{self.version}"


RELEASES: tuple[Release, ...] = (
    Release(
        version="4.16.0",
        previous=("4.15.17", "4.15.18"),
        channels="stable-4.16,fast-4.16,candidate-4.16",
        kube="1.29.4",
        etcd="3.5.13",
        coredns="1.11.1",
        haproxy="2.8.5",
        samples=True,
        samples_tombstone=False,
        olm=False,
        ingress_idle_termination=False,
    ),
    Release(
        version="4.16.3",
        previous=("4.16.0",),
        channels="stable-4.16,fast-4.16,candidate-4.16",
        kube="1.29.4",
        etcd="3.5.13",
        coredns="1.11.3",
        haproxy="2.8.10",
        samples=True,
        samples_tombstone=False,
        olm=False,
        ingress_idle_termination=False,
    ),
    Release(
        version="4.17.0",
        previous=("4.16.0", "4.16.3"),
        channels="stable-4.17,fast-4.17,candidate-4.17",
        kube="1.30.2",
        etcd="3.5.14",
        coredns="1.11.3",
        haproxy="2.8.10",
        samples=False,
        samples_tombstone=True,
        olm=True,
        ingress_idle_termination=True,
    ),
)


def digest(tag: str, version: str) -> str:
    return hashlib.sha256(f"{tag}:{version}".encode()).hexdigest()


def pullspec(tag: str, r: Release) -> str:
    return f"{REGISTRY}@sha256:{digest(tag, r.version)}"


# Image tags shipped in image-references: tag -> source repository (for the build annotations).
IMAGE_SOURCES: dict[str, str] = {
    "cli": "oc",
    "cluster-authentication-operator": "cluster-authentication-operator",
    "cluster-config-operator": "cluster-config-operator",
    "cluster-dns-operator": "cluster-dns-operator",
    "cluster-etcd-operator": "cluster-etcd-operator",
    "cluster-image-registry-operator": "cluster-image-registry-operator",
    "cluster-ingress-operator": "cluster-ingress-operator",
    "cluster-kube-apiserver-operator": "cluster-kube-apiserver-operator",
    "cluster-kube-controller-manager-operator": "cluster-kube-controller-manager-operator",
    "cluster-kube-scheduler-operator": "cluster-kube-scheduler-operator",
    "cluster-monitoring-operator": "cluster-monitoring-operator",
    "cluster-network-operator": "cluster-network-operator",
    "cluster-olm-operator": "cluster-olm-operator",
    "cluster-samples-operator": "cluster-samples-operator",
    "cluster-storage-operator": "cluster-storage-operator",
    "cluster-version-operator": "cluster-version-operator",
    "console": "console",
    "console-operator": "console-operator",
    "coredns": "coredns",
    "docker-registry": "image-registry",
    "etcd": "etcd",
    "haproxy-router": "router",
    "hyperkube": "kubernetes",
    "machine-config-operator": "machine-config-operator",
    "oauth-server": "oauth-server",
    "operator-controller": "operator-framework-operator-controller",
    "ovn-kubernetes": "ovn-kubernetes",
    "prometheus-operator": "prometheus-operator",
}


def image_tags(r: Release) -> list[str]:
    tags = set(IMAGE_SOURCES)
    if not r.samples:
        tags.discard("cluster-samples-operator")
    if not r.olm:
        tags -= {"cluster-olm-operator", "operator-controller"}
    return sorted(tags)


# --------------------------------------------------------------------------------------------
# Small document helpers
# --------------------------------------------------------------------------------------------


def annotations(
    *, sno: bool = True, capability: str | None = None, extra: dict[str, str] | None = None
) -> dict[str, str]:
    a: dict[str, str] = {}
    if capability:
        a[CAPABILITY] = capability
    a[HA] = "true"
    if sno:
        a[SNO] = "true"
    if extra:
        a.update(extra)
    return a


def meta(name: str, ns: str | None, ann: dict[str, str], labels: dict[str, str] | None = None) -> dict:
    m: dict = {"name": name}
    if ns:
        m["namespace"] = ns
    m["annotations"] = dict(ann)
    if labels:
        m["labels"] = dict(labels)
    return m


def s(desc: str, **kw) -> dict:
    return {"description": desc, "type": "string", **kw}


def i32(desc: str, **kw) -> dict:
    return {"description": desc, "format": "int32", "type": "integer", **kw}


def i64(desc: str, **kw) -> dict:
    return {"description": desc, "format": "int64", "type": "integer", **kw}


def b(desc: str, **kw) -> dict:
    return {"description": desc, "type": "boolean", **kw}


def obj(desc: str, props: dict | None = None, required: list[str] | None = None, **kw) -> dict:
    o: dict = {"description": desc}
    if props is not None:
        o["properties"] = props
    if required:
        o["required"] = required
    o["type"] = "object"
    o.update(kw)
    return o


def arr(desc: str, items: dict, **kw) -> dict:
    return {"description": desc, "items": items, "type": "array", **kw}


def free(desc: str) -> dict:
    return {"description": desc, "nullable": True, "type": "object", "x-kubernetes-preserve-unknown-fields": True}


CONDITIONS = arr(
    "conditions is a list of conditions and their status",
    obj(
        "OperatorCondition is just the standard condition fields.",
        {
            "lastTransitionTime": s(
                "lastTransitionTime is the last time the condition transitioned from one status to another.",
                format="date-time",
            ),
            "message": s("message is a human readable message indicating details about the transition."),
            "reason": s("reason is a CamelCase reason for the condition's last transition."),
            "status": s("status of the condition, one of True, False, Unknown.", enum=["True", "False", "Unknown"]),
            "type": s("type of condition in CamelCase or in foo.example.com/CamelCase."),
        },
        required=["lastTransitionTime", "status", "type"],
    ),
    **{"x-kubernetes-list-map-keys": ["type"], "x-kubernetes-list-type": "map"},
)

LOG_LEVEL = ["", "Normal", "Debug", "Trace", "TraceAll"]


def operator_spec_props(extra: dict | None = None) -> dict:
    p = {
        "logLevel": s(
            "logLevel is an intent based logging for an overall component.", default="Normal", enum=LOG_LEVEL
        ),
        "managementState": s(
            "managementState indicates whether and how the operator should manage the component",
            pattern="^(Managed|Unmanaged|Force|Removed)$",
        ),
        "observedConfig": free(
            "observedConfig holds a sparse config that controller has observed from the cluster state."
        ),
        "operatorLogLevel": s(
            "operatorLogLevel is an intent based logging for the operator itself.",
            default="Normal",
            enum=LOG_LEVEL,
        ),
        "unsupportedConfigOverrides": free(
            "unsupportedConfigOverrides overrides the final configuration that was computed by the operator. "
            "Red Hat does not support the use of this field."
        ),
    }
    if extra:
        p.update(extra)
    return dict(sorted(p.items()))


def operator_status_props(extra: dict | None = None, revisions: bool = False) -> dict:
    p = {
        "conditions": CONDITIONS,
        "generations": arr(
            "generations are used to determine when an item needs to be reconciled or has changed in a way "
            "that needs a reaction.",
            obj(
                "GenerationStatus keeps track of the generation for a given resource so that decisions about "
                "forced updates can be made.",
                {
                    "group": s("group is the group of the thing you're tracking"),
                    "hash": s("hash is an optional field set for resources without generation that are "
                              "content sensitive like secrets and configmaps"),
                    "lastGeneration": i64("lastGeneration is the last generation of the workload controller involved"),
                    "name": s("name is the name of the thing you're tracking"),
                    "namespace": s("namespace is where the thing you're tracking is"),
                    "resource": s("resource is the resource type of the thing you're tracking"),
                },
                required=["group", "name", "namespace", "resource"],
            ),
            **{"x-kubernetes-list-map-keys": ["group", "resource", "namespace", "name"],
               "x-kubernetes-list-type": "map"},
        ),
        "observedGeneration": i64("observedGeneration is the last generation change you've dealt with"),
        "readyReplicas": i32("readyReplicas indicates how many replicas are ready and at the desired state"),
        "version": s("version is the level this availability applies to"),
    }
    if revisions:
        p["latestAvailableRevision"] = i32(
            "latestAvailableRevision is the deploymentID of the most recent deployment"
        )
    if extra:
        p.update(extra)
    return dict(sorted(p.items()))


def api_approved(plural: str, group: str) -> dict[str, str]:
    if not group.endswith("openshift.io"):
        return {}
    n = int(hashlib.sha256(plural.encode()).hexdigest()[:6], 16) % 1500 + 100
    return {"api-approved.openshift.io": f"https://github.com/openshift/api/pull/{n}"}


def crd(
    *,
    group: str,
    kind: str,
    plural: str,
    description: str,
    spec: dict,
    status: dict | None = None,
    scope: str = "Cluster",
    version: str = "v1",
    status_subresource: bool = False,
    scale: dict | None = None,
    short_names: list[str] | None = None,
    printer_columns: list[dict] | None = None,
    ann: dict[str, str],
    spec_required: bool = True,
) -> dict:
    names: dict = {"kind": kind, "listKind": f"{kind}List", "plural": plural}
    if short_names:
        names["shortNames"] = short_names
    names["singular"] = kind.lower()
    props: dict = {
        "apiVersion": s(
            "APIVersion defines the versioned schema of this representation of an object. Servers should "
            "convert recognized schemas to the latest internal value, and may reject unrecognized values."
        ),
        "kind": s(
            "Kind is a string value representing the REST resource this object represents. Servers may "
            "infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase."
        ),
        "metadata": {"type": "object"},
        "spec": spec,
    }
    if status is not None:
        props["status"] = status
    schema = {"description": description, "properties": props}
    if spec_required:
        schema["required"] = ["spec"]
    schema["type"] = "object"
    ver: dict = {"name": version}
    if printer_columns:
        ver["additionalPrinterColumns"] = printer_columns
    ver["schema"] = {"openAPIV3Schema": schema}
    ver["served"] = True
    ver["storage"] = True
    if status_subresource or scale:
        sub: dict = {}
        if scale:
            sub["scale"] = scale
        sub["status"] = {}
        ver["subresources"] = sub
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": meta(f"{plural}.{group}", None, {**api_approved(plural, group), **ann}),
        "spec": {"group": group, "names": names, "scope": scope, "versions": [ver]},
    }


def operator_crd(
    *,
    group: str = "operator.openshift.io",
    kind: str,
    plural: str,
    what: str,
    ann: dict[str, str],
    spec_extra: dict | None = None,
    status_extra: dict | None = None,
    revisions: bool = False,
    status_subresource: bool = False,
) -> dict:
    return crd(
        group=group,
        kind=kind,
        plural=plural,
        description=f"{kind} provides information to configure an operator to manage {what}.",
        spec=obj(f"spec is the specification of the desired behavior of the {kind}.",
                 operator_spec_props(spec_extra)),
        status=obj(f"status is the most recently observed status of the {kind}.",
                   operator_status_props(status_extra, revisions)),
        status_subresource=status_subresource,
        ann=ann,
    )


# --------------------------------------------------------------------------------------------
# Operator components
# --------------------------------------------------------------------------------------------

Docs = list[dict]
DocsFn = Callable[[Release, "Operator"], Docs]

MASTER_TOLERATIONS = [
    {"effect": "NoSchedule", "key": "node-role.kubernetes.io/master", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
     "tolerationSeconds": 120},
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
     "tolerationSeconds": 120},
]


@dataclass
class Operand:
    name: str  # name in ClusterOperator status.versions ("" = none reported)
    image_tag: str | None
    version: Callable[[Release], str] | None


@dataclass
class Operator:
    component: str  # file-name component
    run_level: str
    namespace: str
    deployment: str
    co_name: str
    image_tag: str
    command: list[str]
    args: list[str] = field(default_factory=list)
    operand: Operand | None = None
    crds: list[Callable[[Release, dict[str, str]], dict]] = field(default_factory=list)
    crd_file_names: list[str] | None = None  # per-CRD "rest" names (default NN_<plural>.crd.yaml)
    extra_namespaces: list[str] = field(default_factory=list)
    metrics_port: int | None = 8443  # Service + container port; None = no Service
    capability: str | None = None
    sep: str = "_"
    names: dict[str, str] = field(default_factory=dict)  # override rest names
    related: list[dict] | None = None
    rules: list[dict] = field(default_factory=list)
    extra_files: list[tuple[str, DocsFn]] = field(default_factory=list)
    co_extra_ann: dict[str, str] = field(default_factory=dict)
    inject_proxy: bool = False
    config_yaml: str | None = None
    memory: str = "50Mi"
    present: Callable[[Release], bool] = lambda r: True
    description: str = ""

    def ann(self, **kw) -> dict[str, str]:
        return annotations(capability=self.capability, **kw)

    def fname(self, rest: str, run_level: str | None = None) -> str:
        return f"0000_{run_level or self.run_level}_{self.component}_{rest}"

    def rest(self, key: str, num: str, default: str) -> str:
        return self.names.get(key, f"{num}{self.sep}{default}")


def generic_operator_config(ns: str) -> str:
    return (
        "apiVersion: operator.openshift.io/v1alpha1\n"
        "kind: GenericOperatorConfig\n"
        "leaderElection:\n"
        f"  namespace: {ns}\n"
        "servingInfo:\n"
        "  bindAddress: 0.0.0.0:8443\n"
        "  certFile: /var/run/secrets/serving-cert/tls.crt\n"
        "  keyFile: /var/run/secrets/serving-cert/tls.key\n"
    )


def namespace_doc(name: str, ann: dict[str, str], monitoring: bool = True) -> dict:
    labels = {}
    if monitoring:
        labels["openshift.io/cluster-monitoring"] = "true"
    labels["openshift.io/run-level"] = ""
    labels["pod-security.kubernetes.io/audit"] = "privileged"
    labels["pod-security.kubernetes.io/enforce"] = "privileged"
    labels["pod-security.kubernetes.io/warn"] = "privileged"
    a = {**ann, "openshift.io/node-selector": "", "workload.openshift.io/allowed": "management"}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(name, None, a, labels)}


def rbac_docs(op: Operator, crd_docs: Docs) -> Docs:
    ann = op.ann()
    role = f"system:openshift:operator:{op.deployment}"
    rules: list[dict] = [
        {"apiGroups": ["config.openshift.io"],
         "resources": ["clusteroperators", "clusteroperators/status"],
         "verbs": ["create", "get", "list", "patch", "update", "watch"]},
        {"apiGroups": ["config.openshift.io"],
         "resources": ["featuregates", "infrastructures", "networks", "proxies", "apiservers"],
         "verbs": ["get", "list", "watch"]},
    ]
    for c in crd_docs:
        g = c["spec"]["group"]
        p = c["spec"]["names"]["plural"]
        rules.append({"apiGroups": [g], "resources": [p, f"{p}/status"], "verbs": ["*"]})
    rules += [
        {"apiGroups": [""],
         "resources": ["configmaps", "events", "namespaces", "pods", "secrets", "serviceaccounts", "services"],
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
        {"apiGroups": ["apps"], "resources": ["daemonsets", "deployments"],
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
         "verbs": ["create", "get", "list", "update", "watch"]},
    ]
    rules += op.rules
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(op.deployment, op.namespace, ann)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": meta(role, None, ann), "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": meta(role, None, ann),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
         "subjects": [{"kind": "ServiceAccount", "name": op.deployment, "namespace": op.namespace}]},
    ]


def configmap_doc(op: Operator) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(f"{op.deployment}-config", op.namespace, op.ann()),
        "data": {"config.yaml": op.config_yaml or generic_operator_config(op.namespace)},
    }


def service_doc(op: Operator) -> dict:
    ann = op.ann(extra={"service.beta.openshift.io/serving-cert-secret-name": f"{op.deployment}-serving-cert"})
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta("metrics", op.namespace, ann, {"app": op.deployment}),
        "spec": {
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": op.metrics_port}],
            "selector": {"app": op.deployment},
            "sessionAffinity": "None",
            "type": "ClusterIP",
        },
    }


def deployment_doc(r: Release, op: Operator) -> dict:
    extra = {}
    if op.inject_proxy:
        extra[INJECT_PROXY] = op.deployment
    env: list[dict] = [{"name": "RELEASE_VERSION", "value": r.version}]
    if op.operand and op.operand.image_tag:
        env.append({"name": "OPERAND_IMAGE", "value": pullspec(op.operand.image_tag, r)})
    if op.operand and op.operand.version:
        env.append({"name": "OPERAND_VERSION", "value": op.operand.version(r)})
    env.append({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
    mounts = [{"mountPath": "/var/run/configmaps/config", "name": "config"}]
    volumes: list[dict] = [{"configMap": {"defaultMode": 420, "name": f"{op.deployment}-config"},
                            "name": "config"}]
    container: dict = {
        "name": op.deployment,
        "image": pullspec(op.image_tag, r),
        "imagePullPolicy": "IfNotPresent",
        "command": list(op.command),
    }
    args = list(op.args) or ["--config=/var/run/configmaps/config/config.yaml", "-v=2"]
    container["args"] = args
    container["env"] = env
    if op.metrics_port:
        container["ports"] = [{"containerPort": op.metrics_port, "name": "metrics", "protocol": "TCP"}]
        mounts.append({"mountPath": "/var/run/secrets/serving-cert", "name": "serving-cert"})
        volumes.append({"name": "serving-cert",
                        "secret": {"optional": True, "secretName": f"{op.deployment}-serving-cert"}})
    container["resources"] = {"requests": {"cpu": "10m", "memory": op.memory}}
    container["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    container["terminationMessagePolicy"] = "FallbackToLogsOnError"
    container["volumeMounts"] = mounts
    labels = {"app": op.deployment}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(op.deployment, op.namespace, op.ann(extra=extra), labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {
                    "annotations": {
                        "openshift.io/required-scc": "restricted-v2",
                        "target.workload.openshift.io/management": '{"effect": "PreferredDuringScheduling"}',
                    },
                    "labels": labels,
                    "name": op.deployment,
                },
                "spec": {
                    "containers": [container],
                    "nodeSelector": {"node-role.kubernetes.io/master": ""},
                    "priorityClassName": "system-cluster-critical",
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "serviceAccountName": op.deployment,
                    "tolerations": MASTER_TOLERATIONS,
                    "volumes": volumes,
                },
            },
        },
    }


def clusteroperator_doc(r: Release, op: Operator) -> dict:
    versions = [{"name": "operator", "version": r.version}]
    if op.operand and op.operand.name and op.operand.version:
        versions.append({"name": op.operand.name, "version": op.operand.version(r)})
    status: dict = {"versions": versions}
    if op.related:
        status["relatedObjects"] = op.related
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterOperator",
        "metadata": meta(op.co_name, None, op.ann(extra=op.co_extra_ann)),
        "spec": {},
        "status": status,
    }


def operator_files(r: Release, op: Operator) -> list[tuple[str, Docs]]:
    files: list[tuple[str, Docs]] = []
    ann = op.ann()
    namespaces = [op.namespace, *op.extra_namespaces]
    files.append((op.fname(op.rest("namespace", "00", "namespace.yaml")),
                  [namespace_doc(n, ann) for n in namespaces]))
    crd_docs = [c(r, ann) for c in op.crds]
    for idx, c in enumerate(crd_docs):
        if op.crd_file_names:
            rest = op.crd_file_names[idx]
        else:
            rest = f"01{op.sep}{c['spec']['names']['plural']}.crd.yaml"
        files.append((op.fname(rest), [c]))
    files.append((op.fname(op.rest("rbac", "02", "rbac.yaml")), rbac_docs(op, crd_docs)))
    files.append((op.fname(op.rest("configmap", "03", "configmap.yaml")), [configmap_doc(op)]))
    if op.metrics_port:
        files.append((op.fname(op.rest("service", "04", "service.yaml")), [service_doc(op)]))
    for rest, fn in op.extra_files:
        files.append((op.fname(rest), fn(r, op)))
    files.append((op.fname(op.rest("deployment", "05", "deployment.yaml")), [deployment_doc(r, op)]))
    files.append((op.fname(op.rest("clusteroperator", "06", "clusteroperator.yaml")),
                  [clusteroperator_doc(r, op)]))
    return files


def rel(group: str, resource: str, name: str = "", namespace: str | None = None) -> dict:
    d = {"group": group, "name": name, "resource": resource}
    if namespace:
        d["namespace"] = namespace
    return d


# ---- CRD builders ---------------------------------------------------------------------------


def crd_etcds(r: Release, ann: dict[str, str]) -> dict:
    return operator_crd(
        kind="Etcd", plural="etcds", what="etcd", ann=ann, revisions=True, status_subresource=True,
        spec_extra={"controlPlaneHardwareSpeed": s(
            "controlPlaneHardwareSpeed allows the user to change the etcd tuning profile which configures "
            "the latency parameters for heartbeat interval and leader election timeouts.",
            enum=["", "Standard", "Slower"])},
        status_extra={"controlPlaneHardwareSpeed": s(
            "controlPlaneHardwareSpeed is the currently applied etcd tuning profile.",
            enum=["", "Standard", "Slower"])},
    )


def crd_kubeapiservers(r: Release, ann: dict[str, str]) -> dict:
    return operator_crd(kind="KubeAPIServer", plural="kubeapiservers", what="kube-apiserver", ann=ann,
                        revisions=True, status_subresource=True)


def crd_kubecontrollermanagers(r: Release, ann: dict[str, str]) -> dict:
    return operator_crd(
        kind="KubeControllerManager", plural="kubecontrollermanagers", what="kube-controller-manager",
        ann=ann, revisions=True,
        spec_extra={"useMoreSecureServiceCA": b(
            "useMoreSecureServiceCA indicates that the service-ca.crt provided in SA token volumes should "
            "include only enough certificates to validate service serving certificates.", default=False)},
    )


def crd_kubeschedulers(r: Release, ann: dict[str, str]) -> dict:
    return operator_crd(kind="KubeScheduler", plural="kubeschedulers", what="kube-scheduler", ann=ann,
                        revisions=True)


def crd_storages(r: Release, ann: dict[str, str]) -> dict:
    return operator_crd(
        kind="Storage", plural="storages", what="cluster storage operators", ann=ann,
        spec_extra={"vsphereStorageDriver": s(
            "vsphereStorageDriver indicates the storage driver to use on VSphere clusters.",
            enum=["", "LegacyDeprecatedInTreeDriver", "CSIWithMigrationDriver"])},
    )


def crd_authentications(r: Release, ann: dict[str, str]) -> dict:
    return operator_crd(
        kind="Authentication", plural="authentications", what="the authentication stack", ann=ann,
        status_extra={"oauthAPIServer": obj("oauthAPIServer holds status specific only to oauth-apiserver", {
            "latestAvailableRevision": i32("latestAvailableRevision is the latest revision used as suffix "
                                           "of revisioned secrets like encryption-config.")})},
    )


def crd_imageregistry_configs(r: Release, ann: dict[str, str]) -> dict:
    return operator_crd(
        group="imageregistry.operator.openshift.io", kind="Config", plural="configs",
        what="the integrated image registry", ann=ann, status_subresource=True,
        spec_extra={
            "defaultRoute": b("defaultRoute indicates whether an external facing route for the registry "
                              "should be created using the default generated hostname."),
            "replicas": i32("replicas determines the number of registry instances to run."),
            "rolloutStrategy": s("rolloutStrategy defines rollout strategy for the image registry deployment.",
                                 pattern="^(RollingUpdate|Recreate)$"),
            "storage": obj("storage details for configuring registry storage, e.g. S3 bucket coordinates.", {
                "emptyDir": obj("emptyDir represents ephemeral storage on the pod's host node.", {}),
                "managementState": s("managementState indicates if the operator manages the underlying "
                                     "storage unit."),
                "pvc": obj("pvc represents configuration that uses a PersistentVolumeClaim.", {
                    "claim": s("claim defines the Persisent Volume Claim's name to be used.")}),
            }),
        },
    )


def crd_ingresscontrollers(r: Release, ann: dict[str, str]) -> dict:
    spec = {
        "domain": s("domain is a DNS name serviced by the ingress controller and is used to configure "
                    "multiple features."),
        "endpointPublishingStrategy": obj(
            "endpointPublishingStrategy is used to publish the ingress controller endpoints to other networks.",
            {"type": s("type is the publishing strategy to use.",
                       enum=["LoadBalancerService", "HostNetwork", "Private", "NodePortService"])},
            required=["type"]),
        "httpCompression": obj("httpCompression defines a policy for HTTP traffic compression.", {
            "mimeTypes": arr("mimeTypes is a list of MIME types that should have compression applied.",
                             {"type": "string"}, **{"x-kubernetes-list-type": "set"})}),
        "logging": free("logging defines parameters for what should be logged where."),
        "nodePlacement": free("nodePlacement enables explicit control over the scheduling of the ingress "
                              "controller."),
        "replicas": i32("replicas is the desired number of ingress controller replicas."),
        "tuningOptions": obj("tuningOptions defines parameters for adjusting the performance of ingress "
                             "controller pods.", {
                                 "maxConnections": i32("maxConnections defines the maximum number of "
                                                       "simultaneous connections per HAProxy process."),
                                 "threadCount": i32("threadCount defines the number of threads created per "
                                                    "HAProxy process.", maximum=64, minimum=1)}),
    }
    if r.ingress_idle_termination:
        spec["idleConnectionTerminationPolicy"] = s(
            "idleConnectionTerminationPolicy maps directly to HAProxy's idle-close-on-response option and "
            "controls whether HAProxy keeps idle frontend connections open during a soft stop (router reload).",
            default="Immediate", enum=["Immediate", "Deferred"])
    status = {
        "availableReplicas": i32("availableReplicas is number of observed available replicas according to "
                                 "the ingress controller deployment."),
        "conditions": CONDITIONS,
        "domain": s("domain is the actual domain in use."),
        "observedGeneration": i64("observedGeneration is the most recent generation observed."),
        "selector": s("selector is a label selector, in string format, for ingress controller pods "
                      "corresponding to the IngressController."),
    }
    return crd(
        group="operator.openshift.io", kind="IngressController", plural="ingresscontrollers",
        description="IngressController describes a managed ingress controller for the cluster. The controller "
                    "can service OpenShift Route and Kubernetes Ingress resources.",
        spec=obj("spec is the specification of the desired behavior of the IngressController.",
                 dict(sorted(spec.items()))),
        status=obj("status is the most recently observed status of the IngressController.", status),
        scope="Namespaced",
        scale={"labelSelectorPath": ".status.selector", "specReplicasPath": ".spec.replicas",
               "statusReplicasPath": ".status.availableReplicas"},
        ann=ann,
    )


def crd_consoles(r: Release, ann: dict[str, str]) -> dict:
    return operator_crd(
        kind="Console", plural="consoles", what="the web console", ann=ann,
        spec_extra={"customization": obj("customization is used to optionally provide a small set of "
                                         "customization options to the web console.", {
                                             "brand": s("brand is the default branding of the web console.",
                                                        enum=["openshift", "okd", "online", "ocp",
                                                              "dedicated", "azure", "ROSA"]),
                                             "customProductName": s("customProductName is the name that will "
                                                                    "be displayed in page titles.")}),
                    "route": obj("route contains hostname and secret reference that contains the serving "
                                 "certificate.", {"hostname": s("hostname is the desired custom domain under "
                                                                "which console will be available.")})},
    )


def crd_servicemonitors(r: Release, ann: dict[str, str]) -> dict:
    return crd(
        group="monitoring.coreos.com", kind="ServiceMonitor", plural="servicemonitors", scope="Namespaced",
        short_names=["smon"],
        description="ServiceMonitor defines monitoring for a set of services.",
        spec=obj("Specification of desired Service selection for target discovery by Prometheus.", {
            "endpoints": arr("A list of endpoints allowed as part of this ServiceMonitor.",
                             {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
            "jobLabel": s("JobLabel selects the label from the associated Kubernetes service which will be "
                          "used as the job label for all metrics."),
            "namespaceSelector": obj("Selector to select which namespaces the Kubernetes Endpoints objects "
                                     "are discovered from.", {
                                         "any": b("Boolean describing whether all namespaces are selected."),
                                         "matchNames": arr("List of namespace names to select from.",
                                                           {"type": "string"})}),
            "selector": obj("Selector to select Endpoints objects.", {
                "matchLabels": {"additionalProperties": {"type": "string"}, "type": "object"}},
                **{"x-kubernetes-map-type": "atomic"}),
        }, required=["selector"]),
        ann=ann,
    )


def crd_prometheusrules(r: Release, ann: dict[str, str]) -> dict:
    rule = obj("Rule describes an alerting or recording rule.", {
        "alert": s("Name of the alert. Must be a valid label value."),
        "annotations": {"additionalProperties": {"type": "string"}, "type": "object"},
        "expr": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                 "description": "PromQL expression to evaluate.", "x-kubernetes-int-or-string": True},
        "for": s("Alerts are considered firing once they have been returned for this long.",
                 pattern="^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?"
                         "(([0-9]+)ms)?)$"),
        "labels": {"additionalProperties": {"type": "string"}, "type": "object"},
        "record": s("Name of the time series to output to. Must be a valid metric name."),
    }, required=["expr"])
    return crd(
        group="monitoring.coreos.com", kind="PrometheusRule", plural="prometheusrules", scope="Namespaced",
        short_names=["promrule"],
        description="PrometheusRule defines recording and alerting rules for a Prometheus instance",
        spec=obj("Specification of desired alerting rule definitions for Prometheus.", {
            "groups": arr("Content of Prometheus rule file", obj("RuleGroup is a list of sequentially "
                                                                 "evaluated recording and alerting rules.", {
                "interval": s("Interval determines how often rules in the group are evaluated."),
                "name": s("Name of the rule group.", minLength=1),
                "rules": arr("List of alerting and recording rules.", rule),
            }, required=["name"]), **{"x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map"}),
        }),
        ann=ann,
    )


def crd_operatorhubs(r: Release, ann: dict[str, str]) -> dict:
    source = obj("HubSource is used to specify the hub source and its configuration", {
        "disabled": b("disabled is used to disable a default hub source on cluster"),
        "name": s("name is the name of one of the default hub sources", maxLength=253, minLength=1),
    })
    return crd(
        group="config.openshift.io", kind="OperatorHub", plural="operatorhubs",
        description="OperatorHub is the Schema for the operatorhubs API. It can be used to change the state "
                    "of the default hub sources for OperatorHub on the cluster from enabled to disabled and "
                    "vice versa.",
        spec=obj("OperatorHubSpec defines the desired state of OperatorHub", {
            "disableAllDefaultSources": b("disableAllDefaultSources allows you to disable all the default hub "
                                          "sources."),
            "sources": arr("sources is the list of default hub sources and their configuration.", source,
                           **{"x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map"}),
        }),
        status=obj("OperatorHubStatus defines the observed state of OperatorHub.", {
            "sources": arr("sources encapsulates the result of applying the configuration for each hub source",
                           obj("HubSourceStatus is used to reflect the current state of applying the "
                               "configuration to a default source", {
                                   "disabled": b("disabled is used to disable a default hub source on cluster"),
                                   "message": s("message provides more information regarding failures"),
                                   "name": s("name is the name of one of the default hub sources"),
                                   "status": s("status indicates success or failure in applying the "
                                               "configuration"),
                               }))}),
        status_subresource=True, ann=ann,
    )


def crd_samples_configs(r: Release, ann: dict[str, str]) -> dict:
    return crd(
        group="samples.operator.openshift.io", kind="Config", plural="configs",
        description="Config contains the configuration and detailed condition status for the Samples "
                    "Operator.",
        spec=obj("ConfigSpec contains the desired configuration and state for the Samples Operator.", {
            "architectures": arr("architectures determine which hardware architecture(s) to install.",
                                 {"type": "string"}),
            "managementState": s("managementState is top level on/off type of switch for all operators."),
            "samplesRegistry": s("samplesRegistry allows for the specification of which registry is accessed "
                                 "by the ImageStreams for their image content."),
            "skippedImagestreams": arr("skippedImagestreams specifies names of image streams that should NOT "
                                       "be created/updated.", {"type": "string"}),
            "skippedTemplates": arr("skippedTemplates specifies names of templates that should NOT be "
                                    "created/updated.", {"type": "string"}),
        }),
        status=obj("ConfigStatus contains the actual configuration in effect.", {
            "conditions": CONDITIONS,
            "managementState": s("managementState reflects the current operational status of the on/off "
                                 "switch for the operator."),
            "version": s("version is the value of the operator's payload based version indicator when it "
                         "was last successfully processed"),
        }),
        ann=ann,
    )


def crd_networks_operator(r: Release, ann: dict[str, str]) -> dict:
    return operator_crd(
        kind="Network", plural="networks", what="the cluster network", ann=ann,
        spec_extra={
            "clusterNetwork": arr("clusterNetwork is the IP address pool to use for pod IPs.", obj(
                "ClusterNetworkEntry is a subnet from which to allocate PodIPs.", {
                    "cidr": s("cidr is the CIDR of the pool"),
                    "hostPrefix": {"format": "int32", "minimum": 0, "type": "integer"}})),
            "defaultNetwork": obj("defaultNetwork is the \"default\" network that all pods will receive", {
                "ovnKubernetesConfig": obj("ovnKubernetesConfig configures the ovn-kubernetes plugin.", {
                    "genevePort": {"format": "int32", "minimum": 1, "type": "integer"},
                    "mtu": {"format": "int32", "minimum": 0, "type": "integer"}}),
                "type": s("type is the type of network", enum=["OVNKubernetes"])}),
            "disableNetworkDiagnostics": b("disableNetworkDiagnostics specifies whether or not "
                                           "PodNetworkConnectivityCheck CRs from a test pod to every node, "
                                           "apiserver and LB should be disabled or not.", default=False),
            "serviceNetwork": arr("serviceNetwork is the ip address pool to use for Service IPs",
                                  {"type": "string"}),
        },
    )


def crd_dnses_operator(r: Release, ann: dict[str, str]) -> dict:
    return crd(
        group="operator.openshift.io", kind="DNS", plural="dnses",
        description="DNS manages the CoreDNS component to provide a name resolution service for pods and "
                    "services in the cluster.",
        spec=obj(
            "spec is the specification of the desired behavior of the DNS.", {
                "logLevel": s("logLevel describes the desired logging verbosity for CoreDNS.", default="Normal",
                              enum=["Normal", "Debug", "Trace"]),
                "managementState": s("managementState indicates whether the DNS operator should manage "
                                     "cluster DNS", pattern="^(Managed|Unmanaged|Force|Removed)$"),
                "nodePlacement": free("nodePlacement provides explicit control over the scheduling of DNS "
                                      "pods."),
                "servers": arr("servers is a list of DNS resolvers that provide name query delegation for one "
                               "or more subdomains outside the scope of the cluster domain.", obj(
                                   "Server defines the schema for a server that runs per instance of CoreDNS.", {
                                       "name": s("name is required and specifies a unique name for the "
                                                 "server."),
                                       "zones": arr("zones is required and specifies the subdomains that "
                                                    "Server is authoritative for.", {"type": "string"})})),
            }),
        status=obj("status is the most recently observed status of the DNS.", {
            "clusterDomain": s("clusterDomain is the local cluster DNS domain suffix for DNS services."),
            "clusterIP": s("clusterIP is the service IP through which this DNS is made available."),
            "conditions": CONDITIONS,
        }, required=["clusterDomain", "clusterIP"]),
        status_subresource=True,
        ann=ann,
    )


def crd_machineconfigs(r: Release, ann: dict[str, str]) -> dict:
    return crd(
        group="machineconfiguration.openshift.io", kind="MachineConfig", plural="machineconfigs",
        short_names=["mc"],
        description="MachineConfig defines the configuration for a machine",
        spec=obj("MachineConfigSpec is the spec for MachineConfig", {
            "config": {"description": "Config is a Ignition Config object.", "type": "object",
                       "x-kubernetes-preserve-unknown-fields": True},
            "extensions": arr("extensions contains a list of additional features that can be enabled on "
                              "host", {"type": "string"}, **{"x-kubernetes-list-type": "atomic"}),
            "fips": b("fips controls FIPS mode"),
            "kernelArguments": arr("kernelArguments contains a list of kernel arguments to be added",
                                   {"type": "string"}, nullable=True, **{"x-kubernetes-list-type": "atomic"}),
            "kernelType": s("kernelType contains which kernel we want to be running like default (traditional),"
                            " realtime, 64k-pages (aarch64 only)."),
            "osImageURL": s("OSImageURL specifies the remote location that will be used to fetch the OS."),
        }),
        printer_columns=[
            {"description": "Version of the controller that generated the machineconfig. This will be empty "
                            "if the machineconfig is not managed by a controller.",
             "jsonPath": ".metadata.annotations.machineconfiguration\\.openshift\\.io/generated-by-controller-"
                         "version", "name": "GeneratedByController", "type": "string"},
            {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
        ],
        ann=ann,
    )


def crd_machineconfigpools(r: Release, ann: dict[str, str]) -> dict:
    return crd(
        group="machineconfiguration.openshift.io", kind="MachineConfigPool", plural="machineconfigpools",
        short_names=["mcp"],
        description="MachineConfigPool describes a pool of MachineConfigs.",
        spec=obj("MachineConfigPoolSpec is the spec for MachineConfigPool resource.", {
            "machineConfigSelector": obj("machineConfigSelector specifies a label selector for MachineConfigs.",
                                         {"matchLabels": {"additionalProperties": {"type": "string"},
                                                          "type": "object"}}),
            "maxUnavailable": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                               "description": "maxUnavailable defines either an integer number or percentage "
                                              "of nodes in the pool that can go Unavailable during an update.",
                               "x-kubernetes-int-or-string": True},
            "nodeSelector": obj("nodeSelector specifies a label selector for Machines",
                                {"matchLabels": {"additionalProperties": {"type": "string"},
                                                 "type": "object"}}),
            "paused": b("paused specifies whether or not changes to this machine config pool should be "
                        "stopped."),
        }),
        status=obj("MachineConfigPoolStatus is the status for MachineConfigPool resource.", {
            "conditions": CONDITIONS,
            "degradedMachineCount": i32("degradedMachineCount represents the total number of machines marked "
                                        "degraded (or unreconcilable)."),
            "machineCount": i32("machineCount represents the total number of machines in the machine config "
                                "pool."),
            "observedGeneration": i64("observedGeneration represents the generation observed by the "
                                      "controller."),
            "readyMachineCount": i32("readyMachineCount represents the total number of ready machines "
                                     "targeted by the pool."),
            "updatedMachineCount": i32("updatedMachineCount represents the total number of machines targeted "
                                       "by the pool that have the CurrentMachineConfig as their config."),
        }),
        status_subresource=True,
        printer_columns=[
            {"jsonPath": ".status.configuration.name", "name": "Config", "type": "string"},
            {"description": "When all the machines in the pool are updated to the correct machine config.",
             "jsonPath": ".status.conditions[?(@.type==\"Updated\")].status", "name": "Updated",
             "type": "string"},
            {"jsonPath": ".status.machineCount", "name": "MachineCount", "type": "number"},
            {"jsonPath": ".status.readyMachineCount", "name": "ReadyMachineCount", "type": "number"},
            {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
        ],
        ann=ann,
    )


def crd_olms(r: Release, ann: dict[str, str]) -> dict:
    return operator_crd(kind="OLM", plural="olms", what="Operator Lifecycle Manager v1", ann=ann,
                        status_subresource=True)


# ---- config-operator (run levels 03, 05, 10) -----------------------------------------------


def config_crd_apiservers(ann: dict[str, str]) -> dict:
    return crd(
        group="config.openshift.io", kind="APIServer", plural="apiservers",
        description="APIServer holds configuration (like serving certificates, client CA and CORS domains) "
                    "shared by all API servers in the system, among them especially kube-apiserver and "
                    "openshift-apiserver. The canonical name of an instance is 'cluster'.",
        spec=obj("spec holds user settable values for configuration", {
            "additionalCORSAllowedOrigins": arr("additionalCORSAllowedOrigins lists additional, user-defined "
                                                "regular expressions describing hosts for which the API server "
                                                "allows access using the CORS headers.", {"type": "string"}),
            "audit": obj("audit specifies the settings for audit configuration to be applied to all "
                         "OpenShift-provided API servers in the cluster.", {
                             "profile": s("profile specifies the name of the desired top-level audit profile "
                                          "to be applied to all requests sent to any of the "
                                          "OpenShift-provided API servers in the cluster.", default="Default",
                                          enum=["Default", "WriteRequestBodies", "AllRequestBodies", "None"])}),
            "encryption": obj("encryption allows the configuration of encryption of resources at the "
                              "datastore layer.", {
                                  "type": s("type defines what encryption type should be used to encrypt "
                                            "resources at the datastore layer.",
                                            enum=["", "identity", "aescbc", "aesgcm"])}),
            "tlsSecurityProfile": obj("tlsSecurityProfile specifies settings for TLS connections for "
                                      "externally exposed servers.", {
                                          "type": s("type is one of Old, Intermediate, Modern or Custom.",
                                                    enum=["Old", "Intermediate", "Modern", "Custom"])}),
        }),
        status=obj("status holds observed values from the cluster. They may not be overridden.", {}),
        status_subresource=True, ann=ann,
    )


def config_crd_featuregates(ann: dict[str, str]) -> dict:
    gate_list = arr("", obj("", {"name": s("name is the name of the FeatureGate.")}, required=["name"]))
    return crd(
        group="config.openshift.io", kind="FeatureGate", plural="featuregates",
        description="Feature holds cluster-wide information about feature gates. The canonical name is "
                    "`cluster`",
        spec=obj("spec holds user settable values for configuration", {
            "customNoUpgrade": obj("customNoUpgrade allows the enabling or disabling of any feature. Turning "
                                   "this feature set on IS NOT SUPPORTED, CANNOT BE UNDONE, and PREVENTS "
                                   "UPGRADES.", {
                                       "disabled": arr("disabled is a list of all feature gates that you want "
                                                       "to force off", {"type": "string"}),
                                       "enabled": arr("enabled is a list of all feature gates that you want to "
                                                      "force on", {"type": "string"})}, nullable=True),
            "featureSet": s("featureSet changes the list of features in the cluster.  The default is empty.  "
                            "Be very careful adjusting this setting.",
                            enum=["CustomNoUpgrade", "DevPreviewNoUpgrade", "TechPreviewNoUpgrade", ""]),
        }),
        status=obj("status holds observed values from the cluster. They may not be overridden.", {
            "featureGates": arr("featureGates contains a list of enabled and disabled featureGates that are "
                                "keyed by payloadVersion.", obj("", {
                                    "disabled": {**gate_list, "description": "disabled is a list of all feature "
                                                                             "gates that are disabled"},
                                    "enabled": {**gate_list, "description": "enabled is a list of all feature "
                                                                            "gates that are enabled"},
                                    "version": s("version matches the version provided by the ClusterVersion "
                                                 "and in the ClusterOperator.Status.Versions field.")},
                                    required=["version"]),
                                **{"x-kubernetes-list-map-keys": ["version"], "x-kubernetes-list-type": "map"}),
        }),
        status_subresource=True, ann=ann,
    )


def config_crd_infrastructures(ann: dict[str, str]) -> dict:
    topology = ["HighlyAvailable", "HighlyAvailableArbiter", "SingleReplica", "External"]
    return crd(
        group="config.openshift.io", kind="Infrastructure", plural="infrastructures",
        description="Infrastructure holds cluster-wide information about Infrastructure.  The canonical name "
                    "is `cluster`",
        spec=obj("spec holds user settable values for configuration", {
            "cloudConfig": obj("cloudConfig is a reference to a ConfigMap containing the cloud provider "
                               "configuration file.", {"key": s("key allows pointing to a specific key/value "
                                                                "inside of the configmap."),
                                                       "name": s("")}),
            "platformSpec": obj("platformSpec holds desired information specific to the underlying "
                                "infrastructure provider.", {
                                    "type": s("type is the underlying infrastructure provider for the cluster.",
                                              enum=["", "AWS", "Azure", "BareMetal", "GCP", "None", "OpenStack",
                                                    "VSphere", "External"])}),
        }),
        status=obj("status holds observed values from the cluster. They may not be overridden.", {
            "apiServerInternalURI": s("apiServerInternalURL is a valid URI with scheme 'https', address and "
                                      "optionally a port (defaulting to 443)."),
            "apiServerURL": s("apiServerURL is a valid URI with scheme 'https', address and optionally a port "
                              "(defaulting to 443)."),
            "controlPlaneTopology": s("controlPlaneTopology expresses the expectations for operands that "
                                      "normally run on control nodes.", default="HighlyAvailable",
                                      enum=topology),
            "infrastructureName": s("infrastructureName uniquely identifies a cluster with a human friendly "
                                    "name."),
            "infrastructureTopology": s("infrastructureTopology expresses the expectations for infrastructure "
                                        "services that do not run on control plane nodes.",
                                        default="HighlyAvailable", enum=["HighlyAvailable", "SingleReplica"]),
            "platform": s("platform is the underlying infrastructure provider for the cluster. Deprecated: "
                          "Use platformStatus.type instead."),
        }),
        status_subresource=True, ann=ann,
    )


def config_crd_networks(ann: dict[str, str]) -> dict:
    cn = arr("clusterNetwork is the list of IP address pools for pods.", obj(
        "ClusterNetworkEntry is a contiguous block of IP addresses from which pod IPs are allocated.", {
            "cidr": s("The complete block for pod IPs."),
            "hostPrefix": {"description": "The size (prefix) of block to allocate to each node.",
                           "format": "int32", "minimum": 0, "type": "integer"}}),
        **{"x-kubernetes-list-type": "atomic"})
    return crd(
        group="config.openshift.io", kind="Network", plural="networks",
        description="Network holds cluster-wide information about Network. The canonical name is `cluster`. "
                    "It is used to configure the desired network configuration.",
        spec=obj("spec holds user settable values for configuration.", {
            "clusterNetwork": cn,
            "networkType": s("networkType is the plugin that is to be deployed (e.g. OVNKubernetes)."),
            "serviceNetwork": arr("IP address pool for services.", {"type": "string"},
                                  **{"x-kubernetes-list-type": "atomic"}),
        }),
        status=obj("status holds observed values from the cluster. They may not be overridden.", {
            "clusterNetwork": cn,
            "clusterNetworkMTU": {"description": "clusterNetworkMTU is the MTU for inter-pod networking.",
                                  "type": "integer"},
            "networkType": s("networkType is the plugin that is deployed (e.g. OVNKubernetes)."),
            "serviceNetwork": arr("IP address pool for services.", {"type": "string"},
                                  **{"x-kubernetes-list-type": "atomic"}),
        }),
        ann=ann,
    )


def config_crd_backups(ann: dict[str, str]) -> dict:
    return crd(
        group="config.openshift.io", kind="Backup", plural="backups", version="v1alpha1",
        description="Backup provides configuration for performing backups of the openshift cluster. "
                    "Compatibility level 4: No compatibility is provided, the API can change at any point for "
                    "any reason.",
        spec=obj("spec holds user settable values for configuration", {
            "etcd": obj("etcd specifies the configuration for periodic backups of the etcd cluster", {
                "pvcName": s("pvcName specifies the name of the PersistentVolumeClaim (PVC) which binds a "
                             "PersistentVolume where the etcd backup files would be saved"),
                "retentionPolicy": obj("retentionPolicy defines the retention policy for retaining and "
                                       "deleting existing backups.", {
                                           "retentionType": s("retentionType sets the type of retention policy.",
                                                              enum=["RetentionNumber", "RetentionSize"])}),
                "schedule": s("schedule defines the recurring backup schedule in Cron format"),
                "timeZone": s("The time zone name for the given schedule"),
            })}, required=["etcd"]),
        status=obj("status holds observed values from the cluster. They may not be overridden.", {}),
        status_subresource=True, ann=ann,
    )


def config_crd_exampleconfigs(ann: dict[str, str]) -> dict:
    return crd(
        group="config.openshift.io", kind="ExampleConfig", plural="exampleconfigs", version="v1alpha1",
        description="ExampleConfig is a placeholder API shipped only when the ExampleGate feature gate is "
                    "enabled. It exists to exercise feature-gated manifests.",
        spec=obj("spec holds user settable values for configuration", {
            "mode": s("mode selects the example behaviour.", default="Off", enum=["Off", "On"]),
        }),
        status=obj("status holds observed values from the cluster.", {"conditions": CONDITIONS}),
        ann=ann,
    )


def config_operator_files(r: Release) -> list[tuple[str, Docs]]:
    ann = annotations()
    files: list[tuple[str, Docs]] = []
    for fn in (config_crd_apiservers, config_crd_featuregates, config_crd_infrastructures, config_crd_networks):
        c = fn(ann)
        files.append((f"0000_03_config-operator_01_{c['spec']['names']['plural']}.crd.yaml", [c]))
    co_ann = annotations(extra={CREATE_ONLY: "true"})
    files.append(("0000_05_config-operator_02_apiserver.cr.yaml", [
        {"apiVersion": "config.openshift.io/v1", "kind": "APIServer",
         "metadata": meta("cluster", None, {**co_ann, "oauth-apiserver.openshift.io/secure-token-storage": "true"}),
         "spec": {"audit": {"profile": "Default"}}}]))

    op = Operator(
        component="config-operator", run_level="10", namespace="openshift-config-operator",
        deployment="openshift-config-operator", co_name="config-operator", image_tag="cluster-config-operator",
        command=["cluster-config-operator", "operator"],
        args=["--config=/var/run/configmaps/config/config.yaml", "--terminate-on-files="
              "/var/run/secrets/serving-cert/tls.crt"],
        extra_namespaces=["openshift-config", "openshift-config-managed"],
        related=[rel("operator.openshift.io", "configs", "cluster"), rel("", "namespaces", "openshift-config"),
                 rel("", "namespaces", "openshift-config-managed"),
                 rel("", "namespaces", "openshift-config-operator")],
        crds=[], metrics_port=None,
        co_extra_ann={EXCLUDE_HOSTED: "true"},
        description="Installs the config.openshift.io APIs and their `cluster` singletons.",
    )
    gated = [
        ("01_backups.crd.yaml", config_crd_backups(annotations(sno=False, extra={FEATURE_SET: "TechPreviewNoUpgrade"}))),
        ("01_exampleconfigs.crd.yaml", config_crd_exampleconfigs(annotations(extra={FEATURE_GATE: "ExampleGate"}))),
    ]
    op_files = operator_files(r, op)
    # namespace file first, then the gated CRDs, then the rest
    files.append(op_files[0])
    files += [(op.fname(rest), [doc]) for rest, doc in gated]
    files += op_files[1:]
    return files


# ---- extra files ------------------------------------------------------------------------------


def pdb(name: str, ns: str, app: str) -> Docs:
    return [{
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta(name, ns, annotations(sno=False)),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
    }]


def monitoring_defaults(r: Release, op: Operator) -> Docs:
    return [{
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta("cluster-monitoring-config", op.namespace, op.ann(extra={CREATE_ONLY: "true"})),
        "data": {"config.yaml": (
            "# Defaults for the platform monitoring stack. Edit freely: this ConfigMap is only\n"
            "# created by the CVO if missing (release.openshift.io/create-only) and never overwritten.\n"
            "prometheusK8s:\n"
            "  retention: 15d\n"
            "alertmanagerMain:\n"
            "  enabled: true\n"
            "telemeterClient:\n"
            "  enabled: true\n"
        )},
    }]


def ingress_trusted_ca(r: Release, op: Operator) -> Docs:
    return [{
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta("trusted-ca", op.namespace, op.ann(),
                         {"config.openshift.io/inject-trusted-cabundle": "true"}),
    }]


# ---- run level 90: monitoring wiring --------------------------------------------------------


def level90_files(r: Release) -> list[tuple[str, Docs]]:
    etcd_rules = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": meta("etcd-prometheus-rules", "openshift-etcd-operator", annotations(sno=False)),
        "spec": {"groups": [{"name": "etcd", "rules": [
            {"alert": "etcdNoLeader",
             "annotations": {"description": 'etcd cluster "{{ $labels.job }}": member {{ $labels.instance }} '
                                            "has no leader.",
                             "summary": "etcd cluster has no leader."},
             "expr": 'etcd_server_has_leader{job=~".*etcd.*"} == 0',
             "for": "1m", "labels": {"severity": "critical"}},
            {"alert": "etcdHighNumberOfLeaderChanges",
             "annotations": {"description": 'etcd cluster "{{ $labels.job }}": {{ $value }} leader changes '
                                            "within the last 15 minutes.",
                             "summary": "etcd cluster has high number of leader changes."},
             "expr": 'increase((max without (instance) (etcd_server_leader_changes_seen_total{job=~".*etcd.*"})'
                     ' or 0*absent(etcd_server_leader_changes_seen_total{job=~".*etcd.*"}))[15m:1m]) >= 5',
             "for": "5m", "labels": {"severity": "warning"}},
        ]}]},
    }

    def smon(name: str, ns: str, app: str, port: str = "https") -> dict:
        return {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": meta(name, ns, annotations()),
            "spec": {
                "endpoints": [{
                    "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                    "interval": "30s",
                    "port": port,
                    "scheme": "https",
                    "tlsConfig": {"caFile": "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt",
                                  "serverName": f"metrics.{ns}.svc"},
                }],
                "jobLabel": "app",
                "namespaceSelector": {"matchNames": [ns]},
                "selector": {"matchLabels": {"app": app}},
            },
        }

    return [
        ("0000_90_cluster-ingress-operator_00-servicemonitor.yaml",
         [smon("ingress-operator", "openshift-ingress-operator", "ingress-operator")]),
        ("0000_90_etcd-operator_03_prometheusrule.yaml", [etcd_rules]),
    ]


# ---- storage version migration Job (run level 30) ---------------------------------------------


def storage_migration_files(r: Release) -> list[tuple[str, Docs]]:
    ns = "openshift-kube-storage-version-migrator"
    ann = annotations()
    sa = "storage-version-migration"
    return [
        ("0000_30_kube-storage-version-migrator_00_namespace.yaml", [
            namespace_doc(ns, ann),
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(sa, ns, ann)},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": meta("system:openshift:storage-version-migration", None, ann),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
             "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]},
        ]),
        ("0000_30_kube-storage-version-migrator_01_migration-job.yaml", [{
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta("storage-version-migration", ns, ann, {"app": "storage-version-migration"}),
            "spec": {
                "activeDeadlineSeconds": 1800,
                "backoffLimit": 6,
                "template": {
                    "metadata": {
                        "annotations": {"openshift.io/required-scc": "restricted-v2",
                                        "target.workload.openshift.io/management":
                                            '{"effect": "PreferredDuringScheduling"}'},
                        "labels": {"app": "storage-version-migration"},
                    },
                    "spec": {
                        "containers": [{
                            "name": "migrate",
                            "image": pullspec("cli", r),
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["/bin/bash", "-euo", "pipefail", "-c"],
                            "args": [
                                "oc adm migrate storage --confirm "
                                "--include=etcds.operator.openshift.io,kubeapiservers.operator.openshift.io,"
                                "kubecontrollermanagers.operator.openshift.io,"
                                "kubeschedulers.operator.openshift.io\n"
                                'echo "storage migration for ${RELEASE_VERSION} complete"\n'
                            ],
                            "env": [{"name": "RELEASE_VERSION", "value": r.version}],
                            "resources": {"requests": {"cpu": "10m", "memory": "50Mi"}},
                            "securityContext": {"allowPrivilegeEscalation": False,
                                                "capabilities": {"drop": ["ALL"]}},
                            "terminationMessagePolicy": "FallbackToLogsOnError",
                        }],
                        "nodeSelector": {"node-role.kubernetes.io/master": ""},
                        "priorityClassName": "system-cluster-critical",
                        "restartPolicy": "OnFailure",
                        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                        "serviceAccountName": sa,
                        "tolerations": MASTER_TOLERATIONS,
                    },
                },
            },
        }]),
    ]


# ---- the operator table -----------------------------------------------------------------------


def kube(r: Release) -> str:
    return r.kube


def operators() -> list[Operator]:
    return [
        Operator(
            component="etcd-operator", run_level="20", namespace="openshift-etcd-operator",
            deployment="etcd-operator", co_name="etcd", image_tag="cluster-etcd-operator",
            command=["cluster-etcd-operator", "operator"],
            extra_namespaces=["openshift-etcd"],
            operand=Operand("etcd", "etcd", lambda r: r.etcd),
            crds=[crd_etcds],
            related=[rel("operator.openshift.io", "etcds", "cluster"), rel("", "namespaces", "openshift-config"),
                     rel("", "namespaces", "openshift-etcd-operator"), rel("", "namespaces", "openshift-etcd")],
            extra_files=[("04_etcd-guard-pdb.yaml", lambda r, op: pdb("etcd-guard-pdb", "openshift-etcd", "guard"))],
            co_extra_ann={EXCLUDE_HOSTED: "true"},
            description="etcd members on the control plane.",
        ),
        Operator(
            component="kube-apiserver-operator", run_level="20", namespace="openshift-kube-apiserver-operator",
            deployment="kube-apiserver-operator", co_name="kube-apiserver",
            image_tag="cluster-kube-apiserver-operator",
            command=["cluster-kube-apiserver-operator", "operator"],
            extra_namespaces=["openshift-kube-apiserver"],
            operand=Operand("kube-apiserver", "hyperkube", kube),
            crds=[crd_kubeapiservers],
            related=[rel("operator.openshift.io", "kubeapiservers", "cluster"),
                     rel("apiextensions.k8s.io", "customresourcedefinitions"),
                     rel("", "namespaces", "openshift-config"),
                     rel("", "namespaces", "openshift-kube-apiserver-operator"),
                     rel("", "namespaces", "openshift-kube-apiserver")],
            co_extra_ann={EXCLUDE_HOSTED: "true"},
            memory="60Mi",
            description="Static-pod kube-apiserver.",
        ),
        Operator(
            component="kube-controller-manager-operator", run_level="25",
            namespace="openshift-kube-controller-manager-operator", deployment="kube-controller-manager-operator",
            co_name="kube-controller-manager", image_tag="cluster-kube-controller-manager-operator",
            command=["cluster-kube-controller-manager-operator", "operator"],
            operand=Operand("kube-controller-manager", "hyperkube", kube),
            crds=[crd_kubecontrollermanagers], metrics_port=None,
            co_extra_ann={EXCLUDE_HOSTED: "true"},
            description="Static-pod kube-controller-manager.",
        ),
        Operator(
            component="kube-scheduler-operator", run_level="25", namespace="openshift-kube-scheduler-operator",
            deployment="openshift-kube-scheduler-operator", co_name="kube-scheduler",
            image_tag="cluster-kube-scheduler-operator",
            command=["cluster-kube-scheduler-operator", "operator"],
            operand=Operand("kube-scheduler", "hyperkube", kube),
            crds=[crd_kubeschedulers], metrics_port=None,
            co_extra_ann={EXCLUDE_HOSTED: "true"},
            description="Static-pod kube-scheduler.",
        ),
        Operator(
            component="cluster-storage-operator", run_level="40", namespace="openshift-cluster-storage-operator",
            deployment="cluster-storage-operator", co_name="storage", image_tag="cluster-storage-operator",
            command=["cluster-storage-operator", "start"], crds=[crd_storages], metrics_port=None,
            description="Default StorageClass and CSI driver operators.",
        ),
        Operator(
            component="cluster-authentication-operator", run_level="50",
            namespace="openshift-authentication-operator", deployment="authentication-operator",
            co_name="authentication", image_tag="cluster-authentication-operator",
            command=["authentication-operator", "operator"],
            extra_namespaces=["openshift-authentication"],
            operand=Operand("oauth-openshift", "oauth-server", lambda r: f"{r.version}_openshift"),
            crds=[crd_authentications], inject_proxy=True, metrics_port=None,
            description="OAuth server and oauth-apiserver.",
        ),
        Operator(
            component="cluster-image-registry-operator", run_level="50", namespace="openshift-image-registry",
            deployment="cluster-image-registry-operator", co_name="image-registry",
            image_tag="cluster-image-registry-operator",
            command=["cluster-image-registry-operator"], args=["--files=/var/run/configmaps/config/config.yaml"],
            operand=Operand("", "docker-registry", None),
            crds=[crd_imageregistry_configs], capability="ImageRegistry", metrics_port=60000,
            inject_proxy=True,
            related=[rel("imageregistry.operator.openshift.io", "configs", "cluster"),
                     rel("", "namespaces", "openshift-image-registry")],
            description="Integrated image registry (capability ImageRegistry).",
        ),
        Operator(
            component="cluster-ingress-operator", run_level="50", namespace="openshift-ingress-operator",
            deployment="ingress-operator", co_name="ingress", image_tag="cluster-ingress-operator",
            command=["ingress-operator", "start"],
            args=["--namespace", "openshift-ingress-operator", "--image", "$(OPERAND_IMAGE)", "--release-version",
                  "$(RELEASE_VERSION)", "--metrics-listen-addr", "0.0.0.0:9393"],
            operand=Operand("", "haproxy-router", None),
            crds=[crd_ingresscontrollers], crd_file_names=["00-custom-resource-definition.yaml"],
            sep="-", metrics_port=9393, inject_proxy=True,
            names={"namespace": "00-namespace.yaml", "rbac": "01-rbac.yaml", "service": "01-service.yaml",
                   "configmap": "01-configmap.yaml", "deployment": "02-deployment.yaml",
                   "clusteroperator": "03-cluster-operator.yaml"},
            extra_files=[("01-trusted-ca-configmap.yaml", ingress_trusted_ca)],
            related=[rel("", "namespaces", "openshift-ingress-operator"),
                     rel("operator.openshift.io", "ingresscontrollers", namespace="openshift-ingress-operator"),
                     rel("", "namespaces", "openshift-ingress")],
            description="HAProxy router (IngressControllers).",
        ),
        Operator(
            component="console-operator", run_level="50", namespace="openshift-console-operator",
            deployment="console-operator", co_name="console", image_tag="console-operator",
            command=["console", "operator"],
            extra_namespaces=["openshift-console"],
            operand=Operand("", "console", None),
            crds=[crd_consoles], capability="Console",
            related=[rel("operator.openshift.io", "consoles", "cluster"), rel("config.openshift.io", "consoles",
                                                                              "cluster"),
                     rel("", "namespaces", "openshift-console"),
                     rel("", "namespaces", "openshift-console-operator")],
            description="Web console (capability Console).",
        ),
        Operator(
            component="cluster-monitoring-operator", run_level="50", namespace="openshift-monitoring",
            deployment="cluster-monitoring-operator", co_name="monitoring", image_tag="cluster-monitoring-operator",
            command=["cluster-monitoring-operator"],
            args=["-namespace=openshift-monitoring", "-configmap=cluster-monitoring-config",
                  "-release-version=$(RELEASE_VERSION)", "-images=prometheus-operator=$(OPERAND_IMAGE)"],
            operand=Operand("", "prometheus-operator", None),
            crds=[crd_prometheusrules, crd_servicemonitors],
            crd_file_names=["00_0prometheusrule-custom-resource-definition.yaml",
                            "00_0servicemonitor-custom-resource-definition.yaml"],
            sep="-", names={"namespace": "01-namespace.yaml", "rbac": "02-rbac.yaml",
                            "service": "03-service.yaml", "configmap": "04-config.yaml"},
            extra_files=[("04-config-defaults.yaml", monitoring_defaults)],
            memory="75Mi",
            description="Platform Prometheus stack; ships the monitoring CRDs.",
        ),
        Operator(
            component="cluster-samples-operator", run_level="50", namespace="openshift-cluster-samples-operator",
            deployment="cluster-samples-operator", co_name="openshift-samples", image_tag="cluster-samples-operator",
            command=["cluster-samples-operator"], crds=[crd_samples_configs], metrics_port=None,
            present=lambda r: r.samples,
            description="Sample ImageStreams/Templates. Deprecated: removed in 4.17.0.",
        ),
        Operator(
            component="cluster-olm-operator", run_level="50", namespace="openshift-cluster-olm-operator",
            deployment="cluster-olm-operator", co_name="olm", image_tag="cluster-olm-operator",
            command=["cluster-olm-operator", "start"],
            operand=Operand("", "operator-controller", None),
            crds=[crd_olms], metrics_port=None,
            related=[rel("operator.openshift.io", "olms", "cluster"),
                     rel("", "namespaces", "openshift-cluster-olm-operator")],
            present=lambda r: r.olm,
            description="OLM v1 (operator-controller). New in 4.17.0.",
        ),
        Operator(
            component="cluster-network-operator", run_level="70", namespace="openshift-network-operator",
            deployment="network-operator", co_name="network", image_tag="cluster-network-operator",
            command=["cluster-network-operator", "start"], args=["--listen=0.0.0.0:9104"],
            operand=Operand("", "ovn-kubernetes", None),
            crds=[crd_networks_operator], metrics_port=None, memory="100Mi",
            description="OVN-Kubernetes cluster network.",
        ),
        Operator(
            component="dns-operator", run_level="70", namespace="openshift-dns-operator", deployment="dns-operator",
            co_name="dns", image_tag="cluster-dns-operator", command=["dns-operator"],
            extra_namespaces=["openshift-dns"],
            operand=Operand("coredns", "coredns", lambda r: r.coredns),
            crds=[crd_dnses_operator], metrics_port=9393,
            description="CoreDNS.",
        ),
        Operator(
            component="machine-config", run_level="80", namespace="openshift-machine-config-operator",
            deployment="machine-config-operator", co_name="machine-config", image_tag="machine-config-operator",
            command=["/usr/bin/machine-config-operator"],
            args=["start", "--payload-version=$(RELEASE_VERSION)", "--v=2"],
            crds=[crd_machineconfigpools, crd_machineconfigs], metrics_port=9001,
            crd_file_names=["00_machineconfigpools.crd.yaml", "00_machineconfigs.crd.yaml"],
            names={"namespace": "01_namespace.yaml"},
            description="Node OS configuration and rolling node updates.",
        ),
    ]


def samples_tombstone(r: Release) -> list[tuple[str, Docs]]:
    return [("0000_50_cluster-samples-operator_05_deployment-delete.yaml", [{
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta("cluster-samples-operator", "openshift-cluster-samples-operator",
                         annotations(extra={DELETE: "true"})),
    }])]


def release_manifest_files(r: Release) -> list[tuple[str, Docs]]:
    files = config_operator_files(r)
    files += storage_migration_files(r)
    for op in operators():
        if op.present(r):
            files += operator_files(r, op)
    if r.samples_tombstone:
        files += samples_tombstone(r)
    files += level90_files(r)
    return sorted(files, key=lambda f: f[0].encode())


# --------------------------------------------------------------------------------------------
# CVO's own manifests (manifests/, Go-templated)
# --------------------------------------------------------------------------------------------


def cvo_manifest_files(r: Release) -> list[tuple[str, Docs]]:
    ns = "openshift-cluster-version"
    ann = annotations()
    cvo_ann = {**ann, "kubernetes.io/description": "The cluster-version operator manages OpenShift updates and "
                                                   "reconciles core resources and cluster operators."}
    co_crd = crd(
        group="config.openshift.io", kind="ClusterOperator", plural="clusteroperators", short_names=["co"],
        description="ClusterOperator is the Custom Resource object which holds the current state of an operator."
                    " This object is used by operators to convey their state to the rest of the cluster.",
        spec=obj("spec holds configuration that could apply to any operator.", {}),
        status=obj("status holds the information about the state of an operator.  It is consistent with "
                   "status information across the Kubernetes ecosystem.", {
                       "conditions": arr("conditions describes the state of the operator's managed and "
                                         "monitored components.", obj(
                                             "ClusterOperatorStatusCondition represents the state of the "
                                             "operator's managed and monitored components.", {
                                                 "lastTransitionTime": s("lastTransitionTime is the time of the "
                                                                         "last update to the current status "
                                                                         "property.", format="date-time"),
                                                 "message": s("message provides additional information about the "
                                                              "current condition."),
                                                 "reason": s("reason is the CamelCase reason for the condition's "
                                                             "current status."),
                                                 "status": s("status of the condition, one of True, False, "
                                                             "Unknown."),
                                                 "type": s("type specifies the aspect reported by this condition."),
                                             }, required=["lastTransitionTime", "status", "type"]),
                                         **{"x-kubernetes-list-map-keys": ["type"],
                                            "x-kubernetes-list-type": "map"}),
                       "extension": {"description": "extension contains any additional status information "
                                                    "specific to the operator which owns this status object.",
                                     "nullable": True, "type": "object",
                                     "x-kubernetes-preserve-unknown-fields": True},
                       "relatedObjects": arr("relatedObjects is a list of objects that are \"interesting\" or "
                                             "related to this operator.", obj(
                                                 "ObjectReference contains enough information to let you inspect "
                                                 "or modify the referred object.", {
                                                     "group": s("group of the referent."),
                                                     "name": s("name of the referent."),
                                                     "namespace": s("namespace of the referent."),
                                                     "resource": s("resource of the referent.")},
                                                 required=["group", "name", "resource"])),
                       "versions": arr("versions is a slice of operator and operand version tuples.", obj(
                           "", {"name": s("name is the name of the particular operand this version is for."),
                                "version": s("version indicates which version of a particular operand is "
                                             "currently being managed.")}, required=["name", "version"])),
                   }),
        status_subresource=True,
        printer_columns=[
            {"description": "The version the operator is at.",
             "jsonPath": ".status.versions[?(@.name==\"operator\")].version", "name": "Version",
             "type": "string"},
            {"description": "Whether the operator is running and stable.",
             "jsonPath": ".status.conditions[?(@.type==\"Available\")].status", "name": "Available",
             "type": "string"},
            {"description": "Whether the operator is processing changes.",
             "jsonPath": ".status.conditions[?(@.type==\"Progressing\")].status", "name": "Progressing",
             "type": "string"},
            {"description": "Whether the operator is degraded.",
             "jsonPath": ".status.conditions[?(@.type==\"Degraded\")].status", "name": "Degraded",
             "type": "string"},
            {"description": "The time the operator's Available status last changed.",
             "jsonPath": ".status.conditions[?(@.type==\"Available\")].lastTransitionTime", "name": "Since",
             "type": "date"},
        ],
        ann=ann, spec_required=True,
    )
    cv_crd = crd(
        group="config.openshift.io", kind="ClusterVersion", plural="clusterversions",
        description="ClusterVersion is the configuration for the ClusterVersionOperator. This is where "
                    "parameters related to automatic updates can be set.",
        spec=obj("spec is the desired state of the cluster version - the operator will work to ensure that "
                 "the desired version is applied to the cluster.", {
                     "channel": s("channel is an identifier for explicitly requesting a non-default set of "
                                  "updates to be applied to this cluster."),
                     "clusterID": s("clusterID uniquely identifies this cluster."),
                     "desiredUpdate": obj("desiredUpdate is an optional field that indicates the desired value "
                                          "of the cluster version.", {
                                              "force": b("force allows an administrator to update to an image "
                                                         "that has failed verification or upgradeable checks."),
                                              "image": s("image is a container image location that contains "
                                                         "the update."),
                                              "version": s("version is a semantic version identifying the "
                                                           "update version.")}),
                     "overrides": arr("overrides is list of overides for components that are managed by cluster "
                                      "version operator.", obj("ComponentOverride allows overriding cluster "
                                                               "version operator's behavior for a component.", {
                                                                   "group": s("group identifies the API group "
                                                                              "that the kind is in."),
                                                                   "kind": s("kind indentifies which object to "
                                                                             "override."),
                                                                   "name": s("name is the component's name."),
                                                                   "namespace": s("namespace is the component's "
                                                                                  "namespace."),
                                                                   "unmanaged": b("unmanaged controls if cluster "
                                                                                  "version operator should stop "
                                                                                  "managing the resources in this "
                                                                                  "cluster.")},
                                                               required=["group", "kind", "name", "namespace",
                                                                         "unmanaged"]),
                                      **{"x-kubernetes-list-map-keys": ["kind", "group", "namespace", "name"],
                                         "x-kubernetes-list-type": "map"}),
                     "upstream": s("upstream may be used to specify the preferred update server."),
                 }, required=["clusterID"]),
        status=obj("status contains information about the available updates and any in-progress updates.", {
            "availableUpdates": {"description": "availableUpdates contains updates recommended for this "
                                                "cluster.", "items": {"type": "object",
                                                                      "x-kubernetes-preserve-unknown-fields": True},
                                 "nullable": True, "type": "array", "x-kubernetes-list-type": "atomic"},
            "conditions": CONDITIONS,
            "desired": {"description": "desired is the version that the cluster is reconciling towards.",
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "history": {"description": "history contains a list of the most recent versions applied to the "
                                       "cluster.", "items": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True},
                        "type": "array", "x-kubernetes-list-type": "atomic"},
            "observedGeneration": i64("observedGeneration reports which version of the spec is being synced."),
            "versionHash": s("versionHash is a fingerprint of the content that the cluster will be updated "
                             "with."),
        }),
        status_subresource=True,
        printer_columns=[
            {"jsonPath": ".status.history[?(@.state==\"Completed\")].version", "name": "Version",
             "type": "string"},
            {"jsonPath": ".status.conditions[?(@.type==\"Available\")].status", "name": "Available",
             "type": "string"},
            {"jsonPath": ".status.conditions[?(@.type==\"Progressing\")].status", "name": "Progressing",
             "type": "string"},
            {"jsonPath": ".status.conditions[?(@.type==\"Progressing\")].lastTransitionTime", "name": "Since",
             "type": "date"},
            {"jsonPath": ".status.conditions[?(@.type==\"Progressing\")].message", "name": "Status",
             "type": "string"},
        ],
        ann=ann,
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta("cluster-version-operator", ns, {**cvo_ann, EXCLUDE_HOSTED: "true"},
                         {"k8s-app": "cluster-version-operator"}),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"k8s-app": "cluster-version-operator"}},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {
                    "annotations": {"openshift.io/required-scc": "hostaccess",
                                    "target.workload.openshift.io/management":
                                        '{"effect": "PreferredDuringScheduling"}'},
                    "labels": {"k8s-app": "cluster-version-operator"},
                    "name": "cluster-version-operator",
                },
                "spec": {
                    "containers": [{
                        "name": "cluster-version-operator",
                        "image": "{{.ReleaseImage}}",
                        "imagePullPolicy": "IfNotPresent",
                        "args": ["start", "--release-image={{.ReleaseImage}}", "--enable-auto-update=false",
                                 "--listen=0.0.0.0:9099", "--serving-cert-file=/etc/tls/serving-cert/tls.crt",
                                 "--serving-key-file=/etc/tls/serving-cert/tls.key", "--v=2"],
                        "env": [
                            {"name": "OPERATOR_IMAGE_VERSION", "value": r.version},
                            {"name": "KUBERNETES_SERVICE_PORT", "value": "6443"},
                            {"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
                            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                            {"name": "CLUSTER_PROFILE", "value": "{{ .ClusterProfile }}"},
                        ],
                        "ports": [{"containerPort": 9099, "name": "metrics"}],
                        "resources": {"requests": {"cpu": "20m", "memory": "50Mi"}},
                        "securityContext": {"readOnlyRootFilesystem": True},
                        "terminationMessagePolicy": "FallbackToLogsOnError",
                        "volumeMounts": [
                            {"mountPath": "/etc/ssl/certs", "name": "etc-ssl-certs", "readOnly": True},
                            {"mountPath": "/etc/cvo/updatepayloads", "name": "etc-cvo-updatepayloads",
                             "readOnly": True},
                            {"mountPath": "/etc/tls/serving-cert", "name": "serving-cert", "readOnly": True},
                        ],
                    }],
                    "dnsPolicy": "Default",
                    "hostNetwork": True,
                    "nodeSelector": {"node-role.kubernetes.io/master": ""},
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "cluster-version-operator",
                    "terminationGracePeriodSeconds": 130,
                    "tolerations": [
                        {"effect": "NoSchedule", "key": "node-role.kubernetes.io/master", "operator": "Exists"},
                        {"effect": "NoSchedule", "key": "node.kubernetes.io/network-unavailable",
                         "operator": "Exists"},
                        {"effect": "NoSchedule", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
                        {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
                         "tolerationSeconds": 120},
                        {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
                         "tolerationSeconds": 120},
                    ],
                    "volumes": [
                        {"hostPath": {"path": "/etc/ssl/certs"}, "name": "etc-ssl-certs"},
                        {"hostPath": {"path": "/etc/cvo/updatepayloads"}, "name": "etc-cvo-updatepayloads"},
                        {"name": "serving-cert", "secret": {"secretName": "cluster-version-operator-serving-cert"}},
                    ],
                },
            },
        },
    }
    p = "0000_00_cluster-version-operator_"
    return [
        (p + "00_namespace.yaml", [namespace_doc(ns, cvo_ann)]),
        (p + "01_clusteroperators.crd.yaml", [co_crd]),
        (p + "01_clusterversions.crd.yaml", [cv_crd]),
        (p + "02_service_account.yaml", [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("cluster-version-operator", ns, ann)}]),
        (p + "03_roles.yaml", [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": meta("cluster-version-operator", None, ann),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
             "subjects": [{"kind": "ServiceAccount", "name": "cluster-version-operator", "namespace": ns}]}]),
        (p + "30_deployment.yaml", [deployment]),
        (p + "40_service.yaml", [{
            "apiVersion": "v1", "kind": "Service",
            "metadata": meta("cluster-version-operator", ns, {
                **ann, "service.beta.openshift.io/serving-cert-secret-name": "cluster-version-operator-serving-cert"},
                {"k8s-app": "cluster-version-operator"}),
            "spec": {"ports": [{"name": "metrics", "port": 9099, "targetPort": "metrics"}],
                     "selector": {"k8s-app": "cluster-version-operator"}, "type": "ClusterIP"}}]),
    ]


# --------------------------------------------------------------------------------------------
# Metadata files
# --------------------------------------------------------------------------------------------


def release_metadata(r: Release) -> str:
    doc = {
        "kind": "cincinnati-metadata-v0",
        "version": r.version,
        "previous": list(r.previous),
        "metadata": {
            "io.openshift.upgrades.graph.release.channels": r.channels,
            "url": f"https://demo.example.com/releases/{r.version}",
        },
    }
    return json.dumps(doc, indent=2) + "\n"


def image_references(r: Release) -> str:
    tags = []
    for tag in image_tags(r):
        commit = hashlib.sha1(f"{IMAGE_SOURCES[tag]}:{r.version}".encode()).hexdigest()
        tags.append({
            "name": tag,
            "annotations": {
                "io.openshift.build.commit.id": commit,
                "io.openshift.build.source-location": f"https://github.com/openshift/{IMAGE_SOURCES[tag]}",
            },
            "from": {"kind": "DockerImage", "name": pullspec(tag, r)},
            "generation": None,
            "importPolicy": {},
            "referencePolicy": {"type": "Source"},
        })
    doc = {
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {
            "name": r.version,
            "annotations": {"release.openshift.io/from-image-stream": f"demo/{r.minor}-art-latest"},
        },
        "spec": {"lookupPolicy": {"local": False}, "tags": tags},
    }
    return json.dumps(doc, indent=2) + "\n"


# --------------------------------------------------------------------------------------------
# YAML output
# --------------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: object) -> bool:  # never emit &anchors / *aliases
        return True


_VERSIONISH = re.compile(r"^[0-9][0-9.]*$")


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    # Quote (with double quotes, like hand-written manifests) strings that would otherwise read as
    # booleans/numbers/null, and version-looking strings such as 4.16.0 or 3.5.13.
    implicit = dumper.resolve(yaml.ScalarNode, data, (True, False))
    if data == "" or _VERSIONISH.match(data) or implicit != "tag:yaml.org,2002:str":
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_representer)


def dump_docs(docs: Docs) -> str:
    parts = [yaml.dump(d, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=4096,
                       allow_unicode=True) for d in docs]
    return "---\n".join(parts)


# --------------------------------------------------------------------------------------------
# Writing + self-check
# --------------------------------------------------------------------------------------------


def write_release(out: Path, r: Release) -> None:
    root = out / r.dirname
    (root / "manifests").mkdir(parents=True)
    (root / "release-manifests").mkdir(parents=True)
    for name, docs in cvo_manifest_files(r):
        (root / "manifests" / name).write_text(dump_docs(docs))
    files = release_manifest_files(r)
    names = [n for n, _ in files]
    if len(names) != len(set(names)):
        raise SystemExit(f"{r.version}: duplicate file names")
    for name, docs in files:
        (root / "release-manifests" / name).write_text(dump_docs(docs))
    (root / "release-manifests" / "release-metadata").write_text(release_metadata(r))
    (root / "release-manifests" / "image-references").write_text(image_references(r))


def _gk(doc: dict) -> tuple[str, str, str, str]:
    group = doc["apiVersion"].rpartition("/")[0]
    md = doc["metadata"]
    return group, doc["kind"], md.get("namespace", ""), md["name"]


def check_release(root: Path, r: Release) -> dict:
    problems: list[str] = []
    meta_doc = json.loads((root / "release-manifests" / "release-metadata").read_text())
    if meta_doc.get("kind") != "cincinnati-metadata-v0" or meta_doc.get("version") != r.version:
        problems.append("release-metadata kind/version")
    imgref = yaml.safe_load((root / "release-manifests" / "image-references").read_text())
    if imgref.get("kind") != "ImageStream" or imgref.get("apiVersion") != "image.openshift.io/v1":
        problems.append("image-references is not an image.openshift.io/v1 ImageStream")
    if imgref["metadata"]["name"] != r.version:
        problems.append("image-references name != version")
    pullspecs = {t["from"]["name"] for t in imgref["spec"]["tags"]}

    seen: dict[tuple, str] = {}
    counts = {"files": 0, "docs": 0}
    deploy_file: dict[str, str] = {}  # component+namespace -> deployment filename
    co_files: list[tuple[str, str]] = []
    for sub in ("manifests", "release-manifests"):
        for path in sorted((root / sub).iterdir(), key=lambda p: p.name.encode()):
            if path.suffix not in (".yaml", ".yml", ".json"):
                continue
            counts["files"] += 1
            m = FILENAME_RE.match(path.name)
            if not m:
                problems.append(f"{path.name}: does not match the CVO file-name pattern")
                continue
            component = m.group(2)
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
            if not docs:
                problems.append(f"{path.name}: no documents")
            for d in docs:
                counts["docs"] += 1
                if not d.get("kind") or not d.get("metadata", {}).get("name"):
                    problems.append(f"{path.name}: document without kind or metadata.name")
                    continue
                ann = d["metadata"].get("annotations") or {}
                if ann.get(HA) != "true":
                    problems.append(f"{path.name}: {d['kind']}/{d['metadata']['name']} lacks the HA profile")
                key = _gk(d)
                if key in seen and ann.get(DELETE) != "true":
                    problems.append(f"{path.name}: duplicate {key} (also in {seen[key]})")
                seen[key] = path.name
                if d["kind"] == "Deployment" and ann.get(DELETE) != "true":
                    image = d["spec"]["template"]["spec"]["containers"][0]["image"]
                    if sub == "release-manifests":
                        if image not in pullspecs:
                            problems.append(f"{path.name}: image not in image-references")
                        env = {e["name"]: e.get("value") for e in
                               d["spec"]["template"]["spec"]["containers"][0].get("env", [])}
                        if env.get("RELEASE_VERSION") != r.version:
                            problems.append(f"{path.name}: RELEASE_VERSION")
                        if "OPERAND_IMAGE" in env and env["OPERAND_IMAGE"] not in pullspecs:
                            problems.append(f"{path.name}: OPERAND_IMAGE not in image-references")
                    if d["spec"].get("replicas") != 1:
                        problems.append(f"{path.name}: replicas != 1")
                    deploy_file[component] = path.name
                if d["kind"] == "ClusterOperator":
                    vers = {v["name"]: v["version"] for v in d["status"]["versions"]}
                    if vers.get("operator") != r.version:
                        problems.append(f"{path.name}: operator version")
                    co_files.append((component, path.name))
    for component, co_name in co_files:
        dep = deploy_file.get(component)
        if dep is None:
            problems.append(f"{co_name}: no Deployment for component {component}")
        elif not dep.encode() < co_name.encode():
            problems.append(f"{co_name}: sorts before its Deployment {dep}")
    if problems:
        raise SystemExit(f"{r.version}: self-check failed:\n  " + "\n  ".join(problems))
    return counts


# --------------------------------------------------------------------------------------------
# README
# --------------------------------------------------------------------------------------------


def _special(name: str, doc: dict) -> list[str]:
    """Human-readable notes for the README about one document."""
    ann = doc["metadata"].get("annotations") or {}
    what = f"{doc['kind']} `{doc['metadata']['name']}`"
    attrs = []
    if ann.get(CREATE_ONLY) == "true":
        attrs.append("create-only")
    if ann.get(DELETE) == "true":
        attrs.append(f"`release.openshift.io/delete` in `{name}`")
    if FEATURE_SET in ann:
        attrs.append(f"feature-set {ann[FEATURE_SET]}")
    if FEATURE_GATE in ann:
        attrs.append(f"feature-gate {ann[FEATURE_GATE]}")
    if ann.get(HA) == "true" and SNO not in ann:
        attrs.append("HA profile only")
    if doc["kind"] == "Job":
        attrs.append("`batch/v1`, in its own file: a barrier in the graph")
    if doc["kind"] == "CustomResourceDefinition":
        sub = doc["spec"]["versions"][0].get("subresources") or {}
        if "scale" in sub:
            attrs.append("status+scale subresources")
    return [f"{what}: {', '.join(attrs)}"] if attrs else []


def readme() -> str:
    by_version = {r.version: r for r in RELEASES}
    op_by_component = {op.component: op for op in operators()}
    # component -> info gathered over all releases
    rows: dict[str, dict] = {}
    for r in RELEASES:
        for name, docs in release_manifest_files(r):
            m = FILENAME_RE.match(name)
            assert m
            row = rows.setdefault(m.group(2), {"levels": set(), "releases": set(), "notes": [], "caps": set(),
                                               "namespaces": set(), "co": None})
            row["levels"].add(m.group(1))
            row["releases"].add(r.version)
            for d in docs:
                ann = d["metadata"].get("annotations") or {}
                if CAPABILITY in ann:
                    row["caps"].add(ann[CAPABILITY])
                if d["kind"] == "Namespace":
                    row["namespaces"].add(d["metadata"]["name"])
                if d["kind"] == "ClusterOperator":
                    row["co"] = d["metadata"]["name"]
                for n in _special(name, d):
                    if n not in row["notes"]:
                        row["notes"].append(n)
    all_versions = [r.version for r in RELEASES]

    lines = [
        "# Demo release payloads",
        "",
        "Generated by `python hack/gen_demo_payloads.py` — do not edit by hand; change the generator and re-run it",
        "(`python hack/gen_demo_payloads.py --check` verifies that this directory is up to date). The output is",
        "deterministic.",
        "",
        "Three releases of a small OpenShift-like product, each a release directory as the CVO expects it:",
        "",
        "```",
        "demo-<version>/",
        "  manifests/            the CVO's own manifests (Go text/template: {{.ReleaseImage}}, {{ .ClusterProfile }})",
        "  release-manifests/    0000_<NN>_<component>_<rest>.yaml, release-metadata, image-references",
        "```",
        "",
        "| release | kind | previous | channels (as written; the CVO sorts them) |",
        "|---|---|---|---|",
    ]
    kinds = {"4.16.0": "first 4.16 GA", "4.16.3": "patch (z-stream)", "4.17.0": "minor"}
    for r in RELEASES:
        lines.append(f"| {r.version} | {kinds[r.version]} | {', '.join(r.previous)} | `{r.channels}` |")
    lines += [
        "",
        "Image pullspecs are `quay.io/demo/release@sha256:<sha256(tag + \":\" + version)>`, so every digest changes",
        "with every release. `image-references` is JSON (like the real payload) and lists one tag per operator",
        "image plus the operand images (`etcd`, `hyperkube`, `coredns`, …), `cli` (used by the Job) and",
        "`cluster-version-operator`.",
        "",
        "## Components",
        "",
        "Operand versions are given per release (4.16.0 / 4.16.3 / 4.17.0). Where a ClusterOperator lists an",
        "operand version, the operator Deployment carries the same value in env `OPERAND_VERSION` (and the operand",
        "image in `OPERAND_IMAGE`); every operator Deployment carries `RELEASE_VERSION`, and every ClusterOperator",
        "lists `{name: operator, version: <release version>}`.",
        "",
        "| component (file name) | run level(s) | namespace(s) | ClusterOperator | operand versions | releases | notes |",
        "|---|---|---|---|---|---|---|",
        "| `cluster-version-operator` (`manifests/`) | 00 | openshift-cluster-version | — | — | all | "
        "ClusterOperator + ClusterVersion CRDs; Deployment image `{{.ReleaseImage}}`, env `CLUSTER_PROFILE: "
        "{{ .ClusterProfile }}` |",
    ]
    for comp, row in sorted(rows.items(), key=lambda kv: (min(kv[1]["levels"]), kv[0])):
        op = op_by_component.get(comp)
        vers = "—"
        if op and op.operand and op.operand.name and op.operand.version:
            vals = [op.operand.version(by_version[v]) if v in row["releases"] else "—" for v in all_versions]
            vers = f"{op.operand.name}: " + " / ".join(vals)
        releases = "all" if len(row["releases"]) == len(RELEASES) else ", ".join(
            v for v in all_versions if v in row["releases"])
        if comp == "cluster-samples-operator":
            releases = "4.16.x (4.17.0: delete manifest only)"
        notes = list(row["notes"])
        if row["caps"]:
            notes.insert(0, "all documents `capability.openshift.io/name: " + ", ".join(sorted(row["caps"])) + "`")
        if op and op.sep == "-":
            notes.append("dash-style file names (`NN-name.yaml`)")
        lines.append(
            f"| `{comp}` | {', '.join(sorted(row['levels']))} | {', '.join(sorted(row['namespaces'])) or '—'} | "
            f"{row['co'] or '—'} | {vers} | {releases} | {'; '.join(notes)} |")
    lines += [
        "",
        "Per operator component the files are, in byte-wise order: Namespace(s), CRD(s), ServiceAccount +",
        "ClusterRole + ClusterRoleBinding (one multi-document file), ConfigMap, Service (where the operator exposes",
        "metrics), extras, Deployment, and finally the ClusterOperator, so the ClusterOperator always sorts after",
        "the Deployment that reports it. The run-level-90 monitoring files of etcd-operator and",
        "cluster-ingress-operator sort after everything (as in the real payload, where components have late",
        "0000_90 files). machine-config puts its CRDs (`00_*.crd.yaml`) before its namespace (`01_namespace.yaml`);",
        "cluster-monitoring-operator does the same (`00_0*-custom-resource-definition.yaml`, `01-namespace.yaml`).",
        "",
        "Run-level shape (update mode): 03 → 05 → 10 are single-component (config-operator) and merge into one",
        "serial node; 20 and 25 have two components each (parallel); 30 holds the Job (a barrier); 40 (storage)",
        "and 80 (machine-config) are single-component; 50 is the wide parallel step; 70 has two components; 90 two.",
        "",
        "Annotations: every document has `include.release.openshift.io/self-managed-high-availability: \"true\"`;",
        "all but the few marked \"HA profile only\" above also have",
        "`include.release.openshift.io/single-node-developer: \"true\"`. The ClusterOperators of config-operator",
        "and the control-plane operators carry `exclude.release.openshift.io/internal-openshift-hosted: \"true\"`",
        "(as in the real payload). Some operator Deployments carry `config.openshift.io/inject-proxy`. The etcd",
        "PrometheusRule contains `{{ $labels.* }}` alert templates; release-manifests are not Go-templated, so",
        "these must pass through untouched.",
        "",
        "## What changes between releases",
        "",
        "4.16.0 → 4.16.3 (patch): structurally identical (same files, same objects). Changed: every version string",
        "(`RELEASE_VERSION`, ClusterOperator `operator` versions, CVO `OPERATOR_IMAGE_VERSION`, the oauth-openshift",
        "operand `<version>_openshift`), every image digest, and CoreDNS 1.11.1 → 1.11.3 (dns ClusterOperator and",
        "`OPERAND_VERSION`). The ingress operand (haproxy) is not versioned in the ClusterOperator.",
        "",
        "4.16.x → 4.17.0 (minor):",
        "- Kubernetes 1.29.4 → 1.30.2 (kube-apiserver, kube-controller-manager, kube-scheduler operands); etcd",
        "  3.5.13 → 3.5.14.",
        "- `cluster-samples-operator` (ClusterOperator `openshift-samples`) is dropped. Its Deployment is removed by",
        "  `0000_50_cluster-samples-operator_05_deployment-delete.yaml` (`release.openshift.io/delete: \"true\"`);",
        "  its namespace, RBAC, CRD and ClusterOperator are simply no longer shipped, and its image tag disappears",
        "  from image-references.",
        "- New `cluster-olm-operator` (ClusterOperator `olm`, namespace openshift-cluster-olm-operator, run level 50)",
        "  with new image tags `cluster-olm-operator` and `operator-controller`.",
        "- `ingresscontrollers.operator.openshift.io` CRD gains `spec.idleConnectionTerminationPolicy`.",
        "",
        "## Counts",
        "",
        "| release | manifests/ files | release-manifests/ manifest files | + metadata files | documents (all) |",
        "|---|---|---|---|---|",
    ]
    for r in RELEASES:
        cvo = cvo_manifest_files(r)
        rm = release_manifest_files(r)
        ndocs = sum(len(d) for _, d in cvo) + sum(len(d) for _, d in rm)
        lines.append(f"| {r.version} | {len(cvo)} | {len(rm)} | 2 | {ndocs} |")
    lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------


def generate(out: Path) -> dict[str, dict]:
    out.mkdir(parents=True, exist_ok=True)
    for r in RELEASES:
        target = out / r.dirname
        if target.exists():
            shutil.rmtree(target)
        write_release(out, r)
    (out / "README.md").write_text(readme())
    return {r.version: check_release(out / r.dirname, r) for r in RELEASES}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default: payloads/)")
    ap.add_argument("--check", action="store_true", help="fail if the output directory is not up to date")
    args = ap.parse_args(argv)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            generate(Path(tmp))
            cmp = filecmp.dircmp(tmp, args.out)
            diffs: list[str] = []

            def walk(c: filecmp.dircmp, prefix: str) -> None:
                diffs.extend(prefix + n for n in c.left_only + c.right_only + c.diff_files + c.funny_files)
                for name, sub in c.subdirs.items():
                    walk(sub, f"{prefix}{name}/")

            walk(cmp, "")
            if diffs:
                print("payloads are out of date:\n  " + "\n  ".join(sorted(diffs)), file=sys.stderr)
                return 1
        print("payloads are up to date")
        return 0
    counts = generate(args.out)
    for version, c in counts.items():
        print(f"demo-{version}: {c['files']} manifest files, {c['docs']} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
