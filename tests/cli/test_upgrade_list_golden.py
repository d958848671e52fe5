"""Golden files: ``cvo upgrade`` without a target on saved ClusterVersions, against oc's text.

oc ships no example output for plain ``oc adm upgrade``; the expected files in tests/golden/upgrade_list were
derived by hand from openshift/oc pkg/cli/admin/upgrade/upgrade.go ``Options.Run`` (see that folder's README):
``NAME.output`` is stdout, ``NAME.stderr`` stderr (no file: nothing), ``NAME.include-not-recommended-output``
stdout with ``--include-not-recommended`` (stderr unchanged).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cvo.cli.main import main
from cvo.objects import ClusterVersion
from cvo.status.upgrade_list import render_list

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "upgrade_list"
NAMES = sorted(p.name.removesuffix("-cv.yaml") for p in GOLDEN.glob("*-cv.yaml"))
CASES = [(name, include) for name in NAMES for include in (False, True)
         if not include or (GOLDEN / f"{name}.include-not-recommended-output").exists()]


def expected(name: str, include: bool) -> tuple[str, str]:
    out = GOLDEN / (f"{name}.include-not-recommended-output" if include else f"{name}.output")
    err = GOLDEN / f"{name}.stderr"
    return out.read_text(), err.read_text() if err.exists() else ""


def test_every_case_is_there() -> None:
    assert len(NAMES) >= 12
    assert sum(1 for _, include in CASES if include) >= 2


@pytest.mark.parametrize(("name", "include"), CASES)
def test_render(name: str, include: bool) -> None:
    cv = ClusterVersion.read(yaml.safe_load((GOLDEN / f"{name}-cv.yaml").read_text()))
    printed = render_list(cv, include)
    assert (printed.out, printed.err) == expected(name, include)


@pytest.mark.parametrize(("name", "include"), CASES)
def test_through_from_file(name: str, include: bool, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--include-not-recommended"] if include else []
    capsys.readouterr()
    code = main(["upgrade", "--from-file", str(GOLDEN / f"{name}-cv.yaml"), *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert (out, err) == expected(name, include)
