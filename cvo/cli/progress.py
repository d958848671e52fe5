"""What a person sees while a sweep runs, and the summary at the end.

On a terminal: a live rich display (done/total, the nodes running, what is being waited on and for
how long, on the sweep's clock).  Otherwise, or with ``--log-format json``: one log line per event
(JSON lines with ``--log-format json``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from cvo.log import get_logger
from cvo.runner.events import Event, Progress

log = get_logger("cvo.sweep")

# Events worth a line of their own in text logs (the rest are debug detail).
_INFO = {"sweep.started", "attempt.started", "attempt.failed", "attempt.woken", "node.failed", "node.error", "task.failed",
         "task.waiting", "operator.ready", "operator.degraded", "condition.changed", "sweep.completed",
         "sweep.timeout", "precondition.blocked", "precondition.passed", "node.blocked",
         "controller.started", "controller.idle", "controller.sweep", "controller.retarget", "controller.next",
         "controller.error", "controller.retrieve_failed"}


def format_duration(delta: timedelta | float) -> str:
    seconds = int(delta.total_seconds() if isinstance(delta, timedelta) else delta)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class LogReporter:
    """Every event as a structured log line (stderr)."""

    def emit(self, event: Event) -> None:
        fields: dict[str, Any] = {"sim_time": event.time.isoformat(), **event.fields}
        if event.name in _INFO:
            log.info(event.name, **fields)
        else:
            log.debug(event.name, **fields)


class LiveDisplay:
    """A rich Live panel redrawn on every event; rich is imported only when a terminal is attached."""

    def __init__(self, progress: Callable[[], Progress], clock_now: Any, title: str,
                 forecast: Callable[[], Any] | None = None) -> None:
        from rich.console import Console
        from rich.live import Live

        self.progress = progress
        self.forecast = forecast  # cvo.runner.durations.LiveForecast: the update's end from its records
        self.now = clock_now
        self.title = title
        self.console = Console(stderr=True)
        self.live = Live(console=self.console, refresh_per_second=8, transient=False)
        self.last_events: list[str] = []

    def __enter__(self) -> LiveDisplay:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.update(self._render())
        self.live.__exit__(None, None, None)

    def emit(self, event: Event) -> None:
        if event.name in ("task.waiting", "operator.ready", "node.failed", "attempt.failed", "sweep.completed",
                          "sweep.timeout", "operator.degraded", "precondition.blocked"):
            detail = event.fields.get("operator") or event.fields.get("node") or ""
            message = event.fields.get("message") or event.fields.get("reason") or ""
            self.last_events = ([*self.last_events, f"{event.time:%H:%M:%S} {event.name} {detail} {message}".strip()])[-5:]
        self.live.update(self._render())

    def _render(self) -> Any:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        p = self.progress()
        now: datetime = self.now()
        header = Text(f"{self.title}  attempt {p.attempt}  {p.done}/{p.total} tasks", style="bold")
        bar = ProgressBar(total=max(p.total, 1), completed=p.done, width=60)
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        table.add_column("waiting on")
        table.add_column("for", justify="right")
        table.add_column("because")
        for name, wait in sorted(p.waiting.items()):
            table.add_row(name, format_duration(now - wait.since), wait.error.message)
        running = Text("running: " + (", ".join(f"node {n}: {t}" for n, t in sorted(p.running.items())[:4]) or "-"))
        parts: list[Any] = [header, bar, running]
        if self.forecast is not None and (outlook := self.forecast()) is not None:
            from cvo.status.godur import to_ns

            parts.append(Text(f"forecast: {outlook.summary(to_ns(now))}"))
        if p.waiting:
            parts.append(table)
        parts += [Text(line, style="dim") for line in self.last_events]
        return Group(*parts)


def wants_live_display(log_format: str) -> bool:
    return log_format != "json" and sys.stderr.isatty()
