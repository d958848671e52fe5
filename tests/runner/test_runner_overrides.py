"""An admin's override written beside other writers: a conflict means read again and apply the same intent."""

from __future__ import annotations

from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import Ref
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.gates.olm import OC_API_VERSION
from cvo.runner.overrides import CONFLICT_RETRIES, Override, OverrideFailed, set_override

EPOCH = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
NS = "openshift-etcd-operator"
OC = Ref("operators.coreos.com", "OperatorCondition", NS, "etcd")
T = TypeVar("T")


def now(coro: Coroutine[Any, Any, T]) -> T:
    """Run a SimCluster call to completion at once (it never waits), from inside a synchronous hook."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    raise AssertionError("the call waited")


def operator_reports(cluster: SimCluster, message: str) -> None:
    """The operator (another process) writes its condition: a new resourceVersion."""
    live = now(cluster.get(OC))
    assert live is not None
    spec = {**(live.get("spec") or {}), "conditions": [
        {"type": "Upgradeable", "status": "False", "reason": "Migrating", "message": message,
         "lastTransitionTime": "2025-01-02T03:04:05Z"}]}
    now(cluster.update({**live, "spec": spec}))


def scene(tmp_path: Path, test: Any) -> None:
    path = tmp_path / "cluster.db"

    async def main() -> None:
        admin = SimCluster(Clock(EPOCH), path=path, namespaces=(*DEFAULT_NAMESPACES, NS))
        operator = SimCluster(Clock(EPOCH), path=path)
        await admin.create({"apiVersion": OC_API_VERSION, "kind": "OperatorCondition",
                            "metadata": {"name": "etcd", "namespace": NS}, "spec": {}})
        try:
            await test(admin, operator)
        finally:
            await admin.close()
            await operator.close()

    run_virtual(main)


def test_a_conflict_is_read_again_and_neither_write_is_lost(tmp_path: Path) -> None:
    async def test(admin: SimCluster, operator: SimCluster) -> None:
        reads = 0

        def between_read_and_write(ref: Ref) -> None:
            nonlocal reads
            if ref == OC:
                reads += 1
                if reads == 1:
                    operator_reports(operator, "migrating")

        admin.on_read(between_read_and_write)
        result = await set_override(admin, OC, Override("Upgradeable", "True", "Checked", "ok"), EPOCH)
        assert result.changed and reads == 2  # the first write conflicted; the second read saw the operator's
        live = await operator.get(OC)
        assert live is not None
        assert [(o["type"], o["status"], o["reason"]) for o in live["spec"]["overrides"]] == [
            ("Upgradeable", "True", "Checked")]
        assert live["spec"]["conditions"][0]["message"] == "migrating"  # the operator's write is kept too

    scene(tmp_path, test)


def test_an_object_that_never_stops_changing_is_a_clear_failure(tmp_path: Path) -> None:
    async def test(admin: SimCluster, operator: SimCluster) -> None:
        steps = iter(range(1000))
        admin.on_read(lambda ref: operator_reports(operator, f"step {next(steps)}") if ref == OC else None)
        with pytest.raises(OverrideFailed, match=f"changed by others {CONFLICT_RETRIES} times"):
            await set_override(admin, OC, Override("Upgradeable", "True"), EPOCH)

    scene(tmp_path, test)


def test_clearing_an_override_that_is_not_there_changes_nothing(tmp_path: Path) -> None:
    async def test(admin: SimCluster, operator: SimCluster) -> None:
        before = await admin.get(OC)
        result = await set_override(admin, OC, Override("Upgradeable", "", clear=True), EPOCH)
        assert not result.changed
        assert await admin.get(OC) == before

    scene(tmp_path, test)
