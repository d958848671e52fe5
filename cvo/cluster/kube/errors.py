"""Turning what the Kubernetes API server (or the network) says into the CVO's :class:`ApiError` classes.

The classification follows apimachinery's ``errors.IsX`` helpers, which ``reasonForPayloadSyncError``
uses: the ``Status.reason`` of the response body decides first, the HTTP code when the reason is
missing or unknown.  Messages are the server's own (``configmaps "x" already exists``); they never
contain request headers, so no bearer token ends up in a log or in the ClusterVersion status.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from typing import Any

import orjson
import urllib3

from cvo.cluster.api import ApiError, ApiErrorKind, Ref

# Status.reason -> kind (apimachinery StatusReason values).
_REASONS: dict[str, ApiErrorKind] = {
    "NotFound": ApiErrorKind.NOT_FOUND,
    "AlreadyExists": ApiErrorKind.ALREADY_EXISTS,
    "Conflict": ApiErrorKind.CONFLICT,
    "Invalid": ApiErrorKind.INVALID,
    "Forbidden": ApiErrorKind.FORBIDDEN,
    "Unauthorized": ApiErrorKind.UNAUTHORIZED,
    "Timeout": ApiErrorKind.TIMEOUT,
    "ServiceUnavailable": ApiErrorKind.TIMEOUT,
    "ServerTimeout": ApiErrorKind.SERVER_TIMEOUT,
    "TooManyRequests": ApiErrorKind.SERVER_TIMEOUT,
    "InternalError": ApiErrorKind.INTERNAL,
}
# HTTP code -> kind, when the body carries no known reason.
_CODES: dict[int, ApiErrorKind] = {
    401: ApiErrorKind.UNAUTHORIZED,
    403: ApiErrorKind.FORBIDDEN,
    404: ApiErrorKind.NOT_FOUND,
    409: ApiErrorKind.CONFLICT,
    422: ApiErrorKind.INVALID,
    429: ApiErrorKind.SERVER_TIMEOUT,
    500: ApiErrorKind.INTERNAL,
    502: ApiErrorKind.TIMEOUT,
    503: ApiErrorKind.TIMEOUT,
    504: ApiErrorKind.TIMEOUT,
}


def parse_status(body: bytes | str | None) -> dict[str, Any]:
    """The ``Status`` object of an error response, or ``{}`` when the body is not one."""
    if not body:
        return {}
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) and data.get("kind") == "Status" else {}


def retry_after_seconds(status: Mapping[str, Any], headers: Mapping[str, str] | None) -> float | None:
    """``Retry-After`` (seconds form) or ``Status.details.retryAfterSeconds``."""
    value = None
    if headers is not None:
        value = headers.get("Retry-After") or headers.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass  # the HTTP-date form: fall back to the body
    seconds = (status.get("details") or {}).get("retryAfterSeconds")
    return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else None


def classify(code: int, reason: str) -> ApiErrorKind:
    if reason in _REASONS:
        return _REASONS[reason]
    if code in _CODES:
        return _CODES[code]
    if code >= 500:
        return ApiErrorKind.INTERNAL
    return ApiErrorKind.OTHER


def from_response(code: int, body: bytes | str | None, headers: Mapping[str, str] | None, ref: Ref | None,
                  what: str) -> ApiError:
    """An error response; ``what`` names the request (``create ConfigMap ns/name``) for bodies without a message."""
    status = parse_status(body)
    reason = str(status.get("reason") or "")
    kind = classify(code, reason)
    message = str(status.get("message") or "").strip()
    if not message:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
        text = " ".join(text.split())[:200]
        message = f"{what}: HTTP {code}" + (f": {text}" if text else "")
    return ApiError(kind, message, ref, retry_after=retry_after_seconds(status, headers),
                    namespace_missing=_namespace_missing(kind, status, ref))


def _namespace_missing(kind: ApiErrorKind, status: Mapping[str, Any], ref: Ref | None) -> str | None:
    """The namespace a NotFound says is missing: its details name a core ``namespaces`` resource, and it is the
    namespace of the object the request was about (apiserver's ``NewNotFound(namespaces, name)`` on admission)."""
    details = status.get("details")
    if kind is not ApiErrorKind.NOT_FOUND or not isinstance(details, dict) or ref is None:
        return None
    name = details.get("name")
    if details.get("kind") == "namespaces" and not details.get("group") and isinstance(name, str) \
            and name and name == ref.namespace:
        return name
    return None


def from_exception(err: BaseException, ref: Ref | None, what: str, server: str) -> ApiError:
    """A request that got no HTTP response: connection refused or reset, TLS failure, timeout."""
    cause = err
    reason = getattr(err, "reason", None)  # MaxRetryError wraps the real error
    if isinstance(reason, BaseException):
        cause = reason
    if isinstance(cause, urllib3.exceptions.SSLError) and not _connection_lost(cause):
        return ApiError(ApiErrorKind.OTHER, f"{what}: TLS failure talking to {server}: {cause}", ref)
    if isinstance(cause, urllib3.exceptions.NewConnectionError | ConnectionRefusedError):
        return ApiError(ApiErrorKind.TIMEOUT, f"{what}: the API server at {server} is unreachable (connection refused)",
                        ref, refused=True)
    elif isinstance(cause, TimeoutError | socket.timeout | urllib3.exceptions.TimeoutError):
        detail = f"timed out: {cause}"
    else:
        detail = f"{type(cause).__name__}: {cause}"
    return ApiError(ApiErrorKind.TIMEOUT, f"{what}: the API server at {server} is unreachable ({detail})", ref)


def _connection_lost(err: urllib3.exceptions.SSLError) -> bool:
    """A TLS connection that ended mid-way (no close_notify: the peer died or reset it), not a TLS
    problem such as an untrusted certificate: transient, like any other dropped connection."""
    inner = err.args[0] if err.args else None
    return isinstance(inner, ssl.SSLEOFError | ssl.SSLZeroReturnError | ssl.SSLSyscallError)


def no_kind_match(api_version: str, kind: str, ref: Ref | None = None) -> ApiError:
    """What client-go's RESTMapper says for a kind the server does not serve."""
    return ApiError(ApiErrorKind.NO_KIND_MATCH, f'no matches for kind "{kind}" in version "{api_version}"', ref)
