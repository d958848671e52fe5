"""When a task is done: ``checkOperatorHealth`` and the workload checks (pkg/cvo/internal/operatorstatus.go, lib/resourcebuilder)."""

from __future__ import annotations

from typing import Any

import pytest

from cvo.payload.errors import Effect
from cvo.payload.graph import Mode
from cvo.runner.health import check_crd, check_deployment, check_job, check_operator_health

V = (("operator", "4.17.0"),)
V2 = (("operator", "4.17.0"), ("kube-apiserver", "1.30.2"))


def cond(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    c = {"type": type_, "status": status, "lastTransitionTime": "2025-01-01T00:00:00Z"}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def co(versions: dict[str, str] | None = None, *conditions: dict[str, Any], name: str = "foo") -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": list(conditions)}
    if versions is not None:
        status["versions"] = [{"name": k, "version": v} for k, v in versions.items()]
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": name},
            "status": status}


HEALTHY = (cond("Available", "True"), cond("Degraded", "False"), cond("Progressing", "False"))
AT_TARGET = {"operator": "4.17.0", "kube-apiserver": "1.30.2"}


# --- done ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(Mode))
def test_done_when_versions_match_available_and_not_degraded(mode: Mode) -> None:
    assert check_operator_health("foo", V2, co(AT_TARGET, *HEALTHY), mode) is None


@pytest.mark.parametrize("mode", list(Mode))
def test_progressing_is_ignored(mode: Mode) -> None:
    live = co(AT_TARGET, cond("Available", "True"), cond("Degraded", "False"), cond("Progressing", "True"))
    assert check_operator_health("foo", V2, live, mode) is None


def test_extra_live_versions_do_not_matter() -> None:
    live = co({**AT_TARGET, "something-else": "9"}, *HEALTHY)
    assert check_operator_health("foo", V2, live, Mode.UPDATE) is None


# --- not available -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(Mode))
def test_not_available_fails_in_every_mode_with_the_condition_message(mode: Mode) -> None:
    live = co(AT_TARGET, cond("Available", "False", "OperandsDown", "no pods"), cond("Degraded", "True"))
    err = check_operator_health("foo", V2, live, mode)
    assert err is not None
    assert err.reason == "ClusterOperatorNotAvailable"
    assert err.plural_reason == "ClusterOperatorsNotAvailable"
    assert err.message == "Cluster operator foo is not available"
    assert err.plural_message_format == "Cluster operators %s are not available"
    assert err.effect is Effect.FAIL
    assert err.name == "foo"
    assert err.nested == "cluster operator foo is Available=False: OperandsDown: no pods"


def test_not_available_unknown_status_uses_the_condition_too() -> None:
    live = co(AT_TARGET, cond("Available", "Unknown", "NoData", "cannot tell"), cond("Degraded", "False"))
    err = check_operator_health("foo", V2, live, Mode.UPDATE)
    assert err is not None and err.reason == "ClusterOperatorNotAvailable"
    assert err.nested == "cluster operator foo is Available=Unknown: NoData: cannot tell"


def test_not_available_without_a_message_gives_the_generic_nested_text() -> None:
    # Available=False without a message, Progressing=False, Degraded=False; versions behind (sorted).
    live = co({"operator": "4.16.0"}, cond("Available", "False", "Down"), cond("Degraded", "False"),
              cond("Progressing", "False"))
    err = check_operator_health("foo", V2, live, Mode.UPDATE)
    assert err is not None
    assert err.nested == ("cluster operator foo: available=false, progressing=false, degraded=false, "
                          "undone=kube-apiserver to 1.30.2, operator from 4.16.0 to 4.17.0")


def test_generic_nested_text_defaults_progressing_to_true() -> None:
    """In the CVO ``progressing`` starts true and only ``Progressing=False`` clears it
    (``pkg/cvo/internal/operatorstatus.go``): no Progressing condition reads ``progressing=true``."""
    live = co({}, name="foo")  # a freshly precreated ClusterOperator: no conditions, no versions
    err = check_operator_health("foo", V, live, Mode.INSTALL)
    assert err is not None
    assert err.reason == "ClusterOperatorNotAvailable"
    assert err.nested == "cluster operator foo: available=false, progressing=true, degraded=true, undone=operator to 4.17.0"


def test_missing_available_is_not_available_even_when_everything_else_is_fine() -> None:
    live = co(AT_TARGET, cond("Degraded", "False"), cond("Progressing", "False"))
    err = check_operator_health("foo", V2, live, Mode.UPDATE)
    assert err is not None and err.reason == "ClusterOperatorNotAvailable"
    assert err.nested == "cluster operator foo: available=false, progressing=false, degraded=false, undone="


