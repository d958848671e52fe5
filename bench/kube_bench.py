"""``make bench`` section "kube": the corpus swept into the real test control plane, against kubectl.

Each run gets a fresh control plane (etcd + kube-apiserver, ``tests/e2e/controlplane.py``), so
neither tool meets a warm server.  cvo runs ``cvo install`` as a whole process with
``cvo sim-operators`` reporting every ClusterOperator at once (``default: {delay: 0s}``); kubectl
runs ``kubectl apply --server-side`` over the very same files.  A separate run upgrades to a
derived next version in update mode to measure how fast cvo reacts when a ClusterOperator it
waits on becomes ready.

The upgrade target is not given to sim-operators with ``--release``: it loads the target from the
ClusterVersion when ``cvo upgrade`` sets it, as a user's sim-operators would.

A cvo run takes 15–60 s (one attempt, or two with the CVO's back-off of about 25 s between them;
before the ClusterVersion status writes were serialised, self-inflicted Conflicts made it ~6.5 min),
a kubectl run 1–2 minutes (2–3 passes): ``--repeats 7`` means about 20 minutes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "ocp-5.0-nightly"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

KUBECTL = Path("/usr/bin/kubectl")
TIMEOUT = "10m"  # cvo's own --timeout for a sweep
PROCESS_TIMEOUT = 900.0  # seconds: a tool run that takes longer is killed and reported
READY_TIMEOUT = 120.0  # seconds for sim-operators to start watching
BEHAVIOURS = "default:\n  delay: 0s\n"  # every simulated operator reports Available at once


# --- the input: the corpus as both tools can apply it ----------------------------------------------


@dataclass
class Prepared:
    directory: Path
    version: str
    documents: int
    files: int
    dropped_unserved: Counter[str]  # "apiVersion Kind" -> documents the plain API server cannot serve
    dropped_load: int  # documents cvo's own load filters exclude (other profiles, feature sets)
    dropped_delete: int  # documents cvo deletes rather than applies (release.openshift.io/delete)
    cluster_operators: int
    prepare_seconds: float


def _api(cp: Any, path: str, accept: str = "application/json") -> Any:
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
    group_versions = ["v1"] + [v["groupVersion"] for g in _api(cp, "/apis")["groups"] for v in g["versions"]]
    for gv in group_versions:
        doc = _api(cp, "/api/v1" if gv == "v1" else f"/apis/{gv}")
        for res in doc.get("resources", []):
            if "/" not in res["name"]:
                served.add((gv, res["kind"]))
    return served


def crd_kinds(manifests: list[Any]) -> set[tuple[str, str]]:
    """(apiVersion, kind) the payload's own CustomResourceDefinitions serve."""
    served: set[tuple[str, str]] = set()
    for m in manifests:
        if m.kind != "CustomResourceDefinition" or m.group != "apiextensions.k8s.io":
            continue
        spec = m.obj.get("spec") or {}
        kind = (spec.get("names") or {}).get("kind")
        for version in spec.get("versions") or []:
            if version.get("served", True) and kind:
                served.add((f"{spec.get('group')}/{version.get('name')}", kind))
    return served


def _no_template(data: bytes) -> bytes:
    """Rendered JSON that the loader will not render again: ``{{`` (only ever inside strings in compact
    JSON) written as ``\\u007b{``, which every JSON decoder reads back as the same ``{{``."""
    while b"{{" in data:
        data = data.replace(b"{{", b"\\u007b{")
    return data


def prepare(target: Path, builtin: set[tuple[str, str]]) -> Prepared:
    """The corpus as both tools get it: cvo's load filters applied, unservable kinds dropped, JSON files."""
    from cvo.payload.loader import IMAGE_REFERENCES_FILE, METADATA_FILE, RELEASE_MANIFEST_DIR, load_release
    from cvo.payload.manifest import DELETE_ANNOTATION

    started = time.perf_counter()
    release = load_release(CORPUS, use_cache=False)
    servable = builtin | crd_kinds(release.manifests)
    unserved: Counter[str] = Counter()
    deleted = 0
    by_file: dict[str, list[bytes]] = {}
    order: list[str] = []
    operators = 0
    for m in release.manifests:
        if m.path not in by_file:
            by_file[m.path] = []
            order.append(m.path)
        if (m.api_version, m.kind) not in servable:
            unserved[f"{m.api_version} {m.kind}"] += 1
            continue
        if m.annotations.get(DELETE_ANNOTATION) == "true":
            deleted += 1
            continue
        if m.kind == "ClusterOperator" and m.group == "config.openshift.io":
            operators += 1
        by_file[m.path].append(m.raw)
    for directory in ("manifests", RELEASE_MANIFEST_DIR):
        (target / directory).mkdir(parents=True, exist_ok=True)
    for name in (METADATA_FILE, IMAGE_REFERENCES_FILE):
        shutil.copyfile(CORPUS / RELEASE_MANIFEST_DIR / name, target / RELEASE_MANIFEST_DIR / name)
    files = 0
    for path in order:
        docs = by_file[path]
        if not docs:
            continue
        data = b"\n".join(docs) + b"\n"
        if path.startswith("manifests/"):
            data = _no_template(data)
        (target / path).write_bytes(data)
        files += 1
    documents = sum(len(d) for d in by_file.values())
    # What cvo will read back must be exactly what was kept, in the same order, from the same file names.
    import orjson

    again = load_release(target, use_cache=False)
    kept = [(m.path, orjson.loads(m.raw)) for m in release.manifests
            if (m.api_version, m.kind) in servable and m.annotations.get(DELETE_ANNOTATION) != "true"]
    if [(m.path, orjson.loads(m.raw)) for m in again.manifests] != kept or again.excluded:
        raise SystemExit("bench kube: the prepared release does not load back as the kept documents")
    return Prepared(target, release.version, documents, files, unserved, len(release.excluded), deleted, operators,
                    time.perf_counter() - started)


