"""``cvo release sign``: a signature of a release digest, written to a file signature store.

What containers/image's ``signature`` package and ``skopeo standalone-sign`` write: the atomic container
signature JSON (:func:`cvo.verify.signature.signed_content`) as an opaque OpenPGP signed message, stored as
``STORE/sha256=HEX/signature-N`` with the first free N (library-go ``pkg/verify`` reads N from 1).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from cvo.verify.gpg import sign_message
from cvo.verify.signature import signed_content
from cvo.verify.stores import MAX_SIGNATURES, valid_digest


def sign(digest: str, docker_reference: str, key: str, store: Path, *, gnupg_home: Path | None = None) -> Path:
    """Sign ``digest`` (as ``docker_reference``) with ``key``; the signature file written."""
    if not valid_digest(digest):
        raise ValueError(f"{digest!r} is not a sha256 digest")
    signed = sign_message(signed_content(digest, docker_reference), key, gnupg_home)
    directory = store / ("sha256=" + digest.split(":", 1)[1])
    directory.mkdir(parents=True, exist_ok=True)
    for n in range(1, MAX_SIGNATURES):
        path = directory / f"signature-{n}"
        fd, temp = tempfile.mkstemp(dir=directory, prefix=".signature-")
        with os.fdopen(fd, "wb") as out:
            out.write(signed)
        try:
            os.link(temp, path)  # fails if signature-N exists: the next N is tried
        except FileExistsError:
            continue
        finally:
            os.unlink(temp)
        return path
    raise ValueError(f"{directory} already holds {MAX_SIGNATURES - 1} signatures")
