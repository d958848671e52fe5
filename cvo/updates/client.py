"""The update service's HTTP client: pkg/cincinnati/cincinnati.go ``GetUpdates`` up to the download.

``GET UPSTREAM?arch=…&channel=…&id=…&version=…`` (the upstream's own query parameters kept, all of them
sorted by name as Go's ``url.Values.Encode`` writes them), ``Accept: application/json``, and the CVO's
reasons: no answer is ``RemoteFailed``, an answer other than 200 or a body that cannot be read is
``ResponseFailed`` (``unexpected HTTP status: 404 Not Found``).  Where cvo differs, on purpose:

* the whole exchange has a timeout (:attr:`UpdateServiceOptions.timeout`, 60 s) where the CVO allows 60
  minutes: a server that stalls would otherwise hold the answer back for an hour.  No answer within it is
  ``RemoteFailed``, a body that stops coming is ``ResponseFailed`` (``context deadline exceeded``, as Go
  words it, with cvo's limit);
* the body is read up to :attr:`UpdateServiceOptions.max_body` (16 MiB; a real channel's graph is well
  under 2 MiB): more is ``ResponseFailed``, where the CVO reads whatever comes;
* a ``file://`` upstream is read from the file (the embedded cluster's static graph): cvo's extension.

No proxy is used (the CVO takes one from the cluster's Proxy object; cvo has none); the CA bundle, when
given, replaces the system's trust roots (the CVO's ``getTLSConfig``: the Proxy's trusted CA).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from cvo.payload.gostrings import go_quote
from cvo.updates.errors import UpdateError

GRAPH_MEDIA_TYPE = "application/json"  # GraphMediaType
MIB = 1024 * 1024


@dataclass(frozen=True)
class UpdateServiceOptions:
    timeout: float = 60.0  # the whole request and body (the CVO: getUpdatesTimeout, 60 minutes)
    max_body: int = 16 * MIB  # the largest graph read (the CVO: no limit)
    ca_file: Path | None = None  # PEM trust roots for https upstreams (None: the system's)
    user_agent: str = "cvo"  # the CVO sends its own (getUserAgent); "" sends none


class UrlInvalid(ValueError):
    """Go's ``url.Parse`` refuses the text; ``str()`` is its error (``parse "…": missing protocol scheme``)."""


_SCHEME_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_SCHEME_REST = _SCHEME_FIRST | frozenset("0123456789+-.")
_HEX = frozenset("0123456789abcdefABCDEF")


def _escapes_ok(text: str) -> str | None:
    """The first invalid ``%`` escape in ``text`` (as Go quotes it), or None."""
    i = text.find("%")
    while i >= 0:
        chunk = text[i:i + 3]
        if len(chunk) < 3 or chunk[1] not in _HEX or chunk[2] not in _HEX:
            return chunk
        i = text.find("%", i + 3)
    return None


