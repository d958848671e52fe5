"""``cvo upgrade ack [KEY…] [--clear]``: the admin's acknowledgement of an admin-ack gate (pkg/risk/adminack), on the
embedded cluster: listing the gates, acknowledging one (the dry run's block goes away), taking it back, bad keys."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cvo.cli.main import main
from cvo.clock import Clock
from cvo.cluster.api import Ref
from cvo.cluster.embedded.server import SimCluster
from cvo.log import configure
from tests.support.helpers import PAYLOADS
from tests.support.helpers import state_objects as read_state_objects

OLD = str(PAYLOADS / "demo-4.16.0")
MINOR = str(PAYLOADS / "demo-4.17.0")
GATE = "ack-4.16-kube-1.30-api-removals-in-4.17"
GATE_MESSAGE = ("Kubernetes 1.30 and therefore OpenShift 4.17 remove several APIs which require admin consideration. "
                "Please see the knowledge article https://access.redhat.com/articles/6958394 for details.")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


async def _write(state: Path, *objects: dict[str, Any]) -> None:
    cluster = SimCluster(clock=Clock(), path=state)
    try:
        for obj in objects:
            await cluster.create(obj)
    finally:
        await cluster.close()


def admin_gates(data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "admin-gates", "namespace": "openshift-config-managed"}, "data": data}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cluster running 4.16.0 whose admin-gates ConfigMap holds a gate for 4.16 and one for 4.15."""
    state = tmp_path_factory.mktemp("ack") / "cluster.json"
    try:
        assert main(["install", OLD, "--state", str(state)]) == 0
    finally:
        configure("text", 0)
    asyncio.run(_write(state, admin_gates({GATE: GATE_MESSAGE, "ack-4.15-old": "Not for this cluster."})))
    return state


@pytest.fixture
def state(installed: Path, tmp_path: Path) -> str:
    copy = tmp_path / "cluster.json"
    shutil.copy(installed, copy)
    return str(copy)


def acks(state: str) -> dict[str, str] | None:
    found = [o for o in read_state_objects(Path(state)) if o["kind"] == "ConfigMap"
             and o["metadata"] == {**o["metadata"], "name": "admin-acks", "namespace": "openshift-config"}]
    return found[0].get("data", {}) if found else None


def test_the_gates_listed(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "upgrade", "ack", "--state", state)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == ("Gates in openshift-config-managed/admin-gates (the cluster runs 4.16.0; acknowledgements in "
                        "openshift-config/admin-acks):")
    assert lines[1].split() == ["KEY", "STATE", "MESSAGE"]
    assert lines[2].split()[:2] == ["ack-4.15-old", "not"]
    assert lines[3].split()[:2] == [GATE, "BLOCKS"] and lines[3].endswith(GATE_MESSAGE)
    code, out, _ = cli(capsys, "upgrade", "ack", "--state", state, "-o", "json")
    assert json.loads(out) == {"version": "4.16.0", "gates": [
        {"key": "ack-4.15-old", "message": "Not for this cluster.", "applies": False, "acknowledged": False,
         "blocks": False, "risk": None},
        {"key": GATE, "message": GATE_MESSAGE, "applies": True, "acknowledged": False, "blocks": True,
         "risk": f"AdminAck-{GATE}"}]}


def test_a_gate_blocks_the_minor_update_until_acknowledged(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "upgrade", "--to", MINOR, "--dry-run", "--state", state)
    assert code == 1
    assert f"  AdminAck-{GATE}\n" in out
    assert "    url:      https://access.redhat.com/articles/6958394\n" in out
    assert f"    override: cvo upgrade ack {GATE} --state {state}\n" in out
    assert f"    or force: cvo upgrade --to {MINOR} --force --state {state}\n" in out
    assert acks(state) is None  # the ConfigMap does not exist yet

    code, out, err = cli(capsys, "upgrade", "ack", GATE, "--state", state)
    assert code == 0, err
    assert out == f"configmap openshift-config/admin-acks: acknowledged {GATE}\n"
    assert acks(state) == {GATE: "true"}
    code, out, _ = cli(capsys, "upgrade", "--to", MINOR, "--dry-run", "--state", state)
    assert code == 0, out
    assert "  PASS     ClusterVersionUpgradeable" in out

    code, out, _ = cli(capsys, "upgrade", "ack", GATE, "--state", state)  # again: nothing to write
    assert out == f"configmap openshift-config/admin-acks: already acknowledged: {GATE}\n"
    code, out, _ = cli(capsys, "upgrade", "ack", "--state", state)
    assert any(line.split()[:2] == [GATE, "acknowledged"] for line in out.splitlines())

    code, out, _ = cli(capsys, "upgrade", "ack", GATE, "--clear", "--state", state)
    assert code == 0 and out == f"configmap openshift-config/admin-acks: removed the acknowledgement of {GATE}\n"
    assert acks(state) == {}
    assert cli(capsys, "upgrade", "--to", MINOR, "--dry-run", "--state", state)[0] == 1


def test_an_acknowledgement_keeps_the_other_keys(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(_write(Path(state), {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "admin-acks", "namespace": "openshift-config"},
                                     "data": {"ack-4.15-old": "true", "other": "x"}}))
    assert cli(capsys, "upgrade", "ack", GATE, "--state", state)[0] == 0
    assert acks(state) == {"ack-4.15-old": "true", "other": "x", GATE: "true"}


def test_a_key_of_a_gates_form_not_listed_yet_is_written_with_a_note(state: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "upgrade", "ack", "ack-4.17-future", "--state", state)
    assert code == 0
    assert out.splitlines()[1] == "note: ack-4.17-future is not a gate of openshift-config-managed/admin-gates (yet)"
    assert acks(state) == {"ack-4.17-future": "true"}


@pytest.mark.parametrize(("args", "needle"), [
    (["typo"], "typo: not a gate of openshift-config-managed/admin-gates (its gates: ack-4.15-old, " + GATE + ")"),
    (["--clear"], "--clear needs the KEYs whose acknowledgement to remove"),
])
def test_bad_keys_exit_2_with_one_error_line(state: str, capsys: pytest.CaptureFixture[str], args: list[str],
                                             needle: str) -> None:
    before = read_state_objects(Path(state))
    code, out, err = cli(capsys, "upgrade", "ack", *args, "--state", state)
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and needle in errors[0]
    assert "Traceback" not in err
    assert read_state_objects(Path(state)) == before


def test_no_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = str(tmp_path / "c.json")
    assert cli(capsys, "install", OLD, "--state", state)[0] == 0
    code, out, _ = cli(capsys, "upgrade", "ack", "--state", state)
    assert (code, out) == (0, "No gates in openshift-config-managed/admin-gates: nothing to acknowledge.\n")



def test_the_acknowledgement_creates_its_namespace_where_there_is_none() -> None:
    """A plain Kubernetes cluster has no openshift-config: the acknowledgement creates it, then admin-acks."""
    from cvo.cli.upgrade_ack_cmd import acknowledge

    async def main() -> None:
        cluster = SimCluster(clock=Clock(), namespaces=())
        assert await acknowledge(cluster, [GATE], clear=False)
        assert await cluster.get(Ref("", "Namespace", "", "openshift-config")) is not None
        acks = await cluster.get(Ref("", "ConfigMap", "openshift-config", "admin-acks"))
        assert acks is not None and acks["data"] == {GATE: "true"}
        assert not await acknowledge(cluster, [GATE], clear=False)  # said already: nothing written
        await cluster.close()

    asyncio.run(main())
