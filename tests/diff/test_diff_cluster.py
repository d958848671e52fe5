"""``cvo diff`` on the embedded cluster, on saved objects and against another release, checked against what the
sweep then does: the demo cluster at 4.16.0 is diffed with 4.17.0, then upgraded (forced past etcd's block), and
every object the diff names (and every one it does not) is compared between the two stores."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from cvo.cli.main import main
from cvo.cluster.api import Ref
from cvo.payload.graph import Mode, make_tasks
from cvo.payload.loader import load_release
from tests.diff.conftest import DemoUpgrade
from tests.support.helpers import PAYLOADS

NEW = str(PAYLOADS / "demo-4.17.0")
OLD = str(PAYLOADS / "demo-4.16.0")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def diff_doc(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(capsys, "diff", *args, "-o", "json")
    return code, json.loads(out)


def key(o: dict[str, Any]) -> Ref:
    return Ref(o["apiVersion"].rpartition("/")[0], o["kind"], o.get("namespace") or "", o["name"])


def content(o: dict[str, Any]) -> dict[str, Any]:
    """What cvo writes of an object: everything but its status and the server's metadata."""
    meta = o.get("metadata") or {}
    kept = {k: meta[k] for k in ("labels", "annotations", "ownerReferences") if meta.get(k)}
    return {**{k: v for k, v in o.items() if k not in ("status", "metadata")}, "metadata": kept}


def by_ref(objects: list[dict]) -> dict[Ref, dict]:
    return {Ref.of(o): o for o in objects}


def shape(doc: dict[str, Any]) -> list[tuple[str, Ref, list[str]]]:
    return [(o["action"], key(o), o["fields"]) for o in doc["objects"]]


