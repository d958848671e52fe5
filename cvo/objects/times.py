"""Kubernetes timestamps (RFC 3339) as nanoseconds since the Unix epoch, for any time Go's ``time.Time`` holds.

A ``datetime`` in UTC ends at years 1 and 9999, but ``0001-01-01T00:00:00+14:00`` (Go's zero time written
with an offset) is 0000-12-31 in UTC: converting it raises ``OverflowError``.  Nanoseconds are computed
from the local time and the offset without that conversion, so every parsable timestamp has a value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)
MAX_TEXT = 64  # characters: no timestamp is longer (2006-01-02T15:04:05.999999999+07:00 is 35)


def to_ns(when: datetime) -> int:
    """An aware datetime (a naive one is UTC) as nanoseconds since the Unix epoch; never overflows."""
    offset = when.utcoffset() or timedelta(0)
    return (when.replace(tzinfo=None) - _EPOCH - offset) // _MICROSECOND * 1000


def from_ns(ns: int) -> datetime:
    """Nanoseconds as an aware UTC datetime (microseconds), held within the years ``datetime`` can hold."""
    micros = ns // 1000
    if micros <= to_ns(_FIRST) // 1000:
        return _FIRST
    if micros >= to_ns(_LAST) // 1000:
        return _LAST
    return _EPOCH.replace(tzinfo=UTC) + timedelta(microseconds=micros)


def parse_datetime(text: str) -> datetime | None:
    """An RFC 3339 timestamp (``Z`` or an offset; none means UTC) as an aware datetime; ``None`` if malformed."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def parse_time(text: object) -> int | None:
    """A Kubernetes timestamp as nanoseconds; ``None`` for a missing or malformed one.

    Fractions of a second are kept to the nanosecond, digits past the ninth ignored, as Go's ``time.Parse``
    reads them; ``datetime`` alone would cut them to microseconds."""
    if not isinstance(text, str) or not text or len(text) > MAX_TEXT:
        return None
    nanos = 0
    dot = text.find(".")
    if dot != -1:
        end = dot + 1
        while end < len(text) and text[end] in "0123456789":
            end += 1
        digits = text[dot + 1:end]
        if not digits:
            return None
        nanos = int(digits[:9].ljust(9, "0"))
        text = text[:dot] + text[end:]
    when = parse_datetime(text)
    return None if when is None else to_ns(when) + nanos


@dataclass(frozen=True, order=True)
class Time:
    """A parsed timestamp: ``ns`` since the Unix epoch (ordered by it) and the text it was read from."""

    ns: int
    text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: object) -> Time | None:
        ns = parse_time(text)
        return None if ns is None else cls(ns, str(text))

    @property
    def when(self) -> datetime:
        """As an aware UTC datetime (microseconds; held within the years ``datetime`` can hold)."""
        return from_ns(self.ns)
