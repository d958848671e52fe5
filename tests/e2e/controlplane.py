"""A real, throw-away Kubernetes control plane for end-to-end tests.

Runs etcd and kube-apiserver (built from Go modules by
``hack/control-plane/build.sh`` and cached under
``${CVO_CONTROL_PLANE_CACHE:-~/.cache/cvo/control-plane}/``) as local subprocesses on
127.0.0.1, the way controller-runtime's envtest does.  Only the API server
and etcd run: there are no controllers (no garbage collection, no namespace
finalization, pods stay Pending, Deployments never get ReplicaSets).

Pure standard library; no pytest or kubernetes-client import::

    from tests.e2e.controlplane import ControlPlane

    with ControlPlane() as cp:
        kubernetes.config.load_kube_config(config_file=cp.kubeconfig_path)
        ...
        cp.restart_apiserver()   # kill -9 the API server and start it again

Run ``python tests/e2e/controlplane.py`` to start one by hand; it prints the
kubeconfig path and runs until Ctrl-C.

Environment:
  CVO_CONTROL_PLANE_CACHE     cache root for the built binaries (default ~/.cache/cvo/control-plane);
                              read once, at import: independent of CVO_CACHE_DIR (cvo's parse
                              cache, which the test suite points at a temp dir), so the slow build
                              happens once per machine, not once per test session
  CVO_CONTROL_PLANE_BIN_DIR   use kube-apiserver/etcd from this directory instead
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

DEFAULT_READY_TIMEOUT = 120.0  # seconds; 2-core CI machines are slow
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
ADMIN_USER = "cvo-e2e-admin"
# Resolved at import time, before any test fixture changes the environment.
CACHE_ROOT = Path(os.environ.get("CVO_CONTROL_PLANE_CACHE") or Path.home() / ".cache" / "cvo" / "control-plane")


def read_versions(path: Path = VERSIONS_FILE) -> dict[str, str]:
    """K8S_VERSION / ETCD_VERSION from hack/control-plane/versions.env."""
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
    return CACHE_ROOT / f"{v['K8S_VERSION']}-etcd{v['ETCD_VERSION']}" / "bin"


def _binaries_present(bin_dir: Path) -> bool:
    return all(os.access(bin_dir / name, os.X_OK) for name in ("kube-apiserver", "etcd"))


def ensure_binaries() -> Path:
    """Return the directory holding kube-apiserver and etcd, building them if missing.

    A cold build takes several minutes; build.sh's progress goes to stderr.
    """
    bin_dir = expected_bin_dir()
    if _binaries_present(bin_dir):
        return bin_dir
    if os.environ.get("CVO_CONTROL_PLANE_BIN_DIR"):
        raise RuntimeError(f"CVO_CONTROL_PLANE_BIN_DIR={bin_dir} lacks kube-apiserver and/or etcd")
    print(f"controlplane: building kube-apiserver and etcd with {BUILD_SCRIPT} ...", file=sys.stderr)
    env = {**os.environ, "CVO_CONTROL_PLANE_CACHE": str(CACHE_ROOT)}
    res = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT} failed with exit code {res.returncode} (see its stderr above)")
    built = Path(res.stdout.strip().splitlines()[-1])
    if not _binaries_present(built):
        raise RuntimeError(f"{BUILD_SCRIPT} reported {built} but the binaries are not there")
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
    """etcd + kube-apiserver on 127.0.0.1 in a temporary directory.

    Attributes available after start(): ``server_url``, ``token``,
    ``kubeconfig_path``, ``ca_path``, ``workdir``, ``etcd_url``,
    ``apiserver_log``, ``etcd_log``, ``ready_seconds`` (last start/restart).
    """

    def __init__(
        self,
        *,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        extra_apiserver_args: Sequence[str] = (),
        extra_etcd_args: Sequence[str] = (),
        keep_workdir: bool | None = None,
        bin_dir: os.PathLike | None = None,
    ) -> None:
        self.ready_timeout = ready_timeout
        self.extra_apiserver_args = list(extra_apiserver_args)
        self.extra_etcd_args = list(extra_etcd_args)
        if keep_workdir is None:
            keep_workdir = os.environ.get("CVO_CONTROL_PLANE_KEEP", "") not in ("", "0")
        self.keep_workdir = keep_workdir
        self._bin_dir = Path(bin_dir) if bin_dir else None

        self.workdir: Path | None = None
        self.token: str = ""
        self.server_url: str = ""
        self.etcd_url: str = ""
        self.ready_seconds: float | None = None
        self._secure_port = 0
        self._etcd: subprocess.Popen | None = None
        self._apiserver: subprocess.Popen | None = None
        self._apiserver_args: list[str] = []
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

    @property
    def running(self) -> bool:
        return self._apiserver is not None and self._apiserver.poll() is None

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
        bin_dir = self._bin_dir or ensure_binaries()
        self._etcd_bin = str(bin_dir / "etcd")
        self._apiserver_bin = str(bin_dir / "kube-apiserver")
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
            self._write_kubeconfig()
        except BaseException:
            self.stop()
            raise
        self.ready_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Stop both processes (SIGTERM, then SIGKILL) and remove the temp dir."""
        for proc in (self._apiserver, self._etcd):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._apiserver = self._etcd = None
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

    # ---------------------------------------------------------------- details
    def _write_credentials(self) -> None:
        self.token = secrets.token_hex(24)
        tokens = self._path("tokens.csv")
        # token,user,uid,"group1,group2"
        tokens.write_text(f'{self.token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n')
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
        return [
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
            # No controller-manager creates the "default" ServiceAccount, so the
            # ServiceAccount admission plugin would reject every Pod.
            "--disable-admission-plugins=ServiceAccount",
            *self.extra_apiserver_args,
        ]

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
        for log in (self.etcd_log, self.apiserver_log):
            if log.exists():
                parts.append(f"--- last lines of {log.name} ---\n{_tail(log)}")
        raise RuntimeError("\n".join(parts))

    def _write_kubeconfig(self) -> None:
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
            "users": [{"name": ADMIN_USER, "user": {"token": self.token}}],
            "contexts": [{"name": "cvo-e2e", "context": {"cluster": "cvo-e2e", "user": ADMIN_USER}}],
            "current-context": "cvo-e2e",
        }
        path = Path(self.kubeconfig_path)
        path.write_text(json.dumps(config, indent=2) + "\n")  # JSON is valid YAML
        path.chmod(0o600)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Start a local etcd + kube-apiserver until Ctrl-C.")
    ap.add_argument("--timeout", type=float, default=DEFAULT_READY_TIMEOUT, help="readiness timeout (s)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory on exit")
    args = ap.parse_args(argv)

    cp = ControlPlane(ready_timeout=args.timeout, keep_workdir=args.keep or None)
    cp.start()
    print(f"kube-apiserver ready at {cp.server_url} in {cp.ready_seconds:.1f}s", file=sys.stderr)
    print(f"logs: {cp.workdir}", file=sys.stderr)
    print(f"export KUBECONFIG={cp.kubeconfig_path}", file=sys.stderr)
    print(cp.kubeconfig_path, flush=True)
    stop = False

    def on_signal(signum, frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        while not stop:
            if not cp.running:
                print("controlplane: kube-apiserver exited:\n" + _tail(cp.apiserver_log), file=sys.stderr)
                return 1
            time.sleep(0.5)
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
