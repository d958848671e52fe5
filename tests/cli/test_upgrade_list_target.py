"""Which release ``cvo upgrade --to VERSION | --to-image | --to-latest`` takes from the status, as oc picks it
(openshift/oc pkg/cli/admin/upgrade/upgrade.go ``Run``), with oc's refusals and warnings word for word; oc's
own ``upgrade_test.go`` (the sort, ``checkForUpgrade``) ported; the readers never crash on any status."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.objects import ClusterVersion
from cvo.objects.clusterversion import Release
from cvo.status.upgrade_list import check_for_upgrade, list_data, render_list, sorted_releases
from cvo.status.upgrade_target import FORCE_WARNING, Request, TargetRefused, resolve

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "upgrade_list"
PREFIX = "quay.io/openshift-release-dev/ocp-release@sha256:"


def img(digits: str) -> str:
    return PREFIX + digits.rjust(64, "0")


def cv_of(name: str, **changes: Any) -> dict[str, Any]:
    obj = yaml.safe_load((GOLDEN / f"{name}-cv.yaml").read_text())
    obj["status"].update(changes)
    return obj


def pick(obj: dict[str, Any], **request: Any) -> Any:
    return resolve(ClusterVersion.read(obj), Request(**request))


def refused(obj: dict[str, Any], **request: Any) -> str:
    with pytest.raises(TargetRefused) as err:
        pick(obj, **request)
    return str(err.value)


def test_a_version_among_the_available_updates() -> None:
    target = pick(cv_of("channel-with-updates"), to="4.16.3")
    assert (target.version, target.image, target.warnings) == ("4.16.3", img("4163"), ())
    assert not target.conditional and not target.explicit
    assert pick(cv_of("channel-with-updates"), to="4.16.0").info == "info: Cluster is already at version 4.16.0"


def test_a_version_not_in_the_graph_is_refused_naming_the_possible_targets() -> None:
    assert refused(cv_of("channel-with-updates"), to="4.16.4") == (
        "the update is not one of the possible targets: 4.16.10, 4.16.3, 4.16.2. specify --to-image to continue "
        "with the update.")
    assert refused(cv_of("channel-no-updates"), to="4.16.4") == (
        "no recommended updates, specify --to-image to continue with the update or wait for new updates to be "
        "available.")
    assert refused(cv_of("channel-no-updates"), to="4.16.4", allow_not_recommended=True) == (
        "no recommended or conditional updates, specify --to-image to continue with the update or wait for new "
        "updates to be available.")


def test_retrieved_updates_false_refuses_with_its_reason() -> None:
    assert refused(cv_of("no-channel"), to="4.16.3") == (
        "cannot refresh available updates:\n  Reason: NoChannel\n  Message: The update channel has not been "
        "configured.\n\nspecify --to-image to continue with the update.")
    assert refused(cv_of("no-channel"), to_latest=True).endswith("\n\nspecify --to-image to continue with an update.")
    assert refused(cv_of("no-channel"), to_image=img("4163")).endswith(
        "specify --allow-explicit-upgrade to continue with the update.")


def test_a_conditional_update_needs_allow_not_recommended() -> None:
    obj = cv_of("conditional-updates")
    assert refused(obj, to="4.16.5") == (
        "the update 4.16.5 is not one of the recommended updates, but is available as a conditional update. To "
        "accept the Recommended=False risk and to proceed with update use --allow-not-recommended.\n"
        "  Reason: SomeRisk\n  Message: SomeRisk may break things. https://example.com/SomeRisk\n")
    unknown = refused(obj, to="4.17.1")
    assert "To accept the Recommended=Unknown risk" in unknown
    assert unknown.endswith("  Message: Could not evaluate exposure to update risk ARisk (evaluation failed: no "
                            "Prometheus)\n    ARisk description: ARisk may break things.\n    ARisk URL: "
                            "https://example.com/ARisk\n")
    target = pick(obj, to="4.16.5", allow_not_recommended=True)
    assert (target.version, target.image, target.conditional) == ("4.16.5", img("4165"), True)
    assert target.warnings == ("warning: with --allow-not-recommended you have accepted the risks with 4.16.5 and "
                               "bypassed Recommended=False SomeRisk: SomeRisk may break things. "
                               "https://example.com/SomeRisk",)
    # recommended (True): taken from availableUpdates, like any other
    assert pick(obj, to="4.16.3").warnings == ()


def test_to_latest() -> None:
    assert pick(cv_of("channel-with-updates"), to_latest=True).version == "4.16.10"
    assert pick(cv_of("channel-no-updates"), to_latest=True).info == (
        "info: Cluster is already at the latest available version 4.16.0")
    conditional = cv_of("conditional-updates")
    assert pick(conditional, to_latest=True).version == "4.16.3"  # only the recommended ones
    newest = pick(conditional, to_latest=True, allow_not_recommended=True)
    assert (newest.version, newest.conditional) == ("4.17.1", True)
    assert newest.warnings[0].startswith("warning: with --allow-not-recommended you have accepted the risks with "
                                         "4.17.1 and bypassed Recommended=Unknown EvaluationFailed: Could not")


def test_to_image_by_image_or_digest_or_explicit() -> None:
    obj = cv_of("channel-with-updates")
    mirrored = "mirror.example.com/ocp/release@sha256:" + "4163".rjust(64, "0")
    same = pick(obj, to_image=mirrored)
    assert (same.version, same.image) == ("4.16.3", mirrored)  # the requested pull spec is kept
    assert pick(obj, to_image="x.example.com/r@sha256:" + "9" * 64, pulled=img("4162")).version == "4.16.2"
    assert refused(obj, to_image="x.example.com/r@sha256:" + "9" * 64) == (
        "the update is not one of the possible targets: 4.16.10, 4.16.3, 4.16.2. specify --allow-explicit-upgrade "
        "to continue with the update.")
    explicit = pick(obj, to_image="x.example.com/r@sha256:" + "9" * 64, allow_explicit=True)
    assert (explicit.version, explicit.explicit) == ("", True)
    assert explicit.warnings == ("warning: The requested upgrade image is not one of the available updates. You "
                                 "have used --allow-explicit-upgrade for the update to proceed anyway",)
    assert pick(obj, to_image=img("4160")).info == f"info: Cluster is already at {img('4160')}"


def test_an_unparsable_image_in_the_status_warns_as_oc_does() -> None:
    obj = cv_of("channel-with-updates", availableUpdates=[{"version": "4.16.3", "image": "Not An Image"},
                                                          {"version": "4.16.4", "image": img("4164")}])
    target = pick(obj, to_image=img("4164"))
    assert target.version == "4.16.4"
    assert target.warnings == ("warning: unable to calculate match for the update target in available updates: "
                               "Not An Image: not a pull spec",)


def test_client_side_guards() -> None:
    progressing = cv_of("update-in-progress")
    assert refused(progressing, to="4.16.5") == (
        "the cluster is already upgrading:\n\n  Reason: \n  Message: Working towards 4.16.3: 106 of 829 done (12% "
        "complete)\n\nIf you want to upgrade anyway, use --allow-upgrade-with-warnings.")
    target = pick(progressing, to="4.16.5", allow_with_warnings=True, force=True)
    assert target.warnings == (FORCE_WARNING, "warning: --allow-upgrade-with-warnings is bypassing: the cluster is "
                               "already upgrading:\n\n  Reason: \n  Message: Working towards 4.16.3: 106 of 829 done "
                               "(12% complete)")


# openshift/oc pkg/cli/admin/upgrade/upgrade_test.go


def test_sort_releases_by_semantic_versions() -> None:
    expected = ["10.0.0", "2.0.10", "2.0.5", "2.0.1", "2.0.0", "not-sem-ver-2", "not-sem-ver-1"]
    shuffled = [Release(version=v) for v in expected]
    random.Random(7).shuffle(shuffled)
    assert [r.version for r in sorted_releases(shuffled)] == expected


@pytest.mark.parametrize(("conditions", "want"), [
    ([], None),
    ([{"type": "Invalid", "status": "True", "reason": "SomeReason", "message": "Some message."}],
     "the cluster version object is invalid, you must correct the invalid state first:\n\n  Reason: SomeReason\n"
     "  Message: Some message."),
    ([{"type": "Progressing", "status": "True", "reason": "RollingOut", "message": "Updating to v2."},
      {"type": "Failing", "status": "True", "reason": "BadStuff", "message": "The widgets are slow."}],
     "the cluster is experiencing an error reconciling \"4.1.0\":\n\n  Reason: BadStuff\n  Message: The widgets are "
     "slow.\n\nthe cluster is already upgrading:\n\n  Reason: RollingOut\n  Message: Updating to v2."),
])
def test_check_for_upgrade(conditions: list[dict[str, str]], want: str | None) -> None:
    cv = ClusterVersion.read({"metadata": {"name": "version"}, "status": {
        "desired": {"version": "4.1.0", "image": "quay.io/openshift-release-dev/ocp-release@sha256:"
                    "b8307ac0f3ec4ac86c3f3b52846425205022da52c16f56ec31cbe428501001d6"},
        "conditions": [{**c, "lastTransitionTime": "2024-01-01T00:00:00Z"} for c in conditions]}})
    assert check_for_upgrade(cv) == want


def test_list_data_holds_what_the_text_says() -> None:
    data = list_data(ClusterVersion.read(cv_of("conditional-updates")), include_not_recommended=True)
    assert data["channel"] == "fast-4.16" and data["upstream"] == ""
    assert [u["version"] for u in data["recommendedUpdates"]] == ["4.16.3"]
    assert [(u["version"], u["recommended"]["status"]) for u in data["notRecommendedUpdates"]] == [
        ("4.17.1", "Unknown"), ("4.16.12", "False"), ("4.16.5", "False")]
    assert list_data(ClusterVersion.read(cv_of("conditional-updates")))["notRecommendedUpdates"] is None


# Any status: the readers print or refuse, never crash.
TEXT = st.text(max_size=12)
CONDITION = st.fixed_dictionaries({"type": st.sampled_from(["Failing", "Progressing", "Upgradeable", "ReleaseAccepted",
                                                            "RetrievedUpdates", "Invalid", "Recommended"]),
                                   "status": st.sampled_from(["True", "False", "Unknown", ""]),
                                   "reason": TEXT, "message": TEXT})
RELEASE = st.fixed_dictionaries({"version": st.one_of(TEXT, st.sampled_from(["4.16.3", "4.17.0-rc.1", "1.0.0"])),
                                 "image": st.one_of(TEXT, st.just(img("1")))})


@settings(max_examples=200, deadline=None)
@given(conditions=st.lists(CONDITION, max_size=5), available=st.one_of(st.none(), st.lists(RELEASE, max_size=4)),
       conditional=st.lists(st.fixed_dictionaries({"release": RELEASE, "conditions": st.lists(CONDITION, max_size=2)}),
                            max_size=3),
       to=st.one_of(st.just(""), TEXT), to_image=st.one_of(st.just(""), TEXT, st.just(img("1"))),
       flags=st.lists(st.booleans(), min_size=4, max_size=4))
def test_any_status_prints_or_refuses(conditions: list[dict[str, str]], available: list[dict[str, str]] | None,
                                      conditional: list[dict[str, Any]], to: str, to_image: str,
                                      flags: list[bool]) -> None:
    obj = copy.deepcopy(cv_of("channel-with-updates"))
    obj["status"].update(conditions=conditions, availableUpdates=available, conditionalUpdates=conditional)
    cv = ClusterVersion.read(obj)
    printed = render_list(cv, flags[0])
    assert printed.out.endswith("\n") and (printed.err == "" or printed.err.startswith("warning: "))
    list_data(cv, flags[0])
    try:
        target = resolve(cv, Request(to=to, to_image=to_image, to_latest=flags[1], allow_not_recommended=flags[2],
                                     allow_explicit=flags[3]))
    except TargetRefused as err:
        assert str(err)
    else:  # something to do or say; an update without an image only when the status has one
        images = [r["image"] for r in available or []] + [u["release"]["image"] for u in conditional]
        assert target.info or target.image or "" in images
