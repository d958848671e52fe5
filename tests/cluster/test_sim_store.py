"""The embedded cluster's SQLite store: durable writes, optimistic concurrency and watches across processes.

Two :class:`SimCluster` objects on one file have two SQLite connections, which SQLite treats exactly
as two processes (locks, WAL snapshots, ``data_version``); the tests that need a real second process
(killed mid-run, concurrent writers) are in ``tests/cluster/test_store_processes.py``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvo.clock import Clock, run_real, run_virtual
from cvo.cluster.api import ApiError, ApiErrorKind, EventType, Ref, WatchEvent
from cvo.cluster.embedded import store as store_module
from cvo.cluster.embedded.server import SimCluster
from cvo.cluster.embedded.store import FORMAT, StateError, Store
from tests.support.helpers import state_objects

EPOCH = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
CM = Ref("", "ConfigMap", "default", "cm")


def configmap(name: str = "cm", namespace: str = "default", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": dict(data)}


def crd(group: str = "example.com", kind: str = "Widget", plural: str = "widgets") -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True}]}}


def two(path: Path, test: Callable[[SimCluster, SimCluster], Awaitable[None]]) -> None:
    """Run ``test`` with two clusters on one store, as two processes would have them."""

    async def main() -> None:
        a = SimCluster(Clock(EPOCH), path=path)
        b = SimCluster(Clock(EPOCH), path=path)
        try:
            await test(a, b)
        finally:
            await a.close()
            await b.close()

    run_virtual(main)


def test_a_write_is_in_the_store_when_it_returns(tmp_path: Path) -> None:
    """No close, no save: what a process wrote is there for anyone who reads the file."""
    path = tmp_path / "cluster.db"

    async def main() -> None:
        c = SimCluster(Clock(EPOCH), path=path)
        await c.create(configmap(a="1"))
        live = await c.get(CM)
        assert live is not None
        await c.update({**live, "data": {"a": "2"}})
        stored = [o for o in state_objects(path) if o["kind"] == "ConfigMap"]
        assert [o["data"] for o in stored] == [{"a": "2"}]
        await c.delete(CM)
        assert not [o for o in state_objects(path) if o["kind"] == "ConfigMap"]

    run_virtual(main)


def test_reads_see_the_other_process_writes(tmp_path: Path) -> None:
    async def test(a: SimCluster, b: SimCluster) -> None:
        await a.create(configmap(a="1"))
        got = await b.get(CM)
        assert got is not None and got["data"] == {"a": "1"}
        assert [o["metadata"]["name"] for o in await b.list("", "ConfigMap")] == ["cm"]
        await b.delete(CM)
        assert await a.get(CM) is None
        assert a.resource_version == b.resource_version

    two(tmp_path / "cluster.db", test)


def test_a_stale_resource_version_is_a_conflict_across_processes(tmp_path: Path) -> None:
    async def test(a: SimCluster, b: SimCluster) -> None:
        created = await a.create(configmap(a="1"))
        mine = await a.get(CM)
        theirs = await b.get(CM)
        assert mine is not None and theirs is not None
        await b.update({**theirs, "data": {"b": "1"}})
        with pytest.raises(ApiError) as info:
            await a.update({**mine, "data": {"a": "2"}})
        assert info.value.kind is ApiErrorKind.CONFLICT
        assert "the object has been modified" in str(info.value)
        again = await a.get(CM)
        assert again is not None and again["data"] == {"b": "1"}
        assert int(again["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
        with pytest.raises(ApiError) as info:
            await b.create(configmap(a="3"))
        assert info.value.kind is ApiErrorKind.ALREADY_EXISTS

    two(tmp_path / "cluster.db", test)


def test_resource_versions_and_uids_stay_unique_across_processes(tmp_path: Path) -> None:
    async def test(a: SimCluster, b: SimCluster) -> None:
        seen_rv: list[int] = []
        seen_uid: set[str] = set()
        for i in range(20):
            for c in (a, b):
                obj = await c.create(configmap(f"cm-{i}-{id(c) % 7}-{c is a}"))
                seen_rv.append(int(obj["metadata"]["resourceVersion"]))
                seen_uid.add(obj["metadata"]["uid"])
        assert seen_rv == sorted(seen_rv) and len(set(seen_rv)) == 40
        assert len(seen_uid) == 40

    two(tmp_path / "cluster.db", test)


def test_a_watch_gets_the_other_process_changes_in_order(tmp_path: Path) -> None:
    async def test(a: SimCluster, b: SimCluster) -> None:
        stream = a.watch("", "ConfigMap")
        events: list[WatchEvent] = []
        await b.create(configmap(a="1"))
        await a.get(Ref("", "Namespace", "", "default"))  # any request takes the changes in
        events.append(await anext(stream))
        live = await b.get(CM)
        assert live is not None
        await b.update({**live, "data": {"a": "2"}})
        await a.list("", "Namespace")
        events.append(await anext(stream))
        await b.delete(CM)
        await a.serves("v1", "ConfigMap")
        events.append(await anext(stream))
        assert [e.type for e in events] == [EventType.ADDED, EventType.MODIFIED, EventType.DELETED]
        assert [e.obj.get("data") for e in events] == [{"a": "1"}, {"a": "2"}, {"a": "2"}]
        assert [int(e.obj["metadata"]["resourceVersion"]) for e in events] == sorted(
            int(e.obj["metadata"]["resourceVersion"]) for e in events)
        await stream.aclose()

    two(tmp_path / "cluster.db", test)


def test_changes_between_two_looks_are_coalesced_as_a_relist_would(tmp_path: Path) -> None:
    """The store keeps each object's latest state (as etcd does after compaction), not every event: a
    process that looks after three writes sees where they ended, as a watch that relisted would."""
    async def test(a: SimCluster, b: SimCluster) -> None:
        stream = a.watch("", "ConfigMap")
        await b.create(configmap(a="1"))
        await b.create(configmap("other", a="1"))
        for value in ("2", "3"):
            live = await b.get(CM)
            assert live is not None
            await b.update({**live, "data": {"a": value}})
        await b.delete(Ref("", "ConfigMap", "default", "other"))
        await a.get(CM)
        event = await anext(stream)
        assert (event.type, event.obj["data"]) == (EventType.ADDED, {"a": "3"})
        assert [o["metadata"]["name"] for o in await a.list("", "ConfigMap")] == ["cm"]
        await stream.aclose()

    two(tmp_path / "cluster.db", test)


def test_an_idle_watcher_hears_of_another_process_write_within_a_second(tmp_path: Path) -> None:
    """The poller thread notices the commit in real time; nothing in this process makes a request."""
    path = tmp_path / "cluster.db"

    async def main() -> float:
        a = SimCluster(Clock(), path=path)
        b = SimCluster(Clock(), path=path)
        try:
            stream = a.watch("", "ConfigMap")
            waiter = asyncio.ensure_future(anext(stream))
            await asyncio.sleep(0)
            loop = asyncio.get_running_loop()
            started = loop.time()
            await b.create(configmap(a="1"))  # b's write; a makes no request from here on
            event = await asyncio.wait_for(waiter, timeout=5)
            took = loop.time() - started
            assert event.type is EventType.ADDED and event.obj["data"] == {"a": "1"}
            await stream.aclose()
            return took
        finally:
            await a.close()
            await b.close()

    assert run_real(main) < 1.0


def test_crds_and_namespace_deletion_from_another_process(tmp_path: Path) -> None:
    async def test(a: SimCluster, b: SimCluster) -> None:
        await b.create(crd())
        assert await a.serves("example.com/v1", "Widget")
        await a.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        await a.create({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "team"}})
        await a.create(configmap("x", "team"))
        await b.delete(Ref("", "Namespace", "", "team"))
        assert await a.get(Ref("", "ConfigMap", "team", "x")) is None
        assert await a.list("example.com", "Widget") == []
        await a.delete(Ref("apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com"))
        assert not await b.serves("example.com/v1", "Widget")

    two(tmp_path / "cluster.db", test)


def test_the_clock_never_runs_backwards_across_processes(tmp_path: Path) -> None:
    """The store keeps the newest time any process wrote at; a process that sees a later one moves to it."""
    path = tmp_path / "cluster.db"

    async def main() -> None:
        a = SimCluster(Clock(EPOCH), path=path)
        later = Clock(EPOCH + timedelta(hours=2))
        b = SimCluster(later, path=path)
        await b.create(configmap("from-b"))
        await a.get(CM)  # a takes b's write in, and b's clock with it
        assert a.clock.now() >= EPOCH + timedelta(hours=2)
        made = await a.create(configmap("from-a"))
        assert made["metadata"]["creationTimestamp"] >= "2025-01-02T05:04:05Z"
        await a.close()
        await b.close()

    run_virtual(main)


def test_a_failed_commit_leaves_memory_as_the_store_has_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the store cannot commit, the write fails and the cluster forgets it: memory never runs ahead."""
    path = tmp_path / "cluster.db"

    async def main() -> None:
        c = SimCluster(Clock(EPOCH), path=path)
        store = c.store
        assert store is not None
        real_flush = store._flush

        def broken() -> None:
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(store, "_flush", broken)
        with pytest.raises(ApiError) as info:
            await c.create(configmap(a="1"))
        assert info.value.kind is ApiErrorKind.INTERNAL
        assert str(info.value) == f"the embedded cluster's store failed: {path}: cannot write the state database: " \
                                  "disk I/O error"
        monkeypatch.setattr(store, "_flush", real_flush)
        assert await c.get(CM) is None
        made = await c.create(configmap(a="2"))
        assert made["data"] == {"a": "2"}
        await c.close()

    run_virtual(main)


