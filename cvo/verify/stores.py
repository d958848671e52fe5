"""Where signatures come from: a store serves ``STORE/sha256=HEX/signature-N`` for N = 1, 2, … until
the first one missing (containers/image docs/signature-protocols.md); a ConfigMap holds them as
``binaryData`` keys ``sha256-HEX-N``.

Ported from library-go pkg/verify: ``fileStore.Signatures`` (verify.go), store/sigstore/sigstore.go
``checkHTTPSignatures``, store/configmap/configmap.go ``Store.Signatures``.  As there, at most
signature-1 … signature-9 are read (``i < maxSignatureSearch``) and an HTTP body is read up to 50 KiB;
stricter: a bigger body is refused rather than cut, a store that times out or cannot be reached is
not asked for further signatures, and every request shares the verification's deadline.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import http.client
import os
import socket
import ssl
import stat
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from cvo.verify.digests import key_prefix
from cvo.verify.gpg import MAX_MESSAGE

MAX_SIGNATURES = 9                   # library-go: for i := 1; i < maxSignatureSearch (10); i++
SIGNATURES_NAMESPACE = "openshift-config-managed"   # store/configmap NamespaceLabelConfigMap
SIGNATURES_LABEL = "release.openshift.io/verification-signatures"  # store/configmap ReleaseLabelConfigMap
READ_CHUNK = 8192


@dataclass(frozen=True)
class Found:
    """One signature's bytes and where they were read (a URL, a path or a ConfigMap key)."""

    data: bytes
    source: str


@dataclass(frozen=True)
class Problem:
    """Why a store gave no (more) signatures: one line naming the store."""

    message: str


