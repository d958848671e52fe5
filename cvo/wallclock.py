"""The real clock of a real cluster: every timestamp is the wall clock at the moment it is taken.

:class:`cvo.clock.Clock` derives wall-clock time from the event loop's clock, anchored once (its
``epoch`` when it is made, its origin at first use); that is what the embedded cluster's virtual
time needs, and it stays as it is.  On a real cluster the anchor is wrong by whatever happened
between the two (loading the payload, connecting through retries: 11 s in one measured run), and
it drifts from the system clock over a long sweep.  :class:`WallClock` asks the system clock each
time instead; waits, timeouts and back-offs still use the loop's (monotonic) clock.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from cvo.clock import Clock


class WallClock(Clock):
    """``now()`` is ``datetime.now(UTC)`` at the call; ``monotonic()`` the running loop's time."""

    def __init__(self) -> None:
        super().__init__()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()
