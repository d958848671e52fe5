"""End-to-end flows on the real test control plane, driven through the ``cvo`` command line.

Every test gets a control plane of its own (etcd + kube-apiserver, about 3 s to start), bootstrapped
with ``cvo bootstrap``: the ClusterVersion is a singleton and the payloads own cluster-scoped
objects, so tests that share a server would depend on each other's order.  The session fixture
``control_plane`` is still requested: it builds the binaries when they are missing, fails (never
skips) when it cannot, and marks these tests ``e2e``.

cvo runs as subprocesses, as a user runs it: ``cvo sim-operators`` in the background standing in
for the payload's operators, and ``cvo install`` / ``upgrade`` / ``status`` / ``override`` in the
foreground, all on the real clock.  Every wait is bounded: subprocesses by their timeouts, polls by
deadlines.

1. the demo release installed, with the ClusterOperators, OperatorConditions and their RBAC (owned by
   the OperatorCondition);
2. a minor upgrade blocked by an operator's ``Upgradeable=False`` and let through by an admin override,
   with ``cvo sim-operators`` running as its own service account;
3. the API server killed (``kill -9``) and restarted in the middle of an install;
4. ``cvo install`` killed (SIGKILL) mid-way and rerun: it resumes the ClusterVersion it wrote;
5. the 5.0 corpus swept into the server: the kinds only OpenShift's aggregated API servers serve
   fail with ``UpdatePayloadResourceTypeMissing`` while every independent branch is applied.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from cvo.cluster.api import CLUSTER_OPERATOR, Ref, cv_ref
from cvo.cluster.kube import KubeCluster
from cvo.gates.olm import ENV_NAME, OC_GROUP, OC_KIND
from cvo.payload.graph import Mode, build_graph, make_tasks
from cvo.payload.loader import Release, load_release
from cvo.payload.operators import operator_deployments
from tests.support.faultproxy import FaultPlan, FaultProxy

from .conftest import run_with
from .controlplane import ControlPlane
from .identities import service_account_kubeconfig

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]
PAYLOADS = REPO / "payloads"
DEMO = {version: PAYLOADS / f"demo-{version}" for version in ("4.16.0", "4.16.3", "4.17.0")}
MISSING_TYPE = "the server does not recognize this resource, check extension API servers"
# The corpus install can never complete (ImageStream is not served): it runs this long, in attempts of at
# most CORPUS_INTERVAL (an install attempt's deadline) with back-offs of interval/8 (+20 %) and interval/4
# between them: two whole attempts and the start of a third.
CORPUS_TIMEOUT, CORPUS_INTERVAL = "100s", "40s"


# --- helpers ---------------------------------------------------------------------------------------------


def tail(text: str | None, lines: int = 40) -> str:
    return "\n".join((text or "").splitlines()[-lines:])


def wait_until(what: str, probe: Callable[[], T], timeout: float, interval: float = 0.25,
               alive: subprocess.Popen | None = None) -> T:
    """``probe()`` until it returns something truthy; fails the test after ``timeout`` seconds.

    With ``alive``, also fails as soon as that process has exited (nothing more will happen).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if alive is not None and alive.poll() is not None:
            pytest.fail(f"waiting for {what}: the process exited with {alive.returncode} first")
        if time.monotonic() > deadline:
            pytest.fail(f"waiting for {what}: not after {timeout:g}s")
        time.sleep(interval)


def conditions(obj: dict[str, Any] | None, where: str = "status") -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in ((obj or {}).get(where) or {}).get("conditions") or []}


def history(cv: dict[str, Any]) -> list[tuple[str, str]]:
    return [(h["version"], h["state"]) for h in (cv.get("status") or {}).get("history") or []]


def json_events(stderr: str) -> list[dict[str, Any]]:
    """The JSON-lines log events of ``--log-format json`` (other stderr lines, such as ``error:``, skipped)."""
    events = []
    for line in stderr.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                events.append(json.loads(line))
    return events


