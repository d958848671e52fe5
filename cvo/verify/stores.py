"""Where signatures are read from: stores laid out as ``STORE/sha256=HEX/signature-N``, and ConfigMaps.

library-go ``pkg/verify/verify.go`` ``fileStore.Signatures`` and ``pkg/verify/store/sigstore``
``checkHTTPSignatures``: ``signature-1``, ``signature-2``, … until one is missing (a 404), at most
:data:`MAX_SIGNATURES`; each request has a timeout.  ``pkg/verify/store/configmap``: ConfigMaps in
``openshift-config-managed`` labelled ``release.openshift.io/verification-signatures`` hold signatures as
``binaryData`` keys ``sha256-HEX-N``.  A signature body is hostile input: at most 64 KiB is read.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import urllib3
from urllib3.exceptions import HTTPError, MaxRetryError

from cvo.verify.gpg import MAX_SIGNATURE_BYTES

MAX_SIGNATURES = 10  # library-go maxSignatureSearch: signature-1 … signature-9
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Found:
    """One signature, or why a store could not give the next one (``signature`` empty)."""

    where: str
    signature: bytes = b""
    error: str = ""


def _segment(digest: str, separator: str) -> str:
    algorithm, _, hexa = digest.partition(":")
    return f"{algorithm}{separator}{hexa}"


def from_store(url: str, digest: str, timeout: float, ca_file: Path | None = None) -> Iterator[Found]:
    """The signatures of ``digest`` in the store at ``url``."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        yield from _from_directory(Path(unquote(parts.path)), digest)
        return
    context = None
    if parts.scheme == "https":
        import ssl

        context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
        if ca_file:
            context.load_default_certs()
    pool = urllib3.PoolManager(ssl_context=context, retries=False)
    base = url.rstrip("/") + "/" + _segment(digest, "=") + "/signature-"
    for n in range(1, MAX_SIGNATURES):
        where = f"{base}{n}"
        try:
            response = pool.request("GET", where, timeout=urllib3.Timeout(connect=timeout, read=timeout),
                                    preload_content=False, retries=urllib3.Retry(total=None, connect=0, read=0,
                                                                                 status=0, redirect=3))
        except (MaxRetryError, HTTPError, OSError) as err:
            reason = err.reason if isinstance(err, MaxRetryError) else err
            yield Found(where, error=f"unable to retrieve signature from {where}: {_short(reason)}")
            return
        try:
            if response.status == 404:
                return
            if response.status != 200:
                yield Found(where, error=f"unable to retrieve signature from {where}: response status "
                                         f"{response.status}")
                return
            data = response.read(MAX_SIGNATURE_BYTES + 1)
        except (HTTPError, OSError) as err:
            yield Found(where, error=f"unable to retrieve signature from {where}: {_short(err)}")
            return
        finally:
            response.release_conn()
        if len(data) > MAX_SIGNATURE_BYTES:
            yield Found(where, error=f"{where}: over {MAX_SIGNATURE_BYTES} bytes")
            continue
        yield Found(where, data)


def _from_directory(directory: Path, digest: str) -> Iterator[Found]:
    base = directory / _segment(digest, "=")
    for n in range(1, MAX_SIGNATURES):
        path = base / f"signature-{n}"
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_SIGNATURE_BYTES + 1)
        except FileNotFoundError:
            return
        except OSError as err:
            yield Found(str(path), error=f"unable to load signature {path}: {err.strerror}")
            continue
        if len(data) > MAX_SIGNATURE_BYTES:
            yield Found(str(path), error=f"{path}: over {MAX_SIGNATURE_BYTES} bytes")
            continue
        yield Found(str(path), data)


def from_configmaps(configmaps: Iterable[Mapping[str, Any]], digest: str) -> Iterator[Found]:
    """The signatures of ``digest`` in ``binaryData`` ``sha256-HEX-N`` of the labelled ConfigMaps."""
    prefix = _segment(digest, "-") + "-"
    for cm in configmaps:
        metadata = cm.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        where = f"configmap {metadata.get('namespace', '')}/{metadata.get('name', '')}"
        binary = cm.get("binaryData")
        if not isinstance(binary, dict):
            continue
        for key in sorted(k for k in binary if isinstance(k, str) and k.startswith(prefix)):
            value = binary[key]
            try:
                data = base64.b64decode(value, validate=True) if isinstance(value, str) else b""
            except (binascii.Error, ValueError):
                yield Found(f"{where} {key}", error=f"{where}: {key} is not base64")
                continue
            if data:
                yield Found(f"{where} {key}", data[:MAX_SIGNATURE_BYTES + 1])


def _short(err: object) -> str:
    text = str(err).split("Caused by ", 1)[-1]
    return "".join(c if c.isprintable() else " " for c in text)[:200]


def valid_digest(digest: str) -> bool:
    return bool(_DIGEST.fullmatch(digest))
