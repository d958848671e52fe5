"""Verifying release digests with real GnuPG keys: the keyring rule, expired keys, stores over HTTP that 404,
fail or never answer, the verifier ConfigMap's rules, signing into a store."""

from __future__ import annotations

import http.server
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cvo.verify import ConfigError, VerificationFailed, Verifier, VerifierConfig, find_verifier_config, sign
from cvo.verify.gpg import sign_message
from cvo.verify.signature import signed_content
from tests.support.signing import Key, make_key

DIGEST = "sha256:" + "12" * 32
OTHER = "sha256:" + "34" * 32


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Key:
    return make_key(tmp_path_factory.mktemp("gpg") / "home", "releases <r@test.invalid>")


def config(key: Key, *stores: str) -> VerifierConfig:
    return VerifierConfig({"verifier-public-key-r": key.public}, tuple(stores), "configmap x/y")


def test_a_signature_in_a_file_store_verifies_and_is_remembered(key: Key, tmp_path: Path) -> None:
    written = sign(DIGEST, "quay.io/r", key.uid, tmp_path, gnupg_home=key.home)
    assert written == tmp_path / f"sha256={DIGEST[7:]}" / "signature-1"
    assert sign(DIGEST, "quay.io/r", key.uid, tmp_path, gnupg_home=key.home).name == "signature-2"  # next free N
    verified = Verifier(config(key, f"file://{tmp_path}")).verify(DIGEST)
    assert verified.keyrings == ("verifier-public-key-r",) and not verified.cached
    written.unlink()
    (tmp_path / f"sha256={DIGEST[7:]}" / "signature-2").unlink()
    assert Verifier(config(key, f"file://{tmp_path}")).verify(DIGEST).cached  # nothing read the second time


def test_an_expired_key_does_not_verify(tmp_path: Path) -> None:
    """A key made (and used) in 2020 with a day's validity: its signature was good then, and is refused now."""
    home = tmp_path / "old"
    home.mkdir(mode=0o700)
    fake = ["--faked-system-time", "20200101T000000"]
    subprocess.run(["gpg", "--homedir", str(home), *fake, "--batch", "--passphrase", "", "--quick-gen-key",
                    "old <old@test.invalid>", "ed25519", "sign", "1d"], check=True, capture_output=True)
    public = subprocess.run(["gpg", "--homedir", str(home), "--armor", "--export"], check=True,
                            capture_output=True, text=True).stdout
    signed = subprocess.run(["gpg", "--homedir", str(home), "--faked-system-time", "20200101T120000", "--batch",
                             "--sign"], input=signed_content(OTHER, "quay.io/r"), check=True,
                            capture_output=True).stdout
    store = tmp_path / "store" / f"sha256={OTHER[7:]}"
    store.mkdir(parents=True)
    (store / "signature-1").write_bytes(signed)
    old = VerifierConfig({"verifier-public-key-old": public}, (f"file://{tmp_path / 'store'}",), "cm")
    with pytest.raises(VerificationFailed, match="signature-1: the signing key has expired"):
        Verifier(old).verify(OTHER)


@pytest.fixture
def http_store(tmp_path: Path) -> Iterator[tuple[str, dict[str, int]]]:
    """A real HTTP server on 127.0.0.1 serving ``tmp_path/served`` with one path answering 500."""
    served = tmp_path / "served"
    served.mkdir()
    hits: dict[str, int] = {}

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(served), **kwargs)  # type: ignore[arg-type]

        def do_GET(self) -> None:
            hits[self.path] = hits.get(self.path, 0) + 1
            if "broken" in self.path:
                self.send_error(500)
                return
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


def test_an_http_store_is_read_until_a_404(key: Key, tmp_path: Path, http_store: tuple[str, dict[str, int]]) -> None:
    url, hits = http_store
    digest = "sha256:" + "56" * 32  # verified nowhere else: the verifier remembers what it verified
    sign(digest, "quay.io/r", key.uid, tmp_path / "served" / "sigs", gnupg_home=key.home)
    assert Verifier(config(key, f"{url}/sigs")).verify(digest).keyrings == ("verifier-public-key-r",)
    assert hits == {f"/sigs/sha256={digest[7:]}/signature-1": 1}
    with pytest.raises(VerificationFailed, match=f"no signature of {OTHER} in {url}/sigs"):
        Verifier(config(key, f"{url}/sigs")).verify(OTHER)
    assert hits[f"/sigs/sha256={OTHER[7:]}/signature-1"] == 1  # the 404 ends the search


def test_a_store_that_fails_or_never_answers_is_named(key: Key, http_store: tuple[str, dict[str, int]]) -> None:
    url, _ = http_store
    with pytest.raises(VerificationFailed, match=r"unable to retrieve signature from .*/broken/.*response status 500"):
        Verifier(config(key, f"{url}/broken")).verify(OTHER)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections (the kernel does), never reads or answers
    try:
        port = silent.getsockname()[1]
        with pytest.raises(VerificationFailed, match=rf"unable to retrieve signature from http://127.0.0.1:{port}/.*"
                                                     r"(timed out|Read timed out)"):
            Verifier(config(key, f"http://127.0.0.1:{port}"), timeout=0.5).verify(OTHER)
    finally:
        silent.close()


def test_the_verifier_configmap_rules() -> None:
    annotated = {"kind": "ConfigMap", "metadata": {"namespace": "openshift-config-managed", "name": "rv",
                                                   "annotations": {"release.openshift.io/verification-config-map": ""}}}
    key = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nx\n-----END PGP PUBLIC KEY BLOCK-----\n"
    assert find_verifier_config([{"kind": "ConfigMap", "data": {}}]) is None  # not annotated: no verifier
    found = find_verifier_config([{**annotated, "data": {"store-b": " https://b/ ", "store-a": "file:///a",
                                                         "verifier-public-key-k": key, "other": "ignored"}}])
    assert found is not None and found.stores == ("file:///a", "https://b/") and list(found.keyrings) == [
        "verifier-public-key-k"]
    with pytest.raises(ConfigError, match="did not provide any signature stores"):
        find_verifier_config([{**annotated, "data": {"verifier-public-key-k": key}}])
    with pytest.raises(ConfigError, match="did not provide any GPG public keys"):
        find_verifier_config([{**annotated, "data": {"store-a": "file:///a"}}])
    with pytest.raises(ConfigError, match="invalid key 'store-a': must be a valid URL with scheme file://"):
        find_verifier_config([{**annotated, "data": {"store-a": "ftp://a", "verifier-public-key-k": key}}])


def test_signing_needs_a_key_that_exists(key: Key, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"gpg could not sign with 'nobody@test\.invalid': no such secret key"):
        sign_message(b"x", "nobody@test.invalid", key.home)
    with pytest.raises(ValueError, match="is not a sha256 digest"):
        sign("sha256:12", "quay.io/r", key.uid, tmp_path, gnupg_home=key.home)
