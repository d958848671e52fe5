"""A real, throw-away Kubernetes control plane for end-to-end tests.

Runs etcd and kube-apiserver (built from Go modules by
``hack/control-plane/build.sh`` and cached under
``${CVO_CONTROL_PLANE_CACHE:-~/.cache/cvo/control-plane}/``) as local subprocesses on
127.0.0.1, the way controller-runtime's envtest does.  By default only the API server
and etcd run: no garbage collection, no namespace finalization, pods stay Pending,
Deployments never get ReplicaSets.

``ControlPlane(acting=True)`` also runs kube-controller-manager and kube-scheduler (same
Kubernetes module as the API server) and kwok (sigs.k8s.io/kwok) with the Stages of
``hack/control-plane/kwok/stages.yaml``, and registers fake Nodes that kwok keeps Ready:
Deployments, DaemonSets, StatefulSets and Jobs roll out, PodDisruptionBudgets hold
evictions, namespaces terminate and owned objects are collected, as kwokctl's clusters do.

Pure standard library; no pytest or kubernetes-client import::

    from tests.e2e.controlplane import ControlPlane

    with ControlPlane() as cp:
        kubernetes.config.load_kube_config(config_file=cp.kubeconfig_path)
        ...
        cp.restart_apiserver()   # kill -9 the API server and start it again

    with ControlPlane(acting=True, nodes=3) as cp:
        cp.kill_component("kwok"); cp.start_component("kwok")

Run ``python tests/e2e/controlplane.py [--acting]`` to start one by hand; it prints the
kubeconfig path and runs until Ctrl-C (``hack/kwok-cluster.sh up|down`` wraps it).

Environment:
  CVO_CONTROL_PLANE_CACHE     cache root for the built binaries (default ~/.cache/cvo/control-plane);
                              read once, at import: independent of CVO_CACHE_DIR (cvo's parse
                              cache, which the test suite points at a temp dir), so the slow build
                              happens once per machine, not once per test session
  CVO_CONTROL_PLANE_BIN_DIR   use the binaries from this directory instead
  CVO_CONTROL_PLANE_KEEP=1    keep the temporary directory (logs, data) after stop()
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HACK_DIR = REPO_ROOT / "hack" / "control-plane"
BUILD_SCRIPT = HACK_DIR / "build.sh"
VERSIONS_FILE = HACK_DIR / "versions.env"
KWOK_STAGES = HACK_DIR / "kwok" / "stages.yaml"

# What each kind of control plane runs (build.sh builds the ones asked for).
APISERVER_BINARIES = ("etcd", "kube-apiserver")
COMPONENTS = ("kube-controller-manager", "kube-scheduler", "kwok")  # started in this order
ACTING_BINARIES = (*APISERVER_BINARIES, *COMPONENTS)

DEFAULT_READY_TIMEOUT = 120.0  # seconds; 2-core CI machines are slow
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
ADMIN_USER = "cvo-e2e-admin"
# Pod IPs kwok hands out (kind's default pod subnet): written into Pods and EndpointSlices only,
# nothing connects to them.
POD_CIDR = "10.244.0.0/16"
DEFAULT_NODES = 3
KWOK_LEASE_SECONDS = 10
# Users of the acting plane's components (tokens.csv): the controller-manager and the scheduler have
# the API server's bootstrap RBAC roles (as with kubeadm); kwok acts for the kubelets of every Node.
COMPONENT_USERS = {
    "kube-controller-manager": ("system:kube-controller-manager", ""),
    "kube-scheduler": ("system:kube-scheduler", ""),
    "kwok": ("kwok-controller", "system:masters"),
}
# Resolved at import time, before any test fixture changes the environment.
CACHE_ROOT = Path(os.environ.get("CVO_CONTROL_PLANE_CACHE") or Path.home() / ".cache" / "cvo" / "control-plane")


def read_versions(path: Path = VERSIONS_FILE) -> dict[str, str]:
    """K8S_VERSION / ETCD_VERSION / KWOK_VERSION from hack/control-plane/versions.env."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip().strip("\"'")
    return out


