"""ClusterVersion status: history, conditions and every Progressing/Failing message form (pkg/cvo/status.go)."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from freezegun import freeze_time

from cvo.clock import to_rfc3339
from cvo.payload.errors import (
    Effect,
    UpdateError,
    cluster_operator_degraded,
    cluster_operator_not_available,
    cluster_operator_updating,
    summarize,
)
from cvo.runner.reasons import wrap_apply_error
from cvo.status.clusterversion import (
    MAX_HISTORY,
    SyncStatus,
    cluster_version_object,
    current_version,
    find_condition,
    merge_history,
    percent_complete,
    prune,
    set_condition,
    update_cluster_version_status,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
V = "4.16.0"
IMG = "quay.io/openshift-release-dev/ocp-release@sha256:4160"
OLD_IMG = "quay.io/openshift-release-dev/ocp-release@sha256:4150"


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


def sync(**kw: Any) -> SyncStatus:
    kw.setdefault("version", V)
    kw.setdefault("image", IMG)
    return SyncStatus(**kw)


def cond(status: dict[str, Any], type_: str) -> dict[str, Any]:
    found = find_condition(status["conditions"], type_)
    assert found is not None, f"no {type_} condition"
    return found


def progressing(status: dict[str, Any]) -> tuple[str, str, str]:
    c = cond(status, "Progressing")
    return c["status"], c.get("reason", ""), c.get("message", "")


def failing(status: dict[str, Any]) -> tuple[str, str, str]:
    c = cond(status, "Failing")
    return c["status"], c.get("reason", ""), c.get("message", "")


def updating(*names: str) -> UpdateError:
    failure = summarize([cluster_operator_updating(n, "") for n in names])
    assert failure is not None
    return failure


def degraded(*names: str, install: bool = False) -> UpdateError:
    failure = summarize([cluster_operator_degraded(n, "", install) for n in names])
    assert failure is not None
    return failure


def upgrading_status() -> dict[str, Any]:
    """A cluster that completed 4.15.0 and is being updated: history is non-empty, not reconciling."""
    done = update_cluster_version_status({}, sync(version="4.15.0", image=OLD_IMG, completed=1, reconciling=True),
                                         T0 - timedelta(days=1))
    return done


# --- history -------------------------------------------------------------------------------------


def test_first_merge_adds_a_partial_entry() -> None:
    history = merge_history([], V, IMG, completed=False, now=T0)
    assert history == [{"state": "Partial", "startedTime": to_rfc3339(T0), "completionTime": None,
                        "version": V, "image": IMG, "verified": False}]


def test_completed_merge_marks_the_entry_completed() -> None:
    history = merge_history([], V, IMG, completed=False, now=T0)
    history = merge_history(history, V, IMG, completed=True, now=T0 + minutes(50))
    assert len(history) == 1
    assert history[0]["state"] == "Completed"
    assert history[0]["startedTime"] == to_rfc3339(T0)
    assert history[0]["completionTime"] == to_rfc3339(T0 + minutes(50))


def test_completion_time_is_set_once() -> None:
    history = merge_history([], V, IMG, completed=True, now=T0)
    history = merge_history(history, V, IMG, completed=True, now=T0 + timedelta(hours=5))
    assert history[0]["completionTime"] == to_rfc3339(T0)


def test_new_version_keeps_the_old_heads_completion_time() -> None:
    """PR #247: the previous entry's completionTime must not be clobbered by the new entry."""
    history = merge_history([], "4.15.0", OLD_IMG, completed=True, now=T0)
    history = merge_history(history, V, IMG, completed=False, now=T0 + timedelta(days=3))
    assert [h["version"] for h in history] == [V, "4.15.0"]
    assert history[0]["state"] == "Partial"
    assert history[0]["completionTime"] is None
    assert history[1] == {"state": "Completed", "startedTime": to_rfc3339(T0), "completionTime": to_rfc3339(T0),
                          "version": "4.15.0", "image": OLD_IMG, "verified": False}


