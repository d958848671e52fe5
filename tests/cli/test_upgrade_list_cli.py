"""``cvo upgrade`` without a target, ``--to VERSION``, ``--to-latest`` and ``--allow-not-recommended`` on the
embedded cluster, whose ClusterVersion status names its updates as the CVO would have written them (the
update service's client is another module's): directories (``file://DIR``, cvo's own releases) and images
built by ``cvo release new`` into an OCI layout; and on saved objects (``--from-file``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from cvo.cli.main import main
from cvo.log import configure
from tests.support.cluster_version import write_cluster_version
from tests.support.helpers import PAYLOADS, state_kind


def url(version: str) -> str:
    return f"file://{PAYLOADS / f'demo-{version}'}"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def set_graph(state: str, spec: dict[str, Any], status: dict[str, Any], retrieved: tuple[str, str, str]) -> None:
    """The ClusterVersion as a controller that fetched the graph would have written it."""
    desired = {**state_kind(Path(state), "ClusterVersion")[0]["status"]["desired"],
               "channels": ["fast-4.16", "stable-4.16"]}
    write_cluster_version(state, spec, {**status, "desired": desired}, retrieved)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("graph") / "cluster.db"
    try:
        assert main(["install", str(PAYLOADS / "demo-4.16.0"), "--state", str(state)]) == 0
    finally:
        configure("text", 0)
    return state


def graph_file(path: Path, images: dict[str, str], *, with_current: bool = True) -> str:
    """The update service's answer for channel stable-4.16, as a file (a ``file://`` upstream, cvo's extension):
    4.16.0 -> 4.16.3, and 4.16.0 or 4.16.3 -> 4.17.0 under the EtcdMigration risk (Always). Without ``with_current`` the
    graph does not hold 4.16.0 (VersionNotFound)."""
    from cvo.updates.graph import ConditionalEdges, Graph, Node
    from cvo.updates.model import MatchingRule, Risk

    versions = (["4.16.0"] if with_current else []) + ["4.16.3", "4.17.0"]
    nodes = tuple(Node(v, images.get(v, url(v))) for v in versions)
    edges = ((0, 1),) if with_current else ()
    risk = Risk("EtcdMigration", "etcd may lose its leader during the migration.", "https://example.com/etcd",
                (MatchingRule("Always"),))
    conditional = ConditionalEdges((("4.16.0", "4.17.0"), ("4.16.3", "4.17.0")), (risk,))
    path.write_bytes(Graph(nodes, edges, (conditional,)).dumps())
    return path.as_uri()


@pytest.fixture
def state(installed: Path, tmp_path: Path) -> str:
    """A cluster on 4.16.0 in channel stable-4.16 whose graph offers 4.16.3 and, not recommended, 4.17.0: the
    graph is a file the commands retrieve as the controller would (no controller runs)."""
    path = tmp_path / "cluster.db"
    shutil.copy(installed, path)
    upstream = graph_file(tmp_path / "graph.json", {v: url(v) for v in ("4.16.3", "4.17.0")})
    set_graph(str(path), {"channel": "stable-4.16", "upstream": upstream}, {}, None)
    return str(path)


def upstream_of(state: str) -> str:
    return str(state_kind(Path(state), "ClusterVersion")[0]["spec"]["upstream"])


def history(state: str) -> list[tuple[str, str]]:
    cv = state_kind(Path(state), "ClusterVersion")[0]
    return [(h["version"], h["state"]) for h in cv["status"]["history"]]


def test_the_listing(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "upgrade", "--state", state)
    assert code == 0, err
    assert out == ("Cluster version is 4.16.0\n\n"
                   f"Upstream: {upstream_of(state)}\n"
                   "Channel: stable-4.16 (available channels: fast-4.16, stable-4.16)\n\n"
                   "Recommended updates:\n\n"
                   "  VERSION     IMAGE\n"
                   f"  4.16.3      {url('4.16.3')}\n\n"
                   "Additional updates which are not recommended for your cluster configuration are available, to "
                   "view those re-run the command with --include-not-recommended.\n")
    assert "warning" not in err
    code, out, _ = cli(capsys, "upgrade", "--state", state, "--include-not-recommended")
    assert out.endswith("\nUpdates with known issues:\n\n  Version: 4.17.0\n"
                        f"  Image: {url('4.17.0')}\n  Reason: EtcdMigration\n"
                        "  Message: etcd may lose its leader during the migration. https://example.com/etcd\n")
    code, out, _ = cli(capsys, "upgrade", "--state", state, "-o", "json", "--include-not-recommended")
    doc = json.loads(out)
    assert doc["recommendedUpdates"] == [{"version": "4.16.3", "image": url("4.16.3")}]
    assert doc["notRecommendedUpdates"][0]["risks"] == ["EtcdMigration"]
    assert yaml.safe_load(cli(capsys, "upgrade", "--state", state, "-o", "yaml")[1])["channel"] == "stable-4.16"


def test_listing_without_a_cluster_and_flags_that_need_a_target(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "upgrade", "--state", str(tmp_path / "none.db"))
    assert code == 1 and err.startswith("error: no cluster has been installed yet")
    code, _, err = cli(capsys, "upgrade", "--state", str(tmp_path / "none.db"), "--allow-not-recommended")
    assert code == 2 and err == ("error: --allow-not-recommended needs a target: --to VERSION|RELEASE, --to-image "
                                 "IMAGE or --to-latest (without one, 'cvo upgrade' lists the updates)\n")


def test_to_a_version_of_the_graph(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to", "4.16.9")
    assert code == 2
    assert err == ("error: the update is not one of the possible targets: 4.16.3. specify --to-image to continue "
                   "with the update.\n")
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to", "4.16.0")
    assert (code, out) == (0, "info: Cluster is already at version 4.16.0\n")
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to", "4.16.3", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["completed"] is True
    assert history(state)[0] == ("4.16.3", "Completed")
    desired = state_kind(Path(state), "ClusterVersion")[0]["spec"]["desiredUpdate"]
    assert (desired["version"], desired["image"]) == ("4.16.3", url("4.16.3"))


def test_to_neither_version_nor_release(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "upgrade", "--state", state, "--to", "4.16")
    assert (code, err) == (2, "error: --to must be a semantic version (e.g. 4.0.1 or 4.1.0-nightly-20181104): No "
                              "Major.Minor.Patch elements found; nor is '4.16' a release directory or image\n")
    code, _, err = cli(capsys, "upgrade", "--state", state, "--to", "./4.16")
    assert code == 2 and err.startswith("error: ") and "semantic version" not in err  # a path: the loader's error


def test_a_not_recommended_update_needs_allow_not_recommended(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to", "4.17.0")
    assert code == 2
    assert err == ("error: the update 4.17.0 is not one of the recommended updates, but is available as a conditional "
                   "update. To accept the Recommended=False risk and to proceed with update use "
                   "--allow-not-recommended.\n  Reason: EtcdMigration\n  Message: etcd may lose its leader during the "
                   "migration. https://example.com/etcd\n")
    assert history(state) == [("4.16.0", "Completed")]
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to", "4.17.0", "--allow-not-recommended",
                         "--dry-run", "-o", "json")
    assert ("warning: with --allow-not-recommended you have accepted the risks with 4.17.0 and bypassed "
            "Recommended=False EtcdMigration: etcd may lose its leader during the migration. "
            "https://example.com/etcd\n") in err
    assert json.loads(out)["target"] == "4.17.0"  # the gates of 4.17.0 were checked
    assert history(state) == [("4.16.0", "Completed")]  # a dry run


def test_to_latest(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to-latest", "--dry-run", "-o", "json")
    assert json.loads(out)["target"] == "4.16.3", err
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to-latest", "--allow-not-recommended", "--dry-run",
                         "-o", "json")
    assert code == 0 and json.loads(out)["target"] == "4.17.0", err
    assert "warning: with --allow-not-recommended you have accepted the risks with 4.17.0" in err


def test_a_failed_retrieval_refuses_a_version(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = graph_file(Path(state).parent / "other.json", {}, with_current=False)
    set_graph(state, {"channel": "stable-4.99", "upstream": elsewhere}, {}, None)
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to", "4.16.3")
    assert code == 2
    assert err == ("error: cannot refresh available updates:\n  Reason: VersionNotFound\n  Message: Unable to "
                   "retrieve available updates: currently reconciling cluster version 4.16.0 not found in the "
                   "\"stable-4.99\" channel\n\nspecify --to-image to continue with the update.\n")
    code, out, err = cli(capsys, "upgrade", "--state", state)
    assert code == 0 and err.startswith("warning: Cannot display available updates:\n  Reason: VersionNotFound\n")
    # a release directory is still cvo's own explicit target, outside the graph
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to", str(PAYLOADS / "demo-4.16.3"), "--dry-run")
    assert code == 0 and "Verdict: would proceed with warnings" in out, err  # the target is not in the graph


def test_saved_objects(state: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = cli(capsys, "upgrade", "--state", state)[1]  # the graph retrieved and written, as a controller would
    saved = tmp_path / "cv.yaml"
    saved.write_text(yaml.safe_dump(state_kind(Path(state), "ClusterVersion")[0]))
    assert "Recommended updates:" in live
    code, out, err = cli(capsys, "upgrade", "--from-file", str(saved))
    assert code == 0 and out == cli(capsys, "upgrade", "--state", state)[1]
    code, out, err = cli(capsys, "upgrade", "--from-file", str(saved), "--to", "4.16.3", "--dry-run", "-o", "json")
    assert code == 0 and json.loads(out)["target"] == "4.16.3", err
    code, out, err = cli(capsys, "upgrade", "--from-file", str(saved), "--to", "4.16.3")
    assert code == 2 and "saved objects are read-only" in err


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The demo's 4.16.3 and 4.17.0 as images in an OCI layout (``cvo release new``): their pull specs."""
    root = tmp_path_factory.mktemp("images")
    found = {"cache": str(root / "cache")}
    mp = pytest.MonkeyPatch()
    mp.setenv("CVO_CACHE_DIR", found["cache"])
    try:
        for version in ("4.16.3", "4.17.0"):
            import contextlib
            import io

            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert main(["release", "new", "--from-dir", str(PAYLOADS / f"demo-{version}"), "--to",
                             f"oci:{root / 'layout'}:{version}", "-o", "json"]) == 0
            found[version] = json.loads(out.getvalue())["pullSpec"]
    finally:
        mp.undo()
        configure("text", 0)
    return found


