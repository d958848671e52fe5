"""Upgrade preconditions (pkg/payload/precondition/clusterversion/*.go) and minor vs patch: every check, every message, the summary.

The checks read the ClusterVersion: ``status.desired.version`` is "current", ``status.history``
(newest first) gives the previous version, the ``Upgradeable`` condition gates minor and major
updates, ``spec.overrides`` turns the patch-update pass into a warning.
"""

from __future__ import annotations

from typing import Any

import pytest

from cvo.cli.gates import update_kind
from cvo.gates import preconditions
from cvo.gates.preconditions import PreconditionError, Verdict, force_only_named, run_checks, summarize
from cvo.objects import ClusterVersion

ROLLBACK = "ClusterVersionRollback"
GIANT_HOP = "ClusterVersionGiantHop"
UPGRADEABLE = "ClusterVersionUpgradeable"
RECOMMENDED = "ClusterVersionRecommendedUpdate"


def image(version: str) -> str:
    return f"quay.io/demo/release@sha256:{version.replace('.', '')}"


def entry(version: str, state: str = "Completed", img: str | None = None) -> dict[str, Any]:
    return {"state": state, "version": version, "image": img or image(version), "verified": False}


def cv(current: str = "4.16.0", history: list[dict[str, Any]] | None = None,
       conditions: list[dict[str, Any]] | None = None, overrides: list[dict[str, Any]] | None = None,
       desired_image: str | None = None, channel: str = "", available: list[str] | None = None,
       conditional: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A ClusterVersion at ``current`` (``history`` defaults to one Completed entry for it); ``available``: the
    versions of ``status.availableUpdates``, ``conditional``: ``status.conditionalUpdates``."""
    status: dict[str, Any] = {"desired": {"version": current, "image": desired_image or image(current)},
                              "history": [entry(current)] if history is None else history,
                              "conditions": conditions or []}
    if available is not None:
        status["availableUpdates"] = [{"version": v, "image": image(v)} for v in available]
    if conditional is not None:
        status["conditionalUpdates"] = conditional
    return {
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
        "spec": {"overrides": overrides or [], **({"channel": channel} if channel else {})},
        "status": status,
    }


def not_upgradeable(reason: str = "ClusterOperatorsNotUpgradeable",
                    message: str = "Cluster operator etcd should not be upgraded between minor versions: migrating",
                    ) -> dict[str, Any]:
    return {"type": "Upgradeable", "status": "False", "reason": reason, "message": message,
            "lastTransitionTime": "2025-07-01T00:00:00Z"}


def check_rollback(obj: dict[str, Any], target: str) -> PreconditionError | None:
    return preconditions.check_rollback(ClusterVersion.read(obj), target)


def check_giant_hop(obj: dict[str, Any], target: str) -> PreconditionError | None:
    return preconditions.check_giant_hop(ClusterVersion.read(obj), target)


def check_upgradeable(obj: dict[str, Any], target: str) -> PreconditionError | None:
    return preconditions.check_upgradeable(ClusterVersion.read(obj), target)


def check_recommended(obj: dict[str, Any], target: str) -> PreconditionError | None:
    return preconditions.check_recommended(ClusterVersion.read(obj), target)


UNMANAGED = [{"kind": "Deployment", "group": "apps", "namespace": "openshift-etcd-operator",
              "name": "etcd-operator", "unmanaged": True}]


# --- ClusterVersionRollback -------------------------------------------------------------------------


def test_rollback_an_update_forwards_or_a_retarget_passes() -> None:
    assert check_rollback(cv("4.16.0"), "4.16.3") is None
    assert check_rollback(cv("4.16.0"), "4.17.0") is None
    assert check_rollback(cv("4.16.0"), "4.16.0") is None


def test_rollback_without_a_previous_version_is_blocked() -> None:
    err = check_rollback(cv("4.16.3"), "4.16.0")
    assert err == PreconditionError(
        ROLLBACK, "LowDesiredVersion",
        "4.16.0 is less than the current target 4.16.3, and the cluster has no previous Semantic Version")
    assert err.blocking


def test_rollback_when_the_previous_history_entry_is_not_a_semantic_version() -> None:
    history = [entry("4.16.3"), entry("not-a-version")]
    err = check_rollback(cv("4.16.3", history), "4.16.0")
    assert err is not None and err.blocking
    assert err.reason == "LowDesiredVersion"
    assert err.message.endswith("and the cluster has no previous Semantic Version")


def test_z_stream_rollback_to_the_previous_version_is_allowed() -> None:
    history = [entry("4.16.3"), entry("4.16.0")]
    assert check_rollback(cv("4.16.3", history), "4.16.0") is None


def test_rollback_only_to_the_previous_version() -> None:
    history = [entry("4.16.5"), entry("4.16.3"), entry("4.16.0")]
    err = check_rollback(cv("4.16.5", history), "4.16.0")
    assert err == PreconditionError(
        ROLLBACK, "LowDesiredVersion",
        "4.16.0 is less than the current target 4.16.5, and the only supported rollback is to the cluster's "
        f"previous version 4.16.3 ({image('4.16.3')})")
    assert err.blocking


def test_rollback_previous_is_the_first_entry_whose_version_or_image_differs() -> None:
    # The same version from another image counts as "previous" (the CVO compares (version, image)).
    history = [entry("4.16.3", img="img-b"), entry("4.16.3", img="img-a"), entry("4.16.0")]
    err = check_rollback(cv("4.16.3", history, desired_image="img-b"), "4.16.0")
    assert err is not None and err.reason == "LowDesiredVersion"
    assert err.message.endswith("the only supported rollback is to the cluster's previous version 4.16.3 (img-a)")
    # A partial entry for the current release is skipped too: the previous one is 4.16.0.
    history = [entry("4.16.3", "Partial"), entry("4.16.0")]
    assert check_rollback(cv("4.16.3", history), "4.16.0") is None


def test_minor_rollback_to_the_previous_version_is_not_recommended() -> None:
    history = [entry("4.17.0"), entry("4.16.3")]
    err = check_rollback(cv("4.17.0", history), "4.16.3")
    assert err == PreconditionError(
        ROLLBACK, "LowDesiredVersion",
        "4.16.3 is less than the current target 4.17.0 and matches the cluster's previous version, but rollbacks "
        "that change major or minor versions are not recommended")
    assert err.blocking


def test_major_rollback_to_the_previous_version_is_not_recommended() -> None:
    history = [entry("5.0.0"), entry("4.22.3")]
    err = check_rollback(cv("5.0.0", history), "4.22.3")
    assert err is not None and err.blocking and err.reason == "LowDesiredVersion"
    assert "rollbacks that change major or minor versions are not recommended" in err.message


def test_rollback_invalid_versions() -> None:
    """The message is blang/semver's own error, as the CVO's ``err.Error()`` (pkg/payload/precondition/
    clusterversion/rollback.go, gianthop.go, upgradeable.go)."""
    current = check_rollback(cv("banana"), "4.16.0")
    assert current is not None and current.reason == "InvalidCurrentVersion" and not current.blocking
    assert current.message == "No Major.Minor.Patch elements found"
    target = check_rollback(cv("4.16.0"), "4.16")
    assert target is not None and target.reason == "InvalidDesiredVersion" and target.blocking
    assert target.message == "No Major.Minor.Patch elements found"
    hop = check_giant_hop(cv("4.16.0"), "4.x.0")
    assert hop is not None and hop.message == 'Invalid character(s) found in minor number "x"'


# --- ClusterVersionGiantHop -------------------------------------------------------------------------


@pytest.mark.parametrize(("current", "target"), [
    ("4.16.0", "4.16.3"), ("4.16.0", "4.17.0"), ("4.16.9", "4.17.0"), ("4.16.0", "4.16.0"),
    ("4.17.0", "4.16.3"),  # a rollback is the Rollback check's business
])
def test_giant_hop_passes_within_one_minor(current: str, target: str) -> None:
    assert check_giant_hop(cv(current), target) is None


def test_giant_hop_multiple_minor_versions() -> None:
    err = check_giant_hop(cv("4.16.0"), "4.18.0")
    assert err == PreconditionError(
        GIANT_HOP, "MultipleMinorVersionsUpdate",
        "4.18.0 is more than one minor version beyond the current target 4.16.0 (4.18 > 4.(16+1)), and only "
        "updates within the current minor version or to the next minor version are supported.")
    assert err.blocking
    assert check_giant_hop(cv("5.0.2"), "5.2.0").reason == "MultipleMinorVersionsUpdate"  # type: ignore[union-attr]


def test_giant_hop_major_version_update() -> None:
    err = check_giant_hop(cv("3.11.0"), "4.1.0")
    assert err == PreconditionError(
        GIANT_HOP, "MajorVersionUpdate",
        "4.1.0 has a larger major version than the current target 3.11.0 (4 > 3), and only updates within the "
        "current major version are supported.")
    assert err.blocking
    two = check_giant_hop(cv("4.22.0"), "6.0.0")
    assert two is not None and two.reason == "MajorVersionUpdate" and two.blocking


@pytest.mark.parametrize("target", ["5.0.0", "5.0.7", "5.0.0-rc.1"])
@pytest.mark.parametrize("current", ["4.18.3", "4.22.0", "4.1.0"])
def test_giant_hop_allows_4_to_5_0(current: str, target: str) -> None:
    """The CVO's temporary exception: 4.x → 5.0.z is allowed, whatever x."""
    assert check_giant_hop(cv(current), target) is None


def test_giant_hop_4_to_5_1_is_an_error() -> None:
    err = check_giant_hop(cv("4.22.0"), "5.1.0")
    assert err is not None and err.blocking
    assert (err.name, err.reason) == (GIANT_HOP, "MajorVersionUpdate")
    assert err.message.startswith("5.1.0 has a larger major version than the current target 4.22.0 (5 > 4)")


# --- ClusterVersionUpgradeable ---------------------------------------------------------------------


@pytest.mark.parametrize("conditions", [
    [],
    [{"type": "Upgradeable", "status": "True", "reason": "AsExpected"}],
    [{"type": "Upgradeable", "status": "Unknown", "reason": "EvaluationFailed"}],
    [{"type": "Failing", "status": "False"}],
])
def test_upgradeable_passes_without_upgradeable_false(conditions: list[dict[str, Any]]) -> None:
    assert check_upgradeable(cv("4.16.0", conditions=conditions), "4.17.0") is None
    assert check_upgradeable(cv("4.22.0", conditions=conditions), "5.0.0") is None


def test_upgradeable_false_blocks_a_minor_update_with_the_conditions_reason_and_message() -> None:
    cond = not_upgradeable("StorageMigration", "Cluster operator etcd should not be upgraded: migrating")
    err = check_upgradeable(cv("4.16.0", conditions=[cond]), "4.17.0")
    assert err == PreconditionError(UPGRADEABLE, "StorageMigration",
                                    "Cluster operator etcd should not be upgraded: migrating")
    assert err.blocking
    assert err.render() == ('Precondition "ClusterVersionUpgradeable" failed because of "StorageMigration": '
                            "Cluster operator etcd should not be upgraded: migrating")


def test_upgradeable_false_blocks_a_major_update() -> None:
    err = check_upgradeable(cv("4.22.1", conditions=[not_upgradeable("MultipleReasons", "m")]), "5.0.0")
    assert err == PreconditionError(UPGRADEABLE, "MultipleReasons", "m")
    assert err.blocking


@pytest.mark.parametrize(("current", "target"), [
    ("4.16.0", "4.16.3"),  # patch
    ("4.16.0", "4.16.0"),  # retarget
    ("4.16.3", "4.16.0"),  # z-stream downgrade
    ("4.17.0", "4.16.3"),  # minor downgrade (the Rollback check decides)
    ("4.16.0-rc.1", "4.16.0"),  # pre-release to GA: same minor
])
def test_upgradeable_false_lets_patches_retargets_and_downgrades_through(current: str, target: str) -> None:
    assert check_upgradeable(cv(current, conditions=[not_upgradeable()]), target) is None


def test_overrides_turn_a_patch_update_into_a_non_blocking_warning() -> None:
    """OTA-1860: a patch update with unmanaged overrides is a warning, not a block (it blocked from 2020)."""
    state = cv("4.16.0", conditions=[not_upgradeable("ClusterVersionOverridesSet", "Disabling ownership ...")],
               overrides=UNMANAGED)
    err = check_upgradeable(state, "4.16.3")
    assert err is not None
    assert (err.name, err.reason, err.blocking) == (UPGRADEABLE, "ClusterVersionOverridesSet", False)
    assert err.message.startswith("Retarget from 4.16.0 to 4.16.3 is not blocked by ClusterVersionOverridesSet. "
                                  "But the cluster-version operator is not managing these resources;")
    # The same for a retarget and a downgrade.
    assert check_upgradeable(state, "4.16.0").reason == "ClusterVersionOverridesSet"  # type: ignore[union-attr]
    downgrade = check_upgradeable(cv("4.16.3", conditions=[not_upgradeable()], overrides=UNMANAGED), "4.16.0")
    assert downgrade is not None and not downgrade.blocking
    assert downgrade.message.startswith("Retarget from 4.16.3 to 4.16.0 is not blocked")


def test_overrides_still_block_a_minor_update_with_the_conditions_reason() -> None:
    state = cv("4.16.0", conditions=[not_upgradeable("ClusterVersionOverridesSet", "remove overrides")],
               overrides=UNMANAGED)
    err = check_upgradeable(state, "4.17.0")
    assert err == PreconditionError(UPGRADEABLE, "ClusterVersionOverridesSet", "remove overrides")
    assert err.blocking


def test_managed_overrides_do_not_warn() -> None:
    managed = [{**UNMANAGED[0], "unmanaged": False}]
    assert check_upgradeable(cv("4.16.0", conditions=[not_upgradeable()], overrides=managed), "4.16.3") is None


def test_overrides_without_upgradeable_false_are_not_this_checks_business() -> None:
    assert check_upgradeable(cv("4.16.0", overrides=UNMANAGED), "4.16.3") is None


def test_upgradeable_invalid_current_version_is_a_warning() -> None:
    err = check_upgradeable(cv("not-semver", conditions=[not_upgradeable()]), "4.17.0")
    assert err is not None
    assert (err.name, err.reason, err.blocking) == (UPGRADEABLE, "InvalidCurrentVersion", False)


def test_upgradeable_invalid_target_version_blocks() -> None:
    err = check_upgradeable(cv("4.16.0", conditions=[not_upgradeable()]), "4.17")
    assert err is not None
    assert (err.name, err.reason, err.blocking) == (UPGRADEABLE, "InvalidDesiredVersion", True)


def _updating(partial: str, completed: str) -> dict[str, Any]:
    """A ClusterVersion in the middle of an update from ``completed`` to ``partial``, Upgradeable=False."""
    return cv(partial, history=[entry(partial, "Partial"), entry(completed)],
              conditions=[not_upgradeable(), {"type": "Progressing", "status": "True",
                                              "message": f"Working towards {partial}"}])


def test_patch_retarget_during_a_minor_update_is_an_accepted_risk() -> None:
    """pkg/payload/precondition/clusterversion/upgradeable.go: retargeting to a patch of the new minor while the minor update runs is a non-blocking warning."""
    err = check_upgradeable(_updating("4.17.0", "4.16.3"), "4.17.1")
    assert err == PreconditionError(UPGRADEABLE, "MinorVersionClusterUpdateInProgress",
                                    "Retarget to 4.17.1 while a minor version update from 4.16.3 to 4.17.0 is in "
                                    "progress", blocking=False)


def test_in_progress_falls_back_to_the_oldest_history_entry_when_none_is_completed() -> None:
    """``minorUpdateIsInProgress`` takes the current version from ``GetCurrentVersion``
    (pkg/payload/precondition/clusterversion/upgradeable.go): the first Completed entry, else the oldest one.
    An install of 4.16.3 that never completed, then an update to 4.17.0: 4.16.3 is where it came from."""
    updating = cv("4.17.0", history=[entry("4.17.0", "Partial"), entry("4.16.3", "Partial")],
                  conditions=[not_upgradeable(), {"type": "Progressing", "status": "True"}])
    err = check_upgradeable(updating, "4.17.1")
    assert err == PreconditionError(UPGRADEABLE, "MinorVersionClusterUpdateInProgress",
                                    "Retarget to 4.17.1 while a minor version update from 4.16.3 to 4.17.0 is in "
                                    "progress", blocking=False)


def test_patch_retarget_during_a_major_update_is_an_accepted_risk() -> None:
    err = check_upgradeable(_updating("5.0.0", "4.22.1"), "5.0.1")
    assert err is not None and not err.blocking
    assert err.reason == "MajorVersionClusterUpdateInProgress"
    assert "Retarget to 5.0.1 while a major version update from 4.22.1 to 5.0.0 is in progress" in err.message


def test_patch_retarget_during_a_patch_update_passes() -> None:
    assert check_upgradeable(_updating("4.16.3", "4.16.0"), "4.16.4") is None


# --- ClusterVersionRecommendedUpdate ----------------------------------------------------------------


def conditional(version: str, *conditions: dict[str, Any]) -> dict[str, Any]:
    return {"release": {"version": version, "image": image(version)}, "risks": [], "conditions": list(conditions)}


def recommended(status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": "Recommended", "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2025-07-01T00:00:00Z"}


def retrieved(status: str, reason: str, message: str = "m") -> dict[str, Any]:
    return {"type": "RetrievedUpdates", "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2025-07-01T00:00:00Z"}


# recommendedupdate_test.go's cases: the cluster at 4.3.0, the target 4.3.2, channel set.
@pytest.mark.parametrize(("state", "reason", "expected"), [
    (cv("4.3.0", channel="stable-4.3", available=["4.3.2"]), "", ""),
    (cv("4.3.0", channel="stable-4.3"), "UnknownUpdate",
     "No RetrievedUpdates, so the recommended status of updating from 4.3.0 to 4.3.2 is unknown."),
    (cv("4.3.0", channel="stable-4.3", conditional=[conditional("4.3.2", recommended(
        "True", "RecommendedReason", "For some reason, this update is recommended."))]), "", ""),
    (cv("4.3.0", channel="stable-4.3", conditional=[conditional("4.3.2", recommended(
        "False", "FalseReason", "For some reason, this update is not recommended."))]), "FalseReason",
     "Update from 4.3.0 to 4.3.2 is not recommended:\n\nFor some reason, this update is not recommended."),
    (cv("4.3.0", channel="stable-4.3", conditional=[conditional("4.3.2", recommended(
        "Unknown", "UnknownReason", "For some reason, we cannot decide if this update is recommended."))]),
     "UnknownReason", "Update from 4.3.0 to 4.3.2 is Recommended=Unknown: UnknownReason: For some reason, we cannot "
                      "decide if this update is recommended."),
    (cv("4.3.0", channel="stable-4.3", conditional=[conditional("4.3.2", {"type": "Other", "status": "True",
                                                                           "reason": "NotUsed", "message": "Not used."})]),
     "UnknownConditionType", "Update from 4.3.0 to 4.3.2 has a status.conditionalUpdates entry, but no Recommended "
                             "condition."),
    (cv("4.3.0", channel="stable-4.3", conditions=[retrieved("True", "TrueReason", "Not used.")]), "UnknownUpdate",
     "RetrievedUpdates=True (TrueReason), so the update from 4.3.0 to 4.3.2 is probably neither recommended nor "
     "supported."),
    (cv("4.3.0", channel="stable-4.3", conditions=[retrieved("False", "FalseReason")]), "UnknownUpdate",
     "RetrievedUpdates=False (FalseReason), so the recommended status of updating from 4.3.0 to 4.3.2 is unknown."),
    (cv("4.3.0", conditions=[retrieved("False", "NoChannel")]), "NoChannel",
     "Configured channel is unset, so the recommended status of updating from 4.3.0 to 4.3.2 is unknown."),
])
def test_recommended_update(state: dict[str, Any], reason: str, expected: str) -> None:
    err = check_recommended(state, "4.3.2")
    if not expected:
        assert err is None
        return
    assert err == PreconditionError(RECOMMENDED, reason, expected, blocking=False)
    assert err.render() == f'Precondition "{RECOMMENDED}" failed because of "{reason}": {expected}'


def test_recommended_update_an_available_update_wins_over_no_channel() -> None:
    assert check_recommended(cv("4.3.0", available=["4.3.1", "4.3.2"]), "4.3.2") is None
    assert check_recommended(cv("4.3.0", available=["4.3.1"]), "4.3.2") is not None


def test_recommended_update_the_first_conditional_entry_of_the_target_decides() -> None:
    state = cv("4.3.0", channel="c", conditional=[
        conditional("4.3.1", recommended("False", "Other", "x")),
        conditional("4.3.2", recommended("False", "Risky", "first")),
        conditional("4.3.2", recommended("True", "Fine", "second"))])
    err = check_recommended(state, "4.3.2")
    assert err is not None and err.reason == "Risky" and err.message.endswith("\n\nfirst")


# --- summarize (precondition.Summarize) -------------------------------------------------------------


A = PreconditionError("ClusterVersionGiantHop", "MultipleMinorVersionsUpdate", "too far")
B = PreconditionError("ClusterVersionUpgradeable", "Migrating", "etcd migrates")
W = PreconditionError("ClusterVersionRecommendedUpdate", "UnknownUpdate", "not listed", blocking=False)


def test_summarize_nothing() -> None:
    verdict = summarize([], force=False)
    assert verdict == Verdict((), False, "")
    assert verdict.accepted_risks == ""
    assert summarize([], force=True) == Verdict((), False, "")


def test_summarize_one_blocking_error() -> None:
    verdict = summarize([B], force=False)
    assert verdict.message == 'Precondition "ClusterVersionUpgradeable" failed because of "Migrating": etcd migrates'
    assert verdict.blocked and not verdict.forced
    assert verdict.accepted_risks == ""


def test_summarize_several_errors() -> None:
    verdict = summarize([A, B], force=False)
    assert verdict.message == (
        "Multiple precondition checks failed:\n"
        '* Precondition "ClusterVersionGiantHop" failed because of "MultipleMinorVersionsUpdate": too far\n'
        '* Precondition "ClusterVersionUpgradeable" failed because of "Migrating": etcd migrates')
    assert verdict.blocked
    assert verdict.errors == (A, B)


def test_summarize_blocks_when_any_error_blocks() -> None:
    assert summarize([W, B], force=False).blocked
    assert not summarize([W], force=False).blocked


def test_summarize_warnings_only_are_accepted_risks() -> None:
    verdict = summarize([W], force=False)
    assert not verdict.blocked and not verdict.forced
    assert verdict.message == ('Precondition "ClusterVersionRecommendedUpdate" failed because of "UnknownUpdate": '
                               "not listed")
    assert verdict.accepted_risks == verdict.message


def test_force_turns_blocking_failures_into_an_accepted_risk() -> None:
    verdict = summarize([A, W], force=True)
    assert not verdict.blocked and verdict.forced
    assert verdict.message == (
        "Forced through blocking failures: Multiple precondition checks failed:\n"
        '* Precondition "ClusterVersionGiantHop" failed because of "MultipleMinorVersionsUpdate": too far\n'
        '* Precondition "ClusterVersionRecommendedUpdate" failed because of "UnknownUpdate": not listed')
    assert verdict.accepted_risks == verdict.message
    single = summarize([B], force=True)
    assert single.message == ('Forced through blocking failures: Precondition "ClusterVersionUpgradeable" failed '
                              'because of "Migrating": etcd migrates')


def test_force_without_blocking_failures_changes_nothing() -> None:
    assert summarize([W], force=True) == summarize([W], force=False)
    assert not summarize([W], force=True).forced


# --- run_checks: every check runs, in the CVO's order -----------------------------------------------


def test_all_checks_run_in_order() -> None:
    state = cv("4.16.0", conditions=[not_upgradeable("Migrating", "etcd migrates")], available=["4.17.0"])
    verdict = run_checks(state, "4.18.0")
    assert [e.name for e in verdict.errors] == [GIANT_HOP, UPGRADEABLE, RECOMMENDED]
    assert verdict.blocked
    assert verdict.message.startswith("Multiple precondition checks failed:\n* Precondition \"ClusterVersionGiantHop\"")
    rollback = run_checks(cv("4.16.3", conditions=[not_upgradeable()]), "4.15.0")
    assert [e.name for e in rollback.errors] == [ROLLBACK, RECOMMENDED]


def test_run_checks_patch_update_with_upgradeable_false_passes() -> None:
    verdict = run_checks(cv("4.16.0", conditions=[not_upgradeable()], available=["4.16.3"]), "4.16.3")
    assert verdict == Verdict((), False, "")


def test_run_checks_force() -> None:
    verdict = run_checks(cv("4.16.0", conditions=[not_upgradeable("Migrating", "m")], available=["4.17.0"]), "4.17.0",
                         force=True)
    assert not verdict.blocked and verdict.forced
    assert verdict.accepted_risks == ('Forced through blocking failures: Precondition "ClusterVersionUpgradeable" '
                                      'failed because of "Migrating": m')


def test_run_checks_no_channel_warns_and_is_recorded() -> None:
    verdict = run_checks(cv("4.16.0"), "4.16.3")
    assert not verdict.blocked
    assert verdict.accepted_risks == ('Precondition "ClusterVersionRecommendedUpdate" failed because of "NoChannel": '
                                      "Configured channel is unset, so the recommended status of updating from 4.16.0 "
                                      "to 4.16.3 is unknown.")


# --- minor vs patch (pkg/payload/precondition/clusterversion/upgradeable.go) ------------------------------


@pytest.mark.parametrize(("current", "target", "kind"), [
    ("4.16.0", "4.16.3", "patch update"),
    ("4.16.0", "4.17.0", "minor update"),
    ("4.16.9", "4.18.0", "minor update"),
    ("4.22.0", "5.0.0", "major update"),
    ("4.16.0", "4.16.0", "re-target"),
    ("4.16.3", "4.16.0", "rollback"),
    ("4.17.0", "4.16.3", "rollback"),
    ("4.16.0-rc.1", "4.16.0", "patch update"),
    ("garbage", "4.16.0", "update"),
])
def test_update_kind(current: str, target: str, kind: str) -> None:
    assert update_kind(current, target) == kind


# --- blocks that only --force passes ---------------------------------------------------------------------------


@pytest.mark.parametrize(("obj", "target", "names"), [
    (cv("4.17.0", history=[entry("4.17.0"), entry("4.16.0")]), "4.16.3", [ROLLBACK]),  # not the previous version
    (cv("4.16.0", history=[entry("4.16.0"), entry("4.15.0")]), "4.15.0", [ROLLBACK]),  # to the previous minor
    (cv("4.16.3", history=[entry("4.16.3"), entry("4.16.0")]), "4.16.0", []),  # a z-stream rollback passes
    (cv("4.14.0"), "4.16.0", [GIANT_HOP]),
    (cv("4.16.0"), "5.1.0", [GIANT_HOP]),
    (cv("4.16.0"), "not-a-version", [ROLLBACK, GIANT_HOP]),
])
def test_force_only_blocks_are_those_no_cluster_change_clears(obj: dict[str, Any], target: str,
                                                             names: list[str]) -> None:
    verdict = run_checks(obj, target)
    assert [e.name for e in verdict.force_only] == names
    assert run_checks(obj, target, force=True).force_only == ()  # forced: nothing blocks any more


def test_upgradeable_false_is_not_force_only_it_clears_when_the_operator_or_an_admin_says_so() -> None:
    verdict = run_checks(cv("4.16.0", conditions=[not_upgradeable()]), "4.17.0")
    assert verdict.blocked and [e.name for e in verdict.errors if e.blocking] == [UPGRADEABLE]
    assert verdict.force_only == ()
    both = run_checks(cv("4.16.0", conditions=[not_upgradeable()]), "4.18.0")
    assert [e.name for e in both.errors if e.blocking] == [GIANT_HOP, UPGRADEABLE]
    assert [e.name for e in both.force_only] == [GIANT_HOP]  # the giant hop stays, whatever etcd says


def test_an_unparsable_target_blocks_for_good_an_unparsable_current_version_only_warns() -> None:
    error = PreconditionError(UPGRADEABLE, "InvalidDesiredVersion", "No Major.Minor.Patch elements found")
    assert error.force_only
    assert not PreconditionError(ROLLBACK, "InvalidCurrentVersion", "x", blocking=False).force_only
    assert summarize([error, PreconditionError(ROLLBACK, "InvalidCurrentVersion", "x", blocking=False)],
                     force=False).force_only == (error,)


def test_force_only_checks_are_read_back_from_the_summary_release_accepted_carries() -> None:
    hop = run_checks(cv("4.16.0", conditions=[not_upgradeable()]), "4.18.0")
    assert force_only_named(hop.message) == [GIANT_HOP]
    assert force_only_named(run_checks(cv("4.16.0", conditions=[not_upgradeable()]), "4.17.0").message) == []
    warned = PreconditionError(ROLLBACK, "InvalidCurrentVersion", "No Major.Minor.Patch elements found", blocking=False)
    assert force_only_named(summarize([warned], force=False).message) == []  # a warning, not a block
    assert force_only_named(run_checks(cv("4.16.0"), "x").message) == [ROLLBACK, GIANT_HOP]