def test_an_old_view_reloads_after_compaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tombstones are dropped past a horizon; a process whose view is older takes in every live object."""
    monkeypatch.setattr(store_module, "TOMBSTONE_HORIZON", 5)
    path = tmp_path / "cluster.db"

    async def main() -> None:
        a = SimCluster(Clock(EPOCH), path=path)
        stream = a.watch("", "ConfigMap")
        b = SimCluster(Clock(EPOCH), path=path)
        for i in range(10):
            await b.create(configmap(f"gone-{i}"))
            await b.delete(Ref("", "ConfigMap", "default", f"gone-{i}"))
        await b.create(configmap("kept"))
        await b.close()
        c = SimCluster(Clock(EPOCH), path=path)  # opening compacts
        assert c.store is not None and c.store.meta.compacted > 0
        event = await anext(stream)  # a watches: its poller takes the changes in within 0.1 s
        assert (event.type, event.obj["metadata"]["name"]) == (EventType.ADDED, "kept")
        names = [o["metadata"]["name"] for o in await a.list("", "ConfigMap")]
        assert names == ["kept"]
        await stream.aclose()
        await a.close()
        await c.close()

    run_virtual(main)


# --- state files that are not usable ---------------------------------------------------------------------------


def test_a_database_of_another_program_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE songs (title TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StateError, match=r"an SQLite database, but not a cvo state file \(tables: songs\)"):
        SimCluster(Clock(EPOCH), path=path)


def test_a_store_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cluster.db"
    run_virtual(lambda: SimCluster(Clock(EPOCH), path=path).close())
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET format = 99")
    conn.commit()
    conn.close()
    with pytest.raises(StateError, match=f"state format 99 is not supported by this cvo \\(it reads format {FORMAT}\\)"):
        SimCluster(Clock(EPOCH), path=path)


FORMAT2_SCHEMA = """
CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), format INTEGER NOT NULL,
    resource_version INTEGER NOT NULL, uid_counter INTEGER NOT NULL, clock REAL NOT NULL, compacted INTEGER NOT NULL);