def parse_url(text: str) -> None:
    """The checks of Go's ``url.Parse`` that refuse an update service's URL (``calculateAvailableUpdatesStatus``'s
    ``InvalidURI``); text Go accepts but that names no server fails later, at the request, as in the CVO."""
    def fail(why: str) -> UrlInvalid:
        return UrlInvalid(f"parse {go_quote(text)}: {why}")

    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise fail("net/url: invalid control character in URL")
    rest = text.split("#", 1)[0]
    scheme = ""
    for i, ch in enumerate(rest):
        if ch == ":":
            if i == 0:
                raise fail("missing protocol scheme")
            scheme, rest = rest[:i], rest[i + 1:]
            break
        if ch not in (_SCHEME_FIRST if i == 0 else _SCHEME_REST):
            break
    rest = rest.split("?", 1)[0]
    if not scheme and ":" in rest.split("/", 1)[0]:
        raise fail("first path segment in URL cannot contain colon")
    if rest.startswith("//"):
        authority, _, path = rest[2:].partition("/")
        userinfo, _, host = authority.rpartition("@")
        if any(not (c.isascii() and c.isalnum()) and c not in "-._:~!$&'()*+,;=%@" for c in userinfo):
            raise fail("net/url: invalid userinfo")
        bad = _escapes_ok(userinfo)
        if bad is not None:
            raise fail(f"invalid URL escape {go_quote(bad)}")
        if host.startswith("["):
            if "]" not in host:
                raise fail("missing ']' in host")
            port = host.partition("]")[2]
        else:
            port = ":" + host.partition(":")[2] if ":" in host else ""
        if port and (not port.startswith(":") or not all(c.isdigit() for c in port[1:])):
            raise fail(f"invalid port {go_quote(port)} after host")
        bad = _escapes_ok(host)
        if bad is not None:
            raise fail(f"invalid URL escape {go_quote(bad)}")
        odd = next((c for c in host if c.isascii() and not c.isalnum() and c not in "-._~!$&'()*+,;=:[]<>\"%"), None)
        if odd is not None:
            raise fail(f"invalid character {go_quote(odd)} in host name")
        rest = path
    bad = _escapes_ok(rest)
    if bad is not None:
        raise fail(f"invalid URL escape {go_quote(bad)}")
    try:
        urlsplit(text)  # what Go lets through and Python's parser does not (a stray bracket in the host)
    except ValueError as err:
        raise fail(str(err).lower()) from None
    bad = _escapes_ok(text.partition("#")[2])  # url.Parse's setFragment, after the rest
    if bad is not None:
        raise fail(f"invalid URL escape {go_quote(bad)}")


def query_url(upstream: str, *, arch: str, channel: str, cluster_id: str, version: str) -> str:
    """The upstream with the CVO's parameters added (``Multi`` asks for ``multi``), sorted as Go encodes them."""
    parts = urlsplit(upstream)
    params = parse_qsl(parts.query, keep_blank_values=True)
    params += [("arch", "multi" if arch == "Multi" else arch), ("channel", channel), ("id", cluster_id),
               ("version", version)]
    params.sort(key=lambda kv: kv[0])  # stable: values of one name keep their order
    path = quote(parts.path, safe="/:@!$&'()*+,;=-._~%")  # Go's URL.String escapes the path
    return parts._replace(path=path, query=urlencode(params), fragment="").geturl()


def _tls(options: UpdateServiceOptions) -> ssl.SSLContext:
    if options.ca_file is None:
        return ssl.create_default_context()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the host name; only these roots
    try:
        context.load_verify_locations(cafile=str(options.ca_file))
    except (OSError, ssl.SSLError) as err:
        raise UpdateError("RemoteFailed", f"CA bundle {options.ca_file}: not a readable PEM certificate "
                                          f"file ({err})") from None
    return context


def _why(err: BaseException, url: str) -> str:
    """A urllib3 failure as one line, worded like Go's net/http where it is a dial (``dial tcp
    127.0.0.1:1: connect: connection refused``), else the innermost reason."""
    from urllib3.exceptions import MaxRetryError, NameResolutionError, NewConnectionError, SSLError

    reason = err.reason if isinstance(err, MaxRetryError) and err.reason is not None else err
    parts = urlsplit(url)
    try:
        port = str(parts.port or (443 if parts.scheme == "https" else 80))
    except ValueError:
        port = parts.netloc.rpartition(":")[2]  # out of range: as written
    address = f"{parts.hostname}:{port}"
    if isinstance(reason, NameResolutionError):
        return f"dial tcp: lookup {parts.hostname}: no such host"
    if isinstance(reason, NewConnectionError) and isinstance(reason.__cause__, OSError):
        cause = reason.__cause__
        return f"dial tcp {address}: connect: {(cause.strerror or str(cause)).lower()}"
    if isinstance(reason, SSLError):
        return f"tls: {reason}".replace("\n", " ")[:300]
    text = str(reason)
    if text.startswith("<") and ": " in text:
        text = text.split(": ", 1)[1]
    return text.replace("\n", " ")[:300]


def _read_file(url: str, options: UpdateServiceOptions) -> bytes:
    path = Path(unquote(urlsplit(url).path))
    try:
        with path.open("rb") as f:
            data = f.read(options.max_body + 1)
    except OSError as err:
        raise UpdateError("RemoteFailed", f"open {path}: {(err.strerror or str(err)).lower()}") from None
    if len(data) > options.max_body:
        raise UpdateError("ResponseFailed", f"the graph is larger than cvo's limit of {_size(options.max_body)}")
    return data


