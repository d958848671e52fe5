"""Saved and stored objects of an odd shape, in every command that reads them: a clean answer, never a traceback.

Each case of issue 21 (a ClusterVersion whose ``status.history`` is ``"x"``, ``status.conditions: 5``, a
``lastTransitionTime`` of ``0001-01-01T00:00:00+14:00``, ``spec: 1``…) goes through ``--from-file`` and through
the embedded cluster's store (a hand-edited store), into ``status``, ``status -o json``, ``upgrade status``,
``upgrade --dry-run``, ``report`` and (the store) ``override``: exit 0 with the field read as absent (one
warning naming the object and the field), or exit 1 or 2 with one ``error:`` line.  Every one of these
ended in an exception before the objects were read into views (:mod:`cvo.objects`).
"""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from cvo.objects import base
from tests.support import fuzz_targets as t

CV = ("ClusterVersion", "version")
ETCD = ("ClusterOperator", "etcd")
OC = ("OperatorCondition", "etcd")

# case -> (edits: (object, field path, value), the field the warning names, or None when the value is valid)
CASES: dict[str, tuple[list[tuple[tuple[str, str], tuple[Any, ...], Any]], str | None]] = {
    "cv status.history: x": ([(CV, ("status", "history"), "x")], "status.history"),
    "cv status.conditions: 5": ([(CV, ("status", "conditions"), 5)], "status.conditions"),
    "cv status.desired: [4.16.0]": ([(CV, ("status", "desired"), ["4.16.0"])], "status.desired"),
    "cv history entries numbers": ([(CV, ("status", "history"), [1, 2])], "status.history[0]"),
    "cv lastTransitionTime +14:00 zero": (
        [(CV, ("status", "conditions", 4, "lastTransitionTime"), "0001-01-01T00:00:00+14:00"),
         (ETCD, ("status", "conditions", 0, "lastTransitionTime"), "0001-01-01T00:00:00+14:00")], None),
    "co status: x": ([(ETCD, ("status",), "x")], "status"),
    "cv spec.overrides: x": ([(CV, ("spec", "overrides"), "x")], "spec.overrides"),
    "cv spec: 1": ([(CV, ("spec",), 1)], "spec"),
    "cv conditions: true": ([(CV, ("status", "conditions"), True)], "status.conditions"),
    "co conditions: true": ([(ETCD, ("status", "conditions"), True)], "status.conditions"),
    "oc spec.conditions: true": ([(OC, ("spec", "conditions"), True)], "spec.conditions"),
    "oc spec.overrides: x": ([(OC, ("spec", "overrides"), "x")], "spec.overrides"),
    "oc spec: 1": ([(OC, ("spec",), 1)], "spec"),
    "co lastTransitionTime a list": ([(ETCD, ("status", "conditions", 0, "lastTransitionTime"), ["x"])],
                                     "status.conditions[0].lastTransitionTime"),
    "cv lastTransitionTime a list": ([(CV, ("status", "conditions", 4, "lastTransitionTime"), ["x"])],
                                     "status.conditions[4].lastTransitionTime"),
}
# command -> (argv, the kinds it reads, JSON output)
COMMANDS: dict[str, tuple[list[str], set[str], bool]] = {
    "status": (["status"], {"ClusterVersion", "ClusterOperator", "OperatorCondition"}, False),
    "status -o json": (["status", "-o", "json"], {"ClusterVersion", "ClusterOperator", "OperatorCondition"}, True),
    "upgrade status": (["upgrade", "status"], {"ClusterVersion", "ClusterOperator"}, False),
    "upgrade --dry-run": (t.READ_COMMANDS["upgrade --dry-run"][0],
                          {"ClusterVersion", "ClusterOperator", "OperatorCondition"}, False),
    "report": (["report", "-o", "text"], {"ClusterVersion", "ClusterOperator"}, False),
}
OVERRIDE = ["override", "etcd", "Upgradeable=True", "-o", "json"]



