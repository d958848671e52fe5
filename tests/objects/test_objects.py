"""Typed views of the objects cvo reads (cvo.objects): the schema check, the views, timestamps, finding the CRDs."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tomllib
import typing
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.log import configure
from cvo.objects import (
    KINDS,
    ClusterOperator,
    ClusterVersion,
    OperatorCondition,
    Refused,
    SchemaMissing,
    Time,
)
from cvo.objects import crds as crds_module
from cvo.objects.schema import ABSENT, Problem, check
from cvo.objects.times import from_ns, parse_time, to_ns
from cvo.objects.view import View, build, converter, key_of
from cvo.payload.limits import MAX_DEPTH
from cvo.status.godur import ZERO_TIME
from tests.support import fuzz_targets as t

REPO = Path(__file__).resolve().parents[2]
HOUR_NS = 3600 * 10**9



# --- timestamps ------------------------------------------------------------------------------------------------


def test_the_zero_time_with_an_offset_is_before_the_first_datetime_and_never_overflows() -> None:
    assert parse_time("0001-01-01T00:00:00+14:00") == ZERO_TIME - 14 * HOUR_NS
    assert parse_time("9999-12-31T23:59:59-14:00") == to_ns(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)) + 14 * HOUR_NS
    assert from_ns(ZERO_TIME - 14 * HOUR_NS) == datetime.min.replace(tzinfo=UTC)  # held within datetime's years
    assert from_ns(parse_time("9999-12-31T23:59:59-14:00") or 0) == datetime.max.replace(tzinfo=UTC)


def test_timestamps_keep_nanoseconds_and_read_naive_ones_as_utc() -> None:
    assert parse_time("2026-01-01T00:00:00.123456789Z") == to_ns(datetime(2026, 1, 1, tzinfo=UTC)) + 123456789
    assert parse_time("2026-01-01T01:00:00+01:00") == parse_time("2026-01-01T00:00:00Z")
    assert to_ns(datetime(2026, 1, 1)) == to_ns(datetime(2026, 1, 1, tzinfo=UTC))
    assert from_ns(to_ns(datetime(2026, 1, 1, 0, 0, 1, 5, tzinfo=UTC))) == datetime(2026, 1, 1, 0, 0, 1, 5, tzinfo=UTC)
    for bad in ("yesterday", "2026-13-01T00:00:00Z", "", "2026-01-01T00:00:00." + "1" * 70, ["x"], 5, None):
        assert parse_time(bad) is None and Time.parse(bad) is None
    assert Time.parse("2026-01-01T00:00:00Z") < Time.parse("2026-01-01T00:00:01Z")  # type: ignore[operator]


@given(st.datetimes(timezones=st.timezones()) | st.datetimes())
def test_to_ns_is_the_datetimes_instant(when: datetime) -> None:
    aware = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    try:
        utc = aware.astimezone(UTC)
    except OverflowError:
        return  # the instant exists (to_ns has it) but no datetime in UTC does
    assert to_ns(when) == (utc - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000


# --- the schema check -------------------------------------------------------------------------------------------

SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {"n": {"type": "integer"}, "on": {"type": "boolean"},
                                              "port": {"x-kubernetes-int-or-string": True},
                                              "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                              "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
    "status": {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "at": {"type": "string", "format": "date-time", "nullable": True}}}}}}}}


def test_a_well_formed_object_is_the_same_object() -> None:
    obj = {"spec": {"n": 1, "on": True, "port": "http", "labels": {"a": "b"}, "other": [1]},
           "status": {"items": [{"name": "x", "at": "2026-01-01T00:00:00Z"}, {"at": None}]}, "extra": {"k": [[]]}}
    assert check(SCHEMA, obj) == (obj, []) and check(SCHEMA, obj)[0] is obj


def test_a_value_of_the_wrong_shape_is_left_out_and_named() -> None:
    obj = {"spec": {"n": True, "on": 1, "port": 1.5, "labels": {"a": 1, "b": "c"}},
           "status": {"items": [5, {"name": 1, "at": "yesterday"}, {"name": "ok"}]}}
    checked, problems = check(SCHEMA, obj)
    assert checked == {"spec": {"labels": {"b": "c"}}, "status": {"items": [{}, {"name": "ok"}]}}
    assert [str(p) for p in problems] == [
        "spec.n must be an integer, not a boolean", "spec.on must be a boolean, not a number",
        "spec.port must be an integer or a string, not a number", "spec.labels.a must be a string, not a number",
        "status.items[0] must be an object, not a number", "status.items[1].name must be a string, not a number",
        "status.items[1].at must be an RFC 3339 time, not 'yesterday'"]
    assert obj["spec"]["n"] is True  # the object read is left alone
    assert check(SCHEMA, [1]) == (ABSENT, [Problem("", "must be an object, not a list")])


def test_null_is_kept_it_reads_as_absent() -> None:
    obj = {"spec": None, "status": {"items": None}}
    assert check(SCHEMA, obj) == (obj, [])


def test_a_value_nested_past_the_limit_is_cut_where_it_passes_it() -> None:
    deep: Any = 1
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    checked, problems = check(SCHEMA, {"spec": {"free": {"x": deep}}})
    assert len(problems) == 1 and problems[0].problem == f"is nested deeper than {MAX_DEPTH} levels (cvo's limit)"
    assert problems[0].path == "spec.free.x" + "[0]" * (MAX_DEPTH - 3)  # x is at level 4: this one at 201
    level, value = 4, checked["spec"]["free"]["x"]
    while value != []:
        value, level = value[0], level + 1
    assert level == MAX_DEPTH  # the list at level 200 is kept, emptied
    assert str(problems[0]).startswith("spec.free.x[0]") and len(str(problems[0])) < 250  # a shortened path


# --- the views --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Thing(View):
    display_name: str = "none"
    count: int = 0
    weight: float = 0.0
    tags: tuple[str, ...] = ()
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    raw: Any = None
    at: Time | None = None
    inner: Thing | None = None
    skipped: str = dataclasses.field(default="kept", metadata={"key": None})
    renamed: str = dataclasses.field(default="", metadata={"key": "other"})


def test_a_view_reads_camel_case_keys_into_typed_fields() -> None:
    thing = build(Thing, {"displayName": "a", "count": 2, "weight": 1, "tags": ["x", 1, "y"], "labels": {"a": "b", "c": 1},
                          "raw": {"any": [1]}, "at": "2026-01-01T00:00:00Z", "inner": {"count": 3},
                          "skipped": "no", "other": "o"})
    assert thing == Thing("a", 2, 1.0, ("x", "y"), {"a": "b"}, {"any": [1]}, Time.parse("2026-01-01T00:00:00Z"),
                          Thing(count=3), "kept", "o")
    assert build(Thing, {"count": True, "displayName": None, "inner": "x", "at": "never"}) == Thing()
    assert key_of(Thing, "display_name") == "displayName" and key_of(Thing, "skipped") is None


def test_a_view_field_of_a_type_views_do_not_hold_is_refused() -> None:
    with pytest.raises(TypeError, match="a view field cannot be of type"):
        converter(list[str])


def test_reading_warns_once_about_each_field_and_refuses_what_is_no_object(capsys: pytest.CaptureFixture[str]) -> None:
    configure("text", 0, color=False)  # (whatever an earlier test left)
    cv = {"metadata": {"name": "version"}, "status": {"history": "x", "desired": {"version": "4.16.0"}}}
    view = ClusterVersion.read(cv)
    assert view.status.history == () and view.status.desired.version == "4.16.0" and view.name == "version"
    ClusterVersion.read(cv)
    err = capsys.readouterr().err
    assert err.count("read as absent") == 1
    assert "field=status.history object='ClusterVersion version' problem='must be a list, not a string'" in err
    with pytest.raises(Refused, match="ClusterVersion: expected an object, got a string"):
        ClusterVersion.read("x")
    assert ClusterVersion.of(view) is view


def test_a_view_of_a_changed_section_is_read_again() -> None:
    oc = OperatorCondition.read({"metadata": {"name": "etcd", "namespace": "ns", "generation": 2},
                                 "spec": {"conditions": [{"type": "Upgradeable", "status": "False"}]}})
    assert oc.status.conditions == () and oc.section("status") == {} and oc.section("spec")["conditions"]
    synced = oc.replaced(status={"conditions": [{"type": "Upgradeable", "status": "False", "observedGeneration": 2}]})
    assert synced.status.conditions[0].observed_generation == 2 and synced.spec == oc.spec


def _fields(cls: type) -> Iterator[tuple[str, Any, type]]:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = f.metadata.get("key", None if f.name == "body" else key_of(cls, f.name))
        if key is not None:
            yield key, hints[f.name], cls


def _agrees(annotation: Any, schema: Mapping[str, Any], path: str) -> None:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, type(int | None)):
        annotation = next(a for a in args if a is not type(None))
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    want = schema.get("type")
    if annotation is Time:
        assert want == "string" and schema.get("format") == "date-time", path
    elif isinstance(annotation, type) and issubclass(annotation, View):
        assert want == "object", path
        for key, sub, _ in _fields(annotation):
            assert key in (schema.get("properties") or {}), f"{path}.{key}: not in the schema"
            _agrees(sub, schema["properties"][key], f"{path}.{key}")
    elif origin is tuple:
        assert want == "array", path
        _agrees(args[0], schema["items"], f"{path}[]")
    elif origin is Mapping:
        assert want == "object", path
    elif annotation is Any:  # an int-or-string (a pool's maxUnavailable): kept as it is
        assert schema.get("x-kubernetes-int-or-string") is True, path
    else:
        assert want == {str: "string", int: "integer", bool: "boolean", float: "number"}[annotation], path


@pytest.mark.parametrize("kind", sorted(KINDS, key=str))
def test_every_view_field_is_in_its_kinds_schema_with_the_same_type(kind: tuple[str, str]) -> None:
    """The views read only what the schema checked: a field the schema does not have, or has with another type,
    would be read unchecked (or never)."""
    cls = KINDS[kind]
    _agrees(cls, {**cls.KIND.schema(), "type": "object"}, cls.KIND.kind)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(KINDS, key=str)).flatmap(
    lambda kind: st.tuples(st.just(kind), t.shaped(KINDS[kind].KIND.schema()))))
def test_a_checked_object_checks_clean_and_views_without_an_exception(pair: tuple[tuple[str, str], Any]) -> None:
    kind, obj = pair
    schema = KINDS[kind].KIND.schema()
    checked, _ = check(schema, obj)
    if not isinstance(obj, dict):  # (null passes the check: it reads as absent)
        with pytest.raises(Refused):
            KINDS[kind].read(obj)
        return
    assert check(schema, checked) == (checked, [])
    view = KINDS[kind].read(obj)
    assert view.body == checked


# --- finding the CRDs -------------------------------------------------------------------------------------------


def _forget_schemas() -> None:
    crds_module.crd_schema.cache_clear()
    for cls in KINDS.values():
        cache_clear = getattr(cls.KIND.schema, "cache_clear", None)
        if cache_clear is not None:
            cache_clear()


@pytest.fixture
def schemas_afresh() -> Iterator[None]:
    _forget_schemas()
    yield
    _forget_schemas()


def test_the_schemas_come_from_the_crds_of_manifests(schemas_afresh: None) -> None:
    assert crds_module.manifests_dir() == REPO / "manifests"  # a checkout (or an editable install)
    history = ClusterVersion.KIND.schema()["properties"]["status"]["properties"]["history"]
    assert history["items"]["properties"]["startedTime"] == {
        "description": "startedTime is the time at which the update was started.", "format": "date-time",
        "type": "string"}
    assert OperatorCondition.KIND.schema()["properties"]["spec"]["properties"]["conditions"]["type"] == "array"  # v2


def test_an_installed_package_finds_them_where_its_data_files_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 schemas_afresh: None) -> None:
    """A wheel puts pyproject's data-files under <prefix>/share/cvo/manifests: every CRD the views read is
    among them, and that is where the lookup goes when there is no checkout beside the package."""
    data_files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    shipped = [pattern for target, patterns in data_files.items() if target == "share/cvo/manifests"
               for pattern in patterns]
    for file in {crds_module.MARKER, "0000_00_cvo_01_clusteroperators.crd.yaml",
                 "0000_00_cvo_01_operatorconditions.crd.yaml"}:
        assert any(fnmatch(f"manifests/{file}", p) for p in shipped), file
    prefix = tmp_path / "venv"
    shutil.copytree(REPO / "manifests", prefix / "share" / "cvo" / "manifests")
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setattr(crds_module, "__file__", str(tmp_path / "site-packages" / "cvo" / "objects" / "crds.py"))
    monkeypatch.delenv(crds_module.MANIFESTS_ENV, raising=False)
    assert crds_module.manifests_dir() == prefix / "share" / "cvo" / "manifests"
    assert ClusterOperator.read({"status": {"conditions": 5}}).status.conditions == ()


def test_without_the_crds_a_command_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         schemas_afresh: None) -> None:
    state = t.base_store()  # (installed while they are there)
    monkeypatch.setattr(crds_module, "manifest_dirs", lambda: [tmp_path / "nowhere"])
    _forget_schemas()
    with pytest.raises(SchemaMissing, match="cvo's CRD schemas are not installed"):
        ClusterVersion.read({})
    code, out, err = t.run_cli(["status", "--state", str(state)])
    assert (code, out) == (1, "")
    assert err.splitlines()[-1].startswith(f"error: cvo's CRD schemas are not installed (looked for "
                                           f"manifests/{crds_module.MARKER} in {tmp_path / 'nowhere'})")


def test_a_kind_without_a_crd_declares_its_schema() -> None:
    from cvo.objects import Deployment

    deployment = Deployment.read({"metadata": {"name": "mco"}, "spec": {"replicas": "1", "template": {"spec": {
        "containers": [{"name": "machine-config-operator", "image": "img"}, "x"]}}}})
    assert deployment.spec.replicas is None and deployment.container("machine-config-operator").image == "img"  # type: ignore[union-attr]