CREATE TABLE objects (grp TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, data BLOB, PRIMARY KEY (grp, kind, namespace, name)) WITHOUT ROWID;
CREATE INDEX objects_by_rv ON objects (rv);
"""


def test_a_store_of_the_previous_format_is_converted_in_place(tmp_path: Path) -> None:
    path = tmp_path / "cluster.db"
    conn = sqlite3.connect(path)
    conn.executescript(FORMAT2_SCHEMA)
    cm = {**configmap(a="1"), "metadata": {"name": "cm", "namespace": "default", "resourceVersion": "2", "uid": "u-2"}}
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "resourceVersion": "1", "uid": "u-1"}}
    conn.execute("INSERT INTO meta VALUES (1, 2, 3, 2, ?, 0)", (EPOCH.timestamp() + 60,))
    conn.executemany("INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?)", [
        ("", "Namespace", "", "default", 1, json.dumps(ns).encode()),
        ("", "ConfigMap", "default", "cm", 2, json.dumps(cm).encode()),
        ("", "ConfigMap", "default", "gone", 3, None)])
    conn.commit()
    conn.close()

    async def main() -> None:
        a = SimCluster(Clock(EPOCH), path=path)
        b = SimCluster(Clock(EPOCH), path=path)  # a second process finds it converted already
        try:
            for cluster in (a, b):
                assert (await cluster.get(CM) or {})["data"] == {"a": "1"}
                assert cluster.resource_version == 3
                assert cluster.clock.now() >= EPOCH + timedelta(seconds=60)
            live = await a.get(CM)
            assert live is not None
            live["data"] = {"a": "2"}
            await a.update(live)
            stale = {**live, "data": {"a": "3"}}
            with pytest.raises(ApiError) as conflict:
                await b.update(stale)  # the unique key and the revisions work as before
            assert conflict.value.kind is ApiErrorKind.CONFLICT
            created = await b.create(configmap("gone", x="y"))  # a key with a tombstone is replaced
            assert created["metadata"]["resourceVersion"] == "5"
        finally:
            await a.close()
            await b.close()

    run_virtual(main)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT format FROM meta").fetchone() == (FORMAT,)
        assert conn.execute("SELECT count(*) FROM objects WHERE name = 'gone'").fetchone() == (1,)
        assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master")} >= {"objects_by_key", "objects_by_rv"}
        assert "WITHOUT ROWID" not in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'objects'").fetchone()[0]
    finally:
        conn.close()


def test_a_stored_object_that_is_not_json_is_reported_when_read(tmp_path: Path) -> None:
    path = tmp_path / "cluster.db"
    run_virtual(lambda: SimCluster(Clock(EPOCH), path=path).close())
    conn = sqlite3.connect(path)
    conn.execute("UPDATE objects SET data = x'00ff' WHERE kind = 'Namespace' AND name = 'default'")
    conn.commit()
    conn.close()
    with pytest.raises(StateError, match="corrupt state database: Namespace default is not a JSON object of that kind and name"):
        SimCluster(Clock(EPOCH), path=path)


def test_a_legacy_json_state_is_migrated_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cluster.json"
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "resourceVersion": "3"}},
               {**configmap(a="1"), "metadata": {"name": "cm", "namespace": "default", "resourceVersion": "7",
                                                 "uid": "u-1"}}]
    path.write_text(json.dumps({"format": 1, "clock_time": "2025-03-01T00:00:00Z", "resource_version": 7,
                                "uid_counter": 2, "objects": objects}))

    async def main() -> None:
        clock = Clock(EPOCH)
        c = SimCluster(clock, path=path)
        assert clock.now() == datetime(2025, 3, 1, tzinfo=UTC)
        got = await c.get(CM)
        assert got is not None and got["data"] == {"a": "1"} and got["metadata"]["uid"] == "u-1"
        made = await c.create(configmap("next"))
        assert made["metadata"]["resourceVersion"] == "8"
        await c.close()

    run_virtual(main)
    assert path.read_bytes().startswith(b"SQLite format 3\x00")
    assert "migrated the JSON state of an earlier cvo to the SQLite store (2 objects)" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster.json"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.one_of(
    st.binary(max_size=600),
    st.binary(max_size=400).map(lambda b: b"SQLite format 3\x00" + b),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                 lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                 max_leaves=20).map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"format": st.just(1), "resource_version": st.integers(-2, 5),
                           "uid_counter": st.integers(-2, 5), "clock_time": st.sampled_from(["2025-01-01T00:00:00Z", "x"]),
                           "objects": st.lists(st.dictionaries(st.sampled_from(["apiVersion", "kind", "metadata"]),
                                                               st.one_of(st.text(max_size=4), st.dictionaries(
                                                                   st.sampled_from(["name", "namespace"]),
                                                                   st.text(max_size=4) | st.integers()))),
                                               max_size=3)}).map(lambda v: json.dumps(v).encode()),
))
def test_any_state_file_opens_or_is_one_clear_error(tmp_path_factory: pytest.TempPathFactory, content: bytes) -> None:
    """Hostile state files: either a usable cluster, or a StateError of one line naming the file."""
    path = tmp_path_factory.mktemp("fuzz") / "state"
    path.write_bytes(content)

    async def main() -> None:
        try:
            c = SimCluster(Clock(EPOCH), path=path)
        except StateError as err:
            message = str(err)
            assert message.startswith(f"{path}: ") and "\n" not in message
            return
        assert await c.get(Ref("", "Namespace", "", "default")) is not None or await c.list("", "Namespace") is not None
        await c.close()

    run_virtual(main)


def test_store_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(StateError, match="is a directory, not a state file"):
        Store.open(tmp_path, initial_clock=0.0)


def test_the_store_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    """It holds the payload's Secrets."""
    path = tmp_path / "cluster.db"

    async def main() -> None:
        c = SimCluster(Clock(EPOCH), path=path)
        await c.create(configmap())
        for name in ("cluster.db", "cluster.db-wal", "cluster.db-shm"):
            assert (tmp_path / name).stat().st_mode & 0o777 == 0o600, name
        await c.close()

    run_virtual(main)


