"""Whether a workload has rolled out: kstatus's rules, as Flux and kapp apply them.

A port of sigs.k8s.io/cli-utils ``pkg/kstatus/status``: ``status.go`` ``Compute`` (the generic checks of
``generic.go`` ``checkGenericProperties``, then a kind's own rule of ``core.go``, then a ``Ready``
condition), with the same messages.  The result is one of four statuses:

    Current      the object's controller has done what its spec asks (a Deployment's replicas all
                 updated, available and ready; a Job complete)
    InProgress   not yet (the message says what is missing: "Updated: 1/3")
    Failed       it will not get there by itself (a Deployment past its progress deadline, a failed Job)
    Terminating  it is being deleted

Fields of the wrong type count as absent, so a hostile object yields a status, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from cvo.payload.fields import dig, entries, mapping, string

_INT32_MAX = 2**31 - 1


class RolloutStatus(Enum):
    CURRENT = "Current"
    IN_PROGRESS = "InProgress"
    FAILED = "Failed"
    TERMINATING = "Terminating"


@dataclass(frozen=True)
class Rollout:
    status: RolloutStatus
    reason: str  # kstatus's reason where it gives one (e.g. "LessUpdated"), else the status's name
    message: str
    # the condition that decided a Failed status (its own message: "ReplicaSet \"x\" has timed out progressing.")
    condition_message: str = ""

    @property
    def current(self) -> bool:
        return self.status is RolloutStatus.CURRENT


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(obj: Mapping[str, Any], *path: str, default: int) -> int:
    value = dig(obj, *path)
    return value if _is_int(value) else default


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [mapping(c) for c in entries(dig(obj, "status", "conditions"))]


def _in_progress(reason: str, message: str) -> Rollout:
    return Rollout(RolloutStatus.IN_PROGRESS, reason, message)


def _current(message: str) -> Rollout:
    return Rollout(RolloutStatus.CURRENT, "Current", message)


def _generic(obj: Mapping[str, Any]) -> Rollout | None:
    """generic.go ``checkGenericProperties``: deletion, an unobserved generation, Reconciling/Stalled."""
    if string(dig(obj, "metadata", "deletionTimestamp")):
        return Rollout(RolloutStatus.TERMINATING, "Terminating", "Resource scheduled for deletion")
    generation = dig(obj, "metadata", "generation")
    observed = dig(obj, "status", "observedGeneration")
    if _is_int(generation) and _is_int(observed) and observed != generation:
        message = (f"{string(obj.get('kind'))} generation is {generation}, "
                   f"but latest observed generation is {observed}")
        return _in_progress("LatestGenerationNotObserved", message)
    for c in _conditions(obj):
        if c.get("type") == "Reconciling" and c.get("status") == "True":
            return _in_progress(string(c.get("reason")), string(c.get("message")))
        if c.get("type") == "Stalled" and c.get("status") == "True":
            return Rollout(RolloutStatus.FAILED, string(c.get("reason")) or "Stalled", string(c.get("message")),
                           string(c.get("message")))
    return None


def _deployment(obj: Mapping[str, Any]) -> Rollout:
    """core.go ``deploymentConditions``."""
    progressing = _int(obj, "spec", "progressDeadlineSeconds", default=_INT32_MAX) == _INT32_MAX
    available = False
    for c in _conditions(obj):
        if c.get("type") == "Progressing":
            if c.get("reason") == "ProgressDeadlineExceeded":
                return Rollout(RolloutStatus.FAILED, "ProgressDeadlineExceeded", "Progress deadline exceeded",
                               string(c.get("message")))
            if c.get("status") == "True" and c.get("reason") == "NewReplicaSetAvailable":
                progressing = True
        elif c.get("type") == "Available" and c.get("status") == "True":
            available = True
    spec = _int(obj, "spec", "replicas", default=1)
    replicas = _int(obj, "status", "replicas", default=0)
    updated = _int(obj, "status", "updatedReplicas", default=0)
    ready = _int(obj, "status", "readyReplicas", default=0)
    available_replicas = _int(obj, "status", "availableReplicas", default=0)
    if spec > replicas:
        return _in_progress("LessReplicas", f"Replicas: {replicas}/{spec}")
    if spec > updated:
        return _in_progress("LessUpdated", f"Updated: {updated}/{spec}")
    if replicas > spec:
        return _in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    if updated > available_replicas:
        return _in_progress("LessAvailable", f"Available: {available_replicas}/{updated}")
    if spec > ready:
        return _in_progress("LessReady", f"Ready: {ready}/{spec}")
    if not progressing:
        return _in_progress("ReplicaSetNotAvailable", "ReplicaSet not Available")
    if not available:
        return _in_progress("DeploymentNotAvailable", "Deployment not Available")
    return _current(f"Deployment is available. Replicas: {replicas}")


def _statefulset(obj: Mapping[str, Any]) -> Rollout:
    """core.go ``stsConditions``."""
    if string(dig(obj, "spec", "updateStrategy", "type")) == "OnDelete":
        return _current("StatefulSet is using the ondelete update strategy")
    spec = _int(obj, "spec", "replicas", default=1)
    ready = _int(obj, "status", "readyReplicas", default=0)
    current = _int(obj, "status", "currentReplicas", default=0)
    updated = _int(obj, "status", "updatedReplicas", default=0)
    replicas = _int(obj, "status", "replicas", default=0)
    partition = _int(obj, "spec", "updateStrategy", "rollingUpdate", "partition", default=-1)
    if spec > replicas:
        return _in_progress("LessReplicas", f"Replicas: {replicas}/{spec}")
    if spec > ready:
        return _in_progress("LessReady", f"Ready: {ready}/{spec}")
    if replicas > spec:
        return _in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    if partition != -1:
        if updated < spec - partition:
            return _in_progress("PartitionRollout", f"updated: {updated}/{spec - partition}")
        return _current(f"Partition rollout complete. updated: {updated}")
    if spec > current:
        return _in_progress("LessCurrent", f"current: {current}/{spec}")
    if string(dig(obj, "status", "currentRevision")) != string(dig(obj, "status", "updateRevision")):
        return _in_progress("RevisionMismatch", "Waiting for updated revision to match current")
    return _current(f"All replicas scheduled as expected. Replicas: {replicas}")


def _daemonset(obj: Mapping[str, Any]) -> Rollout:
    """core.go ``daemonsetConditions`` (with ``checkGenerationSet``: a DaemonSet its controller has not seen
    yet is in progress)."""
    kind = string(obj.get("kind"))
    if not _is_int(dig(obj, "metadata", "generation")):
        return _in_progress("NoGeneration", f"{kind} metadata.generation not found")
    if not _is_int(dig(obj, "status", "observedGeneration")):
        return _in_progress("NoObservedGeneration", f"{kind} status.observedGeneration not found")
    desired = _int(obj, "status", "desiredNumberScheduled", default=-1)
    current = _int(obj, "status", "currentNumberScheduled", default=0)
    updated = _int(obj, "status", "updatedNumberScheduled", default=0)
    available = _int(obj, "status", "numberAvailable", default=0)
    ready = _int(obj, "status", "numberReady", default=0)
    if desired == -1:
        return _in_progress("NoDesiredNumber", "Missing .status.desiredNumberScheduled")
    if desired > current:
        return _in_progress("LessCurrent", f"Current: {current}/{desired}")
    if desired > updated:
        return _in_progress("LessUpdated", f"Updated: {updated}/{desired}")
    if desired > available:
        return _in_progress("LessAvailable", f"Available: {available}/{desired}")
    if desired > ready:
        return _in_progress("LessReady", f"Ready: {ready}/{desired}")
    return _current(f"All replicas scheduled as expected. Replicas: {desired}")


def _replicaset(obj: Mapping[str, Any]) -> Rollout:
    """core.go ``replicasetConditions``."""
    for c in _conditions(obj):
        if c.get("type") == "ReplicaFailure" and c.get("status") == "True":
            return _in_progress("ReplicaFailure", "Replica Failure condition. Check Pods")
    spec = _int(obj, "spec", "replicas", default=1)
    replicas = _int(obj, "status", "replicas", default=0)
    ready = _int(obj, "status", "readyReplicas", default=0)
    available = _int(obj, "status", "availableReplicas", default=0)
    labelled = _int(obj, "status", "fullyLabeledReplicas", default=0)
    if spec > labelled:
        return _in_progress("LessLabelled", f"Labelled: {labelled}/{spec}")
    if spec > available:
        return _in_progress("LessAvailable", f"Available: {available}/{spec}")
    if spec > ready:
        return _in_progress("LessReady", f"Ready: {ready}/{spec}")
    if replicas > spec:
        return _in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    return _current(f"ReplicaSet is available. Replicas: {replicas}")


def _job(obj: Mapping[str, Any]) -> Rollout:
    """core.go ``jobConditions``."""
    parallelism = _int(obj, "spec", "parallelism", default=1)
    completions = _int(obj, "spec", "completions", default=parallelism)
    succeeded = _int(obj, "status", "succeeded", default=0)
    active = _int(obj, "status", "active", default=0)
    failed = _int(obj, "status", "failed", default=0)
    suspended = dig(obj, "spec", "suspend") is True
    for c in _conditions(obj):
        if c.get("status") != "True":
            continue
        if c.get("type") == "Complete":
            return _current(f"Job Completed. succeeded: {succeeded}/{completions}")
        if c.get("type") == "Failed":
            return Rollout(RolloutStatus.FAILED, "JobFailed", f"Job Failed. failed: {failed}/{completions}",
                           string(c.get("message")))
        if c.get("type") == "Suspended" and suspended:
            return _current("Job is suspended")
    if not string(dig(obj, "status", "startTime")):
        return _in_progress("JobNotStarted", "Job not started")
    return _current(f"Job in progress. success:{succeeded}, active: {active}, failed: {failed}")


_RULES: dict[tuple[str, str], Callable[[Mapping[str, Any]], Rollout]] = {
    ("apps", "Deployment"): _deployment,
    ("extensions", "Deployment"): _deployment,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("extensions", "DaemonSet"): _daemonset,
    ("apps", "ReplicaSet"): _replicaset,
    ("extensions", "ReplicaSet"): _replicaset,
    ("batch", "Job"): _job,
}


def _group(obj: Mapping[str, Any]) -> str:
    api_version = string(obj.get("apiVersion"))
    return api_version.rpartition("/")[0]


def has_rule(group: str, kind: str) -> bool:
    """Whether kstatus has a rule of its own for (group, kind) (else only the generic checks apply)."""
    return (group, kind) in _RULES


def compute(obj: Mapping[str, Any]) -> Rollout:
    """status.go ``Compute``: the rollout status of any object."""
    generic = _generic(obj)
    if generic is not None:
        return generic
    rule = _RULES.get((_group(obj), string(obj.get("kind"))))
    if rule is not None:
        return rule(obj)
    for c in _conditions(obj):  # status.go checkReadyCondition
        if c.get("type") != "Ready":
            continue
        if c.get("status") == "True":
            return _current("Resource is Ready")
        if c.get("status") in ("False", "Unknown"):
            return _in_progress(string(c.get("reason")), string(c.get("message")))
    return _current("Resource is current")
