"""``cvo apply``, ``cvo patch`` and ``cvo delete`` (cvo/cli/objects_cmd.py): kubectl's verbs and lines on the
embedded cluster, kinds named as kubectl names them, RFC 7386 and RFC 6902 patches, one error line for the rest."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.cli.kind_names import builtin_kinds, crd_kinds, resolve
from cvo.cli.main import main
from cvo.cli.objects_cmd import PatchError, json_patch, merge_patch
from tests.support.helpers import REPO

DB = REPO / "hack" / "demo-db.yaml"


def cvo(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """An embedded cluster with 4.16.0 installed and the machine-config operator's pools (worker-0 among them)."""
    path, ops = tmp_path / "cluster.db", tmp_path / "ops.yaml"
    ops.write_text(yaml.safe_dump({"default": {"delay": "10s"}, "machine-config": {
        "nodes": {"drain": "1m", "reboot": "2m"}, "pools": {"master": 1, "worker": 1, "infra": {"nodes": 1,
                                                                                                   "paused": True}}}}))
    code, _, err = cvo(capsys, "install", str(REPO / "payloads" / "demo-4.16.0"), "--state", str(path),
                       "--operators", str(ops))
    assert code == 0, err
    return path


def test_apply_creates_then_leaves_unchanged_then_configures(state: Path, capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    code, out, _ = cvo(capsys, "apply", "-f", str(DB), "--state", str(state))
    assert (code, out) == (0, "namespace/demo created\npod/db-0 created\npoddisruptionbudget.policy/db created\n")
    code, out, _ = cvo(capsys, "apply", "-f", str(DB), "--state", str(state))
    assert (code, out) == (0, "namespace/demo unchanged\npod/db-0 unchanged\npoddisruptionbudget.policy/db unchanged\n")
    changed = tmp_path / "db.yaml"
    changed.write_text(DB.read_text().replace("minAvailable: 1", "minAvailable: 0"))
    code, out, _ = cvo(capsys, "apply", "-f", str(changed), "--state", str(state))
    assert out.splitlines()[-1] == "poddisruptionbudget.policy/db configured"
    # a JSON patch's test operation reads the budget back: minAvailable is 0 now
    code, out, _ = cvo(capsys, "patch", "pdb", "db", "-n", "demo", "--type", "json", "--state", str(state),
                       "-p", '[{"op":"test","path":"/spec/minAvailable","value":0}]')
    assert (code, out) == (0, "poddisruptionbudget.policy/db patched (no change)\n")


def test_patch_a_pool_by_its_short_name_and_delete_a_budget(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cvo(capsys, "apply", "-f", str(DB), "--state", str(state))
    code, out, _ = cvo(capsys, "patch", "mcp", "infra", "--type", "merge", "-p", '{"spec":{"paused":false}}',
                       "--state", str(state))
    assert (code, out) == (0, "machineconfigpool.machineconfiguration.openshift.io/infra patched\n")
    code, out, _ = cvo(capsys, "patch", "machineconfigpools.machineconfiguration.openshift.io", "infra",
                       "-p", '{"spec":{"paused":false}}', "--state", str(state))
    assert out == "machineconfigpool.machineconfiguration.openshift.io/infra patched (no change)\n"
    code, out, _ = cvo(capsys, "delete", "pdb", "db", "-n", "demo", "--state", str(state))
    assert (code, out) == (0, 'poddisruptionbudget.policy "db" deleted\n')
    code, out, err = cvo(capsys, "delete", "pdb", "db", "-n", "demo", "--state", str(state))
    assert (code, out, err.splitlines()[-1]) == (1, "", 'error: poddisruptionbudgets.policy "db" not found in namespace demo')
    code, out, _ = cvo(capsys, "delete", "pdb", "db", "-n", "demo", "--ignore-not-found", "--state", str(state))
    assert (code, out) == (0, "")
    code, out, _ = cvo(capsys, "delete", "-f", str(DB), "--ignore-not-found", "--state", str(state))
    # the Namespace goes first, with what it holds: the Pod is not there any more
    assert (code, out) == (0, 'namespace "demo" deleted\n')


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["patch", "pdbx", "db", "-p", "{}"], 1, "error: the server doesn't have a resource type \"pdbx\"; did you mean 'pdb'?"),
    (["patch", "mcp", "nope", "-p", "{}"], 1, 'error: machineconfigpools.machineconfiguration.openshift.io "nope" not found'),
    (["patch", "mcp", "infra", "-p", "{nope"], 2, "error: --patch: not JSON: Expecting property name enclosed in double "
                                                  "quotes at character 1"),
    (["patch", "mcp", "infra", "-p", "[1]"], 2, "error: --patch: a merge patch is a JSON object, e.g. "
                                                "'{\"spec\":{\"paused\":false}}'"),
    (["patch", "mcp", "infra", "-p", '{"metadata":{"name":"other"}}'], 1,
     "error: machineconfigpools.machineconfiguration.openshift.io \"infra\": a patch may not change the object's "
     "apiVersion, kind, name or namespace"),
    (["patch", "mcp", "infra", "--type", "json", "-p", '[{"op":"remove","path":"/spec/nothing"}]'], 1,
     'error: machineconfigpools.machineconfiguration.openshift.io "infra" is invalid: the path /spec/nothing does '
     "not exist"),
    (["delete", "pdb"], 2, "error: give KIND NAME (e.g. 'cvo delete pdb db -n demo') or -f FILE, not both"),
    (["apply", "-f", "/nonexistent.yaml"], 2, "error: /nonexistent.yaml: file not found"),
])
def test_bad_requests_are_one_error_line(state: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int,
                                         message: str) -> None:
    got, out, err = cvo(capsys, *argv, "--state", str(state))
    assert (got, out, err.strip().splitlines()[-1]) == (code, "", message)
    assert "Traceback" not in err


