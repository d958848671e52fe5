"""A registry's repository (the OCI distribution API) as a :class:`~cvo.images.repository.Repository`.

The client is urllib3, which cvo already has through the kubernetes client: pooled connections, TLS
against the system store plus ``--registry-ca``, per-read timeouts, redirects that drop the
``Authorization`` header when they leave the registry's host.  oras-py was evaluated and not chosen
(docs/images.md, "The registry client"): it hands out parsed manifests (no digest check), hashes no blob,
sets no read timeout and retries on its own wall clock.

Requests follow the distribution spec (``docs/spec/api.md``): ``GET /v2/NAME/manifests/REF`` with every
media type cvo reads in ``Accept``, ``GET /v2/NAME/blobs/DIGEST`` streamed through a
:class:`~cvo.images.digest.VerifyingReader`, ``POST …/blobs/uploads/`` then ``PUT LOCATION?digest=`` (a
monolithic upload), ``PUT …/manifests/REF``.  Auth as distribution's ``registry/client/auth``
``tokenHandler`` and ``basicHandler``: a 401's ``WWW-Authenticate`` names the scheme; ``Bearer`` sends the
credentials (if any) to the token realm for the challenge's scope, ``Basic`` sends them to the registry.
Failures that may pass (5xx, 429, a reset or stalled connection) are retried with the CVO's back-off shape
(doubling from 0.5 s, at most 10 s, ``Retry-After`` honoured) until the command's :class:`Deadline`.
"""

from __future__ import annotations

import base64
import contextlib
import re
import ssl
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlencode, urljoin, urlsplit

import orjson
import urllib3
from urllib3.exceptions import HTTPError, MaxRetryError, ProtocolError, ReadTimeoutError, SSLError

from cvo.images import media
from cvo.images.auth import Credential, load_auths
from cvo.images.digest import VerifyingReader, check_digest, sha256_of
from cvo.images.errors import ImageError, Problem
from cvo.images.manifest import MAX_MANIFEST_BYTES
from cvo.images.options import RegistryOptions
from cvo.images.reference import ImageRef
from cvo.images.repository import Deadline, Descriptor, RawManifest

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
FIRST_DELAY, MAX_DELAY = 0.5, 10.0
MAX_TOKEN_BYTES = 1 << 20
MAX_ERROR_BYTES = 64 << 10
_CHALLENGE = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """``WWW-Authenticate``: its scheme (lower case) and parameters (``Bearer realm="…",service="…"``)."""
    scheme, _, rest = header.strip().partition(" ")
    params = {m.group(1).lower(): (m.group(2) if m.group(2) is not None else m.group(3)) or ""
              for m in _CHALLENGE.finditer(rest)}
    return scheme.lower(), params


def _registry_message(body: bytes) -> str:
    """The first message of a distribution error body (``{"errors": [{"code", "message"}]}``), printable."""
    try:
        doc = orjson.loads(body[:MAX_ERROR_BYTES])
        first = doc["errors"][0]
        text = f"{first.get('code', '')}: {first.get('message', '')}".strip(": ")
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
        return ""
    return "".join(c if c.isprintable() else " " for c in str(text))[:200]