class Deadline:
    """The verification's time budget, on an injectable monotonic clock."""

    def __init__(self, seconds: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._monotonic = monotonic
        self._end = monotonic() + seconds

    def remaining(self) -> float:
        return self._end - self._monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0


class Store(Protocol):
    name: str

    def signatures(self, digest: str, deadline: Deadline) -> Iterator[Found | Problem]: ...


# --- file:// ----------------------------------------------------------------------------------

class FileStore:
    """``file:///DIR``: DIR/sha256=HEX/signature-N (library-go verify.go ``fileStore``)."""

    def __init__(self, url: str) -> None:
        self.name = url
        self.directory = Path(unquote(urlsplit(url).path))

    def signatures(self, digest: str, deadline: Deadline) -> Iterator[Found | Problem]:
        base = self.directory / key_prefix(digest, "=")
        for i in range(1, MAX_SIGNATURES + 1):
            path = base / f"signature-{i}"
            try:
                data = read_file(path, MAX_MESSAGE)
            except FileNotFoundError:
                if i == 1:
                    yield Problem(f"{self.name}: no signature for {digest} ({path} does not exist)")
                return
            except OSError as err:
                yield Problem(f"{self.name}: cannot read {path}: {err.strerror or err}")
                continue
            except ValueError as err:
                yield Problem(f"{self.name}: {path}: {err}")
                continue
            yield Found(data, str(path))


def read_file(path: Path, limit: int) -> bytes:
    """A regular file's bytes, refused (ValueError) when it is something else or larger than ``limit``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data


# --- http:// and https:// ---------------------------------------------------------------------

class _NoUnsafeRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects to http(s) only (urllib would also follow one to ftp://)."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> urllib.request.Request | None:
        if urlsplit(newurl).scheme not in ("http", "https"):
            raise urllib.error.HTTPError(newurl, code, f"redirect to {urlsplit(newurl).scheme}: refused", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class HttpStore:
    """``http(s)://HOST/PATH``: GET PATH/sha256=HEX/signature-N (store/sigstore ``checkHTTPSignatures``).

    A 404 ends the search; another status is reported and the next N tried, as library-go does; a
    timeout, refused connection or TLS failure ends it (the store is not healthy)."""

    def __init__(self, url: str, *, ca_file: Path | None = None, timeout: float = 30.0) -> None:
        self.name = url
        self._parts = urlsplit(url)
        self.timeout = timeout
        context = ssl.create_default_context()
        if ca_file is not None:
            context.load_verify_locations(cafile=str(ca_file))
        self._opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context),
                                                   _NoUnsafeRedirects())

    def url_of(self, digest: str, n: int) -> str:
        path = self._parts.path.rstrip("/") + "/" + quote(key_prefix(digest, "="), safe="=+") + f"/signature-{n}"
        return urlunsplit((self._parts.scheme, self._parts.netloc, path, self._parts.query, ""))

    def signatures(self, digest: str, deadline: Deadline) -> Iterator[Found | Problem]:
        for i in range(1, MAX_SIGNATURES + 1):
            url = self.url_of(digest, i)
            if deadline.expired():
                yield Problem(f"{self.name}: timed out after {deadline.seconds:g}s before reading {url}")
                return
            try:
                data = self._get(url, deadline)
            except urllib.error.HTTPError as err:
                if err.code == 404:
                    if i == 1:
                        yield Problem(f"{self.name}: no signature for {digest} ({url}: 404 Not Found)")
                    return
                yield Problem(f"{self.name}: unable to retrieve signature from {url}: response status {err.code}")
                continue
            except _TooLarge:
                yield Problem(f"{self.name}: {url}: the signature is larger than {MAX_MESSAGE} bytes")
                continue
            except TimeoutError:
                yield Problem(f"{self.name}: timed out after {min(self.timeout, deadline.seconds):g}s reading {url}")
                return
            except (OSError, http.client.HTTPException, ValueError) as err:
                yield Problem(f"{self.name}: unable to retrieve signature from {url}: {_reason(err)}")
                return
            if data:   # library-go skips an empty body
                yield Found(data, url)

    def _get(self, url: str, deadline: Deadline) -> bytes:
        timeout = max(0.001, min(self.timeout, deadline.remaining()))
        request = urllib.request.Request(url, headers={"Accept": "application/octet-stream, */*",
                                                        "User-Agent": "cvo-signature-verifier"})
        with self._opener.open(request, timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) > MAX_MESSAGE:
                raise _TooLarge()
            chunks: list[bytes] = []
            size = 0
            while True:
                if deadline.expired():
                    raise TimeoutError()
                chunk = response.read1(READ_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_MESSAGE:
                    raise _TooLarge()
                chunks.append(chunk)
            return b"".join(chunks)


class _TooLarge(Exception):
    pass


def _reason(err: BaseException) -> str:
    if isinstance(err, urllib.error.URLError) and not isinstance(err, urllib.error.HTTPError):
        inner = err.reason
        if isinstance(inner, TimeoutError | socket.timeout):
            return "timed out"
        if isinstance(inner, ssl.SSLCertVerificationError):
            return f"TLS: {inner.verify_message or inner}"
        if isinstance(inner, OSError) and inner.errno == errno.ECONNREFUSED:
            return "connection refused"
        return str(inner.strerror if isinstance(inner, OSError) and inner.strerror else inner)[:200]
    return (str(err) or type(err).__name__).splitlines()[0][:200]


def open_store(url: str, *, ca_file: Path | None = None, timeout: float = 30.0) -> Store:
    if urlsplit(url).scheme == "file":
        return FileStore(url)
    return HttpStore(url, ca_file=ca_file, timeout=timeout)


# --- ConfigMaps in openshift-config-managed ---------------------------------------------------

def is_signature_configmap(cm: Any) -> bool:
    """Labelled ``release.openshift.io/verification-signatures`` (any value), in openshift-config-managed
    (or with no namespace: read from a file)."""
    if not isinstance(cm, Mapping) or cm.get("kind", "ConfigMap") != "ConfigMap":
        return False
    meta = cm.get("metadata")
    if not isinstance(meta, Mapping):
        return False
    labels = meta.get("labels")
    return isinstance(labels, Mapping) and SIGNATURES_LABEL in labels \
        and meta.get("namespace", SIGNATURES_NAMESPACE) == SIGNATURES_NAMESPACE


def _index(key: str, prefix: str) -> tuple[int, str]:
    tail = key[len(prefix):].lstrip("-")
    return (int(tail), key) if tail.isdigit() and len(tail) < 10 else (1 << 40, key)


class ConfigMapStore:
    """Signatures in ConfigMaps: ``binaryData`` keys starting ``sha256-HEX`` (store/configmap
    ``Store.Signatures``); values base64 as the API serves them, or bytes already decoded."""

    name = f"config maps in {SIGNATURES_NAMESPACE} with label {SIGNATURES_LABEL!r}"

    def __init__(self, configmaps: Iterable[Mapping[str, Any]]) -> None:
        self.configmaps = sorted((cm for cm in configmaps if is_signature_configmap(cm)),
                                 key=lambda cm: str(cm["metadata"].get("name", "")))

    def signatures(self, digest: str, deadline: Deadline) -> Iterator[Found | Problem]:
        prefix = key_prefix(digest, "-")
        for cm in self.configmaps:
            name = f"{SIGNATURES_NAMESPACE}/{cm['metadata'].get('name', '')}"
            binary = cm.get("binaryData")
            if not isinstance(binary, Mapping):
                continue
            keys = sorted((k for k in binary if isinstance(k, str) and k.startswith(prefix)),
                          key=lambda k: _index(k, prefix))
            for key in keys[:MAX_SIGNATURES]:
                source = f"config map {name} key {key}"
                value = binary[key]
                with contextlib.suppress(binascii.Error, ValueError):
                    if isinstance(value, str):
                        value = base64.b64decode(value, validate=True)
                if not isinstance(value, bytes | bytearray):
                    yield Problem(f"{source}: not base64 data")
                elif len(value) > MAX_MESSAGE:
                    yield Problem(f"{source}: the signature is larger than {MAX_MESSAGE} bytes")
                else:
                    yield Found(bytes(value), source)
