"""The Kubernetes backend: :class:`KubeCluster` implements :class:`cvo.cluster.api.Cluster` on a real API server.

Through the official ``kubernetes`` client: kubeconfig, discovery (kind to REST resource), requests with
the CVO's retry rules, and watches on threads of their own.
May import: ``cvo.cluster`` (the interface) and ``cvo.payload`` (object shapes); never ``cvo.cluster.embedded``.
"""

from cvo.cluster.kube.cluster import KubeCluster, KubeStats, RetryPolicy
from cvo.cluster.kube.config import Kubeconfig, KubeconfigError, default_kubeconfig_path, load_kubeconfig
from cvo.cluster.kube.discovery import Discovery, Resource

__all__ = [
    "Discovery",
    "KubeCluster",
    "KubeStats",
    "Kubeconfig",
    "KubeconfigError",
    "Resource",
    "RetryPolicy",
    "default_kubeconfig_path",
    "load_kubeconfig",
]
