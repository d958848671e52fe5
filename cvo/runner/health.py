"""When a task is done: the CVO's health checks on live objects (reference §3)."""

from __future__ import annotations

from typing import Any

from cvo.errors import (
    UpdateError,
    cluster_operator_degraded,
    cluster_operator_no_versions,
    cluster_operator_not_available,
    cluster_operator_updating,
)
from cvo.payload.graph import Mode


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    if not obj:
        return None
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return None


def condition_status(obj: dict[str, Any] | None, type_: str) -> str | None:
    cond = condition(obj, type_)
    return cond.get("status") if cond else None


def check_operator_health(name: str, expected_versions: tuple[tuple[str, str], ...], live: dict[str, Any],
                          mode: Mode) -> UpdateError | None:
    """``checkOperatorHealth``, in its order; ``None`` when the ClusterOperator is done.

    cvo adds one rule from the OperatorCondition enhancement (seed 000): an operator that reports
    ``Upgrading=True`` is not done, whatever its versions say.
    """
    status = live.get("status") or {}
    live_versions = {v.get("name"): v.get("version") for v in status.get("versions") or [] if isinstance(v, dict)}
    undone = []
    for vname, version in expected_versions:
        current = live_versions.get(vname)
        if not current:  # missing or empty: the operator has not reported it
            undone.append(f"{vname} to {version}")
        elif current != version:
            undone.append(f"{vname} from {current} to {version}")
    undone.sort()
    available = condition_status(live, "Available") == "True"
    degraded = condition_status(live, "Degraded") != "False"  # a missing Degraded counts as degraded
    progressing = condition_status(live, "Progressing") != "False"  # only Progressing=False clears it
    generic = (f"cluster operator {name}: available={str(available).lower()}, "
               f"progressing={str(progressing).lower()}, degraded={str(degraded).lower()}, "
               f"undone={', '.join(undone)}")
    if not available:
        cond = condition(live, "Available")
        nested = (f"cluster operator {name} is Available={cond.get('status')}: {cond.get('reason', '')}: "
                  f"{cond.get('message')}") if cond and cond.get("message") else generic
        return cluster_operator_not_available(name, nested)
    if degraded:
        cond = condition(live, "Degraded")
        nested = (f"cluster operator {name} is Degraded={cond.get('status')}: {cond.get('reason', '')}, "
                  f"{cond.get('message')}") if cond and cond.get("message") else generic
        return cluster_operator_degraded(name, nested, install=mode is Mode.INSTALL)
    if undone and mode is not Mode.INSTALL:
        return cluster_operator_updating(
            name, f"cluster operator {name} is available and not degraded but has not finished updating to target version")
    if condition_status(live, "Upgrading") == "True" and mode is not Mode.INSTALL:
        cond = condition(live, "Upgrading") or {}
        return cluster_operator_updating(
            name, f"cluster operator {name} reports Upgrading=True: {cond.get('message', '')}".rstrip(": "))
    return None


def no_versions_error(name: str) -> UpdateError:
    return cluster_operator_no_versions(name)


def check_crd(live: dict[str, Any]) -> str | None:
    """A CRD is ready when Established=True."""
    if condition_status(live, "Established") == "True":
        return None
    return f"CustomResourceDefinition {live.get('metadata', {}).get('name')} is not Established"


def check_deployment(live: dict[str, Any]) -> UpdateError | None:
    """``lib/resourcebuilder/apps.go``: only clear failures block (no conditions: fine)."""
    name = f"{live.get('metadata', {}).get('namespace')}/{live.get('metadata', {}).get('name')}"
    if (live.get("metadata") or {}).get("deletionTimestamp"):
        return UpdateError("WorkloadNotAvailable", f"deployment {name} is being deleted")
    replica_failure = condition(live, "ReplicaFailure")
    if replica_failure and replica_failure.get("status") == "True":
        return UpdateError("WorkloadNotProgressing", f"deployment {name} has some pods failing; unavailable replicas",
                           nested=str(replica_failure.get("message", "")))
    available, progressing = condition(live, "Available"), condition(live, "Progressing")
    if available and available.get("status") == "False" and progressing and progressing.get("status") == "False":
        return UpdateError("WorkloadNotAvailable", f"deployment {name} is not available and not progressing",
                           nested=str(available.get("message", "")))
    if progressing and progressing.get("status") == "False" and progressing.get("reason") == "ProgressDeadlineExceeded":
        return UpdateError("WorkloadNotProgressing", f"deployment {name} is not progressing",
                           nested=str(progressing.get("message", "")))
    return None


def check_job(live: dict[str, Any]) -> UpdateError | None:
    status = live.get("status") or {}
    name = f"{live.get('metadata', {}).get('namespace')}/{live.get('metadata', {}).get('name')}"
    if status.get("succeeded", 0) > 0:
        return None
    failed = condition(live, "Failed")
    if (status.get("active", 0) == 0 and status.get("failed", 0) > 0) or (
            failed and failed.get("status") == "True" and failed.get("reason") == "DeadlineExceeded"):
        reason = failed.get("reason", "") if failed else ""
        message = failed.get("message", "") if failed else ""
        return UpdateError("JobFailed", f"job {name} has failed: deadline exceeded, reason: {reason}, message: {message}")
    return None
