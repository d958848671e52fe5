"""Release digests as signatures name them (library-go pkg/verify/verify.go ``validReleaseDigest``,
pkg/verify/util/util.go ``DigestToKeyPrefix``)."""

from __future__ import annotations

import json
import re

from cvo.verify.errors import VerificationFailed

# library-go pkg/verify/verify.go validReleaseDigest: filters clearly invalid digests.
VALID_RELEASE_DIGEST = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+")
SHA256 = re.compile(r"sha256:[0-9a-f]{64}")


def go_quote(text: str) -> str:
    """Close to Go's ``%q`` for the printable texts cvo quotes (a JSON string, non-ASCII escaped)."""
    return json.dumps(text)


def check_release_digest(digest: str) -> str:
    """``digest`` if a release verifier can look it up; the error messages of releaseVerifier.Verify."""
    if not digest:
        raise VerificationFailed("release images that are not accessed via digest cannot be verified")
    if not isinstance(digest, str) or not VALID_RELEASE_DIGEST.fullmatch(digest):
        raise VerificationFailed(
            f"the provided release image digest has an invalid format: {go_quote(str(digest)[:200])}")
    return digest


def key_prefix(digest: str, divider: str) -> str:
    """``ALGO<divider>HASH``: ``sha256=HEX`` names a store's directory, ``sha256-HEX`` a ConfigMap key
    (pkg/verify/util/util.go ``DigestToKeyPrefix``)."""
    algo, sep, hexa = digest.partition(":")
    if not sep or not algo or not hexa or ":" in hexa:
        raise VerificationFailed("the provided digest must be of the form ALGO:HASH")
    return f"{algo}{divider}{hexa}"
