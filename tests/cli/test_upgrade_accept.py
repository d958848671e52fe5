"""``cvo upgrade accept``: oc's accept.go (its Test_getAcceptRisks cases, its usage errors) on the embedded
cluster, and the warning when the cluster's FeatureGate has the gate off."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from cvo.cli.common import UsageError
from cvo.cli.main import main
from cvo.cli.upgrade_accept_cmd import _gate_off_warning, accept_risks, parse_risks
from cvo.cluster.api import Ref
from cvo.log import configure
from tests.support.helpers import PAYLOADS, state_kind


@pytest.mark.parametrize(("existing", "replace", "clear", "plus", "minus", "expected"), [
    ([], False, False, set(), set(), []),
    (["riskA", "riskB"], False, False, {"riskB", "riskC"}, {"riskA", "riskD"}, ["riskB", "riskC"]),
    (["riskA", "riskB"], True, False, {"riskB", "riskC"}, {"does not matter"}, ["riskB", "riskC"]),
    (["riskA", "riskB"], False, True, {"not important"}, {"does not matter"}, []),
], ids=["all zeros", "riskA, riskB + riskB + riskC - riskA - riskD", "replace", "clear"])
def test_get_accept_risks(existing: list[str], replace: bool, clear: bool, plus: set[str], minus: set[str],
                          expected: list[str]) -> None:
    assert accept_risks(existing, replace, clear, frozenset(plus), frozenset(minus)) == expected


@pytest.mark.parametrize(("args", "replace", "clear", "error"), [
    ([], True, True, "--clear and --replace are mutually exclusive"),
    ([], False, False, "no positional arguments given"),
    (["A", "B"], False, False, "multiple positional arguments given"),
    (["A,,B"], False, False, 'illegal risk ""'),
    (["A, - "], False, False, 'illegal risk "-"'),
    (["A,A-"], False, False, "requested risks with both Risk and Risk-: A"),
    (["A,B-"], True, False, "The suffix '-' on risks is not allowed if --replace is specified"),
])
def test_usage_errors(args: list[str], replace: bool, clear: bool, error: str) -> None:
    with pytest.raises(UsageError, match="^" + __import__("re").escape(error) + "$"):
        parse_risks(args, replace, clear)


def test_parse_risks_trims() -> None:
    assert parse_risks([" A , B- ,C"], False, False) == (frozenset({"A", "C"}), frozenset({"B"}))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("accept") / "cluster.json"
    try:
        assert main(["install", str(PAYLOADS / "demo-4.16.0"), "--state", str(state)]) == 0
    finally:
        configure("text", 0)
    return state


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def desired(state: Path) -> Any:
    (cv,) = state_kind(state, "ClusterVersion")
    return cv["spec"].get("desiredUpdate")


def test_accept_add_remove_replace_clear(installed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "cluster.json"
    shutil.copy(installed, state)
    before = desired(state)
    code, out, _ = cli(capsys, "upgrade", "accept", "RiskB,RiskA", "--state", str(state))
    assert (code, out) == (0, "info: Accept risks are [RiskA, RiskB]\n")
    assert desired(state)["acceptRisks"] == [{"name": "RiskA"}, {"name": "RiskB"}]
    assert {k: v for k, v in desired(state).items() if k != "acceptRisks"} == {
        k: v for k, v in (before or {}).items()}
    code, out, _ = cli(capsys, "upgrade", "accept", "RiskC,RiskA-", "--state", str(state))
    assert out == "info: Accept risks are [RiskB, RiskC]\n"
    code, out, _ = cli(capsys, "upgrade", "accept", "RiskC", "--state", str(state))
    assert out == "info: Accept risks are not changed\n"
    code, out, _ = cli(capsys, "upgrade", "accept", "--replace", "RiskZ", "--state", str(state))
    assert out == "info: Accept risks are [RiskZ]\n"
    code, out, _ = cli(capsys, "upgrade", "accept", "--clear", "--state", str(state))
    assert out == "info: Accept risks are []\n"
    assert "acceptRisks" not in (desired(state) or {})
    assert desired(state) == before


def test_bad_arguments_are_one_error_line(installed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "upgrade", "accept", "--clear", "--replace", "--state", str(installed))
    assert code == 2 and out == "" and err.strip() == "error: --clear and --replace are mutually exclusive"


def test_no_cluster_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "upgrade", "accept", "A", "--state", str(tmp_path / "none.json"))
    assert code != 0 and err.count("error:") == 1 and "Traceback" not in err


class FakeCluster:
    def __init__(self, gate: dict[str, Any] | None) -> None:
        self.gate = gate

    async def serves(self, api_version: str, kind: str) -> bool:
        return self.gate is not None

    async def get(self, ref: Ref) -> dict[str, Any] | None:
        return self.gate


@pytest.mark.parametrize(("gate", "warned"), [
    (None, False),
    ({"spec": {"featureSet": "TechPreviewNoUpgrade"}}, False),
    ({"spec": {}}, True),
    ({"spec": {"featureSet": "TechPreviewNoUpgrade"},
      "status": {"featureGates": [{"version": "4.16.0", "disabled": [{"name": "ClusterUpdateAcceptRisks"}]}]}}, True),
])
def test_the_warning_follows_the_clusters_feature_gate(gate: dict[str, Any] | None, warned: bool) -> None:
    cv = {"status": {"history": [{"state": "Completed", "version": "4.16.0"}]}}
    got = asyncio.run(_gate_off_warning(FakeCluster(gate), cv))  # type: ignore[arg-type]
    assert bool(got) is warned
