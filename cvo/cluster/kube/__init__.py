"""The Kubernetes backend: :class:`KubeCluster` implements :class:`cvo.cluster.api.Cluster` on a real API server."""

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
