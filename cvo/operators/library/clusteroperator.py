"""Reporting a ClusterOperator's status the way the contract (openshift/enhancements dev-guide/cluster-version-operator/dev/clusteroperator.md) asks.

* Atomic: versions and conditions go in one status write, so they are only ever seen together.
* ``lastTransitionTime`` changes only when a condition's status changes.
* Versions are the caller's to decide: report the previous operator version until no old operand
  runs any more (clusteroperator.md, "Version reporting during an upgrade").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cvo.clock import to_rfc3339
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, co_ref
from cvo.payload.fields import entries, mapping


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True", "False" or "Unknown"
    reason: str = ""
    message: str = ""


def merge_conditions(current: Sequence[Mapping[str, Any]], wanted: Iterable[Condition], now: datetime,
                     ) -> list[dict[str, Any]]:
    """``current`` with ``wanted`` set: transition times kept unless a status changes; others kept."""
    by_type = {c.get("type"): dict(c) for c in current if isinstance(c, Mapping) and isinstance(c.get("type"), str)}
    stamp = to_rfc3339(now)
    for cond in wanted:
        old = by_type.get(cond.type)
        changed = old is None or old.get("status") != cond.status
        by_type[cond.type] = {
            "type": cond.type,
            "status": cond.status,
            "lastTransitionTime": stamp if changed else old.get("lastTransitionTime", stamp),  # type: ignore[union-attr]
            **({"reason": cond.reason} if cond.reason else {}),
            **({"message": cond.message} if cond.message else {}),
        }
    return [by_type[k] for k in sorted(by_type, key=str)]


async def report_status(cluster: Cluster, name: str, now: datetime, *, versions: Mapping[str, str] | None = None,
                        conditions: Iterable[Condition] = (), related_objects: list[dict[str, Any]] | None = None,
                        create: bool = True) -> dict[str, Any]:
    """Write versions and conditions of ClusterOperator ``name`` in one status update.

    ``versions=None`` keeps the reported versions; the object is created when missing (an operator
    creates its own ClusterOperator), unless ``create`` is false.  Conflicts are retried.
    """
    ref = co_ref(name)
    for _ in range(5):
        live = await cluster.get(ref)
        if live is None:
            if not create:
                raise ApiError(ApiErrorKind.NOT_FOUND, f'clusteroperators.config.openshift.io "{name}" not found', ref)
            try:
                live = await cluster.create({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                                             "metadata": {"name": name}, "spec": {}})
            except ApiError as err:
                if err.kind is ApiErrorKind.ALREADY_EXISTS:
                    continue
                raise
        status = dict(mapping(live.get("status")))  # a malformed status is replaced by a valid one
        status["conditions"] = merge_conditions(entries(status.get("conditions")), conditions, now)
        if versions is not None:
            status["versions"] = [{"name": k, "version": v} for k, v in versions.items()]
        if related_objects is not None:
            status["relatedObjects"] = related_objects
        if status == live.get("status"):
            return live
        updated = dict(live)
        updated["status"] = status
        try:
            return await cluster.update_status(updated)
        except ApiError as err:
            if err.kind is not ApiErrorKind.CONFLICT:
                raise
    raise ApiError(ApiErrorKind.CONFLICT, f"clusteroperator {name}: status kept changing; gave up after 5 conflicts", ref)
