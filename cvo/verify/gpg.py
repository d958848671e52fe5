"""OpenPGP through GnuPG (python-gnupg drives the ``gpg`` binary): import keyrings, verify and make
signed messages.

library-go verifies with ``golang.org/x/crypto/openpgp`` (pkg/verify/verify.go
``verifySignatureWithKeyring``); cvo asks GnuPG, as containers/image's ``mechanism_gpgme.go`` does.
Verification runs in a throwaway GNUPGHOME holding only the configured public keys, with
``--no-autostart`` (no gpg-agent: no secret key, no passphrase prompt can ever be involved) and
``--max-output`` (a compressed message cannot expand past :data:`MAX_CONTENT`).  GnuPG refuses expired
keys (``EXPKEYSIG``), expired signatures (``EXPSIG``), revoked keys and unknown keys (``NO_PUBKEY``).
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import gnupg

from cvo.log import get_logger
from cvo.verify.errors import SignatureInvalid
from cvo.verify.signature import MAX_CONTENT

log = get_logger("cvo.verify.gpg")

MAX_MESSAGE = 50 * 1024  # library-go pkg/verify/store/sigstore/sigstore.go reads at most 50 KiB of a signature
# OpenPGP packet tags a signed message may start with (RFC 4880 §11.3): a signature (old style), a
# one-pass signature, or compressed data (what ``gpg --sign`` writes).  Anything else (an encrypted
# message, a key, armor, a clear-signed text) is not what a signature store serves.
SIGNED_MESSAGE_TAGS = {2: "signature", 4: "one-pass signature", 8: "compressed data"}
VERIFY_OPTIONS = ["--no-autostart", "--max-output", str(MAX_CONTENT), "--no-auto-key-retrieve",
                  "--no-auto-key-locate", "--trust-model", "always"]


class GpgUnavailable(Exception):
    """The ``gpg`` binary cannot be run."""


def open_gpg(home: Path, options: list[str]) -> Any:
    """A ``gnupg.GPG`` on ``home`` (the binary is checked once here)."""
    try:
        return gnupg.GPG(gnupghome=str(home), options=options)
    except (OSError, ValueError, RuntimeError) as err:
        raise GpgUnavailable(f"cannot run gpg (GnuPG 2.2 or later is needed to verify signatures): {err}") from None


def packet_tag(message: bytes) -> int | None:
    """The tag of the first OpenPGP packet of a binary message, None when the first byte is no packet."""
    if not message or not message[0] & 0x80:
        return None
    first = message[0]
    return first & 0x3F if first & 0x40 else (first >> 2) & 0x0F


@dataclass(frozen=True)
class Signed:
    """What a good signature vouches for: the signed bytes and the signing key."""

    content: bytes
    fingerprint: str         # the primary key's (a signature by a subkey counts for its primary key)
    created: datetime | None


class Keyrings:
    """A throwaway GNUPGHOME holding each configured keyring's public keys.

    ``fingerprints[name]`` are the primary fingerprints that keyring holds; a signature counts for
    every keyring holding its key (library-go verifies it once per keyring, with the same result).
    """

    def __init__(self, keyrings: Mapping[str, str]) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="cvo-gnupg-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.home, True)
        try:
            self._gpg = open_gpg(self.home, VERIFY_OPTIONS)
            self.fingerprints = {name: self._import(name, data) for name, data in sorted(keyrings.items())}
        except BaseException:
            self.close()
            raise

    def _import(self, name: str, data: str) -> frozenset[str]:
        result = self._gpg.import_keys(data)
        fingerprints = frozenset(f for f in result.fingerprints if f)
        if result.sec_read:
            raise ValueError("it holds a secret key")
        if not fingerprints:
            problems = sorted({r.get("text", "").strip() for r in result.results if "problem" in r}
                              - {"", "No valid data found"})
            raise ValueError("no OpenPGP public key found" + (f" ({'; '.join(problems)})" if problems else ""))
        return fingerprints

    def close(self) -> None:
        self._cleanup()

    def __enter__(self) -> Keyrings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def verify(self, message: bytes, now: datetime | None = None) -> Signed:
        """The content of a signed message and its signer, or :class:`SignatureInvalid` worded as
        library-go ``verifySignatureWithKeyring`` words it.  ``now``: judge expiry at that time
        (``--faked-system-time``) instead of the system clock."""
        if len(message) > MAX_MESSAGE:
            raise SignatureInvalid(f"could not read the message: larger than {MAX_MESSAGE} bytes")
        tag = packet_tag(message)
        if tag not in SIGNED_MESSAGE_TAGS:
            what = "no OpenPGP packet" if tag is None else f"an OpenPGP packet of tag {tag}"
            raise SignatureInvalid(f"could not read the message: not a signed message (it starts with {what})")
        extra = ["--faked-system-time", f"{int(now.timestamp())}!"] if now is not None else []
        result = self._gpg.decrypt(message, extra_args=extra)
        return _judge(result, self.fingerprints)


def _judge(result: Any, keyrings: Mapping[str, frozenset[str]]) -> Signed:
    problems = [p.get("status", "") for p in result.problems]
    content: bytes = result.data or b""
    if len(content) >= MAX_CONTENT:
        raise SignatureInvalid(f"could not read the message: its content is larger than {MAX_CONTENT} bytes")
    if "no public key" in problems:
        key = result.key_id or "?"
        raise SignatureInvalid(f"invalid signature: signed by key {key}, which is in no keyring")
    if "signing key has expired" in problems:
        raise SignatureInvalid(f"signature error: the signing key {result.pubkey_fingerprint or result.key_id} has expired")
    if "signing key was revoked" in problems:
        raise SignatureInvalid(f"signature error: the signing key {result.pubkey_fingerprint or result.key_id} was revoked")
    if "signature expired" in problems:
        raise SignatureInvalid(f"signature expired (made {_date(result.sig_timestamp)})")
    if "signature bad" in problems:
        raise SignatureInvalid("signature error: bad signature")
    if problems:
        raise SignatureInvalid(f"signature error: {problems[0]}")
    if not result.sig_info and not result.valid:
        reason = _gpg_reason(result)
        if reason == "not signed":
            raise SignatureInvalid("not signed")
        raise SignatureInvalid(f"could not read the message: {reason}")
    if len(result.sig_info) != 1:
        raise SignatureInvalid(f"invalid signature: {len(result.sig_info)} signatures in one message")
    fingerprint = result.pubkey_fingerprint or result.fingerprint
    if not result.valid or result.returncode != 0 or not fingerprint:
        raise SignatureInvalid(f"invalid signature: {_gpg_reason(result)}")
    if not any(fingerprint in fingerprints for fingerprints in keyrings.values()):
        raise SignatureInvalid(f"invalid signature: signed by key {fingerprint}, which is in no keyring")
    created = None
    if result.sig_timestamp and str(result.sig_timestamp).isdigit():
        created = datetime.fromtimestamp(int(result.sig_timestamp)).astimezone()
    return Signed(content, fingerprint, created)


def _date(timestamp: Any) -> str:
    if timestamp and str(timestamp).isdigit():
        return datetime.fromtimestamp(int(timestamp)).astimezone().isoformat(timespec="seconds")
    return "at an unknown time"


def _gpg_reason(result: Any) -> str:
    """One line of what gpg said: its status, else its last ``gpg:`` message."""
    lines = [line for line in (result.stderr or "").splitlines() if line.startswith("gpg: ")
             and "faked system time" not in line]
    if result.status and result.status not in ("signature valid", "decryption ok"):
        reason = str(result.status)
    elif lines:
        reason = lines[-1].removeprefix("gpg: ")
    else:
        reason = "not signed"
    if reason in ("no data was provided", "decryption ok"):
        reason = "not signed" if result.data else "no valid OpenPGP data found"
    return reason[:200]
