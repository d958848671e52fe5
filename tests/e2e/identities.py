"""Talking to the test control plane as somebody else: a service account's own token, or impersonation.

* :func:`service_account_kubeconfig`: a kubeconfig with a token of a ServiceAccount (a TokenRequest,
  ``POST …/serviceaccounts/NAME/token``), so that a cvo command runs with exactly that account's
  permissions, as it would inside the cluster.
* :func:`impersonating`: a :class:`KubeCluster` with the admin's credentials and an
  ``Impersonate-User`` header (``kubectl --as``): the API server authorizes and admits each request
  as that user; for ``system:serviceaccount:NS:NAME`` it adds the service-account groups itself
  (kubernetes: staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go).
* :func:`request`: one plain HTTPS request (JSON patches, ``dryRun``), with or without impersonation,
  without the kubernetes client (whose models break under freezegun, see conftest.py).
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from cvo.cluster.kube import KubeCluster

from .controlplane import ControlPlane


def username(namespace: str, name: str) -> str:
    """The user name a ServiceAccount's requests carry."""
    return f"system:serviceaccount:{namespace}:{name}"


def request(cp: ControlPlane, method: str, path: str, body: Any = None, *, as_user: str | None = None,
            content_type: str = "application/json", query: str = "", attempts: int = 20) -> tuple[int, dict[str, Any]]:
    """``method path`` as the admin, or as ``as_user``; returns the status code and the JSON answer.

    A 429 is made again after its ``Retry-After`` (at most 1 s), as every client does: a fresh server
    answers it while the storage of a new resource is still initializing.
    """
    for _ in range(attempts - 1):
        code, answer, retry_after = _request(cp, method, path, body, as_user, content_type, query)
        if code != 429:
            return code, answer
        time.sleep(min(retry_after, 1.0))
    code, answer, _ = _request(cp, method, path, body, as_user, content_type, query)
    return code, answer


def _request(cp: ControlPlane, method: str, path: str, body: Any, as_user: str | None, content_type: str,
             query: str) -> tuple[int, dict[str, Any], float]:
    headers = {"Authorization": f"Bearer {cp.token}", "Accept": "application/json"}
    if as_user:
        headers["Impersonate-User"] = as_user
    data = None
    if body is not None:
        headers["Content-Type"] = content_type
        data = json.dumps(body).encode()
    url = f"{cp.server_url}{path}{'?' + query if query else ''}"
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    context = ssl.create_default_context(cafile=cp.ca_path)
    try:
        with urllib.request.urlopen(req, context=context, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"{}"), 0.0
    except urllib.error.HTTPError as err:
        retry_after = float(err.headers.get("Retry-After") or 1) if err.code == 429 else 0.0
        return err.code, json.loads(err.read() or b"{}"), retry_after


def service_account_kubeconfig(cp: ControlPlane, namespace: str, name: str, target: Path) -> Path:
    """A kubeconfig for the control plane with a one-hour token of ServiceAccount ``namespace/name``."""
    code, answer = request(cp, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                           {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                            "spec": {"expirationSeconds": 3600}})
    assert code == 201, (code, answer)
    kubeconfig = yaml.safe_load(Path(cp.kubeconfig_path).read_text())
    kubeconfig["users"] = [{"name": name, "user": {"token": answer["status"]["token"]}}]
    for context in kubeconfig["contexts"]:
        context["context"]["user"] = name
    target.write_text(yaml.safe_dump(kubeconfig))
    return target


def impersonating(cp: ControlPlane, user: str) -> KubeCluster:
    """A KubeCluster on ``cp`` whose every request is made as ``user`` (the admin may impersonate anyone)."""
    cluster = KubeCluster.from_kubeconfig(cp.kubeconfig_path)
    cluster.api_client.set_default_header("Impersonate-User", user)
    return cluster
