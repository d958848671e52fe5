"""Durations and offsets as people read them: ``45s``, ``12m05s``, ``1h02m``."""

from __future__ import annotations

import math


def duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    sign = "-" if seconds < 0 else ""
    whole = round(abs(seconds))
    if whole < 60:
        return f"{sign}{abs(seconds):.1f}s" if 0 < abs(seconds) < 10 and abs(seconds) != whole else f"{sign}{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{sign}{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{sign}{hours}h{minutes:02d}m"


def offset(seconds: float) -> str:
    """A moment as time since the start of the events: ``+12m05s``."""
    return "+" + duration(seconds)


def percent(share: float) -> str:
    return f"{100 * share:.1f}%"


def ticks(span: float, wanted: int = 8) -> list[float]:
    """Round moments for an axis of ``span`` seconds: steps of 1, 2 or 5 (seconds, minutes or hours)."""
    if not math.isfinite(span) or span <= 0:
        return [0.0]
    steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]
    step = next((s for s in steps if span / s <= wanted), None)
    if step is None:
        step = 86400 * math.ceil(span / wanted / 86400)
    count = min(int(span // step), 1000)
    return [i * float(step) for i in range(count + 1)]
