"""A client of the Prometheus HTTP API, as the CVO's (pkg/clusterconditions/promql/promql.go ``PromQL``,
``alerts.go`` ``ocAlertGetter``): an instant query (``GET /api/v1/query``; the CVO forces GET through
``statusCodeNotImplementedForPostClient``) and the alerts (``GET /api/v1/alerts``), with the bearer token
read from ``--metrics-token-file`` on every request and the CA bundle of ``--metrics-ca-bundle-file``.

Hostile servers: the body is capped (``max_body``), the whole request has a deadline (``timeout``, real
seconds: the request runs in a worker thread, so a virtual clock cannot expire it early), and every
failure is a :class:`MonitoringError` whose message is the CVO's (``executing PromQL query: …``).
The token is never logged nor put in an error.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import urllib3
from urllib3.exceptions import HTTPError as Urllib3Error

from cvo.log import get_logger
from cvo.monitoring.answers import Alert, MonitoringError, QueryResult, match_value, parse_alerts, parse_query

log = get_logger(__name__)

# promql.go NewPromQL: QueryTimeout 5 minutes.  cvo waits 30 s: an evaluation holds up the sync of
# the available updates, and a risk whose query stalls is EvaluationFailed either way.
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_BODY = 16 << 20  # an instant query's vector or a cluster's alerts are far below this


@dataclass(frozen=True)
class MonitoringOptions:
    """The CVO's ``--metrics-url``, ``--metrics-token-file``, ``--metrics-ca-bundle-file``."""

    url: str
    token_file: str = ""
    ca_file: str = ""
    timeout: float = DEFAULT_TIMEOUT
    max_body: int = DEFAULT_MAX_BODY


def check_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host, else :class:`ValueError` saying what is wrong
    (pkg/start/start.go: "error parsing promql url")."""
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError as err:
        raise ValueError(f"error parsing promql url {url!r}: {err}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"error parsing promql url {url!r}: want http(s)://HOST[:PORT][/PATH]")
    return url


class Prometheus:
    """The API at ``options.url`` (``https://thanos-querier.openshift-monitoring.svc:9091`` on a cluster)."""

    def __init__(self, options: MonitoringOptions) -> None:
        self.options = options
        self.base = check_url(options.url).rstrip("/")
        context: ssl.SSLContext | None = None
        if urlsplit(self.base).scheme == "https":
            context = ssl.create_default_context(cafile=options.ca_file or None)
        self._pool = urllib3.PoolManager(ssl_context=context, retries=False, maxsize=2)

    def __repr__(self) -> str:  # never the token: only where it is read from
        return f"Prometheus({self.base!r}, token_file={self.options.token_file!r})"

    async def query(self, promql: str) -> QueryResult:
        """An instant query at the server's now (the CVO passes its ``time.Now()``)."""
        log.debug("evaluate PromQL cluster condition", query=promql)
        try:
            status, body = await self._get("/api/v1/query", {"query": promql})
            result = parse_query(status, body)
        except MonitoringError as err:
            raise MonitoringError(f"executing PromQL query: {err}") from None
        for warning in result.warnings:
            log.warning("PromQL warning", query=promql, warning=warning)
        return result

    async def match(self, promql: str) -> bool:
        """promql.go ``PromQL.Match``: one sample of 1 (True) or 0 (False), else :class:`MonitoringError`."""
        return match_value(await self.query(promql))

    async def alerts(self) -> tuple[Alert, ...]:
        try:
            status, body = await self._get("/api/v1/alerts", {})
            return parse_alerts(body, status)
        except MonitoringError as err:
            raise MonitoringError(f"failed to get alerts: {err}") from None

    async def _get(self, path: str, params: dict[str, str]) -> tuple[int, bytes]:
        headers = {"Accept": "application/json", "User-Agent": "cvo"}
        token = self._token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        url = self.base + path + (f"?{urlencode(params)}" if params else "")
        return await asyncio.get_running_loop().run_in_executor(None, self._fetch, url, headers)

    def _token(self) -> str:
        """prometheus/common's ``CredentialsFile``: read on every request, surrounding whitespace dropped."""
        if not self.options.token_file:
            return ""
        try:
            return Path(self.options.token_file).read_text().strip()
        except (OSError, UnicodeDecodeError) as err:
            reason = getattr(err, "strerror", None) or type(err).__name__
            raise MonitoringError(f"unable to read authorization credentials file "
                                  f"{self.options.token_file}: {reason}") from None

    def _fetch(self, url: str, headers: dict[str, str]) -> tuple[int, bytes]:
        """One GET in this worker thread, within ``timeout`` real seconds and ``max_body`` bytes."""
        deadline = time.monotonic() + self.options.timeout
        timeout = urllib3.Timeout(connect=self.options.timeout, read=self.options.timeout)
        shown = url.split("?", 1)[0]
        try:
            response = self._pool.request("GET", url, headers=headers, timeout=timeout, preload_content=False,
                                          redirect=False)
        except Urllib3Error as err:
            raise MonitoringError(f"Get {shown!r}: {_reason(err)}") from None
        try:
            chunks: list[bytes] = []
            size = 0
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise MonitoringError(f"Get {shown!r}: no complete answer within {self.options.timeout:g}s")
                chunk = response.read1(65536)  # what has arrived: a slow drip still meets the deadline
                if not chunk:
                    break
                size += len(chunk)
                if size > self.options.max_body:
                    raise MonitoringError(f"Get {shown!r}: the answer is larger than {self.options.max_body} bytes")
                chunks.append(chunk)
        except Urllib3Error as err:
            response.close()  # a connection with unread data is never reused
            raise MonitoringError(f"Get {shown!r}: {_reason(err)}") from None
        except MonitoringError:
            response.close()
            raise
        response.release_conn()
        return response.status, b"".join(chunks)


def _reason(err: Exception) -> str:
    inner = getattr(err, "reason", None)
    return str(inner or err)[:300]
