"""Prometheus' ``/api/v1/alerts`` answer, read for ``cvo upgrade recommend`` (``--alerts-file``, ``--metrics-url``).

The fields oc's ``pkg/cli/admin/upgrade/status/alerts.go`` ``AlertData`` decodes: ``data.alerts[]`` with
``labels``, ``annotations``, ``state``, ``activeAt`` and ``value``.  Stricter than Go's decoder: an answer
whose ``status`` is not ``success``, or that is not of that shape, is refused (:class:`AlertsInvalid`)
rather than read as "no alerts"; keys are matched exactly, as Prometheus writes them.

The alerts are :class:`cvo.monitoring.answers.Alert`, as the Prometheus client (``Prometheus.alerts``) reads
them; this reader is the stricter one for a file a person hands over (``--alerts-file``), where the client's
follows what the CVO's Prometheus client library accepts of a server's answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from cvo.monitoring.answers import Alert
from cvo.payload.fields import type_name
from cvo.payload.limits import MIB, printable

MAX_ALERTS_BYTES = 32 * MIB  # an answer listing ~20,000 alerts; a real cluster's is far smaller


class AlertsInvalid(ValueError):
    """Not Prometheus' alerts answer; ``str()`` says where and what (one line)."""


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AlertsInvalid(f"{where} is {type_name(value)}, not an object")
    for key, item in value.items():
        if not isinstance(item, str):
            raise AlertsInvalid(f"{where}.{printable(key, 80)} is {type_name(item)}, not a string")
    return value


def _string(alert: Mapping[str, Any], key: str, where: str) -> str:
    value = alert.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AlertsInvalid(f"{where}.{key} is {type_name(value)}, not a string")
    return value


def parse_alerts(data: bytes) -> tuple[Alert, ...]:
    """The alerts of an ``/api/v1/alerts`` answer, pending ones included; :class:`AlertsInvalid` otherwise."""
    if len(data) > MAX_ALERTS_BYTES:
        raise AlertsInvalid(f"the answer is over {MAX_ALERTS_BYTES // MIB} MiB")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise AlertsInvalid(f"not JSON: {printable(str(err), 200)}") from None
    if not isinstance(doc, dict):
        raise AlertsInvalid(f"the answer is {type_name(doc)}, not an object with data.alerts")
    status = doc.get("status")
    if status is not None and status != "success":
        error = doc.get("error")
        said = f": {printable(error, 300)}" if isinstance(error, str) and error else ""
        raise AlertsInvalid(f"Prometheus answered status {printable(str(status), 40)!r}{said}")
    body = doc.get("data")
    if not isinstance(body, dict):
        raise AlertsInvalid(f"data is {type_name(body)}, not an object with alerts")
    alerts = body.get("alerts")
    if not isinstance(alerts, list):
        raise AlertsInvalid(f"data.alerts is {type_name(alerts)}, not a list")
    read = []
    for i, alert in enumerate(alerts):
        where = f"data.alerts[{i}]"
        if not isinstance(alert, dict):
            raise AlertsInvalid(f"{where} is {type_name(alert)}, not an object")
        read.append(Alert(labels=_strings(alert.get("labels"), f"{where}.labels"),
                          annotations=_strings(alert.get("annotations"), f"{where}.annotations"),
                          state=_string(alert, "state", where), active_at=_string(alert, "activeAt", where),
                          value=_string(alert, "value", where)))
    return tuple(read)