# --- group commit: the writes of one event-loop turn share a transaction ----------------------------------------


def grouped(path: Path, test: Callable[[SimCluster], Awaitable[None]]) -> None:
    async def main() -> None:
        c = SimCluster(Clock(EPOCH), path=path, group_commit=True)
        try:
            await test(c)
        finally:
            await c.close()

    run_virtual(main)


def test_concurrent_writes_share_a_commit_and_each_returns_only_once_committed(tmp_path: Path) -> None:
    path = tmp_path / "cluster.db"

    async def test(c: SimCluster) -> None:
        assert c.store is not None
        before = c.store.commits

        async def write(i: int) -> None:
            await c.create(configmap(f"cm-{i}"))
            names = {o["metadata"]["name"] for o in state_objects(path) if o["kind"] == "ConfigMap"}
            assert f"cm-{i}" in names  # on disk, for any process, when the call returns

        await asyncio.gather(*(write(i) for i in range(50)))
        assert c.store.commits - before == 1

    grouped(path, test)


def test_a_writer_cancelled_while_it_waits_for_the_commit_cancels_no_other(tmp_path: Path) -> None:
    path = tmp_path / "cluster.db"

    async def test(c: SimCluster) -> None:
        assert c.store is not None
        before = c.store.commits
        tasks = [asyncio.ensure_future(c.create(configmap(f"cm-{i}"))) for i in range(3)]
        await asyncio.sleep(0)  # each has written and waits for the turn's commit
        tasks[1].cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(done[1], asyncio.CancelledError)
        assert [d["metadata"]["name"] for d in (done[0], done[2])] == ["cm-0", "cm-2"]  # type: ignore[index]
        assert c.store.commits - before == 1
        names = {o["metadata"]["name"] for o in state_objects(path) if o["kind"] == "ConfigMap"}
        assert names == {"cm-0", "cm-1", "cm-2"}  # the cancelled caller's write was committed with the others

    grouped(path, test)