def next_release(prepared: Path, old: str, target: Path) -> tuple[Path, str]:
    """The upgrade target: ``derived_release`` with the next patch version, and every image renamed so
    that each operator with Deployments rolls out only when cvo applies its new Deployment."""
    from bench.scale import derived_release

    match = re.match(r"^(\d+)\.(\d+)\.(\d+)(.*)$", old)
    if not match:
        raise SystemExit(f"bench kube: cannot derive a next version from {old!r}")
    major, minor, patch, rest = match.groups()
    new = f"{major}.{minor}.{int(patch) + 1}{rest}"
    derived_release(prepared, old, new, target)
    for path in (target / "release-manifests").iterdir():
        data = path.read_bytes()
        renamed = data.replace(b"/ocp-v4.0-art-dev@", b"/ocp-v4.0-art-dev-next@")
        if renamed != data:
            path.write_bytes(renamed)
    return target, new


# --- processes -----------------------------------------------------------------------------------------


def cvo_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "cvo", *args]


def _preexec() -> None:
    """Children die with the bench (the control plane's own helper: PR_SET_PDEATHSIG)."""
    from tests.e2e.controlplane import _die_with_parent

    _die_with_parent()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Stamped:
    """A background process whose output lines are stamped with the wall time the bench read them."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.lines: list[tuple[float, str, str]] = []  # (time.time(), "out" | "err", line)
        self._changed = threading.Condition()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, preexec_fn=_preexec)
        self._readers = [threading.Thread(target=self._read, args=(stream, name), daemon=True)
                         for stream, name in ((self.proc.stdout, "out"), (self.proc.stderr, "err"))]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: Any, name: str) -> None:
        for raw in iter(stream.readline, b""):
            stamp = time.time()
            with self._changed:
                self.lines.append((stamp, name, raw.decode("utf-8", "replace").rstrip("\n")))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float) -> bool:
        """Until a line matching ``pattern`` was printed (False on timeout, or if the process ended)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                if any(regex.search(line) for _, _, line in self.lines):
                    return True
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return False
                self._changed.wait(min(left, 0.5))

    def tail(self, n: int = 15) -> str:
        with self._changed:
            return "\n".join(line for _, _, line in self.lines[-n:])

    def stop(self) -> None:
        _stop(self.proc)
        for reader in self._readers:
            reader.join(timeout=5)


@dataclass
class Timed:
    wall: float | None  # None: killed at PROCESS_TIMEOUT
    code: int | None
    started: float  # time.time() at start
    stdout: str
    stderr: str
    cpu: float = 0.0  # user + system CPU seconds of the process (and children it waited for)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str], timeout: float = PROCESS_TIMEOUT) -> Timed:
    """Run ``argv`` as a whole process, output to files (a pipe could fill), and time it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.time()
        t0 = time.perf_counter()
        cpu0 = _children_cpu()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, preexec_fn=_preexec)
        try:
            code: int | None = proc.wait(timeout=timeout)
            wall: float | None = time.perf_counter() - t0
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code, wall = None, None
        out.seek(0)
        err.seek(0)
        return Timed(wall, code, started, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                     _children_cpu() - cpu0)


def _process_cpu_ms(proc: Any) -> int:
    """CPU milliseconds (user + system) a running process has used, from ``/proc/PID/stat``."""
    if proc is None:
        return 0
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int((int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK"))


def request_counts(cp: Any) -> Counter[str]:
    """``apiserver_request_total`` summed: all, 4xx/5xx, and 409s on the ClusterVersion; and the CPU
    kube-apiserver and etcd have used (``server_cpu_ms``)."""
    counts: Counter[str] = Counter()
    counts["server_cpu_ms"] = _process_cpu_ms(getattr(cp, "_apiserver", None)) + _process_cpu_ms(getattr(cp, "_etcd", None))
    for line in _api(cp, "/metrics", accept="text/plain").splitlines():
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


# --- the cvo log ---------------------------------------------------------------------------------------


def _wall(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def events(stderr: str) -> list[dict[str, Any]]:
    """cvo's JSON-lines events, each with ``t``: its wall time (the ``timestamp`` field) as epoch seconds."""
    out = []
    for line in stderr.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "timestamp" in event and "event" in event:
            event["t"] = _wall(event["timestamp"])
            out.append(event)
    return out


@dataclass
class Attempt:
    seconds: float
    errors: int  # failed nodes the attempt reported (distinct messages)
    task_failures: Counter[str] = field(default_factory=Counter)  # reason -> task.failed events in it
    backoff: float = 0.0  # from its failure to the next attempt


