"""The simulated machine-config operator on a real API server whose controllers act (kwok Nodes, the
disruption controller): ``cvo sim-operators`` beside ``cvo install`` and ``cvo upgrade``, all on the real clock.

The control plane is this module's own (``ControlPlane(acting=True)``, about 5 s to start): the ClusterVersion
is a singleton, and the master pool takes the plane's kwok Nodes (every role, as on a compact cluster) and
cordons and drains them, which the session's shared acting plane must not see.  The worker pool selects no
Node of the plane's, so sim-operators creates its two (kwok acts for them as for any Node).

One test: the master pool is done when ``cvo upgrade`` completes; worker-0's drain is held by a real
PodDisruptionBudget (the Eviction API's 429) until the test relaxes it; ``cvo upgrade status --kubeconfig``
shows the node table meanwhile, and "not updating" once the worker pool is done.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from cvo.cluster.api import Ref
from cvo.cluster.kube import KubeCluster
from cvo.objects.machineconfig import GROUP
from cvo.operators.machine_config import rendered_name
from cvo.runner.durations import RECORDS_REF
from cvo.status.node_state import CURRENT_CONFIG, STATE
from cvo.status.update_records import parse_records

from .controlplane import ACTING_BINARIES, ControlPlane, ensure_binaries

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]  # as conftest.py's E2E_TIMEOUT: the build may run first
T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
OLD, NEW = REPO / "payloads" / "demo-4.16.0", REPO / "payloads" / "demo-4.16.3"
NS = "shop"
BEHAVIOURS = {"default": {"delay": "1s"},
              "machine-config": {"delay": "1s", "nodes": {"drain": "1s", "reboot": "1s"},
                                 "pools": {"master": 3, "worker": 2}}}
TIMEOUT = 90.0  # seconds for any one wait; each takes a few on an idle 2-core machine


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    try:
        ensure_binaries(ACTING_BINARIES)
        cp = ControlPlane(acting=True).start()
    except Exception as err:
        pytest.fail(f"the acting control plane did not start:\n{err}", pytrace=False)
    try:
        yield cp
    finally:
        cp.stop()


def cvo(cp: ControlPlane, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-m", "cvo", *args, "--kubeconfig", cp.kubeconfig_path], cwd=REPO,
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"cvo {' '.join(args)} did not finish in {timeout:g}s")


def on(cp: ControlPlane, body: Callable[[KubeCluster], Any]) -> Any:
    async def main() -> Any:
        cluster = KubeCluster.from_kubeconfig(cp.kubeconfig_path)
        try:
            return await body(cluster)
        finally:
            await cluster.close()

    return asyncio.run(main())


def eventually(what: str, probe: Callable[[], T], alive: subprocess.Popen[bytes] | None = None) -> T:
    deadline = time.monotonic() + TIMEOUT
    while not (value := probe()):
        if alive is not None and alive.poll() is not None:
            pytest.fail(f"waiting for {what}: sim-operators exited with {alive.returncode}")
        if time.monotonic() > deadline:
            pytest.fail(f"waiting for {what}: not after {TIMEOUT:g}s (last: {value!r})")
        time.sleep(0.25)
    return value


def machines(cp: ControlPlane) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pools and the nodes, by name."""
    async def body(cluster: KubeCluster) -> tuple[dict[str, Any], dict[str, Any]]:
        pools = await cluster.list(GROUP, "MachineConfigPool")
        nodes = await cluster.list("", "Node")
        return ({p["metadata"]["name"]: p for p in pools}, {n["metadata"]["name"]: n for n in nodes})
    result: tuple[dict[str, Any], dict[str, Any]] = on(cp, body)
    return result


def annotation(node: dict[str, Any], key: str) -> str:
    return str((node["metadata"].get("annotations") or {}).get(key, ""))


def pool_done(pool: dict[str, Any], version: str, count: int) -> bool:
    status = pool.get("status") or {}
    return bool(status.get("updatedMachineCount") == count == status.get("machineCount")
                and (status.get("configuration") or {}).get("name") == rendered_name(pool["metadata"]["name"], version))


def guarded_database(cp: ControlPlane) -> str:
    """One replica pinned to worker-0 and a budget that allows no disruption of it; the Pod's name."""
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "db", "namespace": NS},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "db"}},
                           "template": {"metadata": {"labels": {"app": "db"}},
                                        "spec": {"nodeSelector": {"kubernetes.io/hostname": "worker-0"},
                                                 "containers": [{"name": "db", "image": "registry.invalid/db:1"}]}}}}
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db", "namespace": NS},
              "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}}

    async def create(cluster: KubeCluster) -> None:
        await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        while await cluster.get(Ref("", "ServiceAccount", NS, "default")) is None:  # admission refuses Pods before
            await asyncio.sleep(0.2)
        await cluster.create(deployment)
        await cluster.create(budget)

    on(cp, create)

    async def running(cluster: KubeCluster) -> str:
        pods = [p for p in await cluster.list("", "Pod", NS) if (p.get("status") or {}).get("phase") == "Running"]
        pdb = await cluster.get(Ref("policy", "PodDisruptionBudget", NS, "db")) or {}
        held = (pdb.get("status") or {}).get("currentHealthy") == 1 and pdb["status"].get("disruptionsAllowed") == 0
        return pods[0]["metadata"]["name"] if len(pods) == 1 and held else ""

    name: str = eventually("db running on worker-0 with its budget allowing no disruption", lambda: on(cp, running))
    return name