def test_abandoned_partial_stays_partial_and_is_closed() -> None:
    history = merge_history([], "4.15.0", OLD_IMG, completed=True, now=T0)
    history = merge_history(history, "4.16.0", IMG, completed=False, now=T0 + minutes(10))
    history = merge_history(history, "4.16.1", IMG + "1", completed=False, now=T0 + minutes(20))
    assert [(h["version"], h["state"]) for h in history] == [
        ("4.16.1", "Partial"), ("4.16.0", "Partial"), ("4.15.0", "Completed")]
    assert history[1]["completionTime"] == to_rfc3339(T0 + minutes(20))


def test_new_entry_is_completed_when_the_payload_already_completed() -> None:
    history = merge_history([], "4.15.0", OLD_IMG, completed=True, now=T0)
    history = merge_history(history, V, IMG, completed=True, now=T0 + minutes(5))
    assert history[0]["state"] == "Completed"
    assert history[0]["startedTime"] == history[0]["completionTime"] == to_rfc3339(T0 + minutes(5))


def test_merge_equal_versions_fills_a_missing_version() -> None:
    history = merge_history([], "", IMG, completed=False, now=T0)
    history = merge_history(history, V, IMG, completed=False, now=T0 + minutes(1))
    assert len(history) == 1
    assert history[0]["version"] == V


def test_merge_equal_versions_fills_a_missing_image() -> None:
    start = [{"state": "Completed", "startedTime": to_rfc3339(T0), "completionTime": to_rfc3339(T0),
              "version": V, "image": "", "verified": False}]
    history = merge_history(start, V, IMG, completed=True, now=T0 + minutes(1))
    assert len(history) == 1
    assert history[0]["image"] == IMG
    assert start[0]["image"] == "", "the input must not be modified"


def test_empty_desired_version_matches_on_image() -> None:
    history = merge_history([], V, IMG, completed=False, now=T0)
    history = merge_history(history, "", IMG, completed=True, now=T0 + minutes(1))
    assert len(history) == 1
    assert history[0]["version"] == V and history[0]["state"] == "Completed"


def test_same_version_with_a_different_image_is_a_new_entry() -> None:
    history = merge_history([], V, OLD_IMG, completed=True, now=T0)
    history = merge_history(history, V, IMG, completed=False, now=T0 + minutes(1))
    assert [h["image"] for h in history] == [IMG, OLD_IMG]


def test_no_image_leaves_history_alone() -> None:
    assert merge_history([], V, "", completed=True, now=T0) == []
    status = update_cluster_version_status({}, sync(image=""), T0)
    assert status["history"] == []
    assert "desired" not in status


def test_accepted_risks_and_verified_are_written_on_the_head() -> None:
    history = merge_history([], V, IMG, completed=False, now=T0, accepted_risks="Forced through blocking failures: x",
                            verified=True)
    assert history[0]["acceptedRisks"] == "Forced through blocking failures: x"
    assert history[0]["verified"] is True
    history = merge_history(history, V, IMG, completed=False, now=T0, accepted_risks="other")
    assert history[0]["acceptedRisks"] == "other"
    history = merge_history(history, V, IMG, completed=False, now=T0, accepted_risks="", local=True)
    assert history[0]["acceptedRisks"] == "other", "a local payload leaves accepted risks alone"


def _entry(version: str, state: str = "Completed") -> dict[str, Any]:
    return {"state": state, "startedTime": to_rfc3339(T0), "completionTime": to_rfc3339(T0),
            "version": version, "image": f"img:{version}", "verified": False}


def test_history_is_pruned_to_100_keeping_the_newest_and_the_initial_entry() -> None:
    history = [_entry(f"4.1.{i}", "Partial") for i in range(MAX_HISTORY, 0, -1)]  # newest first
    merged = merge_history(history, "4.2.0", "img:4.2.0", completed=False, now=T0)
    assert len(merged) == MAX_HISTORY
    assert merged[0]["version"] == "4.2.0"
    assert merged[-1]["version"] == "4.1.1", "the initial entry is never pruned"
    assert "4.1.2" not in [h["version"] for h in merged], "the oldest unimportant entry goes first"


