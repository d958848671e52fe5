"""``cvo diff`` against a real API server: what the server defaults (a Deployment's strategy, a container's
termination message path, a Service's cluster IP, a Secret's type) never shows, and a changed image does.

The objects are applied by the runner's own apply (:func:`cvo.runner.apply.apply_task`), as a sweep applies
them; the diff is then run as a whole ``cvo diff --kubeconfig`` process.  The releases have a version no other
test gives a ClusterVersion, so the diff is an install's or an update's, whatever the session's server holds:
both apply (and compare) these objects the same way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from cvo.payload.graph import Mode, make_tasks
from cvo.payload.loader import load_release
from cvo.runner.apply import DeleteTracker, apply_task
from tests.support.helpers import REPO, ReleaseFactory, obj

from .conftest import run_with
from .controlplane import ControlPlane


def release(make_release: ReleaseFactory, namespace: str, image: str, name: str, extra: list[dict] | None = None,
            ) -> Path:
    deployment = obj("Deployment", "web", namespace, api="apps/v1", spec={
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
            {"name": "web", "image": image, "ports": [{"containerPort": 8080}]}]}}})
    service = obj("Service", "web", namespace, spec={"selector": {"app": "web"}, "ports": [{"port": 80}]})
    secret = obj("Secret", "token", namespace, stringData={"token": "s3cr3t"})
    config = obj("ConfigMap", "settings", namespace, data={"mode": "fast"})
    docs = [obj("Namespace", namespace), deployment, service, secret, config, *(extra or [])]
    return make_release({"0000_50_web_01.yaml": docs}, version=f"0.0.1-diff-e2e-{name}", name=name)


def diff(cp: ControlPlane, directory: Path) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "cvo", "diff", str(directory), "--kubeconfig", cp.kubeconfig_path,
                           "-o", "json"], capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_diff_on_a_real_api_server(control_plane: ControlPlane, namespace: str,
                                   make_release: ReleaseFactory) -> None:
    first = release(make_release, namespace, "quay.io/demo/web:1", "first")

    async def apply_all(cluster: Any) -> None:
        for task in make_tasks(load_release(first).manifests, Mode.INSTALL):
            await apply_task(cluster, task, Mode.INSTALL, DeleteTracker())

    run_with(control_plane, apply_all)
    code, same = diff(control_plane, first)
    assert (code, same["objects"], same["summary"]["unchanged"]) == (0, [], 5), same["objects"]

    added = obj("ConfigMap", "new", namespace, data={"k": "v"})
    second = release(make_release, namespace, "quay.io/demo/web:2", "second", extra=[added])
    code, doc = diff(control_plane, second)
    assert code == 1
    assert [(o["action"], o["kind"], o["name"], o["fields"]) for o in doc["objects"]] == [
        ("changed", "Deployment", "web", ["spec.template.spec.containers[0].image"]),
        ("added", "ConfigMap", "new", []),
    ]
    shown = doc["objects"][0]["diff"]
    assert "-      - image: quay.io/demo/web:1" in shown and "+      - image: quay.io/demo/web:2" in shown
    for defaulted in ("terminationMessagePath", "revisionHistoryLimit", "strategy", "protocol", "dnsPolicy"):
        assert defaulted not in shown
    assert "s3cr3t" not in json.dumps(doc)
