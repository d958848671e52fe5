"""Builders of ClusterVersion and ClusterOperator objects for the upgrade status tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from cvo.clock import to_rfc3339

T0 = datetime(2024, 3, 1, 10, 0, tzinfo=UTC)
PLATFORM = {"include.release.openshift.io/self-managed-high-availability": "true"}


def at(**kw: float) -> str:
    return to_rfc3339(T0 + timedelta(**kw))


def cond(type_: str, status: str, since: str, reason: str = "", message: str = "") -> dict[str, Any]:
    c = {"type": type_, "status": status, "lastTransitionTime": since}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def co(name: str, version: str, *, progressing: str = "False", available: str = "True", degraded: str = "False",
       since: str | None = None, extra: list[dict[str, Any]] | None = None, platform: bool = True,
       **reasons: str) -> dict[str, Any]:
    since = since or at()
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
            "metadata": {"name": name, "annotations": dict(PLATFORM) if platform else {}},
            "status": {"versions": [{"name": "operator", "version": version}],
                       "conditions": [cond("Available", available, reasons.get("available_since", since),
                                           reasons.get("available_reason", "AsExpected"),
                                           reasons.get("available_message", "")),
                                      cond("Progressing", progressing, reasons.get("progressing_since", since),
                                           reasons.get("progressing_reason", ""),
                                           reasons.get("progressing_message", "")),
                                      cond("Degraded", degraded, reasons.get("degraded_since", since),
                                           reasons.get("degraded_reason", "AsExpected"),
                                           reasons.get("degraded_message", "")),
                                      *(extra or [])]}}


def cv(target: str, history: list[dict[str, Any]], *, progressing: str = "True", failing: str | None = "False",
       since: str | None = None, failing_reason: str = "", failing_message: str = "") -> dict[str, Any]:
    since = since or at()
    conditions = [cond("Available", "True", since), cond("Progressing", progressing, since)]
    if failing is not None:
        conditions.append(cond("Failing", failing, since, failing_reason, failing_message))
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
            "spec": {"clusterID": "c"},
            "status": {"desired": {"version": target, "image": f"img:{target}"}, "conditions": conditions,
                       "history": history}}


def entry(version: str, state: str, started: str, completed: str | None = None) -> dict[str, Any]:
    return {"version": version, "image": f"img:{version}", "state": state, "startedTime": started,
            "completionTime": completed, "verified": False}
