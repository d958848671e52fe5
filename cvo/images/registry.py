"""A registry's repository over the distribution HTTP API (``docs/spec/api.md``; OCI distribution-spec).

:func:`open_registry` gives a :class:`~cvo.images.repository.Repository` for ``REGISTRY/REPO``.  The
protocol follows containers/image ``docker/docker_client.go``: ``/v2/`` is pinged first (``https``; plain
``http`` only with ``--insecure-registry``, ``detectPropertiesHelper``), its ``WWW-Authenticate`` challenge
decides basic auth or a Bearer token for the repository's scope (distribution ``internal/client/auth/
session.go`` ``fetchTokenWithBasicAuth``), and credentials come from :mod:`cvo.images.auth`.

Every request runs inside the command's :class:`~cvo.images.repository.Deadline`: 5xx, 429 (its
``Retry-After`` honoured), reset or stalled connections are retried with exponential back-off on the
deadline's injected clock until the next wait would not fit; a response that stops sending for
``read_timeout`` seconds is abandoned.  A blob cut mid-stream is resumed with a ``Range`` request where
it stopped.  Manifests are checked against the digest asked for and ``Docker-Content-Digest``; blobs stream
through :class:`~cvo.images.digest.VerifyingReader`, so memory stays flat whatever their size.  Pushes
upload blobs (``POST`` then a monolithic ``PUT``, or ``PATCH`` chunks for big ones) and ``PUT`` manifests.

Credentials and tokens appear in no log line, error or ``repr``; log lines name paths without queries.
"""

from __future__ import annotations

import email.utils
import hashlib
import re
import ssl
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlencode, urljoin, urlsplit

import orjson
import urllib3
from urllib3.exceptions import (
    InsecureRequestWarning,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from cvo.images import media
from cvo.images.auth import Challenge, Credentials, auth_sources, find_credentials, parse_challenges
from cvo.images.digest import VerifyingReader, check_digest
from cvo.images.errors import ImageError, Problem
from cvo.images.options import RegistryOptions as RegistryOptions  # re-exported: the client's options
from cvo.images.reference import SHA256, ImageRef
from cvo.images.repository import Deadline, Descriptor, RawManifest
from cvo.log import get_logger

log = get_logger("cvo.images.registry")

MAX_MANIFEST_BYTES = 4 << 20  # distribution registry/handlers/manifests.go maxManifestBodySize
MAX_ERROR_BYTES = 64 << 10    # of an error body read for its message
MAX_TOKEN_RESPONSE_BYTES = 1 << 20
CONNECT_TIMEOUT = 10.0
BACKOFF_FIRST = 0.5           # seconds; doubled per attempt
BACKOFF_MAX = 8.0
RETRY_AFTER_MAX = 60.0
MAX_REDIRECTS = 5
MONOLITHIC_MAX = 64 << 20     # bigger blobs go up in PATCH chunks of CHUNK_SIZE
CHUNK_SIZE = 16 << 20
TOKEN_MIN_LIFETIME = 60       # session.go minimumTokenLifetimeSeconds
RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})


def open_registry(ref: ImageRef, options: RegistryOptions, deadline: Deadline) -> RegistryRepository:
    """The repository ``ref`` names; credentials are looked up now (a broken config file fails here),
    the registry is first contacted on the first request."""
    if ref.transport != "docker":
        raise ImageError(str(ref), "not a registry image", Problem.INVALID)
    return RegistryRepository(ref, options, deadline)


def _clean(text: str, limit: int = 200) -> str:
    """Server text fit for a one-line message: printable, bounded."""
    out = "".join(c if c.isprintable() else " " for c in text).strip()
    return out if len(out) <= limit else out[: limit - 1] + "…"


