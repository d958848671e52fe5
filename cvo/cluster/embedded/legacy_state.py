"""Migrating the JSON state file of cvo 0.1 (format 1) to the SQLite store, in place.

The old file held the whole cluster as one JSON object written when a command ended.  It is read
and checked (a corrupt one is refused with the first problem named), its objects are written into a
new SQLite database beside it, and that database is renamed over the old file, so the path a user
passes as ``--state`` keeps working.  Two processes migrating at once are serialised by a lock on
the old file; the one that comes second finds the path already replaced and does nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import orjson

from cvo.clock import parse_rfc3339
from cvo.cluster.api import Ref
from cvo.cluster.embedded.format import Meta, StateError, create_schema, is_sqlite, write_rows

LEGACY_FORMAT = 1


def migrate(path: Path, initial_clock: float) -> None:
    """Replace the JSON state at ``path`` by an equivalent SQLite store; :class:`StateError` if it is corrupt."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - held open for the lock
    except OSError as err:
        raise StateError(f"{path}: cannot read: {err.strerror}") from None
    with f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            if os.fstat(f.fileno()).st_ino != os.stat(path).st_ino:
                return  # another process migrated it while this one waited for the lock
        except FileNotFoundError:
            return
        data = f.read()
        if is_sqlite(data[:16]):
            return
        state = parse_state(path, data)
        tmp = path.with_name(f".{path.name}.migrating-{os.getpid()}")
        tmp.unlink(missing_ok=True)
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("BEGIN")
                create_schema(conn, Meta(state["resource_version"], state["uid_counter"],
                                         parse_rfc3339(state["clock_time"]).timestamp(), 0))
                write_rows(conn, ((Ref.of(obj), _object_rv(obj, state["resource_version"]), orjson.dumps(obj))
                                  for obj in state["objects"]))
                conn.execute("COMMIT")
            finally:
                conn.close()
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
    print(f"note: {path}: migrated the JSON state of an earlier cvo to the SQLite store "
          f"({len(state['objects'])} objects)", file=sys.stderr)


def _object_rv(obj: dict[str, Any], default: int) -> int:
    value = (obj.get("metadata") or {}).get("resourceVersion")
    if not isinstance(value, str | int | float):
        return default
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return default


def parse_state(path: Path, data: bytes) -> dict[str, Any]:
    try:
        return validate_state(orjson.loads(data))
    except orjson.JSONDecodeError as e:
        problem = f"invalid JSON ({e})"
    except ValueError as e:
        problem = str(e)
    problem = " ".join(problem.split())
    raise StateError(f"{path}: not a cvo state file (neither an SQLite store nor a valid JSON state of an "
                     f"earlier cvo): {problem}")


def validate_state(state: Any) -> dict[str, Any]:
    """The state if well-formed; ValueError naming the first problem otherwise."""
    if not isinstance(state, dict):
        raise ValueError("expected a JSON object")
    if state.get("format") != LEGACY_FORMAT:
        raise ValueError(f"unsupported format {state.get('format')!r} (expected {LEGACY_FORMAT})")
    for counter in ("resource_version", "uid_counter"):
        value = state.get(counter)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{counter} must be a non-negative integer, not {value!r}")
    try:
        parse_rfc3339(state.get("clock_time"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"clock_time must be an RFC3339 time, not {state.get('clock_time')!r}") from None
    _validate_objects(state.get("objects"))
    return state


def _validate_objects(objects: Any) -> None:
    if not isinstance(objects, list):
        raise ValueError("objects must be a list")
    seen: set[Ref] = set()
    for i, obj in enumerate(objects):
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if (not isinstance(meta, dict) or not isinstance(obj.get("apiVersion"), str) or not obj.get("apiVersion")
                or not isinstance(obj.get("kind"), str) or not obj.get("kind")
                or not isinstance(meta.get("name"), str) or not meta.get("name")
                or not isinstance(meta.get("namespace", ""), str | None)):
            raise ValueError(f"objects[{i}] is not a Kubernetes object (apiVersion, kind, metadata.name)")
        ref = Ref.of(obj)
        if ref in seen:
            raise ValueError(f"objects[{i}] duplicates {ref}")
        seen.add(ref)
