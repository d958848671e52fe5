"""Saved objects as a read-only cluster (--from-file): the reader, its limits and errors, the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cvo.cli.main import main
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, ReadOnlyCluster, Ref, cv_ref
from cvo.cluster.saved.cluster import SavedCluster
from cvo.cluster.saved.reader import read_paths
from cvo.payload import limits
from cvo.payload.limits import InputError
from tests.support.upgrade_status_objects import at, co, cv, entry


def objects() -> tuple[dict, list[dict]]:
    history = [entry("4.17.0", "Partial", at()), entry("4.16.3", "Completed", at(days=-3), at(days=-3, minutes=45)),
               entry("4.16.0", "Completed", at(days=-9), at(days=-9, minutes=30))]
    cos = [co("authentication", "4.17.0", since=at(minutes=12)),
           co("etcd", "4.16.3", progressing="True", since=at(minutes=15), progressing_reason="NodeInstaller",
              progressing_message="NodeInstallerProgressing: 1 node is at revision 7\nwaiting for 2 more"),
           co("kube-apiserver", "4.16.3", degraded="True", degraded_reason="StaticPods",
              degraded_since=at(minutes=3), since=at(minutes=2))]
    return cv("4.17.0", history, since=at(minutes=1)), cos


def as_list(items: list[dict]) -> dict:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def must_gather(root: Path) -> Path:
    """The shape of a must-gather: one object per file under cluster-scoped-resources."""
    cv_obj, cos = objects()
    base = root / "quay-io-openshift-must-gather-sha256-abc" / "cluster-scoped-resources" / "config.openshift.io"
    (base / "clusterversions").mkdir(parents=True)
    (base / "clusterversions" / "version.yaml").write_text(yaml.safe_dump(cv_obj))
    (base / "clusteroperators").mkdir()
    for c in cos:
        (base / "clusteroperators" / f"{c['metadata']['name']}.yaml").write_text(yaml.safe_dump(c))
    (root / "timestamp").write_text("2024-03-01 10:20:00\n")  # not an object file: ignored
    return root


def test_reads_single_objects_lists_json_and_directories(tmp_path: Path) -> None:
    cv_obj, cos = objects()
    (tmp_path / "cv.yaml").write_text(yaml.safe_dump(cv_obj))
    (tmp_path / "co.yaml").write_text(yaml.safe_dump(as_list(cos[:2])))
    (tmp_path / "more.json").write_text(json.dumps(as_list(cos[2:])))
    found = read_paths([tmp_path])
    assert sorted(o["metadata"]["name"] for _, o in found) == ["authentication", "etcd", "kube-apiserver", "version"]
    assert {f.rsplit("/", 1)[-1] for f, _ in found} == {"cv.yaml", "co.yaml", "more.json"}


@pytest.mark.parametrize(("content", "problem"), [
    ("kind: ClusterOperator\nmetadata: {name: a}\n---\n- 1\n", "(document 2): expected an object (a mapping), got list"),
    ("apiVersion: v1\nkind: List\nitems:\n- {kind: ClusterOperator, metadata: {name: a}}\n- 3\n",
     "(document 1): List: items[1] is not an object with a kind"),
    ("kind: ClusterOperator\nmetadata: {}\n", "(document 1): ClusterOperator without metadata.name"),
    ("metadata: {name: a}\n", "(document 1): object without a kind"),
    ("kind: ClusterOperator\nmetadata: {name: [a\n", "invalid YAML or JSON"),
    ("kind: List\nitems: {a: 1}\n", "(document 1): List: items is not a list"),
])
def test_bad_input_is_one_line_naming_file_and_document(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "objects.yaml"
    path.write_text(content)
    with pytest.raises(InputError) as caught:
        read_paths([path])
    assert str(caught.value).startswith(str(path)) and problem in str(caught.value)
    assert "\n" not in str(caught.value)


def test_limits_of_the_payload_loader_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"kind": "X", "metadata": {"name": "a"}, "spec": ' + "[" * 300 + "]" * 300 + "}")
    with pytest.raises(InputError, match="nested deeper than 200 levels"):
        read_paths([deep])
    big = tmp_path / "big.yaml"
    big.write_text("kind: X\nmetadata: {name: a}\ndata: " + "x" * 5000 + "\n")
    monkeypatch.setattr(limits, "MAX_FILE_BYTES", 1024)
    with pytest.raises(InputError, match="over cvo's limit of 1 KiB"):
        read_paths([big])


def test_too_many_documents_and_alias_bombs_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many = tmp_path / "many.yaml"
    many.write_text("---\nkind: X\nmetadata: {name: a}\n" * 5)
    monkeypatch.setattr(limits, "MAX_DOCUMENTS_PER_FILE", 3)
    with pytest.raises(InputError, match=str(many)):
        read_paths([many])
    bomb = tmp_path / "bomb.yaml"
    lines = ["kind: X", "metadata: {name: a}", 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    bomb.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="alias"):
        read_paths([bomb])


def test_missing_path_and_fifo_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_paths([tmp_path / "nope.yaml"])


def test_saved_cluster_reads_and_has_no_writes() -> None:
    """A read-only cluster, not a cluster whose writes raise: it has no write to call at all."""
    cv_obj, cos = objects()
    cluster = SavedCluster([cv_obj, *cos])
    reader: ReadOnlyCluster = cluster  # what the commands that read saved objects take (checked by mypy)
    assert not isinstance(reader, Cluster)
    assert not any(hasattr(cluster, verb) for verb in ("create", "update", "update_status", "delete"))

    async def go() -> None:
        assert (await cluster.get(cv_ref()))["status"]["desired"]["version"] == "4.17.0"
        assert [o["metadata"]["name"] for o in await cluster.list("config.openshift.io", "ClusterOperator")] == [
            "authentication", "etcd", "kube-apiserver"]
        assert await cluster.serves("config.openshift.io/v1", "ClusterOperator")
        assert not await cluster.serves("apps/v1", "Deployment")
        assert [e async for e in cluster.watch("config.openshift.io", "ClusterOperator")] == []

    asyncio.run(go())


yaml_text = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                             st.sampled_from(["kind", "metadata", "name", "items", "apiVersion", "x"]), inner, max_size=4),
                         max_leaves=20)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(b"kind: '\n\n'\n")  # found by hypothesis: the kind's newline went into the one-line error
@example(b"kind: 'A\nList'\nitems: 3\n")
@given(st.one_of(st.binary(max_size=300), yaml_text.map(lambda v: yaml.safe_dump(v).encode()),
                 yaml_text.map(lambda v: json.dumps(v).encode())))
def test_reader_never_crashes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(data)
    try:
        found = read_paths([path])
    except InputError as err:
        assert str(err).startswith(str(path)) and "\n" not in str(err)
        return
    for _, obj in found:
        assert isinstance(obj["kind"], str) and isinstance(obj["metadata"]["name"], str)


# --- the commands ---------------------------------------------------------------------------------


def test_upgrade_status_on_a_must_gather_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = must_gather(tmp_path / "mg")
    assert main(["upgrade", "status", "--from-file", str(root), "--details", "all"]) == 0
    out = capsys.readouterr().out
    # now = the latest transition: etcd's and kube-apiserver's at 15m (kube-apiserver degraded 12m: a warning)
    assert out.startswith("= Control Plane =\nAssessment:      Progressing\nTarget Version:  4.17.0 (from 4.16.3)\n"
                          "Updating:        etcd\nCompletion:      33% (1 operators updated, 1 updating, 1 waiting)\n"
                          "Duration:        15m")
    # a multi-line message goes on in the MESSAGE column, as oc writes it
    assert ("NAME   SINCE   REASON          MESSAGE\netcd   now     NodeInstaller   NodeInstallerProgressing: 1 node "
            "is at revision 7\n" + " " * 31 + "waiting for 2 more\n") in out
    assert "Message: Cluster Operator kube-apiserver is degraded (StaticPods)\n  Since:       12m\n" in out
    assert "Forecast" not in out  # no records: exactly oc's view


def test_now_flag_and_files_repeatable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cv_obj, cos = objects()
    (tmp_path / "cv.yaml").write_text(yaml.safe_dump(cv_obj))
    (tmp_path / "co.yaml").write_text(yaml.safe_dump(as_list(cos)))
    assert main(["upgrade", "status", "--from-file", str(tmp_path / "cv.yaml"), "--from-file",
                 str(tmp_path / "co.yaml"), "--now", at(hours=1), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["evaluatedAt"] == at(hours=1) and doc["controlPlane"]["duration"] == "1h"
    assert [h["impact"]["summary"] for h in doc["health"]] == ["Cluster Operator kube-apiserver is degraded (StaticPods)"]
    assert doc["health"][0]["impact"]["level"] == "Error"  # degraded 57 minutes: over 40


def test_status_and_dry_run_read_saved_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = must_gather(tmp_path / "mg")
    assert main(["status", "--from-file", str(root)]) == 0
    assert "kube-apiserver" in capsys.readouterr().out
    assert main(["upgrade", "--to", "payloads/demo-4.16.3", "--from-file", str(root)]) == 2
    assert "use it with --dry-run" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--now", "yesterday"], "--now: 'yesterday' is not an RFC 3339 time"),
    (["--state", "x.db"], "--state cannot be used with --from-file"),
])
def test_bad_flags_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    root = must_gather(tmp_path / "mg")
    assert main(["upgrade", "status", "--from-file", str(root), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1


def test_bad_file_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "co.yaml"
    path.write_text("kind: List\nitems: [3]\n")
    assert main(["upgrade", "status", "--from-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {path} (document 1): List: items[0] is not an object with a kind\n"


def test_no_clusterversion_is_ocs_error_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, cos = objects()
    path = tmp_path / "co.yaml"
    path.write_text(yaml.safe_dump(as_list(cos)))
    assert main(["upgrade", "status", "--from-file", str(path)]) == 1
    assert capsys.readouterr().err.startswith("error: no cluster version information available")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["--details", "all", "health", "bogus", "-o", "yaml", "json", "--now",
                                 "2024-03-01T10:00:00Z", "x", "--from-file"]), max_size=5))
def test_cli_entry_never_crashes(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    root = tmp_path / "mg"
    if not root.exists():
        must_gather(root)
    try:
        code = main(["upgrade", "status", "--from-file", str(root), *extra])
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code
    assert code in (0, 1, 2)
    assert "Traceback" not in capsys.readouterr().err


def test_optional_reads_the_user_may_not_make_leave_ocs_view(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = must_gather(tmp_path / "mg")
    real_get = SavedCluster.get

    async def forbidden_configmaps(self: SavedCluster, ref: Ref) -> dict | None:
        if ref.kind == "ConfigMap":
            raise ApiError(ApiErrorKind.FORBIDDEN, "configmaps is forbidden", ref)
        return await real_get(self, ref)

    monkeypatch.setattr(SavedCluster, "get", forbidden_configmaps)
    assert main(["upgrade", "status", "--from-file", str(root)]) == 0
    assert capsys.readouterr().out.startswith("= Control Plane =\nAssessment:      Progressing\n")
