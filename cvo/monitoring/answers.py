"""Readers of the Prometheus HTTP API's answers (hostile input): an instant query's result
(``/api/v1/query``) and the firing alerts (``/api/v1/alerts``, or a file holding that answer, as oc's
``--alerts-file``).

The envelope's rules are client_golang's (api/prometheus/v1/api.go ``apiClientImpl.Do``): a status code
other than 2xx, 400, 422 or 503 is ``server_error``/``client_error``/``bad_response``; a body that is not
the API's JSON is ``bad_response``; ``"status": "error"`` carries its own ``errorType`` and ``error``.
:func:`match_value` is pkg/clusterconditions/promql/promql.go ``PromQL.Match``'s reading of the result.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


class MonitoringError(Exception):
    """The query or the alerts could not be read; ``str()`` is the message the CVO's client would give."""


class APIError(MonitoringError):
    """client_golang's ``Error``: ``"{type}: {msg}"``."""

    def __init__(self, type_: str, message: str) -> None:
        super().__init__(f"{type_}: {message}")
        self.type = type_
        self.message = message


@dataclass(frozen=True)
class Sample:
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class QueryResult:
    """An instant query's ``data``: ``result_type`` (vector, scalar, string, matrix) and, for a vector,
    its samples; ``warnings`` as the API gave them."""

    result_type: str
    samples: tuple[Sample, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Alert:
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    state: str = ""
    active_at: str = ""
    value: str = ""

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "")


# api.go: statusAPIError = 422; these codes carry the API's own error body
_API_ERROR_CODES = (400, 422, 503)


def _envelope(status: int, body: bytes) -> Mapping[str, Any]:
    """The API's answer's ``data`` (``apiClientImpl.Do``), or :class:`APIError`."""
    if status // 100 != 2 and status not in _API_ERROR_CODES:
        if status // 100 == 5:
            raise APIError("server_error", f"server error: {status}")
        if status // 100 == 4:
            raise APIError("client_error", f"client error: {status}")
        raise APIError("bad_response", f"bad response code {status}")
    try:
        answer = json.loads(body) if status != 204 else {}
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise APIError("bad_response", f"the answer is not JSON: {str(err)[:200]}") from None
    if not isinstance(answer, Mapping):
        raise APIError("bad_response", "the answer is not a JSON object")
    state = answer.get("status")
    if status in _API_ERROR_CODES and state == "success":
        raise APIError("bad_response", "inconsistent body for response code")
    if state == "error":
        raise APIError(_text(answer.get("errorType")) or "server_error", _text(answer.get("error"))[:2000])
    if state != "success":
        raise APIError("bad_response", f"the answer's status is {_short(state)}, not success")
    data = answer.get("data")
    if not isinstance(data, Mapping):
        raise APIError("bad_response", "the answer has no data object")
    return data


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _short(value: Any) -> str:
    return json.dumps(value)[:80]


def _labels(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _sample_value(pair: Any) -> float:
    """A ``[timestamp, "value"]`` pair's value (the API writes values as strings: "1", "NaN", "+Inf")."""
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], str):
        raise APIError("bad_response", f"a sample's value is not a [time, \"value\"] pair: {_short(pair)}")
    try:
        return float(pair[1])
    except ValueError:
        raise APIError("bad_response", f"a sample's value {_short(pair[1])} is not a number") from None


def parse_query(status: int, body: bytes) -> QueryResult:
    """An instant query's answer, or :class:`MonitoringError`."""
    data = _envelope(status, body)
    result_type = _text(data.get("resultType"))
    if not result_type:
        raise APIError("bad_response", "the answer's data has no resultType")
    result = data.get("result")
    warnings = tuple(w for w in data.get("warnings") or [] if isinstance(w, str)) \
        if isinstance(data.get("warnings"), list) else ()
    if result_type != "vector":
        return QueryResult(result_type, (), warnings)
    if not isinstance(result, list):
        raise APIError("bad_response", "a vector result is not a list")
    samples = []
    for entry in result:
        if not isinstance(entry, Mapping):
            raise APIError("bad_response", f"a vector's sample is not an object: {_short(entry)}")
        samples.append(Sample(_labels(entry.get("metric")), _sample_value(entry.get("value"))))
    return QueryResult(result_type, tuple(samples), warnings)


def format_value(value: float) -> str:
    """A sample value as Go's ``model.SampleValue.String`` (``strconv.FormatFloat(f, 'f', -1, 64)``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = format(Decimal(repr(value)), "f")
    return text.removesuffix(".0")


def match_value(result: QueryResult) -> bool:
    """promql.go ``PromQL.Match``: True for one sample of 1, False for one of 0, else :class:`MonitoringError`."""
    if result.result_type != "vector":
        raise MonitoringError(f"invalid PromQL result type is {result.result_type}, not vector")
    if len(result.samples) != 1:
        raise MonitoringError(f"invalid PromQL result length must be one, but is {len(result.samples)}")
    value = result.samples[0].value
    if value == 0:
        return False
    if value == 1:
        return True
    raise MonitoringError(f"invalid PromQL result (must be 0 or 1): {format_value(value)}")


def parse_alerts(body: bytes, status: int = 200) -> tuple[Alert, ...]:
    """The alerts in an ``/api/v1/alerts`` answer (oc's ``status.AlertData``), or :class:`MonitoringError`.
    Labels and annotations keep their string values; an alert that is not an object is an error."""
    data = _envelope(status, body)
    alerts = data.get("alerts")
    if alerts is None:
        return ()
    if not isinstance(alerts, list):
        raise APIError("bad_response", "the answer's data.alerts is not a list")
    out = []
    for alert in alerts:
        if not isinstance(alert, Mapping):
            raise APIError("bad_response", f"an alert is not an object: {_short(alert)}")
        out.append(Alert(_labels(alert.get("labels")), _labels(alert.get("annotations")), _text(alert.get("state")),
                         _text(alert.get("activeAt")), _text(alert.get("value"))))
    return tuple(out)
