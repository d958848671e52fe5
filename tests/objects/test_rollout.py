"""kstatus's rollout rules (cvo/objects/rollout.py), on the cases of cli-utils' pkg/kstatus/status/core_test.go
and status_test.go, and on objects of any shape (a status, never an exception)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.objects.rollout import Rollout, RolloutStatus, compute

CURRENT, IN_PROGRESS, FAILED, TERMINATING = (RolloutStatus.CURRENT, RolloutStatus.IN_PROGRESS,
                                             RolloutStatus.FAILED, RolloutStatus.TERMINATING)


def deployment(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
               generation: int = 1, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    st_ = {"observedGeneration": generation, **(status or {})}
    if conditions is not None:
        st_["conditions"] = conditions
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "n", "generation": generation},
            "spec": {"progressDeadlineSeconds": 600, **(spec or {})}, "status": st_}


ROLLED = {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}
GOOD = [{"type": "Available", "status": "True"},
        {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]


@pytest.mark.parametrize(("obj", "status", "message"), [
    (deployment({"replicas": 3}, ROLLED, conditions=GOOD), CURRENT, "Deployment is available. Replicas: 3"),
    (deployment({"replicas": 3}, {**ROLLED, "replicas": 1}, conditions=GOOD), IN_PROGRESS, "Replicas: 1/3"),
    (deployment({"replicas": 3}, {**ROLLED, "updatedReplicas": 1}, conditions=GOOD), IN_PROGRESS, "Updated: 1/3"),
    (deployment({"replicas": 3}, {**ROLLED, "replicas": 4}, conditions=GOOD), IN_PROGRESS, "Pending termination: 1"),
    (deployment({"replicas": 3}, {**ROLLED, "availableReplicas": 2}, conditions=GOOD), IN_PROGRESS,
     "Available: 2/3"),
    (deployment({"replicas": 3}, {**ROLLED, "readyReplicas": 2}, conditions=GOOD), IN_PROGRESS, "Ready: 2/3"),
    (deployment({"replicas": 3}, ROLLED, conditions=GOOD[:1]), IN_PROGRESS, "ReplicaSet not Available"),
    (deployment({"replicas": 3}, ROLLED, conditions=GOOD[1:]), IN_PROGRESS, "Deployment not Available"),
    # no progress deadline: the controller sets no Progressing condition, so none is needed
    ({**deployment({"replicas": 3}, ROLLED, conditions=GOOD[:1]), "spec": {"replicas": 3}}, CURRENT,
     "Deployment is available. Replicas: 3"),
    (deployment({"replicas": 3}, ROLLED, conditions=[
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
         "message": 'ReplicaSet "d-1" has timed out progressing.'}]), FAILED, "Progress deadline exceeded"),
    ({**deployment({"replicas": 1}, {"observedGeneration": 1, **ROLLED}, generation=2), }, IN_PROGRESS,
     "Deployment generation is 2, but latest observed generation is 1"),
    ({**deployment(), "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}, TERMINATING,
     "Resource scheduled for deletion"),
])
def test_deployment(obj: dict[str, Any], status: RolloutStatus, message: str) -> None:
    result = compute(obj)
    assert (result.status, result.message) == (status, message)


def test_a_failed_deployment_keeps_its_condition_message() -> None:
    result = compute(deployment({"replicas": 1}, conditions=[
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
         "message": 'ReplicaSet "d-1" has timed out progressing.'}]))
    assert result.condition_message == 'ReplicaSet "d-1" has timed out progressing.'


def daemonset(status: dict[str, Any], generation: int | None = 1) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "ds"} if generation is None else {"name": "ds", "generation": generation}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "status": status}


DS = {"observedGeneration": 1, "desiredNumberScheduled": 2, "currentNumberScheduled": 2,
      "updatedNumberScheduled": 2, "numberAvailable": 2, "numberReady": 2}


@pytest.mark.parametrize(("obj", "status", "message"), [
    (daemonset(DS), CURRENT, "All replicas scheduled as expected. Replicas: 2"),
    (daemonset({**DS, "updatedNumberScheduled": 1}), IN_PROGRESS, "Updated: 1/2"),
    (daemonset({**DS, "currentNumberScheduled": 0}), IN_PROGRESS, "Current: 0/2"),
    (daemonset({k: v for k, v in DS.items() if k != "desiredNumberScheduled"}), IN_PROGRESS,
     "Missing .status.desiredNumberScheduled"),
    (daemonset({}), IN_PROGRESS, "DaemonSet status.observedGeneration not found"),
    (daemonset(DS, generation=None), IN_PROGRESS, "DaemonSet metadata.generation not found"),
])
def test_daemonset(obj: dict[str, Any], status: RolloutStatus, message: str) -> None:
    result = compute(obj)
    assert (result.status, result.message) == (status, message)


def statefulset(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}, "spec": spec, "status": status}


STS = {"replicas": 2, "readyReplicas": 2, "currentReplicas": 2, "updatedReplicas": 2,
       "currentRevision": "s-1", "updateRevision": "s-1"}


@pytest.mark.parametrize(("obj", "status", "message"), [
    (statefulset({"replicas": 2}, STS), CURRENT, "All replicas scheduled as expected. Replicas: 2"),
    (statefulset({"replicas": 2}, {**STS, "updateRevision": "s-2"}), IN_PROGRESS,
     "Waiting for updated revision to match current"),
    (statefulset({"replicas": 2}, {**STS, "readyReplicas": 1}), IN_PROGRESS, "Ready: 1/2"),
    (statefulset({"replicas": 2, "updateStrategy": {"type": "OnDelete"}}, {}), CURRENT,
     "StatefulSet is using the ondelete update strategy"),
    (statefulset({"replicas": 2, "updateStrategy": {"rollingUpdate": {"partition": 1}}},
                 {**STS, "updatedReplicas": 0}), IN_PROGRESS, "updated: 0/1"),
])
def test_statefulset(obj: dict[str, Any], status: RolloutStatus, message: str) -> None:
    result = compute(obj)
    assert (result.status, result.message) == (status, message)


def job(status: dict[str, Any], spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec or {}, "status": status}


@pytest.mark.parametrize(("obj", "status", "message"), [
    (job({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}), CURRENT,
     "Job Completed. succeeded: 1/1"),
    (job({"failed": 3, "conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}),
     FAILED, "Job Failed. failed: 3/1"),
    (job({}), IN_PROGRESS, "Job not started"),
    (job({"startTime": "2026-01-01T00:00:00Z", "active": 1}), CURRENT, "Job in progress. success:0, active: 1, failed: 0"),
    (job({"conditions": [{"type": "Suspended", "status": "True"}]}, {"suspend": True}), CURRENT, "Job is suspended"),
])
def test_job(obj: dict[str, Any], status: RolloutStatus, message: str) -> None:
    result = compute(obj)
    assert (result.status, result.message) == (status, message)


def test_other_kinds_follow_ready_then_are_current() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
           "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Waiting", "message": "soon"}]}}
    assert compute(obj) == Rollout(IN_PROGRESS, "Waiting", "soon")
    obj["status"]["conditions"][0]["status"] = "True"
    assert compute(obj).status is CURRENT
    assert compute({"kind": "ConfigMap", "apiVersion": "v1"}).message == "Resource is current"


def test_stalled_is_failed_and_reconciling_in_progress() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget",
           "status": {"conditions": [{"type": "Stalled", "status": "True", "reason": "Broken", "message": "no"}]}}
    assert compute(obj).status is FAILED
    obj["status"]["conditions"][0]["type"] = "Reconciling"
    assert compute(obj) == Rollout(IN_PROGRESS, "Broken", "no")


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=12), c, max_size=4),
                     max_leaves=20)
_fields = st.fixed_dictionaries({}, optional={
    "metadata": _json | st.fixed_dictionaries({}, optional={"generation": _json, "deletionTimestamp": _json}),
    "spec": _json | st.fixed_dictionaries({}, optional={"replicas": _json, "progressDeadlineSeconds": _json,
                                                         "updateStrategy": _json, "parallelism": _json}),
    "status": _json | st.fixed_dictionaries({}, optional={
        "observedGeneration": _json, "replicas": _json, "updatedReplicas": _json, "conditions": _json,
        "desiredNumberScheduled": _json, "startTime": _json})})


@given(kind=st.sampled_from([("apps/v1", "Deployment"), ("apps/v1", "DaemonSet"), ("apps/v1", "StatefulSet"),
                             ("apps/v1", "ReplicaSet"), ("batch/v1", "Job"), ("x/v1", "Widget"), (5, [])]),
       fields=_fields)
def test_any_shape_gets_a_status(kind: tuple[Any, Any], fields: dict[str, Any]) -> None:
    result = compute({"apiVersion": kind[0], "kind": kind[1], **fields})
    assert isinstance(result.status, RolloutStatus)
    assert isinstance(result.message, str)
