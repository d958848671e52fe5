"""SIGINT (Ctrl-C) and SIGTERM end a command the same way.

While a command's event loop runs (:func:`cancelled_by_signals`), either signal cancels its main
task.  Cancelling lets every ``finally`` run: requests already sent finish (the Kubernetes
backend's ``close()`` waits for its threads), the embedded cluster saves its state file, and
rerunning the command resumes.  Outside the loop (loading a payload), SIGTERM raises
:class:`Interrupted` as SIGINT raises ``KeyboardInterrupt`` (:func:`terminate_like_interrupt`).
Either way the command prints ``error: interrupted`` and exits with 128 + the signal's number: 130
for SIGINT, 143 for SIGTERM (what a shell reports for a process the signal killed).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """The command was stopped by ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def terminate_like_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Interrupted` in the main thread while this runs (as SIGINT raises
    ``KeyboardInterrupt``); the previous handler comes back after."""
    try:
        previous: Any = signal.signal(signal.SIGTERM, _raise_interrupted)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


async def cancelled_by_signals(main: Callable[[], Awaitable[T]]) -> T:
    """``await main()`` in the current task; SIGINT or SIGTERM cancels it and raises :class:`Interrupted`.

    A second signal while the first one's cancellation unwinds is ignored: the in-flight writes
    finish either way.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}

    def on_signal(signum: int) -> None:
        if not received:
            received.append(signum)
            task.cancel()

    installed = []
    for signum in SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
            loop.add_signal_handler(signum, on_signal, signum)
            installed.append(signum)
    try:
        result = await main()
    except asyncio.CancelledError:
        if not received:
            raise
        task.uncancel()
        raise Interrupted(received[0]) from None
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(signum, previous[signum])  # remove_signal_handler leaves the default
    if received:  # the body swallowed the cancellation
        raise Interrupted(received[0])
    return result
