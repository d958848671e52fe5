"""Choosing the real backend on the command line, and reading kubeconfigs (no control plane needed)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from cvo.cli.backend import ClusterOptions, backend_clock, state_path
from cvo.cli.main import main as cvo_main
from cvo.clock import run_real
from cvo.cluster.kube import KubeconfigError, load_kubeconfig


def kubeconfig(path: Path, contexts: dict[str, str], current: str | None = None) -> Path:
    """A kubeconfig with one cluster per context (context name -> server URL) and a token user."""
    doc = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": f"c-{n}", "cluster": {"server": url, "insecure-skip-tls-verify": True}}
                     for n, url in contexts.items()],
        "users": [{"name": "u", "user": {"token": "t0ken"}}],
        "contexts": [{"name": n, "context": {"cluster": f"c-{n}", "user": "u"}} for n in contexts],
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


def test_kubeconfig_defaults_follow_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = kubeconfig(tmp_path / "a", {"one": "https://one.example:6443"}, current="one")
    second = kubeconfig(tmp_path / "b", {"two": "https://two.example:6443"})
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    assert load_kubeconfig().server == "https://one.example:6443"  # the merged files' current-context
    loaded = load_kubeconfig(context="two")
    assert (loaded.server, loaded.context) == ("https://two.example:6443", "two")
    assert loaded.configuration.api_key["BearerToken"] == "Bearer t0ken"
    assert load_kubeconfig(second, "two").path == str(second)


def test_kubeconfig_errors_say_what_is_wrong(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(KubeconfigError, match="does not exist"):
        load_kubeconfig(tmp_path / "missing")
    no_current = kubeconfig(tmp_path / "k", {"one": "https://one.example"})
    with pytest.raises(KubeconfigError, match="no current-context; pass --context"):
        load_kubeconfig(no_current)
    with pytest.raises(KubeconfigError, match="has no context 'three' \\(it has: one\\)"):
        load_kubeconfig(no_current, "three")
    (tmp_path / "bad").write_text("- not\n- a kubeconfig\n")
    with pytest.raises(KubeconfigError):
        load_kubeconfig(tmp_path / "bad")


def test_the_real_backend_is_chosen_by_flags_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "whatever"))
    plain = ClusterOptions.from_args(argparse.Namespace(kubeconfig=None, context=None, state=None, speed=None))
    assert not plain.real  # $KUBECONFIG alone never switches away from the embedded cluster
    assert state_path(plain) is not None
    real = ClusterOptions.from_args(argparse.Namespace(kubeconfig=None, context="lab", state=None, speed=None))
    assert real.real and state_path(real) is None
    clock, runner = backend_clock(real)
    assert runner is run_real and clock.epoch is not None


@pytest.mark.parametrize(("command", "extra", "message"), [
    ("status", ["--state", "x.json"], "--state is the embedded cluster's state file"),
    ("reconcile", ["--speed", "60"], "--speed sets the embedded cluster's virtual clock"),  # status offers no --speed
])
def test_simulator_flags_are_refused_with_a_real_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         command: str, extra: list[str], message: str) -> None:
    config = kubeconfig(tmp_path / "k", {"one": "https://127.0.0.1:9"}, current="one")
    assert cvo_main([command, "--kubeconfig", str(config), *extra]) == 2
    assert message in capsys.readouterr().err


def test_an_unreachable_cluster_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not bad input (exit 2): the cluster may come back, so cvo retries until --timeout, then exit 1."""
    config = kubeconfig(tmp_path / "k", {"one": "https://127.0.0.1:9"}, current="one")
    release = Path(__file__).resolve().parents[2] / "payloads" / "demo-4.16.0"
    assert cvo_main(["install", str(release), "--timeout", "2s", "--kubeconfig", str(config)]) == 1
    err = capsys.readouterr().err
    assert "error: the cluster kept failing (Timeout): connecting to Kubernetes API server https://127.0.0.1:9 " \
           "(context one" in err
    assert "still failing after 2s of retries" in err
    assert "unreachable (connection refused)" in err and "t0ken" not in err