def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n % MIB == 0 else f"{n} bytes"


def _fetch(url: str, options: UpdateServiceOptions) -> bytes:
    """The blocking exchange (run in a thread: every wait is a socket timeout in real time)."""
    scheme = urlsplit(url).scheme
    if scheme == "file":
        return _read_file(url, options)
    get = f"Get {go_quote(url)}"
    if scheme not in ("http", "https"):
        raise UpdateError("RemoteFailed", f"{get}: unsupported protocol scheme {go_quote(scheme)}")
    if not urlsplit(url).hostname:
        raise UpdateError("RemoteFailed", f"{get}: http: no Host in request URL")
    # urllib3 only here: a file:// upstream (the embedded cluster's graph) does without it (30 ms of imports)
    import urllib3
    from urllib3.exceptions import (
        HTTPError,
        MaxRetryError,
        NewConnectionError,
        ProtocolError,
        ReadTimeoutError,
    )
    from urllib3.exceptions import TimeoutError as Urllib3Timeout

    deadline = time.monotonic() + options.timeout
    over = f"context deadline exceeded (cvo's timeout of {options.timeout:g} s)"
    headers = {"Accept": GRAPH_MEDIA_TYPE}
    if options.user_agent:
        headers["User-Agent"] = options.user_agent
    retries = urllib3.Retry(total=None, connect=0, read=0, status=0, other=0, redirect=10)  # Go: 10 redirects
    pool = urllib3.PoolManager(ssl_context=_tls(options) if scheme == "https" else None, retries=retries)
    try:
        try:
            response = pool.request("GET", url, headers=headers, preload_content=False,
                                    timeout=urllib3.Timeout(connect=options.timeout, read=options.timeout))
        except (HTTPError, OSError) as err:
            reason = err.reason if isinstance(err, MaxRetryError) else err
            if isinstance(reason, Urllib3Timeout | ReadTimeoutError | TimeoutError) \
                    and not isinstance(reason, NewConnectionError):  # urllib3's NewConnectionError is a timeout class
                raise UpdateError("RemoteFailed", f"{get}: {over}") from None
            raise UpdateError("RemoteFailed", f"{get}: {_why(err, url)}") from None
        try:
            if response.status != 200:
                raise UpdateError("ResponseFailed", f"unexpected HTTP status: {response.status} {response.reason or ''}"
                                  .rstrip())
            body = bytearray()
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise UpdateError("ResponseFailed", over)
                sock = getattr(response.connection, "sock", None)
                if isinstance(sock, socket.socket):
                    sock.settimeout(remaining)  # the next wait ends at the deadline, not a full timeout later
                try:
                    chunk = response.read1(64 * 1024)
                except (Urllib3Timeout, ReadTimeoutError, TimeoutError):
                    raise UpdateError("ResponseFailed", over) from None
                except (ProtocolError, HTTPError, OSError) as err:
                    raise UpdateError("ResponseFailed", _why(err, url)) from None
                if not chunk:
                    return bytes(body)
                body += chunk
                if len(body) > options.max_body:
                    raise UpdateError("ResponseFailed", f"the response is larger than cvo's limit of "
                                                        f"{_size(options.max_body)}")
        finally:
            response.release_conn()
            response.close()
    finally:
        pool.clear()


async def fetch_graph(upstream: str, *, arch: str, channel: str, cluster_id: str, version: str,
                      options: UpdateServiceOptions) -> bytes:
    """The graph's bytes from ``upstream`` for the cluster (``arch``: the desired architecture), or
    :class:`UpdateError` (``RemoteFailed``, ``ResponseFailed``).  The exchange runs in a thread, timed in
    real time (a virtual clock does not hurry a server)."""
    url = query_url(upstream, arch=arch, channel=channel, cluster_id=cluster_id, version=version)
    return await asyncio.to_thread(_fetch, url, options)
