"""``cvo run`` on the real API server: two replicas as real subprocesses, one leads; a merge patch of
``spec.desiredUpdate`` (what ``kubectl patch clusterversion version --type merge`` sends) starts the upgrade;
the leader frozen (SIGSTOP) and then killed (SIGKILL) in the middle of it: the other replica takes over
within the lease's bounds and completes it, with one history entry for the target, and the old leader,
resumed, writes nothing; drift repaired within one interval; /metrics; SIGTERM releases the lease.  And
``cvo run`` in-cluster: the pod's environment and a real token of the manifests' service account.

Each replica talks to the API server through a fault proxy of its own with no faults: the proxy records
every request it forwards, so the test sees who wrote what, and when.
"""

from __future__ import annotations

import os
import signal
import socket
import time
import urllib.request
from pathlib import Path
from typing import Any

from cvo.cluster.api import Ref, cv_ref
from tests.support.faultproxy import FaultPlan, FaultProxy

from .controlplane import ControlPlane
from .identities import request
from .test_e2e_flows import COS, DEMO, E2E, PAYLOADS, Proc, conditions, e2e, history, sim_proxy, wait_until

__all__ = ["e2e", "sim_proxy"]  # the fixtures, imported for this module's tests

LEASE = ("6s", "4s", "1s")  # lease duration, renew deadline, retry period: shortened from 137 s / 107 s / 26 s
LEASE_DURATION, RETRY_PERIOD = 6.0, 1.0
INTERVAL = 20.0
LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/openshift-cluster-version/leases/version"
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def lease(cp: ControlPlane) -> dict[str, Any]:
    code, answer = request(cp, "GET", LEASE_PATH)
    return answer if code == 200 else {}


def holder(cp: ControlPlane) -> str:
    return str((lease(cp).get("spec") or {}).get("holderIdentity") or "")


def scrape(port: int, path: str = "/metrics") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""


def patch_desired(cp: ControlPlane, desired: dict[str, Any]) -> None:
    """``kubectl patch clusterversion version --type merge -p '{"spec":{"desiredUpdate":…}}'``."""
    code, answer = request(cp, "PATCH", "/apis/config.openshift.io/v1/clusterversions/version",
                           {"spec": {"desiredUpdate": desired}}, content_type="application/merge-patch+json")
    assert code == 200, (code, answer)


class Replica:
    """``cvo run`` through its own recording proxy."""

    def __init__(self, e2e: E2E, name: str) -> None:
        self.name = name
        self.port = free_port()
        self.proxy = FaultProxy(e2e.cp.server_url, upstream_ca=e2e.cp.ca_path, plan=FaultPlan(rate=0.0),
                                workdir=e2e.workdir / f"proxy-{name}").start()
        (e2e.workdir / f"proxy-{name}").mkdir(exist_ok=True)
        kubeconfig = self.proxy.write_kubeconfig(e2e.cp.kubeconfig_path, e2e.workdir / f"{name}.kubeconfig")
        self.proc: Proc = e2e.start(name, "run", "--identity", name, "--release", str(DEMO["4.16.0"]),
                                    "--releases", str(PAYLOADS), "--interval", f"{INTERVAL:g}s",
                                    "--lease-duration", LEASE[0], "--renew-deadline", LEASE[1],
                                    "--retry-period", LEASE[2], "--listen", f"127.0.0.1:{self.port}",
                                    log_json=True, kubeconfig=str(kubeconfig))

    def writes_after(self, when: float) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.proxy.records if r.time > when and r.method in WRITES]