def test_prune_prefers_a_partial_within_a_z_stream() -> None:
    history = [_entry(f"4.1.{100 - i}") for i in range(MAX_HISTORY + 1)]
    history[95] = _entry("4.1.x", "Partial")  # between completed 4.1.6 and 4.1.4: a z-stream transition
    pruned = prune(history, MAX_HISTORY)
    assert len(pruned) == MAX_HISTORY
    assert "4.1.x" not in [h["version"] for h in pruned]
    assert pruned[99]["version"] == "4.1.0"


def test_prune_does_nothing_at_or_below_the_limit() -> None:
    history = [_entry(f"4.1.{i}") for i in range(MAX_HISTORY)]
    assert prune(history, MAX_HISTORY) == history


def test_current_version_is_the_first_completed_entry() -> None:
    history = [_entry("4.16.1", "Partial"), _entry("4.16.0"), _entry("4.15.0")]
    assert current_version(history) == "4.16.0"


def test_current_version_falls_back_to_the_oldest_entry() -> None:
    assert current_version([_entry("4.16.1", "Partial"), _entry("4.16.0", "Partial")]) == "4.16.0"
    assert current_version([]) == ""


# --- conditions ----------------------------------------------------------------------------------


def test_set_condition_moves_last_transition_time_only_on_a_status_change() -> None:
    conditions: list[dict[str, Any]] = []
    with freeze_time(T0) as frozen:
        set_condition(conditions, "Failing", "False", "", "", datetime.now(UTC))
        frozen.tick(timedelta(minutes=10))
        set_condition(conditions, "Failing", "False", "Why", "still false", datetime.now(UTC))
        assert conditions == [{"type": "Failing", "status": "False", "lastTransitionTime": to_rfc3339(T0),
                               "reason": "Why", "message": "still false"}]
        frozen.tick(timedelta(minutes=5))
        set_condition(conditions, "Failing", "True", "Boom", "now failing", datetime.now(UTC))
        assert conditions[0]["lastTransitionTime"] == to_rfc3339(T0 + minutes(15))
        assert conditions[0]["status"] == "True"
        set_condition(conditions, "Failing", "True", "", "", datetime.now(UTC))
        assert "reason" not in conditions[0] and "message" not in conditions[0]


def test_set_condition_keeps_existing_order_and_appends_new_types() -> None:
    conditions: list[dict[str, Any]] = []
    for type_ in ("Progressing", "Available", "Failing"):
        set_condition(conditions, type_, "False", "", "", T0)
    set_condition(conditions, "Available", "True", "", "", T0)
    set_condition(conditions, "ReleaseAccepted", "True", "", "", T0)
    assert [c["type"] for c in conditions] == ["Progressing", "Available", "Failing", "ReleaseAccepted"]


def test_status_update_keeps_transition_times_while_status_is_unchanged() -> None:
    with freeze_time(T0) as frozen:
        status = update_cluster_version_status({}, sync(done=1, total=10), datetime.now(UTC))
        frozen.tick(timedelta(minutes=7))
        status = update_cluster_version_status(status, sync(done=5, total=10), datetime.now(UTC))
        assert cond(status, "Progressing")["lastTransitionTime"] == to_rfc3339(T0)
        assert progressing(status)[2] == f"Working towards {V}: 5 of 10 done (50% complete)"
        frozen.tick(timedelta(minutes=7))
        status = update_cluster_version_status(status, sync(completed=1, reconciling=True), datetime.now(UTC))
        assert cond(status, "Progressing")["lastTransitionTime"] == to_rfc3339(T0 + minutes(14))
        assert cond(status, "Available")["lastTransitionTime"] == to_rfc3339(T0 + minutes(14))
        assert cond(status, "Failing")["lastTransitionTime"] == to_rfc3339(T0)


def test_new_status_has_every_default_condition() -> None:
    status = update_cluster_version_status({}, sync(), T0)
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("Available", "False"), ("Failing", "False"), ("Progressing", "True"), ("RetrievedUpdates", "False")]
    assert status["desired"] == {"version": V, "image": IMG}
    assert progressing(status) == ("True", "", f"Working towards {V}")


