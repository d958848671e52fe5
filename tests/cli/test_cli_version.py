"""`cvo version`: cvo's version, and the cluster's when there is one (as `oc version`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cvo import __version__
from tests.support.helpers import PAYLOADS


def cvo(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cvo", *args], capture_output=True, text=True, timeout=120,
                          check=False, cwd=cwd)


def test_client_only_and_no_cluster_yet(tmp_path: Path) -> None:
    done = cvo("version", "--client", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, f"Client Version: {__version__}\n")
    state = tmp_path / "s.db"
    done = cvo("version", "--state", str(state), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"Client Version: {__version__}",
                                        "Server Version: none (no cluster has been installed yet)"]
    assert not state.exists()  # reading the version creates no cluster


def test_the_installed_release_and_which_cluster(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    assert cvo("install", str(PAYLOADS / "demo-4.16.0"), "--state", str(state), cwd=tmp_path).returncode == 0
    done = cvo("version", "--state", str(state), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"Client Version: {__version__}",
                                        f"Cluster: embedded simulated cluster (state: {state})",
                                        "Server Version: 4.16.0"]


def test_kubeconfig_alone_is_ignored_with_a_one_line_hint(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "KUBECONFIG": str(tmp_path / "kubeconfig")}
    done = subprocess.run([sys.executable, "-m", "cvo", "version", "--state", str(tmp_path / "s.db")],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0
    assert done.stderr == ("hint: KUBECONFIG is set but cvo uses the embedded cluster unless --kubeconfig or "
                           "--context is given\n")
    assert "Server Version: none" in done.stdout