def test_two_replicas_one_leads_failover_mid_upgrade_drift_metrics_and_sigterm(
        e2e: E2E, sim_proxy: tuple[FaultProxy, str]) -> None:
    proxy, kubeconfig = sim_proxy
    e2e.sim_operators({"default": {"delay": "2s"}}, DEMO["4.16.0"], DEMO["4.16.3"], kubeconfig=kubeconfig)
    a = Replica(e2e, "a")
    wait_until("replica a to lead", lambda: holder(e2e.cp) == "a", 60, alive=a.proc.popen)
    b = Replica(e2e, "b")
    try:
        wait_until("b to serve /readyz", lambda: scrape(b.port, "/readyz")[0] == 200, 60, alive=b.proc.popen)
        assert holder(e2e.cp) == "a"
        assert "cvo_controller_leader 0.0" in scrape(b.port)[1] and "cvo_controller_leader 1.0" in scrape(a.port)[1]

        def installed() -> bool:
            cv = e2e.get(cv_ref())[0] or {}
            return history(cv)[:1] == [("4.16.0", "Completed")]

        wait_until("the leader to install 4.16.0", installed, 240, interval=1.0, alive=a.proc.popen)
        assert b.writes_after(0) == [], "a follower wrote"

        # machine-config's reports are held until the old leader is gone: the failover is certainly mid-upgrade
        hold = proxy.hold("PUT", f"{COS}/machine-config/status")
        # kubectl patch clusterversion version --type merge -p '{"spec":{"desiredUpdate":{"version":"4.16.3"}}}'
        patch_desired(e2e.cp, {"version": "4.16.3"})

        def updating() -> bool:
            cv = e2e.get(cv_ref())[0] or {}
            return history(cv)[:1] == [("4.16.3", "Partial")]

        wait_until("the upgrade to start", updating, 120, interval=0.5, alive=a.proc.popen)
        assert hold.arrived.wait(120), "the upgrade never reached machine-config"  # in the middle of it
        cv = e2e.get(cv_ref())[0] or {}
        assert history(cv)[0] == ("4.16.3", "Partial")

        # Freeze the leader: b takes over within a lease duration and two retry periods (client-go's rules).
        a.proc.popen.send_signal(signal.SIGSTOP)
        frozen = time.time()
        wait_until("b to take the lease", lambda: holder(e2e.cp) == "b", 30, interval=0.1, alive=b.proc.popen)
        took = time.time() - frozen
        assert took <= LEASE_DURATION + 2 * RETRY_PERIOD * 1.2 + 1.0, took
        taken = time.time()
        a.proc.popen.send_signal(signal.SIGCONT)  # a wakes up: its clock says the lease is stale
        time.sleep(LEASE_DURATION / 2)
        assert a.writes_after(taken) == [], "the old leader wrote after it lost the lease"
        a.proc.popen.send_signal(signal.SIGKILL)
        a.proc.popen.wait(timeout=10)
        hold.release()

        def upgraded() -> bool:
            cv = e2e.get(cv_ref())[0] or {}
            return history(cv)[:1] == [("4.16.3", "Completed")]

        wait_until("b to complete the upgrade", upgraded, 240, interval=1.0, alive=b.proc.popen)
        cv = e2e.get(cv_ref())[0] or {}
        assert history(cv) == [("4.16.3", "Completed"), ("4.16.0", "Completed")]  # one entry for the target
        assert conditions(cv)["Available"]["message"] == "Done applying 4.16.3"
        assert holder(e2e.cp) == "b" and lease(e2e.cp)["spec"]["leaseTransitions"] >= 1

        # /metrics: versions and operator conditions
        _, metrics = scrape(b.port)
        assert 'cluster_version{from_version="4.16.0",image="file://' in metrics
        assert 'type="completed",version="4.16.3"} ' in metrics
        assert 'cluster_operator_up{name="etcd",reason="AsExpected",version="4.16.3"} 1.0' in metrics
        assert 'cluster_operator_conditions{condition="Available",name="etcd",reason="AsExpected"} 1.0' in metrics
        assert "# TYPE cluster_version_available_updates gauge" in metrics
        assert "# TYPE cluster_operator_payload_errors gauge" in metrics
        assert "# TYPE cluster_version_payload gauge" in metrics

        # Drift after completion: repaired within one interval (plus the reconcile's own walk)
        victim = Ref("", "ConfigMap", "openshift-config-managed", "release-verification")
        if e2e.get(victim)[0] is None:
            victim = next(Ref("", "ConfigMap", c["metadata"]["namespace"], c["metadata"]["name"])
                          for c in e2e.list("", "ConfigMap") if c["metadata"]["namespace"].startswith("openshift-")
                          and not c["metadata"]["name"].startswith("kube-root-ca"))
        code, _ = request(e2e.cp, "DELETE", f"/api/v1/namespaces/{victim.namespace}/configmaps/{victim.name}")
        assert code == 200
        deleted = time.monotonic()
        wait_until(f"{victim} to be put back", lambda: e2e.get(victim)[0] is not None, INTERVAL + 30, interval=0.5,
                   alive=b.proc.popen)
        assert time.monotonic() - deleted <= INTERVAL + 15

        # SIGTERM: the lease is released, exit 0
        b.proc.popen.send_signal(signal.SIGTERM)
        assert b.proc.popen.wait(timeout=30) == 0, b.proc.stderr[-2000:]
        spec = lease(e2e.cp)["spec"]
        assert spec.get("holderIdentity", "") == "" and spec["leaseDurationSeconds"] == 1
    finally:
        for replica in (a, b):
            if replica.proc.popen.poll() is None:
                replica.proc.popen.send_signal(signal.SIGCONT)
            replica.proxy.stop()


