"""Conditions and history entries of Kubernetes-style status objects, as the CVO reads and sets them.

``SetOperatorStatusCondition`` (lib/resourcemerge/os.go): ``lastTransitionTime`` moves only when
the status changes; ``GetCurrentVersion`` (pkg/payload/precondition/clusterversion/upgradeable.go):
the first Completed history entry, else the oldest.  Pure functions over plain dicts, shared by the
gates and the ClusterVersion status.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cvo.clock import to_rfc3339

Condition = dict[str, Any]
HistoryEntry = dict[str, Any]
COMPLETED = "Completed"


def find_condition(conditions: Sequence[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def set_condition(conditions: list[Condition], type_: str, status: str, reason: str, message: str,
                  now: datetime) -> None:
    """Set a condition in place; ``lastTransitionTime`` moves only when the status changes.

    A new condition is appended, an existing one keeps its place, so the order is stable.
    Empty reasons and messages are omitted, as in the API's JSON.
    """
    existing = find_condition(conditions, type_)
    if existing is None:
        existing = {"type": type_, "status": status, "lastTransitionTime": to_rfc3339(now)}
        conditions.append(existing)
    elif existing.get("status") != status:
        existing["status"] = status
        existing["lastTransitionTime"] = to_rfc3339(now)
    set_optional(existing, "reason", reason)
    set_optional(existing, "message", message)


def set_optional(obj: dict[str, Any], key: str, value: str) -> None:
    """``obj[key] = value``, or no such key when ``value`` is empty (the API's JSON omits empty strings)."""
    if value:
        obj[key] = value
    else:
        obj.pop(key, None)


def current_version(history: Sequence[HistoryEntry]) -> str:
    """``GetCurrentVersion``: the first Completed entry's version, else the oldest entry's."""
    for entry in history:
        if entry.get("state") == COMPLETED:
            return _text(entry, "version")
    return _text(history[-1], "version") if history else ""


def _text(entry: HistoryEntry, key: str) -> str:
    value = entry.get(key)
    return value if isinstance(value, str) else ""  # a field of the wrong type counts as absent