def test_a_failed_group_commit_fails_every_writer_and_memory_follows_the_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cluster.db"

    async def test(c: SimCluster) -> None:
        assert c.store is not None
        await c.create(configmap("kept"))

        def broken() -> None:
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(c.store, "_flush", broken)
        results = await asyncio.gather(*(c.create(configmap(f"lost-{i}")) for i in range(5)), return_exceptions=True)
        assert all(isinstance(r, ApiError) and r.kind is ApiErrorKind.INTERNAL for r in results), results
        monkeypatch.undo()
        assert [o["metadata"]["name"] for o in await c.list("", "ConfigMap")] == ["kept"]
        assert [o["metadata"]["name"] for o in state_objects(path) if o["kind"] == "ConfigMap"] == ["kept"]

    grouped(path, test)


def test_a_refused_write_does_not_hold_the_lock_to_the_end_of_the_turn(tmp_path: Path) -> None:
    """A conflict commits nothing: the lock is let go at once, so another writer need not wait."""
    path = tmp_path / "cluster.db"

    async def main() -> None:
        a = SimCluster(Clock(EPOCH), path=path, group_commit=True)
        b = SimCluster(Clock(EPOCH), path=path, group_commit=True)
        await a.create(configmap())
        with pytest.raises(ApiError) as info:
            await a.create(configmap())
        assert info.value.kind is ApiErrorKind.ALREADY_EXISTS
        made = await b.create(configmap("next"))  # in the same turn: a lock a still held would fail this
        assert made["metadata"]["name"] == "next"
        await a.close()
        await b.close()

    run_virtual(main)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.one_of(st.binary(max_size=300), st.binary(max_size=200).map(lambda b: b"SQLite format 3\x00" + b),
                         st.text(max_size=200).map(str.encode)),
       command=st.sampled_from([["status"], ["status", "-o", "json"], ["reconcile"],
                                ["override", "etcd", "Upgradeable=True"]]))
