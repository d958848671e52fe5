"""What the diff decides per object (cvo/diff/compute.py), by the apply's rules (cvo/runner/apply.py): one case
per rule, each against the live object the rule is about."""

from __future__ import annotations

import base64
import itertools
from typing import Any

import pytest

from cvo.cluster.api import Ref
from cvo.diff.compute import Diff, ObjectDiff, diff_plan
from cvo.diff.render import document, text
from cvo.diff.sources import against_release, cluster_filter, mode_for, plan_of
from cvo.payload.filters import ApplyFilter, LoadFilter
from cvo.payload.graph import Mode
from cvo.payload.loader import load_release
from tests.support.helpers import ReleaseFactory, cluster_operator, obj

DELETE = "release.openshift.io/delete"
CREATE_ONLY = "release.openshift.io/create-only"
HA_KEY = "include.release.openshift.io/self-managed-high-availability"
RELEASES = itertools.count()


def configmap(data: dict[str, str], annotations: dict | None = None, labels: dict | None = None) -> dict[str, Any]:
    doc = obj("ConfigMap", "cm", "ns", annotations=annotations, data=data)
    if labels is not None:
        doc["metadata"]["labels"] = labels
    return doc


def widget(size: int, labels: dict | None = None) -> dict[str, Any]:
    doc = obj("Widget", "w", "ns", api="example.com/v1", spec={"size": size})
    if labels is not None:
        doc["metadata"]["labels"] = labels
    return doc


def diff_of(make_release: ReleaseFactory, docs: list[dict], live: list[dict], mode: Mode = Mode.UPDATE,
            overrides: list[dict] | None = None) -> Diff:
    """The diff of a release of ``docs`` against a cluster holding ``live``."""
    release = load_release(make_release({"0000_50_x_01.yaml": docs}, name=f"r{next(RELEASES)}"))
    cv = {"spec": {"overrides": overrides or []}}
    plan = plan_of(release, mode, LoadFilter(), cluster_filter(cv, ApplyFilter()))
    found: dict[Ref, dict[str, Any] | None] = {Ref.of(o): o for o in live}
    return diff_plan(plan, found, "cluster", olm=False)


def only(diff: Diff) -> ObjectDiff:
    assert len(diff.objects) == 1, [(o.action, o.kind, o.name) for o in diff.objects]
    return diff.objects[0]


def test_a_missing_object_is_added_with_the_whole_object(make_release: ReleaseFactory) -> None:
    found = only(diff_of(make_release, [configmap({"k": "v"})], []))
    assert (found.action, found.before, found.fields) == ("added", None, ())
    assert found.after is not None and found.after["data"] == {"k": "v"}


def test_a_changed_field_shows_and_the_live_objects_own_do_not(make_release: ReleaseFactory) -> None:
    live = configmap({"k": "old", "extra": "kept"}, labels={"operator": "owned"})
    live["metadata"]["resourceVersion"] = "7"
    live["metadata"]["annotations"]["operator.example.com/touched"] = "yes"
    found = only(diff_of(make_release, [configmap({"k": "new"})], [live]))
    assert found.action == "changed"
    assert found.fields == ("data.k",)
    assert found.before is not None and found.after is not None
    assert found.before["data"] == {"k": "old"} and found.after["data"] == {"k": "new"}
    shown = text(Diff("4.17.0", "", "cluster", Mode.UPDATE, [found]))
    assert "extra" not in shown and "operator" not in shown and "resourceVersion" not in shown


def test_nothing_to_write_is_unchanged(make_release: ReleaseFactory) -> None:
    live = configmap({"k": "v", "extra": "x"}, labels={"someone": "else"})
    diff = diff_of(make_release, [configmap({"k": "v"})], [live])
    assert (diff.objects, diff.unchanged) == ([], 1)


def test_a_typed_kind_merges_labels_key_by_key(make_release: ReleaseFactory) -> None:
    live = configmap({"k": "v"}, labels={"a": "1", "b": "live"})
    found = only(diff_of(make_release, [configmap({"k": "v"}, labels={"b": "manifest"})], [live]))
    assert found.fields == ("metadata.labels.b",)
    assert found.after is not None and found.after["metadata"]["labels"] == {"b": "manifest"}


def test_a_custom_resource_replaces_its_labels_with_a_changed_spec(make_release: ReleaseFactory) -> None:
    """applyUnstructured: a changed spec takes the manifest's labels whole (the live one's extra label goes);
    metadata-only drift is left alone."""
    live = widget(1, labels={"extra": "live"})
    found = only(diff_of(make_release, [widget(2)], [live]))
    assert set(found.fields) == {"spec.size", "metadata.labels"}
    assert diff_of(make_release, [widget(1)], [live]).objects == []


def test_create_only_objects_and_cluster_operators_are_never_updated(make_release: ReleaseFactory) -> None:
    co = cluster_operator("x", "2.0.0")
    live_co = cluster_operator("x", "1.0.0")
    cm = configmap({"k": "new"}, annotations={HA_KEY: "true", CREATE_ONLY: "true"})
    diff = diff_of(make_release, [cm, co], [configmap({"k": "old"}), live_co])
    assert (diff.objects, diff.unchanged) == ([], 2)