def test_not_available_comes_before_degraded_and_updating() -> None:
    live = co({"operator": "4.16.0"}, cond("Available", "False", "X", "down"), cond("Degraded", "True", "Y", "bad"))
    err = check_operator_health("foo", V, live, Mode.UPDATE)
    assert err is not None and err.reason == "ClusterOperatorNotAvailable"


# --- degraded -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "effect"), [(Mode.INSTALL, Effect.REPORT), (Mode.UPDATE, Effect.FAIL_AFTER_INTERVAL),
                                              (Mode.RECONCILE, Effect.FAIL_AFTER_INTERVAL)])
def test_degraded_effect_is_report_at_install_and_fail_after_interval_otherwise(mode: Mode, effect: Effect) -> None:
    live = co(AT_TARGET, cond("Available", "True"), cond("Degraded", "True", "DiskPressure", "disk is full"))
    err = check_operator_health("foo", V2, live, mode)
    assert err is not None
    assert err.reason == "ClusterOperatorDegraded"
    assert err.plural_reason == "ClusterOperatorsDegraded"
    assert err.message == "Cluster operator foo is degraded"
    assert err.plural_message_format == "Cluster operators %s are degraded"
    assert err.effect is effect
    # Note the comma between reason and message.
    assert err.nested == "cluster operator foo is Degraded=True: DiskPressure, disk is full"


@pytest.mark.parametrize("mode", list(Mode))
def test_a_missing_degraded_condition_counts_as_degraded(mode: Mode) -> None:
    live = co(AT_TARGET, cond("Available", "True"), cond("Progressing", "False"))
    err = check_operator_health("foo", V2, live, mode)
    assert err is not None
    assert err.reason == "ClusterOperatorDegraded"
    assert err.nested == "cluster operator foo: available=true, progressing=false, degraded=true, undone="


def test_degraded_unknown_counts_as_degraded() -> None:
    live = co(AT_TARGET, cond("Available", "True"), cond("Degraded", "Unknown"), cond("Progressing", "False"))
    err = check_operator_health("foo", V2, live, Mode.UPDATE)
    assert err is not None and err.reason == "ClusterOperatorDegraded"
    assert err.nested == "cluster operator foo: available=true, progressing=false, degraded=true, undone="


def test_degraded_comes_before_updating() -> None:
    live = co({"operator": "4.16.0"}, cond("Available", "True"), cond("Degraded", "True", "R", "m"))
    err = check_operator_health("foo", V, live, Mode.UPDATE)
    assert err is not None and err.reason == "ClusterOperatorDegraded"


# --- versions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [Mode.UPDATE, Mode.RECONCILE])
def test_every_declared_version_must_match_not_only_operator(mode: Mode) -> None:
    live = co({"operator": "4.17.0", "kube-apiserver": "1.29.4"}, *HEALTHY)
    err = check_operator_health("foo", V2, live, mode)
    assert err is not None
    assert err.reason == "ClusterOperatorUpdating"
    assert err.plural_reason == "ClusterOperatorsUpdating"
    assert err.message == "Cluster operator foo is updating versions"
    assert err.plural_message_format == "Cluster operators %s are updating versions"
    assert err.effect is Effect.NONE
    assert err.nested == ("cluster operator foo is available and not degraded but has not finished updating "
                          "to target version")


@pytest.mark.parametrize("live_versions", [None, {}, {"operator": "4.16.0"}, {"kube-apiserver": "1.30.2"}])
def test_a_missing_or_old_version_is_updating(live_versions: dict[str, str] | None) -> None:
    err = check_operator_health("foo", V2, co(live_versions, *HEALTHY), Mode.UPDATE)
    assert err is not None and err.reason == "ClusterOperatorUpdating"


@pytest.mark.parametrize("live_versions", [None, {"operator": "4.16.0", "kube-apiserver": "1.29.4"}])
def test_install_ignores_versions(live_versions: dict[str, str] | None) -> None:
    assert check_operator_health("foo", V2, co(live_versions, *HEALTHY), Mode.INSTALL) is None


def test_undone_is_sorted_and_distinguishes_missing_from_old() -> None:
    expected = (("zeta", "2"), ("operator", "4.17.0"), ("alpha", "1"))
    live = co({"operator": "4.16.0", "zeta": "1"}, cond("Available", "False"))
    err = check_operator_health("foo", expected, live, Mode.UPDATE)
    assert err is not None
    assert err.nested.endswith("undone=alpha to 1, operator from 4.16.0 to 4.17.0, zeta from 1 to 2")