def test_a_worker_pool_rolls_after_the_control_plane_and_a_budget_holds_its_drain(
        plane: ControlPlane, tmp_path: Path) -> None:
    started = time.monotonic()
    res = cvo(plane, "bootstrap")
    assert res.returncode == 0, res.stderr
    behaviours = tmp_path / "operators.yaml"
    behaviours.write_text(yaml.safe_dump(BEHAVIOURS))
    err_path = tmp_path / "sim-operators.stderr"
    with open(tmp_path / "sim-operators.stdout", "wb") as out, open(err_path, "wb") as err:
        sim = subprocess.Popen([sys.executable, "-m", "cvo", "-v", "--log-format", "json", "sim-operators",
                                "--operators", str(behaviours), "--kubeconfig", plane.kubeconfig_path],
                               cwd=REPO, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    try:
        res = cvo(plane, "install", str(OLD))
        assert res.returncode == 0, res.stderr
        pools, nodes = eventually("the pools at 4.16.0", lambda: (m := machines(plane)) and set(m[0]) == {
            "master", "worker"} and all(pool_done(p, "4.16.0", n) for p, n in zip(
                (m[0]["master"], m[0]["worker"]), (3, 2), strict=True)) and m, alive=sim)
        # The master pool took the plane's own Nodes; the worker pool, selecting none of them, got its own.
        assert sorted(nodes) == sorted([*plane.node_names, "worker-0", "worker-1"])
        assert {n: annotation(nodes[n], CURRENT_CONFIG) for n in plane.node_names} == dict.fromkeys(
            plane.node_names, rendered_name("master", "4.16.0"))
        victim = guarded_database(plane)

        res = cvo(plane, "upgrade", "--to", str(NEW))
        assert res.returncode == 0, res.stderr
        pools, nodes = machines(plane)
        assert pool_done(pools["master"], "4.16.3", 3)  # the ClusterOperator waited for the masters ...
        assert not pool_done(pools["worker"], "4.16.3", 2)  # ... not for the workers
        # the update's record holds each master's picked, drained and done, as cvo watched them on the API server
        records = parse_records(on(plane, lambda c: c.get(RECORDS_REF)))
        masters = records[-1].pools["master"]
        assert (records[-1].version, masters.size, masters.max_unavailable) == ("4.16.3", 3, 1)
        assert sorted(masters.nodes) == sorted(plane.node_names)
        assert all(t.drained is not None and t.done is not None and t.started <= t.drained <= t.done
                   for t in masters.nodes.values())

        def refused() -> bool:  # the API server's 429, as sim-operators' backend logged it
            events = [json.loads(line) for line in err_path.read_text().splitlines() if line.startswith("{")]
            return any(e.get("event") == "eviction refused by a PodDisruptionBudget"
                       and e.get("pod") == f"Pod {NS}/{victim}" for e in events)

        eventually(f"the eviction of {victim} refused by its budget", refused, alive=sim)
        _, nodes = machines(plane)
        held = nodes["worker-0"]
        assert (annotation(held, STATE), annotation(held, CURRENT_CONFIG)) == ("Working", rendered_name("worker", "4.16.0"))
        assert held["spec"].get("unschedulable") is True
        assert on(plane, lambda c: c.get(Ref("", "Pod", NS, victim))) is not None
        res = cvo(plane, "upgrade", "status")
        assert res.returncode == 0, res.stderr
        assert "Update to 4.16.3 successfully completed" in res.stdout
        assert "All control plane nodes successfully updated to 4.16.3" in res.stdout
        assert "\nworker        Progressing   0% (0/2)     1 Available, 1 Progressing, 1 Draining\n" in res.stdout
        assert "\nworker-0   Progressing   Draining   4.16.0 " in res.stdout
        assert "\nworker-1   Outdated      Pending    4.16.0 " in res.stdout

        async def relax(cluster: KubeCluster) -> None:
            pdb = await cluster.get(Ref("policy", "PodDisruptionBudget", NS, "db"))
            assert pdb is not None
            pdb["spec"]["minAvailable"] = 0
            await cluster.update(pdb)

        on(plane, relax)
        pools, nodes = eventually("the worker pool at 4.16.3", lambda: (m := machines(plane))
                                  and pool_done(m[0]["worker"], "4.16.3", 2) and m, alive=sim)
        assert not any(n["spec"].get("unschedulable") for n in nodes.values())
        assert on(plane, lambda c: c.get(Ref("", "Pod", NS, victim))) is None  # evicted, not waited out
        res = cvo(plane, "upgrade", "status")
        assert res.returncode == 0 and res.stdout == "The cluster is not updating.\n", res.stdout + res.stderr
    finally:
        sim.terminate()
        try:
            sim.wait(timeout=15)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait()
        print(f"\nmachine-config on the acting plane: {time.monotonic() - started:.1f}s wall")
    assert sim.returncode == 143, err_path.read_text()[-3000:]