@dataclass
class Breakdown:
    """Where one cvo sweep's wall time went, from its events."""

    startup: float = 0.0  # process start -> sweep.started (imports, load, connect, ClusterVersion)
    attempts: list[Attempt] = field(default_factory=list)
    finish: float = 0.0  # last attempt's end -> process exit (final status, report)

    @property
    def applying(self) -> float:
        return sum(a.seconds for a in self.attempts)

    @property
    def backoff(self) -> float:
        return sum(a.backoff for a in self.attempts)

    @property
    def task_failures(self) -> int:
        return sum(sum(a.task_failures.values()) for a in self.attempts)


def breakdown(evs: list[dict[str, Any]], started: float, wall: float) -> Breakdown:
    b = Breakdown()
    sweep = next((e["t"] for e in evs if e["event"] == "sweep.started"), None)
    if sweep is None:
        return b
    b.startup = sweep - started
    begun: float | None = None
    last_end = sweep
    failures: Counter[str] = Counter()
    for e in evs:
        name = e["event"]
        if name == "attempt.started":
            if b.attempts and b.attempts[-1].backoff == 0.0 and begun is None:
                b.attempts[-1].backoff = e["t"] - last_end
            begun, failures = e["t"], Counter()
        elif name == "task.failed":
            failures[str(e.get("reason", ""))] += 1
        elif name in ("attempt.failed", "sweep.completed", "sweep.timeout") and begun is not None:
            message = str(e.get("message", "")) if name == "attempt.failed" else ""
            errors = sum(1 for line in message.splitlines() if line.startswith("* ")) or (1 if message else 0)
            b.attempts.append(Attempt(e["t"] - begun, errors, failures))
            last_end, begun = e["t"], None
    b.finish = started + wall - last_end
    return b


# --- one run of each tool ------------------------------------------------------------------------------


@dataclass
class ToolRun:
    wall: float | None
    requests: Counter[str]
    errors: int  # documents not applied (kubectl) / task failures (cvo)
    ok: bool
    note: str = ""
    breakdown: Breakdown | None = None
    passes: list[tuple[float, int, int]] = field(default_factory=list)  # kubectl: (wall, requests, errors) per pass
    cpu: float = 0.0  # the tool's own CPU seconds
    helper_cpu: float = 0.0  # cvo: sim-operators' CPU seconds during the run


def cvo_run(prep: Prepared, env: dict[str, str], behaviours: Path) -> ToolRun:
    sim: Stamped | None = None
    with control_plane() as cp:
        try:
            bootstrap(cp, env)
            sim = start_sim_operators(cp, env, [prep.directory], behaviours)
            before, sim_cpu = request_counts(cp), _process_cpu_ms(sim.proc)
            run = timed(cvo_argv("--log-format", "json", "install", str(prep.directory), "--kubeconfig",
                                 cp.kubeconfig_path, "-o", "json", "--timeout", TIMEOUT), env)
            requests = requests_between(before, request_counts(cp))
            sim_cpu = _process_cpu_ms(sim.proc) - sim_cpu
        finally:
            if sim is not None:
                sim.stop()
    evs = events(run.stderr)
    report: dict[str, Any] = {}
    with contextlib.suppress(json.JSONDecodeError):
        report = json.loads(run.stdout)
    ok = run.code == 0 and bool(report.get("ok"))
    if ok:
        note = ""
    elif run.wall is None:
        note = f"killed after {PROCESS_TIMEOUT:.0f} s"
    else:
        note = f"exit {run.code}: {report.get('message') or ' '.join(run.stderr.strip().splitlines()[-1:])}"
    b = breakdown(evs, run.started, run.wall or PROCESS_TIMEOUT)
    return ToolRun(run.wall, requests, b.task_failures, ok, note, b, cpu=run.cpu, helper_cpu=sim_cpu / 1000)


MAX_KUBECTL_PASSES = 4


def kubectl_version() -> str | None:
    if not os.access(KUBECTL, os.X_OK):
        return None
    try:
        out = subprocess.run([str(KUBECTL), "version", "--client", "-o", "json"], capture_output=True, timeout=60,
                             check=True).stdout
        return str(json.loads(out)["clientVersion"]["gitVersion"])
    except (subprocess.SubprocessError, OSError, ValueError, KeyError):
        return "unknown version"


def kubectl_run(prep: Prepared, env: dict[str, str], work: Path) -> ToolRun:
    """``kubectl apply --server-side`` over the files: the first pass is the measurement; further passes
    (same server) show what it takes kubectl to apply everything it can."""
    cache = Path(tempfile.mkdtemp(prefix="kubectl-cache-", dir=work))
    passes: list[tuple[float, int, int]] = []
    first: ToolRun | None = None
    try:
        with control_plane() as cp:
            bootstrap(cp, env)  # the same starting state as cvo's runs
            argv = [str(KUBECTL), "--kubeconfig", cp.kubeconfig_path, "--cache-dir", str(cache), "apply",
                    "--server-side", "--force-conflicts", "-f", str(prep.directory / "manifests"),
                    "-f", str(prep.directory / "release-manifests")]
            for _ in range(MAX_KUBECTL_PASSES):
                before = request_counts(cp)
                run = timed(argv, env)
                requests = requests_between(before, request_counts(cp))
                applied = sum(1 for line in run.stdout.splitlines() if line.endswith(" serverside-applied"))
                errors = prep.documents - applied
                if run.wall is None:
                    if first is None:
                        return ToolRun(None, requests, errors, False, f"killed after {PROCESS_TIMEOUT:.0f} s")
                    break
                passes.append((run.wall, requests["total"], errors))
                if first is None:
                    unmapped = run.stderr.count("resource mapping not found")
                    server = sum(1 for line in run.stderr.splitlines() if line.startswith("Error from server"))
                    note = (f"{unmapped} of a kind not served yet (its CRD is in the same apply), "
                            f"{server} rejected by the server")
                    first = ToolRun(run.wall, requests, errors, errors == 0, note, cpu=run.cpu)
                if errors == 0 or (len(passes) > 1 and errors >= passes[-2][2]):
                    break
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    assert first is not None
    first.passes = passes
    return first


