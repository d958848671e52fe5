"""The store's nesting limit: an object nested deeper than ``--from-file`` reads is read as absent, the rest kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import Ref
from cvo.cluster.embedded.server import SimCluster
from cvo.cluster.embedded.store import Store, nested_deeper

# strings that look like JSON's own punctuation, escapes included
tricky_text = st.text(alphabet='[]{}"\\,:ab\n', max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3), max_leaves=30)


def depth(value: Any) -> int:
    """Nested objects and lists, the outermost being level 1 (scalars add none)."""
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


@given(json_values, st.integers(0, 8))
@example({"a": ']]]"\\', "b": [[["\\\\"]]]}, 3)
@example(["\\\\\"{[", [[]]], 2)
def test_the_depth_on_the_bytes_is_the_depth_of_the_value(value: Any, limit: int) -> None:
    for data in (orjson.dumps(value), json.dumps(value, indent=1).encode()):
        assert nested_deeper(data, limit) == (depth(value) > limit), data


def _deep(levels: int) -> bytes:
    return b"[" * levels + b"1" + b"]" * levels


def configmap(name: str, data: bytes = b'"x"') -> bytes:
    return (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"' + name.encode()
            + b'","namespace":"default"},"data":{"a":' + data + b"}}")


@pytest.mark.parametrize("levels", [198, 199, 1000, 5000])  # 200 and 201 levels; 5,000: orjson cannot decode it
def test_a_process_reads_a_too_deep_object_as_absent_and_warns_once(tmp_path: Path, levels: int,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "state.db"
    too_deep = levels + 2 > 200  # the object, data, and the list's levels

    async def setup() -> None:
        cluster = SimCluster(Clock(), path=path)
        await cluster.create(json.loads(configmap("ok")))
        await cluster.create(json.loads(configmap("deep")))
        await cluster.close()

    run_virtual(setup)
    writer = Store.open(path, initial_clock=0)
    reader = Store.open(path, initial_clock=0)
    try:
        rv = writer.meta.resource_version + 1
        with writer.transaction():
            writer.put(Ref("", "ConfigMap", "default", "deep"), rv, configmap("deep", _deep(levels)))
            writer.set_meta(rv, writer.meta.uid_counter, writer.meta.clock)
        changes = reader.changes()  # what another process took in
        assert changes is not None
        [row] = changes.rows
        assert row.ref.name == "deep" and (row.data is None) == too_deep
        names = [r.ref.name for r in reader.snapshot() if r.ref.kind == "ConfigMap"]
        assert names == (["ok"] if too_deep else ["deep", "ok"])
    finally:
        writer.close()
        reader.close()
    err = capsys.readouterr().err
    assert err.count("nested too deeply") == (1 if too_deep else 0), err  # once for that revision

    async def read() -> None:
        cluster = SimCluster(Clock(), path=path)
        try:
            found = {o["metadata"]["name"] for o in await cluster.list("", "ConfigMap", "default")}
            assert found == ({"ok"} if too_deep else {"ok", "deep"})
            # a write of the object replaces the row, as a create of a missing object does
            if too_deep:
                await cluster.create(json.loads(configmap("deep")))
                assert (await cluster.get(Ref("", "ConfigMap", "default", "deep")) or {})["data"] == {"a": "x"}
        finally:
            await cluster.close()

    run_virtual(read)
