"""The catalogue of sweep events: every event written is read back as itself, a field of the wrong type reads as
absent, an unknown name is kept, every event has an emitter, and the docs list exactly the catalogue."""

from __future__ import annotations

import ast
import dataclasses
import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.report.events_io import event_line, read_stream
from cvo.runner import sweep_events
from cvo.runner.events import Recorder
from cvo.runner.sweep_events import (
    BY_NAME,
    CATALOGUE,
    ClusterRequests,
    NodeStarted,
    SweepEvent,
    TaskDependency,
    TaskDone,
    UnknownEvent,
    decode,
    field_names,
)

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 1, 1, tzinfo=UTC)

texts = st.text(max_size=20)
ints = st.integers(-(2**53) + 1, 2**53 - 1)
floats = st.floats(-1e12, 1e12, allow_nan=False)
json_values = st.recursive(st.none() | st.booleans() | ints | texts | floats,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                           max_leaves=6)
# a strategy for each type the catalogue declares (the reader has one for each: test_every_type_has_a_reader)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "str": texts, "str | None": texts | st.none(), "int": ints, "int | None": ints | st.none(), "float": floats,
    "float | None": floats | st.none(), "bool": st.booleans(), "list[int] | None": st.lists(ints, max_size=4) | st.none(),
    "list[str]": st.lists(texts, max_size=4), "dict[str, int]": st.dictionaries(texts, ints, max_size=4),
    "object": json_values,
}


def declared(kind: type[SweepEvent]) -> dict[str, str]:
    return {f.name: str(f.type) for f in dataclasses.fields(kind) if f.name != "time"}


def instances(kind: type[SweepEvent]) -> st.SearchStrategy[SweepEvent]:
    times = st.integers(0, 10**7).map(lambda s: T0 + timedelta(seconds=s, microseconds=s % 7))
    return st.builds(kind, times, **{name: VALUES[type_] for name, type_ in declared(kind).items()})


def test_every_type_has_a_reader_and_every_name_one_event() -> None:
    types = {type_ for kind in CATALOGUE for type_ in declared(kind).values()}
    assert types <= set(VALUES) == set(sweep_events._READERS)
    assert len(BY_NAME) == len(CATALOGUE)
    defined = {obj for obj in vars(sweep_events).values()
               if isinstance(obj, type) and issubclass(obj, SweepEvent) and obj is not SweepEvent}
    assert defined == set(CATALOGUE)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CATALOGUE).flatmap(instances))
def test_an_event_written_reads_back_as_itself(event: SweepEvent) -> None:
    [back] = read_stream(io.BytesIO(event_line(event)), "x.jsonl").events
    assert (type(back), back.time, back.fields) == (type(event), event.time, event.fields)


def test_fields_are_written_in_declared_order_and_seen_only_when_known() -> None:
    plain = TaskDependency(T0, task="t", kind="Namespace", dependency="ns", error="NotFound", node=3)
    seen = TaskDependency(T0, task="t", kind="Namespace", dependency="ns", error="NotFound", seen="watch", node=3)
    assert event_line(plain) == (b'{"event":"task.dependency","time":"2026-01-01T00:00:00+00:00","task":"t",'
                                 b'"kind":"Namespace","dependency":"ns","error":"NotFound","node":3}\n')
    assert list(seen.fields) == ["task", "kind", "dependency", "error", "seen", "node"]
    assert list(plain.fields) == ["task", "kind", "dependency", "error", "node"] == [
        n for n in field_names(TaskDependency) if n != "seen"]


def test_a_field_of_the_wrong_type_reads_as_absent() -> None:
    node = decode(T0, "node.started", {"node": "3", "tasks": True, "runlevel": 5, "after": [1, "2"], "extra": 1})
    assert isinstance(node, NodeStarted)
    assert (node.node, node.tasks, node.runlevel, node.component, node.after) == (None, 0, None, None, None)
    assert "extra" not in node.fields
    requests = decode(T0, "cluster.requests", {"verbs": {"get": 3, "put": "x", "list": 2**60}})
    assert isinstance(requests, ClusterRequests) and requests.verbs == {"get": 3}  # the entries of the right type
    assert decode(T0, "cluster.requests", {}).fields == {"verbs": {}}


def test_an_unknown_name_is_kept_with_its_fields() -> None:
    line = b'{"event":"task.teleported","time":"2026-01-01T00:00:00+00:00","task":"t","field_time":1}\n'
    [event] = read_stream(io.BytesIO(line), "x.jsonl").events
    assert isinstance(event, UnknownEvent)
    assert (event.time, event.name, event.fields) == (T0, "task.teleported", {"task": "t", "time": 1})
    assert event_line(event) == line  # written back as it came


def test_the_recorder_gives_the_events_of_a_kind() -> None:
    recorder = Recorder()
    for event in (TaskDone(T0, task="a", node=0), NodeStarted(T0, node=0, tasks=1, runlevel=None, component=None,
                                                               after=[]), TaskDone(T0, task="b", node=0)):
        recorder.emit(event)
    assert [e.task for e in recorder.of(TaskDone)] == ["a", "b"]


def _constructed(tree: ast.AST) -> set[str]:
    """Names passed as an emitter's first argument or called with the time first (``emit(TaskDone, …)``,
    ``ClusterRequests(now, …)``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "emit" and node.args \
                    and isinstance(node.args[0], ast.Name):
                out.add(node.args[0].id)
            if isinstance(node.func, ast.Name):
                out.add(node.func.id)
    return out


def test_every_event_of_the_catalogue_has_an_emitter() -> None:
    emitted: set[str] = set()
    for path in (REPO / "cvo").rglob("*.py"):
        if path.name != "sweep_events.py":
            emitted |= _constructed(ast.parse(path.read_text(), str(path)))
    assert {kind.__name__ for kind in CATALOGUE} - emitted == set()


def _without_parentheses(text: str) -> str:
    out, depth = [], 0
    for char in text:
        depth += char == "("
        if depth == 0:
            out.append(char)
        depth -= char == ")" and depth > 0
    return "".join(out)


def test_the_scenarios_doc_lists_every_event_with_its_fields_in_order() -> None:
    doc = (REPO / "docs" / "scenarios.md").read_text()
    table = doc[doc.index("| event | fields |"):doc.index("**Order items.**")]
    listed = {}
    for row in table.splitlines()[2:]:
        if row.startswith("| `"):
            name_cell, fields_cell = row.split(" | ", 2)[:2]
            listed[name_cell.strip("| `")] = re.findall(r"`([a-z_]+)`", _without_parentheses(fields_cell))
    assert listed == {kind.name: list(field_names(kind)) for kind in CATALOGUE}


def test_the_reports_doc_names_events_of_the_catalogue() -> None:
    doc = (REPO / "docs" / "report.md").read_text()
    table = doc[doc.index("| event | fields | on the page |"):]
    table = table[:table.index("\n\n")]
    named, prefix = set(), ""
    for token in re.findall(r"`([a-z_.]+)`", "".join(row.split(" | ")[0] for row in table.splitlines()[2:])):
        prefix = token.split(".")[0] if not token.startswith(".") else prefix  # `sweep.started` / `.completed`
        named.add(prefix + token if token.startswith(".") else token)
    assert len(named) > 20 and named <= set(BY_NAME)