def test_an_empty_live_version_reads_as_missing() -> None:
    """The CVO's ``current == ""`` check: an entry with an empty version is written like a missing one."""
    live = co({"operator": ""}, cond("Available", "False"))
    err = check_operator_health("foo", V, live, Mode.UPDATE)
    assert err is not None
    assert err.nested.endswith("undone=operator to 4.17.0")


# --- Upgrading (cvo's extra rule) ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", [Mode.UPDATE, Mode.RECONCILE])
def test_upgrading_true_is_not_done(mode: Mode) -> None:
    live = co(AT_TARGET, *HEALTHY, cond("Upgrading", "True", "Migrating", "moving data"))
    err = check_operator_health("foo", V2, live, mode)
    assert err is not None
    assert err.reason == "ClusterOperatorUpdating"
    assert err.effect is Effect.NONE
    assert "Upgrading=True" in err.nested


def test_upgrading_false_is_done() -> None:
    live = co(AT_TARGET, *HEALTHY, cond("Upgrading", "False", "UpgradeDone"))
    assert check_operator_health("foo", V2, live, Mode.UPDATE) is None


# --- workloads ----------------------------------------------------------------------------------------


def deployment(*conditions: dict[str, Any], deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web", "namespace": "ns"}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "status": {"conditions": list(conditions)} if conditions else {}}


def test_deployment_without_conditions_is_fine() -> None:
    assert check_deployment(deployment()) is None


def test_deployment_available_or_progressing_is_fine() -> None:
    assert check_deployment(deployment(cond("Available", "True"), cond("Progressing", "True"))) is None
    assert check_deployment(deployment(cond("Available", "False"), cond("Progressing", "True"))) is None
    assert check_deployment(deployment(cond("Available", "True"), cond("Progressing", "False", "Done"))) is None


def test_deployment_being_deleted_fails() -> None:
    err = check_deployment(deployment(cond("Available", "True"), deleting=True))
    assert err is not None
    assert "ns/web" in err.message and "being deleted" in err.message


def test_deployment_replica_failure_is_not_progressing() -> None:
    err = check_deployment(deployment(cond("Available", "True"), cond("ReplicaFailure", "True", "FailedCreate", "quota")))
    assert err is not None
    assert err.reason == "WorkloadNotProgressing"
    assert err.effect is Effect.FAIL


def test_deployment_not_available_and_not_progressing() -> None:
    err = check_deployment(deployment(cond("Available", "False", "MinimumReplicasUnavailable", "0 of 1"),
                                      cond("Progressing", "False", "NewReplicaSetAvailable")))
    assert err is not None
    assert err.reason == "WorkloadNotAvailable"


def test_deployment_progress_deadline_exceeded() -> None:
    err = check_deployment(deployment(cond("Available", "True"),
                                      cond("Progressing", "False", "ProgressDeadlineExceeded", "too slow")))
    assert err is not None
    assert err.reason == "WorkloadNotProgressing"


def job(active: int = 0, succeeded: int = 0, failed: int = 0, *conditions: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = {"active": active, "succeeded": succeeded, "failed": failed}
    if conditions:
        status["conditions"] = list(conditions)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "namespace": "ns"},
            "status": status}


def test_job_succeeded_is_fine_even_with_earlier_failures() -> None:
    assert check_job(job(succeeded=1, failed=2)) is None


def test_a_running_job_does_not_block() -> None:
    assert check_job(job(active=1)) is None
    assert check_job(job(active=1, failed=1)) is None
    assert check_job({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"}}) is None


def test_a_failed_job_is_an_error() -> None:
    err = check_job(job(0, 0, 1, cond("Failed", "True", "BackoffLimitExceeded", "too many retries")))
    assert err is not None
    assert "deadline exceeded, reason:" in err.message
    assert "BackoffLimitExceeded" in err.message and "too many retries" in err.message


def test_a_job_past_its_deadline_is_an_error_even_while_active() -> None:
    err = check_job(job(1, 0, 0, cond("Failed", "True", "DeadlineExceeded", "Job was active longer than specified deadline")))
    assert err is not None
    assert "DeadlineExceeded" in err.message


def test_crd_must_be_established() -> None:
    crd = {"metadata": {"name": "widgets.example.com"}, "status": {"conditions": [cond("NamesAccepted", "True")]}}
    assert check_crd(crd) == "CustomResourceDefinition widgets.example.com is not Established"
    crd["status"]["conditions"].append(cond("Established", "False", "Installing"))
    assert check_crd(crd) is not None
    crd["status"]["conditions"][-1] = cond("Established", "True")
    assert check_crd(crd) is None
