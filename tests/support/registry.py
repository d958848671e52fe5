"""A real registry for the tests: Debian's ``docker-registry`` (distribution 2.8) on 127.0.0.1.

Each :class:`Registry` runs its own ``docker-registry serve CONFIG`` on a free port, storage in its own
directory, in one of four modes::

    with Registry(tmp_path) as reg:                          # plain HTTP
    with Registry(tmp_path, tls=True) as reg:                # TLS, a CA made here with openssl
    with Registry(tmp_path, tls=True, users={"u": "p"}):     # TLS + htpasswd basic auth
    with Registry(tmp_path, tls=True, users={"u": "p"}, token=True):   # TLS + Bearer tokens
        reg.host, reg.url, reg.ca_path, reg.token_server.requests

The token mode is distribution's ``auth: token:`` (``registry/auth/token/accesscontroller.go``) with a
:class:`TokenServer` beside it: it checks basic credentials against ``users`` and answers with a JWT
(RS256, signed by ``openssl dgst``; ``x5c`` holds its certificate, which the registry's ``rootcertbundle``
trusts) granting the scope asked for, as ``docs/spec/auth/token.md`` describes.

:meth:`Registry.start` waits until ``/v2/`` answers; when the registry cannot start it raises
:class:`RegistryError` with the log's tail (a test needing it FAILS, it is never skipped).  The process is
stopped by :meth:`Registry.stop` (SIGTERM, then SIGKILL) and dies with the test process (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

REGISTRY_BIN = "/usr/bin/docker-registry"
READY_TIMEOUT = 30.0  # seconds: the registry answers /v2/ within a second on an idle machine
TOKEN_SERVICE = "cvo-test-registry"
TOKEN_ISSUER = "cvo-test-token-server"


class RegistryError(RuntimeError):
    """The test registry (or something it needs: openssl, htpasswd) could not be set up."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(args: list[str], what: str, stdin: bytes | None = None) -> bytes:
    if shutil.which(args[0]) is None:
        raise RegistryError(f"{what}: {args[0]} is not installed (make registry-tools installs it)")
    res = subprocess.run(args, input=stdin, capture_output=True)
    if res.returncode != 0:
        raise RegistryError(f"{what}: {' '.join(args[:3])} failed: {res.stderr.decode(errors='replace')}")
    return res.stdout


@dataclass(frozen=True)
class CertificateAuthority:
    """A throwaway CA (openssl): :meth:`issue` signs serving certificates for 127.0.0.1 and localhost."""

    directory: Path
    cert: Path
    key: Path

    @classmethod
    def create(cls, directory: Path, name: str = "cvo-test-ca") -> CertificateAuthority:
        directory.mkdir(parents=True, exist_ok=True)
        cert, key = directory / f"{name}.crt", directory / f"{name}.key"
        _run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
              "-days", "2", "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"], "making the test CA")
        return cls(directory, cert, key)

    def issue(self, name: str, hosts: tuple[str, ...] = ("IP:127.0.0.1", "DNS:localhost")) -> tuple[Path, Path]:
        """A certificate for ``hosts`` signed by this CA, and its key."""
        cert, key, csr = (self.directory / f"{name}.crt", self.directory / f"{name}.key",
                          self.directory / f"{name}.csr")
        ext = self.directory / f"{name}.ext"
        ext.write_text(f"subjectAltName={','.join(hosts)}\nbasicConstraints=CA:FALSE\n"
                       "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
        _run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
              "-subj", f"/CN={name}"], f"making a key for {name}")
        _run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(self.cert), "-CAkey", str(self.key),
              "-CAcreateserial", "-out", str(cert), "-days", "2", "-sha256", "-extfile", str(ext)],
             f"signing {name}'s certificate")
        return cert, key


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class TokenRequest:
    """One request the token server answered: who asked (``None``: anonymous) and for which scopes."""

    account: str | None
    scopes: list[str]
    service: str
    status: int


