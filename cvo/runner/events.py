"""What a sweep reports while it runs: events for logs, the progress display and scenario replay."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from cvo.payload.errors import UpdateError


@dataclass(frozen=True)
class Event:
    time: datetime  # on the sweep's clock (simulated time on the embedded cluster)
    name: str  # e.g. "task.applied", "task.waiting", "node.failed", "sweep.completed"
    fields: dict[str, Any] = field(default_factory=dict)


class Reporter(Protocol):
    def emit(self, event: Event) -> None: ...


@dataclass
class Waiting:
    """A task blocked on a ClusterOperator (or another object): what it waits for and since when."""

    task: str
    name: str  # the ClusterOperator's name
    since: datetime
    error: UpdateError


@dataclass
class Progress:
    """A live view of the sweep, kept up to date by the worker, read by displays."""

    version: str = ""
    mode: str = ""
    attempt: int = 0
    done: int = 0
    total: int = 0
    running: dict[int, str] = field(default_factory=dict)  # node id -> current task
    waiting: dict[str, Waiting] = field(default_factory=dict)  # ClusterOperator name -> wait
    failed_nodes: int = 0
    message: str = ""
    last_progress: datetime | None = None  # when a report last got further (the CVO's LastProgress)


class Fanout:
    """Send each event to several reporters."""

    def __init__(self, *reporters: Reporter | Callable[[Event], None]) -> None:
        self.reporters = list(reporters)

    def emit(self, event: Event) -> None:
        for reporter in self.reporters:
            if callable(reporter) and not hasattr(reporter, "emit"):
                reporter(event)
            else:
                reporter.emit(event)  # type: ignore[union-attr]


class Recorder:
    """Keeps every event: the timeline of a scenario replay, and what tests assert on."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def named(self, name: str) -> list[Event]:
        return [e for e in self.events if e.name == name]
