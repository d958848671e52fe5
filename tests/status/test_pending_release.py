"""A requested release not accepted (``ReleaseAccepted`` not True): which release, why, and its text in ``cvo
status`` and ``cvo upgrade status`` (cvo/status/pending_release.py)."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.objects import ClusterVersion
from cvo.status.pending_release import PendingRelease, pending_data, pending_release, pending_text
from cvo.status.text import write_status_text
from cvo.status.upgrade_status import assess
from cvo.status.upgrade_text import render

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
BLOCKED = ('Preconditions failed for payload loaded version="4.17.0" image="file:///payloads/demo-4.17.0": '
           'Multiple precondition checks failed:\n* Precondition "ClusterVersionUpgradeable" failed because of '
           '"OperatorNotUpgradeable": etcd is migrating its storage\n* Precondition "ClusterVersionRecommendedUpdate" '
           'failed because of "NoChannel": Configured channel is unset')


def cv(accepted: tuple[str, str, str] | None, desired_update: dict[str, Any] | None = None) -> dict[str, Any]:
    conditions = [{"type": "Progressing", "status": "False", "lastTransitionTime": "2026-11-28T11:00:00Z",
                   "message": "Cluster version is 4.16.0"},
                  {"type": "Available", "status": "True", "lastTransitionTime": "2026-11-28T11:00:00Z"}]
    if accepted is not None:
        status, reason, message = accepted
        conditions.append({"type": "ReleaseAccepted", "status": status, "reason": reason, "message": message,
                           "lastTransitionTime": "2026-11-28T11:30:00Z"})
    spec: dict[str, Any] = {"clusterID": "c"}
    if desired_update is not None:
        spec["desiredUpdate"] = desired_update
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
            "spec": spec,
            "status": {"desired": {"version": "4.16.0", "image": "file:///payloads/demo-4.16.0"},
                       "history": [{"state": "Completed", "version": "4.16.0", "image": "file:///payloads/demo-4.16.0",
                                    "startedTime": "2026-11-28T10:00:00Z", "completionTime": "2026-11-28T11:00:00Z",
                                    "verified": False}],
                       "conditions": conditions}}


CO = {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": "etcd"},
      "status": {"versions": [{"name": "operator", "version": "4.16.0"}],
                 "conditions": [{"type": "Available", "status": "True", "lastTransitionTime": "2026-11-28T11:00:00Z"}]}}


def test_nothing_pending_when_the_release_is_accepted_or_the_condition_is_absent() -> None:
    assert pending_release(ClusterVersion.read(cv(None))) is None
    assert pending_release(ClusterVersion.read(cv(("True", "PayloadLoaded", 'Payload loaded version="4.16.0"')))) \
        is None


def test_a_command_s_request_is_named_by_the_condition_s_message() -> None:
    pending = pending_release(ClusterVersion.read(cv(("False", "PreconditionChecks", BLOCKED))))
    assert pending == PendingRelease("4.17.0", "file:///payloads/demo-4.17.0", "False", "PreconditionChecks", BLOCKED)
    assert pending_data(pending) == {"version": "4.17.0", "image": "file:///payloads/demo-4.17.0", "status": "False",
                                     "reason": "PreconditionChecks", "message": BLOCKED}
    assert pending_data(None) is None


def test_spec_desired_update_names_the_request_when_it_asks_for_another_release() -> None:
    refused = ('Retrieving payload failed version="" image="quay.io/x/release@sha256:ab" failure=The update cannot '
               "be verified")
    obj = cv(("False", "RetrievePayload", refused), {"version": "4.17.1", "image": "quay.io/x/release@sha256:ab"})
    pending = pending_release(ClusterVersion.read(obj))
    assert pending is not None and (pending.version, pending.image) == ("4.17.1", "quay.io/x/release@sha256:ab")
    # a desiredUpdate that names the running release (an update done) does not: the message does
    obj = cv(("False", "PreconditionChecks", BLOCKED), {"version": "4.16.0", "image": "file:///payloads/demo-4.16.0"})
    pending = pending_release(ClusterVersion.read(obj))
    assert pending is not None and pending.version == "4.17.0"


def test_unnamed_release_is_still_shown() -> None:
    pending = pending_release(ClusterVersion.read(cv(("Unknown", "", "the controller has not looked yet"))))
    assert pending is not None and pending.name == "a requested release"
    assert pending_text(pending) == ("a requested release requested, not started: ReleaseAccepted=Unknown\n"
                                     "  the controller has not looked yet\n")


def test_text_as_oc_prints_the_condition_then_wrapped_to_a_terminal() -> None:
    pending = pending_release(ClusterVersion.read(cv(("False", "PreconditionChecks", BLOCKED))))
    assert pending is not None
    text = pending_text(pending)
    assert text.splitlines() == [
        "4.17.0 requested, not started: ReleaseAccepted=False (PreconditionChecks)",
        '  Preconditions failed for payload loaded version="4.17.0" image="file:///payloads/demo-4.17.0": Multiple '
        "precondition checks failed:",
        '  * Precondition "ClusterVersionUpgradeable" failed because of "OperatorNotUpgradeable": etcd is migrating its '
        "storage",
        '  * Precondition "ClusterVersionRecommendedUpdate" failed because of "NoChannel": Configured channel is unset']
    narrow = pending_text(pending, 80)
    assert all(len(line) <= 80 for line in narrow.splitlines())
    assert " ".join(narrow.split()) == " ".join(text.split())  # wrapped at spaces: nothing cut


def test_cvo_status_shows_it_under_the_clusterversion_line() -> None:
    out = io.StringIO()
    write_status_text(cv(("False", "PreconditionChecks", BLOCKED)), [CO], NOW, out)
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("version   4.16.0")
    assert lines[2:4] == ["", "4.17.0 requested, not started: ReleaseAccepted=False (PreconditionChecks)"]
    assert lines[7] == "" and lines[8].startswith("NAME ")  # then the operators
    out = io.StringIO()
    write_status_text(cv(("True", "PayloadLoaded", "Payload loaded")), [CO], NOW, out)
    assert "requested" not in out.getvalue()


def test_upgrade_status_not_updating_carries_it_and_oc_s_text_stays_oc_s() -> None:
    status = assess(cv(("False", "PreconditionChecks", BLOCKED)), [CO], 0)
    assert not status.updating and status.pending is not None and status.pending.version == "4.17.0"
    assert render(status) == "The cluster is not updating.\n"  # the command adds the pending release under it
    assert assess(cv(None), [CO], 0).pending is None


conditions = st.lists(st.fixed_dictionaries(
    {"type": st.sampled_from(["ReleaseAccepted", "Progressing"]), "status": st.sampled_from(["True", "False", "Unknown", ""]),
     "reason": st.text(max_size=20), "message": st.text(max_size=200)}), max_size=3)
spec = st.one_of(st.none(), st.dictionaries(st.sampled_from(["version", "image", "force"]),
                                            st.one_of(st.text(max_size=20), st.booleans(), st.integers())))


@settings(max_examples=200, deadline=None)
@given(conditions=conditions, desired=spec, width=st.one_of(st.none(), st.integers(1, 200)))
def test_any_clusterversion_reads_into_a_pending_release_or_none(conditions: list[dict[str, Any]],
                                                                desired: dict[str, Any] | None,
                                                                width: int | None) -> None:
    obj = cv(None)
    obj["status"]["conditions"] = conditions
    if desired is not None:
        obj["spec"]["desiredUpdate"] = desired
    view = ClusterVersion.read(obj)
    pending = pending_release(view)
    accepted = view.status.condition("ReleaseAccepted")
    assert (pending is None) == (accepted is None or accepted.status == "True")
    if pending is not None:
        text = pending_text(pending, width)
        assert text.endswith("\n")
        if width is None or width >= 40:  # narrower, long words are broken too
            assert f"ReleaseAccepted={pending.status}" in text
        if width is not None and width >= 8:
            assert all(len(line) <= width for line in text.splitlines())