# --- reaction delay: an upgrade in update mode ---------------------------------------------------------


@dataclass
class Sample:
    """One ClusterOperator cvo waited on during the upgrade."""

    operator: str
    report: float | None  # sim-operators' report Available at the new version -> next dependent start (s)
    ready: float | None  # cvo's operator.ready event -> next dependent start (s); None: no such event
    noticed: float | None  # sim-operators' report -> cvo's operator.ready event (s)
    started: str  # what started: "node N" or the task
    gating: bool  # nothing else the started task waited for finished after this operator's node
    retried: bool  # cvo gave up the wait on an API error and re-applied the task after its back-off


@dataclass
class Reaction:
    samples: list[Sample] = field(default_factory=list)
    waited: int = 0  # ClusterOperators cvo waited on during the upgrade
    operators: int = 0  # ClusterOperators in the release
    unmatched: list[str] = field(default_factory=list)  # waited on, but no dependent start or report found
    retry_errors: Counter[str] = field(default_factory=Counter)  # task.retry on ClusterOperator tasks, by error
    wall: float | None = None
    attempts: int = 0
    ok: bool = False
    note: str = ""


REPORT_LINE = re.compile(r"^\S+ clusteroperator/([^:]+): (.*?)(?:; versions (.*))?$")


def reaction(evs: list[dict[str, Any]], release_dir: Path, version: str,
             reports: list[tuple[float, str]]) -> Reaction:
    """Per ClusterOperator cvo waited on: the delay until it started the next task that depends on it."""
    import networkx as nx

    from cvo.payload.graph import Mode, build_graph, make_tasks
    from cvo.payload.loader import load_release

    release = load_release(release_dir)
    graph = build_graph(make_tasks(release.manifests, Mode.UPDATE), Mode.UPDATE)
    node_of: dict[str, int] = {}
    co_at: dict[str, tuple[int, int, str]] = {}  # operator -> (node, position in it, task)
    for node in graph.nodes:
        for i, task in enumerate(graph.nodes[node]["tasks"]):
            node_of[str(task)] = node
            if task.manifest.kind == "ClusterOperator" and task.manifest.group == "config.openshift.io":
                co_at[task.manifest.name] = (node, i, str(task))
    with_tasks = {n for n in graph.nodes if graph.nodes[n]["tasks"]}
    out = Reaction(operators=len(co_at))

    attempt = -1
    tagged: list[tuple[int, dict[str, Any]]] = []
    for e in evs:
        if e["event"] == "attempt.started":
            attempt += 1
        tagged.append((attempt, e))
        if e["event"] == "task.retry" and str(e.get("task", "")).startswith("clusteroperator "):
            on = re.search(r' on (\S+ "[^"]*")', str(e.get("message", "")))
            out.retry_errors[f"{e.get('error')}" + (f" on {on.group(1)}" if on else "")] += 1
    # The simulated operators' first report of each operator Available at the new version.
    available: dict[str, float] = {}
    for stamp, line in reports:
        match = REPORT_LINE.match(line)
        if match and "Available=True" in match.group(2) and f"={version}" in (match.group(3) or ""):
            available.setdefault(match.group(1), stamp)

    def first_dependent(name: str, a: int, begin: int, not_before: float) -> dict[str, Any] | None:
        node, position, _ = co_at[name]
        same_node = {str(t) for t in graph.nodes[node]["tasks"][position + 1:]}
        later_nodes = nx.descendants(graph, node) & with_tasks
        for b, f in tagged[begin:]:
            if b != a:
                if b > a:
                    return None
                continue
            if f["t"] < not_before:
                continue
            if f["event"] == "task.started" and f.get("task") in same_node:
                return f
            if f["event"] == "node.started" and f.get("node") in later_nodes:
                return f
            if f["event"] == "task.started" and node_of.get(str(f.get("task"))) in later_nodes:
                return f
        return None

    def gating(name: str, a: int, first: dict[str, Any]) -> bool:
        node = co_at[name][0]
        if first["event"] == "task.started" and node_of.get(str(first.get("task"))) == node:
            return True  # the next task of its own node: it waited for nothing else
        started = first["node"] if first["event"] == "node.started" else node_of[str(first.get("task"))]
        before = nx.ancestors(graph, started) & with_tasks
        done = {f.get("node"): f["t"] for b, f in tagged if b == a and f["event"] == "node.done" and f.get("node") in before}
        return node in done and done[node] >= max(done.values())

    seen: set[str] = set()
    for index, (a, e) in enumerate(tagged):
        name = str(e.get("operator"))
        if e["event"] != "task.waiting" or name in seen or name not in co_at:
            continue
        seen.add(name)
        task = co_at[name][2]
        ready_at = next(((i, f) for i, (b, f) in enumerate(tagged) if i > index and b == a
                         and f["event"] == "operator.ready" and f.get("operator") == name), None)
        reported = available.get(name)
        if reported is not None and reported < e["t"]:
            reported = None  # it was ready before cvo looked: not a reaction
        anchor = reported if reported is not None else (ready_at[1]["t"] if ready_at else None)
        first = first_dependent(name, a, index, anchor) if anchor is not None else None
        if first is None:
            out.unmatched.append(name)
            continue
        retried = any(f["event"] == "task.retry" and f.get("task") == task and e["t"] <= f["t"] <= first["t"]
                      for b, f in tagged if b == a)
        ready_delay = None
        if ready_at is not None:
            after_ready = first_dependent(name, a, ready_at[0], ready_at[1]["t"])
            ready_delay = after_ready["t"] - ready_at[1]["t"] if after_ready is not None else None
        what = f"node {first['node']}" if first["event"] == "node.started" else str(first.get("task"))
        noticed = ready_at[1]["t"] - reported if ready_at is not None and reported is not None else None
        out.samples.append(Sample(name, first["t"] - reported if reported is not None else None, ready_delay, noticed,
                                  what, gating(name, a, first), retried))
    out.waited = len(seen)
    return out


