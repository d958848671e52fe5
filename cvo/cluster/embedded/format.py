"""The embedded store's file format: the SQLite schema, its meta row, and what reading a damaged file raises.

Shared by :mod:`cvo.cluster.embedded.store` (the live store) and :mod:`cvo.cluster.embedded.legacy_state`
(which migrates the JSON state of cvo 0.1 into this format); imports nothing of cvo but the API types.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cvo.cluster.api import Ref

SQLITE_MAGIC = b"SQLite format 3\x00"
# 1 was the JSON state file of cvo 0.1 (migrated by cvo.cluster.embedded.legacy_state); 2 kept the objects in a
# WITHOUT ROWID table keyed by (group, kind, namespace, name), converted in place by upgrade_schema.
FORMAT = 3
MAX_CLOCK = 253402300800.0  # 10000-01-01T00:00:00Z: past it, datetime cannot hold the cluster's clock
META_SCHEMA = """
CREATE TABLE meta (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    format INTEGER NOT NULL,
    resource_version INTEGER NOT NULL,
    uid_counter INTEGER NOT NULL,
    clock REAL NOT NULL,          -- the cluster's wall clock (Unix seconds) at its newest write
    compacted INTEGER NOT NULL    -- tombstones at or below this revision may be gone
)
"""
# A rowid table with a unique index on the key, not a WITHOUT ROWID table keyed by it: the objects'
# JSON (a few KB, some CRDs hundreds) then stays out of the key's b-tree, whose pages a WITHOUT ROWID
# table fills with whole rows; replaying the corpus install's writes, inserting and committing take
# about 30 % less.  INSERT OR REPLACE replaces by the unique index as it did by the primary key.
OBJECTS_SCHEMA = """
CREATE TABLE objects (
    grp TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    rv INTEGER NOT NULL,          -- resourceVersion of the last write (or of the delete)
    data BLOB                     -- the object's JSON, or NULL: deleted (a tombstone)
);
CREATE UNIQUE INDEX objects_by_key ON objects (grp, kind, namespace, name);
CREATE INDEX objects_by_rv ON objects (rv);
"""


class StateError(ValueError):
    """The state file cannot be used; the message is one line and names the file."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))  # SQLite's messages can quote a damaged schema, newlines and all


# What reading a damaged database can raise: SQLite's errors, and text columns that are not UTF-8.
DB_ERRORS = (sqlite3.Error, UnicodeDecodeError)


@dataclass(frozen=True, slots=True)
class Meta:
    resource_version: int
    uid_counter: int
    clock: float
    compacted: int


def is_sqlite(head: bytes) -> bool:
    return head.startswith(SQLITE_MAGIC)


def read_head(path: Path, size: int = 16) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)


def _run(conn: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):  # not executescript: it would commit the caller's transaction
        if statement.strip():
            conn.execute(statement)


def create_schema(conn: sqlite3.Connection, meta: Meta) -> None:
    """The tables and the meta row of a new store (inside the caller's transaction)."""
    _run(conn, META_SCHEMA)
    _run(conn, OBJECTS_SCHEMA)
    conn.execute("INSERT INTO meta VALUES (1, ?, ?, ?, ?, ?)",
                 (FORMAT, meta.resource_version, meta.uid_counter, meta.clock, meta.compacted))


def upgrade_schema(conn: sqlite3.Connection) -> None:
    """Convert a store of format 2 to :data:`FORMAT` in place (inside the caller's write transaction):
    the same rows, in the rowid table of :data:`OBJECTS_SCHEMA`."""
    conn.execute("ALTER TABLE objects RENAME TO objects_format2")
    conn.execute("DROP INDEX IF EXISTS objects_by_rv")  # renamed with its table; the new one takes the name
    _run(conn, OBJECTS_SCHEMA)
    conn.execute("INSERT INTO objects SELECT grp, kind, namespace, name, rv, data FROM objects_format2 "
                 "ORDER BY grp, kind, namespace, name")
    conn.execute("DROP TABLE objects_format2")
    conn.execute("UPDATE meta SET format = ? WHERE id = 1", (FORMAT,))


def write_rows(conn: sqlite3.Connection, rows: Iterable[tuple[Ref, int, bytes]]) -> None:
    """Bulk insert for migrations (inside the caller's transaction)."""
    conn.executemany("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?, ?)",
                     ((r.group, r.kind, r.namespace, r.name, rv, data) for r, rv, data in rows))
