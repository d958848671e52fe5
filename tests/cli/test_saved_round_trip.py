"""Saved objects round-trip: what cvo writes (``cvo get -o yaml|json``, ``cvo status -o yaml|json``) its
``--from-file`` reads back, and every read-only command sees the same cluster in the file as live."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from cvo.cli.main import main
from cvo.status.godur import SECOND, rfc3339
from cvo.status.upgrade_status import latest_transition
from tests.support.helpers import PAYLOADS

OPERATORS = str(PAYLOADS / "demo-operators.yaml")


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("saved") / "demo.db")
    for args in (["install", str(PAYLOADS / "demo-4.16.0")], ["upgrade", "--to", str(PAYLOADS / "demo-4.16.3")]):
        assert run(*args, "--state", path, "--operators", OPERATORS, "--speed", "600")[0] == 0
    return path


NOW = "2026-12-01T00:00:00Z"  # the same "now" for the live cluster and the file: the ages agree


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_cvo_get_saves_a_list_every_read_only_command_reads_back(state: str, tmp_path: Path, fmt: str) -> None:
    code, saved, _ = run("get", "-o", fmt, "--state", state)
    assert code == 0
    doc = yaml.safe_load(saved)
    assert doc["kind"] == "List"
    kinds = {item["kind"] for item in doc["items"]}
    assert {"ClusterVersion", "ClusterOperator", "OperatorCondition", "ConfigMap"} <= kinds
    assert any(i["kind"] == "ConfigMap" and i["metadata"]["name"] == "cvo-update-durations" for i in doc["items"])
    path = tmp_path / f"cluster.{fmt}"
    path.write_text(saved)
    for view in (["status"], ["status", "-o", "wide"], ["upgrade", "status", "--details", "all"],
                 ["report", "-o", "text"]):
        now = ["--now", NOW] if view[0] == "upgrade" else []
        live = run(*view, "--state", state, *now)
        filed = run(*view, "--from-file", str(path), *now)
        assert live[0] == filed[0] == 0, (view, live[2], filed[2])
        if view[0] == "status":  # SINCE is measured from each cluster's own clock; the rest is the same
            assert [line.split()[:5] for line in live[1].splitlines()] == \
                   [line.split()[:5] for line in filed[1].splitlines()], view
        else:
            assert live[1] == filed[1], view


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_cvo_status_output_reads_back(state: str, tmp_path: Path, fmt: str) -> None:
    """'cvo status -o yaml > st.yaml; cvo status --from-file st.yaml' said "object without a kind"."""
    code, saved, _ = run("status", "-o", fmt, "--state", state)
    assert code == 0
    path = tmp_path / f"status.{fmt}"
    path.write_text(saved)
    code, again, err = run("status", "-o", fmt, "--from-file", str(path))
    assert code == 0, err
    assert yaml.safe_load(again) == yaml.safe_load(saved)


def test_get_one_resource_and_names(state: str) -> None:
    code, names, _ = run("get", "clusteroperators", "-o", "name", "--state", state)
    assert code == 0
    lines = names.splitlines()
    assert lines and all(line.startswith("clusteroperator.config.openshift.io/") for line in lines)
    assert "clusteroperator.config.openshift.io/etcd" in lines


def test_a_document_without_a_kind_says_how_to_save_one(tmp_path: Path) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text("foo: 1\n")
    code, _, err = run("status", "--from-file", str(path))
    assert code == 2
    assert err.strip().endswith("object without a kind (cvo get -o yaml saves a cluster as one kind: List)")


def test_upgrade_status_says_why_it_has_no_forecast(tmp_path: Path) -> None:
    """Mid-update, without any record of an earlier install or update, oc's estimate is all there is: a note on
    stderr says why there is no Forecast line (stdout stays oc's, byte for byte)."""
    state = str(tmp_path / "mid.db")
    assert run("install", str(PAYLOADS / "demo-4.16.0"), "--state", state, "--operators", OPERATORS)[0] == 0
    code, _, _ = run("upgrade", "--to", str(PAYLOADS / "demo-4.16.3"), "--state", state, "--operators", OPERATORS,
                     "--timeout", "4m")
    assert code == 1  # stopped mid-update by its timeout: the ClusterVersion is still progressing
    code, saved, _ = run("get", "-o", "yaml", "--state", state)
    doc = yaml.safe_load(saved)
    with_records = tmp_path / "with.yaml"
    with_records.write_text(saved)
    doc["items"] = [i for i in doc["items"] if i["metadata"]["name"] != "cvo-update-durations"]
    without = tmp_path / "without.yaml"
    without.write_text(yaml.safe_dump(doc))
    code, text, _ = run("upgrade", "status", "--from-file", str(with_records), "--now", NOW)
    assert code == 0 and "\nForecast:        " in text and "(from 1 recorded update)" in text
    code, text, err = run("upgrade", "status", "--from-file", str(without), "--now", NOW)
    assert code == 0 and "Forecast:" not in text  # stdout: exactly oc's view of the same objects
    assert err.splitlines()[-1] == (
        "note: no forecast: no install or update of this cluster was recorded "
        "(openshift-cluster-version/cvo-update-durations): the estimate above is oc's, from the last completed "
        "update's duration (an hour without one)")


OC = Path(__file__).resolve().parents[1] / "golden" / "oc"
PAUSED = "4.14.1-paused-worker-pool"  # oc's example: a paused worker pool, its nodes and their rendered configs


def _crd(plural: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.machineconfiguration.openshift.io"},
            "spec": {"group": "machineconfiguration.openshift.io", "scope": "Cluster",
                     "names": {"plural": plural, "kind": kind, "listKind": f"{kind}List",
                               "singular": kind.lower()},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _items(name: str) -> list[dict[str, Any]]:
    doc = yaml.safe_load((OC / f"{PAUSED}-{name}.yaml").read_text())
    return list(doc["items"]) if "items" in doc else [doc]


@pytest.fixture(scope="module")
def machines_state(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An embedded cluster holding oc's paused-worker-pool example: its ClusterVersion, ClusterOperators, pools,
    nodes and configs (each status as oc's example has it)."""
    import asyncio

    from cvo.cluster.embedded.server import SimCluster

    path = tmp_path_factory.mktemp("machines") / "state.db"

    async def write() -> None:
        cluster = SimCluster(path=path)
        for crd in (_crd("machineconfigpools", "MachineConfigPool"), _crd("machineconfigs", "MachineConfig")):
            await cluster.create(crd)
        for name in ("cv", "co", "mcp", "node", "mc"):
            for obj in _items(name):
                body = {k: v for k, v in obj.items() if k != "status"}
                body["metadata"] = {k: v for k, v in obj["metadata"].items() if k in ("name", "annotations", "labels")}
                made = await cluster.create(body)
                if "status" in obj:
                    made["status"] = obj["status"]
                    await cluster.update_status(made)
        await cluster.close()

    asyncio.run(write())
    return str(path)


def test_cvo_get_saves_pools_nodes_and_the_configs_they_name(machines_state: str, tmp_path: Path) -> None:
    code, saved, err = run("get", "-o", "yaml", "--state", machines_state)
    assert code == 0, err
    items = yaml.safe_load(saved)["items"]
    kinds = {item["kind"] for item in items}
    assert {"MachineConfigPool", "Node", "MachineConfig"} <= kinds
    named = {n["metadata"]["annotations"][key] for n in items if n["kind"] == "Node"
             for key in ("machineconfiguration.openshift.io/currentConfig",
                         "machineconfiguration.openshift.io/desiredConfig")}
    assert {i["metadata"]["name"] for i in items if i["kind"] == "MachineConfig"} == named  # only those
    assert len(_items("mc")) > len(named)  # the example has more configs than its nodes name
    path = tmp_path / "cluster.yaml"
    path.write_text(saved)
    # the moment oc's example describes, as its examples_test.go takes it
    cv, cos = _items("cv")[0], _items("co")
    latest = latest_transition(cv, cos)
    assert latest is not None
    now = latest + 368975
    when = f"{rfc3339(now)[:-1]}.{now % SECOND:09d}Z"
    filed = run("upgrade", "status", "--details", "all", "--from-file", str(path), "--now", when)
    assert filed[0] == 0, filed[2]
    assert filed[1] == (OC / f"{PAUSED}.detailed-output").read_text()  # oc's own output, byte for byte
    live = run("upgrade", "status", "--details", "all", "--state", machines_state)  # the embedded cluster's now
    assert live[0] == 0, live[2]
    worker = filed[1].index("= Worker Upgrade =")
    assert live[1][live[1].index("= Worker Upgrade ="):].split("= Update Health =")[0] == \
        filed[1][worker:].split("= Update Health =")[0]
