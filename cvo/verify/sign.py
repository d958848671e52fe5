"""Signing a release: the atomic container signature JSON of a digest, signed by GnuPG, written as
``STORE/sha256=HEX/signature-N`` with the next free N (what ``skopeo copy --sign-by`` writes to a
``lookaside`` store, and what library-go's stores read back).

``key`` is a fingerprint, key id or user id of a secret key in ``gnupg_home`` (else ``$GNUPGHOME`` or
``~/.gnupg``), or the path of a file holding an armored secret key: then it is imported into a
throwaway GNUPGHOME, used once and removed with it (the agent started for it is stopped).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cvo.log import get_logger
from cvo.verify.digests import SHA256, key_prefix
from cvo.verify.errors import SigningFailed
from cvo.verify.gpg import GpgUnavailable, open_gpg
from cvo.verify.signature import signature_json
from cvo.verify.stores import MAX_SIGNATURES

log = get_logger("cvo.verify.sign")

CREATOR = "cvo release sign"


def sign(digest: str, docker_reference: str, key: str, store: Path, *, gnupg_home: Path | None = None,
         passphrase: str | None = None, timestamp: int | None = None) -> Path:
    """Sign ``digest`` (as ``docker_reference``) with ``key`` into ``store``; the path written."""
    if not isinstance(digest, str) or not SHA256.fullmatch(digest):
        raise SigningFailed(f"cannot sign {digest!r}: a release digest is sha256:<64 lowercase hex digits>")
    if not docker_reference:
        raise SigningFailed("cannot sign without the image's docker reference (the pull spec it is published as)")
    message = signature_json(digest, docker_reference, creator=CREATOR,
                             timestamp=int(time.time()) if timestamp is None else timestamp)
    with _signing_home(key, gnupg_home) as (home, key_id):
        gpg = _gpg(home)
        fingerprint = _secret_key(gpg, key_id, key)
        # --local-user, not python-gnupg's keyid (--default-key): gpg falls back to another key for that one
        result = gpg.sign(message, passphrase=passphrase, binary=True, clearsign=False,
                          extra_args=["--local-user", fingerprint])
        signed: bytes = result.data or b""
        if not signed or result.returncode != 0:
            raise SigningFailed(f"gpg could not sign with key {key}: {_last_line(result)}")
        check = gpg.verify(signed)
        signer = check.pubkey_fingerprint or check.fingerprint
        if not check.valid or signer != fingerprint:
            raise SigningFailed(f"gpg signed with key {key}, but the signature does not verify as {fingerprint}'s: "
                                f"{check.key_status or check.status or _last_line(check)} (signer {signer})")
    path = write_signature(store, digest, signed)
    log.info("release signed", digest=digest, key=fingerprint, signature=str(path))
    return path


def write_signature(store: Path, digest: str, signed: bytes) -> Path:
    """``store/sha256=HEX/signature-N`` for the first free N (never over a signature: a hard link of
    a finished temporary file claims N atomically)."""
    directory = store / key_prefix(digest, "=")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".signature-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(signed)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            for n in range(1, MAX_SIGNATURES + 1):
                target = directory / f"signature-{n}"
                try:
                    os.link(tmp, target)
                except FileExistsError:
                    continue
                return target
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    except OSError as err:
        raise SigningFailed(f"cannot write a signature to {directory}: {err.strerror or err}") from None
    raise SigningFailed(f"{directory} already holds signature-1 to signature-{MAX_SIGNATURES}, "
                        f"the most a verifier reads")


@contextlib.contextmanager
def _signing_home(key: str, gnupg_home: Path | None) -> Iterator[tuple[Path, str]]:
    path = Path(key)
    if not path.is_file():
        home = gnupg_home or Path(os.environ.get("GNUPGHOME") or Path.home() / ".gnupg")
        if not home.is_dir():
            raise SigningFailed(f"no key file {key} and no GnuPG home {home} to find the key in")
        yield home, key
        return
    home = Path(tempfile.mkdtemp(prefix="cvo-sign-"))
    try:
        try:
            data = path.read_bytes()
        except OSError as err:
            raise SigningFailed(f"cannot read the key file {key}: {err.strerror or err}") from None
        result = _gpg(home).import_keys(data)
        secret = [r["fingerprint"] for r in result.results if r.get("fingerprint") and int(r.get("ok", 0)) & 16]
        if not secret:
            raise SigningFailed(f"the key file {key} holds no OpenPGP secret key")
        if len(set(secret)) > 1:
            raise SigningFailed(f"the key file {key} holds {len(set(secret))} secret keys: give one")
        yield home, secret[0]
    finally:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"],
                           capture_output=True, timeout=10, check=False)
        shutil.rmtree(home, ignore_errors=True)


def _gpg(home: Path) -> Any:
    try:
        return open_gpg(home, ["--batch"])
    except GpgUnavailable as err:
        raise SigningFailed(str(err)) from None


def _secret_key(gpg: Any, key_id: str, key: str) -> str:
    """The fingerprint of the one usable secret key ``key_id`` names."""
    keys = gpg.list_keys(True, keys=[key_id])
    usable = [k for k in keys if k.get("fingerprint")]
    if not usable:
        raise SigningFailed(f"no secret key {key} in {gpg.gnupghome}")
    if len(usable) > 1:
        raise SigningFailed(f"{key} names {len(usable)} secret keys in {gpg.gnupghome}: give a fingerprint")
    return str(usable[0]["fingerprint"])


def _last_line(result: Any) -> str:
    lines = [line.removeprefix("gpg: ") for line in (result.stderr or "").splitlines()
             if line.startswith("gpg: ") and "faked system time" not in line]
    return (lines[-1] if lines else str(result.status or "unknown error"))[:200]
