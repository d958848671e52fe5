"""The control plane's build files and scripts, without starting anything (no e2e marker: quick).

versions.env, the generated go.mod files and kwok's Stages agree; build.sh and hack/kwok-cluster.sh
refuse bad arguments with one clear line and a non-zero exit, before building or starting anything.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from .controlplane import (
    ACTING_BINARIES,
    APISERVER_BINARIES,
    HACK_DIR,
    KWOK_STAGES,
    ControlPlane,
    read_versions,
)

REPO = Path(__file__).resolve().parents[2]
KWOK_CLUSTER = REPO / "hack" / "kwok-cluster.sh"


def run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CVO_KWOK_CLUSTER_DIR": str(tmp_path / "state"),
           "CVO_CONTROL_PLANE_CACHE": str(tmp_path / "cache")}
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=60, cwd=REPO)


def test_the_go_modules_and_stages_are_those_of_versions_env() -> None:
    v = read_versions()
    kubernetes = (HACK_DIR / "kubernetes" / "go.mod").read_text()
    assert re.search(rf"^\s*k8s\.io/kubernetes v{re.escape(v['K8S_VERSION'])}( // indirect)?$", kubernetes, re.M)
    for tool in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        assert f"\tk8s.io/kubernetes/cmd/{tool}\n" in kubernetes
    kwok = (HACK_DIR / "kwok" / "go.mod").read_text()
    assert "tool sigs.k8s.io/kwok/cmd/kwok\n" in kwok
    assert re.search(rf"^\s*sigs\.k8s\.io/kwok v{re.escape(v['KWOK_VERSION'])}( // indirect)?$", kwok, re.M)

    stages = KWOK_STAGES.read_text()
    assert f"sigs.k8s.io/kwok v{v['KWOK_VERSION']}" in stages.splitlines()[1]
    docs = list(yaml.safe_load_all(stages))
    assert [(d["kind"], d["metadata"]["name"], d["spec"]["resourceRef"]["kind"]) for d in docs] == [
        ("Stage", "node-initialize", "Node"),
        ("Stage", "node-heartbeat-with-lease", "Node"),
        ("Stage", "pod-ready", "Pod"),
        ("Stage", "pod-complete", "Pod"),
        ("Stage", "pod-delete", "Pod"),
    ]
    assert set(APISERVER_BINARIES) < set(ACTING_BINARIES)


def test_build_sh_refuses_an_unknown_binary_before_building(tmp_path: Path) -> None:
    res = run(["bash", str(HACK_DIR / "build.sh"), "kube-proxy"], tmp_path)
    assert res.returncode == 1
    assert res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        "control-plane build: ERROR: unknown argument: kube-proxy "
        "(binaries: etcd kube-apiserver kube-controller-manager kube-scheduler kwok)"
    ]
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["up", "--nodes", "0"], 1, "kwok-cluster: error: --nodes must be a positive whole number, not '0'"),
        (["up", "--nodes", "three"], 1, "kwok-cluster: error: --nodes must be a positive whole number, not 'three'"),
        (["up", "--wat"], 1, "kwok-cluster: error: up: unknown argument: --wat"),
        (["kubeconfig"], 1, "kwok-cluster: error: not running ('hack/kwok-cluster.sh up' starts it)"),
        (["down", "now"], 1, "kwok-cluster: error: down takes no arguments"),
    ],
)
def test_kwok_cluster_refuses_bad_arguments(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    res = run(["bash", str(KWOK_CLUSTER), *args], tmp_path)
    assert (res.returncode, res.stdout, res.stderr.strip()) == (code, "", message)
    assert not (tmp_path / "cache").exists()  # nothing was built


def test_kwok_cluster_status_and_down_when_not_running(tmp_path: Path) -> None:
    status = run(["bash", str(KWOK_CLUSTER), "status"], tmp_path)
    assert (status.returncode, status.stdout) == (1, "kwok-cluster: not running\n")
    down = run(["bash", str(KWOK_CLUSTER), "down"], tmp_path)
    assert (down.returncode, down.stderr) == (0, "kwok-cluster: not running\n")
    usage = run(["bash", str(KWOK_CLUSTER), "sideways"], tmp_path)
    assert usage.returncode == 2 and "hack/kwok-cluster.sh up [--nodes N]" in usage.stderr


def test_control_plane_arguments_are_checked_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="at least one Node"):
        ControlPlane(acting=True, nodes=0)
    with pytest.raises(ValueError, match="unknown component 'kubelet'"):
        ControlPlane(acting=True).kill_component("kubelet")
    with pytest.raises(RuntimeError, match="only an acting control plane"):
        ControlPlane().start_component("kwok")
