"""A sweep's events as JSON lines: written with ``--events FILE``, read back for ``cvo report``.

One line per event, ``{"event": NAME, "time": ISO-8601, FIELD: VALUE, ...}`` with the event's fields in
the order :mod:`cvo.runner.sweep_events` declares them; a line read back is the catalogue's event (or an
:class:`~cvo.runner.sweep_events.UnknownEvent` for a name it does not know, kept with its fields).  The
reader also takes the output of ``--log-format json`` (stderr), where the sweep's clock is ``sim_time``
and ``level`` and ``timestamp`` are the logger's: lines that are not JSON objects (other output of the
command) and JSON objects without a time (other loggers) are skipped.  Anything else that is wrong — a
line that looks like JSON and is not, a time that is not a time, a name that is not text, a file too
large — is an :class:`EventsError` naming the file and line.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson

from cvo.payload.limits import display_name, printable
from cvo.runner.sweep_events import Event, SweepStarted, decode

# Limits on what the reader takes in: a report of the corpus upgrade is about 10,000 events (3 MB).
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
MAX_EVENTS = 1_000_000
MAX_NAME = 200
# Keys of a line that are not the event's fields: ours (``sweep``: the sweep's number in a controller's file),
# and the logger's (cvo.log).
RESERVED = ("event", "time", "sweep", "sim_time", "level", "timestamp", "logger")


class EventsError(Exception):
    """Bad events input: one line naming the file (and line) and what is wrong."""


def event_line(event: Event, sweep: int | None = None) -> bytes:
    """One event as a JSON line; a field whose name the format reserves is written as ``field_NAME``.
    ``sweep``: the number of the sweep it belongs to (``cvo run --events``)."""
    doc: dict[str, Any] = {"event": event.name, "time": event.time.isoformat()}
    if sweep is not None:
        doc["sweep"] = sweep
    for key, value in event.fields.items():
        doc[f"field_{key}" if key in RESERVED else key] = value
    return orjson.dumps(doc, default=str, option=orjson.OPT_NON_STR_KEYS) + b"\n"


class EventsWriter:
    """A reporter writing every event to a file as it happens (flushed per line: a killed sweep keeps its events).

    ``append`` (``cvo run --events``): the file is appended to, and every line says which sweep it belongs to
    (``"sweep": N``, counted from 1 over the whole file, a restarted controller continuing the count; 0 for
    what comes before the first sweep), so that ``cvo report --sweep N`` picks one.
    """

    def __init__(self, path: Path, append: bool = False) -> None:
        self.path = path
        self.append = append
        self.sweeps = 0
        self._file: IO[bytes] | None = None

    def open(self) -> EventsWriter:
        """Create (truncate, or append to) the file; :class:`EventsError` if it cannot be written."""
        try:
            if self.append:
                self.sweeps = count_sweeps(self.path)
            self._file = open(self.path, "ab" if self.append else "wb")  # noqa: SIM115 - closed by close()
        except OSError as err:
            raise EventsError(f"{display_name(str(self.path))}: cannot write the events file: "
                              f"{err.strerror or err}") from None
        return self

    def emit(self, event: Event) -> None:
        if self._file is None:
            return
        if self.append and isinstance(event, SweepStarted):
            self.sweeps += 1
        self._file.write(event_line(event, self.sweeps if self.append else None))
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> EventsWriter:
        return self if self._file is not None else self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


def count_sweeps(path: Path) -> int:
    """How many sweeps an events file holds already (its ``sweep.started`` lines as this writer writes them);
    0 for a file that does not exist."""
    marker = b'{"event":"' + SweepStarted.name.encode() + b'"'
    count = 0
    try:
        with open(path, "rb") as stream:
            for line in stream:
                count += line.startswith(marker)
    except FileNotFoundError:
        return 0
    return count


@dataclass
class ReadResult:
    events: list[Event]
    skipped: int  # lines that were not sweep events (other output, other loggers)


def _time(value: Any, where: str) -> datetime:
    if not isinstance(value, str) or len(value) > 64:
        raise EventsError(f"{where}: the time is not an ISO-8601 text: {printable(repr(value), 60)}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise EventsError(f"{where}: the time is not an ISO-8601 time: {printable(repr(value), 60)}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        raise EventsError(f"{where}: the time is out of range: {printable(repr(value), 60)}") from None


def parse_line(raw: bytes, where: str) -> Event | None:
    """The event on one line; None for a line that is not a sweep event (skipped)."""
    text = raw.strip()
    if not text.startswith(b"{"):
        return None
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        raise EventsError(f"{where}: not a JSON object: {printable(str(err), 120)}") from None
    if not isinstance(doc, dict):
        raise EventsError(f"{where}: not a JSON object")
    name = doc.get("event")
    stamp = doc.get("time", doc.get("sim_time"))
    if stamp is None:
        return None  # another logger's line (e.g. the CLI's "cluster" line)
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise EventsError(f"{where}: the event name is not a short text: {printable(repr(name), 60)}")
    fields = {k: v for k, v in doc.items() if k not in RESERVED}
    for key in list(fields):
        if key.startswith("field_") and key[6:] in RESERVED:
            fields[key[6:]] = fields.pop(key)
    return decode(_time(stamp, where), name, fields)


def _lines(stream: IO[bytes], label: str) -> Iterator[tuple[int, bytes]]:
    number = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise EventsError(f"{label}:{number}: the line is longer than {MAX_LINE_BYTES // 1024} KiB")
        yield number, raw


def read_events(path: Path, sweep: int | None = None) -> ReadResult:
    """Every sweep event in ``path`` (``-``: standard input), in file order; ``sweep``: only those of one sweep
    (:func:`read_stream`)."""
    label = "<stdin>" if str(path) == "-" else display_name(str(path))
    try:
        if str(path) == "-":
            import sys

            return read_stream(sys.stdin.buffer, label, sweep)
        if path.is_dir():
            raise EventsError(f"{label}: is a directory, not an events file")
        size = os.stat(path).st_size
        if size > MAX_FILE_BYTES:
            raise EventsError(f"{label}: {size} bytes is more than the {MAX_FILE_BYTES // 2**20} MiB an events "
                              f"file may have")
        with open(path, "rb") as stream:
            return read_stream(stream, label, sweep)
    except OSError as err:
        raise EventsError(f"{label}: cannot read the events file: {err.strerror or err}") from None



def read_stream(stream: IO[bytes], label: str, sweep: int | None = None) -> ReadResult:
    """The events of ``stream``.  ``sweep`` N (from 1) keeps those of the file's N-th sweep only: from its
    ``sweep.started`` to the next one (what comes after a sweep's end, such as ``cluster.requests``, is
    its); -1 the last sweep, -2 the one before, and so on.  Only the events kept count towards
    :data:`MAX_EVENTS`: a long-running controller's file (``cvo run --events``) is read a sweep at a time."""
    if sweep == 0:
        raise ValueError("sweeps are counted from 1 (or from the end: -1)")
    events: list[Event] = []
    recent: deque[list[Event]] = deque()  # sweep -K: the events of the last K sweeps so far
    kept = skipped = total = sweeps = 0
    for number, raw in _lines(stream, label):
        total += len(raw)
        if total > MAX_FILE_BYTES:
            raise EventsError(f"{label}: more than the {MAX_FILE_BYTES // 2**20} MiB an events file may have")
        event = parse_line(raw, f"{label}:{number}")
        if event is None:
            skipped += raw.strip() != b""
            continue
        if isinstance(event, SweepStarted):
            sweeps += 1
            if sweep is not None and 0 < sweep < sweeps:
                break  # past the sweep asked for
            if sweep is not None and sweep < 0:
                recent.append([])
                if len(recent) > -sweep:
                    kept -= len(recent.popleft())
        if sweep is None or sweeps == sweep:
            events.append(event)
        elif sweep < 0 and recent:
            recent[-1].append(event)
        else:
            continue
        kept += 1
        if kept > MAX_EVENTS:
            raise EventsError(f"{label}:{number}: more than {MAX_EVENTS} events")
    if sweep is not None and sweep < 0:
        events = recent[0] if len(recent) == -sweep else []
    if sweep is not None and not events:
        raise EventsError(f"{label}: no sweep {sweep}: the file has {sweeps} sweep(s) (sweep.started events)")
    if not events:
        raise EventsError(f"{label}: no sweep events (expected the JSON lines of --events FILE, "
                          f"or of --log-format json -vv on stderr)")
    return ReadResult(events, skipped)