def test_cli_on_any_state_file_gives_one_error_line_or_works(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], content: bytes,
        command: list[str]) -> None:
    from cvo.cli.main import main

    path = tmp_path_factory.mktemp("cli-fuzz") / "state"
    path.write_bytes(content)
    capsys.readouterr()
    code = main([*command, "--state", str(path)])
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code in (0, 1, 2), err
    if code == 2:
        assert len(errors) == 1 and errors[0].startswith(f"error: {path}: "), err


def test_a_store_with_damaged_pages_is_one_clear_error(tmp_path: Path) -> None:
    """Found by ``make fuzz``: a store whose header and schema are intact but whose object pages are damaged
    raised SQLite's DatabaseError from the first read."""
    path = tmp_path / "cluster.db"

    async def make() -> None:
        c = SimCluster(Clock(EPOCH), path=path)
        for i in range(40):
            await c.create(configmap(f"cm-{i}", a="x" * 200))
        await c.close()

    run_virtual(make)
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range(3 * page, len(data), page):  # every page after the schema's: scrambled headers
        data[offset:offset + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match="corrupt state database: database disk image is malformed") as info:
        SimCluster(Clock(EPOCH), path=path)
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)


def test_a_damaged_schema_is_one_error_line(tmp_path: Path) -> None:
    """Found by ``make fuzz``: SQLite quotes the damaged schema in its message, newlines and all."""
    path = tmp_path / "cluster.db"
    run_virtual(lambda: SimCluster(Clock(EPOCH), path=path).close())
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = 'CREATE INDEX objects_by_rv ON\n nothing (\n)' "
                 "WHERE name = 'objects_by_rv'")
    conn.commit()
    conn.close()
    with pytest.raises(StateError) as info:
        SimCluster(Clock(EPOCH), path=path)
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)
    assert "malformed database schema" in str(info.value)