def test_a_version_whose_update_is_an_image(installed: Path, images: dict[str, str], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    state = str(tmp_path / "cluster.db")
    shutil.copy(installed, state)
    upstream = graph_file(tmp_path / "graph.json", {v: images[v] for v in ("4.16.3", "4.17.0")})
    set_graph(state, {"channel": "stable-4.16", "upstream": upstream}, {}, None)
    monkeypatch.setenv("CVO_CACHE_DIR", images["cache"])
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to", "4.16.3", "-o", "json")
    assert code == 0, err
    head = json.loads(out)["clusterVersion"]["status"]["history"][0]
    assert (head["version"], head["image"], head["state"]) == ("4.16.3", images["4.16.3"], "Completed")
    # --to-image of a conditional update's image: not recommended, so refused without --allow-not-recommended
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to-image", images["4.17.0"], "--dry-run")
    assert code == 2 and "To accept the Recommended=False risk" in err
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to-image", images["4.17.0"], "--dry-run",
                         "--allow-not-recommended", "-o", "json")
    assert json.loads(out)["target"] == "4.17.0", err


def test_clear(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``oc adm upgrade --clear``: a requested update withdrawn, or the field cleared once the cluster is there."""
    code, out, err = cli(capsys, "upgrade", "--state", state, "--clear")
    assert (code, out) == (0, "info: No update in progress\n"), err
    code, out, err = cli(capsys, "upgrade", "--state", state, "--to", "4.16.3", "--no-wait")
    assert code == 0, err
    code, out, err = cli(capsys, "upgrade", "--state", state, "--clear")
    assert (code, out) == (0, "Cancelled requested upgrade to 4.16.3\n"), err
    assert "desiredUpdate" not in state_kind(Path(state), "ClusterVersion")[0]["spec"]
    assert cli(capsys, "upgrade", "--state", state, "--to", "4.16.3")[0] == 0
    code, out, err = cli(capsys, "upgrade", "--state", state, "--clear")
    assert (code, out) == (0, "Cleared the update field, still at 4.16.3\n"), err
    code, out, err = cli(capsys, "upgrade", "--state", state, "--clear", "--to", "4.16.3")
    assert (code, err) == (2, "error: --clear may not be specified with any other flags\n")


def test_the_listing_loads_no_runner(state: str) -> None:
    """``cvo upgrade`` listing the updates is as light as ``cvo status``: the sweep's runner is never imported, nor
    the target resolution, nor urllib3 for a ``file://`` upstream (bench/graph_bench.py's listing row)."""
    import subprocess
    import sys

    from tests.support.helpers import REPO

    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "cvo", "upgrade", "--state", state], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "cvo.status.upgrade_list" in imported
    assert "cvo.runner.available_updates" in imported  # it retrieved the graph
    assert not {"cvo.runner.decide", "cvo.runner.worker", "cvo.runner.sweep", "networkx", "urllib3",
                "cvo.status.upgrade_target"} & imported


def test_a_controller_leading_the_embedded_cluster_is_seen(state: str) -> None:
    """The graph is refreshed only when no controller does it: a live ``cvo run``'s record in the sweep lock."""
    import os

    import orjson

    from cvo.cli.backend import ClusterOptions
    from cvo.cli.upgrade_list_cmd import _controller_leads_embedded
    from cvo.cluster.embedded.sweep_lock import lock_path

    options = ClusterOptions(state=Path(state))
    lock = lock_path(Path(state))
    assert not _controller_leads_embedded(options)
    lock.write_bytes(orjson.dumps({"pid": os.getpid(), "what": "cvo run (controller c1)"}))
    assert _controller_leads_embedded(options)
    lock.write_bytes(orjson.dumps({"pid": os.getpid(), "what": "upgrade to 4.16.3"}))
    assert not _controller_leads_embedded(options)  # a sweep, not a controller
    lock.write_bytes(orjson.dumps({"pid": 2**22 + 12345, "what": "cvo run (controller c1)"}))
    assert not _controller_leads_embedded(options)  # no such process: a record left behind
    lock.write_bytes(b"{not json")
    assert not _controller_leads_embedded(options)
