"""Throwaway OpenPGP keys made with the real ``gpg`` for the signature tests, and signature stores to
serve them from (a directory, a real ``http.server`` on 127.0.0.1, one that never answers).

:func:`make_keys` makes one GNUPGHOME holding every key the tests need (ed25519, no passphrase: about
0.05 s a key); :func:`gpg_sign` signs arbitrary bytes with any of them, at any faked time, so a test can
make a signature that :func:`cvo.verify.sign` never would (another digest, an unknown field, expired).
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DAY = 86400
DIGEST = "sha256:" + "ab" * 32
OTHER_DIGEST = "sha256:" + "cd" * 32
REFERENCE = "quay.io/openshift-release-dev/ocp-release:4.16.3-x86_64"


def gpg(home: Path, *args: str, data: bytes | None = None, faked_time: int | None = None) -> bytes:
    """Run ``gpg --batch`` in ``home``; its stdout (fails the test with gpg's stderr on an error)."""
    fake = ["--faked-system-time", f"{faked_time}!"] if faked_time is not None else []
    result = subprocess.run(["gpg", "--homedir", str(home), "--batch", "--no-tty", *fake, *args], input=data,
                            capture_output=True, timeout=60, check=False)
    if result.returncode != 0:
        raise AssertionError(f"gpg {' '.join(args)} failed: {result.stderr.decode(errors='replace')}")
    return result.stdout


@dataclass(frozen=True)
class Keys:
    home: Path
    fingerprints: dict[str, str]   # name → primary fingerprint

    def public(self, *names: str) -> str:
        """The armored public keys of ``names`` (one keyring)."""
        return gpg(self.home, "--armor", "--export", *(self.fingerprints[n] for n in names)).decode()

    def secret(self, name: str) -> bytes:
        return gpg(self.home, "--armor", "--pinentry-mode", "loopback", "--passphrase", "",
                   "--export-secret-keys", self.fingerprints[name])


def make_keys(home: Path, now: int | None = None) -> Keys:
    """``signer`` and ``second`` (valid for a year), ``stranger`` (in no keyring), ``expired`` (made 10 days
    ago, expired 9 days ago) and ``old`` (made 10 days ago, no expiry: sign in the past with it)."""
    now = int(time.time()) if now is None else now
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    made = {"signer": (None, "1y"), "second": (None, "1y"), "stranger": (None, "1y"),
            "expired": (now - 10 * DAY, "1d"), "old": (now - 10 * DAY, "never")}
    fingerprints = {}
    for name, (when, expiry) in made.items():
        uid = f"cvo test {name} <{name}@cvo.invalid>"
        gpg(home, "--passphrase", "", "--pinentry-mode", "loopback", "--quick-gen-key", uid, "ed25519", "sign",
            expiry, faked_time=when)
        listing = gpg(home, "--with-colons", "--list-keys", f"<{name}@cvo.invalid>").decode()
        fingerprints[name] = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))
    return Keys(home, fingerprints)


def gpg_sign(keys: Keys, name: str, data: bytes, *args: str, faked_time: int | None = None) -> bytes:
    """A binary signed message of ``data`` by key ``name`` (``args``: more gpg options)."""
    return gpg(keys.home, "--local-user", keys.fingerprints[name], *args, "--sign", data=data, faked_time=faked_time)


def stop_agent(home: Path) -> None:
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], capture_output=True, timeout=30,
                   check=False)


def put_signature(store: Path, digest: str, n: int, data: bytes) -> Path:
    """Write ``store/sha256=HEX/signature-N`` as a store lays it out."""
    directory = store / digest.replace(":", "=", 1)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"signature-{n}"
    path.write_bytes(data)
    return path


# --- HTTP stores ---------------------------------------------------------------------------------

class StoreServer:
    """A real HTTP server on 127.0.0.1 serving a directory as a signature store; ``faults`` maps a path
    suffix to a status code to answer instead; ``requests`` lists the paths asked for."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.faults: dict[str, int] = {}
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                for suffix, status in server.faults.items():
                    if self.path.endswith(suffix):
                        self.send_error(status)
                        return
                path = (server.root / self.path.lstrip("/")).resolve()
                if not path.is_relative_to(server.root.resolve()) or not path.is_file():
                    self.send_error(404)
                    return
                body = path.read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def make_tls(directory: Path) -> tuple[Path, Path, Path]:
    """A CA made with openssl and a certificate it signed for 127.0.0.1: (ca.pem, cert.pem, key.pem)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key, cert, key, csr = (directory / n for n in ("ca.pem", "ca.key", "cert.pem", "key.pem", "req.csr"))
    ext = directory / "ext.cnf"
    ext.write_text("subjectAltName = IP:127.0.0.1\nbasicConstraints = CA:FALSE\n")
    for args in (["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                  "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=cvo test CA"],
                 ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                  "-out", csr, "-subj", "/CN=127.0.0.1"],
                 ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
                  "-days", "2", "-extfile", ext]):
        result = subprocess.run(["openssl", *map(str, args)], capture_output=True, timeout=60, check=False)
        if result.returncode != 0:
            raise AssertionError(f"openssl {args[0]} failed: {result.stderr.decode(errors='replace')}")
    return ca, cert, key


@contextlib.contextmanager
def store_server(root: Path, tls: tuple[Path, Path] | None = None) -> Iterator[StoreServer]:
    """A :class:`StoreServer`; ``tls``: (cert, key) to serve HTTPS with."""
    server = StoreServer(root)
    if tls is not None:
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
        server.url = server.url.replace("http://", "https://")
    try:
        yield server
    finally:
        server.close()


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """The URL of a server that accepts connections (the kernel's backlog does) and never answers:
    a client's read times out, always."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/signatures"
    finally:
        sock.close()


def closed_port_url() -> str:
    """The URL of a port nothing listens on (bound, never listening: connections are refused)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    _CLOSED.append(sock)
    return f"http://127.0.0.1:{port}/signatures"


_CLOSED: list[socket.socket] = []


def verifier_configmap(keyrings: dict[str, str], stores: list[str], name: str = "release-verification") -> dict:
    """The release's verification ConfigMap (library-go pkg/verify/testdata/manifests/loads-valid.yaml)."""
    data = {f"verifier-public-key-{k}": v for k, v in keyrings.items()}
    data.update({f"store-{i}": url for i, url in enumerate(stores)})
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "openshift-config-managed",
                         "annotations": {"release.openshift.io/verification-config-map": ""}},
            "data": data}


def signatures_configmap(digest: str, signatures: list[bytes], name: str | None = None) -> dict:
    """A ConfigMap of signatures as library-go ``GetSignaturesAsConfigmap`` makes it (binaryData base64)."""
    import base64

    prefix = digest.replace(":", "-", 1)
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name or prefix, "namespace": "openshift-config-managed",
                         "labels": {"release.openshift.io/verification-signatures": ""}},
            "binaryData": {f"{prefix}-{i}": base64.b64encode(s).decode() for i, s in enumerate(signatures, 1)}}
