"""Progress of a long release load on a terminal: files read, then files parsed.

Shown on stderr only when stderr is a terminal and only once the load has taken longer than
:data:`DELAY` (a warm load of the corpus takes a quarter of a second and shows nothing); it disappears
when the load ends.  rich is imported only when the display is actually shown.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

DELAY = 0.5  # seconds before a load counts as long


class LoadProgress:
    """An ``on_progress(stage, done, total)`` callback for :func:`cvo.payload.loader.load_release`."""

    def __init__(self, console: Any = None, clock: Callable[[], float] = time.monotonic, delay: float = DELAY) -> None:
        self._console = console
        self._clock = clock
        self._started = clock()
        self._delay = delay
        self._progress: Any = None
        self._task: Any = None
        self._stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self._progress is None:
            if self._clock() - self._started < self._delay:
                return
            self._start()
        if stage != self._stage:
            self._stage = stage
            self._progress.reset(self._task, total=total, description=stage)
        self._progress.update(self._task, completed=done, total=total)

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = self._console or Console(stderr=True)
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("files"), TimeElapsedColumn(), console=console, transient=True)
        self._progress.start()
        self._task = self._progress.add_task("loading", total=None)

    @property
    def shown(self) -> bool:
        return self._progress is not None

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def for_terminal(log_format: str = "text") -> LoadProgress | None:
    """A progress display if stderr is a terminal (and logs are not JSON), else ``None``."""
    return LoadProgress() if log_format != "json" and sys.stderr.isatty() else None
