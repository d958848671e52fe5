"""The embedded cluster's durable store: one SQLite database in WAL mode, shared by every cvo process.

The embedded cluster used to be a JSON file saved when a command ended; a second process saving
later overwrote the first one's writes, and a killed process lost all of its own.  This store makes
the file behave like the API server it stands for (k3s's kine runs the Kubernetes API on SQLite the
same way):

* one table of objects keyed by (group, kind, namespace, name), each row holding the object's JSON
  and the resourceVersion of its last write; a deletion leaves a tombstone row (no data) with the
  resourceVersion of the delete, so "what changed after revision N" is one indexed query;
* one ``meta`` row with the global resourceVersion, the uid counter and the cluster's clock;
* every write is its own transaction, begun with ``BEGIN IMMEDIATE``: writers are serialised by
  SQLite's lock, and the caller brings its view up to date inside the lock before it checks a
  request's resourceVersion, so optimistic concurrency holds across processes;
* a commit is durable once it returns (WAL with ``synchronous=NORMAL``: a killed or crashed process
  loses only the request in flight; an operating-system crash may lose the last commits, not
  consistency);
* an object nested deeper than ``--from-file`` reads (a hand-edited store) is read as absent, with a warning;
* readers never block writers (WAL), and :meth:`Store.changes` tells a process, cheaply
  (``PRAGMA data_version``), whether another one has committed since it last looked.
* the write-ahead log is copied into the database file by a thread of the store's own every
  :data:`CHECKPOINT_EVERY` commits, beside the loop, and what is left by the last connection to close.

The store knows nothing about Kubernetes semantics: :class:`cvo.cluster.embedded.server.SimCluster` keeps the
objects decoded in memory, checks every request against them, and records its writes here.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path

from cvo.cluster.api import Ref
from cvo.cluster.embedded.checked_rows import row_digest
from cvo.cluster.embedded.format import (
    DB_ERRORS,
    FORMAT,
    MAX_CLOCK,
    Meta,
    StateError,
    create_schema,
    is_sqlite,
    read_head,
    upgrade_schema,
)
from cvo.cluster.embedded.legacy_state import migrate
from cvo.log import get_logger
from cvo.payload.limits import MAX_DEPTH

log = get_logger(__name__)

__all__ = ["DB_ERRORS", "FORMAT", "MAX_CLOCK", "Changes", "Meta", "Row", "StateError", "Store", "peek_clock"]

BUSY_TIMEOUT = 60.0  # seconds a writer waits for another process's transaction before giving up
# Tombstones older than this many revisions are dropped when a store is opened; a process whose view
# is older than the compaction point reloads everything (as a watch that gets 410 Gone relists).
TOMBSTONE_HORIZON = 10_000
# Every this many commits, a thread of the store's own copies what was committed from the write-ahead
# log into the database file (see :class:`_Checkpointer`).
CHECKPOINT_EVERY = 32


_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def nested_deeper(data: bytes, limit: int) -> bool:
    """Whether the JSON ``data`` nests objects and lists more than ``limit`` levels deep (the document is level 1).

    On the bytes, at C speed (the store holds the corpus's 10 MB of CRDs: 50 ms, where decoding them takes 36):
    escaped backslashes and quotes out, then the strings (every other piece between quotes), then all but
    the brackets; each ``replace`` of ``[]`` then removes exactly the innermost level."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    outside = b"".join(data.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    skeleton = outside.translate(_BRACKETS, _NOT_BRACKETS)
    for _ in range(limit):
        if not skeleton:
            return False
        skeleton = skeleton.replace(b"[]", b"")
    return bool(skeleton)


@dataclass(frozen=True, slots=True)
class Row:
    ref: Ref
    rv: int
    data: bytes | None  # None: the object was deleted
    # the row's digest (:func:`cvo.cluster.embedded.checked_rows.row_digest`) when it is one of the rows
    # known to pass the open-time checks (:meth:`Store.snapshot`'s ``known``): neither checked nor measured
    known: bytes | None = None


@dataclass(frozen=True, slots=True)
class Changes:
    meta: Meta
    rows: list[Row]
    full: bool  # rows is every live object (the view was older than the compaction point): reload


def peek_clock(path: Path) -> float | None:
    """The clock of the store at ``path``, without opening it for writing; None if it has none."""
    try:
        if not path.is_file() or not is_sqlite(read_head(path)):
            return None
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT)
        try:
            row = conn.execute("SELECT clock FROM meta WHERE id = 1").fetchone()
        finally:
            conn.close()
    except (OSError, *DB_ERRORS):
        return None
    try:
        return float(row[0]) if row else None
    except (TypeError, ValueError):
        return None


