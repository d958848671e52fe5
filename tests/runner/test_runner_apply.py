"""``apply_task`` on the simulated cluster: create, update, merge, create-only and delete (lib/resourcemerge, lib/resourcedelete)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import ApiError, ApiErrorKind, Ref, co_ref
from cvo.cluster.embedded.server import SimCluster
from cvo.payload.errors import UpdateError
from cvo.payload.graph import Mode, Task, make_tasks
from cvo.payload.loader import load_release
from cvo.runner.apply import DeleteTracker, apply_task, precreate_cluster_operator
from tests.support.helpers import ReleaseFactory, cluster_operator, obj

EPOCH = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
DELETE = "release.openshift.io/delete"
CREATE_ONLY = "release.openshift.io/create-only"
HA_KEY = "include.release.openshift.io/self-managed-high-availability"

CM = Ref("", "ConfigMap", "ns", "cm")
DEPLOY = Ref("apps", "Deployment", "ns", "web")
WIDGET = Ref("example.com", "Widget", "ns", "w")


def tasks_of(make_release: ReleaseFactory, files: dict[str, object], name: str = "release") -> dict[str, Task]:
    """The payload's tasks by object name."""
    release = load_release(make_release(files, name=name))
    return {t.manifest.name: t for t in make_tasks(release.manifests, Mode.UPDATE)}


def sim(test: Callable[[SimCluster], Awaitable[None]]) -> None:
    async def main() -> None:
        cluster = SimCluster(Clock(EPOCH))
        await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
        await test(cluster)

    run_virtual(main)


def configmap(name: str = "cm", annotations: dict | None = None, labels: dict | None = None,
              **data: str) -> dict[str, Any]:
    doc = obj("ConfigMap", name, "ns", annotations=annotations, data=dict(data))
    if labels is not None:
        doc["metadata"]["labels"] = labels
    return doc


def deployment(replicas: int | None = None, image: str = "quay.io/x/web:1") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": image}]}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return obj("Deployment", "web", "ns", api="apps/v1", spec=spec)


WIDGET_CRD = obj("CustomResourceDefinition", "widgets.example.com", api="apiextensions.k8s.io/v1", spec={
    "group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
    "versions": [{"name": "v1", "served": True, "storage": True}]})


def widget(size: int = 1, labels: dict | None = None, annotations: dict | None = None) -> dict[str, Any]:
    doc = obj("Widget", "w", "ns", api="example.com/v1", annotations=annotations, spec={"size": size})
    if labels is not None:
        doc["metadata"]["labels"] = labels
    return doc


async def live(cluster: SimCluster, ref: Ref) -> dict[str, Any]:
    got = await cluster.get(ref)
    assert got is not None, f"{ref} is missing"
    return got


# --- create / unchanged / update ------------------------------------------------------------------


