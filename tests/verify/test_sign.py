"""Signing your own releases: ``sign`` writes STORE/sha256=HEX/signature-N that GnuPG itself (an independent
reader) and the verifier both accept."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from cvo.verify.errors import SigningFailed
from cvo.verify.sign import sign
from cvo.verify.signature import parse_signature
from tests.support.gpgkeys import DIGEST, REFERENCE, Keys, gpg, put_signature, stop_agent


def test_the_signature_is_an_atomic_container_signature_gpg_verifies(keys: Keys, store: Path) -> None:
    path = sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home, timestamp=1700000000)
    content = gpg(keys.home, "--decrypt", data=path.read_bytes())       # fails unless the signature is good
    doc = json.loads(content)
    assert doc == {"critical": {"identity": {"docker-reference": REFERENCE}, "image": {"docker-manifest-digest": DIGEST},
                                "type": "atomic container signature"},
                   "optional": {"creator": "cvo release sign", "timestamp": 1700000000}}
    status = gpg(keys.home, "--status-fd", "1", "--verify", data=path.read_bytes()).decode()
    assert f"VALIDSIG {keys.fingerprints['signer']}" in status
    assert parse_signature(content).digest == DIGEST


def test_next_free_number_and_a_uid_as_key(keys: Keys, store: Path) -> None:
    put_signature(store, DIGEST, 1, b"someone else's")
    path = sign(DIGEST, REFERENCE, "second@cvo.invalid", store, gnupg_home=keys.home)
    assert path.name == "signature-2"
    assert (path.parent / "signature-1").read_bytes() == b"someone else's"
    assert sorted(p.name for p in path.parent.iterdir()) == ["signature-1", "signature-2"]   # no temporary left


def test_concurrent_signers_never_overwrite(keys: Keys, store: Path) -> None:
    paths: list[Path] = []
    threads = [threading.Thread(target=lambda: paths.append(
        sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(p.name for p in paths) == ["signature-1", "signature-2", "signature-3"]


def test_an_armored_secret_key_file(keys: Keys, store: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "release.key"
    key_file.write_bytes(keys.secret("second"))
    path = sign(DIGEST, REFERENCE, str(key_file), store)
    status = gpg(keys.home, "--status-fd", "1", "--verify", data=path.read_bytes()).decode()
    assert f"VALIDSIG {keys.fingerprints['second']}" in status
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("cvo-sign-*/S.gpg-agent"))


def test_a_public_key_file_cannot_sign(keys: Keys, store: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "public.key"
    key_file.write_text(keys.public("signer"))
    with pytest.raises(SigningFailed, match=f"^the key file {key_file} holds no OpenPGP secret key$"):
        sign(DIGEST, REFERENCE, str(key_file), store)


@pytest.mark.parametrize(("key", "message"), [
    ("nobody@cvo.invalid", "no secret key nobody@cvo.invalid in "),
    ("cvo.invalid", "cvo.invalid names 5 secret keys in "),
    ("expired@cvo.invalid", "gpg could not sign with key expired@cvo.invalid: "),
])
def test_unusable_keys(keys: Keys, store: Path, key: str, message: str) -> None:
    with pytest.raises(SigningFailed, match=f"^{message}"):
        sign(DIGEST, REFERENCE, key, store, gnupg_home=keys.home)
    assert not any(store.rglob("signature-*"))


def test_bad_arguments(keys: Keys, store: Path, tmp_path: Path) -> None:
    with pytest.raises(SigningFailed, match="a release digest is sha256:<64 lowercase hex digits>"):
        sign("sha256:ABC", REFERENCE, "x", store, gnupg_home=keys.home)
    with pytest.raises(SigningFailed, match="docker reference"):
        sign(DIGEST, "", "x", store, gnupg_home=keys.home)
    with pytest.raises(SigningFailed, match="no GnuPG home"):
        sign(DIGEST, REFERENCE, "x", store, gnupg_home=tmp_path / "missing")


def test_a_full_store_is_refused(keys: Keys, store: Path) -> None:
    for n in range(1, 10):
        put_signature(store, DIGEST, n, b"x")
    with pytest.raises(SigningFailed, match="already holds signature-1 to signature-9, the most a verifier reads"):
        sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    assert sorted(p.name for p in store.rglob("*")) == sorted(["sha256=" + DIGEST[7:]] + [f"signature-{n}" for n in range(1, 10)])


def test_a_passphrase_protected_key(keys: Keys, store: Path, tmp_path: Path) -> None:
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    try:
        gpg(home, "--pinentry-mode", "loopback", "--passphrase", "s3cret", "--quick-gen-key", "locked <l@cvo.invalid>",
            "ed25519", "sign", "1d")
        path = sign(DIGEST, REFERENCE, "l@cvo.invalid", store, gnupg_home=home, passphrase="s3cret")
        assert path.name == "signature-1"
    finally:
        stop_agent(home)


def test_an_unwritable_store(keys: Keys, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SigningFailed, match=f"^cannot write a signature to {blocker}/sha256="):
        sign(DIGEST, REFERENCE, keys.fingerprints["signer"], blocker, gnupg_home=keys.home)