class RegistryRepository:
    """``REGISTRY/REPO`` over HTTPS (or HTTP with ``insecure``)."""

    def __init__(self, ref: ImageRef, options: RegistryOptions, deadline: Deadline) -> None:
        self.ref = ref
        self.options = options
        self.deadline = deadline
        self._image = ref.name
        self._credential: Credential | None = load_auths(options.registry_config, options.pull_secret).lookup(
            ref.registry, ref.repository)
        self._authorization: str | None = None
        self._tried_auth: set[str] = set()
        context = ssl.create_default_context(cafile=str(options.ca_file) if options.ca_file else None)
        if options.ca_file is not None:
            context.load_default_certs()
        if options.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        self._pool = urllib3.PoolManager(ssl_context=context, retries=False, maxsize=4)
        self._scheme = "https"
        self.requests: dict[str, int] = {}  # "GET blob" → count, for tests and benchmarks

    @property
    def image(self) -> str:
        return self._image

    def __repr__(self) -> str:
        return f"RegistryRepository({self._image})"

    # --- requests ----------------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return f"{self._scheme}://{self.ref.registry}/v2/{self.ref.repository}/{path}"

    def _timeout(self) -> urllib3.Timeout:
        remaining = max(0.1, self.deadline.remaining())
        return urllib3.Timeout(connect=min(10.0, remaining), read=min(self.options.read_timeout, remaining))

    def _send(self, method: str, url: str, headers: dict[str, str], body: Callable[[], Any] | None,
              stream: bool) -> urllib3.BaseHTTPResponse:
        if self._authorization:
            headers = {**headers, "Authorization": self._authorization}
        retries = urllib3.Retry(total=None, connect=0, read=0, status=0, other=0, redirect=5,
                                raise_on_redirect=True, raise_on_status=False)
        return self._pool.request(method, url, headers=headers, body=body() if body else None,
                                  preload_content=not stream, timeout=self._timeout(), retries=retries)

    def request(self, what: str, method: str, path: str, headers: Mapping[str, str] | None = None,
                body: Callable[[], Any] | None = None, stream: bool = False,
                url: str | None = None) -> urllib3.BaseHTTPResponse:
        """One request, authenticated and retried until the deadline; an answer that is not retried is returned
        whatever its status (the caller judges it)."""
        delay, attempts, last = FIRST_DELAY, 0, ""
        while True:
            attempts += 1
            self.requests[what] = self.requests.get(what, 0) + 1
            target = url or self._url(path)
            try:
                response = self._send(method, target, dict(headers or {}), body, stream)
            except (MaxRetryError, HTTPError, OSError) as err:
                reason = err.reason if isinstance(err, MaxRetryError) else err
                if isinstance(reason, SSLError) or isinstance(err, SSLError):
                    if self.options.insecure and self._scheme == "https" and url is None:
                        self._scheme = "http"  # --insecure-registry: a registry without TLS
                        continue
                    raise ImageError(self._image, f"TLS with {self.ref.registry} failed: {_short(reason)}",
                                     Problem.UNAVAILABLE) from None
                last = _short(reason)
            else:
                if response.status == 401 and self._authenticate(response):
                    _discard(response)
                    continue
                if response.status not in RETRY_STATUS:
                    return response
                last = f"{response.status} {response.reason or ''}".strip()
                retry_after = response.headers.get("Retry-After", "")
                if retry_after.isdigit():
                    delay = max(delay, float(retry_after))
                _discard(response)
            remaining = self.deadline.remaining()
            if remaining <= delay:
                raise ImageError(self._image, f"{what}: gave up after {attempts} attempt(s) within "
                                              f"{self.deadline.seconds:g}s: {last}", Problem.TRANSIENT)
            self.deadline.sleep(delay)
            delay = min(MAX_DELAY, delay * 2)

    def _authenticate(self, response: urllib3.BaseHTTPResponse) -> bool:
        """Answer a 401's challenge once per scheme and scope; ``False``: nothing more to try."""
        scheme, params = parse_challenge(response.headers.get("WWW-Authenticate", ""))
        key = f"{scheme} {params.get('scope', '')}"
        if key in self._tried_auth:
            return False
        self._tried_auth.add(key)
        if scheme == "basic":
            if self._credential is None:
                return False
            pair = f"{self._credential.username}:{self._credential.password}".encode()
            self._authorization = "Basic " + base64.b64encode(pair).decode()
            return True
        if scheme == "bearer" and params.get("realm"):
            self._authorization = "Bearer " + self._token(params)
            return True
        return False

    def _token(self, params: dict[str, str]) -> str:
        """A token from the challenge's realm (distribution ``registry/client/auth`` ``fetchToken``, GET form)."""
        realm = params["realm"]
        if urlsplit(realm).scheme not in ("https", "http") or (urlsplit(realm).scheme == "http"
                                                               and not self.options.insecure
                                                               and self._scheme == "https"):
            raise ImageError(self._image, f"token realm {realm[:200]!r} is not an https URL", Problem.REFUSED)
        query = {k: v for k, v in (("service", params.get("service", "")), ("scope", params.get("scope", ""))) if v}
        headers = {}
        if self._credential is not None:
            pair = f"{self._credential.username}:{self._credential.password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        url = realm + ("&" if "?" in realm else "?") + urlencode(query) if query else realm
        saved, self._authorization = self._authorization, None
        try:
            response = self._pool.request("GET", url, headers=headers, timeout=self._timeout(),
                                          retries=urllib3.Retry(total=None, connect=0, read=0, status=0, other=0,
                                                                redirect=5))
        except (MaxRetryError, HTTPError, OSError) as err:
            self._authorization = saved
            raise ImageError(self._image, f"token server {urlsplit(realm).netloc}: {_short(err)}",
                             Problem.TRANSIENT) from None
        if response.status != 200:
            raise ImageError(self._image, f"token server {urlsplit(realm).netloc} answered {response.status}"
                                          f"{' (credentials refused)' if self._credential else ''}",
                             Problem.UNAUTHORIZED)
        try:
            doc = orjson.loads(response.data[:MAX_TOKEN_BYTES])
            token = doc.get("token") or doc.get("access_token")
        except (orjson.JSONDecodeError, AttributeError):
            token = None
        if not isinstance(token, str) or not token or any(c in token for c in "\r\n"):
            raise ImageError(self._image, f"token server {urlsplit(realm).netloc} sent no token", Problem.REFUSED)
        return token

    def _fail(self, what: str, response: urllib3.BaseHTTPResponse | _Buffered) -> ImageError:
        body = response.data if response.data is not None else b""
        detail = _registry_message(body)
        status = response.status
        if status == 401:
            who = "no credentials for it" if self._credential is None else "the credentials were refused"
            return ImageError(self._image, f"{what}: 401 Unauthorized ({who})", Problem.UNAUTHORIZED)
        if status == 403:
            return ImageError(self._image, f"{what}: 403 Forbidden" + (f" ({detail})" if detail else ""),
                              Problem.UNAUTHORIZED)
        if status == 404:
            return ImageError(self._image, f"{what}: not found" + (f" ({detail})" if detail else ""),
                              Problem.NOT_FOUND)
        return ImageError(self._image, f"{what}: {status} {response.reason or ''}".strip()
                          + (f" ({detail})" if detail else ""), Problem.REFUSED)

    # --- Repository --------------------------------------------------------------------------------

    def get_manifest(self, reference: str) -> RawManifest:
        what = f"manifest {reference}"
        response = self.request("GET manifest", "GET", f"manifests/{reference}",
                                {"Accept": ", ".join(media.ACCEPT)}, stream=True)
        try:
            if response.status != 200:
                raise self._fail(what, _Buffered(response))
            data = _read_capped(response, MAX_MANIFEST_BYTES, self._image, what)
        finally:
            _discard(response)
        digest = sha256_of(data)
        if reference.startswith("sha256:") and digest != reference:
            raise ImageError(self._image, f"{what} does not match its content ({digest})")
        served = response.headers.get("Docker-Content-Digest")
        if served and served != digest and served.startswith("sha256:"):
            raise ImageError(self._image, f"{what}: Docker-Content-Digest {served[:80]} does not match its "
                                          f"content ({digest})")
        return RawManifest(data, response.headers.get("Content-Type", ""), digest)

    @contextlib.contextmanager
    def open_blob(self, descriptor: Descriptor) -> Iterator[VerifyingReader]:
        check_digest(self._image, descriptor.digest)
        what = f"blob {descriptor.digest}"
        response = self.request("GET blob", "GET", f"blobs/{descriptor.digest}", stream=True)
        try:
            if response.status != 200:
                raise self._fail(what, _Buffered(response))
            yield VerifyingReader(_Stream(response, self._image, what), self._image, descriptor.digest,
                                  descriptor.size, "blob")
        finally:
            _discard(response)

    def has_blob(self, digest: str) -> bool:
        check_digest(self._image, digest)
        response = self.request("HEAD blob", "HEAD", f"blobs/{digest}")
        if response.status == 200:
            return True
        if response.status == 404:
            return False
        raise self._fail(f"blob {digest}", response)

    def put_blob(self, path: Path, descriptor: Descriptor) -> None:
        if self.has_blob(descriptor.digest):
            return
        what = f"upload of blob {descriptor.digest}"
        started = self.request("POST upload", "POST", "blobs/uploads/", {"Content-Length": "0"})
        if started.status != 202 or not started.headers.get("Location"):
            raise self._fail(what, started)
        location = urljoin(self._url("blobs/uploads/"), started.headers["Location"])
        location += ("&" if "?" in location else "?") + urlencode({"digest": descriptor.digest})

        def body() -> IO[bytes]:
            return open(path, "rb")

        done = self.request("PUT upload", "PUT", "", {"Content-Type": "application/octet-stream",
                                                      "Content-Length": str(descriptor.size)}, body=body,
                            url=location)
        if done.status not in (201, 204):
            raise self._fail(what, done)

    def put_manifest(self, reference: str, manifest: RawManifest) -> None:
        response = self.request("PUT manifest", "PUT", f"manifests/{reference}",
                                {"Content-Type": manifest.media_type}, body=lambda: manifest.data)
        if response.status not in (200, 201, 202):
            raise self._fail(f"manifest {reference}", response)