class TokenServer:
    """docs/spec/auth/token.md's token endpoint: ``GET /token?service=…&scope=…`` with optional basic auth.

    A user of ``users`` with the right password gets every action it asks for; anonymous callers get
    ``anonymous_actions`` (none by default) and wrong credentials a 401.  ``requests`` records each call.
    """

    def __init__(self, directory: Path, users: Mapping[str, str], ca: CertificateAuthority,
                 anonymous_actions: tuple[str, ...] = ()) -> None:
        self.users = dict(users)
        self.anonymous_actions = anonymous_actions
        self.requests: list[TokenRequest] = []
        self.signing_cert, self.signing_key = ca.issue("token-signer", hosts=("DNS:token-signer",))
        der = _run(["openssl", "x509", "-in", str(self.signing_cert), "-outform", "DER"], "reading the signer")
        self._x5c = [base64.b64encode(der).decode()]
        serving_cert, serving_key = ca.issue("token-server")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(serving_cert, serving_key)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _TokenHandler)
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._server.token_server = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True,
                                        name="token-server")
        self._thread.start()

    @property
    def realm(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}/token"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def token(self, account: str, scopes: list[str], service: str) -> str:
        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            wanted = [a for a in actions.split(",") if a]
            granted = wanted if account else [a for a in wanted if a in self.anonymous_actions]
            if kind == "repository" and granted:
                access.append({"type": "repository", "name": name, "actions": granted})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": self._x5c}
        claims = {"iss": TOKEN_ISSUER, "sub": account, "aud": service, "exp": now + 300, "nbf": now - 10,
                  "iat": now, "jti": secrets.token_hex(8), "access": access}
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = _run(["openssl", "dgst", "-sha256", "-sign", str(self.signing_key)], "signing a token",
                         stdin=signing_input.encode())
        return f"{signing_input}.{_b64url(signature)}"


