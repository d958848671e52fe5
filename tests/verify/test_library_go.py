"""Signatures cvo did not make: library-go's own test data (pkg/verify/verify_test.go
``Test_ReleaseVerifier_Verify``), a release signed by Red Hat's key and one by a "simple" test key, read from a file
store and a real HTTP store, with library-go's expectations."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from cvo.verify.config import VerifierConfig
from cvo.verify.errors import VerificationFailed
from cvo.verify.verifier import Verifier
from tests.support.gpgkeys import store_server, verifier_configmap

DATA = Path(__file__).parent / "data" / "library-go"
REDHAT_SIGNED = "sha256:e3f12513a4b22a2d7c0e7c9207f52128113758d9d68c7d06b11a0ac7672966f7"
SIMPLE_SIGNED = "sha256:edd9824f0404f1a139688017e7001370e2f3fbc088b94da84506653b473fe140"


class In2020:
    """library-go's "simple" test key expired on 2021-04-21; its signature verified before."""

    def now(self) -> datetime:
        return datetime(2020, 1, 1, tzinfo=UTC)


def verifier(stores: list[str], *keyrings: str, clock: In2020 | None = None) -> Verifier:
    cm = verifier_configmap({k: (DATA / f"{k}.txt").read_text() for k in keyrings}, stores)
    return Verifier(VerifierConfig.from_configmap(cm), clock=clock)


@pytest.mark.parametrize(("keyring", "digest"), [("redhat", REDHAT_SIGNED), ("simple", SIMPLE_SIGNED)])
def test_library_go_signatures_verify_over_file_and_http(keyring: str, digest: str) -> None:
    store = DATA / "signatures"
    with verifier([store.as_uri()], keyring, clock=In2020()) as v:
        signed = v.verify(digest).signed_by[f"verifier-public-key-{keyring}"]
    assert signed.source == str(store / digest.replace(":", "=") / "signature-1")
    with store_server(store) as server, verifier([server.url], keyring, clock=In2020()) as v:
        assert v.verify(digest).signed_by[f"verifier-public-key-{keyring}"].fingerprint == signed.fingerprint
    if keyring == "redhat":
        # Red Hat's release key 2 (security@redhat.com), as docs.redhat.com publishes it
        assert signed.fingerprint == "567E347AD0044ADE55BA8A5F199E2F91FD431D51"


def test_a_signature_by_a_key_that_has_since_expired_is_refused() -> None:
    # library-go's x/crypto/openpgp checks a signature's lifetime but not its key's: it still accepts this one
    with verifier([(DATA / "signatures").as_uri()], "simple") as v, pytest.raises(
            VerificationFailed, match="signature error: the signing key D04761B116203B0C0859B61628B76E05B923888E has "
            "expired"):
        v.verify(SIMPLE_SIGNED)


def test_library_go_refusals() -> None:
    store = (DATA / "signatures").as_uri()
    with verifier([store], "simple") as v, pytest.raises(VerificationFailed, match="invalid signature: signed by key"):
        v.verify(REDHAT_SIGNED)                               # another key signed it
    with verifier([store], "redhat") as v, pytest.raises(VerificationFailed, match="no signature for sha256:0000"):
        v.verify("sha256:" + "0" * 64)                        # "file location rejects if digest is not found"
    with verifier([store], "redhat", "simple") as v, pytest.raises(
            VerificationFailed, match=r"^unable to verify .* against keyrings: verifier-public-key-simple "):
        v.verify(REDHAT_SIGNED)                               # every keyring must sign
