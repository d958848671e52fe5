"""The test control plane (etcd + kube-apiserver): start one, query it, count its requests, set it up."""

from __future__ import annotations

import contextlib
import json
import re
import ssl
import time
import urllib.error
import urllib.request
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.kube.processes import Stamped, cvo_argv, process_cpu_ms, timed
from bench.kube.settings import READY_TIMEOUT


def api_get(cp: Any, path: str, accept: str = "application/json") -> Any:
    """GET ``path`` from the control plane with its admin token (the serving cert is self-signed)."""
    ctx = ssl.create_default_context(cafile=cp.ca_path) if Path(cp.ca_path).exists() else None
    if ctx is not None:
        ctx.check_hostname = False  # the cert names 127.0.0.1 as an IP SAN; keep it simple
    else:
        ctx = ssl._create_unverified_context()
    req = urllib.request.Request(f"{cp.server_url}{path}",
                                 headers={"Authorization": f"Bearer {cp.token}", "Accept": accept})
    with urllib.request.urlopen(req, timeout=30, context=ctx) as resp:
        body = resp.read()
    return json.loads(body) if accept == "application/json" else body.decode()


def builtin_kinds(cp: Any) -> set[tuple[str, str]]:
    """(apiVersion, kind) the plain API server serves, from its discovery (legacy walk)."""
    served: set[tuple[str, str]] = set()
    group_versions = ["v1"] + [v["groupVersion"] for g in api_get(cp, "/apis")["groups"] for v in g["versions"]]
    for gv in group_versions:
        doc = api_get(cp, "/api/v1" if gv == "v1" else f"/apis/{gv}")
        for res in doc.get("resources", []):
            if "/" not in res["name"]:
                served.add((gv, res["kind"]))
    return served


def api_send(cp: Any, method: str, path: str, body: Any) -> tuple[int, float]:
    """Send ``body`` as JSON: (the answer's HTTP status, seconds it took)."""
    ctx = ssl._create_unverified_context()
    req = urllib.request.Request(f"{cp.server_url}{path}", method=method, data=json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {cp.token}", "Content-Type": "application/json"})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=60, context=ctx) as resp:
            resp.read()
            status = resp.status
    except urllib.error.HTTPError as err:
        err.read()
        status = err.code
    return status, time.perf_counter() - started


def _established(crd: dict[str, Any]) -> str | None:
    for c in (crd.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Established" and c.get("status") == "True":
            return str(c.get("lastTransitionTime"))
    return None


def _stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def crd_times(cp: Any, started: float) -> list[tuple[str, float, float]]:
    """Each CRD created since ``started`` (time.time()): (name, created, Established), seconds after it, from
    the objects' own timestamps (whole seconds: the API server's resolution)."""
    out = []
    for crd in api_get(cp, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions").get("items", []):
        created = _stamp(crd["metadata"]["creationTimestamp"])
        established = _established(crd)
        if created >= int(started) and established is not None:
            out.append((crd["metadata"]["name"], created - started, _stamp(established) - started))
    return out


def first_write_latency(cp: Any, crd: dict[str, Any]) -> tuple[float, float] | None:
    """Create ``crd`` on an idle server, wait until it is Established and its kind is served, then create two
    objects of its kind: how long the server took for the first and the second (seconds)."""
    status, _ = api_send(cp, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    if status >= 300:
        return None
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("served"))
    namespaced = spec.get("scope") == "Namespaced"
    path = f"/apis/{spec['group']}/{version}/" + ("namespaces/default/" if namespaced else "") + spec["names"]["plural"]
    deadline = time.monotonic() + 60
    name = crd["metadata"]["name"]
    while _established(api_get(cp, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")) is None:
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)
    took: list[float] = []
    for n in range(200):  # a 404 until the kind is served (discovery and handlers lag Established a little)
        obj = {"apiVersion": f"{spec['group']}/{version}", "kind": spec["names"]["kind"],
               "metadata": {"name": f"cvo-bench-probe-{n}"}, "spec": {}}
        status, seconds = api_send(cp, "POST", path, obj)
        if status != 404:
            took.append(seconds)  # 201, or 422 when the empty spec is not valid: the server got that far
            if len(took) == 2:
                return took[0], took[1]
        elif time.monotonic() > deadline:
            return None
        else:
            time.sleep(0.02)
    return None


def request_counts(cp: Any) -> Counter[str]:
    """``apiserver_request_total`` summed: all, 4xx/5xx, and 409s on the ClusterVersion; and the CPU
    kube-apiserver and etcd have used (``server_cpu_ms``)."""
    counts: Counter[str] = Counter()
    counts["server_cpu_ms"] = process_cpu_ms(getattr(cp, "_apiserver", None)) + process_cpu_ms(getattr(cp, "_etcd", None))
    for line in api_get(cp, "/metrics", accept="text/plain").splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels, _, value = line.rpartition(" ")
        n = int(float(value))
        counts["total"] += n
        verb = re.search(r'verb="([A-Z]+)"', labels)
        if verb:
            counts[f"verb:{verb.group(1)}"] += n
        code = re.search(r'code="(\d+)"', labels)
        if code and int(code.group(1)) >= 400:
            counts["errors"] += n
            counts[f"code:{code.group(1)}"] += n
            if code.group(1) == "409" and 'resource="clusterversions"' in labels:
                counts["cv_conflicts"] += n
    return counts


def requests_between(before: Counter[str], after: Counter[str]) -> Counter[str]:
    delta = Counter({k: after[k] - before[k] for k in after})
    delta["total"] -= 1  # the first /metrics scrape itself
    return delta


@contextlib.contextmanager
def control_plane() -> Any:
    from tests.e2e.controlplane import ControlPlane

    cp = ControlPlane()
    try:
        cp.start()
        yield cp
    finally:
        cp.stop()


def bootstrap(cp: Any, env: dict[str, str]) -> None:
    run = timed(cvo_argv("bootstrap", "--kubeconfig", cp.kubeconfig_path), env, timeout=180)
    if run.code != 0:
        raise RuntimeError(f"cvo bootstrap failed ({run.code}): {run.stderr[-1500:]}")


def start_sim_operators(cp: Any, env: dict[str, str], releases: list[Path], behaviours: Path) -> Stamped:
    argv = cvo_argv("--log-format", "json", "-v", "sim-operators", "--kubeconfig", cp.kubeconfig_path,
                    "--operators", str(behaviours))
    for release in releases:
        argv += ["--release", str(release)]
    sim = Stamped(argv, env)
    if not sim.wait_for(r"^sim-operators: \d+ operators? of ", READY_TIMEOUT):
        sim.stop()
        raise RuntimeError(f"cvo sim-operators did not start:\n{sim.tail()}")
    time.sleep(0.5)  # its watches open right after that line
    return sim