def test_a_cluster_operators_metadata_is_merged_in_reconcile_mode_only(make_release: ReleaseFactory) -> None:
    co = cluster_operator("x", "1.0.0")
    co["metadata"]["labels"] = {"team": "x"}
    live = cluster_operator("x", "1.0.0")
    assert diff_of(make_release, [co], [live], Mode.UPDATE).objects == []
    found = only(diff_of(make_release, [co], [live], Mode.RECONCILE))
    assert found.fields == ("metadata.labels.team",)


def test_a_delete_annotation_deletes_in_update_mode_only(make_release: ReleaseFactory) -> None:
    gone = configmap({"k": "v"}, annotations={HA_KEY: "true", DELETE: "true"})
    found = only(diff_of(make_release, [gone], [configmap({"k": "v"})]))
    assert (found.action, found.after) == ("deleted", None)
    assert diff_of(make_release, [gone], [configmap({"k": "v"})], Mode.RECONCILE).objects == []
    assert diff_of(make_release, [gone], []).objects == []  # already gone: nothing to do


def test_an_invalid_delete_annotation_fails_the_task(make_release: ReleaseFactory) -> None:
    bad = configmap({"k": "v"}, annotations={HA_KEY: "true", DELETE: "yes"})
    found = only(diff_of(make_release, [bad], []))
    assert found.action == "invalid" and "invalid delete annotation" in found.message


def test_a_job_whose_pod_template_changed_is_replaced(make_release: ReleaseFactory) -> None:
    def job(image: str) -> dict[str, Any]:
        return obj("Job", "j", "ns", api="batch/v1", spec={"template": {"spec": {
            "containers": [{"name": "c", "image": image}], "restartPolicy": "Never"}}})

    found = only(diff_of(make_release, [job("b")], [job("a")]))
    assert found.action == "replaced"
    assert found.fields == ("spec.template.spec.containers[0].image",)


def test_an_unmanaged_override_skips_the_object(make_release: ReleaseFactory) -> None:
    override = {"kind": "ConfigMap", "group": "", "namespace": "ns", "name": "cm", "unmanaged": True}
    diff = diff_of(make_release, [configmap({"k": "new"})], [configmap({"k": "old"})], overrides=[override])
    assert (diff.objects, diff.skipped) == ([], 1)


def test_a_secrets_values_never_show(make_release: ReleaseFactory) -> None:
    def secret(**data: str) -> dict[str, Any]:
        return obj("Secret", "s", "ns", data={k: base64.b64encode(v.encode()).decode() for k, v in data.items()})

    wanted = obj("Secret", "s", "ns", stringData={"password": "hunter3", "user": "admin"})
    found = only(diff_of(make_release, [wanted], [secret(password="hunter2", user="admin")]))
    assert found.fields == ("data.password",)
    assert found.before is not None and found.after is not None
    assert found.before["data"] == {"password": "*** (before)", "user": "***"}
    assert found.after["data"] == {"password": "*** (after)", "user": "***"}
    shown = text(Diff("4.17.0", "", "cluster", Mode.UPDATE, [found])) + str(document(Diff("4.17.0", "", "c", Mode.UPDATE, [found])))
    for value in ("hunter", "aHVudGVy", "admin", "YWRtaW4"):
        assert value not in shown
    added = only(diff_of(make_release, [wanted], []))
    assert added.after is not None and set(added.after["data"].values()) == {"*** (after)"}


@pytest.mark.parametrize(("running", "mode"), [(None, Mode.INSTALL), ("4.16.0", Mode.RECONCILE),
                                               ("4.15.0", Mode.UPDATE)])
def test_the_mode_is_the_one_the_cluster_version_calls_for(running: str | None, mode: Mode) -> None:
    cv = None if running is None else {"status": {"desired": {"version": running}}}
    assert mode_for(cv, "4.16.0") is mode


def test_capabilities_the_cluster_had_enabled_stay_enabled() -> None:
    cv = {"status": {"capabilities": {"enabledCapabilities": ["Console"]}}}
    base = ApplyFilter(enabled_capabilities=frozenset({"baremetal"}))
    assert cluster_filter(cv, base).enabled_capabilities == {"baremetal", "Console"}


def test_two_releases(make_release: ReleaseFactory) -> None:
    old = load_release(make_release({"0000_50_x_01.yaml": [configmap({"k": "old"})]}, name="old", version="4.16.0"))
    new = load_release(make_release({"0000_50_x_01.yaml": [configmap({"k": "new"}), widget(1)]}, name="new",
                                    version="4.17.0"))
    diff = against_release(new, old, LoadFilter(), ApplyFilter())
    assert [(o.action, o.kind) for o in diff.objects] == [("changed", "ConfigMap"), ("added", "Widget")]
    assert diff.against == "release 4.16.0"
    assert text(diff).splitlines()[0].startswith("diff -u -N 4.16.0/core.v1.ConfigMap.ns.cm 4.17.0/")