def edited(case: str) -> list[dict[str, Any]]:
    """The demo cluster's ClusterVersion, etcd's ClusterOperator and OperatorCondition, with the case's edits."""
    objects = t.base_objects()
    wanted = {key: copy.deepcopy(objects[key]) for key in (CV, ETCD, OC)}
    for key, path, value in CASES[case][0]:
        target = wanted[key]
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
    return list(wanted.values())


def check(case: str, command: str, kinds: set[str], code: int, out: str, err: str, json_output: bool,
          every_kind_warns: bool = False) -> None:
    t.check_read_command(code, out, err, json_output)
    field = CASES[case][1]
    warnings = [line for line in err.splitlines() if "read as absent" in line]
    if field is None:
        assert warnings == [], err
        return
    kind = CASES[case][0][0][0][0]
    named = [w for w in warnings if f"field={field} " in w and f"object='{kind} " in w]
    assert len(named) <= 1, err  # one warning, however often the object is read
    if code == 0 and (every_kind_warns or kind in kinds):
        assert len(named) == 1, (command, err)


@pytest.mark.parametrize("case", CASES)
def test_saved_objects_of_an_odd_shape(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "objects.json"
    objects = edited(case)
    path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    for command, (argv, kinds, json_output) in COMMANDS.items():
        base._warned.clear()
        code, out, err = t.run_cli([*argv, "--from-file", str(path)])
        # saved objects are checked as they are read: every command warns, naming the file too
        check(case, command, kinds, code, out, err, json_output, every_kind_warns=True)
        if CASES[case][1] is not None:
            assert f"file='{path} (document 1)'" in err, err


@pytest.mark.parametrize("case", CASES)
def test_stored_objects_of_an_odd_shape(case: str, tmp_path: Path) -> None:
    objects = edited(case)
    for command, (argv, kinds, json_output) in [*COMMANDS.items(), ("override", (OVERRIDE, {"OperatorCondition"},
                                                                                 True))]:
        base._warned.clear()
        state = t.store_with(tmp_path / f"{command.replace(' ', '-')}.db", objects)
        code, out, err = t.run_cli([*argv, "--state", str(state)])
        check(case, command, kinds, code, out, err, json_output)


def test_what_reads_as_absent_is_absent_from_the_output(tmp_path: Path) -> None:
    state = t.store_with(tmp_path / "state.db", edited("cv status.history: x"))
    code, out, err = t.run_cli(["status", "--state", str(state)])
    assert code == 0 and out.splitlines()[1].split()[:2] == ["version", "True"], err  # no current version
    code, out, err = t.run_cli(["status", "--state", str(state), "-o", "json"])
    assert code == 0, err
    assert "history" not in json.loads(out)["clusterVersion"]["status"]


@pytest.mark.parametrize("case", ["oc spec.overrides: x", "oc spec: 1", "oc spec.conditions: true"])
def test_an_override_replaces_what_was_of_the_wrong_shape(case: str, tmp_path: Path) -> None:
    state = t.store_with(tmp_path / "state.db", edited(case))
    code, out, err = t.run_cli([*OVERRIDE, "--state", str(state)])
    assert code == 0, err
    spec = json.loads(out)["spec"]
    assert [(o["type"], o["status"]) for o in spec["overrides"]] == [("Upgradeable", "True")]


def test_the_zero_time_with_an_offset_is_a_time_and_the_saved_objects_moment(tmp_path: Path) -> None:
    """``0001-01-01T00:00:00+14:00`` is 0000-12-31T10:00:00Z: before the first instant a datetime holds.  As the
    only transition it is the moment the saved objects describe (--now's default), held at year 1."""
    cv = t.base_objects()[CV]
    for c in cv["status"]["conditions"]:
        c["lastTransitionTime"] = "0001-01-01T00:00:00+14:00"
    path = tmp_path / "cv.json"
    path.write_bytes(orjson.dumps(cv))
    for argv in (["status"], ["upgrade", "status"], ["report", "-o", "text"]):
        code, out, err = t.run_cli([*argv, "--from-file", str(path)])
        t.check_read_command(code, out, err, False)
    code, out, err = t.run_cli(["upgrade", "status", "--from-file", str(path), "--now", "0001-01-01T00:00:00+14:00"])
    t.check_read_command(code, out, err, False)


def test_a_deeply_nested_stored_object_is_left_out_and_the_others_stay(tmp_path: Path) -> None:
    """A value nested 1,000 levels deep broke ``status -o json``; the store now reads such an object as absent,
    with one warning naming it, and every other object as before."""
    objects = t.base_objects()
    deep = orjson.dumps({**objects[ETCD], "deep": "@"}).replace(b'"deep":"@"', b'"deep":' + t._deep(1000))
    state = t.store_with(tmp_path / "state.db", [], {("config.openshift.io", "ClusterOperator", "", "etcd"): deep})
    code, out, err = t.run_cli(["status", "--state", str(state), "-o", "json"])
    assert code == 0, err
    names = [co["metadata"]["name"] for co in json.loads(out)["clusterOperators"]]
    assert "etcd" not in names and "dns" in names and len(names) == len(
        [k for k in objects if k[0] == "ClusterOperator"]) - 1
    warnings = [line for line in err.splitlines() if "nested too deeply" in line]
    assert len(warnings) == 1 and "object='ClusterOperator etcd'" in warnings[0], err
    conn = sqlite3.connect(state)
    try:  # the row is left as it is in the file
        assert conn.execute("SELECT data FROM objects WHERE kind = 'ClusterOperator' AND name = 'etcd'").fetchone()[0] \
            == deep
    finally:
        conn.close()


def test_stored_metadata_of_the_wrong_shape_is_one_error_line(tmp_path: Path) -> None:
    """The embedded server reads its objects' metadata as the API server validated it (an update bumps
    ``generation``): a hand-edited row whose metadata has the wrong shape refuses the store, naming it (an
    override ended in a TypeError adding 1 to a list)."""
    oc = copy.deepcopy(t.base_objects()[OC])
    oc["metadata"]["generation"] = [[]]
    state = t.store_with(tmp_path / "state.db", [oc])
    for argv in (["status"], ["upgrade", "status"], OVERRIDE):
        code, out, err = t.run_cli([*argv, "--state", str(state)])
        assert (code, out) == (2, ""), err
        assert err.splitlines()[-1] == (f"error: {state}: corrupt state database: OperatorCondition.operators.coreos.com "
                                        "openshift-etcd-operator/etcd: metadata.generation must be an integer, not a list")


# The sweeps read the stored ClusterVersion too: the status writer starts from what it reads.
SWEEP_CASES = [case for case, (edits, _) in CASES.items() if edits[0][0] == CV]


@pytest.mark.parametrize("case", SWEEP_CASES)
def test_a_reconcile_on_a_stored_clusterversion_of_an_odd_shape(case: str, tmp_path: Path) -> None:
    """``cvo reconcile`` writes the status back from the ClusterVersion it read: a field of the wrong shape is
    read as absent (and so repaired by the write) or the command ends with one error line."""
    state = t.store_with(tmp_path / "state.db", edited(case))
    code, out, err = t.run_cli(["reconcile", "--state", str(state), "--release", str(t.PAYLOADS / "demo-4.16.0"),
                                "--timeout", "1h", "-o", "json"])
    t.check_read_command(code, out, err, json_output=True)
    field = CASES[case][1]
    if code == 0 and field in ("status.conditions", "status.desired", "status.history"):
        conn = sqlite3.connect(state)
        try:
            (data,) = conn.execute("SELECT data FROM objects WHERE kind = 'ClusterVersion'").fetchone()
        finally:
            conn.close()
        written = orjson.loads(data)["status"][field.split(".")[1]]
        assert isinstance(written, list | dict), (field, written)  # written anew by the sweep, not the odd value