def error_detail(body: bytes) -> str:
    """``CODE: message`` of a registry's error body (distribution ``registry/api/errcode``), ``""`` otherwise."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return ""
    errors = doc.get("errors") if isinstance(doc, dict) else None
    if not isinstance(errors, list):
        return ""
    parts = []
    for err in errors[:3]:
        if isinstance(err, dict):
            code, message = err.get("code"), err.get("message")
            text = ": ".join(str(x) for x in (code, message) if isinstance(x, str) and x)
            if text:
                parts.append(text)
    return _clean("; ".join(parts))


def decimal(value: str | None) -> int | None:
    """A header's non-negative integer (ASCII digits only: ``str.isdigit`` takes ``²``), else ``None``."""
    if value is None or not re.fullmatch(r"[0-9]{1,30}", value.strip()):
        return None
    return int(value.strip())


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` in seconds (an integer or an HTTP date), ``None`` when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    seconds = decimal(value)
    if seconds is not None:
        return float(min(seconds, 10**6))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass
class _Token:
    value: str = field(repr=False)
    expires: float


class _Retry(Exception):
    """A transient failure of one attempt: retried while the deadline allows."""

    def __init__(self, detail: str, wait: float | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.wait = wait


Body = bytes | Callable[[], IO[bytes]] | None


class RegistryRepository:
    """One repository of a registry (the :class:`~cvo.images.repository.Repository` protocol)."""

    def __init__(self, ref: ImageRef, options: RegistryOptions, deadline: Deadline) -> None:
        self.ref = ref
        self._image = str(ref)
        self.options = options
        self.deadline = deadline
        self.credentials: Credentials | None = find_credentials(
            self._image, ref, auth_sources(options.registry_config, options.pull_secret))
        self._context = self._tls_context()
        self._pool = urllib3.PoolManager(ssl_context=self._context, retries=False, maxsize=4)
        self._base = ""  # https://REGISTRY or http://REGISTRY once pinged
        self._challenges: list[Challenge] = []
        self._tokens: dict[str, _Token] = {}
        self.chunk_size = CHUNK_SIZE
        self.monolithic_max = MONOLITHIC_MAX

    def __repr__(self) -> str:
        return f"RegistryRepository({self.ref.name})"

    @property
    def image(self) -> str:
        return self._image

    def _error(self, message: str, problem: Problem) -> ImageError:
        return ImageError(self._image, message, problem)

    # ---------------------------------------------------------------------------------- connection

    def _tls_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if self.options.ca_file is not None:
            try:
                context.load_verify_locations(cafile=str(self.options.ca_file))
            except (OSError, ssl.SSLError) as err:
                raise ImageError(self._image, f"--registry-ca {self.options.ca_file}: not a readable PEM "
                                              f"certificate file ({_clean(str(err), 120)})", Problem.INVALID) from None
        if self.options.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def _timeout(self) -> urllib3.Timeout:
        remaining = self.deadline.remaining()
        if remaining <= 0:
            raise self._error(f"gave up: the timeout of {self.deadline.seconds:g} s ran out", Problem.TRANSIENT)
        return urllib3.Timeout(connect=min(CONNECT_TIMEOUT, remaining),
                               read=min(self.options.read_timeout, max(remaining, 0.001)))

    def _send(self, method: str, url: str, headers: Mapping[str, str], body: Body) -> urllib3.BaseHTTPResponse:
        """One HTTP exchange, its body left to read; transport failures become :class:`_Retry` or
        :class:`ImageError`."""
        data: Any = body() if callable(body) else body
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InsecureRequestWarning)
                return self._pool.request(method, url, headers=dict(headers), body=data, redirect=False,
                                          preload_content=False, timeout=self._timeout(), retries=False)
        except SSLError as err:
            hint = (" (plain HTTP? that needs --insecure-registry)" if "WRONG_VERSION_NUMBER" in str(err)
                    else " (--registry-ca adds a CA; --insecure-registry skips verification)"
                    if "CERTIFICATE_VERIFY_FAILED" in str(err) else "")
            raise self._error(f"TLS with {urlsplit(url).netloc} failed: {_reason(err)}{hint}",
                              Problem.UNAVAILABLE) from None
        except NameResolutionError:
            raise self._error(f"cannot resolve {urlsplit(url).hostname}", Problem.UNAVAILABLE) from None
        except NewConnectionError as err:
            if "refused" in str(err).lower():
                raise self._error(f"cannot connect to {urlsplit(url).netloc}: connection refused",
                                  Problem.UNAVAILABLE) from None
            raise _Retry(f"cannot connect to {urlsplit(url).netloc}: {_reason(err)}") from None
        except (ReadTimeoutError, Urllib3Timeout):
            raise _Retry(f"no answer from {urlsplit(url).netloc} within {self.options.read_timeout:g} s") from None
        except (ProtocolError, OSError) as err:
            raise _Retry(f"connection to {urlsplit(url).netloc} failed: {_reason(err)}") from None
        finally:
            if hasattr(data, "close"):
                data.close()

    def _backoff(self, attempt: int, failure: _Retry, what: str) -> None:
        """Wait before attempt ``attempt + 1``, or raise when the deadline leaves no room for it."""
        wait = min(BACKOFF_FIRST * 2 ** attempt, BACKOFF_MAX)
        if failure.wait is not None:
            wait = max(wait, min(failure.wait, RETRY_AFTER_MAX))
        if wait >= self.deadline.remaining():
            raise self._error(f"{what}: {failure.detail} (gave up after {attempt + 1} attempt"
                              f"{'s' if attempt else ''} within the timeout of {self.deadline.seconds:g} s)",
                              Problem.TRANSIENT)
        log.info("registry request retried", image=self._image, what=what, failure=failure.detail,
                 attempt=attempt + 1, wait=round(wait, 3))
        self.deadline.sleep(wait)

    def _ping(self) -> None:
        """``GET /v2/`` over https (then http, with --insecure-registry): the scheme and the challenges."""
        if self._base:
            return
        schemes = ["https", "http"] if self.options.insecure else ["https"]
        first: ImageError | None = None
        for scheme in schemes:
            base = f"{scheme}://{self.ref.registry}"
            try:
                response = self._attempts("GET", f"{base}/v2/", {}, None, "pinging the registry", auth=False)
            except ImageError as err:
                if err.problem is not Problem.UNAVAILABLE:
                    raise
                first = first or err
                continue
            status = response.status
            challenges = parse_challenges(response.headers.getlist("WWW-Authenticate"))
            _done(response)
            if status not in (200, 401):
                raise self._error(f"{base}/v2/ answered {status}: not a container registry", Problem.UNAVAILABLE)
            self._base, self._challenges = base, challenges if status == 401 else []
            return
        assert first is not None
        raise first

    # ------------------------------------------------------------------------------------- auth

    def _scope(self, push: bool) -> str:
        return f"repository:{self.ref.repository}:{'pull,push' if push else 'pull'}"

    def _authorization(self, push: bool) -> dict[str, str]:
        for challenge in self._challenges:
            if challenge.scheme == "bearer":
                return {"Authorization": f"Bearer {self._token(challenge, self._scope(push))}"}
            if challenge.scheme == "basic" and self.credentials is not None:
                return {"Authorization": self.credentials.basic()}
        return {}

    def _token(self, challenge: Challenge, scope: str) -> str:
        cached = self._tokens.get(scope)
        if cached is not None and cached.expires > self.deadline.monotonic():
            return cached.value
        realm = challenge.params.get("realm", "")
        parts = urlsplit(realm)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise self._error(f"the registry's token realm {_clean(realm, 120)!r} is not an http(s) URL",
                              Problem.UNAVAILABLE)
        if parts.scheme == "http" and self.credentials is not None and not self.options.insecure:
            raise self._error(f"the registry's token realm {parts.netloc} is plain HTTP: credentials are only "
                              "sent there with --insecure-registry", Problem.UNAUTHORIZED)
        query = {k: v for k, v in (("service", challenge.params.get("service", "")), ("scope", scope)) if v}
        headers = {"Accept": "application/json"}
        if self.credentials is not None:
            query["account"] = self.credentials.username
            headers["Authorization"] = self.credentials.basic()
        url = realm + ("&" if parts.query else "?") + urlencode(query)
        started = self.deadline.monotonic()
        response = self._attempts("GET", url, headers, None, "asking for a token", auth=False)
        body = _read_limited(response, MAX_TOKEN_RESPONSE_BYTES)
        if response.status in (401, 403):
            raise self._error(self._denied("the token server " + parts.netloc, response.status, body),
                              Problem.UNAUTHORIZED)
        if response.status != 200:
            raise self._error(f"the token server {parts.netloc} answered {response.status}"
                              f"{_with(error_detail(body))}", Problem.UNAVAILABLE)
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            doc = None
        token = (doc.get("access_token") or doc.get("token")) if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token or any(c in token for c in "\r\n\0 ") or len(token) > 64 << 10:
            raise self._error(f"the token server {parts.netloc} answered no usable token", Problem.UNAVAILABLE)
        lifetime = doc.get("expires_in") if isinstance(doc, dict) else None
        seconds = lifetime if isinstance(lifetime, int) and not isinstance(lifetime, bool) else 0
        self._tokens[scope] = _Token(token, started + max(seconds, TOKEN_MIN_LIFETIME) - 5)
        return token

    def _denied(self, who: str, status: int, body: bytes) -> str:
        detail = _with(error_detail(body))
        if status == 403:
            return f"{who} denied access (403{detail})"
        if self.credentials is None:
            return (f"{who} requires authentication (401{detail}) and no credentials for {self.ref.registry} "
                    "were found (--registry-config, $REGISTRY_AUTH_FILE, ~/.docker/config.json)")
        return f"{who} refused the credentials from {self.credentials.source} (401{detail})"

    # ---------------------------------------------------------------------------------- requests

    def _attempts(self, method: str, url: str, headers: Mapping[str, str], body: Body, what: str, *,
                  auth: bool = True, push: bool = False,
                  retry: bool = True) -> urllib3.BaseHTTPResponse:
        """``method url`` until it gets an answer that is not transient (or the deadline runs out);
        with ``auth``, authorized as the ping's challenge asks, re-negotiated once on a 401."""
        attempt = 0
        renegotiated = False
        while True:
            try:
                sent = dict(headers)
                if auth:
                    sent.update(self._authorization(push))
                response = self._send(method, url, sent, body)
                if auth and response.status == 401 and not renegotiated and self._challenges:
                    challenges = parse_challenges(response.headers.getlist("WWW-Authenticate"))
                    _done(response)
                    self._tokens.clear()
                    self._challenges = challenges or self._challenges
                    renegotiated = True
                    continue
                if response.status in RETRIED_STATUS and retry:
                    detail = error_detail(_read_limited(response, MAX_ERROR_BYTES))
                    wait = retry_after(response.headers.get("Retry-After"))
                    raise _Retry(f"{_status_text(response.status)}{_with(detail)}", wait)
                return response
            except _Retry as failure:
                if not retry:
                    raise self._error(f"{what}: {failure.detail}", Problem.TRANSIENT) from None
                self._backoff(attempt, failure, what)
                attempt += 1

    def _request(self, method: str, path: str, what: str, *, headers: Mapping[str, str] | None = None,
                 body: Body = None, push: bool = False,
                 retry: bool = True) -> urllib3.BaseHTTPResponse:
        """A request to this repository's registry, redirects followed (without credentials to other hosts)."""
        self._ping()
        url = path if path.startswith(("http://", "https://")) else f"{self._base}{path}"
        for _ in range(MAX_REDIRECTS + 1):
            same_host = urlsplit(url).netloc == self.ref.registry
            response = self._attempts(method, url, headers or {}, body, what, auth=same_host, push=push,
                                      retry=retry)
            if response.status not in (301, 302, 303, 307, 308) or method not in ("GET", "HEAD"):
                return response
            location = response.headers.get("Location")
            _done(response)
            if not location:
                raise self._error(f"{what}: redirect without a Location", Problem.UNAVAILABLE)
            url = self._join(url, location, what)
            if urlsplit(url).scheme == "http" and self._base.startswith("https") and not self.options.insecure:
                raise self._error(f"{what}: redirected to plain HTTP ({urlsplit(url).netloc})", Problem.REFUSED)
        raise self._error(f"{what}: more than {MAX_REDIRECTS} redirects", Problem.UNAVAILABLE)

    def _fail(self, response: urllib3.BaseHTTPResponse, what: str, missing: Problem = Problem.NOT_FOUND) -> ImageError:
        """The error for an unexpected answer to ``what``."""
        body = _read_limited(response, MAX_ERROR_BYTES)
        detail = _with(error_detail(body))
        if response.status in (401, 403):
            return self._error(self._denied(f"{what}: the registry {self.ref.registry}", response.status, body),
                               Problem.UNAUTHORIZED)
        if response.status == 404:
            return self._error(f"{what}: not found (404{detail})", missing)
        return self._error(f"{what}: the registry answered {response.status}{detail}", Problem.REFUSED)

    # ------------------------------------------------------------------------------- manifests

    def _manifest_path(self, reference: str) -> str:
        return f"/v2/{self.ref.repository}/manifests/{reference}"

    def get_manifest(self, reference: str) -> RawManifest:
        what = f"manifest {reference}"
        if reference.startswith("sha256:"):
            check_digest(self._image, reference)
        attempt = 0
        while True:
            response = self._request("GET", self._manifest_path(reference), f"reading {what}",
                                     headers={"Accept": ", ".join(media.ACCEPT)})
            if response.status != 200:
                raise self._fail(response, f"reading {what}")
            try:
                data = self._read_manifest(response, what)
                break
            except _Retry as failure:  # the body broke off: the whole request again
                self._backoff(attempt, failure, f"reading {what}")
                attempt += 1
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if reference.startswith("sha256:") and digest != reference:
            raise self._error(f"{what} does not match its content ({digest})", Problem.REFUSED)
        served = response.headers.get("Docker-Content-Digest", "")
        if SHA256.fullmatch(served) and served != digest:
            raise self._error(f"{what}: the registry says its digest is {served} but its content is {digest}",
                              Problem.REFUSED)
        return RawManifest(data, response.headers.get("Content-Type", "").split(";")[0].strip(), digest)

    def _read_manifest(self, response: urllib3.BaseHTTPResponse, what: str) -> bytes:
        length = decimal(response.headers.get("Content-Length"))
        if length is not None and length > MAX_MANIFEST_BYTES:
            _abandon(response)
            raise self._error(f"{what} is {length} bytes, over the limit of {MAX_MANIFEST_BYTES}", Problem.REFUSED)
        try:
            data = response.read(MAX_MANIFEST_BYTES + 1)
        except (ReadTimeoutError, Urllib3Timeout):
            _abandon(response)
            raise _Retry(f"no data within {self.options.read_timeout:g} s") from None
        except (ProtocolError, OSError) as err:
            _abandon(response)
            raise _Retry(f"the connection broke: {_reason(err)}") from None
        if len(data) > MAX_MANIFEST_BYTES:
            _abandon(response)
            raise self._error(f"{what} is over the limit of {MAX_MANIFEST_BYTES} bytes", Problem.REFUSED)
        _done(response)
        return data

    def head_manifest(self, reference: str) -> Descriptor:
        """The manifest's media type, digest and size from a ``HEAD`` (``Docker-Content-Digest``); a ``GET``
        when the registry does not say the digest."""
        what = f"manifest {reference}"
        response = self._request("HEAD", self._manifest_path(reference), f"checking {what}",
                                 headers={"Accept": ", ".join(media.ACCEPT)})
        if response.status != 200:
            raise self._fail(response, f"checking {what}")
        digest = response.headers.get("Docker-Content-Digest", "")
        length = decimal(response.headers.get("Content-Length"))
        kind = response.headers.get("Content-Type", "").split(";")[0].strip()
        _done(response)
        if not SHA256.fullmatch(digest) or length is None or (
                reference.startswith("sha256:") and digest != reference):
            raw = self.get_manifest(reference)
            return Descriptor(raw.media_type, raw.digest, len(raw.data))
        return Descriptor(kind, digest, length)

    def put_manifest(self, reference: str, manifest: RawManifest) -> None:
        what = f"pushing manifest {reference}"
        if reference.startswith("sha256:") and reference != manifest.digest:
            raise self._error(f"{what}: the manifest's digest is {manifest.digest}", Problem.INVALID)
        response = self._request("PUT", self._manifest_path(reference), what, push=True,
                                 headers={"Content-Type": manifest.media_type}, body=manifest.data)
        if response.status not in (200, 201):
            raise self._fail(response, what, Problem.REFUSED)
        served = response.headers.get("Docker-Content-Digest", "")
        _done(response)
        if SHA256.fullmatch(served) and served != manifest.digest:
            raise self._error(f"{what}: the registry stored it as {served}, not {manifest.digest}", Problem.REFUSED)

    # ------------------------------------------------------------------------------------ blobs

    def _blob_path(self, digest: str) -> str:
        return f"/v2/{self.ref.repository}/blobs/{digest}"

    def has_blob(self, digest: str) -> bool:
        check_digest(self._image, digest)
        response = self._request("HEAD", self._blob_path(digest), f"checking blob {digest}")
        if response.status in (200, 404):
            _done(response)
        if response.status == 200:
            return True
        if response.status == 404:
            return False
        raise self._fail(response, f"checking blob {digest}")

    def open_blob(self, descriptor: Descriptor) -> AbstractContextManager[VerifyingReader]:
        return self._open_blob(descriptor)

    @contextmanager
    def _open_blob(self, descriptor: Descriptor) -> Iterator[VerifyingReader]:
        check_digest(self._image, descriptor.digest)
        stream = _BlobStream(self, descriptor)
        try:
            yield VerifyingReader(stream, self._image, descriptor.digest, descriptor.size)
        finally:
            stream.close()

    def put_blob(self, path: Path, descriptor: Descriptor) -> None:
        check_digest(self._image, descriptor.digest)
        if self.has_blob(descriptor.digest):
            return
        what = f"pushing blob {descriptor.digest}"
        attempt = 0
        while True:
            try:
                self._upload(path, descriptor, what)
                return
            except _Retry as failure:
                self._backoff(attempt, failure, what)
                attempt += 1

    def _upload(self, path: Path, descriptor: Descriptor, what: str) -> None:
        """One upload session (``POST`` … ``PUT ?digest=``); a transient failure anywhere is :class:`_Retry`
        for the whole session, as a half-written session cannot be resumed portably."""
        try:
            size = path.stat().st_size
        except OSError as err:
            raise self._error(f"{what}: {path}: {err.strerror}", Problem.INVALID) from None
        if size != descriptor.size:
            raise self._error(f"{what}: {path} has {size} bytes, the descriptor says {descriptor.size}",
                              Problem.INVALID)
        location = self._upload_step("POST", f"/v2/{self.ref.repository}/blobs/uploads/", what, (202,),
                                     headers={"Content-Length": "0"}, body=b"")
        body: Body
        if size <= self.monolithic_max:
            final = location

            def opened() -> IO[bytes]:  # reopened for each attempt
                return path.open("rb")

            body = opened
            headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
        else:
            with open(path, "rb") as f:
                offset = 0
                while chunk := f.read(self.chunk_size):
                    location = self._upload_step(
                        "PATCH", location, what, (202,), body=chunk,
                        headers={"Content-Type": "application/octet-stream", "Content-Length": str(len(chunk)),
                                 "Content-Range": f"{offset}-{offset + len(chunk) - 1}"})
                    offset += len(chunk)
            final, body, headers = location, b"", {"Content-Length": "0"}
        separator = "&" if urlsplit(final).query else "?"
        self._upload_step("PUT", f"{final}{separator}{urlencode({'digest': descriptor.digest})}", what, (201,),
                          headers=headers, body=body, check_digest=descriptor.digest)

    def _upload_step(self, method: str, url: str, what: str, ok: tuple[int, ...], *, headers: Mapping[str, str],
                     body: Body, check_digest: str = "") -> str:
        try:
            response = self._request(method, url, what, headers=headers, body=body, push=True, retry=False)
        except ImageError as err:
            if err.problem is Problem.TRANSIENT:
                raise _Retry(err.message.removeprefix(f"{what}: ")) from None
            raise
        if response.status in RETRIED_STATUS:
            detail = error_detail(_read_limited(response, MAX_ERROR_BYTES))
            raise _Retry(f"{_status_text(response.status)}{_with(detail)}",
                         retry_after(response.headers.get("Retry-After")))
        if response.status not in ok:
            raise self._fail(response, what, Problem.REFUSED)
        served = response.headers.get("Docker-Content-Digest", "")
        location = response.headers.get("Location", "")
        _done(response)
        if check_digest and SHA256.fullmatch(served) and served != check_digest:
            raise self._error(f"{what}: the registry stored it as {served}", Problem.REFUSED)
        if not check_digest and not location:
            raise self._error(f"{what}: the registry answered {response.status} without a Location",
                              Problem.REFUSED)
        return self._join(url if url.startswith("http") else self._base + url, location, what) if location else ""

    def _join(self, base: str, location: str, what: str) -> str:
        """``location`` (a ``Location`` header) resolved against ``base``: an http(s) URL, or an error."""
        try:
            url = urljoin(base, location)
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError:
            raise self._error(f"{what}: the registry sent an invalid Location {_clean(location, 80)!r}",
                              Problem.REFUSED) from None
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise self._error(f"{what}: the registry sent an invalid Location {_clean(location, 80)!r}",
                              Problem.REFUSED)
        return url


class _BlobStream:
    """A blob's bytes as a stream: a cut or stalled response is resumed with ``Range`` where it stopped
    (a registry that ignores ``Range`` is read again from the start, the bytes already had skipped)."""

    def __init__(self, repository: RegistryRepository, descriptor: Descriptor) -> None:
        self._repo = repository
        self._descriptor = descriptor
        self._what = f"reading blob {descriptor.digest}"
        self._offset = 0
        self._attempt = 0
        self._response: urllib3.BaseHTTPResponse | None = None
        self._open()

    def _open(self) -> None:
        headers = {"Range": f"bytes={self._offset}-"} if self._offset else {}
        response = self._repo._request("GET", self._repo._blob_path(self._descriptor.digest), self._what,
                                       headers=headers)
        if response.status == 206 and self._offset:
            start = response.headers.get("Content-Range", "").removeprefix("bytes ").partition("-")[0]
            if start != str(self._offset):
                _abandon(response)
                raise self._repo._error(f"{self._what}: the registry resumed at {_clean(start, 40)!r}, "
                                        f"not at {self._offset}", Problem.REFUSED)
        elif response.status == 200:
            skip = self._offset
            while skip:  # no Range support: the bytes already read are read again and dropped
                dropped = response.read(min(skip, 1 << 20))
                if not dropped:
                    break
                skip -= len(dropped)
        else:
            raise self._repo._fail(response, self._what)
        self._response = response

    def read(self, n: int = -1) -> bytes:
        while True:
            assert self._response is not None
            if self._repo.deadline.expired():
                raise self._repo._error(f"{self._what}: the timeout of {self._repo.deadline.seconds:g} s ran out "
                                        f"after {self._offset} of {self._descriptor.size} bytes", Problem.TRANSIENT)
            try:
                data = self._response.read(n if n >= 0 else None)
                self._offset += len(data)
                return data
            except (ProtocolError, ReadTimeoutError, Urllib3Timeout, OSError) as err:
                failure = _Retry(f"the connection broke after {self._offset} bytes: {_reason(err)}"
                                 if not isinstance(err, ReadTimeoutError | Urllib3Timeout) else
                                 f"no data within {self._repo.options.read_timeout:g} s after {self._offset} bytes")
                self.close()
                self._repo._backoff(self._attempt, failure, self._what)
                self._attempt += 1
                self._open()

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        response, self._response = self._response, None
        if response is not None:
            _abandon(response)


def _read_limited(response: urllib3.BaseHTTPResponse, limit: int) -> bytes:
    """Up to ``limit`` bytes of a (small) body; the connection goes back to the pool, or is closed."""
    try:
        data = response.read(limit)
    except (ProtocolError, ReadTimeoutError, Urllib3Timeout, OSError):
        data = b""
    _done(response)
    return data


def _abandon(response: urllib3.BaseHTTPResponse) -> None:
    """Close the connection of a response whose body is not wanted (whatever is left of it)."""
    response.close()
    response.release_conn()


def _done(response: urllib3.BaseHTTPResponse) -> None:
    """Give the connection back for reuse once the rest of a small body is read; close it otherwise."""
    try:
        if response.read(MAX_ERROR_BYTES):
            response.close()  # more than a small body left: not worth reading for the connection's sake
    except (ProtocolError, ReadTimeoutError, Urllib3Timeout, OSError):
        response.close()
    response.release_conn()


def _with(detail: str) -> str:
    return f": {detail}" if detail else ""


def _status_text(status: int) -> str:
    return {429: "429 Too Many Requests", 500: "500 Internal Server Error", 502: "502 Bad Gateway",
            503: "503 Service Unavailable", 504: "504 Gateway Timeout"}.get(status, str(status))


def _reason(err: BaseException) -> str:
    """The innermost reason of a transport error, without the URL or object addresses urllib3 adds: its ``reason``
    chain and explicit causes only (an exception's ``__context__`` may be anything the caller was handling, e.g. an
    error built from an earlier answer's body, which may echo credentials)."""
    inner: BaseException = err
    while True:
        nxt = getattr(inner, "reason", None) or inner.__cause__
        if not isinstance(nxt, BaseException) or nxt is inner:
            break
        inner = nxt
    text = str(inner) or type(inner).__name__
    if "IncompleteRead" in str(err) or "IncompleteRead" in text:
        return "the response ended early"
    if isinstance(inner, ConnectionResetError) or "reset by peer" in text.lower():
        return "connection reset"
    return _clean(text.split(": ", 1)[-1] if text.startswith("<") else text, 160)
