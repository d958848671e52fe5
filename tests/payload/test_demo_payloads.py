"""payloads/ is what hack/gen_demo_payloads.py makes of the templates in hack/demo-payloads/, byte for byte."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.helpers import PAYLOADS, REPO

GENERATOR = REPO / "hack" / "gen_demo_payloads.py"
TEMPLATES = REPO / "hack" / "demo-payloads"
INGRESS_CRD = "0000_50_cluster-ingress-operator_00-custom-resource-definition.yaml"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_demo_payloads", GENERATOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(gen: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("payloads")
    gen.generate(out)
    return out


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_generated_payloads_are_the_committed_ones(gen: ModuleType, generated: Path) -> None:
    committed = {name: data for name, data in files(PAYLOADS).items()
                 if not name.startswith(gen.HAND_WRITTEN_DIRS)}  # the workload-status example, written by hand
    for name in gen.HAND_WRITTEN:  # written by hand for `make demo` and the examples
        del committed[name]
    made = files(generated)
    assert sorted(made) == sorted(committed)
    assert [name for name in made if made[name] != committed[name]] == []
    assert len(made) == 3 * 2 + 120 * 2 + 121 + 1  # metadata files, manifests, README.md


def test_check_passes_on_the_committed_payloads() -> None:
    run = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "payloads are up to date\n"


def test_check_fails_on_a_changed_missing_or_stray_file(gen: ModuleType, generated: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "payloads"
    shutil.copytree(PAYLOADS, out)
    assert gen.main(["--check", "--out", str(out)]) == 0
    rm = out / "demo-4.16.3" / "release-manifests"
    (rm / "0000_20_etcd-operator_05_deployment.yaml").write_text("changed\n")
    (rm / "0000_70_dns-operator_04_service.yaml").unlink()
    (out / "demo-4.17.0" / "manifests" / "0000_00_stray.yaml").write_text("{}\n")
    assert gen.main(["--check", "--out", str(out)]) == 1
    assert capsys.readouterr().err.split("\n")[1:4] == [
        "  demo-4.16.3/release-manifests/0000_20_etcd-operator_05_deployment.yaml",
        "  demo-4.16.3/release-manifests/0000_70_dns-operator_04_service.yaml",
        "  demo-4.17.0/manifests/0000_00_stray.yaml",
    ]


def test_a_changed_template_changes_the_output(gen: ModuleType, generated: Path, tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates)
    crd = templates / "release-manifests" / INGRESS_CRD
    crd.write_text(crd.read_text().replace("                - Deferred\n",
                                           "                - Deferred\n                - Never\n"))
    out = tmp_path / "out"
    gen.generate(out, templates)
    # the line is inside the {{ if ingress_idle_termination }} block: only 4.17.0 changes
    assert gen.differences(out, generated) == [f"demo-4.17.0/release-manifests/{INGRESS_CRD}"]
    assert gen.differences(out, PAYLOADS) == [f"demo-4.17.0/release-manifests/{INGRESS_CRD}"]


def test_per_release_values_and_blocks(generated: Path) -> None:
    crd = {v: (generated / f"demo-{v}" / "release-manifests" / INGRESS_CRD).read_text()
           for v in ("4.16.0", "4.16.3", "4.17.0")}
    assert ["idleConnectionTerminationPolicy" in text for text in crd.values()] == [False, False, True]
    dns = {v: (generated / f"demo-{v}" / "release-manifests" / "0000_70_dns-operator_06_clusteroperator.yaml")
           .read_text() for v in ("4.16.0", "4.17.0")}
    assert 'version: "1.11.1"' in dns["4.16.0"] and 'version: "1.11.3"' in dns["4.17.0"]
    olm = {p.parent.parent.name for p in generated.rglob("0000_50_cluster-olm-operator_*")}
    samples = {p.parent.parent.name for p in generated.rglob("0000_50_cluster-samples-operator_*")}
    assert olm == {"demo-4.17.0"}
    assert samples == {"demo-4.16.0", "demo-4.16.3", "demo-4.17.0"}  # 4.17.0: only the delete manifest
    assert [p.name for p in generated.rglob("demo-4.17.0/*/0000_50_cluster-samples-operator_*")] == [
        "0000_50_cluster-samples-operator_05_deployment-delete.yaml"]
    for path in generated.rglob("*"):
        if path.is_file():  # nothing of ours left unfilled; Go and Prometheus templates pass through
            assert "{{ version" not in path.read_text() and "{{ image." not in path.read_text()


@pytest.mark.parametrize("template, message", [
    ("{{ nope }}\n", "no value for {{ nope }}"),
    ("{{ if version }}\n{{ end }}\n", "not a boolean"),
    ("{{ if ingress_idle_termination }}\n", "without {{ end }}"),
    ("{{ end }}\n", "without {{ if }}"),
    ("image: {{ image.cluster-olm-operator }}\n", "no value for {{ image.cluster-olm-operator }}"),  # not in 4.16
])
def test_template_mistakes_are_errors(gen: ModuleType, tmp_path: Path, template: str, message: str) -> None:
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates)
    (templates / "release-manifests" / "0000_10_config-operator_99_mistake.yaml").write_text(template)
    with pytest.raises(SystemExit, match=re.escape(message)):
        gen.generate(tmp_path / "out", templates)
