"""When a task is done: the CVO's health checks on live objects, by (group, kind).

As ``lib/resourcebuilder/interface.go`` maps each (group, kind) to its builder and the builder checks the
object it applied (``lib/resourcebuilder/apps.go``, ``batch.go``, ``apiext.go``), :data:`CHECKS` maps a
(group, kind) to a :class:`HealthCheck`; :func:`register` adds one.  A ClusterOperator is not here: its
wait is :meth:`cvo.runner.waits.Waits.cluster_operator`.

Live objects are read through :mod:`cvo.payload.fields`: a field of the wrong type counts as absent, and a
ClusterOperator whose status is not an object is reported as such (the CVO's typed client would
fail to decode it), never with a Python exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cvo.cluster.api import ApiError, ApiErrorKind, Ref
from cvo.objects.rollout import RolloutStatus, compute, has_rule
from cvo.payload.errors import (
    UpdateError,
    cluster_operator_degraded,
    cluster_operator_no_versions,
    cluster_operator_not_available,
    cluster_operator_updating,
)
from cvo.payload.fields import dig, entries, mapping, string, type_name
from cvo.payload.graph import Mode
from cvo.payload.manifest import Manifest


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for cond in entries(dig(obj, "status", "conditions")):
        if cond.get("type") == type_:
            return cond
    return None


def condition_status(obj: dict[str, Any] | None, type_: str) -> str | None:
    cond = condition(obj, type_)
    status = cond.get("status") if cond else None
    return status if isinstance(status, str) else None


def _text(cond: dict[str, Any] | None, key: str) -> str:
    """A condition's reason or message as text (a number stays readable, an object is dropped)."""
    value = (cond or {}).get(key)
    return value if isinstance(value, str) else "" if isinstance(value, dict | list) or value is None else str(value)


def _name(live: dict[str, Any]) -> str:
    meta = mapping(live.get("metadata"))
    return f"{string(meta.get('namespace'))}/{string(meta.get('name'))}"


def check_operator_health(name: str, expected_versions: tuple[tuple[str, str], ...], live: dict[str, Any],
                          mode: Mode) -> UpdateError | None:
    """``checkOperatorHealth``, in its order; ``None`` when the ClusterOperator is done.

    cvo adds one rule from the OperatorCondition enhancement (operator-framework/enhancements enhancements/operator-conditions.md): an operator that reports
    ``Upgrading=True`` is not done, whatever its versions say.
    """
    status = live.get("status")
    if status is not None and not isinstance(status, dict):
        return cluster_operator_not_available(
            name, f"cluster operator {name} has a malformed status: it is {type_name(status)}, not an object")
    live_versions = {v.get("name"): v.get("version") for v in entries(mapping(status).get("versions"))}
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
        nested = (f"cluster operator {name} is Available={_text(cond, 'status')}: {_text(cond, 'reason')}: "
                  f"{_text(cond, 'message')}") if _text(cond, "message") else generic
        return cluster_operator_not_available(name, nested)
    if degraded:
        cond = condition(live, "Degraded")
        nested = (f"cluster operator {name} is Degraded={_text(cond, 'status')}: {_text(cond, 'reason')}, "
                  f"{_text(cond, 'message')}") if _text(cond, "message") else generic
        return cluster_operator_degraded(name, nested, install=mode is Mode.INSTALL)
    if undone and mode is not Mode.INSTALL:
        return cluster_operator_updating(
            name, f"cluster operator {name} is available and not degraded but has not finished updating to target version")
    if condition_status(live, "Upgrading") == "True" and mode is not Mode.INSTALL:
        cond = condition(live, "Upgrading")
        return cluster_operator_updating(
            name, f"cluster operator {name} reports Upgrading=True: {_text(cond, 'message')}".rstrip(": "))
    return None


def no_versions_error(name: str) -> UpdateError:
    return cluster_operator_no_versions(name)


def check_crd(live: dict[str, Any]) -> str | None:
    """A CRD is ready when Established=True."""
    if condition_status(live, "Established") == "True":
        return None
    return f"CustomResourceDefinition {string(dig(live, 'metadata', 'name'))} is not Established"