def by_attempt(events: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    current: int | None = None
    for event in events:
        if event.get("event") == "attempt.started":
            current = int(event["attempt"])
            out[current] = []
        elif current is not None:
            out[current].append(event)
    return out


def manifest_ref(m: Any) -> Ref:
    return Ref(m.group, m.kind, m.namespace or "", m.name)


def cluster_operator_manifests(release: Release) -> dict[str, Any]:
    return {m.name: m for m in release.manifests if (m.group, m.kind) == CLUSTER_OPERATOR}


def manifest_versions(m: Any) -> dict[str, str]:
    return {v["name"]: v["version"] for v in (m.obj.get("status") or {}).get("versions") or []}


class Proc:
    """A background cvo process whose output goes to files (no pipe can fill up and block it)."""

    def __init__(self, name: str, cmd: list[str], workdir: Path) -> None:
        self.name = name
        self.cmd = cmd
        self.out_path = workdir / f"{name}.stdout"
        self.err_path = workdir / f"{name}.stderr"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen(cmd, cwd=REPO, env=cvo_env(), stdin=subprocess.DEVNULL,
                                          stdout=out, stderr=err)
        self.started = time.monotonic()

    @property
    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            pytest.fail(f"{self.name} did not finish in {timeout:g}s; stderr:\n{tail(self.stderr)}")

    def stop(self) -> int | None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self.popen.returncode


def cvo_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PYTHONUNBUFFERED"] = "1"
    return env


class E2E:
    """One test's control plane, and cvo run against it through the command line."""

    def __init__(self, cp: ControlPlane, workdir: Path) -> None:
        self.cp = cp
        self.workdir = workdir
        self.kubeconfig = cp.kubeconfig_path
        self.procs: list[Proc] = []
        self.timings: dict[str, float] = {}
        self.steps: list[tuple[str, float]] = []  # each cvo command run to completion, with its wall time
        self.runs = 0

    def command(self, *args: str, log_json: bool = False, kubeconfig: str | None = None) -> list[str]:
        flags = ["--log-format", "json", "-vv"] if log_json else []  # -vv: task.retry is a debug event
        return [sys.executable, "-m", "cvo", *flags, *args, "--kubeconfig", kubeconfig or self.kubeconfig]

    def cvo(self, *args: str, timeout: float = 120.0, log_json: bool = False) -> subprocess.CompletedProcess[str]:
        """Run ``cvo ARGS --kubeconfig K`` to completion (at most ``timeout`` seconds)."""
        started = time.monotonic()
        try:
            res = subprocess.run(self.command(*args, log_json=log_json), cwd=REPO, env=cvo_env(),
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as err:
            stderr = err.stderr.decode(errors="replace") if isinstance(err.stderr, bytes) else err.stderr
            pytest.fail(f"cvo {' '.join(args)} did not finish in {timeout:g}s; stderr:\n{tail(stderr)}")
        self.runs += 1
        for stream, text in (("stdout", res.stdout), ("stderr", res.stderr)):  # kept for a failure's post-mortem
            (self.workdir / f"cvo-{self.runs:02d}-{args[0]}.{stream}").write_text(text)
        label = " ".join([args[0], *(a for a in args[1:] if a in ("--dry-run", "--to") or a.startswith("Upgradeable"))])
        self.steps.append((f"cvo {label}", time.monotonic() - started))
        return res

    def start(self, name: str, *args: str, log_json: bool = False, kubeconfig: str | None = None) -> Proc:
        proc = Proc(name, self.command(*args, log_json=log_json, kubeconfig=kubeconfig), self.workdir)
        self.procs.append(proc)
        return proc

    def sim_operators(self, behaviours: dict[str, Any], *releases: Path, wait: float = 90.0,
                      own_identity: bool = False, kubeconfig: str | None = None) -> Proc:
        """``cvo sim-operators`` in the background, once it simulates the operators of ``releases``;
        ``own_identity``: with a token of its service account (docs/kind.md), not the admin's;
        ``kubeconfig``: another one (a fault proxy's)."""
        path = self.workdir / "operators.yaml"
        path.write_text(yaml.safe_dump(behaviours))
        flags = [arg for release in releases for arg in ("--release", str(release))]
        if own_identity:
            kubeconfig = str(service_account_kubeconfig(self.cp, "openshift-cluster-version", "cvo-sim-operators",
                                                        self.workdir / "sim.kubeconfig"))
        proc = self.start("sim-operators", "sim-operators", *flags, "--operators", str(path), kubeconfig=kubeconfig)
        wait_until("sim-operators to start simulating", lambda: " operators of " in proc.stderr, wait, alive=proc.popen)
        return proc

    def status(self) -> dict[str, Any]:
        res = self.cvo("status", "-o", "json", timeout=60)
        assert res.returncode == 0, res.stderr
        return report_json(res.stdout)

    def read(self, body: Callable[[KubeCluster], Any]) -> Any:
        """``body(cluster)`` with a KubeCluster on this control plane (closed after)."""
        return run_with(self.cp, body)

    def get(self, *refs: Ref) -> list[dict[str, Any] | None]:
        async def body(cluster: KubeCluster) -> list[dict[str, Any] | None]:
            return [await cluster.get(ref) for ref in refs]

        result: list[dict[str, Any] | None] = self.read(body)
        return result

    def list(self, group: str, kind: str) -> list[dict[str, Any]]:
        async def body(cluster: KubeCluster) -> list[dict[str, Any]]:
            return await cluster.list(group, kind)

        result: list[dict[str, Any]] = self.read(body)
        return result

    def stop(self) -> None:
        for proc in self.procs:
            proc.stop()


@pytest.fixture
def e2e(control_plane: ControlPlane, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[E2E]:
    """A fresh control plane for this test, bootstrapped; its cvo processes are stopped after it."""
    started = time.monotonic()
    cp = ControlPlane()
    try:
        cp.start()
    except Exception as err:
        pytest.fail(f"the test's control plane did not start:\n{err}", pytrace=False)
    env = E2E(cp, tmp_path)
    try:
        res = env.cvo("bootstrap", timeout=120)
        assert res.returncode == 0, f"cvo bootstrap failed:\n{res.stdout}\n{res.stderr}"
        env.timings["control plane + bootstrap"] = time.monotonic() - started  # includes cvo bootstrap
        yield env
    finally:
        env.stop()
        cp.stop()
        env.timings["total"] = time.monotonic() - started
        steps = [*env.timings.items(), *env.steps]
        print(f"\n{request.node.name} timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in steps))
        for proc in env.procs:  # kept in tmp_path; shown when the test fails
            print(f"--- {proc.name} (exit {proc.popen.returncode}) stderr tail:\n{tail(proc.stderr, 15)}")


@pytest.fixture
def sim_proxy(e2e: E2E, tmp_path: Path) -> Iterator[tuple[FaultProxy, str]]:
    """A proxy (no faults) and its kubeconfig for ``cvo sim-operators`` alone: a test holds an operator's
    reports at it (:meth:`FaultProxy.hold`), so that a sweep certainly waits at the moment the test acts."""
    proxy = FaultProxy(e2e.cp.server_url, upstream_ca=e2e.cp.ca_path, plan=FaultPlan(rate=0.0),
                       workdir=tmp_path / "sim-proxy")
    proxy.start()
    try:
        yield proxy, str(proxy.write_kubeconfig(e2e.cp.kubeconfig_path, tmp_path / "sim-proxy.kubeconfig"))
    finally:
        e2e.stop()  # the cvo processes first: they must not see the proxy go away
        proxy.stop()


COS = "/apis/config.openshift.io/v1/clusteroperators"


def report_json(stdout: str) -> dict[str, Any]:
    """The ``-o json`` report: stdout must be exactly one JSON document (logs go to stderr)."""
    try:
        doc: dict[str, Any] = json.loads(stdout)
    except json.JSONDecodeError as err:
        pytest.fail(f"-o json: stdout is not one JSON document ({err}); it starts with:\n{stdout[:400]}")
    return doc


def self_conflicts(stderr: str) -> list[dict[str, Any]]:
    """Retries and failures caused by cvo's own ClusterVersion writes conflicting with each other."""
    return [e for e in json_events(stderr) if e.get("event") in ("task.retry", "task.failed")
            and 'clusterversions.config.openshift.io "version"' in str(e.get("message", "")) + str(e.get("nested", ""))]


def assert_release_installed(env: E2E, release: Release, history_states: list[tuple[str, str]]) -> dict[str, Any]:
    """ClusterVersion history, every ClusterOperator at the release's versions, OperatorConditions and RBAC."""
    doc = env.status()
    cv = doc["clusterVersion"]
    assert history(cv) == history_states
    cv_conditions = conditions(cv)
    assert cv_conditions["Available"]["status"] == "True", cv_conditions
    assert cv_conditions["Failing"]["status"] == "False", cv_conditions
    assert cv_conditions["Progressing"]["status"] == "False", cv_conditions
    assert cv_conditions["Progressing"]["message"] == f"Cluster version is {release.version}"

    cos = {co["metadata"]["name"]: co for co in doc["clusterOperators"]}
    for name, m in cluster_operator_manifests(release).items():
        assert name in cos, f"ClusterOperator {name} missing; have {sorted(cos)}"
        live = {v["name"]: v["version"] for v in (cos[name].get("status") or {}).get("versions") or []}
        assert live == manifest_versions(m), f"ClusterOperator {name}"
        co_conditions = conditions(cos[name])
        assert co_conditions["Available"]["status"] == "True", (name, co_conditions)
        assert co_conditions["Degraded"]["status"] == "False", (name, co_conditions)

    ocs = {(oc["metadata"]["namespace"], oc["metadata"]["name"]): oc for oc in doc["operatorConditions"]}
    expected = {co: deployments for co, deployments in operator_deployments(release.manifests).items() if deployments}
    assert "etcd" in expected
    for co, deployments in expected.items():
        namespace = deployments[0].namespace
        oc = ocs.get((namespace, co))
        assert oc is not None, f"no OperatorCondition {namespace}/{co}; have {sorted(ocs)}"
        assert oc["spec"]["deployments"] == [d.name for d in deployments if d.namespace == namespace]
        role, binding, *live_deployments = env.get(
            Ref("rbac.authorization.k8s.io", "Role", namespace, co),
            Ref("rbac.authorization.k8s.io", "RoleBinding", namespace, co),
            *(Ref("apps", "Deployment", d.namespace, d.name) for d in deployments))
        assert role is not None and binding is not None, f"Role/RoleBinding {namespace}/{co}"
        assert role["rules"] == [{"verbs": ["get", "update", "patch"], "apiGroups": [OC_GROUP],
                                  "resources": ["operatorconditions"], "resourceNames": [co]}]
        owner = [{"apiVersion": "operators.coreos.com/v2", "kind": OC_KIND, "name": co, "uid": oc["metadata"]["uid"],
                  "controller": True, "blockOwnerDeletion": False}]  # as OLM's ownerutil.AddOwner(…, false, true)
        assert role["metadata"]["ownerReferences"] == binding["metadata"]["ownerReferences"] == owner
        accounts = oc["spec"]["serviceAccounts"]
        assert [(s["kind"], s["name"], s["namespace"]) for s in binding["subjects"]] == [
            ("ServiceAccount", a, namespace) for a in accounts]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": co}
        for d, live in zip(deployments, live_deployments, strict=True):
            assert live is not None, f"Deployment {d.namespace}/{d.name}"
            for container in live["spec"]["template"]["spec"]["containers"]:
                env_vars = {e["name"]: e.get("value") for e in container.get("env") or []}
                assert env_vars.get(ENV_NAME) == co, (d.name, container["name"], env_vars)
                assert env_vars.get("RELEASE_VERSION") == release.version, (d.name, container["name"])
    return doc


def missing_objects(env: E2E, manifests: list[Any]) -> list[str]:
    """The manifests (not deletes) whose object is not in the API server."""
    wanted = [m for m in manifests if m.annotations.get("release.openshift.io/delete") != "true"]

    async def body(cluster: KubeCluster) -> list[str]:
        missing = []
        for m in wanted:
            if await cluster.get(manifest_ref(m)) is None:
                missing.append(f"{m.kind} {m.namespace or ''}/{m.name} ({m.path})")
        return missing

    result: list[str] = env.read(body)
    return result


# --- 1. install the demo release ---------------------------------------------------------------------------


def test_install_demo_release_with_sim_operators(e2e: E2E) -> None:
    release = load_release(DEMO["4.16.0"])
    sim = e2e.sim_operators({"default": {"delay": "2s"}}, *DEMO.values())

    res = e2e.cvo("install", str(DEMO["4.16.0"]), "-o", "json", "--timeout", "2m", timeout=150, log_json=True)
    assert res.returncode == 0, tail(res.stderr)
    doc = report_json(res.stdout)
    assert doc["ok"] and doc["completed"], doc["message"]
    assert doc["done"] == doc["total"] == len(release.manifests)
    assert doc["wallSeconds"] < 60
    conflicts = self_conflicts(res.stderr)

    assert_release_installed(e2e, release, [("4.16.0", "Completed")])
    assert not missing_objects(e2e, release.manifests)
    assert "clusteroperator/etcd: Available=True" in sim.stdout  # the simulated operators did report
    assert "report failed" not in sim.stderr
    # On a quiet cluster no task needs a second call; cvo's own ClusterVersion writes must not conflict.
    assert not conflicts, f"{len(conflicts)} tasks retried after a ClusterVersion write conflict: {conflicts[:2]}"


# --- 2. a minor upgrade blocked by Upgradeable=False, let through by an override ------------------------------


def test_upgradeable_false_blocks_a_minor_upgrade_until_an_admin_override(e2e: E2E) -> None:
    """The simulated operators run as their own service account (the narrow ClusterRole of
    manifests/0000_00_cvo_02_rbac.yaml, and the admission policy that keeps spec.overrides for admins):
    they still report ClusterOperators and etcd's OperatorCondition."""
    behaviours = {"default": {"delay": "1s"},
                  "etcd": {"upgradeable": {"after": "0s"}, "use-operator-condition": True}}
    sim = e2e.sim_operators(behaviours, *DEMO.values(), own_identity=True)

    res = e2e.cvo("install", str(DEMO["4.16.0"]), "-o", "json", "--timeout", "2m", timeout=150)
    assert res.returncode == 0, tail(res.stderr)

    # A patch update is not gated by Upgradeable=False.
    res = e2e.cvo("upgrade", "--to", str(DEMO["4.16.3"]), "-o", "json", "--timeout", "2m", timeout=150,
                  log_json=True)
    assert res.returncode == 0, tail(res.stderr)
    assert report_json(res.stdout)["completed"]
    conflicts = self_conflicts(res.stderr)
    doc = e2e.status()
    assert history(doc["clusterVersion"]) == [("4.16.3", "Completed"), ("4.16.0", "Completed")]
    etcd_oc = next(oc for oc in doc["operatorConditions"] if oc["metadata"]["name"] == "etcd")
    assert conditions(etcd_oc, "spec")["Upgradeable"]["status"] == "False"  # what the operator reports
    assert conditions(doc["clusterVersion"])["Upgradeable"]["status"] == "False"

    # The minor update is blocked: the dry run says so ...
    res = e2e.cvo("upgrade", "--to", str(DEMO["4.17.0"]), "--dry-run", timeout=60)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "BLOCKED" in res.stdout
    blocked = [line for line in res.stdout.splitlines() if "BLOCKED" in line and "ClusterVersionUpgradeable" in line]
    assert blocked and "etcd" in blocked[0], res.stdout
    assert "Verdict: BLOCKED" in res.stdout

    # ... and the upgrade does not start: it waits (ReleaseAccepted=False) until its --timeout, on the wall clock,
    # then the request ends with the command: ReleaseAccepted=True for 4.16.3 again.
    res = e2e.cvo("upgrade", "--to", str(DEMO["4.17.0"]), "-o", "json", "--timeout", "20s", timeout=90)
    assert res.returncode == 1, tail(res.stderr)
    report = report_json(res.stdout)
    assert not report["ok"] and not report["completed"]
    assert "blocked" in report["message"] and "etcd" in report["message"], report["message"]
    last = report["message"].splitlines()[-1]  # after what was left of the command's 20 s when the wait began (rounded: 20s too)
    assert re.fullmatch(r"the command's --timeout ended the wait after (?:1?\d|20)s on the wall clock; the cluster keeps "
                        r"4\.16\.3\. To wait longer: a longer --timeout, or --timeout 0 for no limit", last), last
    cv = e2e.status()["clusterVersion"]
    accepted = conditions(cv)["ReleaseAccepted"]
    assert (accepted["status"], accepted["reason"]) == ("True", "PayloadLoaded"), accepted
    assert 'version="4.16.3"' in accepted["message"]
    assert history(cv) == [("4.16.3", "Completed"), ("4.16.0", "Completed")]  # nothing started

    # The admin's override lets it through.
    res = e2e.cvo("override", "etcd", "Upgradeable=True", "--reason", "R", "--message", "M", timeout=60)
    assert res.returncode == 0, res.stderr
    assert "spec.overrides Upgradeable=True (R)" in res.stdout
    oc = next(o for o in e2e.list(OC_GROUP, OC_KIND) if o["metadata"]["name"] == "etcd")
    assert [(o["type"], o["status"], o["reason"], o["message"]) for o in oc["spec"]["overrides"]] == [
        ("Upgradeable", "True", "R", "M")]

    # An admin-ack gate for 4.16 (pkg/risk/adminack) blocks it too, until `cvo upgrade ack` writes the
    # acknowledgement into openshift-config/admin-acks (and creates that namespace, which a plain API server lacks).
    gate = "ack-4.16-kube-1.30-api-removals-in-4.17"

    async def add_gate(cluster: KubeCluster) -> None:
        assert await cluster.get(Ref("", "Namespace", "", "openshift-config-managed")) is not None  # the payload's
        await cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "admin-gates", "namespace": "openshift-config-managed"},
                              "data": {gate: "Check the removed APIs: https://access.redhat.com/articles/6958394"}})

    e2e.read(add_gate)
    res = e2e.cvo("upgrade", "ack", timeout=60)
    assert res.returncode == 0, res.stderr
    assert any(line.split()[:2] == [gate, "BLOCKS"] for line in res.stdout.splitlines()), res.stdout
    res = e2e.cvo("upgrade", "--to", str(DEMO["4.17.0"]), "--dry-run", timeout=60)
    assert res.returncode == 1 and f"  AdminAck-{gate}\n" in res.stdout, res.stdout
    res = e2e.cvo("upgrade", "ack", gate, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"configmap openshift-config/admin-acks: acknowledged {gate}\n"
    [acks] = e2e.get(Ref("", "ConfigMap", "openshift-config", "admin-acks"))
    assert acks is not None and acks["data"] == {gate: "true"}

    res = e2e.cvo("upgrade", "--to", str(DEMO["4.17.0"]), "-o", "json", "--timeout", "3m", timeout=210,
                  log_json=True)
    assert res.returncode == 0, tail(res.stderr)
    assert report_json(res.stdout)["completed"]
    conflicts += self_conflicts(res.stderr)
    release = load_release(DEMO["4.17.0"])
    assert_release_installed(e2e, release, [("4.17.0", "Completed"), ("4.16.3", "Completed"),
                                            ("4.16.0", "Completed")])
    assert conditions(e2e.status()["clusterVersion"])["ReleaseAccepted"]["status"] == "True"
    output = sim.stdout + sim.stderr  # nothing it reads or writes is refused: no retries after a 403
    assert "report failed" not in output and "forbidden" not in output.lower(), tail(output)
    assert "operatorcondition openshift-etcd-operator/etcd: Upgradeable=False" in sim.stdout

    # On a quiet cluster no task of the two upgrades needs a second call; in particular cvo's own
    # ClusterVersion status writes (parallel nodes starting their ClusterOperator waits) must not
    # conflict with each other, each costing the task a back-off of about 10 s.
    assert not conflicts, f"{len(conflicts)} tasks retried after a ClusterVersion write conflict: {conflicts[:2]}"


# --- 3. the API server killed and restarted mid-sweep ---------------------------------------------------------


def test_install_survives_an_api_server_restart_mid_sweep(e2e: E2E, sim_proxy: tuple[FaultProxy, str]) -> None:
    release = load_release(DEMO["4.16.0"])
    # machine-config's reports are held at sim-operators' proxy until the API server is back: the sweep is
    # certainly still running at the kill.
    proxy, kubeconfig = sim_proxy
    hold = proxy.hold("PUT", f"{COS}/machine-config/status")
    sim = e2e.sim_operators({"default": {"delay": "2s"}}, DEMO["4.16.0"], kubeconfig=kubeconfig)
    # JSON logs with debug events (task.dependency, task.retry): what a failure here needs to be understood.
    install = e2e.start("install", "install", str(DEMO["4.16.0"]), "-o", "json", "--timeout", "2m", log_json=True)

    def progress() -> int:
        with contextlib.suppress(Exception):  # the ClusterOperator CRD may be replaced by the payload's
            return len(e2e.list(*CLUSTER_OPERATOR))
        return 0

    seen = wait_until("the install to create ClusterOperators", progress, 60, alive=install.popen)
    killed_at = time.monotonic() - install.started
    restart_seconds = e2e.cp.restart_apiserver()
    assert install.popen.poll() is None, f"the install exited while the API server was down:\n{tail(install.stderr)}"
    hold.release()
    e2e.timings["apiserver restart"] = restart_seconds
    print(f"API server killed {killed_at:.1f}s into the install ({seen} ClusterOperators), "
          f"back in {restart_seconds:.1f}s")

    code = install.wait(150)
    assert code == 0, tail(install.stderr)
    doc = report_json(install.stdout)
    assert doc["ok"] and doc["completed"] and doc["done"] == doc["total"] == len(release.manifests)
    assert_release_installed(e2e, release, [("4.16.0", "Completed")])
    assert not missing_objects(e2e, release.manifests)
    assert sim.popen.poll() is None, "sim-operators died with the API server"


# --- 4. cvo killed mid-sweep and rerun ------------------------------------------------------------------------


def test_killed_install_resumes_from_its_cluster_version(e2e: E2E, sim_proxy: tuple[FaultProxy, str]) -> None:
    release = load_release(DEMO["4.16.0"])
    proxy, kubeconfig = sim_proxy
    hold = proxy.hold("PUT", f"{COS}/machine-config/status")  # until the kill: the install cannot finish first
    e2e.sim_operators({"default": {"delay": "3s"}}, DEMO["4.16.0"], kubeconfig=kubeconfig)
    install = e2e.start("install-1", "install", str(DEMO["4.16.0"]), "-o", "json", "--timeout", "2m")

    def partial() -> dict[str, Any] | None:
        with contextlib.suppress(Exception):
            cv, *_ = e2e.get(cv_ref())
            cos = e2e.list(*CLUSTER_OPERATOR)
            if cv and history(cv) == [("4.16.0", "Partial")] and any(
                    conditions(co).get("Available", {}).get("status") == "True" for co in cos):
                return cv
        return None

    cv = wait_until("the install to make progress", partial, 60, alive=install.popen)
    started_time = cv["status"]["history"][0]["startedTime"]
    install.popen.send_signal(signal.SIGKILL)
    assert install.wait(10) == -signal.SIGKILL
    assert '"completed"' not in install.stdout  # it never reported: killed mid-sweep
    hold.release()

    res = e2e.cvo("install", str(DEMO["4.16.0"]), "-o", "json", "--timeout", "2m", timeout=150)
    assert res.returncode == 0, tail(res.stderr)
    doc = report_json(res.stdout)
    assert doc["ok"] and doc["completed"]
    entries = doc["clusterVersion"]["status"]["history"]
    assert [(h["version"], h["state"]) for h in entries] == [("4.16.0", "Completed")]
    assert entries[0]["startedTime"] == started_time  # the entry the first run wrote, resumed
    assert_release_installed(e2e, release, [("4.16.0", "Completed")])
    assert not missing_objects(e2e, release.manifests)


# --- 5. the corpus into the real server -----------------------------------------------------------------------


def crd_served_kinds(release: Release) -> set[tuple[str, str]]:
    """(apiVersion, kind) served by the CustomResourceDefinitions of the release."""
    crd_kinds = set()
    for m in release.manifests:
        if (m.group, m.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
            spec = m.obj["spec"]
            for version in spec.get("versions") or []:
                if version.get("served", True):
                    crd_kinds.add((f"{spec['group']}/{version['name']}", spec["names"]["kind"]))
    return crd_kinds


def unserved_manifests(env: E2E, release: Release) -> list[Any]:
    """Manifests of kinds that neither a CRD of the release nor the API server (before the install) serves."""
    candidates = sorted({(m.api_version, m.kind) for m in release.manifests} - crd_served_kinds(release))

    async def body(cluster: KubeCluster) -> set[tuple[str, str]]:
        return {c for c in candidates if not await cluster.serves(*c)}

    unserved: set[tuple[str, str]] = env.read(body)
    return [m for m in release.manifests if (m.api_version, m.kind) in unserved
            and m.annotations.get("release.openshift.io/delete") != "true"]


def test_corpus_install_fails_only_on_kinds_the_server_does_not_serve(e2e: E2E, corpus: Path) -> None:
    release = load_release(corpus)
    unserved = unserved_manifests(e2e, release)
    unserved_kinds = sorted({(m.api_version, m.kind) for m in unserved})
    assert ("image.openshift.io/v1", "ImageStream") in unserved_kinds
    assert all(api.split("/")[0].endswith(".openshift.io") for api, _ in unserved_kinds), unserved_kinds
    print(f"unserved kinds: {unserved_kinds} ({len(unserved)} manifests)")

    # In install mode the graph is flattened; a node stops at its first failing task, so what fails
    # is the first unserved manifest of each node, and the rest of that node is never applied.
    unserved_ids = {id(m) for m in unserved}
    tasks = make_tasks(release.manifests, Mode.INSTALL)
    graph = build_graph(tasks, Mode.INSTALL)
    expected_failures: dict[str, Any] = {}
    blocked: list[Any] = []
    for node in graph.nodes:
        node_tasks = graph.nodes[node]["tasks"]
        first = next((i for i, t in enumerate(node_tasks) if id(t.manifest) in unserved_ids), None)
        if first is not None:
            expected_failures[str(node_tasks[first])] = node_tasks[first].manifest
            blocked.extend(t.manifest for t in node_tasks[first:])
    blocked_ids = {id(m) for m in blocked}
    independent = [m for m in release.manifests if id(m) not in blocked_ids]

    e2e.sim_operators({"default": {"delay": "0s"}}, corpus)
    # An install attempt lasts at most one interval: operators whose Deployment follows an unserved
    # manifest in its node are never reported, and their waits end only at the attempt's deadline.
    res = e2e.cvo("install", str(corpus), "-o", "json", "--timeout", CORPUS_TIMEOUT, "--interval", CORPUS_INTERVAL,
                  log_json=True, timeout=300)
    events = json_events(res.stderr)
    attempts = by_attempt(events)
    assert res.returncode == 1, tail(res.stderr)
    assert attempts, tail(res.stderr)

    # The last attempt that ran to its end (the sweep's timeout may cut the next one short): exactly
    # the unserved manifests fail, the first of each node.
    finished = [n for n, evs in attempts.items() if any(e["event"] == "attempt.failed" for e in evs)]
    assert len(finished) >= 2, f"attempts that ran to their end: {finished}"
    last = max(finished)
    final_failures = {e["task"] for e in attempts[last] if e["event"] == "task.failed"}
    assert final_failures == set(expected_failures), (final_failures, set(expected_failures))
    assert any(e["event"] == "sweep.timeout" for e in events)

    doc = report_json(res.stdout)
    assert not doc["ok"] and not doc["completed"]
    assert doc["total"] == len(tasks)
    if last == max(attempts):  # the sweep timed out between attempts: the report is the last attempt's
        assert doc["done"] == len(tasks) - len(blocked)
    else:
        assert doc["done"] <= len(tasks) - len(blocked)
    first_failure = next(iter(expected_failures.values()))
    errors = [e.get("message") for e in json_events(res.stderr) if e.get("level") == "error"]
    assert doc["message"] in errors  # with --log-format json, errors are JSON documents too
    cv = e2e.status()["clusterVersion"]
    failing = conditions(cv)["Failing"]
    if last == max(attempts):  # the sweep timed out between attempts: the last attempt's failure is the report's
        assert MISSING_TYPE in doc["message"]
        assert any(f'detail: no matches for kind "{first_failure.kind}"' in str(e) for e in errors)
        assert (failing["status"], failing["reason"]) == ("True", "UpdatePayloadResourceTypeMissing"), failing
        assert MISSING_TYPE in failing["message"]
    else:  # the timeout cut an attempt short (a loaded machine): the report says what that attempt was doing,
        # which is still waiting (deadline exceeded) or already failed on the unserved kind
        assert (doc["message"].startswith("update context deadline exceeded at ")
                or MISSING_TYPE in doc["message"]), doc["message"]
        assert failing["status"] == "True", failing
    assert history(cv) == [(release.version, "Partial")]

    # Every independent branch was applied: all of its objects are in the API server.
    missing = missing_objects(e2e, independent)
    assert not missing, f"{len(missing)} objects of independent branches are missing: {missing[:20]}"
    kinds = {(m.group, m.kind) for m in independent}
    assert {("", "Namespace"), ("", "ConfigMap"), ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("apps", "Deployment"), CLUSTER_OPERATOR} <= kinds

    # Every attempt's failure is made of its task failures: nothing fails a node without a task.failed.
    # Install mode applies everything at once; an object whose CRD or namespace another node creates
    # waits for it (task.dependency), so no attempt trips over its own order: every attempt fails on
    # exactly the unserved manifests, and only on them.
    by_task = {str(t): t.manifest for t in tasks}
    for number, attempt_events in attempts.items():
        failed = [e for e in attempt_events if e["event"] == "task.failed"]
        if number in finished:
            assert {e["task"] for e in failed} == set(expected_failures), (number, failed[:3])
        for e in failed:
            m = by_task[e["task"]]
            assert f"({m.path})" in e["nested"], (number, e)
            assert id(m) in unserved_ids, (number, e)
            assert e["reason"] == "UpdatePayloadResourceTypeMissing", (number, e)
            assert e["message"] == f"Could not update {e['task']}: {MISSING_TYPE}", (number, e)
            assert f'no matches for kind "{m.kind}" in version "{m.api_version}"' in e["nested"], (number, e)
        messages = {e["message"] for e in failed}
        for e in attempt_events:
            if e["event"] == "attempt.failed":
                reported = [line[2:] for line in e["message"].splitlines() if line.startswith("* ")] or [e["message"]]
                assert set(reported) <= messages, (
                    f"attempt {number} failed with errors no task.failed reported: {set(reported) - messages}")
    conflicts = self_conflicts(res.stderr)
    assert not conflicts, f"{len(conflicts)} tasks retried after a ClusterVersion write conflict: {conflicts[:2]}"