class _Checkpointer:
    """Copies committed pages from the write-ahead log into the database file, in a thread of its own.

    SQLite does it when the log passes ``wal_autocheckpoint`` pages (inside a commit) and when the last
    connection closes: a sweep's few thousand writes, some 10 MB of log, were copied and synced
    (two fsyncs) at its end, after the work.  A ``PASSIVE`` checkpoint blocks no reader and no writer
    (it copies what is committed and stops at a newer transaction), so a second connection can run it
    while the loop goes on committing; the next writer then starts the log again from its beginning,
    and the checkpoint at close has only the last commits left.  It changes what is durable when
    nothing: a commit is in the log, synced or not, exactly as without it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.runs = 0  # checkpoints done
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        """Checkpoint soon (once, however often it is asked before it gets to it)."""
        if self._stopping:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"cvo-store-checkpoint {self.path.name}",
                                            daemon=True)
            self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """Finish the checkpoint under way and close the thread's connection (before the store's own one:
        the last connection to close is the one that merges the log into the file)."""
        self._stopping = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=BUSY_TIMEOUT)

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self.path, timeout=0, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return  # the checkpoint at close does it all
        try:
            conn.execute("PRAGMA synchronous = NORMAL")  # as the store's connection: the log synced, then the file
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self.runs += 1
        except sqlite3.Error:
            return  # another process checkpointing holds the lock, a full disk…: the next one or close does it
        finally:
            conn.close()


class Store:
    """One process's connection to the store.  Not thread-safe: one event loop uses it."""

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: Meta, data_version: int) -> None:
        self.path = path
        self._conn = conn
        self._meta = meta
        self._synced = meta.resource_version  # every revision up to here is in the caller's view
        self._data_version = data_version  # of the snapshot ``meta`` was read from
        self._in_transaction = False
        self._meta_dirty = False
        self._rows: list[tuple[str, str, str, str, int, bytes | None]] = []
        self.commits = 0  # transactions this connection committed
        self._refused: set[tuple[Ref, int]] = set()  # rows too deeply nested to read, warned about
        self.checkpointer = _Checkpointer(path)
        weakref.finalize(self, self.checkpointer.stop)  # a store dropped without close() stops its thread too

    # ------------------------------------------------------------------------------- opening

    @classmethod
    def open(cls, path: Path, *, initial_clock: float) -> Store:
        """Open (or create) the store at ``path``; :class:`StateError` when it is not a usable store."""
        if path.is_dir():
            raise StateError(f"{path}: is a directory, not a state file")
        exists = path.exists()
        if exists and not path.is_file():
            raise StateError(f"{path}: not a regular file")
        if exists:
            try:
                head = read_head(path)
            except OSError as err:
                raise StateError(f"{path}: cannot read: {err.strerror}") from None
            if head and not is_sqlite(head):
                migrate(path, initial_clock)
            elif not head:
                exists = False  # an empty file: SQLite makes a database of it
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            # The cluster holds the payload's Secrets: only its owner may read it (SQLite gives the
            # write-ahead log and index files the same mode).
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        try:
            conn = cls._connect(path)
        except DB_ERRORS as err:
            what = "corrupt state database" if "not a database" in str(err) else "cannot open the state database"
            raise StateError(f"{path}: {what}: {err}") from None
        try:
            meta, data_version = cls._prepare(conn, path, initial_clock)
        except BaseException:
            conn.close()
            raise
        store = cls(path, conn, meta, data_version)
        store._compact()
        return store

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint = 10000")
        return conn

    @classmethod
    def _prepare(cls, conn: sqlite3.Connection, path: Path, initial_clock: float) -> tuple[Meta, int]:
        """The store's meta row and the data version it was read at, creating the schema in a new database
        (once, whoever gets there first)."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not tables:
                    create_schema(conn, Meta(0, 0, initial_clock, 0))
                elif not {"meta", "objects"} <= tables:
                    raise StateError(f"{path}: an SQLite database, but not a cvo state file "
                                     f"(tables: {', '.join(sorted(tables))})")
                elif cls._stored_format(conn) == 2:
                    upgrade_schema(conn)  # the previous format: converted in place, once, under the lock
                meta = cls._read_meta(conn, path)
                data_version = int(conn.execute("PRAGMA data_version").fetchone()[0])
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
        except DB_ERRORS as err:
            raise StateError(f"{path}: corrupt state database: {err}") from None
        return meta, data_version

    @staticmethod
    def _stored_format(conn: sqlite3.Connection) -> object:
        row = conn.execute("SELECT format FROM meta WHERE id = 1").fetchone()
        return row[0] if row else None

    @staticmethod
    def _read_meta(conn: sqlite3.Connection, path: Path) -> Meta:
        try:
            row = conn.execute("SELECT format, resource_version, uid_counter, clock, compacted FROM meta "
                               "WHERE id = 1").fetchone()
        except DB_ERRORS as err:
            raise StateError(f"{path}: corrupt state database: {err}") from None
        if row is None:
            raise StateError(f"{path}: corrupt state database: the meta row is missing")
        fmt, rv, uid, clock, compacted = row
        if fmt != FORMAT:
            raise StateError(f"{path}: state format {fmt!r} is not supported by this cvo (it reads format {FORMAT})")
        for name, value in (("resource_version", rv), ("uid_counter", uid), ("compacted", compacted)):
            if not isinstance(value, int) or value < 0:
                raise StateError(f"{path}: corrupt state database: {name} is {value!r}")
        if not isinstance(clock, int | float) or not 0 <= clock < MAX_CLOCK:  # NaN fails too
            raise StateError(f"{path}: corrupt state database: clock is {clock!r}")
        return Meta(rv, uid, float(clock), compacted)

    def _compact(self) -> None:
        horizon = self._meta.resource_version - TOMBSTONE_HORIZON
        if horizon <= self._meta.compacted:
            return
        with self.transaction():  # the store's own short transaction (compaction)
            self._conn.execute("DELETE FROM objects WHERE data IS NULL AND rv <= ?", (horizon,))
            self._conn.execute("UPDATE meta SET compacted = ? WHERE id = 1", (horizon,))
            self._meta = Meta(self._meta.resource_version, self._meta.uid_counter, self._meta.clock, horizon)

    # ------------------------------------------------------------------------------- reading

    @property
    def meta(self) -> Meta:
        return self._meta

    def snapshot(self, known: Container[bytes] | None = None) -> list[Row]:
        """Every live object, in key order, as of :attr:`meta` (read in one transaction).

        ``known``: digests of rows that passed the open-time checks before (:mod:`cvo.cluster.embedded.checked_rows`);
        a row among them skips the nesting check and comes back with its digest in ``known``."""
        own = not self._in_transaction
        if own:
            self._conn.execute("BEGIN")
        try:
            # Everything from one snapshot, the data version included: a commit after it is seen next time.
            version = self._read_data_version()
            self._meta = self._read_meta(self._conn, self.path)
            rows = self._live_rows(known)
        finally:
            if own:
                self._conn.execute("COMMIT")
        self._synced = self._meta.resource_version
        self._data_version = version
        return rows

    def changes(self) -> Changes | None:
        """What other processes committed since this one last looked; None when nothing (cheap)."""
        if self._read_data_version() == self._data_version:
            return None
        own = not self._in_transaction
        if own:
            self._conn.execute("BEGIN")
        try:
            # Read in one snapshot, its data version included: a commit after it is seen next time.
            version = self._read_data_version()
            meta = self._read_meta(self._conn, self.path)
            if meta.resource_version == self._synced:
                self._meta = meta
                self._data_version = version
                return None
            if self._synced < meta.compacted:
                rows, full = self._live_rows(), True
            else:
                rows = [self._row(r) for r in self._conn.execute(
                    "SELECT grp, kind, namespace, name, rv, data FROM objects WHERE rv > ? ORDER BY rv",
                    (self._synced,))]
                full = False
        finally:
            if own:
                self._conn.execute("COMMIT")
        self._data_version = version
        self._meta = meta
        self._synced = meta.resource_version
        return Changes(meta, rows, full)

    def _live_rows(self, known: Container[bytes] | None = None) -> list[Row]:
        rows = [self._row(r, known) for r in self._conn.execute(
            "SELECT grp, kind, namespace, name, rv, data FROM objects WHERE data IS NOT NULL "
            "ORDER BY grp, kind, namespace, name")]
        return [row for row in rows if row.data is not None]  # (without the ones too deeply nested to read)

    def _row(self, r: tuple[object, ...], known: Container[bytes] | None = None) -> Row:
        """A row as cvo wrote it: text keys, an integer revision, JSON bytes (a damaged file may hold anything).

        An object nested deeper than cvo reads (:data:`cvo.payload.limits.MAX_DEPTH`, as ``--from-file`` does)
        is read as deleted, with one warning naming it: the others stay readable, and the row stays in the
        file as it is (a write of the object replaces it)."""
        grp, kind, namespace, name, rv, data = r
        if isinstance(data, str):
            data = data.encode()
        if (not all(isinstance(k, str) for k in (grp, kind, namespace, name)) or not isinstance(rv, int)
                or not isinstance(data, bytes | None)):
            raise StateError(f"{self.path}: corrupt state database: a row of unexpected types ({kind!r} {name!r})")
        ref = Ref(grp, kind, namespace, name)  # type: ignore[arg-type]
        if known is not None and data is not None and (digest := row_digest(ref, data)) in known:
            return Row(ref, rv, data, digest)
        if data is not None and nested_deeper(data, MAX_DEPTH):
            if (ref, rv) not in self._refused:
                self._refused.add((ref, rv))
                log.warning("an object in the store is nested too deeply to read; read as absent", state=str(self.path),
                            object=f"{ref.kind} {ref.namespace + '/' if ref.namespace else ''}{ref.name}",
                            limit=f"{MAX_DEPTH} levels")
            data = None
        return Row(ref, rv, data)

    def _read_data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    # ------------------------------------------------------------------------------- writing

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction: the caller catches up with :meth:`changes` first, then records rows.

        Nothing recorded is written unless the block ends normally; then it is committed, durably.
        """
        self.begin()
        try:
            yield
        except BaseException:
            self.rollback()
            raise
        self.commit()

    @property
    def in_transaction(self) -> bool:
        return self._in_transaction

    def begin(self) -> None:
        """Take the write lock (waiting up to :data:`BUSY_TIMEOUT` for another process's transaction)."""
        if self._in_transaction:
            raise RuntimeError("Store transactions do not nest")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as err:
            raise StateError(f"{self.path}: cannot lock the state database for writing: {err}") from None
        self._in_transaction = True
        self._rows = []
        self._meta_dirty = False

    def commit(self) -> None:
        """Write what was recorded and commit it; on failure nothing is written (:class:`StateError`)."""
        try:
            self._flush()
            self._conn.execute("COMMIT")
        except sqlite3.Error as err:
            self.rollback()
            raise StateError(f"{self.path}: cannot write the state database: {err}") from None
        self.commits += 1
        self._end()
        if self.commits % CHECKPOINT_EVERY == 0:
            self.checkpointer.request()

    def rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.execute("ROLLBACK")
        self._end()

    def _end(self) -> None:
        self._in_transaction = False
        self._rows = []
        self._meta_dirty = False

    def put(self, ref: Ref, rv: int, data: bytes) -> None:
        self._record(ref, rv, data)

    def delete(self, ref: Ref, rv: int) -> None:
        self._record(ref, rv, None)

    def _record(self, ref: Ref, rv: int, data: bytes | None) -> None:
        if not self._in_transaction:
            raise RuntimeError("Store writes happen inside a transaction")
        self._rows.append((ref.group, ref.kind, ref.namespace, ref.name, rv, data))

    def set_meta(self, resource_version: int, uid_counter: int, clock: float) -> None:
        """Record the counters and the clock with this transaction (the clock never moves back)."""
        if not self._in_transaction:
            raise RuntimeError("Store writes happen inside a transaction")
        self._meta = Meta(resource_version, uid_counter, max(clock, self._meta.clock), self._meta.compacted)
        self._meta_dirty = True

    def advance_clock(self, clock: float) -> None:
        """Move the stored clock forward to ``clock`` (never back), in a transaction of its own."""
        self._conn.execute("UPDATE meta SET clock = MAX(clock, ?) WHERE id = 1", (clock,))

    def _flush(self) -> None:
        if not self._in_transaction:
            raise RuntimeError("Store writes happen inside a transaction")
        if self._rows:
            self._conn.executemany("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?, ?)", self._rows)
        if self._meta_dirty:
            m = self._meta
            self._conn.execute("UPDATE meta SET resource_version = ?, uid_counter = ?, clock = ? WHERE id = 1",
                               (m.resource_version, m.uid_counter, m.clock))
            self._synced = m.resource_version

    def close(self) -> None:
        self.checkpointer.stop()
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()

