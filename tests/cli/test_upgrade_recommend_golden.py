"""Golden files: `cvo upgrade recommend` on oc's own examples (tests/golden/recommend, see its README), byte for byte.

oc's ``examples_test.go`` runs every ``examples/*-cv.yaml`` three ways (normal, ``--show-outdated-releases``,
``--version V``) and compares standard output, plus ``"\\nerror: " + err + "\\n"`` when ``Run`` fails, with
a file.  Here the same runs go through cvo's command line: standard output, standard error and the exit code.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from cvo.cli.main import main
from cvo.objects import ClusterVersion
from cvo.objects.clusterversion import ConditionalUpdate, Release
from cvo.status.recommend import (
    alert_conditions,
    complete,
    no_test_data,
    recommend,
    sort_by_semantic_versions,
)
from cvo.status.recommend_alerts import parse_alerts

HERE = Path(__file__).resolve().parents[1] / "golden" / "recommend"
NAMES = sorted(p.name.removesuffix("-cv.yaml") for p in (HERE / "examples").glob("*-cv.yaml"))
# examples_test.go's "specific version" variant
VERSIONS = {"4.12.16-longest-not-recommended": "4.12.51", "4.12.16-longest-recommended": "4.12.51",
            "4.14.1-all-recommended": "4.12.51", "4.16.27-degraded-monitoring": "4.16.32",
            "4.19.0-okd-scos.16": "4.19.0-okd-scos.17"}
VARIANTS = [(name, flags, suffix) for name in NAMES for flags, suffix in (
    ([], ".output"), (["--show-outdated-releases"], ".show-outdated-releases-output"),
    (["--version", VERSIONS[name]], f".version-{VERSIONS[name]}-output"))]


def expected(name: str, suffix: str) -> tuple[str, str, int]:
    """oc's file as (standard output, standard error, exit code): its last ``\\nerror: …`` line is the error."""
    text = (HERE / "examples" / f"{name}{suffix}").read_text()
    out, sep, error = text.rpartition("\nerror: ")
    if sep and error.endswith("\n") and "\n" not in error[:-1]:
        return out, f"error: {error}", 1
    return text, "", 0


def test_every_example_and_variant_is_here() -> None:
    assert sorted(VERSIONS) == NAMES
    assert all((HERE / "examples" / f"{name}{suffix}").is_file() for name, _, suffix in VARIANTS)
    assert sum(expected(name, suffix)[2] for name, _, suffix in VARIANTS) == 4  # oc's four failing --version runs


@pytest.mark.parametrize(("name", "flags", "suffix"), VARIANTS)
def test_ocs_examples_through_ocs_mock_flag(name: str, flags: list[str], suffix: str,
                                           capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HERE)  # oc's NoTestData message names the alerts path as derived from the flag's
    code = main(["upgrade", "recommend", "--mock-clusterversion", f"examples/{name}-cv.yaml", *flags])
    out, err, exit_code = expected(name, suffix)
    captured = capsys.readouterr()
    assert (captured.out, captured.err, code) == (out, err, exit_code)


NO_TEST_DATA = ("recommended/Alert=Unknown:\n\n  Reason: NoTestData\n  Message: This --mock-clusterversion run did "
                "not have alert data available at examples/{name}-alerts.json\n\n")
NO_ALERT_DATA = ("recommended/Alert=Unknown:\n\n  Reason: NoAlertData\n  Message: No alert data: saved objects "
                 "(--from-file) hold no alerts; give --alerts-file with a saved answer of Prometheus' /api/v1/alerts"
                 "\n\n")


@pytest.mark.parametrize(("name", "flags", "suffix"), VARIANTS)
def test_ocs_examples_through_from_file_and_alerts_file(name: str, flags: list[str], suffix: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """cvo's own flags, from any directory: oc's text where the example has alerts; without, cvo's NoAlertData
    paragraph (and --accept name) where oc's NoTestData one is."""
    alerts = HERE / "examples" / f"{name}-alerts.json"
    code = main(["upgrade", "recommend", "--from-file", str(HERE / "examples" / f"{name}-cv.yaml"),
                 *(["--alerts-file", str(alerts)] if alerts.exists() else []), *flags])
    out, err, exit_code = expected(name, suffix)
    if not alerts.exists():
        assert NO_TEST_DATA.format(name=name) in out
        out = out.replace(NO_TEST_DATA.format(name=name), NO_ALERT_DATA)
        err = err.replace("AlertNoTestData", "AlertNoData")
    captured = capsys.readouterr()
    assert (captured.out, captured.err, code) == (out, err, exit_code)


def load(name: str) -> ClusterVersion:
    doc = yaml.safe_load((HERE / "examples" / f"{name}-cv.yaml").read_text())
    return ClusterVersion.read(doc["items"][0] if doc.get("kind") == "List" else doc)


@pytest.mark.parametrize(("name", "flags", "suffix"), VARIANTS)
def test_ocs_examples_in_process(name: str, flags: list[str], suffix: str) -> None:
    """The pure text (cvo.status.recommend) without the command line: what examples_test.go compares."""
    alerts = HERE / "examples" / f"{name}-alerts.json"
    conditions = (alert_conditions(parse_alerts(alerts.read_bytes())) if alerts.exists()
                  else [no_test_data(f"examples/{name}-alerts.json")])
    options = complete(flags[1] if flags[:1] == ["--version"] else "", quiet=False,
                       show_outdated_releases="--show-outdated-releases" in flags)
    result = recommend(load(name), conditions, options)
    text = result.out + ("" if result.error is None else f"\nerror: {result.error}\n")
    assert text == (HERE / "examples" / f"{name}{suffix}").read_text()
    assert result.err == ""


def test_sort_conditional_updates_by_semantic_versions() -> None:
    """recommend_test.go ``TestSortConditionalUpdatesBySemanticVersions``."""
    versions = ["10.0.0", "2.0.10", "2.0.5", "2.0.1", "2.0.0", "not-sem-ver-2", "not-sem-ver-1"]
    for seed in range(20):
        shuffled = [ConditionalUpdate(release=Release(version=v)) for v in versions]
        random.Random(seed).shuffle(shuffled)
        sort_by_semantic_versions(shuffled)
        assert [u.release.version for u in shuffled] == versions
