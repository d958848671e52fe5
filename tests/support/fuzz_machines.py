"""Fuzz targets of pools, nodes and rendered configs: name -> (hypothesis strategy, target), merged into
fuzz_targets.TARGETS.  The objects carry the machine-config daemon's annotations and the values it writes, in
odd combinations and shapes (a selector with an unknown operator or selecting nothing, an annotation that is
a list or missing, a node two pools select, a time that is none, a pool twice, a ``maxUnavailable`` that is a
percentage, 0, negative or invalid, a pool's status of any shape, a rendered config naming no release), read
by ``cvo upgrade status`` (views and ``--from-file``), by the simulated machine-config operator (the one
``cvo sim-operators`` runs) and by that operator's rules for its ClusterOperator."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.support.upgrade_status_objects import at, co, cv, entry

NEW, OLD = "4.16.3", "4.16.0"
WORDS = ["master", "worker", "infra", "", "Done", "Working", "Degraded", "Rebooting", "Unreconcilable",
         f"rendered-worker-{NEW}", f"rendered-worker-{OLD}", f"rendered-master-{NEW}", "drain-x", "uncordon-x",
         "True", "False", "Ready", "DiskPressure", "In", "NotIn", "Exists", "Near", "10%", NEW, OLD,
         "Updated", "Updating", "NodeDegraded", "RenderDegraded"]
KEYS = ["machineconfiguration.openshift.io/" + k for k in (
    "currentConfig", "desiredConfig", "state", "reason", "desiredDrain", "lastAppliedDrain", "desiredImage",
    "currentImage")]
word = st.sampled_from(WORDS)
any_value = st.recursive(st.none() | st.booleans() | st.integers(-2, 2) | word,
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(word, inner, max_size=3),
                         max_leaves=6)
node_objects = st.builds(
    lambda name, labels, notes, conds, unsched: {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels, "annotations": notes},
        "spec": {"unschedulable": unsched}, "status": {"conditions": conds}},
    word, st.dictionaries(st.sampled_from(["node-role.kubernetes.io/" + w for w in WORDS[:3]]), word, max_size=2),
    st.dictionaries(st.sampled_from(KEYS), word, max_size=6) | any_value,
    st.lists(st.fixed_dictionaries({"type": word, "status": word}, optional={
        "lastTransitionTime": st.sampled_from([at(), at(minutes=29), "0001-01-01T00:00:00Z", "x"])}), max_size=3),
    st.booleans() | any_value)
max_unavailable = st.sampled_from(["10%", "33%", "0%", "100%", "-10%", "5", "abc%", "%", "", 0, -1, 3, 1.5])
REQUIRED = "operator.machineconfiguration.openshift.io/required-for-upgrade"
pool_status = st.fixed_dictionaries({}, optional={
    "conditions": st.lists(st.fixed_dictionaries({"type": word, "status": word}, optional={
        "message": word, "reason": word}), max_size=4) | any_value,
    "configuration": st.fixed_dictionaries({"name": word}) | any_value,
    "machineCount": st.integers(-1, 3) | any_value, "updatedMachineCount": st.integers(0, 3),
    "degradedMachineCount": st.integers(0, 3), "observedGeneration": st.integers(0, 3) | any_value})
pool_objects = st.builds(
    lambda name, labels, selector, paused, config, mu, status: {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeSelector": selector, "paused": paused, "configuration": {"name": config}, "maxUnavailable": mu},
        "status": status},
    word, st.dictionaries(st.sampled_from([REQUIRED, "x"]), st.just("")) | any_value,
    st.none() | st.fixed_dictionaries({}, optional={
        "matchLabels": st.dictionaries(st.sampled_from(["node-role.kubernetes.io/" + w for w in WORDS[:3]]
                                                       + ["no-node-has-this"]), word),
        "matchExpressions": st.lists(st.fixed_dictionaries({"key": word, "operator": word},
                                                           optional={"values": st.lists(word, max_size=2)}),
                                     max_size=2)}) | any_value,
    st.booleans() | any_value, word, max_unavailable | any_value, pool_status | any_value)
config_objects = st.builds(
    lambda name, notes: {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                         "metadata": {"name": name, "annotations": notes}},
    word, st.fixed_dictionaries({}, optional={  # no release named, one of any shape
        "machineconfiguration.openshift.io/release-image-version": word | any_value}) | any_value)


def machines_target(pools: list[Any], nodes: list[Any], configs: list[Any], progressing: bool) -> None:
    """The views of pools, nodes and configs of any shape, and the status over them: text in every detail and
    data, or oc's one-line error; never an exception."""
    import orjson

    from cvo.objects import MachineConfig, MachineConfigPool, Node, Refused
    from cvo.status.godur import parse_time
    from cvo.status.upgrade_nodes import Machines
    from cvo.status.upgrade_status import StatusUnavailable, assess
    from cvo.status.upgrade_text import render, to_data

    def views(cls: Any, objects: list[Any]) -> list[Any]:
        out = []
        for obj in objects:
            try:
                out.append(cls.read(obj))
            except Refused as err:
                assert "\n" not in str(err)
        return out

    machines = Machines(views(MachineConfigPool, pools), views(Node, nodes), views(MachineConfig, configs))
    history = [entry(NEW, "Partial", at()), entry(OLD, "Completed", at(days=-9), at(days=-9, minutes=50))]
    cos = [co("machine-config", OLD, progressing="True")]
    now = parse_time(at(minutes=30))
    assert now is not None
    try:
        status = assess(cv(NEW, history, progressing="True" if progressing else "False"), cos, now, "", machines)
    except StatusUnavailable as err:
        assert "\n" not in str(err)
        return
    for details in ("none", "all", "nodes"):
        render(status, details)
    orjson.dumps(to_data(status))