def expected_bin_dir() -> Path:
    """Where build.sh puts (or has put) the binaries for the pinned versions."""
    override = os.environ.get("CVO_CONTROL_PLANE_BIN_DIR")
    if override:
        return Path(override)
    v = read_versions()
    return CACHE_ROOT / f"{v['K8S_VERSION']}-etcd{v['ETCD_VERSION']}-kwok{v['KWOK_VERSION']}" / "bin"


def _missing(bin_dir: Path, names: Sequence[str]) -> list[str]:
    return [name for name in names if not os.access(bin_dir / name, os.X_OK)]


def ensure_binaries(names: Sequence[str] = APISERVER_BINARIES) -> Path:
    """Return the directory holding the binaries ``names``, building the missing ones.

    A cold build takes several minutes (etcd and kube-apiserver about 5, the acting plane's
    three more about 3); build.sh's progress goes to stderr.
    """
    bin_dir = expected_bin_dir()
    missing = _missing(bin_dir, names)
    if not missing:
        return bin_dir
    if os.environ.get("CVO_CONTROL_PLANE_BIN_DIR"):
        raise RuntimeError(f"CVO_CONTROL_PLANE_BIN_DIR={bin_dir} lacks {', '.join(missing)}")
    print(f"controlplane: building {', '.join(missing)} with {BUILD_SCRIPT} ...", file=sys.stderr)
    env = {**os.environ, "CVO_CONTROL_PLANE_CACHE": str(CACHE_ROOT)}
    res = subprocess.run(["bash", str(BUILD_SCRIPT), *names], stdout=subprocess.PIPE, text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT} failed with exit code {res.returncode} (see its stderr above)")
    built = Path(res.stdout.strip().splitlines()[-1])
    if _missing(built, names):
        raise RuntimeError(f"{BUILD_SCRIPT} reported {built} but {', '.join(_missing(built, names))} are not there")
    return built


def _free_port(taken: set[int]) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in taken:
            taken.add(port)
            return port


