"""Durations in behaviour and scenario files: seconds, or ``90s``, ``40m``, ``2h``, ``1h30m``."""

from __future__ import annotations

import math
import re
from typing import Any

from cvo.payload.limits import printable

_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$", re.ASCII)
_SECONDS = re.compile(r"^\d+(?:\.\d+)?$", re.ASCII)
# Longer than any simulated timeline; keeps clock arithmetic far from datetime's range.
MAX_DURATION = 366 * 24 * 3600.0


def show(value: Any) -> str:
    """A value for a one-line message."""
    return printable(repr(value), 60)


def label(key: Any) -> str:
    """A key of the file (an operator name) for a one-line message."""
    return printable(str(key), 60)


def parse_duration(value: Any, what: str = "duration", minimum: float = 0.0) -> float:
    """Seconds from ``90``, ``"90s"``, ``"40m"`` or ``"1h30m"``: finite, at least ``minimum``, at most a year."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        match = _DURATION.match(text)
        if _SECONDS.match(text):  # a bare number is seconds, as the help of every duration flag says
            seconds = float(text)
        elif text and match and any(match.groups()):
            h, m, s = (float(g) if g else 0.0 for g in match.groups())
            seconds = h * 3600 + m * 60 + s
    if seconds is None or math.isnan(seconds):
        raise ValueError(f"{what}: {show(value)} is not a duration (use seconds or e.g. 90s, 40m, 1h30m)")
    if seconds < minimum:
        least = "0s" if minimum == 0 else f"{minimum:g}s"
        raise ValueError(f"{what}: {show(value)} is too short: it must be at least {least}")
    if seconds > MAX_DURATION:
        raise ValueError(f"{what}: {show(value)} is longer than a year")
    return seconds
