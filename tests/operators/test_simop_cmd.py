"""``cvo sim-operators``: the simulated operators as a process of their own, here against the embedded
cluster's state file on its virtual clock: which releases it simulates, what it reports and when, following
the ClusterVersion to a new release, stopping (--once, --duration, Ctrl-C) and saving."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cvo.cli.main import main
from cvo.clock import Clock, run_virtual, to_rfc3339
from cvo.cluster.api import ApiError, ApiErrorKind, Ref, co_ref, cv_ref
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.operators.behaviour import Behaviour, Behaviours
from cvo.operators.process import SimOperators, describe_report, release_images
from cvo.payload.loader import load_release
from tests.support.helpers import REPO, ReleaseFactory, cluster_operator, obj, state_kind

EPOCH = datetime(2025, 7, 1, tzinfo=UTC)
OLD, NEW = "4.16.0", "4.16.3"
FOO_DEPLOY = Ref("apps", "Deployment", "ns", "foo-operator")


def deployment(version: str) -> dict[str, Any]:
    container = {"name": "operator", "image": f"quay.io/demo/foo:{version}",
                 "env": [{"name": "RELEASE_VERSION", "value": version}]}
    return obj("Deployment", "foo-operator", "ns", api="apps/v1", spec={
        "replicas": 1, "selector": {"matchLabels": {"app": "foo"}},
        "template": {"metadata": {"labels": {"app": "foo"}}, "spec": {"containers": [container]}}})


def release(make_release: ReleaseFactory, version: str) -> Path:
    return make_release({
        "0000_10_foo_00_namespace.yaml": obj("Namespace", "ns"),
        "0000_10_foo_05_deployment.yaml": deployment(version),
        "0000_10_foo_06_clusteroperator.yaml": cluster_operator("foo", version, foo_operand=f"1.{version}"),
    }, version=version, name=f"r-{version}")


def clusterversion(desired: Path | str | None, completed: Path | None = None, version: str = OLD) -> dict[str, Any]:
    image = desired if isinstance(desired, str) else f"file://{desired.resolve()}" if desired else None
    history = []
    if completed is not None:
        history.append({"state": "Completed", "image": f"file://{completed.resolve()}", "version": OLD,
                        "startedTime": to_rfc3339(EPOCH), "completionTime": to_rfc3339(EPOCH), "verified": False})
    status: dict[str, Any] = {"history": history}
    if image:
        status["desired"] = {"version": version, "image": image}
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
            "spec": {"clusterID": "00000000-0000-4000-8000-000000000001"}, "status": status}


def make_state(path: Path, cv: dict[str, Any] | None, deployed: str | None) -> None:
    """A state file: the ClusterVersion and foo's Deployment at ``deployed``, no ClusterOperator yet."""

    async def build() -> None:
        cluster = SimCluster(Clock(EPOCH), path=path, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        if cv is not None:
            created = await cluster.create(cv)
            await cluster.update_status({**created, "status": cv["status"]})
        if deployed is not None:
            await cluster.create(deployment(deployed))
        await cluster.close()

    run_virtual(build)


def load_state(path: Path) -> tuple[datetime, dict[str, Any] | None]:
    co = next(iter(state_kind(path, "ClusterOperator")), None)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        clock = conn.execute("SELECT clock FROM meta").fetchone()[0]
    finally:
        conn.close()
    return datetime.fromtimestamp(clock, UTC), co


def conditions(co: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in ((co or {}).get("status") or {}).get("conditions") or []}


def versions(co: dict[str, Any] | None) -> dict[str, str]:
    return {v["name"]: v["version"] for v in ((co or {}).get("status") or {}).get("versions") or []}


@pytest.fixture
def behaviours(tmp_path: Path) -> Path:
    path = tmp_path / "operators.yaml"
    path.write_text("default:\n  delay: 90s\n")
    return path


def sim(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["sim-operators", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


# --- the command on a state file ---------------------------------------------------------------------------


def test_simulates_the_clusterversions_release_and_reports_after_the_delay(
        make_release: ReleaseFactory, tmp_path: Path, behaviours: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rel = release(make_release, OLD)
    path = tmp_path / "state.json"
    make_state(path, clusterversion(rel), deployed=OLD)

    code, lines, err = sim(capsys, "--state", str(path), "--operators", str(behaviours), "--once")
    assert code == 0, err
    assert f"simulating the operators of {OLD} (file://{rel.resolve()})" in err
    assert "1 operator of 4.16.0: foo" in err
    t0, t90 = to_rfc3339(EPOCH), to_rfc3339(EPOCH + timedelta(seconds=90))
    assert lines == [
        f"{t0} clusteroperator/foo created",  # an operator creates its ClusterOperator when it is missing
        f"{t0} clusteroperator/foo: Available=False (Starting) Progressing=True (Installing) Degraded=False",
        f"{t90} clusteroperator/foo: Available=True Progressing=False Degraded=False; "
        f"versions operator={OLD} foo_operand=1.{OLD}",
    ]
    assert "done after 90s on the cluster's clock: 3 reports, 0 failed writes" in err

    saved_at, co = load_state(path)
    assert saved_at == EPOCH + timedelta(seconds=90)  # the state file's timeline continues
    assert versions(co) == {"operator": OLD, "foo_operand": f"1.{OLD}"}
    assert conditions(co)["Available"]["lastTransitionTime"] == t90

    # Nothing left to do: a second run reports nothing and leaves the status alone.
    code, lines, _ = sim(capsys, "--state", str(path), "--operators", str(behaviours), "--once")
    assert (code, lines) == (0, [])
    assert load_state(path)[1] == co


def test_release_given_on_the_command_line_without_a_clusterversion(
        make_release: ReleaseFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rel = release(make_release, OLD)
    path = tmp_path / "state.json"
    make_state(path, None, deployed=OLD)
    code, lines, err = sim(capsys, "--state", str(path), "--release", str(rel), "--once")
    assert code == 0, err
    assert "1 operator of 4.16.0: foo" in err
    assert lines[-1].endswith(f"clusteroperator/foo: Available=True Progressing=False Degraded=False; "
                              f"versions operator={OLD} foo_operand=1.{OLD}")


def test_duration_runs_that_long_on_the_virtual_clock(
        make_release: ReleaseFactory, tmp_path: Path, behaviours: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rel = release(make_release, OLD)
    path = tmp_path / "state.json"
    make_state(path, clusterversion(rel), deployed=OLD)
    code, lines, err = sim(capsys, "--state", str(path), "--operators", str(behaviours), "--duration", "1m")
    assert code == 0, err
    assert len(lines) == 2 and "Progressing=True (Installing)" in lines[1]
    saved_at, co = load_state(path)
    assert saved_at == EPOCH + timedelta(minutes=1)
    assert conditions(co)["Available"]["status"] == "False"
    # The next run continues the rollout where the timeline stands (an operator restarting).
    code, lines, _ = sim(capsys, "--state", str(path), "--operators", str(behaviours), "--once")
    assert code == 0
    assert lines == [f"{to_rfc3339(EPOCH + timedelta(seconds=150))} clusteroperator/foo: Available=True "
                     f"Progressing=False Degraded=False; versions operator={OLD} foo_operand=1.{OLD}"]


def test_nothing_to_simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "state.json"
    code, lines, err = sim(capsys, "--state", str(path), "--once")
    assert (code, lines) == (0, [])
    assert "waiting for a ClusterVersion whose status.desired.image is a release" in err

    make_state(path, clusterversion("quay.io/openshift-release-dev/ocp-release@sha256:aa"), deployed=None)
    code, lines, err = sim(capsys, "--state", str(path), "--once")
    assert (code, lines) == (0, [])
    assert "cannot simulate the operators of quay.io/openshift-release-dev/ocp-release@sha256:aa: " in err
    assert "image quay.io/openshift-release-dev/ocp-release@sha256:aa: not a pull spec" in err


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = sim(capsys, "--state", "none", "--release", str(tmp_path / "missing"), "--once")
    assert code == 2 and f"--release {tmp_path / 'missing'}: " in err and "not a directory" in err
    code, _, err = sim(capsys, "--state", "none", "--duration", "a while")
    assert code == 2 and "--duration" in err
    bad = tmp_path / "operators.yaml"
    bad.write_text("foo: {delay: never}\n")
    code, _, err = sim(capsys, "--state", "none", "--operators", str(bad), "--once")
    assert code == 2 and "foo.delay" in err
    with pytest.raises(SystemExit) as exit_:
        main(["sim-operators", "--once", "--duration", "1m"])
    assert exit_.value.code == 2


def test_ctrl_c_stops_cleanly_with_130_and_saves(make_release: ReleaseFactory, tmp_path: Path) -> None:
    rel = release(make_release, OLD)
    path = tmp_path / "state.json"
    make_state(path, clusterversion(rel), deployed=OLD)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "cvo", "sim-operators", "--state", str(path)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]  # created, Progressing, Available: then it idles
        assert "Available=True" in lines[2], lines
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "sim-operators: interrupted after" in err
    assert versions(load_state(path)[1])["operator"] == OLD


# --- following the ClusterVersion ----------------------------------------------------------------------------


def test_follows_the_clusterversion_to_a_new_release(make_release: ReleaseFactory) -> None:
    old, new = load_release(release(make_release, OLD)), load_release(release(make_release, NEW))
    out, err = io.StringIO(), io.StringIO()

    async def test() -> tuple[dict[str, Any] | None, float, SimOperators]:
        loop = asyncio.get_running_loop()
        clock = Clock(EPOCH)
        cluster = SimCluster(clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        created = await cluster.create(clusterversion(old.directory))
        await cluster.update_status({**created, "status": clusterversion(old.directory)["status"]})
        await cluster.create(deployment(OLD))
        loaded = {old.image: old, new.image: new}
        runner = SimOperators(cluster, clock, Behaviours(default=Behaviour(delay=60)), [],
                              load=loaded.__getitem__, out=out, err=err)
        stop = asyncio.Event()
        follower = asyncio.create_task(runner.watch_cluster_version(stop))
        await asyncio.sleep(100)
        assert versions(await cluster.get(co_ref("foo")))["operator"] == OLD

        # cvo upgrade --to NEW: the desired release changes, then the sweep applies its Deployment.
        cv = await cluster.get(cv_ref())
        assert cv is not None
        await cluster.update_status({**cv, "status": clusterversion(new.directory, completed=old.directory,
                                                                    version=NEW)["status"]})
        await asyncio.sleep(10)
        live = await cluster.get(FOO_DEPLOY)
        assert live is not None
        await cluster.update({**live, "spec": deployment(NEW)["spec"]})
        switched = loop.time()
        await asyncio.sleep(100)
        stop.set()
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
        co = await cluster.get(co_ref("foo"))
        await runner.stop()
        return co, switched, runner

    co, switched, runner = run_virtual(test)
    assert versions(co) == {"operator": NEW, "foo_operand": f"1.{NEW}"}
    assert [r.version for r in runner.releases.values()] == [OLD, NEW]
    assert runner.restarts == 2 and runner.failures == 0
    assert "ClusterVersion: simulating the operators of 4.16.3" in err.getvalue()
    reports = out.getvalue().splitlines()
    assert reports[-1] == (f"{to_rfc3339(EPOCH + timedelta(seconds=switched + 60))} clusteroperator/foo: "
                           f"Available=True Progressing=False Degraded=False; versions operator={NEW} "
                           f"foo_operand=1.{NEW}")
    assert "Progressing=True (Upgrading)" in reports[-2]


def test_a_clusterversion_that_cannot_be_read_is_read_and_watched_again(make_release: ReleaseFactory) -> None:
    """The follower is an informer: a read of the ClusterVersion that fails is said once, then the watch is
    opened again and the ClusterVersion read again 1 s later."""
    old = load_release(release(make_release, OLD))
    out, err = io.StringIO(), io.StringIO()

    class Refusing(SimCluster):
        refusals = 2

        async def get(self, ref: Ref) -> dict[str, Any] | None:
            if ref == cv_ref() and self.refusals:
                self.refusals -= 1
                raise ApiError(ApiErrorKind.FORBIDDEN, "clusterversions is forbidden (for a while)", ref)
            return await super().get(ref)

    async def test() -> tuple[float | None, list[str]]:
        loop = asyncio.get_running_loop()
        clock = Clock(EPOCH)
        cluster = Refusing(clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        created = await cluster.create(clusterversion(old.directory))
        await cluster.update_status({**created, "status": clusterversion(old.directory)["status"]})
        runner = SimOperators(cluster, clock, Behaviours(default=Behaviour(delay=60)), [],
                              load={old.image: old}.__getitem__, out=out, err=err)
        stop = asyncio.Event()
        follower = asyncio.create_task(runner.watch_cluster_version(stop))
        await asyncio.wait_for(runner.ready.wait(), 10)
        ready_at = loop.time()
        stop.set()
        await follower
        await runner.stop()
        return ready_at, [line for line in err.getvalue().splitlines() if "trying again" in line]

    ready_at, said = run_virtual(test)
    assert ready_at == 2.0
    assert said == ["sim-operators: reading the ClusterVersion: clusterversions is forbidden (for a while); "
                    "trying again"] * 2


def test_release_images_of_a_clusterversion(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert release_images(None) == []
    assert release_images(clusterversion(a)) == [f"file://{a.resolve()}"]
    assert release_images(clusterversion(b, completed=a)) == [f"file://{a.resolve()}", f"file://{b.resolve()}"]
    assert release_images(clusterversion(a, completed=a)) == [f"file://{a.resolve()}"]


def test_report_lines() -> None:
    co = {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": "etcd"},
          "status": {"conditions": [
              {"type": "Degraded", "status": "True", "reason": "SimulatedDegradation"},
              {"type": "Available", "status": "True", "reason": "AsExpected"},
              {"type": "Progressing", "status": "False", "reason": "AsExpected"}],
              "versions": [{"name": "operator", "version": "4.16.3"}]}}
    assert describe_report("update_status", co) == (
        "clusteroperator/etcd: Available=True Progressing=False Degraded=True (SimulatedDegradation); "
        "versions operator=4.16.3")
    oc = {"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
          "metadata": {"name": "etcd", "namespace": "openshift-etcd-operator"},
          "spec": {"conditions": [{"type": "Upgradeable", "status": "False", "reason": "StorageMigration",
                                   "message": "migrating"}]}}
    assert describe_report("update", oc) == (
        "operatorcondition openshift-etcd-operator/etcd: Upgradeable=False (StorageMigration): migrating")
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "openshift-etcd"}}
    assert describe_report("create", ns) == "namespace/openshift-etcd created"
    assert describe_report("create", {**co, "status": {}}) == "clusteroperator/etcd created"


def test_demo_payload_from_a_partial_upgrade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An upgrade that stopped half-way (its operators went with it): sim-operators finishes their rollouts."""
    payloads = REPO / "payloads"
    path = tmp_path / "state.json"
    demo = ["--state", str(path), "--operators", str(payloads / "demo-operators.yaml")]
    assert main(["install", str(payloads / "demo-4.16.0"), *demo]) == 0
    assert main(["upgrade", "--to", str(payloads / "demo-4.16.3"), "--timeout", "2m", *demo]) == 1
    capsys.readouterr()
    code, lines, err = sim(capsys, *demo, "--once")
    assert code == 0, err
    assert "15 operators of 4.16.0, 4.16.3" in err
    assert lines and all(" clusteroperator/" in line for line in lines)
    assert lines[-1].split(" ", 1)[1].startswith("clusteroperator/")
    assert all("operator=4.16.3" in line for line in lines if "Available=True" in line)
    cos = state_kind(path, "ClusterOperator")
    upgraded = {o["metadata"]["name"] for o in cos if versions(o)["operator"] == NEW}
    assert {line.split("clusteroperator/")[1].split(":")[0] for line in lines} <= upgraded
    # The upgrade now continues where it stopped and completes.
    assert main(["upgrade", "--to", str(payloads / "demo-4.16.3"), *demo]) == 0



# --- on a real API server ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_cluster() -> Any:
    """A control plane of its own (etcd + kube-apiserver, tests/e2e/controlplane.py), bootstrapped by the test."""
    from tests.e2e.controlplane import ControlPlane, ensure_binaries

    try:
        ensure_binaries()
        cp = ControlPlane().start()
    except Exception as err:
        pytest.fail(f"the test control plane did not start:\n{err}", pytrace=False)
    try:
        yield cp
    finally:
        cp.stop()


def _service_account_kubeconfig(cp: Any, target: Path) -> None:
    """A kubeconfig for the ServiceAccount cvo-sim-operators (a TokenRequest), to check its ClusterRole.

    Plain HTTPS, not the kubernetes client: its models break when another test froze time with freezegun.
    """
    import json
    import ssl
    import urllib.request

    import yaml

    request = urllib.request.Request(
        f"{cp.server_url}/api/v1/namespaces/openshift-cluster-version/serviceaccounts/cvo-sim-operators/token",
        data=json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"expirationSeconds": 3600}}).encode(),
        headers={"Authorization": f"Bearer {cp.token}", "Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=cp.ca_path), timeout=30) as resp:
        token = json.loads(resp.read())["status"]["token"]
    kubeconfig = yaml.safe_load(Path(cp.kubeconfig_path).read_text())
    kubeconfig["users"] = [{"name": "sim-operators", "user": {"token": token}}]
    for context in kubeconfig["contexts"]:
        context["context"]["user"] = "sim-operators"
    target.write_text(yaml.safe_dump(kubeconfig))


@pytest.mark.e2e
@pytest.mark.timeout(1800)  # as tests/e2e/conftest.py's E2E_TIMEOUT: real_cluster may build the control plane
def test_on_a_real_api_server_bootstrap_then_sim_operators_under_their_own_service_account(
        real_cluster: Any, make_release: ReleaseFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cvo.cluster.api import ApiError, ApiErrorKind
    from cvo.cluster.kube import KubeCluster

    admin = real_cluster.kubeconfig_path
    assert main(["bootstrap", "--kubeconfig", admin]) == 0
    assert all(line.endswith(" created") for line in capsys.readouterr().out.splitlines())
    assert main(["bootstrap", "--kubeconfig", admin]) == 0  # the server's defaults do not count as drift
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 11 and all(line.endswith(" unchanged") for line in lines)  # manifests/ holds 11 objects

    rel = release(make_release, OLD)
    cv = clusterversion(rel)
    cv["status"].update(availableUpdates=None, observedGeneration=1, versionHash="", history=[
        {"state": "Partial", "image": f"file://{rel.resolve()}", "version": OLD, "verified": False,
         "startedTime": to_rfc3339(EPOCH), "completionTime": None}])

    async def setup(cluster: KubeCluster) -> None:
        invalid = clusterversion(rel)
        del invalid["spec"]["clusterID"]
        with pytest.raises(ApiError) as err:  # OpenShift's schema is in force
            await cluster.create(invalid)
        assert err.value.kind is ApiErrorKind.INVALID and "spec.clusterID: Required value" in str(err.value)
        created = await cluster.create(cv)
        await cluster.update_status({**created, "status": cv["status"]})
        await cluster.create(obj("Namespace", "ns"))
        await cluster.create(deployment(OLD))

    async def run_admin(body: Any) -> Any:
        cluster = KubeCluster.from_kubeconfig(admin)
        try:
            await cluster.connect()
            return await body(cluster)
        finally:
            await cluster.close()

    from cvo.clock import run_real

    run_real(lambda: run_admin(setup))
    sa = tmp_path / "sim.kubeconfig"
    _service_account_kubeconfig(real_cluster, sa)
    fast = tmp_path / "operators.yaml"
    fast.write_text("default:\n  delay: 1s\n")
    code, lines, err = sim(capsys, "--kubeconfig", str(sa), "--operators", str(fast), "--once")
    assert code == 0, err
    assert "0 failed writes" in err
    assert [line.split(" ", 1)[1] for line in lines] == [
        "clusteroperator/foo created",
        "clusteroperator/foo: Available=False (Starting) Progressing=True (Installing) Degraded=False",
        f"clusteroperator/foo: Available=True Progressing=False Degraded=False; versions operator={OLD} "
        f"foo_operand=1.{OLD}",
    ]
    co = run_real(lambda: run_admin(lambda cluster: cluster.get(co_ref("foo"))))
    assert versions(co) == {"operator": OLD, "foo_operand": f"1.{OLD}"}


def test_a_release_given_up_front_rolls_out_when_the_clusterversion_moves_to_it(make_release: ReleaseFactory) -> None:
    """Both releases known from the start, with the same Deployment (only the versions the operator
    reports differ): the one the ClusterVersion desires is the one the operator runs."""

    def same_deployment_release(version: str) -> Path:
        dep = deployment(OLD)
        dep["spec"]["template"]["spec"]["containers"][0].pop("env")  # no RELEASE_VERSION to tell them apart
        return make_release({
            "0000_10_foo_05_deployment.yaml": dep,
            "0000_10_foo_06_clusteroperator.yaml": cluster_operator("foo", version),
        }, version=version, name=f"same-{version}")

    old, new = load_release(same_deployment_release(OLD)), load_release(same_deployment_release(NEW))
    out, err = io.StringIO(), io.StringIO()

    async def test() -> tuple[dict[str, str], dict[str, str], SimOperators]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        created = await cluster.create(clusterversion(old.directory))
        await cluster.update_status({**created, "status": clusterversion(old.directory)["status"]})
        dep = deployment(OLD)
        dep["spec"]["template"]["spec"]["containers"][0].pop("env")
        await cluster.create(dep)

        def no_load(image: str) -> Any:
            raise AssertionError(f"{image} was given with --release: it must not be loaded again")

        runner = SimOperators(cluster, clock, Behaviours(default=Behaviour(delay=60)), [new, old],
                              load=no_load, out=out, err=err)
        stop = asyncio.Event()
        follower = asyncio.create_task(runner.watch_cluster_version(stop))
        await asyncio.sleep(100)
        before = versions(await cluster.get(co_ref("foo")))
        cv = await cluster.get(cv_ref())
        assert cv is not None
        await cluster.update_status({**cv, "status": clusterversion(new.directory, completed=old.directory,
                                                                    version=NEW)["status"]})
        await asyncio.sleep(100)
        stop.set()
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
        after = versions(await cluster.get(co_ref("foo")))
        await runner.stop()
        return before, after, runner

    before, after, runner = run_virtual(test)
    assert before == {"operator": OLD}
    assert after == {"operator": NEW}
    assert runner.restarts == 1 and [r.version for r in runner.releases.values()] == [OLD, NEW]
