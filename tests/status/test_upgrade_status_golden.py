"""Golden files: `cvo upgrade status` on oc's own examples (byte for byte) and on cvo's saved objects.

oc's examples (tests/golden/oc, see its README) are compared with oc's expected outputs; they never
change.  cvo's own goldens (tests/golden/cvo) are regenerated with ``UPDATE=1 pytest …``, then reviewed.
"Now" is always the moment the saved objects describe, as in oc's tests (oc adds 368975 ns to exercise
rounding; so do these).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml

from cvo.cli.main import main
from cvo.cli.upgrade_status_cmd import _mco_image
from cvo.monitoring.answers import Alert
from cvo.objects import Deployment, MachineConfig, MachineConfigPool, Node
from cvo.status.godur import SECOND, rfc3339
from cvo.status.recommend_alerts import parse_alerts
from cvo.status.upgrade_nodes import Machines
from cvo.status.upgrade_status import assess, latest_transition
from cvo.status.upgrade_text import render

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
OC_EXAMPLES = sorted(p.name.removesuffix("-cv.yaml") for p in (GOLDEN / "oc").glob("*-cv.yaml"))
OC_NANOSECONDS = 368975  # oc's examples_test.go: "add some nanoseconds to exercise rounding"


def load(name: str, where: str = "oc") -> tuple[dict, list[dict]]:
    cv = yaml.safe_load((GOLDEN / where / f"{name}-cv.yaml").read_text())
    cos = yaml.safe_load((GOLDEN / where / f"{name}-co.yaml").read_text())["items"]
    return cv, cos


def oc_now(cv: dict, cos: list[dict]) -> int:
    latest = latest_transition(cv, cos)
    assert latest is not None
    return latest + OC_NANOSECONDS


def items(path: Path) -> list[dict]:
    doc = yaml.safe_load(path.read_text())
    return doc["items"] if doc["kind"].endswith("List") else [doc]


def machines(name: str) -> Machines:
    """The example's MachineConfigPools (in the file's order), Nodes and MachineConfigs."""
    where = GOLDEN / "oc"
    return Machines([MachineConfigPool.read(o) for o in items(where / f"{name}-mcp.yaml")],
                    [Node.read(o) for o in items(where / f"{name}-node.yaml")],
                    [MachineConfig.read(o) for o in items(where / f"{name}-mc.yaml")])


def alerts(name: str) -> tuple[Alert, ...] | None:
    """The example's firing alerts, where it has them (oc's mocked runs read none otherwise)."""
    path = GOLDEN / "oc" / f"{name}-alerts.json"
    return parse_alerts(path.read_bytes()) if path.exists() else None


# oc's expected outputs: NAME.output (--details=none) and NAME.detailed-output (--details=all), of every one
# of oc's examples (see the README).
OC_OUTPUTS = [(name, details, suffix) for name in OC_EXAMPLES
              for details, suffix in (("none", "output"), ("all", "detailed-output"))
              if (GOLDEN / "oc" / f"{name}.{suffix}").exists()]


def example_files(name: str) -> list[Path]:
    """The example's objects: the ClusterVersion, the ClusterOperators, the pools, nodes and rendered configs
    and, where oc's example has it, the machine-config operator's Deployment (oc compares its image with
    machine-config's ``operator-image``)."""
    kinds = ("cv", "co", "mcp", "node", "mc", "mco-deployment")
    return [p for p in (GOLDEN / "oc" / f"{name}-{kind}.yaml" for kind in kinds) if p.exists()]


def mco_image(name: str) -> str | None:
    path = GOLDEN / "oc" / f"{name}-mco-deployment.yaml"
    return _mco_image(Deployment.read(yaml.safe_load(path.read_text()))) if path.exists() else None


@pytest.mark.parametrize(("name", "details", "suffix"), OC_OUTPUTS)
def test_ocs_examples(name: str, details: str, suffix: str) -> None:
    cv, cos = load(name)
    expected = (GOLDEN / "oc" / f"{name}.{suffix}").read_text()
    status = assess(cv, cos, oc_now(cv, cos), mco_image(name), machines(name), alerts(name))
    assert render(status, details) == expected


@pytest.mark.parametrize(("name", "details", "suffix"), OC_OUTPUTS)
def test_ocs_examples_through_from_file(name: str, details: str, suffix: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in example_files(name)]
    cv, cos = load(name)
    now = oc_now(cv, cos)  # oc's nanoseconds: a sub-second SINCE reads as oc's shortDuration reads it
    when = f"{rfc3339(now)[:-1]}.{now % SECOND:09d}Z"
    alerts_file = GOLDEN / "oc" / f"{name}-alerts.json"
    given = ["--alerts-file", str(alerts_file)] if alerts_file.exists() else []
    assert main(["upgrade", "status", "--details", details, "--now", when, *given,
                 *[a for f in files for a in ("--from-file", f)]]) == 0
    out, err = capsys.readouterr()
    assert out == (GOLDEN / "oc" / f"{name}.{suffix}").read_text()
    assert "alert" not in err.lower()


@pytest.mark.parametrize(("name", "details", "suffix"), OC_OUTPUTS)
def test_ocs_examples_as_ocs_test_runs_them(name: str, details: str, suffix: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """oc's examples_test.go: ``--mock-clusterversion NAME-cv.yaml`` reads the files beside it."""
    assert main(["upgrade", "status", "--details", details, "--mock-clusterversion",
                 str(GOLDEN / "oc" / f"{name}-cv.yaml")]) == 0
    assert capsys.readouterr().out == (GOLDEN / "oc" / f"{name}.{suffix}").read_text()


def test_examples_exist() -> None:
    assert "ocpbugs-60768" in OC_EXAMPLES and len(OC_EXAMPLES) == 13
    assert all(any(n == name for n, _, _ in OC_OUTPUTS) for name in OC_EXAMPLES), "an example without an output"


# --- cvo's own goldens: variants of the captured objects ------------------------------------------


def long_history(cv: dict) -> dict:
    """The example's cluster after two years of nightlies: 60 more history entries, some never completed."""
    cv = copy.deepcopy(cv)
    history = cv["status"]["history"]
    first = history[-1]
    older = []
    for i in range(60):
        day = 18 - (i % 18)
        month = 7 - i // 18 % 6
        version = f"4.{19 - i // 20}.0-0.nightly-2025-0{month}-{day:02d}-{100000 + i:06d}"
        state = "Partial" if i % 7 == 3 else "Completed"
        started = f"2025-0{month}-{day:02d}T10:{i % 60:02d}:00Z"
        done = f"2025-0{month}-{day:02d}T11:{(i * 7) % 60:02d}:00Z"
        older.append({"completionTime": done, "image": f"registry.example/release@sha256:{i:064x}",
                      "startedTime": started, "state": state, "verified": False, "version": version})
    cv["status"]["history"] = [history[0], *history[1:-1], first, *older]
    return cv


def previous_partial(cv: dict) -> dict:
    cv = long_history(cv)
    cv["status"]["history"][1]["state"] = "Partial"
    return cv


VARIANTS = {
    "ocpbugs-60768-long-history": (long_history, "all"),
    "ocpbugs-60768-from-incomplete": (previous_partial, "all"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_cvo_goldens(variant: str) -> None:
    change, details = VARIANTS[variant]
    cv, cos = load("ocpbugs-60768")
    cv = change(cv)
    text = render(assess(cv, cos, oc_now(cv, cos)), details)
    path = GOLDEN / "cvo" / f"{variant}.output"
    if os.environ.get("UPDATE"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()
