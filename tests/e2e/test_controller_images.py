"""``cvo run`` on the real API server pulling its releases from a real registry that wants credentials: the
credentials come only from the cluster's pull secret (``openshift-config/pull-secret``, as the CVO's pods pull
with it), the install and an update given by digest in ``spec.desiredUpdate.image`` are pulled, applied and
recorded by digest, and the password appears in no log line."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cvo.cluster.api import cv_ref
from tests.support.registry import Registry

from .identities import request
from .test_controller import patch_desired
from .test_e2e_flows import DEMO, E2E, e2e, history, wait_until

__all__ = ["e2e"]  # the fixture, imported for this module's tests

USER, PASSWORD = "puller", "pull-secret-s3cret"


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    """TLS with the test's CA, htpasswd basic auth: nothing can be pulled without credentials."""
    with Registry(tmp_path / "registry", tls=True, users={USER: PASSWORD}) as running:
        yield running


def auth_file(path: Path, registry: Registry) -> Path:
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    path.write_text(json.dumps({"auths": {registry.host: {"auth": token}}}))
    return path


def test_cvo_run_pulls_with_the_clusters_pull_secret(e2e: E2E, registry: Registry, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CVO_CACHE_DIR", str(tmp_path / "cache"))
    auth = auth_file(tmp_path / "auth.json", registry)
    ca = ["--registry-ca", str(registry.ca_path)]
    pulls = {}
    for version in ("4.16.0", "4.16.3"):  # published by someone with credentials
        built = subprocess.run([sys.executable, "-m", "cvo", "release", "new", "--from-dir", str(DEMO[version]),
                                "--to", registry.image("ocp/release", version), "--registry-config", str(auth), *ca,
                                "-o", "json"], capture_output=True, text=True, timeout=120)
        assert built.returncode == 0, built.stderr
        pulls[version] = json.loads(built.stdout)["pullSpec"]

    # the cluster's pull secret, as the installer writes it
    code, answer = request(e2e.cp, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                  "metadata": {"name": "openshift-config"}})
    assert code in (201, 409), answer
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
              "metadata": {"namespace": "openshift-config", "name": "pull-secret"},
              "data": {".dockerconfigjson": base64.b64encode(auth.read_bytes()).decode()}}
    code, answer = request(e2e.cp, "POST", "/api/v1/namespaces/openshift-config/secrets", secret)
    assert code == 201, answer

    operators = tmp_path / "operators.yaml"
    operators.write_text("default: {delay: 2s}\n")
    sim = e2e.start("sim-operators", "sim-operators", "--operators", str(operators), "--registry-config",
                    str(auth), *ca)
    # the controller gets the CA, not the credentials: those it must read from the pull secret
    run = e2e.start("run", "run", "--release", pulls["4.16.0"], *ca, "--interval", "20s", "--listen", "none",
                    log_json=True)

    def at(version: str) -> bool:
        cv = e2e.get(cv_ref())[0] or {}
        return history(cv)[:1] == [(version, "Completed")]

    wait_until("the controller to install 4.16.0 from the registry", lambda: at("4.16.0"), 300, interval=1.0,
               alive=run.popen)
    patch_desired(e2e.cp, {"image": pulls["4.16.3"]})
    wait_until("the update to 4.16.3, pulled by digest", lambda: at("4.16.3"), 300, interval=1.0, alive=run.popen)
    cv = e2e.get(cv_ref())[0] or {}
    assert [h["image"] for h in cv["status"]["history"]] == [pulls["4.16.3"], pulls["4.16.0"]]
    assert cv["status"]["desired"]["image"] == pulls["4.16.3"]
    run.popen.terminate()
    run.popen.wait(timeout=60)
    sim.popen.terminate()
    sim.popen.wait(timeout=60)
    for proc in (run, sim):
        assert PASSWORD not in proc.stderr and base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode() not in \
            proc.stderr
    assert "pulled release image" in run.stderr  # its pulls are in its log, without the credentials