def reaction_run(prep: Prepared, nxt: Path, version: str, env: dict[str, str], at_once: Path,
                 after_a_second: Path) -> Reaction:
    sim: Stamped | None = None
    with control_plane() as cp:
        try:
            bootstrap(cp, env)
            sim = start_sim_operators(cp, env, [prep.directory], at_once)
            # The install only sets the cluster up here: a short reconcile interval keeps its back-offs short.
            install = timed(cvo_argv("--log-format", "json", "install", str(prep.directory), "--kubeconfig",
                                     cp.kubeconfig_path, "-o", "json", "--timeout", TIMEOUT, "--interval", "30s"), env)
            if install.code != 0:
                return Reaction(note=f"the install before the upgrade failed ({install.code}): "
                                     f"{install.stderr.strip().splitlines()[-1:]}")
            sim.stop()
            # The target comes from the ClusterVersion once cvo upgrade sets it (not --release).
            sim = start_sim_operators(cp, env, [prep.directory], after_a_second)
            upgrade = timed(cvo_argv("--log-format", "json", "-vv", "upgrade", "--to", str(nxt), "--kubeconfig",
                                     cp.kubeconfig_path, "-o", "json", "--timeout", TIMEOUT), env)
            reports = [(stamp, line) for stamp, stream, line in sim.lines if stream == "out" and stamp >= upgrade.started]
        finally:
            if sim is not None:
                sim.stop()
    evs = events(upgrade.stderr)
    out = reaction(evs, nxt, version, reports)
    out.wall = upgrade.wall
    out.attempts = sum(1 for e in evs if e["event"] == "attempt.started")
    out.ok = upgrade.code == 0
    if not out.ok:
        out.note = ("killed" if upgrade.wall is None else f"exit {upgrade.code}: "
                    f"{upgrade.stderr.strip().splitlines()[-1:] if upgrade.stderr.strip() else ''}")
    return out


# --- the section ---------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: with fewer than 100 samples, p99 is the largest."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "—" if value is None else format(value, spec)


def _ratio(numerator: float | None, denominator: float | None) -> str:
    return f"{numerator / denominator:.2f}" if numerator and denominator else "—"


def _progress(message: str) -> None:
    print(f"bench: kube: {message}", file=sys.stderr, flush=True)


def kube_section(repeats: int) -> list[str]:
    lines = ["## Sweeping the corpus into a real API server: `cvo install` vs `kubectl apply --server-side`", ""]
    work = Path(tempfile.mkdtemp(prefix="cvo-bench-kube-"))
    env = dict(os.environ, CVO_CACHE_DIR=str(work / "cache"))
    env.pop("KUBECONFIG", None)
    try:
        _progress("preparing the corpus")
        with control_plane() as cp:
            builtin = builtin_kinds(cp)
            apiserver_version = _api(cp, "/version").get("gitVersion", "?")
        prep = prepare(work / "release", builtin)
        nxt, next_version = next_release(prep.directory, prep.version, work / "next")
        for directory in (prep.directory, nxt):  # fill the parse cache: sweeps are measured, not parsing
            subprocess.run(cvo_argv("plan", "-o", "json", str(directory)), env=env, check=True, timeout=300,
                           stdout=subprocess.DEVNULL)
        at_once, after_a_second = work / "at-once.yaml", work / "after-a-second.yaml"
        at_once.write_text(BEHAVIOURS)
        after_a_second.write_text("default:\n  delay: 1s\n")
        kubectl = kubectl_version()

        cvo_runs: list[ToolRun] = []
        kubectl_runs: list[ToolRun] = []
        for i in range(repeats):
            for tool in (("cvo", "kubectl") if i % 2 == 0 else ("kubectl", "cvo")):
                if tool == "kubectl" and kubectl is None:
                    continue
                _progress(f"{tool} run {i + 1}/{repeats}")
                try:
                    if tool == "cvo":
                        cvo_runs.append(cvo_run(prep, env, at_once))
                    else:
                        kubectl_runs.append(kubectl_run(prep, env, work))
                except (RuntimeError, OSError, subprocess.SubprocessError) as err:  # a run that could not be set up
                    failed = ToolRun(None, Counter(), 0, False, f"not run: {str(err).splitlines()[0][:200]}")
                    (cvo_runs if tool == "cvo" else kubectl_runs).append(failed)
                    _progress(f"{tool} run {i + 1} failed: {err}")
        _progress("reaction delay (install, then upgrade)")
        try:
            react = reaction_run(prep, nxt, next_version, env, at_once, after_a_second)
        except (RuntimeError, OSError, subprocess.SubprocessError) as err:
            react = Reaction(note=f"the run could not be set up: {str(err).splitlines()[0][:200]}")
        lines += render(prep, repeats, cvo_runs, kubectl_runs, kubectl, apiserver_version, react)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return lines


