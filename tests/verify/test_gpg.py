"""GnuPG as the verifier drives it: a throwaway home holding only the configured public keys; every message
that is not exactly one good signature by one of them is refused with one line."""

from __future__ import annotations

import time

import pytest

from cvo.verify.errors import SignatureInvalid
from cvo.verify.gpg import MAX_MESSAGE, Keyrings
from cvo.verify.signature import MAX_CONTENT
from tests.support.gpgkeys import DAY, Keys, gpg, gpg_sign


@pytest.fixture(scope="module")
def keyrings(keys: Keys) -> Keyrings:
    made = Keyrings({"a": keys.public("signer"), "b": keys.public("second", "expired", "old")})
    yield made
    made.close()


def refused(keyrings: Keyrings, message: bytes) -> str:
    with pytest.raises(SignatureInvalid) as err:
        keyrings.verify(message)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_each_keyring_holds_its_primary_fingerprints(keys: Keys, keyrings: Keyrings) -> None:
    f = keys.fingerprints
    assert keyrings.fingerprints == {"a": {f["signer"]}, "b": {f["second"], f["expired"], f["old"]}}


def test_a_good_signature(keys: Keys, keyrings: Keyrings) -> None:
    signed = keyrings.verify(gpg_sign(keys, "second", b"{}"))
    assert (signed.content, signed.fingerprint) == (b"{}", keys.fingerprints["second"])
    assert signed.created is not None and abs(signed.created.timestamp() - time.time()) < 600


@pytest.mark.parametrize(("make", "message"), [
    (lambda k: gpg_sign(k, "stranger", b"{}"), "invalid signature: signed by key "),
    (lambda k: gpg_sign(k, "signer", b"{}", "--armor"), "could not read the message: not a signed message (it starts "
     "with no OpenPGP packet)"),
    (lambda k: gpg(k.home, "--local-user", k.fingerprints["signer"], "--clearsign", data=b"{}"),
     "could not read the message: not a signed message"),
    (lambda k: gpg(k.home, "--store", "--compress-algo", "none", data=b"{}"), "could not read the message: not a signed message (it starts "
     "with an OpenPGP packet of tag 11)"),
    (lambda k: gpg(k.home, "--store", "--compress-algo", "zlib", "-z", "6", data=b"{}"), "not signed"),
    (lambda k: gpg_sign(k, "signer", b"{}")[:-20], "not signed"),
    (lambda k: gpg(k.home, "--local-user", k.fingerprints["signer"], "--detach-sign", data=b"{}"),
     "signature error: bad signature"),
    (lambda k: gpg(k.home, "--local-user", k.fingerprints["signer"], "--local-user", k.fingerprints["second"],
                   "--sign", data=b"{}"), "invalid signature: 2 signatures in one message"),
    (lambda k: gpg(k.home, "--export", k.fingerprints["signer"]), "could not read the message: not a signed message"),
    (lambda k: b"", "could not read the message: not a signed message"),
    (lambda k: b"\xa3\x01junk", "could not read the message: "),
    (lambda k: b"\x90" + b"\x00" * (MAX_MESSAGE + 1), f"could not read the message: larger than {MAX_MESSAGE} bytes"),
])
def test_refused_messages(keys: Keys, keyrings: Keyrings, make, message: str) -> None:
    assert refused(keyrings, make(keys)).startswith(message)


def test_a_tampered_signature_is_bad(keys: Keys, keyrings: Keyrings) -> None:
    good = gpg_sign(keys, "signer", b"{}", "--compress-algo", "none")
    literal = good.index(b"{}")
    assert refused(keyrings, good[:literal] + b"[]" + good[literal + 2:]) == "signature error: bad signature"


def test_a_compression_bomb_stops_at_the_cap(keys: Keys, keyrings: Keyrings) -> None:
    bomb = gpg_sign(keys, "signer", b"\0" * 20_000_000, "--compress-algo", "bzip2", "-z", "9")
    assert len(bomb) < 2000
    start = time.monotonic()
    assert refused(keyrings, bomb) == f"could not read the message: its content is larger than {MAX_CONTENT} bytes"
    assert time.monotonic() - start < 20


def test_expired_key_and_signature(keys: Keys, keyrings: Keyrings) -> None:
    ten_days_ago = int(time.time()) - 10 * DAY
    by_expired = gpg_sign(keys, "expired", b"{}", faked_time=ten_days_ago + 60)
    assert refused(keyrings, by_expired) == f"signature error: the signing key {keys.fingerprints['expired']} has expired"
    expiring = gpg_sign(keys, "old", b"{}", "--default-sig-expire", "1d", faked_time=ten_days_ago + 60)
    assert refused(keyrings, expiring).startswith("signature expired (made ")
    # both were good when made
    from datetime import datetime

    then = datetime.fromtimestamp(ten_days_ago + 120)
    assert keyrings.verify(by_expired, now=then).fingerprint == keys.fingerprints["expired"]
    assert keyrings.verify(expiring, now=then).fingerprint == keys.fingerprints["old"]


@pytest.mark.parametrize(("data", "message"), [
    ("", "no OpenPGP public key found"),
    ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----\n", "no OpenPGP public key found"),
    ("hello", "no OpenPGP public key found"),
])
def test_keyrings_without_a_public_key_are_refused(data: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Keyrings({"x": data})


def test_a_secret_key_is_never_imported(keys: Keys) -> None:
    with pytest.raises(ValueError, match="it holds a secret key"):
        Keyrings({"x": keys.secret("signer").decode()})
