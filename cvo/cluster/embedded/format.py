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
FORMAT = 2  # 1 was the JSON state file of cvo 0.1 (migrated by cvo.cluster.embedded.legacy_state)
MAX_CLOCK = 253402300800.0  # 10000-01-01T00:00:00Z: past it, datetime cannot hold the cluster's clock
SCHEMA = """
CREATE TABLE meta (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    format INTEGER NOT NULL,
    resource_version INTEGER NOT NULL,
    uid_counter INTEGER NOT NULL,
    clock REAL NOT NULL,          -- the cluster's wall clock (Unix seconds) at its newest write
    compacted INTEGER NOT NULL    -- tombstones at or below this revision may be gone
);
CREATE TABLE objects (
    grp TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    rv INTEGER NOT NULL,          -- resourceVersion of the last write (or of the delete)
    data BLOB,                    -- the object's JSON, or NULL: deleted (a tombstone)
    PRIMARY KEY (grp, kind, namespace, name)
) WITHOUT ROWID;
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


def create_schema(conn: sqlite3.Connection, meta: Meta) -> None:
    """The tables and the meta row of a new store (inside the caller's transaction)."""
    for statement in SCHEMA.split(";"):  # not executescript: it would commit the caller's transaction
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES (1, ?, ?, ?, ?, ?)",
                 (FORMAT, meta.resource_version, meta.uid_counter, meta.clock, meta.compacted))


def write_rows(conn: sqlite3.Connection, rows: Iterable[tuple[Ref, int, bytes]]) -> None:
    """Bulk insert for migrations (inside the caller's transaction)."""
    conn.executemany("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?, ?)",
                     ((r.group, r.kind, r.namespace, r.name, rv, data) for r, rv, data in rows))