any_shape = st.recursive(st.none() | st.booleans() | st.integers(-2, 2) | word,
                         lambda inner: st.lists(inner, max_size=2) | st.dictionaries(word, inner, max_size=2),
                         max_leaves=4)


def from_file_target(pools: list[Any], nodes: list[Any], configs: list[Any], details: str) -> None:
    """The same objects saved beside a ClusterVersion updating and machine-config still at the old version, read
    by ``cvo upgrade status --from-file``: exit 0, or one ``error:`` line; never a traceback."""
    import tempfile
    from pathlib import Path

    import orjson

    from tests.support.fuzz_targets import check_read_command, run_cli

    history = [entry(NEW, "Partial", at()), entry(OLD, "Completed", at(days=-9), at(days=-9, minutes=50))]
    items = [cv(NEW, history), co("machine-config", OLD, progressing="True"), *pools, *nodes, *configs]
    with tempfile.TemporaryDirectory(prefix="cvo-fuzz-") as tmp:
        path = Path(tmp) / "objects.json"
        path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        check_read_command(*run_cli(["upgrade", "status", "--from-file", str(path), "--details", details]), False)


def operator_rules_target(pools: list[Any], configs: list[Any]) -> None:
    """The machine-config operator's rules for its ClusterOperator over pools of any shape (status.go
    ``machineConfigPoolStatus``, ``syncUpgradeableStatus``, sync.go's poll): text, a condition, or its one error."""
    from cvo.operators.machine_config_operator import (
        Fatal,
        pool_status_text,
        required_pools_error,
        upgradeable,
    )

    objects = [p for p in pools if isinstance(p, dict)]
    rendered = {str(c["metadata"]["name"]): c for c in configs if isinstance(c, dict) and isinstance(
        c.get("metadata"), dict) and isinstance(c["metadata"].get("name"), str)}
    for pool in objects:
        assert isinstance(pool_status_text(pool), str)
    upgradeable(objects)
    try:
        error = required_pools_error(objects, NEW, rendered)
    except Fatal as err:
        error = str(err)
    assert error is None or isinstance(error, str)


def simulated_operator_target(pools: list[Any], nodes: list[Any], configs: list[Any]) -> None:
    """The simulated machine-config operator (what ``cvo sim-operators`` runs) on an embedded cluster that already
    holds pools, nodes and configs of odd shapes (those its API server takes): it installs, updates and runs an
    hour of virtual time; no request of its, and no task of its, ends in an exception."""
    import asyncio
    from datetime import UTC, datetime
    from pathlib import Path

    import yaml

    from cvo.clock import Clock, run_virtual
    from cvo.cluster.api import ApiError
    from cvo.cluster.embedded.server import SimCluster
    from cvo.operators.machine_behaviour import MachinesBehaviour, PoolBehaviour
    from cvo.operators.machine_config import MachineConfigSimulator

    manifests = Path(__file__).resolve().parents[2] / "payloads" / "demo-4.16.0" / "release-manifests"

    async def main() -> None:
        clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
        cluster = SimCluster(clock=clock)
        for crd in ("0000_80_machine-config_00_machineconfigpools.crd.yaml",
                    "0000_80_machine-config_00_machineconfigs.crd.yaml"):
            await cluster.create(yaml.safe_load((manifests / crd).read_text()))
        for obj in [*configs, *pools, *nodes]:
            if not isinstance(obj, dict):
                continue
            try:
                created = await cluster.create({k: v for k, v in obj.items() if k != "status"})
                if isinstance(obj.get("status"), dict):
                    await cluster.update_status({**created, "status": obj["status"]})
            except ApiError:
                pass  # refused as the API server refuses it: not there
        machines = MachineConfigSimulator(cluster, clock, MachinesBehaviour(
            (PoolBehaviour("master", 2), PoolBehaviour("worker", 2, "50%"), PoolBehaviour("infra", 1)),
            drain=60.0, reboot=60.0, fail=frozenset({"worker-1"})))
        try:
            await machines.install(OLD)
            update = asyncio.create_task(machines.update(NEW))
            await asyncio.sleep(3600)
            tasks = [update, *machines._pools.values(), *([machines.required._task] if machines.required._task else [])]
            for task in tasks:
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
            update.cancel()
        finally:
            await machines.stop()

    run_virtual(main)


TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {
    "machines": (st.tuples(st.lists(pool_objects | any_shape, max_size=4), st.lists(node_objects | any_shape, max_size=6),
                           st.lists(config_objects | any_shape, max_size=4), st.booleans()),
                 lambda args: machines_target(*args)),
    "machines-from-file": (st.tuples(st.lists(pool_objects | any_shape, max_size=3),
                                     st.lists(node_objects, max_size=5), st.lists(config_objects, max_size=3),
                                     st.sampled_from(["none", "all", "nodes"])),
                           lambda args: from_file_target(*args)),
    "machine-config-rules": (st.tuples(st.lists(pool_objects | any_shape, max_size=4),
                                       st.lists(config_objects | any_shape, max_size=4)),
                             lambda args: operator_rules_target(*args)),
    "machine-config-operator": (st.tuples(st.lists(pool_objects, max_size=3), st.lists(node_objects, max_size=4),
                                          st.lists(config_objects, max_size=3)),
                                lambda args: simulated_operator_target(*args)),
}