class _Buffered:
    """A response whose (error) body was read: what :meth:`RegistryRepository._fail` looks at."""

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self.status = response.status
        self.reason = response.reason
        self.headers = response.headers
        try:
            self.data = response.read(MAX_ERROR_BYTES, decode_content=True) or b""
        except (HTTPError, OSError):
            self.data = b""


class _Stream:
    """A response body read in chunks; a stall or a broken connection is a transient :class:`ImageError`."""

    def __init__(self, response: urllib3.BaseHTTPResponse, image: str, what: str) -> None:
        self.response = response
        self.image = image
        self.what = what

    def read(self, n: int = -1) -> bytes:
        try:
            return self.response.read(n if n and n > 0 else None, decode_content=False)
        except ReadTimeoutError:
            raise ImageError(self.image, f"{self.what}: the registry stopped sending (read timeout)",
                             Problem.TRANSIENT) from None
        except (ProtocolError, HTTPError, OSError) as err:
            raise ImageError(self.image, f"{self.what}: the connection broke ({_short(err)})",
                             Problem.TRANSIENT) from None


def _read_capped(response: urllib3.BaseHTTPResponse, limit: int, image: str, what: str) -> bytes:
    stream = _Stream(response, image, what)
    chunks, total = [], 0
    while chunk := stream.read(64 << 10):
        total += len(chunk)
        if total > limit:
            raise ImageError(image, f"{what} is over {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _discard(response: urllib3.BaseHTTPResponse) -> None:
    with contextlib.suppress(Exception):
        response.drain_conn()
        response.release_conn()


def _short(err: object) -> str:
    text = str(err)
    # urllib3 puts the pool's repr (host and port, never credentials) before the reason: keep the reason
    text = text.split("Caused by ", 1)[-1]
    return "".join(c if c.isprintable() else " " for c in text)[:200]


def open_registry(ref: ImageRef, options: RegistryOptions, deadline: Deadline) -> RegistryRepository:
    """The registry repository ``ref`` names."""
    return RegistryRepository(ref, options, deadline)
