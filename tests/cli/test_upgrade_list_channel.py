"""``cvo upgrade channel``: oc's ``channel.go`` messages, warnings and refusals word for word, on the embedded
cluster, whose ``status.desired.channels`` come from the release's metadata as the CVO writes them
(demo-4.16.0 lists candidate-4.16, fast-4.16, stable-4.16); ``--upstream`` (cvo's)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.cli.errors import Refused, UsageError
from cvo.cli.main import main
from cvo.cli.upgrade_channel_cmd import check_upstream, decide
from cvo.log import configure
from cvo.objects import ClusterVersion
from cvo.payload.gostrings import go_quote
from tests.support.cluster_version import write_cluster_version
from tests.support.helpers import PAYLOADS, state_kind


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def without_cluster_line(err: str) -> str:
    return "".join(line for line in err.splitlines(keepends=True) if not line.startswith("cluster: "))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("channel") / "cluster.db"
    try:
        assert main(["install", str(PAYLOADS / "demo-4.16.0"), "--state", str(state)]) == 0
    finally:
        configure("text", 0)
    return state


@pytest.fixture
def state(installed: Path, tmp_path: Path) -> str:
    path = tmp_path / "cluster.db"
    shutil.copy(installed, path)
    return str(path)


def spec(state: str) -> dict[str, Any]:
    return state_kind(Path(state), "ClusterVersion")[0]["spec"]


def test_the_release_lists_its_channels(state: str) -> None:
    desired = state_kind(Path(state), "ClusterVersion")[0]["status"]["desired"]
    assert desired["channels"] == ["candidate-4.16", "fast-4.16", "stable-4.16"]  # sorted, as ParseMetadata


def test_set_a_listed_channel_then_again(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "upgrade", "channel", "stable-4.16", "--state", state)
    assert (code, out, without_cluster_line(err)) == (0, "", "")
    assert err.startswith("cluster: embedded, state ")
    assert spec(state)["channel"] == "stable-4.16"
    code, out, err = cli(capsys, "upgrade", "channel", "stable-4.16", "--state", state)
    assert (code, out) == (0, "info: Cluster is already in stable-4.16 (no change)\n")


def test_a_channel_not_listed_needs_allow_explicit_channel(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "upgrade", "channel", "stable-4.17", "--state", state)
    assert code == 2
    assert without_cluster_line(err) == (
        'error: the requested channel "stable-4.17" is not one of the available channels (candidate-4.16, '
        "fast-4.16, stable-4.16), you must pass --allow-explicit-channel to continue\n")
    assert "channel" not in spec(state)
    code, out, err = cli(capsys, "upgrade", "channel", "stable-4.17", "--allow-explicit-channel", "--state", state)
    assert (code, out) == (0, "")
    assert without_cluster_line(err) == (
        'warning: The requested channel "stable-4.17" is not one of the available channels (candidate-4.16, '
        'fast-4.16, stable-4.16). You have used --allow-explicit-channel to proceed anyway. Setting the update '
        'channel to "stable-4.17".\n')
    assert spec(state)["channel"] == "stable-4.17"


def test_clearing(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "upgrade", "channel", "--state", state)
    assert (code, out) == (0, "info: Cluster channel is already clear (no change)\n")
    assert cli(capsys, "upgrade", "channel", "fast-4.16", "--state", state)[0] == 0
    code, out, err = cli(capsys, "upgrade", "channel", "--state", state)
    assert code == 2
    assert without_cluster_line(err) == (
        'error: You are requesting to clear the update channel. The current channel "fast-4.16" is one of the '
        "available channels, you must pass --allow-explicit-channel to continue\n")
    code, out, err = cli(capsys, "upgrade", "channel", "--allow-explicit-channel", "--state", state)
    assert code == 0
    assert without_cluster_line(err) == ('warning: Clearing channel "fast-4.16"; cluster will no longer request '
                                         "available update recommendations.\n")
    assert "channel" not in spec(state)


def test_no_channels_known(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    desired = state_kind(Path(state), "ClusterVersion")[0]["status"]["desired"]
    write_cluster_version(state, {}, {"desired": {"version": desired["version"], "image": desired["image"]}})
    code, out, err = cli(capsys, "upgrade", "channel", "anything", "--state", state)
    assert (code, out) == (0, "")
    assert without_cluster_line(err) == (
        'warning: No channels known to be compatible with the current version "4.16.0"; unable to validate '
        '"anything". Setting the update channel to "anything" anyway.\n')
    assert spec(state)["channel"] == "anything"


def test_upstream(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    graph = "http://127.0.0.1:8080/api/upgrades_info/v1/graph"
    assert cli(capsys, "upgrade", "channel", "stable-4.16", "--upstream", graph, "--state", state)[0] == 0
    assert (spec(state)["channel"], spec(state)["upstream"]) == ("stable-4.16", graph)
    code, out, _ = cli(capsys, "upgrade", "channel", "stable-4.16", "--upstream", "file:///srv/graph.json",
                       "--state", state)
    assert (code, out) == (0, "info: Cluster is already in stable-4.16 (no change)\n")
    assert spec(state)["upstream"] == "file:///srv/graph.json"  # the upstream changed all the same
    assert cli(capsys, "upgrade", "channel", "stable-4.16", "--upstream", "", "--state", state)[0] == 0
    assert "upstream" not in spec(state)
    for bad in ("not a url", "ftp://x/graph", "https://", "file://"):
        code, _, err = cli(capsys, "upgrade", "channel", "stable-4.16", "--upstream", bad, "--state", state)
        assert code == 2 and err.startswith(f"error: --upstream: {bad!r} is not "), err
        assert len(err.splitlines()) == 1


def test_without_a_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "upgrade", "channel", "stable-4.16", "--state", str(tmp_path / "none.db"))
    assert code == 1 and "no cluster has been installed yet" in err
    with pytest.raises(SystemExit) as exited:  # argparse's exit
        main(["upgrade", "channel", "a", "b", "--state", str(tmp_path / "none.db")])
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("error: cvo upgrade channel: unrecognized arguments: b (see 'cvo upgrade "
                                       "channel --help')\n")


# Any channel, any list of channels, any upstream: oc's decision or one refusal, never a crash.
@settings(max_examples=300, deadline=None)
@given(current=st.text(max_size=8), wanted=st.text(max_size=8), channels=st.lists(st.text(max_size=8), max_size=4),
       allow=st.booleans())
def test_decide_on_any_channels(current: str, wanted: str, channels: list[str], allow: bool) -> None:
    cv = ClusterVersion.read({"metadata": {"name": "version"}, "spec": {"channel": current},
                              "status": {"desired": {"version": "4.16.0", "image": "x", "channels": channels}}})
    try:
        what, lines = decide(cv, wanted, allow)
    except Refused as err:
        assert not allow and str(err).endswith("you must pass --allow-explicit-channel to continue")
        return
    assert what == ("info" if wanted == current else "set")
    assert all(line.startswith(("info: ", "warning: ")) for line in lines)
    if what == "set" and wanted and channels and wanted not in channels:
        assert allow and lines[0].startswith(f"warning: The requested channel {go_quote(wanted)} is not one")


@settings(max_examples=300, deadline=None)
@given(upstream=st.one_of(st.text(max_size=30), st.from_regex(r"(https?|file|ftp)://[a-z.:/ ]{0,20}", fullmatch=True)))
def test_check_upstream_on_any_text(upstream: str) -> None:
    try:
        check_upstream(upstream)
    except UsageError as err:
        assert str(err).startswith("--upstream: ") and "\n" not in str(err).replace(upstream, "")
    else:
        assert upstream == "" or upstream.lower().startswith(("http://", "https://", "file:/"))
