"""What the one status writer's merge adds to the parts (pkg/cvo/status.go ``updateClusterVersionStatus``): the
Invalid condition, the history's accepted risks under ClusterUpdateAcceptRisks, and the desired release's
metadata from the update graph (pkg/cvo/cvo.go ``mergeReleaseMetadata``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cvo.payload.conditions import find_condition
from cvo.status.clusterversion import SyncStatus
from cvo.status.parts import Accepted, AvailableUpdates, StatusPart, Sync, merge
from cvo.updates.model import ConditionalUpdate, Release, Retrieved, Risk, Updates

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
ID = "0a3a2d5c-5c6e-4c57-9a0b-1f7a0d8c7e11"
V, IMG = "4.16.3", "quay.io/openshift-release-dev/ocp-release@sha256:4163"
NEXT, NEXT_IMG = "4.17.0", "quay.io/openshift-release-dev/ocp-release@sha256:4170"
UPSTREAM = "https://updates.example.com/graph"
ACCEPTED = "which were all explicitly accepted by the cluster administrator."


def cv(desired_update: dict[str, Any] | None = None, channel: str = "stable-4.17") -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterID": ID, "upstream": UPSTREAM, "channel": channel}
    if desired_update is not None:
        spec["desiredUpdate"] = desired_update
    return {"metadata": {"name": "version", "generation": 2}, "spec": spec}


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", "")) for c in status["conditions"]}


# --- Invalid ------------------------------------------------------------------------------------------------------

def test_accept_risks_without_the_gate_make_the_cluster_version_invalid_and_the_sync_says_so() -> None:
    obj = cv({"version": NEXT, "image": NEXT_IMG, "acceptRisks": [{"name": "EtcdMigration"}]})
    parts: dict[str, StatusPart] = {"sync": Sync(SyncStatus(V, IMG, completed=1, reconciling=True))}
    status = merge(parts, {}, obj, T0, gated=False)
    assert conditions(status)["Invalid"] == (
        "True", "InvalidClusterVersion",
        "The cluster version is invalid: spec.desiredUpdate.acceptRisks: Forbidden: acceptRisks must not be specified")
    assert conditions(status)["Progressing"] == ("False", "InvalidClusterVersion",
                                                 f"Stopped at {V}: the cluster version is invalid")
    # the gate on: valid; the condition goes, and the sync reads as it did
    status = merge(parts, status, obj, T0, gated=True)
    assert "Invalid" not in conditions(status)
    assert conditions(status)["Progressing"] == ("False", "", f"Cluster version is {V}")


def test_an_invalid_spec_during_an_update_and_a_writer_that_does_not_know_the_gate() -> None:
    obj = cv({"image": NEXT_IMG}) | {"spec": {"clusterID": "not-a-uuid", "desiredUpdate": {"image": NEXT_IMG}}}
    status = merge({"sync": Sync(SyncStatus(NEXT, NEXT_IMG, done=3, total=10))}, {}, obj, T0, gated=False)
    assert conditions(status)["Progressing"] == ("True", "InvalidClusterVersion",
                                                 f"Reconciling {NEXT}: the cluster version is invalid")
    # a writer that does not know the gate (a command without a controller) leaves the condition as it was
    valid = cv({"image": NEXT_IMG})
    assert conditions(merge({}, status, valid, T0))["Invalid"][0] == "True"
    assert "Invalid" not in conditions(merge({}, status, valid, T0, gated=False))


# --- the history's accepted risks -------------------------------------------------------------------------------

RISK = Risk("EtcdMigration", "etcd's migration may stall.", "https://example.com/etcd")
OTHER = Risk("AlertFiring", "An alert fires.", "https://example.com/alert")


def updates(gated_names: bool = True, channel: str = "stable-4.17", current: Release | None = None,
            available: tuple[Release, ...] | None = None) -> Updates:
    accepted = {"type": "Recommended", "status": "True", "reason": "AllExposedRisksAccepted", "message": "…",
                "lastTransitionTime": "2024-05-01T12:00:00Z"}
    update = ConditionalUpdate(Release(NEXT, NEXT_IMG), (OTHER, RISK), (accepted,),
                               ("AlertFiring", "EtcdMigration") if gated_names else ())
    return Updates(UPSTREAM, channel, available, (update,), Retrieved("True"), current=current)


def test_the_update_to_a_release_with_accepted_risks_says_so_in_its_history_entry() -> None:
    obj = cv({"version": NEXT, "image": NEXT_IMG, "acceptRisks": [{"name": "EtcdMigration"}, {"name": "AlertFiring"}]})
    parts: dict[str, StatusPart] = {"sync": Sync(SyncStatus(NEXT, NEXT_IMG, done=1, total=10)), "updates": AvailableUpdates(updates(), True)}
    status = merge(parts, {}, obj, T0, gated=True)
    assert status["history"][0]["acceptedRisks"] == (
        f"The target release {NEXT_IMG} is exposed to the risks [AlertFiring,EtcdMigration] {ACCEPTED}")
    assert merge(parts, status, obj, T0, gated=True)["history"] == status["history"]  # written again: once
    # a forced signature failure comes first, as the CVO joins them
    forced: dict[str, StatusPart] = {**parts, "sync": Sync(SyncStatus(NEXT, NEXT_IMG, accepted_risks="The update cannot be verified."))}
    assert merge(forced, {}, obj, T0, gated=True)["history"][0]["acceptedRisks"] == (
        f"The update cannot be verified.; It is exposed to the risks [AlertFiring,EtcdMigration] {ACCEPTED}")


def test_without_the_gate_no_risk_names_are_written_and_the_history_says_nothing() -> None:
    obj = cv({"version": NEXT, "image": NEXT_IMG})
    parts: dict[str, StatusPart] = {"sync": Sync(SyncStatus(NEXT, NEXT_IMG)), "updates": AvailableUpdates(updates(gated_names=False), False)}
    status = merge(parts, {}, obj, T0, gated=False)
    assert "acceptedRisks" not in status["history"][0] and "riskNames" not in status["conditionalUpdates"][0]


def test_the_status_read_is_enough_when_the_writer_holds_no_updates_part() -> None:
    """A sweep's own writer (a command without a controller, a scenario's replay): the conditional updates the
    status holds already name the risks of the update it applies."""
    first = merge({"updates": AvailableUpdates(updates(), True)}, {}, cv(), T0)
    status = merge({"sync": Sync(SyncStatus(NEXT, NEXT_IMG, done=1, total=10))}, first, cv(), T0)
    assert ACCEPTED in status["history"][0]["acceptedRisks"]
    # an entry for another release is left alone
    other = merge({"sync": Sync(SyncStatus(V, IMG, done=1, total=10))}, first, cv(), T0)
    assert "acceptedRisks" not in other["history"][0]


# --- mergeReleaseMetadata ---------------------------------------------------------------------------------------

NODE = Release(V, "registry.example.com/mirror/release@sha256:4163", "https://example.com/errata/4.16.3",
               ("fast-4.17", "stable-4.16", "stable-4.17"))


def test_the_desired_release_takes_the_graphs_channels_and_url_when_its_metadata_has_none() -> None:
    parts: dict[str, StatusPart] = {"sync": Sync(SyncStatus(V, IMG, completed=1, reconciling=True)),
             "updates": AvailableUpdates(updates(current=NODE), False)}
    status = merge(parts, {}, cv(), T0)
    assert status["desired"] == {"version": V, "image": IMG, "url": NODE.url, "channels": list(NODE.channels)}
    # also while the spec names another channel than the one the updates were retrieved for (the CVO merges
    # whatever its available updates hold); the lists themselves are not written then
    other = merge(parts, {}, cv(channel="fast-4.17"), T0)
    assert other["desired"]["channels"] == list(NODE.channels) and "conditionalUpdates" not in other


def test_the_releases_own_metadata_wins_and_only_a_digest_matches() -> None:
    own = Sync(SyncStatus(V, IMG, completed=1, reconciling=True, channels=("stable-4.16",), url="https://own"))
    status = merge({"sync": own, "updates": AvailableUpdates(updates(current=NODE), False)}, {}, cv(), T0)
    assert status["desired"] == {"version": V, "image": IMG, "url": "https://own", "channels": ["stable-4.16"]}
    by_tag = Release(V, "quay.io/openshift-release-dev/ocp-release:4.16.3", "https://tag", ("tagged",))
    tagged: dict[str, StatusPart] = {"sync": Sync(SyncStatus(V, by_tag.image.replace("4.16.3", "4.16.3-x86_64"), completed=1)),
              "updates": AvailableUpdates(updates(current=by_tag), False)}
    assert "channels" not in merge(tagged, {}, cv(), T0)["desired"]
    # an available update of that digest (the graph retrieved before the update to it)
    avail: dict[str, StatusPart] = {"sync": Sync(SyncStatus(V, IMG, done=1, total=4)),
             "updates": AvailableUpdates(updates(current=Release("4.16.0", "x@sha256:4160"), available=(NODE,)), False)}
    assert merge(avail, {}, cv(), T0)["desired"]["channels"] == list(NODE.channels)


def test_no_node_of_the_desired_release_leaves_it_as_the_payload_gave_it() -> None:
    parts: dict[str, StatusPart] = {"sync": Sync(SyncStatus(V, IMG, completed=1)),
             "updates": AvailableUpdates(updates(current=Release("4.16.0", "x@sha256:4160", "u", ("c",))), False)}
    assert merge(parts, {}, cv(), T0)["desired"] == {"version": V, "image": IMG}
    assert find_condition(merge(parts, {}, cv(), T0)["conditions"], "RetrievedUpdates") is not None


def test_a_reconcile_keeps_the_accepted_risks_once_the_graph_no_longer_offers_the_update() -> None:
    """After the update the graph is retrieved for the new release: no conditional update to it is left; the
    reconcile of that release is the CVO's own payload (local), whose sync leaves the history's text alone."""
    obj = cv({"version": NEXT, "image": NEXT_IMG, "acceptRisks": [{"name": "EtcdMigration"}, {"name": "AlertFiring"}]})
    updating: dict[str, StatusPart] = {"sync": Sync(SyncStatus(NEXT, NEXT_IMG, completed=1)),
                                       "updates": AvailableUpdates(updates(), True)}
    status = merge(updating, {}, obj, T0, gated=True)
    text = status["history"][0]["acceptedRisks"]
    fetched_again = Updates(UPSTREAM, "stable-4.17", None, (), Retrieved("True"))
    reconciling: dict[str, StatusPart] = {"sync": Sync(SyncStatus(NEXT, NEXT_IMG, completed=1, reconciling=True)),
                                          "updates": AvailableUpdates(fetched_again, True)}
    status = merge(reconciling, status, obj, T0, gated=True)
    assert "conditionalUpdates" not in status and status["history"][0]["acceptedRisks"] == text


def test_a_reconcile_while_another_release_is_refused_clears_them_as_the_cvo() -> None:
    obj = cv({"version": NEXT, "image": NEXT_IMG})
    status = merge({"sync": Sync(SyncStatus(NEXT, NEXT_IMG, completed=1, accepted_risks="Forced: a warning."))}, {},
                   obj, T0)
    refused: dict[str, StatusPart] = {"sync": Sync(SyncStatus(NEXT, NEXT_IMG, completed=1, reconciling=True)),
                                      "accepted": Accepted("False", "PreconditionChecks", "blocked")}
    assert merge({"sync": refused["sync"]}, status, obj, T0)["history"][0]["acceptedRisks"] == "Forced: a warning."
    assert "acceptedRisks" not in merge(refused, status, obj, T0)["history"][0]


JSONISH = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6)),
                       lambda inner: st.one_of(st.lists(inner, max_size=3),
                                               st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=8)


@given(desired=st.one_of(JSONISH, st.fixed_dictionaries({"image": st.sampled_from([NEXT_IMG, "x"])}, optional={
           "version": JSONISH, "url": JSONISH, "channels": JSONISH})),
       conditional=st.one_of(JSONISH, st.lists(st.fixed_dictionaries({"release": st.one_of(JSONISH, st.just(
           {"image": NEXT_IMG})), "riskNames": JSONISH}), max_size=2)),
       history=st.one_of(JSONISH, st.lists(st.fixed_dictionaries({"image": st.sampled_from([NEXT_IMG, "x"])},
                                                                 optional={"acceptedRisks": JSONISH}), max_size=2)))
def test_any_status_read_is_merged_without_an_exception(desired: Any, conditional: Any, history: Any) -> None:
    """The status the writer reads may hold anything (another writer, a person's edit): merged, never a crash."""
    status = {"desired": desired, "conditionalUpdates": conditional, "history": history}
    parts: dict[str, StatusPart] = {"updates": AvailableUpdates(updates(current=NODE), True)}
    out = merge(parts, status, cv(), T0, gated=True)
    assert isinstance(out["conditions"], list)