def check_deployment(live: dict[str, Any]) -> UpdateError | None:
    """``lib/resourcebuilder/apps.go``: only clear failures block (no conditions: fine)."""
    name = _name(live)
    if mapping(live.get("metadata")).get("deletionTimestamp"):
        return UpdateError("WorkloadNotAvailable", f"deployment {name} is being deleted")
    replica_failure = condition(live, "ReplicaFailure")
    if replica_failure and replica_failure.get("status") == "True":
        return UpdateError("WorkloadNotProgressing", f"deployment {name} has some pods failing; unavailable replicas",
                           nested=_text(replica_failure, "message"))
    available, progressing = condition(live, "Available"), condition(live, "Progressing")
    if available and available.get("status") == "False" and progressing and progressing.get("status") == "False":
        return UpdateError("WorkloadNotAvailable", f"deployment {name} is not available and not progressing",
                           nested=_text(available, "message"))
    if progressing and progressing.get("status") == "False" and progressing.get("reason") == "ProgressDeadlineExceeded":
        return UpdateError("WorkloadNotProgressing", f"deployment {name} is not progressing",
                           nested=_text(progressing, "message"))
    return None


def check_job(live: dict[str, Any]) -> UpdateError | None:
    status = mapping(live.get("status"))
    name = _name(live)

    def count(key: str) -> float:
        value = status.get(key, 0)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else 0

    if count("succeeded") > 0:
        return None
    failed = condition(live, "Failed")
    if (count("active") == 0 and count("failed") > 0) or (
            failed and failed.get("status") == "True" and failed.get("reason") == "DeadlineExceeded"):
        reason, message = _text(failed, "reason"), _text(failed, "message")
        return UpdateError("JobFailed", f"job {name} has failed: deadline exceeded, reason: {reason}, message: {message}")
    return None


def _crd_established(live: dict[str, Any]) -> ApiError | None:
    message = check_crd(live)
    if message is None:
        return None
    return ApiError(ApiErrorKind.TIMEOUT, message,
                    Ref("apiextensions.k8s.io", "CustomResourceDefinition", "", string(dig(live, "metadata", "name"))))


@dataclass(frozen=True)
class HealthCheck:
    """How a sweep decides that an object it applied (in an update or a reconcile) is done."""

    check: Callable[[dict[str, Any]], Exception | None]  # None: healthy; else the task's error
    # None: one look, and an unhealthy object fails its task (retried with the task's back-off, as the CVO's
    # builders do); seconds: wait on the kind's watch while the check fails, each change at most this apart
    wait: float | None = None


CHECKS: dict[tuple[str, str], HealthCheck] = {
    ("apps", "Deployment"): HealthCheck(check_deployment),
    ("batch", "Job"): HealthCheck(check_job),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): HealthCheck(_crd_established, wait=30.0),
}


def register(group: str, kind: str, check: HealthCheck) -> None:
    """Add (or replace) the health check of a (group, kind)."""
    CHECKS[(group, kind)] = check


def check_for(group: str, kind: str) -> HealthCheck | None:
    return CHECKS.get((group, kind))


# A manifest's own say on its health (cvo's addition; kapp's ``kapp.k14s.io/disable-wait`` and Flux's ``wait``
# do the same): "true" waits until the workload has rolled out by kstatus's rules, "false" skips every check
WAIT_FOR_ROLLOUT = "release.cvo.dev/wait-for-rollout"
ROLLOUT_WAIT = 60.0  # seconds a rolling-out workload may go without a change before its task fails (and retries)


def check_rollout(live: dict[str, Any]) -> UpdateError | None:
    """Rolled out by kstatus's rules (:mod:`cvo.objects.rollout`): Current is done; Failed and in progress fail the
    task once the wait ends, with kstatus's message (and the workload's own condition's, where it gave one)."""
    rollout = compute(live)
    if rollout.current:
        return None
    what = f"{string(live.get('kind')).lower()} {_name(live)}"
    if rollout.status is RolloutStatus.FAILED:
        return UpdateError("WorkloadNotProgressing", f"{what} has failed to roll out: {rollout.message}",
                           nested=rollout.condition_message)
    return UpdateError("WorkloadNotAvailable", f"{what} is rolling out: {rollout.message}")


def check_for_manifest(m: Manifest) -> tuple[HealthCheck | None, bool]:
    """The health check of the object ``m`` applies, and whether it holds in install mode too (the CVO checks
    nothing at install; a rollout the manifest asks to wait on is waited on in every mode)."""
    asked = m.annotations.get(WAIT_FOR_ROLLOUT, "").strip().lower()
    if asked == "false":
        return None, False
    if asked == "true" and has_rule(m.group, m.kind):
        return HealthCheck(check_rollout, wait=ROLLOUT_WAIT), True
    return check_for(m.group, m.kind), False
