"""Signature stores as hostile input: ConfigMap keys and values, special files, sizes, redirects."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from cvo.verify.gpg import MAX_MESSAGE
from cvo.verify.stores import ConfigMapStore, Deadline, FileStore, Found, HttpStore, Problem
from tests.support.gpgkeys import DIGEST, put_signature, signatures_configmap, store_server

PREFIX = f"sha256-{DIGEST[7:]}"


def read(store, digest: str = DIGEST) -> list[Found | Problem]:
    return list(store.signatures(digest, Deadline(10)))


def test_configmap_keys_in_order_and_bad_values(store: Path) -> None:
    cm = signatures_configmap(DIGEST, [])
    cm["binaryData"] = {f"{PREFIX}-10": base64.b64encode(b"ten").decode(), f"{PREFIX}-2": base64.b64encode(b"two").decode(),
                        f"{PREFIX}-1": "not base64!", f"{PREFIX}-3": 7, "sha256-other-1": "eA==",
                        f"{PREFIX}-4": base64.b64encode(b"x" * (MAX_MESSAGE + 1)).decode()}
    found = read(ConfigMapStore([cm, {"kind": "ConfigMap", "metadata": {"name": "unlabelled"},
                                      "binaryData": {f"{PREFIX}-1": "eA=="}}, "junk", {"metadata": []}]))
    name = f"config map openshift-config-managed/{PREFIX}"
    assert found == [Problem(f"{name} key {PREFIX}-1: not base64 data"), Found(b"two", f"{name} key {PREFIX}-2"),
                     Problem(f"{name} key {PREFIX}-3: not base64 data"),
                     Problem(f"{name} key {PREFIX}-4: the signature is larger than {MAX_MESSAGE} bytes"),
                     Found(b"ten", f"{name} key {PREFIX}-10")]


def test_a_file_store_stops_at_the_first_missing_and_reads_at_most_nine(store: Path) -> None:
    for n in (*range(1, 12), 13):
        put_signature(store, DIGEST, n, f"sig {n}".encode())
    found = read(FileStore(store.as_uri()))
    assert [f.data for f in found] == [f"sig {n}".encode() for n in range(1, 10)]


def test_a_file_store_refuses_special_and_large_files(store: Path) -> None:
    put_signature(store, DIGEST, 1, b"x" * (MAX_MESSAGE + 1))
    os.mkfifo(store / f"sha256={DIGEST[7:]}" / "signature-2")        # a FIFO would block a plain open()
    (store / f"sha256={DIGEST[7:]}" / "signature-3").mkdir()
    put_signature(store, DIGEST, 4, b"good")
    found = read(FileStore(store.as_uri()))
    assert [type(f) for f in found] == [Problem, Problem, Problem, Found]
    assert f"larger than {MAX_MESSAGE} bytes" in found[0].message
    assert found[1].message.endswith("signature-2: not a regular file")


def test_an_http_store_refuses_large_bodies_and_skips_empty_ones(store: Path) -> None:
    put_signature(store, DIGEST, 1, b"x" * (MAX_MESSAGE + 1))
    put_signature(store, DIGEST, 2, b"")
    put_signature(store, DIGEST, 3, b"good")
    with store_server(store) as server:
        found = read(HttpStore(server.url + "/"))
    assert found[0] == Problem(f"{server.url}/: {server.url}/sha256={DIGEST[7:]}/signature-1: the signature is larger "
                               f"than {MAX_MESSAGE} bytes")
    assert found[1:] == [Found(b"good", f"{server.url}/sha256={DIGEST[7:]}/signature-3")]


def test_an_expired_deadline_asks_nothing(store: Path) -> None:
    with store_server(store) as server:
        found = read_with(HttpStore(server.url), Deadline(0))
        assert server.requests == []
    assert found[0].message.startswith(f"{server.url}: timed out after 0s before reading")


def read_with(store, deadline: Deadline) -> list[Found | Problem]:
    return list(store.signatures(DIGEST, deadline))


def test_an_https_store_is_verified_against_the_ca_file(keys, store: Path, tmp_path: Path) -> None:
    from cvo.verify.config import VerifierConfig
    from cvo.verify.errors import VerificationFailed
    from cvo.verify.sign import sign
    from cvo.verify.verifier import Verifier
    from tests.support.gpgkeys import REFERENCE, make_tls, verifier_configmap

    ca, cert, key = make_tls(tmp_path / "tls")
    sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    with store_server(store, tls=(cert, key)) as server:
        config = VerifierConfig.from_configmap(verifier_configmap({"a": keys.public("signer")}, [server.url]))
        with Verifier(config, ca_file=ca) as verifier:
            assert verifier.verify(DIGEST).signed_by["verifier-public-key-a"].source.startswith("https://127.0.0.1:")
        with Verifier(config) as verifier, pytest.raises(VerificationFailed) as err:
            verifier.verify(DIGEST)
        assert f"{server.url}: unable to retrieve signature from {server.url}/sha256={DIGEST[7:]}/signature-1: TLS: " \
            "unable to get local issuer certificate" in err.value.message
