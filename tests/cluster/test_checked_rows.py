"""The rows of an embedded store known to pass the open-time checks (cvo/cluster/embedded/checked_rows.py): a row
is checked once; a row anyone changed since is checked again; the file that lists them is hostile input too."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import Ref
from cvo.cluster.embedded.checked_rows import DIGEST_BYTES, MAGIC, CheckedRows, parse, row_digest
from cvo.cluster.embedded.server import SimCluster
from cvo.cluster.embedded.store import StateError

EPOCH = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def make_store(path: Path) -> None:
    async def main() -> None:
        c = SimCluster(Clock(EPOCH), path=path)
        await c.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
                        "data": {"a": "1"}})
        await c.close()

    run_virtual(main)


def rows(path: Path) -> list[tuple[str, str, str, str, bytes]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT grp, kind, namespace, name, data FROM objects WHERE data IS NOT NULL").fetchall()
    finally:
        conn.close()


def corrupt_configmap(path: Path, data: bytes) -> None:
    conn = sqlite3.connect(path)
    conn.execute("UPDATE objects SET data = ? WHERE kind = 'ConfigMap' AND name = 'cm'", (data,))
    conn.commit()
    conn.close()


def test_opening_a_store_remembers_every_row_that_passed(tmp_path: Path) -> None:
    path = tmp_path / "cluster.db"
    make_store(path)
    checked = CheckedRows(tmp_path / "cache", path)
    assert checked.load() == frozenset()
    run_virtual(lambda: SimCluster(Clock(EPOCH), path=path, checked_rows=checked).close())
    stored = rows(path)
    assert checked.load() == {row_digest(Ref(g, k, ns, n), data) for g, k, ns, n, data in stored}
    assert len(stored) == 7  # the six default namespaces and the ConfigMap


def test_a_row_changed_after_it_was_checked_is_checked_again(tmp_path: Path) -> None:
    path = tmp_path / "cluster.db"
    make_store(path)
    checked = CheckedRows(tmp_path / "cache", path)
    run_virtual(lambda: SimCluster(Clock(EPOCH), path=path, checked_rows=checked).close())
    corrupt_configmap(path, b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", '
                            b'"namespace": "default", "generation": "two"}}')
    with pytest.raises(StateError, match=r"corrupt state database: ConfigMap default/cm: metadata\.generation must be "
                                         r"an integer, not a string"):
        SimCluster(Clock(EPOCH), path=path, checked_rows=checked)


def test_a_row_listed_as_checked_is_not_checked_again(tmp_path: Path) -> None:
    """The listing is what saves the time: a row whose (key, bytes) it names is taken as it is."""
    path = tmp_path / "cluster.db"
    make_store(path)
    cm = Ref("", "ConfigMap", "default", "cm")
    bad = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default", "generation": "two"}}'
    corrupt_configmap(path, bad)
    checked = CheckedRows(tmp_path / "cache", path)
    checked.save([row_digest(cm, bad.replace(b"two", b"one"))])
    with pytest.raises(StateError, match=r"metadata\.generation"):  # another row's digest does not vouch for this one
        SimCluster(Clock(EPOCH), path=path, checked_rows=checked)

    async def read(c: SimCluster) -> object:
        try:
            return await c.get(cm)
        finally:
            await c.close()

    checked.save([row_digest(cm, bad)])
    got = run_virtual(lambda: read(SimCluster(Clock(EPOCH), path=path, checked_rows=checked, namespaces=())))
    assert isinstance(got, dict) and got["metadata"]["generation"] == "two"
    nested = bad.replace(b'"two"', b"[" * 300 + b"]" * 300)  # deeper than cvo reads: refused when checked
    corrupt_configmap(path, nested)
    assert run_virtual(lambda: read(SimCluster(Clock(EPOCH), path=path, checked_rows=checked, namespaces=()))) is None


def test_the_cli_reports_a_row_corrupted_between_two_commands(tmp_path: Path) -> None:
    """End to end: the first command lists the rows, a row is damaged, the second command names it."""
    path = tmp_path / "cluster.db"
    make_store(path)
    env_cache = tmp_path / "cache"
    cmd = [sys.executable, "-m", "cvo", "get", "--state", str(path), "-o", "json"]
    env = {"CVO_CACHE_DIR": str(env_cache), "PATH": "/usr/bin:/bin"}
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    assert len(CheckedRows(env_cache, path).load()) == 7
    corrupt_configmap(path, b"[1, 2]")
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert second.returncode != 0
    assert second.stderr.strip().splitlines()[-1] == (
        f"error: {path}: corrupt state database: ConfigMap default/cm is not a JSON object of that kind and name")


def test_an_unwritable_cache_is_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the directory would be")
    path = tmp_path / "cluster.db"
    make_store(path)
    checked = CheckedRows(blocker, path)
    run_virtual(lambda: SimCluster(Clock(EPOCH), path=path, checked_rows=checked).close())
    assert checked.load() == frozenset()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.builds(lambda body: MAGIC + body, st.binary(max_size=200)))
def test_any_listing_file_reads_as_whole_digests_or_nothing(blob: bytes) -> None:
    got = parse(blob)
    assert all(len(d) == DIGEST_BYTES for d in got)
    if got:
        assert blob.startswith(MAGIC) and (len(blob) - len(MAGIC)) % DIGEST_BYTES == 0


def test_a_saved_listing_reads_back(tmp_path: Path) -> None:
    checked = CheckedRows(tmp_path, tmp_path / "x.db")
    digests = {bytes([i]) * DIGEST_BYTES for i in range(5)}
    checked.save(digests)
    assert checked.load() == digests
    checked.file.write_bytes(MAGIC + b"\x00" * (DIGEST_BYTES + 1))  # not whole digests: ignored
    assert checked.load() == frozenset()