def _row(tool: str, docs: int, runs: list[ToolRun], ratio: str, errors: str) -> str:
    runs = [r for r in runs if r.wall is not None]  # killed or not run: reported in the errors column
    wall = _median([r.wall for r in runs if r.wall is not None])
    requests = _median([float(r.requests["total"]) for r in runs])
    rate = _median([r.requests["total"] / r.wall for r in runs if r.wall])
    return f"| {tool} | {docs} | {_fmt(wall)} | {_fmt(requests, '.0f')} | {_fmt(rate, '.0f')} | {errors} | {ratio} |"


def render(prep: Prepared, repeats: int, cvo_runs: list[ToolRun], kubectl_runs: list[ToolRun], kubectl: str | None,
           apiserver: str, react: Reaction) -> list[str]:
    dropped = ", ".join(f"{n} {kind}" for kind, n in prep.dropped_unserved.most_common()) or "none"
    lines = [
        f"Input, prepared once: the corpus as cvo loads it (default profile and feature set: {prep.dropped_load} "
        f"documents for other profiles or feature sets left out, and {prep.dropped_delete} that cvo deletes "
        f"rather than applies), minus the kinds a plain kube-apiserver cannot serve (neither built in, by its "
        f"discovery, nor defined by a CRD in the payload): {dropped}. That leaves **{prep.documents} documents** "
        f"in {prep.files} files, each written as JSON under its original name, so both tools read the same "
        f"objects in the same order and run levels. Every run gets a fresh control plane (etcd and "
        f"kube-apiserver {apiserver}, `tests/e2e/controlplane.py`) with `cvo bootstrap` applied first (not timed); "
        f"runs alternate between the tools, {repeats} each.",
        "",
        f"*cvo*: `cvo install DIR --kubeconfig K -o json --timeout {TIMEOUT}` timed as a whole process (start-up, "
        f"load with a warm parse cache, sweep, report), with `cvo sim-operators` running beside it, every operator "
        f"reporting Available at once (`default: {{delay: 0s}}`): it returns only when all "
        f"{prep.cluster_operators} ClusterOperators are Available. *kubectl*: `kubectl apply --server-side "
        f"--force-conflicts -f DIR/manifests -f DIR/release-manifests` (" + (
            f"`{KUBECTL}` → `{os.path.realpath(KUBECTL)}`, {kubectl}, the Google Cloud SDK's packaged kubectl"
            if kubectl else f"`{KUBECTL}` is missing: no kubectl runs") +
        "); it waits on nothing, and a custom resource whose CRD is in the same apply fails (kubectl maps every "
        "kind before it applies anything). Its errors are the documents not applied; further passes on the same "
        "server show what repeating it achieves. Requests: `apiserver_request_total` from the API server's "
        "`/metrics` before and after (they include the API server's own internal requests and, for cvo, "
        "sim-operators' requests and watches).",
        "",
        "| tool | documents | wall s (median) | requests | requests/s | errors | ratio cvo/kubectl |",
        "|---|---|---|---|---|---|---|",
    ]
    cvo_wall = _median([r.wall for r in cvo_runs if r.wall is not None])
    failed = [r for r in cvo_runs if not r.ok]
    cvo_errors = (f"{_fmt(_median([float(r.errors) for r in cvo_runs if r.wall is not None]), '.0f')} task failures, "
                  f"{_fmt(_median([float(len(r.breakdown.attempts)) for r in cvo_runs if r.breakdown]), '.0f')} attempts"
                  + (f"; {len(failed)} of {len(cvo_runs)} runs failed: {failed[0].note}" if failed else ""))
    kubectl_wall = _median([r.wall for r in kubectl_runs if r.wall is not None])
    repeated_wall: float | None = None
    lines.append(_row(f"cvo install (waits on {prep.cluster_operators} ClusterOperators)", prep.documents, cvo_runs,
                      "—", cvo_errors))
    if kubectl is None:
        lines.append(f"| kubectl | {prep.documents} | — | — | — | not installed ({KUBECTL} missing) | — |")
    else:
        done = [r for r in kubectl_runs if r.wall is not None]
        errs = _median([float(r.errors) for r in done])
        broken = [r for r in kubectl_runs if r.wall is None]
        lines.append(_row("kubectl apply --server-side, one pass", prep.documents, kubectl_runs,
                          _ratio(cvo_wall, kubectl_wall),
                          (f"{_fmt(errs, '.0f')} not applied: {done[0].note}" if done else "—")
                          + (f"; {len(broken)} of {len(kubectl_runs)} runs failed: {broken[0].note}" if broken else "")))
        # Up to the first pass that reached the fewest errors: the end state repeating kubectl achieves.
        passes = [ps[:1 + min(range(len(ps)), key=lambda i: ps[i][2])] for ps in (r.passes for r in kubectl_runs)
                  if ps]
        if passes:
            total = [ToolRun(sum(p[0] for p in ps), Counter(total=sum(p[1] for p in ps)), ps[-1][2], ps[-1][2] == 0)
                     for ps in passes]
            counts = "/".join(str(n) for n in sorted({len(ps) for ps in passes}))
            repeated_wall = _median([r.wall for r in total if r.wall])
            lines.append(_row(f"kubectl, repeated until its errors stop falling ({counts} passes)", prep.documents,
                              total, _ratio(cvo_wall, repeated_wall),
                              f"{_fmt(_median([float(r.errors) for r in total]), '.0f')} never applied"))
    lines.append("")
    if cvo_wall and kubectl_wall:
        verdict = "met" if cvo_wall * 2 <= kubectl_wall else "not met"
        text = (f"Goal \"at least 2× faster than kubectl apply while waiting on every ClusterOperator\", against "
                f"one kubectl pass: **{verdict}** — cvo takes {cvo_wall / kubectl_wall:.2f}× kubectl's wall time "
                f"({cvo_wall:.1f} s vs {kubectl_wall:.1f} s, {kubectl_wall / cvo_wall:.1f}× faster), although that "
                f"pass leaves documents unapplied.")
        if repeated_wall:
            verdict = "met" if cvo_wall * 2 <= repeated_wall else "not met"
            text += (f" Against kubectl repeated until its errors stop falling (the nearest kubectl gets to an "
                     f"install, still short of one): **{verdict}** — {cvo_wall / repeated_wall:.2f}× "
                     f"({repeated_wall / cvo_wall:.1f}× faster).")
        lines += [text, ""]
    verbs = []
    for tool, runs in (("cvo", cvo_runs), ("kubectl (first pass)", kubectl_runs)):
        if runs:
            names = sorted({k for r in runs for k in r.requests if k.startswith("verb:") and r.requests[k] > 0},
                           key=lambda k: -max(r.requests[k] for r in runs))
            if names:
                verbs.append(f"{tool}: " + ", ".join(
                    f"{k[5:]} {_fmt(_median([float(r.requests[k]) for r in runs]), '.0f')}" for k in names))
    if verbs:
        lines += ["Requests by verb (medians): " + "; ".join(verbs) + ".", ""]
    lines += cpu_lines(cvo_runs, kubectl_runs)
    lines += where_cvo_time_goes(cvo_runs)
    lines += reaction_lines(react, prep)
    return lines