def test_creates_a_missing_object(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": configmap(a="1")})

    async def test(cluster: SimCluster) -> None:
        outcome = await apply_task(cluster, tasks["cm"], Mode.UPDATE, DeleteTracker())
        assert outcome.action == "created"
        got = await live(cluster, CM)
        assert got["data"] == {"a": "1"}
        assert outcome.live is not None and outcome.live["metadata"]["uid"] == got["metadata"]["uid"]

    sim(test)


@pytest.mark.parametrize("mode", list(Mode))
def test_unchanged_when_the_manifest_is_contained_in_the_live_object(make_release: ReleaseFactory,
                                                                     mode: Mode) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_deploy.yaml": deployment(replicas=2)})

    async def test(cluster: SimCluster) -> None:
        await apply_task(cluster, tasks["web"], mode, DeleteTracker())
        # The server (and controllers) add fields the manifest does not set.
        current = await live(cluster, DEPLOY)
        current["spec"]["strategy"] = {"type": "RollingUpdate"}
        current["spec"]["template"]["spec"]["dnsPolicy"] = "ClusterFirst"
        current["spec"]["revisionHistoryLimit"] = 10
        current["metadata"]["labels"] = {"added-by": "someone-else"}
        await cluster.update(current)
        current = await live(cluster, DEPLOY)
        current["status"] = {"replicas": 2, "readyReplicas": 2}
        await cluster.update_status(current)
        before = await live(cluster, DEPLOY)
        updates = cluster.stats.verbs["update"]
        outcome = await apply_task(cluster, tasks["web"], mode, DeleteTracker())
        assert outcome.action == "unchanged"
        assert cluster.stats.verbs["update"] == updates
        assert await live(cluster, DEPLOY) == before

    sim(test)


def test_updates_when_a_manifest_field_differs(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": configmap(a="1")})

    async def test(cluster: SimCluster) -> None:
        await cluster.create(configmap(a="changed"))
        outcome = await apply_task(cluster, tasks["cm"], Mode.UPDATE, DeleteTracker())
        assert outcome.action == "updated"
        assert (await live(cluster, CM))["data"]["a"] == "1"

    sim(test)


def test_a_secret_with_string_data_is_unchanged_once_applied(make_release: ReleaseFactory) -> None:
    """The API server folds ``stringData`` into ``data`` (base64) and never returns it (k8s.io/kubernetes
    pkg/apis/core/v1 conversion); cvo compares the manifest in that form, so a second sweep leaves it alone
    (it used to update it on every sweep).  A ``data`` key the manifest also sets loses to ``stringData``."""
    secret = obj("Secret", "creds", "ns", stringData={"user": "admin", "token": "s3cr3t"}, data={"token": "b2xk"})
    tasks = tasks_of(make_release, {"0000_10_a_secret.yaml": secret})

    async def test(cluster: SimCluster) -> None:
        first = await apply_task(cluster, tasks["creds"], Mode.UPDATE, DeleteTracker())
        assert first.action == "created"
        stored = await live(cluster, Ref("", "Secret", "ns", "creds"))
        assert "stringData" not in stored
        assert stored["data"] == {"user": "YWRtaW4=", "token": "czNjcjN0"}
        for _ in range(2):
            again = await apply_task(cluster, tasks["creds"], Mode.UPDATE, DeleteTracker())
            assert again.action == "unchanged"

    sim(test)


def test_the_embedded_cluster_stores_string_data_as_the_api_server_does() -> None:
    async def test(cluster: SimCluster) -> None:
        made = await cluster.create(obj("Secret", "s", "ns", stringData={"a": "é"}))
        assert made["data"] == {"a": "w6k="} and "stringData" not in made
        updated = await cluster.update({**made, "stringData": {"b": "x"}})
        assert updated["data"] == {"a": "w6k=", "b": "eA=="} and "stringData" not in updated

    sim(test)


def test_configmap_data_is_merged_key_wise(make_release: ReleaseFactory) -> None:
    """lib/resourcemerge/core.go `EnsureConfigMap`: ConfigMap ``data`` is merged key-wise: keys the manifest does not set are preserved."""
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": configmap(a="1")})

    async def test(cluster: SimCluster) -> None:
        await cluster.create(configmap(a="changed", extra="kept"))
        outcome = await apply_task(cluster, tasks["cm"], Mode.UPDATE, DeleteTracker())
        assert outcome.action == "updated"
        assert (await live(cluster, CM))["data"] == {"a": "1", "extra": "kept"}

    sim(test)


def test_deployment_image_change_is_enforced(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_deploy.yaml": deployment(image="quay.io/x/web:2")})

    async def test(cluster: SimCluster) -> None:
        await cluster.create(deployment(replicas=1, image="quay.io/x/web:1"))
        outcome = await apply_task(cluster, tasks["web"], Mode.RECONCILE, DeleteTracker())
        assert outcome.action == "updated"
        got = await live(cluster, DEPLOY)
        assert got["spec"]["template"]["spec"]["containers"][0]["image"] == "quay.io/x/web:2"
        assert got["metadata"]["generation"] == 2

    sim(test)


# --- metadata merge ---------------------------------------------------------------------------------


def test_typed_kinds_merge_labels_and_annotations_without_removing_others(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": configmap(labels={"app": "a"}, a="1")})

    async def test(cluster: SimCluster) -> None:
        existing = configmap(labels={"app": "old", "team": "x"}, a="1")
        existing["metadata"]["annotations"]["someone/else"] = "keep"
        await cluster.create(existing)
        outcome = await apply_task(cluster, tasks["cm"], Mode.UPDATE, DeleteTracker())
        assert outcome.action == "updated"  # metadata-only drift is corrected for typed kinds
        meta = (await live(cluster, CM))["metadata"]
        assert meta["labels"] == {"app": "a", "team": "x"}
        assert meta["annotations"] == {HA_KEY: "true", "someone/else": "keep"}
        # Applying again changes nothing.
        assert (await apply_task(cluster, tasks["cm"], Mode.UPDATE, DeleteTracker())).action == "unchanged"

    sim(test)


def test_typed_kinds_extra_labels_alone_are_not_drift(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": configmap(labels={"app": "a"}, a="1")})

    async def test(cluster: SimCluster) -> None:
        await cluster.create(configmap(labels={"app": "a", "team": "x"}, a="1"))
        assert (await apply_task(cluster, tasks["cm"], Mode.UPDATE, DeleteTracker())).action == "unchanged"

    sim(test)


def test_custom_resources_replace_labels_and_annotations_with_a_changed_spec(make_release: ReleaseFactory,
                                                                            ) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_widget.yaml": widget(size=1, labels={"app": "w"})})

    async def test(cluster: SimCluster) -> None:
        await cluster.create(WIDGET_CRD)
        existing = widget(size=2, labels={"app": "old", "extra": "x"}, annotations={"someone/else": "drop"})
        await cluster.create(existing)
        outcome = await apply_task(cluster, tasks["w"], Mode.UPDATE, DeleteTracker())
        assert outcome.action == "updated"
        got = await live(cluster, WIDGET)
        assert got["spec"] == {"size": 1}
        assert got["metadata"]["labels"] == {"app": "w"}
        assert got["metadata"]["annotations"] == {HA_KEY: "true"}

    sim(test)


def test_custom_resources_ignore_metadata_only_drift(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_widget.yaml": widget(size=1, labels={"app": "w"})})

    async def test(cluster: SimCluster) -> None:
        await cluster.create(WIDGET_CRD)
        await cluster.create(widget(size=1, labels={"app": "drifted", "extra": "x"}, annotations={}))
        before = await live(cluster, WIDGET)
        outcome = await apply_task(cluster, tasks["w"], Mode.UPDATE, DeleteTracker())
        assert outcome.action == "unchanged"
        assert await live(cluster, WIDGET) == before
        assert before["metadata"]["labels"] == {"app": "drifted", "extra": "x"}

    sim(test)


# --- create-only -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["true", "True", "TRUE"])
def test_create_only_creates_but_never_updates(make_release: ReleaseFactory, value: str) -> None:
    doc = configmap(a="1", labels={"app": "a"})
    doc["metadata"]["annotations"][CREATE_ONLY] = value
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": doc})

    async def test(cluster: SimCluster) -> None:
        assert (await apply_task(cluster, tasks["cm"], Mode.UPDATE, DeleteTracker())).action == "created"
        assert (await live(cluster, CM))["data"] == {"a": "1"}
        current = await live(cluster, CM)
        current["data"] = {"a": "user-edited"}
        current["metadata"]["labels"] = {"app": "user"}
        await cluster.update(current)
        updates = cluster.stats.verbs["update"]
        for mode in Mode:
            outcome = await apply_task(cluster, tasks["cm"], mode, DeleteTracker())
            assert outcome.action == "unchanged"
        assert cluster.stats.verbs["update"] == updates
        got = await live(cluster, CM)
        assert got["data"] == {"a": "user-edited"}
        assert got["metadata"]["labels"] == {"app": "user"}

    sim(test)


# --- delete ------------------------------------------------------------------------------------------


def delete_cm() -> dict[str, Any]:
    doc = configmap(a="1")
    doc["metadata"]["annotations"][DELETE] = "true"
    return doc


@pytest.mark.parametrize("mode", [Mode.INSTALL, Mode.RECONCILE])
def test_delete_is_a_no_op_outside_update_mode(make_release: ReleaseFactory, mode: Mode) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": delete_cm()})

    async def test(cluster: SimCluster) -> None:
        await cluster.create(configmap(a="live"))
        tracker = DeleteTracker()
        writes = cluster.stats.writes
        await apply_task(cluster, tasks["cm"], mode, tracker)
        assert (await live(cluster, CM))["data"] == {"a": "live"}
        assert cluster.stats.writes == writes
        assert tracker.in_progress() == []

    sim(test)


@pytest.mark.parametrize("mode", list(Mode))
def test_a_delete_manifest_is_never_created(make_release: ReleaseFactory, mode: Mode) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": delete_cm()})

    async def test(cluster: SimCluster) -> None:
        await apply_task(cluster, tasks["cm"], mode, DeleteTracker())
        assert await cluster.get(CM) is None

    sim(test)


def test_delete_in_update_mode_deletes_does_not_wait_and_is_tracked(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": delete_cm()})

    async def test(cluster: SimCluster) -> None:
        await cluster.create(configmap(a="live"))
        tracker = DeleteTracker()
        loop = asyncio.get_running_loop()
        start = loop.time()
        outcome = await apply_task(cluster, tasks["cm"], Mode.UPDATE, tracker)
        assert loop.time() == start  # no waiting for the object to disappear
        assert outcome.action == "deleted"
        assert await cluster.get(CM) is None
        assert tracker.requested == {CM: False}  # requested, not yet verified
        assert tracker.in_progress() == [CM]
        # Next pass: NotFound -> verified.
        deletes = cluster.stats.verbs["delete"]
        outcome = await apply_task(cluster, tasks["cm"], Mode.UPDATE, tracker)
        assert outcome.action == "delete-verified"
        assert tracker.requested == {CM: True}
        assert tracker.in_progress() == []
        assert cluster.stats.verbs["delete"] == deletes

    sim(test)


def test_delete_of_an_untracked_missing_object_is_verified_at_once(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": delete_cm()})

    async def test(cluster: SimCluster) -> None:
        tracker = DeleteTracker()
        await apply_task(cluster, tasks["cm"], Mode.UPDATE, tracker)
        assert tracker.requested == {CM: True}
        assert cluster.stats.verbs["delete"] == 0

    sim(test)


def test_a_verified_delete_that_reappears_is_left_alone(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": delete_cm()})

    async def test(cluster: SimCluster) -> None:
        tracker = DeleteTracker()
        await apply_task(cluster, tasks["cm"], Mode.UPDATE, tracker)  # missing: verified
        await cluster.create(configmap(a="back"))
        await apply_task(cluster, tasks["cm"], Mode.UPDATE, tracker)
        assert (await live(cluster, CM))["data"] == {"a": "back"}
        assert cluster.stats.verbs["delete"] == 0
        assert tracker.requested == {CM: True}

    sim(test)


def test_delete_tracking_is_left_alone_outside_update_mode(make_release: ReleaseFactory) -> None:
    """Outside update mode the CVO's ``Delete*`` helpers return before ``GetDeleteProgress``: a delete
    requested by an update is neither re-requested nor verified by install or reconcile rounds."""
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": delete_cm()})

    async def test(cluster: SimCluster) -> None:
        await cluster.create(configmap(a="live"))
        tracker = DeleteTracker()
        await apply_task(cluster, tasks["cm"], Mode.UPDATE, tracker)
        assert tracker.requested == {CM: False}
        for mode in (Mode.RECONCILE, Mode.INSTALL):
            await apply_task(cluster, tasks["cm"], mode, tracker)
            assert tracker.requested == {CM: False}
        await apply_task(cluster, tasks["cm"], Mode.UPDATE, tracker)
        assert tracker.requested == {CM: True}

    sim(test)


@pytest.mark.parametrize("mode", list(Mode))
def test_an_invalid_delete_annotation_is_an_update_error(make_release: ReleaseFactory, mode: Mode) -> None:
    doc = configmap(a="1")
    doc["metadata"]["annotations"][DELETE] = "yes"
    tasks = tasks_of(make_release, {"0000_10_a_cm.yaml": doc})

    async def test(cluster: SimCluster) -> None:
        with pytest.raises(UpdateError) as info:
            await apply_task(cluster, tasks["cm"], mode, DeleteTracker())
        assert 'invalid delete annotation "release.openshift.io/delete" value: "yes"' in (
            info.value.message + info.value.nested)
        assert await cluster.get(CM) is None

    sim(test)


# --- unserved kinds ----------------------------------------------------------------------------------


def test_an_unserved_kind_is_no_kind_match(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_widget.yaml": widget()})

    async def test(cluster: SimCluster) -> None:
        with pytest.raises(ApiError) as info:
            await apply_task(cluster, tasks["w"], Mode.UPDATE, DeleteTracker())
        assert info.value.kind is ApiErrorKind.NO_KIND_MATCH
        assert 'no matches for kind "Widget" in version "example.com/v1"' in str(info.value)
        # Once the CRD is established the same task applies.
        await cluster.create(WIDGET_CRD)
        assert (await apply_task(cluster, tasks["w"], Mode.UPDATE, DeleteTracker())).action == "created"

    sim(test)


# --- Deployment replicas -----------------------------------------------------------------------------


def test_deployment_without_replicas_means_one(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_deploy.yaml": deployment()})

    async def test(cluster: SimCluster) -> None:
        await apply_task(cluster, tasks["web"], Mode.UPDATE, DeleteTracker())
        assert (await live(cluster, DEPLOY))["spec"]["replicas"] == 1
        current = await live(cluster, DEPLOY)
        current["spec"]["replicas"] = 3  # somebody scaled it
        await cluster.update(current)
        outcome = await apply_task(cluster, tasks["web"], Mode.RECONCILE, DeleteTracker())
        assert outcome.action == "updated"
        assert (await live(cluster, DEPLOY))["spec"]["replicas"] == 1

    sim(test)


def test_deployment_explicit_replicas_are_enforced(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_a_deploy.yaml": deployment(replicas=2)})

    async def test(cluster: SimCluster) -> None:
        await cluster.create(deployment(replicas=5))
        await apply_task(cluster, tasks["web"], Mode.UPDATE, DeleteTracker())
        assert (await live(cluster, DEPLOY))["spec"]["replicas"] == 2

    sim(test)


# --- ClusterOperator ----------------------------------------------------------------------------------


def co_manifest(labels: dict | None = None) -> dict[str, Any]:
    doc = cluster_operator("foo", "4.16.0", foo_operand="1.2.3")
    doc["status"]["relatedObjects"] = [{"group": "", "resource": "namespaces", "name": "openshift-foo"}]
    if labels is not None:
        doc["metadata"]["labels"] = labels
    return doc


def test_precreate_creates_the_cluster_operator_without_status_but_related_objects(
        make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_foo_co.yaml": co_manifest()})

    async def test(cluster: SimCluster) -> None:
        await precreate_cluster_operator(cluster, tasks["foo"])
        got = await live(cluster, co_ref("foo"))
        assert got["status"] == {
            "relatedObjects": [{"group": "", "resource": "namespaces", "name": "openshift-foo"}]}
        # Precreating again does nothing (it exists).
        writes = cluster.stats.writes
        await precreate_cluster_operator(cluster, tasks["foo"])
        assert cluster.stats.writes == writes

    sim(test)


@pytest.mark.parametrize("mode", list(Mode))
def test_apply_creates_a_missing_cluster_operator_without_versions(make_release: ReleaseFactory,
                                                                   mode: Mode) -> None:
    tasks = tasks_of(make_release, {"0000_10_foo_co.yaml": co_manifest()})

    async def test(cluster: SimCluster) -> None:
        outcome = await apply_task(cluster, tasks["foo"], mode, DeleteTracker())
        assert outcome.action == "created"
        got = await live(cluster, co_ref("foo"))
        assert "versions" not in (got.get("status") or {})
        assert "conditions" not in (got.get("status") or {})

    sim(test)


@pytest.mark.parametrize("mode", [Mode.INSTALL, Mode.UPDATE])
def test_cluster_operator_is_never_updated_outside_reconcile(make_release: ReleaseFactory, mode: Mode) -> None:
    tasks = tasks_of(make_release, {"0000_10_foo_co.yaml": co_manifest(labels={"app": "foo"})})

    async def test(cluster: SimCluster) -> None:
        await cluster.create({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                              "metadata": {"name": "foo", "labels": {"other": "x"}}, "spec": {}})
        current = await live(cluster, co_ref("foo"))
        current["status"] = {"versions": [{"name": "operator", "version": "4.15.0"}]}
        await cluster.update_status(current)
        before = await live(cluster, co_ref("foo"))
        writes = cluster.stats.writes
        outcome = await apply_task(cluster, tasks["foo"], mode, DeleteTracker())
        assert outcome.action == "unchanged"
        assert cluster.stats.writes == writes
        assert await live(cluster, co_ref("foo")) == before

    sim(test)


def test_reconcile_merges_cluster_operator_metadata_only(make_release: ReleaseFactory) -> None:
    tasks = tasks_of(make_release, {"0000_10_foo_co.yaml": co_manifest(labels={"app": "foo"})})

    async def test(cluster: SimCluster) -> None:
        await cluster.create({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                              "metadata": {"name": "foo", "labels": {"other": "x"}}, "spec": {}})
        current = await live(cluster, co_ref("foo"))
        status = {"versions": [{"name": "operator", "version": "4.15.0"}],
                  "conditions": [{"type": "Available", "status": "True"}]}
        current["status"] = status
        await cluster.update_status(current)
        outcome = await apply_task(cluster, tasks["foo"], Mode.RECONCILE, DeleteTracker())
        assert outcome.action == "updated"
        got = await live(cluster, co_ref("foo"))
        assert got["metadata"]["labels"] == {"other": "x", "app": "foo"}
        assert got["metadata"]["annotations"][HA_KEY] == "true"
        assert got["status"] == status  # the operator's status is untouched
        writes = cluster.stats.writes
        assert (await apply_task(cluster, tasks["foo"], Mode.RECONCILE, DeleteTracker())).action == "unchanged"
        assert cluster.stats.writes == writes

    sim(test)
