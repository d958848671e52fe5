"""The virtual-time loop: jumps when idle, and at a given speed keeps the time really waited when woken early."""

from __future__ import annotations

import asyncio
import threading

from cvo.clock import run_virtual


def test_idle_time_jumps_to_the_next_timer() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(7200)
        return loop.time()

    assert run_virtual(main) == 7200


def test_at_a_speed_an_early_wake_keeps_the_simulated_time_that_passed() -> None:
    """A thread (another process's write, a signal) wakes a loop that waits at 100× real time: the loop
    time moves by what really passed (times 100), neither by nothing nor by the whole wait."""

    async def main() -> float:
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        timer = threading.Timer(0.2, lambda: loop.call_soon_threadsafe(woken.set))
        timer.start()
        try:
            await asyncio.wait_for(woken.wait(), timeout=3600)  # 36 s of real time if nothing woke it
        finally:
            timer.cancel()
        return loop.time()

    at = run_virtual(main, speed=100)
    assert 5 < at < 3600