def cpu_lines(cvo_runs: list[ToolRun], kubectl_runs: list[ToolRun]) -> list[str]:
    """Who used the machine's CPU during the runs: the server, the tool, sim-operators."""
    cores = os.cpu_count() or 1
    parts = []
    for tool, runs in (("cvo", cvo_runs), ("kubectl (first pass)", kubectl_runs)):
        done = [r for r in runs if r.wall]
        if not done:
            continue
        wall = _median([r.wall for r in done if r.wall])
        server = _median([r.requests["server_cpu_ms"] / 1000 for r in done])
        own = _median([r.cpu for r in done])
        helper = _median([r.helper_cpu for r in done]) if tool == "cvo" else 0.0
        busy = ((server or 0.0) + (own or 0.0) + (helper or 0.0)) / (wall or 1.0) / cores
        parts.append(f"{tool}: kube-apiserver + etcd {_fmt(server, '.1f')} s, the tool itself {_fmt(own, '.1f')} s"
                     + (f", sim-operators {_fmt(helper, '.1f')} s" if tool == "cvo" else "")
                     + f" over {_fmt(wall, '.1f')} s of wall time ({100 * busy:.0f} % of {cores} cores)")
    if not parts:
        return []
    return ["CPU seconds during a run (medians): " + "; ".join(parts) + ". Most of it is the API server's own "
            "work on the payload's CRDs (validating and storing their schemas, then re-publishing OpenAPI and "
            "discovery for each one), which both tools cause; once the server is the bottleneck, more parallel "
            "requests from cvo cannot make the install faster on this machine.", ""]


