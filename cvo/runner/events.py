"""What a sweep reports while it runs: its events (:mod:`cvo.runner.sweep_events`, the catalogue) go to
reporters (logs, the live display, the events file, scenario replay); :class:`Progress` is its live view."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar, runtime_checkable

from cvo.payload.errors import UpdateError
from cvo.runner.sweep_events import Event, SweepEvent

E = TypeVar("E", bound=SweepEvent)


@runtime_checkable
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
        self.sinks = [reporter.emit if isinstance(reporter, Reporter) else reporter for reporter in reporters]

    def emit(self, event: Event) -> None:
        for sink in self.sinks:
            sink(event)


class Recorder:
    """Keeps every event: the timeline of a scenario replay, and what tests assert on."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[E]) -> list[E]:
        """The events of one kind, in order."""
        return [e for e in self.events if isinstance(e, kind)]
