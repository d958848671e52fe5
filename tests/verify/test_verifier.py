"""Verifier end to end: throwaway keys made by gpg, signatures written by cvo.verify.sign and read back from a
file store, a real HTTP store on 127.0.0.1 and ConfigMaps; every refusal of the issue's bad-input list worded as
library-go pkg/verify/verify.go ``releaseVerifier.Verify`` words it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cvo.verify import config as cfg
from cvo.verify.errors import VerificationFailed
from cvo.verify.sign import sign
from cvo.verify.signature import signature_json
from cvo.verify.verifier import Verifier
from tests.support.gpgkeys import (
    DAY,
    DIGEST,
    OTHER_DIGEST,
    REFERENCE,
    Keys,
    closed_port_url,
    gpg_sign,
    put_signature,
    signatures_configmap,
    silent_server,
    store_server,
    verifier_configmap,
)


def config(keys: Keys, stores: list[str], *names: str) -> cfg.VerifierConfig:
    return cfg.VerifierConfig.from_configmap(
        verifier_configmap({n: keys.public(n) for n in (names or ("signer",))}, stores))


def refused(verifier: Verifier, digest: str = DIGEST) -> VerificationFailed:
    with pytest.raises(VerificationFailed) as err:
        verifier.verify(digest)
    assert "\n" not in str(err.value)
    return err.value


def test_a_signature_written_by_sign_verifies_from_a_file_store(keys: Keys, store: Path) -> None:
    path = sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    assert path == store / f"sha256={DIGEST[7:]}" / "signature-1"
    with Verifier(config(keys, [store.as_uri()])) as verifier:
        verified = verifier.verify(DIGEST)
    assert verified.digest == DIGEST and not verified.cached
    by = verified.signed_by["verifier-public-key-signer"]
    assert (by.fingerprint, by.source, by.docker_reference) == (keys.fingerprints["signer"], str(path), REFERENCE)


def test_a_real_http_store(keys: Keys, store: Path) -> None:
    sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    with store_server(store) as server, Verifier(config(keys, [server.url + "/"])) as verifier:
        assert verifier.verify(DIGEST).signed_by["verifier-public-key-signer"].source == (
            f"{server.url}/sha256={DIGEST[7:]}/signature-1")
        assert server.requests == [f"/sha256={DIGEST[7:]}/signature-1"]


def test_signatures_from_configmaps_come_first(keys: Keys, store: Path) -> None:
    signed = gpg_sign(keys, "signer", signature_json(DIGEST, REFERENCE))
    cms = [signatures_configmap(DIGEST, [b"junk", signed]),
           {**signatures_configmap(DIGEST, [signed], "elsewhere"), "metadata": {"name": "x", "namespace": "default",
            "labels": {"release.openshift.io/verification-signatures": ""}}}]
    with store_server(store) as server, Verifier(config(keys, [server.url]), signature_configmaps=cms) as verifier:
        by = verifier.verify(DIGEST).signed_by["verifier-public-key-signer"]
        assert by.source == f"config map openshift-config-managed/sha256-{DIGEST[7:]} key sha256-{DIGEST[7:]}-2"
        assert server.requests == []


def test_an_unsigned_image_is_refused_naming_the_store(keys: Keys, store: Path) -> None:
    with Verifier(config(keys, [store.as_uri()])) as verifier:
        err = refused(verifier)
    assert err.message.startswith(f"unable to verify {DIGEST} against keyrings: verifier-public-key-signer (")
    assert f"{store.as_uri()}: no signature for {DIGEST}" in err.message


def test_a_store_that_404s(keys: Keys, store: Path) -> None:
    with store_server(store) as server, Verifier(config(keys, [server.url])) as verifier:
        err = refused(verifier)
    assert f"{server.url}: no signature for {DIGEST} ({server.url}/sha256={DIGEST[7:]}/signature-1: 404 Not Found)" \
        in err.message


def test_a_store_that_never_answers_times_out(keys: Keys, store: Path) -> None:
    sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    with silent_server() as url:
        verifier = Verifier(config(keys, [url, store.as_uri()]), timeout=0.5)
        start = time.monotonic()
        err = refused(verifier, OTHER_DIGEST)
        assert time.monotonic() - start < 5
        assert f"{url}: timed out after 0.5s reading {url}/sha256={OTHER_DIGEST[7:]}/signature-1" in err.message
        # one slow store does not hide the others while the time lasts
        verifier.timeout = 30
        assert verifier.verify(DIGEST).signed_by
        verifier.close()


def test_a_store_that_refuses_connections_or_fails(keys: Keys, store: Path) -> None:
    url = closed_port_url()
    with store_server(store) as server, Verifier(config(keys, [url, server.url])) as verifier:
        server.faults["signature-1"] = 500
        err = refused(verifier)
    assert f"{url}: unable to retrieve signature from {url}/sha256={DIGEST[7:]}/signature-1: connection refused" \
        in err.message
    assert f"{server.url}: unable to retrieve signature from {server.url}/sha256={DIGEST[7:]}/signature-1: " \
        "response status 500" in err.message


def test_a_signature_for_another_digest(keys: Keys, store: Path) -> None:
    put_signature(store, DIGEST, 1, gpg_sign(keys, "signer", signature_json(OTHER_DIGEST, REFERENCE)))
    with Verifier(config(keys, [store.as_uri()])) as verifier:
        assert "signature-1: signature digest does not match" in refused(verifier).message


def test_a_signature_by_an_unknown_key(keys: Keys, store: Path) -> None:
    put_signature(store, DIGEST, 1, gpg_sign(keys, "stranger", signature_json(DIGEST, REFERENCE)))
    with Verifier(config(keys, [store.as_uri()])) as verifier:
        assert "signature-1: invalid signature: signed by key " in refused(verifier).message


def test_a_signature_with_an_unknown_field(keys: Keys, store: Path) -> None:
    data = signature_json(DIGEST, REFERENCE).replace(b'"optional":{', b'"optional":{"policy":"none"')
    put_signature(store, DIGEST, 1, gpg_sign(keys, "signer", data))
    with Verifier(config(keys, [store.as_uri()])) as verifier:
        assert 'signature-1: the signature is not valid JSON: unknown field "optional.policy"' in refused(verifier).message


def test_a_signature_by_an_expired_key(keys: Keys, store: Path) -> None:
    # made 10 days ago by a key valid for one day: a good signature then, refused now
    put_signature(store, DIGEST, 1, gpg_sign(keys, "expired", signature_json(DIGEST, REFERENCE),
                                             faked_time=int(time.time()) - 10 * DAY + 60))
    with Verifier(config(keys, [store.as_uri()], "expired")) as verifier:
        message = refused(verifier).message
    assert f"signature error: the signing key {keys.fingerprints['expired']} has expired" in message


def test_an_expired_signature(keys: Keys, store: Path) -> None:
    put_signature(store, DIGEST, 1, gpg_sign(keys, "old", signature_json(DIGEST, REFERENCE), "--default-sig-expire",
                                             "1d", faked_time=int(time.time()) - 3 * DAY))
    with Verifier(config(keys, [store.as_uri()], "old")) as verifier:
        assert "signature-1: signature expired (made " in refused(verifier).message


def test_expiry_is_judged_on_the_injected_clock(keys: Keys, store: Path) -> None:
    sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)

    class Later:
        def now(self) -> datetime:
            return datetime.now(UTC) + timedelta(days=400)   # the signer's key expires after a year

    with Verifier(config(keys, [store.as_uri()]), clock=Later()) as verifier:
        assert "has expired" in refused(verifier).message


def test_every_keyring_must_sign(keys: Keys, store: Path) -> None:
    sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    two = config(keys, [store.as_uri()], "signer", "second")
    with Verifier(two) as verifier:
        err = refused(verifier)
        assert err.message.startswith(f"unable to verify {DIGEST} against keyrings: verifier-public-key-second (")
        sign(DIGEST, REFERENCE, keys.fingerprints["second"], store, gnupg_home=keys.home)
        assert sorted(verifier.verify(DIGEST).signed_by) == ["verifier-public-key-second", "verifier-public-key-signer"]


def test_a_keyring_of_several_keys_needs_one_of_them(keys: Keys, store: Path) -> None:
    cm = verifier_configmap({"both": keys.public("signer", "second")}, [store.as_uri()])
    sign(DIGEST, REFERENCE, keys.fingerprints["second"], store, gnupg_home=keys.home)
    with Verifier(cfg.VerifierConfig.from_configmap(cm)) as verifier:
        assert verifier.verify(DIGEST).signed_by["verifier-public-key-both"].fingerprint == keys.fingerprints["second"]


def test_later_signatures_are_read_until_one_verifies(keys: Keys, store: Path) -> None:
    put_signature(store, DIGEST, 1, b"not a signature")
    put_signature(store, DIGEST, 2, gpg_sign(keys, "stranger", signature_json(DIGEST, REFERENCE)))
    path = sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    assert path.name == "signature-3"
    with Verifier(config(keys, [store.as_uri()])) as verifier:
        assert verifier.verify(DIGEST).signed_by["verifier-public-key-signer"].source == str(path)


def test_signature_stores_of_the_clusterversion_replace_the_configmaps(keys: Keys, store: Path, tmp_path: Path) -> None:
    sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with store_server(elsewhere) as server:
        with Verifier(config(keys, [store.as_uri()]), signature_stores=[server.url]) as verifier:
            message = refused(verifier).message
        assert message.endswith("; ClusterVersion spec.signatureStores exhausted without finding a valid signature)")
        assert store.as_uri() not in message
        with Verifier(config(keys, [server.url]), signature_stores=[store.as_uri()]) as verifier:
            assert verifier.verify(DIGEST).signed_by
        assert server.requests == [f"/sha256={DIGEST[7:]}/signature-1"]
    with Verifier(config(keys, [store.as_uri()]), signature_stores=[]) as verifier:
        assert "ClusterVersion spec.signatureStores is an empty array. Unset signatureStores entirely" in \
            refused(verifier).message


def test_verified_digests_are_cached(keys: Keys, store: Path) -> None:
    path = sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    with Verifier(config(keys, [store.as_uri()])) as verifier:
        first = verifier.verify(DIGEST)
        signed = path.read_bytes()
        path.unlink()
        again = verifier.verify(DIGEST)
        assert again.cached and again.signed_by == first.signed_by
        assert verifier.signatures() == {DIGEST: (signed,)}
        refused(verifier, OTHER_DIGEST)           # a failure is not cached, nor a success for another digest


def test_the_cache_keeps_the_64_most_recent(keys: Keys, store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cvo.verify import verifier as module

    monkeypatch.setattr(module, "MAX_CACHE", 2)
    digests = [f"sha256:{i:064x}" for i in range(3)]
    for d in digests:
        sign(d, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    with Verifier(config(keys, [store.as_uri()])) as verifier:
        for d in digests:
            verifier.verify(d)
        assert list(verifier.signatures()) == digests[1:]


@pytest.mark.parametrize(("digest", "message"), [
    ("", "release images that are not accessed via digest cannot be verified"),
    ("!sha256:" + "a" * 64, 'the provided release image digest has an invalid format: "!sha256:'),
    ("sha256:" + "a" * 64 + ":", "the provided release image digest has an invalid format: "),
])
def test_digests_that_cannot_be_verified(keys: Keys, store: Path, digest: str, message: str) -> None:
    with Verifier(config(keys, [store.as_uri()])) as verifier:
        assert refused(verifier, digest).message.startswith(message)


def test_a_verifier_without_keyrings_is_misconfigured(store: Path) -> None:
    with Verifier(cfg.VerifierConfig({}, (store.as_uri(),))) as verifier:
        assert refused(verifier).message == "the release verifier is incorrectly configured, unable to verify digests"


def test_the_verifier_describes_itself(keys: Keys, store: Path) -> None:
    with Verifier(config(keys, [store.as_uri()])) as verifier:
        assert str(verifier) == ("All release image digests must have GPG signatures from verifier-public-key-signer"
                                 " - will check for signatures in containers/image format at config maps in "
                                 "openshift-config-managed with label 'release.openshift.io/verification-signatures'"
                                 f", {store.as_uri()}")


def test_the_gnupg_home_is_private_and_removed(keys: Keys, store: Path) -> None:
    sign(DIGEST, REFERENCE, keys.fingerprints["signer"], store, gnupg_home=keys.home)
    verifier = Verifier(config(keys, [store.as_uri()]))
    verifier.verify(DIGEST)
    assert verifier._keyrings is not None
    home = verifier._keyrings.home
    assert home.is_dir() and home != keys.home and not (home / "S.gpg-agent").exists()
    verifier.close()
    assert not home.exists()