def _tail(path: Path, lines: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"<cannot read {path}: {e}>"
    return "\n".join(data.splitlines()[-lines:])


def _die_with_parent() -> None:  # runs in the child between fork and exec
    # Linux: have the kernel SIGKILL the child if the Python process dies
    # (e.g. a test runner killed with -9), so no etcd/apiserver is leaked.
    # Note: it fires when the *thread* that started the child exits.
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:
        pass


def _generate_rsa_keypair(key_path: Path, pub_path: Path) -> None:
    """Service-account signing key: openssl CLI, else the `cryptography` package."""
    openssl = shutil.which("openssl")
    if openssl:
        for args in (
            [
                openssl,
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
                str(key_path),
            ],
            [openssl, "pkey", "-in", str(key_path), "-pubout", "-out", str(pub_path)],
        ):
            res = subprocess.run(args, capture_output=True, text=True)
            if res.returncode != 0:
                raise RuntimeError(f"{' '.join(args)} failed: {res.stderr}")
        return
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError("need the openssl CLI or the `cryptography` package to make the SA key") from e
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    pub_path.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


_live: set[ControlPlane] = set()  # started and not yet stopped; stopped at exit


@atexit.register
def _stop_all() -> None:
    for cp in list(_live):
        with contextlib.suppress(Exception):
            cp.stop()


class ControlPlane:
    """etcd + kube-apiserver on 127.0.0.1 in a temporary directory; with ``acting=True`` also
    kube-controller-manager, kube-scheduler, kwok and ``nodes`` fake Nodes kept Ready.

    Attributes available after start(): ``server_url``, ``token``,
    ``kubeconfig_path``, ``ca_path``, ``workdir``, ``etcd_url``,
    ``apiserver_log``, ``etcd_log``, ``ready_seconds`` (last start/restart),
    ``node_names`` (acting), ``component_ready_seconds`` (acting: component -> seconds).
    """

    def __init__(
        self,
        *,
        acting: bool = False,
        nodes: int = DEFAULT_NODES,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        extra_apiserver_args: Sequence[str] = (),
        extra_etcd_args: Sequence[str] = (),
        keep_workdir: bool | None = None,
        bin_dir: os.PathLike | None = None,
        workdir: os.PathLike | None = None,
    ) -> None:
        if acting and nodes < 1:
            raise ValueError("an acting control plane needs at least one Node")
        self.acting = acting
        self.nodes = nodes if acting else 0
        self.ready_timeout = ready_timeout
        self.extra_apiserver_args = list(extra_apiserver_args)
        self.extra_etcd_args = list(extra_etcd_args)
        if keep_workdir is None:
            keep_workdir = os.environ.get("CVO_CONTROL_PLANE_KEEP", "") not in ("", "0")
        self.keep_workdir = keep_workdir
        self._bin_dir = Path(bin_dir) if bin_dir else None
        self._chosen_workdir = Path(workdir) if workdir else None

        self.workdir: Path | None = None
        self.token: str = ""
        self.server_url: str = ""
        self.etcd_url: str = ""
        self.ready_seconds: float | None = None
        self.node_names: list[str] = []
        self.component_ready_seconds: dict[str, float] = {}
        self._secure_port = 0
        self._etcd: subprocess.Popen | None = None
        self._apiserver: subprocess.Popen | None = None
        self._apiserver_args: list[str] = []
        self._components: dict[str, subprocess.Popen] = {}
        self._component_args: dict[str, list[str]] = {}
        self._component_ports: dict[str, int] = {}
        self._tokens: dict[str, str] = {}
        self._spawner: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ paths
    def _path(self, name: str) -> Path:
        if self.workdir is None:
            raise RuntimeError("control plane not started")
        return self.workdir / name

    @property
    def kubeconfig_path(self) -> str:
        return str(self._path("kubeconfig"))

    @property
    def ca_path(self) -> str:
        """CA bundle of the API server's self-signed serving certificate."""
        return str(self._path("apiserver-certs") / "apiserver.crt")

    @property
    def apiserver_log(self) -> Path:
        return self._path("kube-apiserver.log")

    @property
    def etcd_log(self) -> Path:
        return self._path("etcd.log")

    def component_log(self, name: str) -> Path:
        return self._path(f"{name}.log")

    @property
    def running(self) -> bool:
        return self._apiserver is not None and self._apiserver.poll() is None

    def component_running(self, name: str) -> bool:
        proc = self._components.get(name)
        return proc is not None and proc.poll() is None

    # -------------------------------------------------------------- lifecycle
    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> ControlPlane:
        if self.workdir is not None:
            raise RuntimeError("control plane already started")
        t0 = time.monotonic()
        bin_dir = self._bin_dir or ensure_binaries(ACTING_BINARIES if self.acting else APISERVER_BINARIES)
        missing = _missing(bin_dir, ACTING_BINARIES if self.acting else APISERVER_BINARIES)
        if missing:
            raise RuntimeError(f"{bin_dir} lacks {', '.join(missing)}")
        self._bin = bin_dir
        self._etcd_bin = str(bin_dir / "etcd")
        self._apiserver_bin = str(bin_dir / "kube-apiserver")
        if self._chosen_workdir is not None:
            self._chosen_workdir.mkdir(parents=True, exist_ok=True)
            if any(self._chosen_workdir.iterdir()):
                raise RuntimeError(f"workdir {self._chosen_workdir} is not empty")
            self.workdir = self._chosen_workdir
        else:
            self.workdir = Path(tempfile.mkdtemp(prefix="cvo-controlplane-"))
        _live.add(self)
        try:
            self._write_credentials()
            ports: set[int] = set()
            self._start_etcd(_free_port(ports), _free_port(ports))
            self._secure_port = _free_port(ports)
            self.server_url = f"https://127.0.0.1:{self._secure_port}"
            self._apiserver_args = self._build_apiserver_args()
            self._start_apiserver_process()
            self._wait_apiserver_ready(t0)
            self._write_kubeconfig(Path(self.kubeconfig_path), ADMIN_USER, self.token)
            if self.acting:
                for name in COMPONENTS:
                    self._component_ports[name] = _free_port(ports)
                self._start_acting(t0)
        except BaseException:
            self.stop()
            raise
        self.ready_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL), components first, and remove the temp dir."""
        procs = [self._components.get(name) for name in reversed(COMPONENTS)]
        for proc in (*procs, self._apiserver, self._etcd):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._apiserver = self._etcd = None
        self._components.clear()
        if self._spawner is not None:
            self._spawner.shutdown(wait=True)
            self._spawner = None
        _live.discard(self)
        if self.workdir is not None:
            if self.keep_workdir:
                print(f"controlplane: kept {self.workdir}", file=sys.stderr)
            else:
                shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir = None

    def kill_apiserver(self) -> None:
        """SIGKILL the API server (etcd keeps running); see start_apiserver()."""
        proc = self._apiserver
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def start_apiserver(self) -> float:
        """(Re)start the API server with the same port, etcd and credentials.

        Waits for /readyz; returns the seconds it took.
        """
        if self.workdir is None:
            raise RuntimeError("control plane not started")
        if self.running:
            raise RuntimeError("kube-apiserver is already running")
        t0 = time.monotonic()
        self._start_apiserver_process()
        self._wait_apiserver_ready(t0)
        self.ready_seconds = time.monotonic() - t0
        return self.ready_seconds

    def restart_apiserver(self) -> float:
        """kill -9 the API server and start it again on the same port/etcd."""
        self.kill_apiserver()
        return self.start_apiserver()

    def kill_component(self, name: str) -> None:
        """SIGKILL kube-controller-manager, kube-scheduler or kwok (acting plane); see start_component()."""
        self._component_name(name)
        proc = self._components.get(name)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def start_component(self, name: str) -> float:
        """(Re)start a component with its arguments and port; waits until it is healthy, returns the seconds."""
        self._component_name(name)
        if self.workdir is None:
            raise RuntimeError("control plane not started")
        if self.component_running(name):
            raise RuntimeError(f"{name} is already running")
        t0 = time.monotonic()
        self._components[name] = self._spawn(self._component_args[name], self.component_log(name))
        self._wait_component_ready(name, t0)
        return time.monotonic() - t0

    def _component_name(self, name: str) -> None:
        if not self.acting:
            raise RuntimeError("only an acting control plane (ControlPlane(acting=True)) runs components")
        if name not in COMPONENTS:
            raise ValueError(f"unknown component {name!r} (one of {', '.join(COMPONENTS)})")

    # ------------------------------------------------------------- API calls
    def request(self, method: str, path: str, body: object = None, *, timeout: float = 10.0) -> dict:
        """One API call as the admin user (TLS verified); the decoded JSON answer.

        Raises urllib.error.HTTPError for an error status (its ``code`` and ``read()`` are the server's).
        """
        if self.workdir is None:
            raise RuntimeError("control plane not started")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = (
                "application/merge-patch+json" if method == "PATCH" else "application/json"
            )
        req = urllib.request.Request(f"{self.server_url}{path}", data=data, headers=headers, method=method)
        ctx = ssl.create_default_context(cafile=self.ca_path)
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            raw = r.read()
        return json.loads(raw) if raw else {}

    # ---------------------------------------------------------------- details
    def _write_credentials(self) -> None:
        self.token = secrets.token_hex(24)
        lines = [f'{self.token},{ADMIN_USER},{ADMIN_USER},"system:masters"']
        if self.acting:
            for name, (user, group) in COMPONENT_USERS.items():
                self._tokens[name] = secrets.token_hex(24)
                lines.append(f'{self._tokens[name]},{user},{user},"{group}"' if group else f"{self._tokens[name]},{user},{user}")
        tokens = self._path("tokens.csv")
        # token,user,uid,"group1,group2"
        tokens.write_text("\n".join(lines) + "\n")
        tokens.chmod(0o600)
        _generate_rsa_keypair(self._path("sa.key"), self._path("sa.pub"))
        self._path("apiserver-certs").mkdir()

    def _spawn(self, args: list[str], log: Path) -> subprocess.Popen:
        # PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, so a child started
        # from a short-lived thread (asyncio.to_thread, a test's helper thread) would be killed
        # with it.  Every child is forked by one thread that lives until stop().
        if self._spawner is None:
            self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="controlplane-spawner")
        return self._spawner.submit(self._spawn_here, args, log).result()

    def _spawn_here(self, args: list[str], log: Path) -> subprocess.Popen:
        with open(log, "ab") as f:
            f.write(f"\n===== {time.strftime('%H:%M:%S')} {' '.join(args)}\n".encode())
            f.flush()
            return subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=f,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,  # Ctrl-C in a terminal reaches only us; stop() is orderly
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )

    def _start_etcd(self, client_port: int, peer_port: int) -> None:
        self.etcd_url = f"http://127.0.0.1:{client_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        args = [
            self._etcd_bin,
            "--name=default",
            f"--data-dir={self._path('etcd-data')}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=default={peer_url}",
            "--unsafe-no-fsync=true",
            *self.extra_etcd_args,
        ]
        self._etcd = self._spawn(args, self.etcd_log)

        def etcd_healthy() -> bool:
            with urllib.request.urlopen(f"{self.etcd_url}/health", timeout=2) as r:
                return json.load(r).get("health") == "true"

        self._wait(etcd_healthy, self._etcd, "etcd", time.monotonic())

    def _build_apiserver_args(self) -> list[str]:
        args = [
            self._apiserver_bin,
            f"--etcd-servers={self.etcd_url}",
            f"--cert-dir={self._path('apiserver-certs')}",
            f"--secure-port={self._secure_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            f"--service-account-issuer={self.server_url}",
            f"--service-account-key-file={self._path('sa.pub')}",
            f"--service-account-signing-key-file={self._path('sa.key')}",
            "--authorization-mode=RBAC",
            f"--token-auth-file={self._path('tokens.csv')}",
            "--allow-privileged=true",
            # The lease endpoint reconciler (default) rejects a loopback
            # advertise address; "none" leaves default/kubernetes without
            # endpoints, which nothing here needs.
            "--endpoint-reconciler-type=none",
        ]
        if not self.acting:
            # No controller-manager creates the "default" ServiceAccount, so the
            # ServiceAccount admission plugin would reject every Pod.
            args.append("--disable-admission-plugins=ServiceAccount")
        return [*args, *self.extra_apiserver_args]

    def _start_apiserver_process(self) -> None:
        self._apiserver = self._spawn(self._apiserver_args, self.apiserver_log)

    def _wait_apiserver_ready(self, t0: float) -> None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # cert-dir is filled by the server itself
        req = urllib.request.Request(
            f"{self.server_url}/readyz", headers={"Authorization": f"Bearer {self.token}"}
        )

        def ready() -> bool:
            with urllib.request.urlopen(req, timeout=5, context=ctx) as r:
                return r.status == 200

        assert self._apiserver is not None
        self._wait(ready, self._apiserver, "kube-apiserver", t0)

    # ------------------------------------------------------ the acting plane
    def _build_component_args(self, name: str) -> list[str]:
        bin_path = str(self._bin / name)
        kubeconfig = f"--kubeconfig={self._path(f'{name}.kubeconfig')}"
        port = self._component_ports[name]
        if name == "kube-controller-manager":
            # As kubeadm runs it (cmd/kubeadm/app/phases/controlplane/manifests.go
            # `getControllerManagerCommand`): each controller with its own ServiceAccount's
            # credentials, the root CA published into every namespace.
            return [
                bin_path,
                kubeconfig,
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={self._path('sa.key')}",
                f"--root-ca-file={self._path('ca.crt')}",
                "--cluster-name=cvo-e2e",
                # Not the host's /usr/libexec/kubernetes/..., which it would create.
                f"--flex-volume-plugin-dir={self._path('flexvolume')}",
                "--controllers=*",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
            ]
        if name == "kube-scheduler":
            return [
                bin_path,
                kubeconfig,
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--leader-elect=false",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
            ]
        # kwok as kwokctl's binary runtime starts it (pkg/kwokctl/components/kwok_controller.go
        # `BuildKwokControllerComponent`): every Node managed, leases renewed so the node lifecycle
        # controller sees them alive, the Stages of stages.yaml moving Nodes and Pods.  Each kwok
        # process holds the Nodes' leases under an identity of its own (controllers.go `Identity`),
        # so a restarted kwok takes its Nodes back only once the dead one's leases expire: 10 s,
        # not kwokctl's 40 s (renewed every 2.5 s, well inside the node lifecycle's 50 s grace).
        return [
            bin_path,
            kubeconfig,
            f"--config={KWOK_STAGES}",
            "--manage-all-nodes=true",
            f"--node-lease-duration-seconds={KWOK_LEASE_SECONDS}",
            f"--server-address=127.0.0.1:{port}",
            "--node-ip=127.0.0.1",
            f"--cidr={POD_CIDR}",
        ]

    def _start_acting(self, t0: float) -> None:
        # The root CA the controller-manager publishes (kube-root-ca.crt, ClusterTrustBundles) must
        # hold CA certificates only: the last block of the API server's bundle.
        bundle = Path(self.ca_path).read_text()
        marker = "-----BEGIN CERTIFICATE-----"
        self._path("ca.crt").write_text(marker + bundle.rsplit(marker, 1)[-1])
        for name, (user, _group) in COMPONENT_USERS.items():
            self._write_kubeconfig(self._path(f"{name}.kubeconfig"), user, self._tokens[name])
        self._component_args = {name: self._build_component_args(name) for name in COMPONENTS}
        started: dict[str, float] = {}
        for name in COMPONENTS:
            started[name] = time.monotonic()
            self._components[name] = self._spawn(self._component_args[name], self.component_log(name))
        for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
            self._wait_component_ready(name, t0)
            self.component_ready_seconds[name] = time.monotonic() - started[name]
        self._register_nodes()
        nodes_from = time.monotonic()
        self._wait(self._nodes_schedulable, self._components["kwok"], "the kwok Nodes", t0)
        self.component_ready_seconds["nodes"] = time.monotonic() - nodes_from
        # The ServiceAccount admission plugin refuses Pods until the namespace's "default"
        # ServiceAccount exists; the serviceaccount controller writes it once it runs.
        self._wait(
            lambda: self._exists("/api/v1/namespaces/default/serviceaccounts/default"),
            self._components["kube-controller-manager"],
            "the default ServiceAccount (serviceaccount controller)",
            t0,
        )

    def _wait_component_ready(self, name: str, t0: float) -> None:
        port = self._component_ports[name]
        if name == "kwok":
            url = f"http://127.0.0.1:{port}/healthz"
            ctx = None
        else:
            url = f"https://127.0.0.1:{port}/healthz"  # a self-signed serving certificate
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE

        def healthy() -> bool:
            with urllib.request.urlopen(url, timeout=5, context=ctx) as r:
                return r.status == 200

        self._wait(healthy, self._components[name], name, t0)

    def _register_nodes(self) -> None:
        """Fake Nodes, as kwok's documentation registers them; kwok fills their status (node-initialize)."""
        self.node_names = [f"kwok-node-{i}" for i in range(self.nodes)]
        for node in self.node_names:
            self.request(
                "POST",
                "/api/v1/nodes",
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": node,
                        "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                        # Every role, as on a compact three-node OpenShift cluster: a payload's operators
                        # ask for node-role.kubernetes.io/master nodes.
                        "labels": {
                            "kubernetes.io/arch": "amd64",
                            "kubernetes.io/hostname": node,
                            "kubernetes.io/os": "linux",
                            "node-role.kubernetes.io/control-plane": "",
                            "node-role.kubernetes.io/master": "",
                            "node-role.kubernetes.io/worker": "",
                            "type": "kwok",
                        },
                    },
                },
            )

    def _nodes_schedulable(self) -> bool:
        """Every Node Ready (kwok) and without the not-ready taint (node lifecycle controller)."""
        items = self.request("GET", "/api/v1/nodes")["items"]
        ready = {
            item["metadata"]["name"]
            for item in items
            if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (item.get("status") or {}).get("conditions") or ()
            )
            and not any(
                t.get("key", "").startswith("node.kubernetes.io/") for t in (item.get("spec") or {}).get("taints") or ()
            )
        }
        return set(self.node_names) <= ready

    def _exists(self, path: str) -> bool:
        try:
            self.request("GET", path)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return False
            raise
        return True

    def _wait(self, probe: Callable[[], bool], proc: subprocess.Popen, what: str, t0: float) -> None:
        deadline = t0 + self.ready_timeout
        last_err = "no response yet"
        while True:
            if proc.poll() is not None:
                self._fail(f"{what} exited with code {proc.returncode} before becoming ready")
            try:
                if probe():
                    return
                last_err = "probe returned not-ready"
            except (urllib.error.URLError, OSError, ValueError) as e:
                last_err = str(e)
            if time.monotonic() > deadline:
                self._fail(f"{what} not ready after {self.ready_timeout:.0f}s (last probe: {last_err})")
            time.sleep(0.25)

    def _fail(self, message: str) -> None:
        keep = "" if self.keep_workdir else " (removed on stop; set CVO_CONTROL_PLANE_KEEP=1 to keep it)"
        parts = [message, f"workdir: {self.workdir}{keep}"]
        logs = [self.etcd_log, self.apiserver_log, *(self.component_log(name) for name in self._components)]
        for log in logs:
            if log.exists():
                parts.append(f"--- last lines of {log.name} ---\n{_tail(log)}")
        raise RuntimeError("\n".join(parts))

    def _write_kubeconfig(self, path: Path, user: str, token: str) -> None:
        # Self-signed serving cert generated into --cert-dir; its file holds the
        # serving cert followed by the CA that signed it, valid for 127.0.0.1.
        cluster: dict[str, object] = {"server": self.server_url}
        if Path(self.ca_path).exists():
            cluster["certificate-authority"] = self.ca_path
        else:
            cluster["insecure-skip-tls-verify"] = True
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "cvo-e2e", "cluster": cluster}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "cvo-e2e", "context": {"cluster": "cvo-e2e", "user": user}}],
            "current-context": "cvo-e2e",
        }
        path.write_text(json.dumps(config, indent=2) + "\n")  # JSON is valid YAML
        path.chmod(0o600)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Start a local control plane until Ctrl-C (SIGINT or SIGTERM).")
    ap.add_argument("--acting", action="store_true",
                    help="also kube-controller-manager, kube-scheduler, kwok and fake Nodes")
    ap.add_argument("--nodes", type=int, default=DEFAULT_NODES, help="fake Nodes of an acting plane")
    ap.add_argument("--workdir", help="use this (empty or new) directory instead of a temporary one")
    ap.add_argument("--timeout", type=float, default=DEFAULT_READY_TIMEOUT, help="readiness timeout (s)")
    ap.add_argument("--keep", action="store_true", help="keep the working directory on exit")
    args = ap.parse_args(argv)

    cp = ControlPlane(
        acting=args.acting, nodes=args.nodes, ready_timeout=args.timeout, keep_workdir=args.keep or None,
        workdir=args.workdir,
    )
    stop = False

    def on_signal(signum, frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        cp.start()
    except RuntimeError as e:
        print(f"controlplane: {e}", file=sys.stderr)
        return 1
    what = "kube-apiserver, kube-controller-manager, kube-scheduler and kwok" if args.acting else "kube-apiserver"
    print(f"{what} ready at {cp.server_url} in {cp.ready_seconds:.1f}s", file=sys.stderr)
    if cp.node_names:
        print(f"nodes (kwok): {' '.join(cp.node_names)}", file=sys.stderr)
    print(f"logs: {cp.workdir}", file=sys.stderr)
    print(f"export KUBECONFIG={cp.kubeconfig_path}", file=sys.stderr)
    print(cp.kubeconfig_path, flush=True)
    try:
        while not stop:
            if not cp.running:
                print("controlplane: kube-apiserver exited:\n" + _tail(cp.apiserver_log), file=sys.stderr)
                return 1
            for name in COMPONENTS if cp.acting else ():
                if not cp.component_running(name):
                    print(f"controlplane: {name} exited:\n" + _tail(cp.component_log(name)), file=sys.stderr)
                    return 1
            time.sleep(0.5)
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
