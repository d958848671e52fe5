"""An admin's override on an OperatorCondition (OLM's ``spec.overrides``), written safely beside others.

The object has other writers (the operator reports ``spec.conditions``, cvo's OLM sync writes
``status``), so the override is a read-modify-write: on a conflict it reads the object again and
applies the same intent to what is there now, as ``kubectl`` and client-go's ``RetryOnConflict``
do.  ``lastTransitionTime`` moves only when the override's status changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cvo.clock import to_rfc3339
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref
from cvo.objects import OperatorCondition
from cvo.runner.operator_conditions import OperatorConditionManager

CONFLICT_RETRIES = 10


class OverrideFailed(Exception):
    """The override could not be written (the object went away, or kept changing)."""


@dataclass(frozen=True)
class Override:
    type: str
    status: str  # True / False; ignored when clearing
    reason: str = "AdminOverride"
    message: str = ""
    clear: bool = False


@dataclass(frozen=True)
class OverrideResult:
    changed: bool  # False: there was no such override to clear
    object: dict[str, Any] | None


def with_override(spec: dict[str, Any], override: Override, now: datetime) -> dict[str, Any] | None:
    """``spec`` with the override set (or cleared); None when there is nothing to clear."""
    existing = next((o for o in spec.get("overrides") or [] if o.get("type") == override.type), None)
    overrides = [o for o in spec.get("overrides") or [] if o.get("type") != override.type]
    if override.clear:
        if existing is None:
            return None
    else:
        same = existing is not None and existing.get("status") == override.status
        stamp = existing.get("lastTransitionTime") if same and existing else to_rfc3339(now)
        overrides.append({"type": override.type, "status": override.status, "reason": override.reason,
                          "message": override.message, "lastTransitionTime": stamp})
    return {**spec, "overrides": overrides}


async def set_override(cluster: Cluster, ref: Ref, override: Override, now: datetime) -> OverrideResult:
    """Write ``override`` on the OperatorCondition at ``ref``, again on every conflict (up to a limit)."""
    for _ in range(CONFLICT_RETRIES):
        oc = await cluster.get(ref)
        if oc is None:
            raise OverrideFailed(f"operatorcondition {ref.namespace}/{ref.name} does not exist (any more)")
        spec = with_override(OperatorCondition.read(oc).section("spec"), override, now)  # checked: lists are lists
        if spec is None:
            return OverrideResult(False, oc)
        try:
            updated = await cluster.update({**oc, "spec": spec})
        except ApiError as err:
            if err.kind is ApiErrorKind.CONFLICT:
                continue  # someone else wrote it first: apply the same intent to theirs
            raise
        # cvo plays OLM's controller: the spec edit bumped the generation, so the status copy of the
        # operator's conditions is brought up to it (otherwise it would read as outdated).
        await OperatorConditionManager(cluster, []).sync_one(updated)
        return OverrideResult(True, updated)
    raise OverrideFailed(f"operatorcondition {ref.namespace}/{ref.name}: changed by others {CONFLICT_RETRIES} times "
                         f"while the override was being written; try again")
