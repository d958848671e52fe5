"""OpenPGP through GnuPG (python-gnupg over the ``gpg`` binary): checking a signed message against one keyring.

library-go ``pkg/verify/verify.go`` ``verifySignatureWithKeyring`` reads the message with
``openpgp.ReadMessage``: it must be signed, by a key of the keyring, with a good signature that has not
expired.  Here each keyring gets a throwaway GnuPG home holding only its keys (never the user's keyring),
and ``gpg --decrypt`` of the opaque signed message (``gpg --sign``, as containers/image writes signatures)
both returns the content and reports the signature: ``GOODSIG`` is required; ``EXPSIG``, ``EXPKEYSIG``,
``REVKEYSIG``, ``BADSIG``, ``ERRSIG`` and ``NO_PUBKEY`` are refusals, each with its reason.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
from pathlib import Path

import gnupg

MAX_SIGNATURE_BYTES = 64 << 10
# python-gnupg logs gpg's non-zero exits as warnings (an unknown key is one): the reasons reach the caller
# as NotVerified instead, and nothing is printed behind cvo's own log
logging.getLogger("gnupg").addHandler(logging.NullHandler())
logging.getLogger("gnupg").propagate = False


class KeyringError(ValueError):
    """A keyring that cannot be imported."""


class NotVerified(ValueError):
    """A signed message this keyring does not verify; ``str()`` is the reason."""


class Keyring:
    """The keys of one ``verifier-public-key-*`` in a GnuPG home of their own (remove with :meth:`close`)."""

    def __init__(self, name: str, armored: str) -> None:
        self.name = name
        self.home = Path(tempfile.mkdtemp(prefix="cvo-keyring-"))
        self._gpg = gnupg.GPG(gnupghome=str(self.home))
        result = self._gpg.import_keys(armored)
        self.fingerprints = frozenset(f.upper() for f in result.fingerprints or [])
        if not self.fingerprints:
            self.close()
            raise KeyringError(f"{name}: no OpenPGP public key could be read")

    def verify(self, signed: bytes) -> bytes:
        """The content of ``signed`` when a key of this keyring made a good, unexpired signature of it."""
        if len(signed) > MAX_SIGNATURE_BYTES:
            raise NotVerified(f"the signature is over {MAX_SIGNATURE_BYTES} bytes")
        result = self._gpg.decrypt(signed)
        status = str(result.status or "")
        # EXPKEYSIG/REVKEYSIG set key_status and valid=False; the VALIDSIG after them rewrites status
        key_status = str(getattr(result, "key_status", None) or "")
        if result.valid and not key_status and (result.fingerprint or "").upper() in self.fingerprints:
            return bytes(result.data)
        for reason in (key_status, status):
            if "expired" in reason or "revoked" in reason:
                raise NotVerified(reason.replace("signing key", "the signing key"))
        if result.key_id and not result.valid and ("no public key" in status or status == ""):
            raise NotVerified(f"signed by key {result.key_id}, which is not in the keyring")
        if "bad signature" in status:
            raise NotVerified("invalid signature")
        if not result.key_id:
            raise NotVerified("not signed")
        raise NotVerified(f"signature error: {status or 'not verified'}")

    def close(self) -> None:
        subprocess.run(["gpgconf", "--homedir", str(self.home), "--kill", "all"], capture_output=True,
                       check=False, timeout=10)
        shutil.rmtree(self.home, ignore_errors=True)


def sign_message(content: bytes, key: str, gnupg_home: Path | None) -> bytes:
    """``content`` as an opaque signed message (``gpg --sign``) by ``key`` of ``gnupg_home``'s keyring."""
    gpg = gnupg.GPG(gnupghome=str(gnupg_home) if gnupg_home else None)
    # gpg signs with its default key when --default-key names none: look the key up first, and check after
    secret = {k["fingerprint"].upper() for k in gpg.list_keys(True, keys=[key])}
    if not secret:
        raise ValueError(f"gpg could not sign with {key!r}: no such secret key in "
                         f"{gnupg_home or '$GNUPGHOME or ~/.gnupg'}")
    if len(secret) > 1:
        raise ValueError(f"gpg could not sign with {key!r}: it names {len(secret)} secret keys; give a fingerprint")
    result = gpg.sign(content, keyid=next(iter(secret)), clearsign=False, detach=False, binary=True)
    if not result.data or (result.fingerprint or "").upper() not in secret:
        raise ValueError(f"gpg could not sign with {key!r}: {result.status or result.stderr.strip()[-200:]}")
    return bytes(result.data)