def test_cvo_upgrade_with_a_running_controller_sets_the_target_and_follows_it(e2e: E2E) -> None:
    """``cvo upgrade --to DIR`` while ``cvo run`` leads: the command writes ``spec.desiredUpdate`` and follows the
    ClusterVersion; the controller (its writes seen by its proxy) runs the update; the report and exit code
    are a sweep's."""
    e2e.sim_operators({"default": {"delay": "2s"}}, DEMO["4.16.0"], DEMO["4.16.3"])
    a = Replica(e2e, "a")
    try:
        wait_until("replica a to lead", lambda: holder(e2e.cp) == "a", 60, alive=a.proc.popen)

        def installed() -> bool:
            return history(e2e.get(cv_ref())[0] or {})[:1] == [("4.16.0", "Completed")]

        wait_until("the leader to install 4.16.0", installed, 240, interval=1.0, alive=a.proc.popen)
        began = time.time()
        res = e2e.cvo("upgrade", "--to", str(DEMO["4.16.3"]), "--timeout", "4m", timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        assert "upgrade.requested" in res.stderr and "controller=a" in res.stderr
        assert "\ncompleted by the controller a: " in res.stdout
        cv = e2e.get(cv_ref())[0] or {}
        assert history(cv) == [("4.16.3", "Completed"), ("4.16.0", "Completed")]
        assert cv["spec"]["desiredUpdate"]["image"] == f"file://{DEMO['4.16.3'].resolve()}"
        cv_path = "/apis/config.openshift.io/v1/clusterversions/version"
        writes = a.writes_after(began)
        assert f"PUT {cv_path}/status" in writes  # the controller reported the update
        assert f"PUT {cv_path}" not in writes  # and never wrote the spec: the command did
        assert any(w.startswith("PUT /apis/apps/v1/") for w in writes)  # it applied the new release
    finally:
        if a.proc.popen.poll() is None:
            a.proc.popen.send_signal(signal.SIGTERM)
            a.proc.popen.wait(timeout=30)
        a.proxy.stop()


SA = "system:serviceaccount:openshift-cluster-version:cluster-version-operator"
CONTROLLER_MANIFESTS = Path(__file__).resolve().parents[2] / "manifests" / "controller"


def in_cluster(e2e: E2E, tmp_path: Path, identity: str, *args: str) -> tuple[Any, str, int]:
    """``cvo run --in-cluster`` as a pod runs it: KUBERNETES_SERVICE_HOST/PORT, and a real token and the CA of the
    manifests' service account where $CVO_SERVICEACCOUNT_DIR says.  Returns the process, the token, the port of
    its /metrics."""
    import subprocess
    import sys

    code, answer = request(e2e.cp, "POST", "/api/v1/namespaces/openshift-cluster-version/serviceaccounts/"
                           "cluster-version-operator/token", {"apiVersion": "authentication.k8s.io/v1",
                                                              "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    assert code == 201, answer
    mount = tmp_path / "serviceaccount"
    mount.mkdir()
    (mount / "token").write_text(answer["status"]["token"])
    (mount / "ca.crt").write_bytes(Path(e2e.cp.ca_path).read_bytes())
    host, port = e2e.cp.server_url.removeprefix("https://").rsplit(":", 1)
    env = {**{k: v for k, v in os.environ.items() if k != "KUBECONFIG"}, "PYTHONUNBUFFERED": "1",
           "KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port, "CVO_SERVICEACCOUNT_DIR": str(mount)}
    listen = free_port()
    with open(tmp_path / "run.stderr", "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "cvo", "--log-format", "json", "run", "--identity", identity,
                                 "--listen", f"127.0.0.1:{listen}", "--lease-duration", LEASE[0], "--renew-deadline",
                                 LEASE[1], "--retry-period", LEASE[2], *args],
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    return proc, answer["status"]["token"], listen


def test_in_cluster_with_the_manifests_service_account(e2e: E2E, tmp_path: Path) -> None:
    """The deployment as ``cvo bootstrap`` and ``manifests/controller/`` make it: the service account bound to
    cluster-admin (what applying a payload takes, as for the CVO).  It installs, with no Forbidden.  What the
    controller needs *without* cluster-admin is the next test's."""
    e2e.sim_operators({"default": {"delay": "2s"}}, DEMO["4.16.0"])
    proc, token, _ = in_cluster(e2e, tmp_path, "pod-0", "--release", str(DEMO["4.16.0"]))
    try:
        wait_until("the in-cluster replica to lead", lambda: holder(e2e.cp) == "pod-0", 60, alive=proc)

        def installed() -> bool:
            cv = e2e.get(cv_ref())[0] or {}
            return history(cv)[:1] == [("4.16.0", "Completed")]

        wait_until("the in-cluster install", installed, 240, interval=1.0, alive=proc)
        stderr = (tmp_path / "run.stderr").read_text()
        assert "in-cluster" in stderr and token not in stderr  # never print the token
        assert "Forbidden" not in stderr and "forbidden" not in stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert holder(e2e.cp) == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


RBAC_PATHS = {"ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
              "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
              "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
              "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"}


def can(e2e: E2E, verb: str, group: str, resource: str, namespace: str = "", subresource: str = "",
        name: str = "") -> bool:
    """A SubjectAccessReview for the controller's service account (what RBAC grants it, asked of the server)."""
    attributes = {k: v for k, v in {"verb": verb, "group": group, "resource": resource, "namespace": namespace,
                                    "subresource": subresource, "name": name}.items() if v}
    code, answer = request(e2e.cp, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                           {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                            "spec": {"user": SA, "groups": ["system:serviceaccounts",
                                                            "system:serviceaccounts:openshift-cluster-version",
                                                            "system:authenticated"],
                                     "resourceAttributes": attributes}})
    assert code == 201, answer
    return bool(answer["status"].get("allowed"))


def test_least_privilege_rbac_the_controller_runs_on_its_clusterrole_and_lease_role_alone(
        e2e: E2E, tmp_path: Path) -> None:
    """Proof of what manifests/controller/ claims: with the cluster-admin binding removed and only its ClusterRole
    and Lease Role bound (applied from the files as shipped), ``cvo run`` in-cluster leads (the Lease), watches
    and serves /metrics (the reads), and reports a release it cannot find on the ClusterVersion (its one
    write, the status), with no Forbidden.  And the other half of the claim: an update it can find fails
    Forbidden on the payload's objects, so applying really is the cluster-admin binding's."""
    import yaml

    e2e.sim_operators({"default": {"delay": "1s"}}, DEMO["4.16.0"], DEMO["4.16.3"])
    res = e2e.cvo("install", str(DEMO["4.16.0"]), "--timeout", "4m", timeout=300)  # as the admin
    assert res.returncode == 0, res.stderr[-3000:]
    code, _ = request(e2e.cp, "DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-version-operator")
    assert code == 200  # cvo bootstrap's cluster-admin binding
    for path in sorted(CONTROLLER_MANIFESTS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc["kind"] in RBAC_PATHS:
                where = RBAC_PATHS[doc["kind"]].format(ns=doc["metadata"].get("namespace", ""))
                code, answer = request(e2e.cp, "POST", where, doc)
                assert code == 201, (path.name, answer)
    wait_until("the roles to be in force", lambda: can(e2e, "update", "config.openshift.io", "clusterversions",
                                                       subresource="status", name="version"), 30)
    assert not can(e2e, "update", "config.openshift.io", "clusterversions", name="version")  # never the spec
    assert not can(e2e, "create", "apps", "deployments", "openshift-etcd-operator")
    assert not can(e2e, "*", "*", "*")
    patch_desired(e2e.cp, {"version": "4.99.0", "image": "file:///nowhere/4.99.0"})

    proc, token, port = in_cluster(e2e, tmp_path, "least")
    stderr_path = tmp_path / "run.stderr"
    try:
        wait_until("the least-privileged replica to lead", lambda: holder(e2e.cp) == "least", 60, alive=proc)

        def reported() -> bool:
            accepted = conditions(e2e.get(cv_ref())[0])["ReleaseAccepted"]
            return accepted["reason"] == "RetrievePayload" and "file:///nowhere/4.99.0" in accepted["message"]

        wait_until("ReleaseAccepted=False (RetrievePayload) written by the controller", reported, 60, alive=proc)
        wait_until("/metrics with the ClusterOperators it watches",
                   lambda: 'cluster_operator_up{name="etcd",reason="AsExpected",version="4.16.0"} 1.0' in scrape(port)[1],
                   30, alive=proc)
        assert "cvo_controller_leader 1.0" in scrape(port)[1]
        stderr = stderr_path.read_text()
        assert "forbidden" not in stderr.lower() and token not in stderr

        patch_desired(e2e.cp, {"version": "4.16.3", "image": f"file://{DEMO['4.16.3'].resolve()}"})
        wait_until("the update to fail Forbidden on the payload's objects",
                   lambda: "forbidden" in stderr_path.read_text().lower(), 120, alive=proc)
        assert SA in stderr_path.read_text()  # the API server's refusal names the account
        assert history(e2e.get(cv_ref())[0] or {})[0] != ("4.16.3", "Completed")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert holder(e2e.cp) == ""  # released: the Lease Role's update
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
