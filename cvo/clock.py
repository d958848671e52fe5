"""Injected time: every wait, timeout and simulated delay goes through the running event loop.

With :func:`run_virtual` the loop's clock is virtual: whenever every task is waiting, time jumps to
the next scheduled timer instead of sleeping, so a sweep that takes two simulated hours finishes
in milliseconds, deterministically.  :class:`Clock` turns loop time into wall-clock datetimes for
condition and history timestamps.

A real cluster uses :class:`WallClock`: every timestamp is the system clock at the moment it is
taken.  :class:`Clock` anchors wall time once (its ``epoch`` when made, its origin at first use),
which is what virtual time needs; on a real cluster that anchor would be wrong by whatever happened
between the two (loading the payload, connecting through retries: 11 s in one measured run).
Waits, timeouts and back-offs still use the loop's monotonic clock either way.
"""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

T = TypeVar("T")


class Clock:
    """Wall-clock time derived from the running loop: ``epoch`` at loop time ``origin``."""

    def __init__(self, epoch: datetime | None = None) -> None:
        self.epoch = (epoch or datetime.now(UTC)).astimezone(UTC)
        self.origin: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop it was last read in

    def _loop_time(self) -> float:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # another thread (a display redrawing on a timer): the time of the loop this clock runs on
            if self._loop is None or self._loop.is_closed():
                return self.origin or 0.0
            loop = self._loop
        else:
            self._loop = loop
        now = loop.time()
        if self.origin is None:
            self.origin = now
        return now

    def now(self) -> datetime:
        return self.epoch + timedelta(seconds=self._loop_time() - (self.origin or 0.0))

    def monotonic(self) -> float:
        return self._loop_time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


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


def to_rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


class _VirtualSelector(selectors.BaseSelector):
    """A selector that never blocks: it advances the loop's virtual time by the timeout instead.

    Real file descriptors (the loop's self-pipe, used by signals and by threads handing results to
    the loop) are still polled, without waiting.  With ``speed`` set, each jump also sleeps
    ``jump / speed`` real seconds, so a simulation can be watched at, say, 600× real time.
    """

    def __init__(self, speed: float | None) -> None:
        self._real = selectors.DefaultSelector()
        self._loop: VirtualTimeLoop | None = None
        self.speed = speed
        self._sleeping: tuple[float, float] | None = None  # (real start, virtual timeout) of the jump under way

    def in_flight(self) -> float:
        """The virtual time a jump under way has covered so far (read by other threads: a display that redraws
        while the loop sleeps sees the time pass at ``speed``, not stand still and then leap)."""
        sleeping = self._sleeping
        if sleeping is None or not self.speed:
            return 0.0
        started, timeout = sleeping
        return min(timeout, (time.monotonic() - started) * self.speed)

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def get_map(self) -> Any:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready or timeout == 0:
            return ready
        assert self._loop is not None
        if timeout is None:
            # Nothing is scheduled and nothing can arrive from outside except through the self-pipe
            # (threads, signals): wait for it in real time.
            return self._real.select(None)
        if self.speed:
            started = time.monotonic()
            self._sleeping = (started, timeout)
            try:
                ready = self._real.select(timeout / self.speed)
            finally:
                self._sleeping = None
            if ready:
                # Woken early (a thread, a signal, another process's write): the simulated time that
                # passed is the real time waited, at the speed asked for.
                self._loop.advance(min(timeout, (time.monotonic() - started) * self.speed))
                return ready
        self._loop.advance(timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop whose ``time()`` only moves when the loop would otherwise sleep."""

    def __init__(self, start: float = 0.0, speed: float | None = None) -> None:
        selector = _VirtualSelector(speed)
        super().__init__(selector)
        selector._loop = self
        self._selector_v = selector
        self._virtual_now = start

    def time(self) -> float:
        # in the loop's own thread the jump under way is 0 (the loop does not run while it sleeps); another
        # thread reading the time during a jump at a given speed sees it pass smoothly
        return self._virtual_now + self._selector_v.in_flight()

    def advance(self, seconds: float) -> None:
        self._virtual_now += max(0.0, seconds)


@dataclass(frozen=True)
class Pace:
    """How the running loop's time passes: ``simulated`` (:class:`VirtualTimeLoop`) at ``speed`` simulated
    seconds per real second (``None``: as fast as it can), or the wall clock's."""

    simulated: bool
    speed: float | None = None


def pace() -> Pace:
    """The pace of the running loop (what a message about a timeout says it was measured on)."""
    loop = asyncio.get_running_loop()
    if isinstance(loop, VirtualTimeLoop):
        return Pace(True, loop._selector_v.speed)
    return Pace(False)


def run_virtual(main: Callable[[], Awaitable[T]], speed: float | None = None) -> T:
    """Run ``main()`` on a virtual-time loop; returns its result."""
    loop = VirtualTimeLoop(speed=speed)
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main())
    finally:
        try:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def run_real(main: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(main())  # type: ignore[arg-type]


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


def wall_seconds() -> float:
    """Real elapsed-time source for reports (never used for waits)."""
    return time.perf_counter()