def test_existing_retrieved_updates_is_kept() -> None:
    start = {"conditions": [{"type": "RetrievedUpdates", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
    status = update_cluster_version_status(start, sync(), T0)
    assert cond(status, "RetrievedUpdates") == start["conditions"][0]


def test_release_accepted_is_its_own_part_applied_after_the_sync_report() -> None:
    from cvo.status.parts import Accepted, Sync, merge

    message = f'Payload loaded version="{V}" image="{IMG}" architecture="amd64"'
    status = update_cluster_version_status({}, sync(), T0)
    assert find_condition(status["conditions"], "ReleaseAccepted") is None  # the sync report alone does not set it
    parts = {"accepted": Accepted("True", "PayloadLoaded", message), "sync": Sync(sync())}
    status = merge(parts, {}, {"metadata": {"generation": 4}}, T0)
    assert cond(status, "ReleaseAccepted")["reason"] == "PayloadLoaded"
    assert cond(status, "ReleaseAccepted")["message"] == message
    assert status["observedGeneration"] == 4  # the ClusterVersion's generation, at the write


def test_generation_and_version_hash() -> None:
    status = update_cluster_version_status({}, sync(generation=3, version_hash="abc"), T0)
    assert status["observedGeneration"] == 3 and status["versionHash"] == "abc"
    again = update_cluster_version_status(status, sync(), T0)
    assert again["observedGeneration"] == 3 and again["versionHash"] == "abc"


def test_input_status_is_not_modified() -> None:
    start = upgrading_status()
    before = copy.deepcopy(start)
    update_cluster_version_status(start, sync(failure=degraded("a"), done=1, total=2), T0)
    assert start == before


def test_available_after_completion_and_kept_during_the_next_update() -> None:
    status = upgrading_status()
    assert cond(status, "Available")["status"] == "True"
    assert cond(status, "Available")["message"] == "Done applying 4.15.0"
    assert progressing(status) == ("False", "", "Cluster version is 4.15.0")
    status = update_cluster_version_status(status, sync(failure=cluster_operator_not_available("a", "")), T0)
    assert cond(status, "Available")["status"] == "True"
    assert cond(status, "Available")["message"] == "Done applying 4.15.0"
    assert cond(status, "Available")["lastTransitionTime"] == to_rfc3339(T0 - timedelta(days=1))


def test_version_text_falls_back_to_image_then_unknown() -> None:
    status = update_cluster_version_status({}, sync(version=""), T0)
    assert progressing(status)[2] == f"Working towards {IMG}"
    status = update_cluster_version_status({}, sync(version="", image=""), T0)
    assert progressing(status)[2] == "Working towards <unknown>"


# --- Progressing: working towards ----------------------------------------------------------------


@pytest.mark.parametrize(("done", "total", "text"), [
    (334, 1000, "334 of 1000 done (33% complete)"),
    (999, 1000, "999 of 1000 done (99% complete)"),
    (1, 3, "1 of 3 done (33% complete)"),
    (10, 10, "10 of 10 done (100% complete)"),
])
def test_working_towards_with_truncated_percent(done: int, total: int, text: str) -> None:
    status = update_cluster_version_status({}, sync(done=done, total=total), T0)
    assert progressing(status) == ("True", "", f"Working towards {V}: {text}")


def test_percent_is_computed_in_float32_like_the_cvo() -> None:
    """float32(53)/float32(100)*100 is 52.999996 in float32, which the CVO truncates to 52."""
    assert percent_complete(53, 100) == 52
    assert percent_complete(54, 100) == 54
    assert percent_complete(1, 2) == 50


def test_no_progress_numbers_without_a_total() -> None:
    status = update_cluster_version_status({}, sync(done=5, total=0), T0)
    assert progressing(status)[2] == f"Working towards {V}"


# --- None effect: waiting on / slow --------------------------------------------------------------


def test_updating_operators_are_shown_as_waiting_on() -> None:
    failure = updating("kube-apiserver", "etcd")
    assert failure.message == "Cluster operators etcd, kube-apiserver are updating versions"
    starts = {"etcd": T0 - minutes(5), "kube-apiserver": T0 - minutes(5)}
    status = update_cluster_version_status(upgrading_status(), sync(failure=failure, done=5, total=10,
                                                                     co_start_times=starts), T0)
    assert failing(status) == ("False", "", "")
    assert progressing(status) == ("True", "ClusterOperatorsUpdating",
                                   f"Working towards {V}: 5 of 10 done (50% complete), waiting on etcd, kube-apiserver")


def test_waiting_on_without_progress_numbers() -> None:
    status = update_cluster_version_status(upgrading_status(), sync(failure=updating("etcd")), T0)
    assert progressing(status) == ("True", "ClusterOperatorUpdating", f"Working towards {V}: waiting on etcd")


@pytest.mark.parametrize(("waited", "slow"), [(29, False), (30, False), (31, True)])
def test_slow_cluster_operator_after_30_minutes(waited: int, slow: bool) -> None:
    starts = {"a": T0 - minutes(waited), "b": T0 - minutes(waited)}
    status = update_cluster_version_status(upgrading_status(), sync(failure=updating("a", "b"), done=1, total=4,
                                                                     co_start_times=starts), T0)
    if slow:
        message = "waiting on a, b over 30 minutes which is longer than expected"
        assert failing(status) == ("Unknown", "SlowClusterOperator", message)
        assert progressing(status) == ("True", "ClusterOperatorsUpdating",
                                       f"Working towards {V}: 1 of 4 done (25% complete), {message}")
    else:
        assert failing(status) == ("False", "", "")
        assert progressing(status)[2].endswith(", waiting on a, b")


def test_only_the_slow_operators_are_named() -> None:
    starts = {"a": T0 - minutes(31), "b": T0 - minutes(2)}
    status = update_cluster_version_status(upgrading_status(), sync(failure=updating("a", "b"),
                                                                     co_start_times=starts), T0)
    assert failing(status)[2] == "waiting on a over 30 minutes which is longer than expected"


@pytest.mark.parametrize(("waited", "slow"), [(31, False), (89, False), (91, True)])
def test_machine_config_is_slow_after_90_minutes(waited: int, slow: bool) -> None:
    starts = {"machine-config": T0 - minutes(waited)}
    status = update_cluster_version_status(upgrading_status(), sync(failure=updating("machine-config"),
                                                                     co_start_times=starts), T0)
    if slow:
        assert failing(status) == ("Unknown", "SlowClusterOperator",
                                   "waiting on machine-config over 90 minutes which is longer than expected")
    else:
        assert failing(status) == ("False", "", "")
        assert progressing(status)[2] == f"Working towards {V}: waiting on machine-config"


def test_slow_operators_and_slow_machine_config_together() -> None:
    starts = {"a": T0 - minutes(45), "machine-config": T0 - minutes(100)}
    status = update_cluster_version_status(upgrading_status(), sync(failure=updating("a", "machine-config"),
                                                                     co_start_times=starts), T0)
    assert failing(status) == ("Unknown", "SlowClusterOperator", "waiting on a over 30 minutes and machine-config "
                               "over 90 minutes which is longer than expected")


def test_an_operator_without_a_start_time_is_not_slow() -> None:
    status = update_cluster_version_status(upgrading_status(), sync(failure=updating("a")), T0)
    assert failing(status) == ("False", "", "")


def test_thresholds_are_configurable_and_named_in_messages() -> None:
    starts = {"a": T0 - minutes(11)}
    status = update_cluster_version_status(upgrading_status(), sync(failure=updating("a"), co_start_times=starts), T0,
                                           slow_threshold=minutes(10))
    assert failing(status)[2] == "waiting on a over 10 minutes which is longer than expected"


def test_updating_while_reconciling_is_a_failure() -> None:
    failure = updating("a")
    status = update_cluster_version_status(upgrading_status(), sync(version="4.15.0", image=OLD_IMG, completed=1,
                                                                     reconciling=True, failure=failure), T0)
    assert failing(status) == ("True", "ClusterOperatorUpdating", "Cluster operator a is updating versions")
    assert progressing(status) == ("False", "ClusterOperatorUpdating",
                                   "Error while reconciling 4.15.0: the cluster operator a is updating versions")


# --- FailAfterInterval: degraded -----------------------------------------------------------------


@pytest.mark.parametrize(("waited", "exceeded"), [(39, False), (40, False), (41, True)])
def test_degraded_is_tolerated_for_40_minutes(waited: int, exceeded: bool) -> None:
    starts = {"a": T0 - minutes(waited)}
    status = update_cluster_version_status(upgrading_status(), sync(failure=degraded("a"), done=3, total=4,
                                                                     co_start_times=starts), T0)
    if exceeded:
        assert failing(status) == ("True", "ClusterOperatorDegraded", "Cluster operator a is degraded")
        assert progressing(status) == ("True", "ClusterOperatorDegraded",
                                       f"Unable to apply {V}: wait has exceeded 40 minutes for these operators: a")
    else:
        assert failing(status) == ("False", "", "")
        assert progressing(status) == ("True", "ClusterOperatorDegraded",
                                       f"Working towards {V}: 3 of 4 done (75% complete), waiting up to 40 minutes on a")


def test_degraded_without_a_start_time_has_exceeded_at_once() -> None:
    status = update_cluster_version_status(upgrading_status(), sync(failure=degraded("a")), T0)
    assert failing(status)[0] == "True"
    assert progressing(status)[2] == f"Unable to apply {V}: wait has exceeded 40 minutes for these operators: a"


def test_condensed_degraded_names_only_the_exceeded_operators() -> None:
    starts = {"a": T0 - minutes(50), "b": T0 - minutes(5)}
    status = update_cluster_version_status(upgrading_status(), sync(failure=degraded("b", "a"),
                                                                     co_start_times=starts), T0)
    assert failing(status) == ("True", "ClusterOperatorsDegraded", "Cluster operators a, b are degraded")
    assert progressing(status)[2] == f"Unable to apply {V}: wait has exceeded 40 minutes for these operators: a"


def test_condensed_degraded_within_the_interval() -> None:
    starts = {"a": T0 - minutes(5), "b": T0 - minutes(5)}
    status = update_cluster_version_status(upgrading_status(), sync(failure=degraded("a", "b"),
                                                                     co_start_times=starts), T0)
    assert progressing(status)[2] == f"Working towards {V}: waiting up to 40 minutes on a, b"


def test_degraded_while_reconciling() -> None:
    status = update_cluster_version_status(upgrading_status(), sync(version="4.15.0", image=OLD_IMG, completed=1,
                                                                     reconciling=True, failure=degraded("a")), T0)
    assert failing(status) == ("True", "ClusterOperatorDegraded", "Cluster operator a is degraded")
    assert progressing(status) == ("False", "ClusterOperatorDegraded",
                                   "Error while reconciling 4.15.0: the cluster operator a is degraded")


# --- Fail and Report -----------------------------------------------------------------------------


def test_not_available_fails_at_once() -> None:
    starts = {"a": T0}
    status = update_cluster_version_status(upgrading_status(), sync(failure=cluster_operator_not_available("a", ""),
                                                                     done=1, total=2, co_start_times=starts), T0)
    assert failing(status) == ("True", "ClusterOperatorNotAvailable", "Cluster operator a is not available")
    assert progressing(status) == ("True", "ClusterOperatorNotAvailable",
                                   f"Unable to apply {V}: the cluster operator a is not available")


def test_apply_error_summary() -> None:
    failure = wrap_apply_error(RuntimeError("boom"), 'deployment "ns/x" (3 of 9)')
    status = update_cluster_version_status(upgrading_status(), sync(failure=failure), T0)
    assert failing(status) == ("True", "UpdatePayloadFailed", 'Could not update deployment "ns/x" (3 of 9)')
    assert progressing(status)[2] == f"Unable to apply {V}: the update could not be applied"


def test_a_plain_exception_is_an_error_occurred() -> None:
    status = update_cluster_version_status(upgrading_status(), sync(failure=RuntimeError("disk on fire")), T0)
    assert failing(status) == ("True", "", "disk on fire")
    assert progressing(status) == ("True", "", f"Unable to apply {V}: an error occurred")


def test_install_report_effect_is_a_failure_with_the_error_message() -> None:
    failure = degraded("network", install=True)
    assert failure.effect == Effect.REPORT
    status = update_cluster_version_status({}, sync(failure=failure, initial=True, done=9, total=10), T0)
    assert failing(status) == ("True", "ClusterOperatorDegraded", "Cluster operator network is degraded")
    assert progressing(status) == ("True", "ClusterOperatorDegraded",
                                   f"Unable to apply {V}: Cluster operator network is degraded")
    assert cond(status, "Available")["status"] == "False"


# --- MultipleErrors ------------------------------------------------------------------------------


def test_multiple_errors_filter_waiting_on_out_of_failing() -> None:
    errors = [cluster_operator_updating("a", ""), cluster_operator_updating("b", ""),
              cluster_operator_not_available("c", ""),
              wrap_apply_error(RuntimeError("x"), 'configmap "ns/y" (4 of 9)')]
    failure = summarize(errors)
    assert failure is not None and failure.reason == "MultipleErrors"
    assert "Cluster operators a, b are updating versions" in failure.message
    status = update_cluster_version_status(upgrading_status(), sync(failure=failure, errors=errors), T0)
    assert failing(status) == ("True", "MultipleErrors", "Multiple errors are preventing progress:\n"
                               "* Cluster operator c is not available\n"
                               '* Could not update configmap "ns/y" (4 of 9)')
    assert progressing(status) == ("True", "MultipleErrors",
                                   f"Unable to apply {V}: an unknown error has occurred: MultipleErrors")


def test_multiple_errors_filtered_to_one_error() -> None:
    errors = [cluster_operator_updating("a", ""), cluster_operator_not_available("c", "")]
    failure = summarize(errors)
    status = update_cluster_version_status(upgrading_status(), sync(failure=failure, errors=errors), T0)
    assert failing(status) == ("True", "ClusterOperatorNotAvailable", "Cluster operator c is not available")


def test_multiple_errors_with_only_none_effects_leave_failing_false() -> None:
    errors = [UpdateError("SomethingPending", "x is pending", Effect.NONE),
              UpdateError("OtherPending", "y is pending", Effect.NONE)]
    failure = summarize(errors)
    status = update_cluster_version_status(upgrading_status(), sync(failure=failure, errors=errors), T0)
    assert failing(status) == ("False", "", "")
    assert progressing(status)[2] == f"Unable to apply {V}: an unknown error has occurred: MultipleErrors"


def test_multiple_errors_are_not_filtered_while_reconciling() -> None:
    errors = [cluster_operator_updating("a", ""), cluster_operator_not_available("c", "")]
    failure = summarize(errors)
    assert failure is not None
    status = update_cluster_version_status(upgrading_status(), sync(version="4.15.0", image=OLD_IMG, completed=1,
                                                                     reconciling=True, failure=failure,
                                                                     errors=errors), T0)
    assert failing(status) == ("True", "MultipleErrors", failure.message)
    assert progressing(status) == ("False", "MultipleErrors",
                                   "Error while reconciling 4.15.0: an unknown error has occurred: MultipleErrors")


# --- the object ----------------------------------------------------------------------------------


def test_cluster_version_object() -> None:
    cv = cluster_version_object()
    cluster_id = cv["spec"].pop("clusterID")
    assert str(uuid.UUID(cluster_id)) == cluster_id  # the CRD requires spec.clusterID
    assert cv == {
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
        "spec": {"overrides": []}, "status": {}}
    assert cluster_version_object()["spec"]["clusterID"] != cluster_id
    cv = cluster_version_object("other", cluster_id="abc", desired_update={"image": IMG})
    assert cv["metadata"]["name"] == "other"
    assert cv["spec"] == {"clusterID": "abc", "desiredUpdate": {"image": IMG}, "overrides": []}
