"""The sync worker's two back-offs: a task's retries, and the wait after a failed attempt."""

from __future__ import annotations

import random
from dataclasses import dataclass

from cvo.payload.graph import Mode


@dataclass(frozen=True)
class Backoff:
    """``wait.Backoff`` as the vendored apimachinery steps it (vendor/k8s.io/apimachinery/pkg/util/wait/backoff.go
    ``Backoff.Step``: once the next delay would pass ``Cap``, no steps are left)."""

    duration: float
    factor: float
    steps: int
    cap: float

    def schedule(self) -> tuple[int, list[float]]:
        """How many calls ``wait.ExponentialBackoff`` makes, and the sleeps after each failed one."""
        calls, sleeps = 0, []
        duration, steps = self.duration, self.steps
        while steps > 0:
            calls += 1
            if steps == 1:
                break
            steps -= 1
            sleeps.append(duration)
            duration *= self.factor
            if self.cap > 0 and duration > self.cap:
                duration = self.cap
                steps = 0
        return calls, sleeps


# A task's retries of an API error (pkg/cvo/sync_worker.go `SyncWorker.apply`, the task's Backoff).
INSTALL_BACKOFF = Backoff(1.0, 2.0, 4, 15.0)  # 4 calls, waits 1, 2, 4 s
UPDATE_BACKOFF = Backoff(10.0, 1.3, 3, 15.0)  # 2 calls, waits 10 s then a trailing 13 s


def task_backoff(mode: Mode) -> Backoff:
    return INSTALL_BACKOFF if mode is Mode.INSTALL else UPDATE_BACKOFF


def attempt_backoff(interval: float, consecutive: int, rng: random.Random) -> float:
    """The wait after ``consecutive`` failed attempts: interval/8, /4, /2, then the interval, with 20 % jitter
    (pkg/cvo/sync_worker.go `calculateNextFrom`, `wait.Jitter(…, 0.2)`)."""
    base = interval / 16 * 2**consecutive if consecutive <= 3 else interval
    return base * (1 + 0.2 * rng.random())