def where_cvo_time_goes(runs: list[ToolRun]) -> list[str]:
    timed_runs = sorted((r for r in runs if r.wall is not None and r.breakdown), key=lambda r: r.wall or 0.0)
    if not timed_runs:
        return []
    r = timed_runs[(len(timed_runs) - 1) // 2]  # the median run (the lower one of an even count)
    b = r.breakdown
    assert b is not None and r.wall is not None
    codes = ", ".join(f"{r.requests[k]} {k[5:]}" for k in sorted(r.requests, key=lambda k: -r.requests[k])
                      if k.startswith("code:") and r.requests[k] > 0) or "none"
    if r.requests.get("code:404"):
        codes += ("; a 404 is a create into a namespace another node has not created yet, or a discovery "
                  "look-up of a kind whose CRD is not Established yet (cvo then waits for it and applies again), "
                  "or a read of an object that does not exist yet")
    parts = []
    for i, a in enumerate(b.attempts, start=1):
        failed = ", ".join(f"{n} {reason}" for reason, n in a.task_failures.most_common())
        what = ("completed" if a.errors == 0 else
                f"{a.errors} failed node(s), " + (f"task failures: {failed}" if failed else "none of them a task's"))
        parts.append(f"attempt {i}: {a.seconds:.1f} s, {what}" + (f", then {a.backoff:.1f} s back-off" if a.backoff
                                                                    else ""))
    return [
        f"Where cvo's time goes (its median run, {r.wall:.1f} s, from its own events): start-up and load "
        f"{b.startup:.1f} s; {len(b.attempts)} attempt(s) applying and waiting {b.applying:.1f} s in all; back-off "
        f"between a failed attempt and the next {b.backoff:.1f} s in all (the CVO's interval/8, /4, /2, then the "
        f"interval, 3m by default, +20 % jitter); final status and report {b.finish:.1f} s. " + "; ".join(parts)
        + f". 4xx/5xx answers: {r.requests['errors']} ({codes})"
        + (f"; {r.requests['cv_conflicts']} were 409 Conflicts on the ClusterVersion status that cvo writes from its "
           "parallel nodes (a Conflict on the write after a task fails that node without a `task.failed` event, "
           "and the attempt with it; one during a ClusterOperator wait re-applies the task after its back-off)"
           if r.requests["cv_conflicts"] else "; none on the ClusterVersion status") + ".",
        "",
    ]


def _stats(values: list[float]) -> str:
    ms = [1000 * v for v in values]
    return f"median {statistics.median(ms):.1f} ms, p99 {percentile(ms, 99):.1f} ms over {len(ms)}"


def reaction_lines(react: Reaction, prep: Prepared) -> list[str]:
    head = ("Reaction delay, from one more run: `cvo install` (with `--interval 30s`: it only sets the cluster up), "
            "then `cvo upgrade --to` a derived next version (`bench.scale.derived_release`, images renamed so "
            "that each operator rolls out when cvo applies its new Deployment) in update mode, where run levels "
            "wait on ClusterOperators; sim-operators (`--log-format json -v`) report each operator 1 s after its "
            "rollout starts (`default: {delay: 1s}`), so that cvo is already waiting when the report lands. Its "
            "report lines are text on stdout with whole-second timestamps (no JSON, no sub-second wall time), so "
            "the bench stamps each line with the wall time it reads it (right after the status write returned); "
            "cvo's `operator.ready` event (ready as seen by cvo) is the second clock. The start is the first "
            "`task.started` or `node.started` event after that moment belonging to a task after the "
            "ClusterOperator in its node or to a node that depends on its node. p99 is the nearest rank: with "
            "fewer than 100 samples, the largest.")
    if not react.samples:
        why = react.note or "cvo never waited on a ClusterOperator that something depended on"
        return [head, "", f"Reaction delay: not measured — {why}.", ""]
    report = [s.report for s in react.samples if s.report is not None]
    ready = [s.ready for s in react.samples if s.ready is not None]
    clean = [s.report for s in react.samples if s.report is not None and s.gating and not s.retried]
    retried = [s for s in react.samples if s.retried]
    text = [f"**Reaction delay, report → next dependent task: {_stats(report)} ClusterOperators**"
            if report else "**Reaction delay: no report lines matched**",
            f"(cvo waited on {react.waited} of {react.operators} during the upgrade, which took "
            f"{_fmt(react.wall, '.1f')} s in {react.attempts} attempt(s)"
            + ("" if react.ok else f" and did not complete: {react.note}") + ")."]
    if retried:
        errors = ", ".join(f"{n} {kind}" for kind, n in react.retry_errors.most_common())
        worst = [1000 * s.report for s in retried if s.report is not None]
        own = " — the ClusterVersion status cvo writes from its parallel tasks" if "clusterversions" in errors else ""
        text.append(f"{len(retried)} of those waits were abandoned on an API error ({errors}{own}) and the "
                    f"ClusterOperator task re-applied after the update-mode "
                    f"back-off of 10 s" + (f", so their dependents started {min(worst) / 1000:.1f}–"
                                          f"{max(worst) / 1000:.1f} s after the report" if worst else "")
                    + "; run-level siblings waiting for them inherit the delay.")
    if clean:
        others = sum(1 for s in react.samples if not s.gating and not s.retried)
        text.append(f"Where nothing else held the next task up (not retried, and the last thing it waited for): "
                    f"{_stats(clean)}" + (f"; the other {others} also waited for other nodes of their run level"
                                          if others else "") + ".")
    if ready:
        text.append(f"From cvo's `operator.ready` event instead (none is emitted for an abandoned wait): "
                    f"{_stats(ready)}.")
    noticed = [s.noticed for s in react.samples if s.noticed is not None]
    if noticed:
        text.append(f"Report → `operator.ready` (the watch event reaching cvo, and its check): {_stats(noticed)}.")
    if clean:
        goal = "met" if percentile(clean, 99) < 0.1 else "not met"
        text.append(f"Goal \"reaction delay under 100 ms\" (p99 over the ClusterOperators that were the last thing "
                    f"their dependent waited for; a dependent that still waits for a sibling of its run level has "
                    f"nothing to react to yet): **{goal}** ({1000 * percentile(clean, 99):.1f} ms).")
    elif report:
        goal = "met" if percentile(report, 99) < 0.1 else "not met"
        text.append(f"Goal \"reaction delay under 100 ms\" (p99): **{goal}**.")
    return [head, "", " ".join(text), ""]
