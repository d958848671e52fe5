"""cvo's JSON-lines log: its events, and where one sweep's wall time went (start-up, attempts, back-off)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


def _wall(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def events(stderr: str) -> list[dict[str, Any]]:
    """cvo's JSON-lines events, each with ``t``: its wall time (the ``timestamp`` field) as epoch seconds."""
    out = []
    for line in stderr.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "timestamp" in event and "event" in event:
            event["t"] = _wall(event["timestamp"])
            out.append(event)
    return out


@dataclass
class Attempt:
    seconds: float
    errors: int  # failed nodes the attempt reported (distinct messages)
    task_failures: Counter[str] = field(default_factory=Counter)  # reason -> task.failed events in it
    backoff: float = 0.0  # from its failure to the next attempt


@dataclass
class Breakdown:
    """Where one cvo sweep's wall time went, from its events."""

    startup: float = 0.0  # process start -> sweep.started (imports, load, connect, ClusterVersion)
    attempts: list[Attempt] = field(default_factory=list)
    finish: float = 0.0  # last attempt's end -> process exit (final status, report)

    @property
    def applying(self) -> float:
        return sum(a.seconds for a in self.attempts)

    @property
    def backoff(self) -> float:
        return sum(a.backoff for a in self.attempts)

    @property
    def task_failures(self) -> int:
        return sum(sum(a.task_failures.values()) for a in self.attempts)


def breakdown(evs: list[dict[str, Any]], started: float, wall: float) -> Breakdown:
    b = Breakdown()
    sweep = next((e["t"] for e in evs if e["event"] == "sweep.started"), None)
    if sweep is None:
        return b
    b.startup = sweep - started
    begun: float | None = None
    last_end = sweep
    failures: Counter[str] = Counter()
    for e in evs:
        name = e["event"]
        if name == "attempt.started":
            if b.attempts and b.attempts[-1].backoff == 0.0 and begun is None:
                b.attempts[-1].backoff = e["t"] - last_end
            begun, failures = e["t"], Counter()
        elif name == "task.failed":
            failures[str(e.get("reason", ""))] += 1
        elif name in ("attempt.failed", "sweep.completed", "sweep.timeout") and begun is not None:
            message = str(e.get("message", "")) if name == "attempt.failed" else ""
            errors = sum(1 for line in message.splitlines() if line.startswith("* ")) or (1 if message else 0)
            b.attempts.append(Attempt(e["t"] - begun, errors, failures))
            last_end, begun = e["t"], None
    b.finish = started + wall - last_end
    return b