def test_text_that_is_not_utf8_is_one_error_line(tmp_path: Path) -> None:
    """Found by ``make fuzz``: Python's sqlite3 raised UnicodeDecodeError reading a damaged text column."""
    path = tmp_path / "cluster.db"
    run_virtual(lambda: SimCluster(Clock(EPOCH), path=path).close())
    conn = sqlite3.connect(path)
    conn.execute("UPDATE objects SET name = CAST(x'ff00fe' AS TEXT) WHERE name = 'default'")
    conn.commit()
    conn.close()
    with pytest.raises(StateError, match="corrupt state database") as info:
        SimCluster(Clock(EPOCH), path=path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("clock", [1e300, -1.0, "soon"])
def test_a_clock_out_of_range_is_one_error_line(tmp_path: Path, clock: object) -> None:
    """Found by ``make fuzz``: a stored clock of 1e300 overflowed datetime."""
    path = tmp_path / "cluster.db"
    run_virtual(lambda: SimCluster(Clock(EPOCH), path=path).close())
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET clock = ?", (clock,))
    conn.commit()
    conn.close()
    with pytest.raises(StateError, match="corrupt state database: clock is"):
        SimCluster(Clock(EPOCH), path=path)


def test_a_cluster_dropped_without_close_stops_its_poller(tmp_path: Path) -> None:
    """Its poller thread holds it weakly and is stopped when it is collected: no thread outlives it (a
    leftover thread once made a later fork() in the same process hang)."""
    import gc
    import threading

    async def main() -> threading.Thread:
        c = SimCluster(Clock(EPOCH), path=tmp_path / "cluster.db")
        stream = c.watch("", "ConfigMap")
        await asyncio.sleep(0)
        poller = c._poller
        assert poller is not None and poller._thread.is_alive()
        del stream, c
        gc.collect()
        return poller._thread

    thread = run_virtual(main)
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_a_thread_checkpoints_while_the_writes_go_on_and_close_leaves_no_log(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The write-ahead log is copied into the database file in the background every few commits; the
    checkpoint at close still merges the rest, and another process reads everything at every step."""
    monkeypatch.setattr(store_module, "CHECKPOINT_EVERY", 3)
    path = tmp_path / "cluster.db"

    async def main() -> None:
        c = SimCluster(Clock(EPOCH), path=path)
        reader = SimCluster(Clock(EPOCH), path=path)
        try:
            assert c.store is not None
            for i in range(30):
                await c.create(configmap(f"cm{i}", n=str(i)))
                assert (await reader.get(Ref("", "ConfigMap", "default", f"cm{i}")) or {})["data"] == {"n": str(i)}
            checkpointer = c.store.checkpointer
            # Real time: the thread runs beside the loop, whenever the machine lets it (seconds on a busy
            # one; 200 thread hops were not always enough), so wait for it by the clock, not by a count.
            deadline = time.monotonic() + 60
            while not checkpointer.runs and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert checkpointer.runs >= 1
        finally:
            await reader.close()
            await c.close()
        assert checkpointer._thread is not None and not checkpointer._thread.is_alive()

    run_real(main)
    assert not (tmp_path / "cluster.db-wal").exists()  # the last connection merged the log into the file
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM objects WHERE kind = 'ConfigMap'").fetchone() == (30,)
    finally:
        conn.close()


def test_a_store_dropped_without_close_stops_its_checkpoint_thread(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    monkeypatch.setattr(store_module, "CHECKPOINT_EVERY", 1)
    store = Store.open(tmp_path / "cluster.db", initial_clock=0.0)
    with store.transaction():
        store.put(CM, 1, b"{}")
    thread = store.checkpointer._thread
    assert thread is not None
    del store
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()