def test_the_diff_names_exactly_what_the_upgrade_then_changes(demo_upgrade: DemoUpgrade,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = diff_doc(capsys, NEW, "--state", str(demo_upgrade.before))
    assert code == 1 and doc["differs"] and doc["mode"] == "update"
    before, after = by_ref(demo_upgrade.objects_before), by_ref(demo_upgrade.objects_after)
    named = {key(o): o["action"] for o in doc["objects"]}
    for ref, action in named.items():
        if action == "added":
            assert ref not in before and ref in after, ref
        elif action == "deleted":
            assert ref in before and ref not in after, ref
        elif action == "replaced":
            assert before[ref]["metadata"]["uid"] != after[ref]["metadata"]["uid"], ref
        else:
            assert action == "changed" and content(before[ref]) != content(after[ref]), ref
    release = load_release(NEW)
    for task in make_tasks(release.manifests, Mode.UPDATE):
        ref = Ref(task.manifest.group, task.manifest.kind, task.manifest.namespace, task.manifest.name)
        if ref not in named:  # the sweep left it as it was
            assert ref in before and content(before[ref]) == content(after[ref]), ref
    assert sum(doc["summary"][a] for a in ("added", "changed", "replaced", "deleted")) == len(named) > 10
    assert doc["summary"]["unchanged"] + len(named) == len(release.manifests)


def test_after_the_upgrade_nothing_differs(demo_upgrade: DemoUpgrade, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = diff_doc(capsys, NEW, "--state", str(demo_upgrade.after))
    assert (code, doc["objects"], doc["mode"]) == (0, [], "reconcile")
    code, out, _ = run(capsys, "diff", NEW, "--state", str(demo_upgrade.after))
    assert code == 0 and out.startswith("reconcile to 4.17.0 against cluster: no differences")


def test_drift_shows_only_the_fields_the_manifest_sets(demo_upgrade: DemoUpgrade, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """An operator scaled a Deployment, paused it, annotated it and changed its image; only the image is
    cvo's to put back (replicas too: the manifest sets it)."""
    state = tmp_path / "drift.db"
    state.write_bytes(demo_upgrade.after.read_bytes())
    conn = sqlite3.connect(state)
    row = conn.execute("SELECT data FROM objects WHERE kind='Deployment' AND name='etcd-operator'").fetchone()
    deployment = json.loads(row[0])
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = "quay.io/someone/else:latest"
    deployment["spec"]["paused"] = True
    deployment["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"] = "/dev/termination-log"
    deployment["metadata"].setdefault("annotations", {})["operator.example.com/seen"] = "yes"
    conn.execute("UPDATE objects SET data=? WHERE kind='Deployment' AND name='etcd-operator'",
                 (json.dumps(deployment),))
    conn.commit()
    conn.close()
    code, doc = diff_doc(capsys, NEW, "--state", str(state))
    assert code == 1
    assert shape(doc) == [("changed", Ref("apps", "Deployment", "openshift-etcd-operator", "etcd-operator"),
                           ["spec.template.spec.containers[0].image"])]
    text = doc["objects"][0]["diff"]
    assert f"+        image: {image}" in text and "-        image: quay.io/someone/else:latest" in text
    for owned in ("paused", "terminationMessagePath", "operator.example.com/seen"):
        assert owned not in text


def test_saved_objects_diff_as_the_cluster_they_were_saved_from(demo_upgrade: DemoUpgrade, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "cluster.yaml"
    saved.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": demo_upgrade.objects_before}))
    _, cluster = diff_doc(capsys, NEW, "--state", str(demo_upgrade.before))
    code, from_file = diff_doc(capsys, NEW, "--from-file", str(saved))
    assert code == 1
    assert from_file["against"].startswith("cluster (saved objects from ")
    assert {k: v for k, v in from_file.items() if k != "against"} == {k: v for k, v in cluster.items()
                                                                     if k != "against"}


def test_two_releases_diff_as_a_cluster_that_ran_the_first(demo_upgrade: DemoUpgrade,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    _, cluster = diff_doc(capsys, NEW, "--state", str(demo_upgrade.before))
    code, releases = diff_doc(capsys, NEW, "--from", OLD)
    assert code == 1 and releases["against"] == "release 4.16.0"
    assert shape(releases) == shape(cluster)
    assert (releases["byKind"], releases["byRunlevel"]) == (cluster["byKind"], cluster["byRunlevel"])


def test_plan_diff_from_and_the_upgrade_dry_run_say_the_same(demo_upgrade: DemoUpgrade,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    state = ["--state", str(demo_upgrade.before)]
    _, diff = diff_doc(capsys, NEW, *state)
    code, out, _ = run(capsys, "plan", NEW, "--diff-from", "cluster", "-o", "json", *state)
    assert code == 1 and json.loads(out) == diff
    code, out, _ = run(capsys, "upgrade", "--to", NEW, "--dry-run", "--diff", "-o", "json", *state)
    dry = json.loads(out)
    assert code == 1 and dry["blocked"]  # etcd holds the minor update back: the gates' verdict, as without --diff
    assert dry["diff"] == diff
    code, out, _ = run(capsys, "upgrade", "--to", NEW, "--dry-run", "--diff", *state)
    assert code == 1
    gates, _, rest = out.partition("\ndiff -u -N ")
    assert "Verdict: BLOCKED" in gates and gates.endswith("\n")  # a blank line between the gates and the diff
    assert "update to 4.17.0 against cluster: 8 added, 16 changed, 1 replaced, 1 deleted" in rest


def test_text_output(demo_upgrade: DemoUpgrade, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "diff", NEW, "--state", str(demo_upgrade.before))
    assert code == 1 and "cluster: embedded" in err
    lines = out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("diff -u -N ")]
    for i in heads:
        old, new = lines[i].split()[3:5]
        assert lines[i + 1].startswith(f"--- {old}\t(") and lines[i + 2] == f"+++ {new}"
        assert old.startswith("live/") and new.startswith("4.17.0/")
    assert "+++ 4.17.0/core.v1.Namespace.openshift-cluster-olm-operator" in lines
    summary = lines[lines.index("update to 4.17.0 against cluster: 8 added, 16 changed, 1 replaced, 1 deleted "
                                "(132 unchanged, 0 skipped)"):]
    assert summary[2].split() == ["KIND", "ADDED", "CHANGED", "REPLACED", "DELETED"]
    assert ["Deployment.apps", "1", "15", "0", "1"] in [row.split() for row in summary]
    assert ["RUN", "LEVEL", "ADDED", "CHANGED", "REPLACED", "DELETED"] in [row.split() for row in summary]


def test_yaml_is_the_json_document(demo_upgrade: DemoUpgrade, capsys: pytest.CaptureFixture[str]) -> None:
    _, as_json = diff_doc(capsys, NEW, "--state", str(demo_upgrade.before))
    code, out, _ = run(capsys, "diff", NEW, "--state", str(demo_upgrade.before), "-o", "yaml")
    assert code == 1 and yaml.safe_load(out) == as_json


def test_errors_exit_2_as_kubectl_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "diff", NEW, "--state", str(tmp_path / "none-yet.db"))
    assert (code, out) == (2, "") and err.startswith("error: no cluster has been installed yet")
    code, out, err = run(capsys, "diff", str(tmp_path / "missing"), "--state", str(tmp_path / "x.db"))
    assert (code, out) == (2, "") and err.startswith("error: ") and "Traceback" not in err
    code, _, err = run(capsys, "diff", NEW, "--from", OLD, "--from-file", str(tmp_path / "x.yaml"))
    assert code == 2 and "--from-file" in err
    code, _, err = run(capsys, "upgrade", "--to", NEW, "--diff", "--state", str(tmp_path / "x.db"))
    assert code == 2 and "--diff: with --dry-run only" in err
    code, _, err = run(capsys, "plan", NEW, "--diff-from", "cluster", "-o", "dot")
    assert code == 2 and "-o dot" in err