def test_apply_refuses_a_file_of_odd_objects_before_writing_anything(state: Path, capsys: pytest.CaptureFixture[str],
                                                                     tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n---\nkind: ConfigMap\n")
    code, out, err = cvo(capsys, "apply", "-f", str(bad), "--state", str(state))
    assert (code, out) == (2, "")
    assert err.strip().splitlines()[-1] == f"error: {bad} (document 2): ConfigMap without metadata.name"
    code, out, _ = cvo(capsys, "delete", "cm", "a", "--state", str(state))
    assert code == 1  # nothing was created


def test_kinds_resolve_as_kubectl_names_them() -> None:
    crd = {"spec": {"group": "machineconfiguration.openshift.io", "scope": "Cluster",
                    "names": {"kind": "MachineConfigPool", "plural": "machineconfigpools", "singular":
                              "machineconfigpool", "shortNames": ["mcp"]}}}
    kinds = builtin_kinds() + crd_kinds([crd, {"spec": "odd"}, {}])
    for name, want in [("pdb", ("policy", "PodDisruptionBudget")), ("Pod", ("", "Pod")), ("pods", ("", "Pod")),
                       ("deploy", ("apps", "Deployment")), ("deployments.apps", ("apps", "Deployment")),
                       ("mcp", ("machineconfiguration.openshift.io", "MachineConfigPool")),
                       ("co", ("config.openshift.io", "ClusterOperator"))]:
        found = resolve(name, kinds)
        assert found is not None and (found.group, found.kind) == want, name
    assert resolve("pods.apps", kinds) is None
    mcp = resolve("mcp", kinds)
    assert mcp is not None and not mcp.namespaced


def test_patches_follow_the_rfcs() -> None:
    doc: dict[str, Any] = {"a": {"b": 1, "c": [1, 2]}, "d": "x"}
    assert merge_patch(doc, {"a": {"b": None, "e": 2}, "d": [3]}) == {"a": {"c": [1, 2], "e": 2}, "d": [3]}
    assert json_patch(doc, [{"op": "add", "path": "/a/c/-", "value": 3}, {"op": "remove", "path": "/d"},
                            {"op": "move", "from": "/a/b", "path": "/b"},
                            {"op": "copy", "from": "/b", "path": "/a/f"},
                            {"op": "replace", "path": "/a/c/0", "value": 9}]) == {"a": {"c": [9, 2, 3], "f": 1}, "b": 1}
    assert doc == {"a": {"b": 1, "c": [1, 2]}, "d": "x"}  # on a copy
    with pytest.raises(PatchError, match="test failed"):
        json_patch(doc, [{"op": "test", "path": "/d", "value": "y"}])


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=12)
OPS = st.lists(st.fixed_dictionaries({"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "x"]),
                                      "path": st.sampled_from(["", "/a", "/a/0", "/a/-", "/b/c", "x", "/~1", 3])},
                                     optional={"value": JSON, "from": st.sampled_from(["/a", "/b", "/zz", ""])}),
               max_size=4) | JSON


@settings(max_examples=300, deadline=None)
@given(JSON, OPS)
def test_any_patch_applies_or_is_a_patch_error(doc: Any, ops: Any) -> None:
    before = json.dumps(doc)
    with contextlib.suppress(PatchError):
        json_patch(doc, ops)
    merge_patch(doc, ops)
    assert json.dumps(doc) == before  # the target is never changed in place