class _TokenHandler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        ts: TokenServer = self.server.token_server
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        scopes = query.get("scope", [])
        service = (query.get("service") or [""])[0]
        account: str | None = None
        header = self.headers.get("Authorization", "")
        status = 200
        if header.startswith("Basic "):
            try:
                user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except ValueError:
                user, password = "", "\0"
            if ts.users.get(user) == password:
                account = user
            else:
                status = 401
        if url.path != "/token" or service != TOKEN_SERVICE:
            status = 400
        ts.requests.append(TokenRequest(account, scopes, service, status))
        if status != 200:
            body = json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "authentication failed"}]}).encode()
        else:
            body = json.dumps({"token": ts.token(account or "", scopes, service), "expires_in": 300}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _die_with_parent() -> None:  # in the child, between fork and exec
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Registry:
    """One ``docker-registry`` process; see the module's docstring for the modes."""

    directory: Path
    tls: bool = False
    users: Mapping[str, str] | None = None
    token: bool = False
    anonymous_actions: tuple[str, ...] = ()
    port: int = 0
    ca: CertificateAuthority | None = None
    token_server: TokenServer | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        """``127.0.0.1:PORT``: the registry part of a pull spec."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}"

    @property
    def ca_path(self) -> Path:
        if self.ca is None:
            raise RegistryError("this registry serves plain HTTP: it has no CA")
        return self.ca.cert

    @property
    def log_path(self) -> Path:
        return self.directory / "registry.log"

    def image(self, repository: str, reference: str = "latest") -> str:
        sep = "@" if reference.startswith("sha256:") else ":"
        return f"{self.host}/{repository}{sep}{reference}"

    def __enter__(self) -> Registry:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _config(self) -> dict[str, Any]:
        http: dict[str, Any] = {"addr": self.host, "secret": secrets.token_hex(16),
                                "headers": {"X-Content-Type-Options": ["nosniff"]}}
        config: dict[str, Any] = {
            "version": 0.1,
            "log": {"level": "info", "accesslog": {"disabled": False}, "fields": {"service": "registry"}},
            "storage": {"filesystem": {"rootdirectory": str(self.directory / "data")}, "delete": {"enabled": True},
                        "maintenance": {"uploadpurging": {"enabled": False}}},
            "http": http,
        }
        if self.tls:
            self.ca = CertificateAuthority.create(self.directory / "pki")
            cert, key = self.ca.issue("registry")
            http["tls"] = {"certificate": str(cert), "key": str(key)}
        if self.token:
            if self.ca is None or self.users is None:
                raise RegistryError("the token mode needs tls=True and users")
            self.token_server = TokenServer(self.directory / "pki", self.users, self.ca, self.anonymous_actions)
            config["auth"] = {"token": {"realm": self.token_server.realm, "service": TOKEN_SERVICE,
                                        "issuer": TOKEN_ISSUER, "rootcertbundle": str(self.ca.cert)}}
        elif self.users is not None:
            htpasswd = self.directory / "htpasswd"
            lines = [_run(["htpasswd", "-Bbn", user, password], "making the htpasswd file").decode().strip()
                     for user, password in self.users.items()]
            htpasswd.write_text("\n".join(lines) + "\n")
            config["auth"] = {"htpasswd": {"realm": "cvo-test-registry", "path": str(htpasswd)}}
        return config

    def start(self) -> Registry:
        if not os.access(REGISTRY_BIN, os.X_OK):
            raise RegistryError(f"{REGISTRY_BIN} is not installed (make registry-tools installs Debian's "
                                "docker-registry)")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        config = self.directory / "config.yml"
        config.write_text(json.dumps(self._config(), indent=2))  # JSON is YAML
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child writes it until stop()
        try:
            self.process = subprocess.Popen([REGISTRY_BIN, "serve", str(config)], stdout=log, stderr=log,
                                            stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        finally:
            log.close()
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _context(self) -> ssl.SSLContext | None:
        return ssl.create_default_context(cafile=str(self.ca.cert)) if self.ca is not None else None

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + READY_TIMEOUT
        last = ""
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RegistryError(f"docker-registry exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/v2/", timeout=2, context=self._context()) as res:
                    if res.status == 200:
                        return
            except urllib.error.HTTPError as err:
                if err.code == 401:  # auth is on: it answers
                    return
                last = f"HTTP {err.code}"
            except (OSError, ssl.SSLError) as err:
                last = str(err)
            time.sleep(0.05)
        raise RegistryError(f"docker-registry did not answer {self.url}/v2/ within {READY_TIMEOUT:.0f} s "
                            f"({last}):\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError as err:
            return f"<cannot read {self.log_path}: {err}>"

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if self.token_server is not None:
            self.token_server.stop()
            self.token_server = None


@contextlib.contextmanager
def running_registry(directory: Path, **options: Any) -> Iterator[Registry]:
    """:class:`Registry` as a context manager function (for ``yield from`` in fixtures)."""
    with Registry(directory, **options) as registry:
        yield registry


# --- a small release image as an OCI image layout, built by hand (image-spec image-layout.md) ----------------

@dataclass(frozen=True)
class BuiltImage:
    """What :func:`write_oci_layout` wrote: the manifest's digest and bytes, and every blob by digest."""

    layout: Path
    tag: str
    manifest_digest: str
    manifest: bytes
    media_type: str
    config_digest: str
    layer_digests: tuple[str, ...]
    blobs: Mapping[str, bytes]


RELEASE_FILES: Mapping[str, bytes] = {
    "release-manifests/release-metadata": json.dumps(
        {"kind": "cincinnati-metadata-v0", "version": "4.16.3", "previous": ["4.16.0"], "metadata": {}}).encode(),
    "release-manifests/0000_50_test_configmap.yaml": (
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test\n  namespace: openshift-test\ndata:\n  a: b\n"),
}


def tar_gz(files: Mapping[str, bytes], mtime: int = 1_700_000_000) -> bytes:
    """A gzip'd tar holding ``files`` (directories implied), deterministic bytes."""
    import gzip
    import io
    import tarfile

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(Path(name).parent) for name in files} - {"."})
        for d in dirs:
            info = tarfile.TarInfo(d + "/")
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
            tar.addfile(info)
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, mtime
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def sha256(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


def write_oci_layout(layout: Path, tag: str = "4.16.3", files: Mapping[str, bytes] = RELEASE_FILES,
                     extra_layers: tuple[bytes, ...] = (), docker: bool = False,
                     labels: Mapping[str, str] | None = None) -> BuiltImage:
    """An image with one gzip'd layer holding ``files`` (after ``extra_layers``) in an OCI layout at ``layout``
    under ``tag``; ``docker``: Docker schema 2 media types (as quay serves release images)."""
    layer = tar_gz(files)
    layers = (*extra_layers, layer)
    config = json.dumps({
        "created": "2026-01-01T00:00:00Z", "architecture": "amd64", "os": "linux",
        "config": {"Labels": dict(labels if labels is not None else {"io.openshift.release": "4.16.3"})},
        "rootfs": {"type": "layers", "diff_ids": [sha256(_gunzip(x)) for x in layers]},
        "history": [{"created": "2026-01-01T00:00:00Z"} for _ in layers]}, sort_keys=True).encode()
    if docker:
        kinds = ("application/vnd.docker.distribution.manifest.v2+json",
                 "application/vnd.docker.container.image.v1+json", "application/vnd.docker.image.rootfs.diff.tar.gzip")
    else:
        kinds = ("application/vnd.oci.image.manifest.v1+json", "application/vnd.oci.image.config.v1+json",
                 "application/vnd.oci.image.layer.v1.tar+gzip")
    manifest_doc = {"schemaVersion": 2, "mediaType": kinds[0],
                    "config": {"mediaType": kinds[1], "digest": sha256(config), "size": len(config)},
                    "layers": [{"mediaType": kinds[2], "digest": sha256(x), "size": len(x)} for x in layers]}
    manifest = json.dumps(manifest_doc, indent=2).encode()
    blobs = {sha256(b): b for b in (config, *layers, manifest)}
    (layout / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    for digest, data in blobs.items():
        (layout / "blobs" / "sha256" / digest.removeprefix("sha256:")).write_bytes(data)
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    index = {"schemaVersion": 2, "manifests": [
        {"mediaType": kinds[0], "digest": sha256(manifest), "size": len(manifest),
         "annotations": {"org.opencontainers.image.ref.name": tag}}]}
    (layout / "index.json").write_text(json.dumps(index))
    return BuiltImage(layout, tag, sha256(manifest), manifest, kinds[0], sha256(config),
                      tuple(sha256(x) for x in layers), blobs)


def _gunzip(data: bytes) -> bytes:
    import gzip

    return gzip.decompress(data)


def skopeo(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``skopeo ARGS`` (no policy file needed: ``--insecure-policy``); raises with its stderr on failure."""
    if shutil.which("skopeo") is None:
        raise RegistryError("skopeo is not installed (make registry-tools installs it)")
    res = subprocess.run(["skopeo", "--insecure-policy", *args], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RegistryError(f"skopeo {' '.join(args)} failed ({res.returncode}): {res.stderr.strip()}")
    return res


class StepClock:
    """Injected time for a :class:`~cvo.images.repository.Deadline`: ``sleep`` only moves the clock on (and
    records the wait), so back-off schedules are exact and cost no real time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def blob_file(registry: Registry, digest: str) -> Path:
    """Where the registry's filesystem storage keeps ``digest``'s bytes (distribution ``storage/paths.go``)."""
    hex_ = digest.removeprefix("sha256:")
    return registry.directory / "data/docker/registry/v2/blobs/sha256" / hex_[:2] / hex_ / "data"
