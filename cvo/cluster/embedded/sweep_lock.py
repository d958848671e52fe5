"""One sweep at a time on an embedded cluster: an advisory lock beside its store.

The real CVO is one leader-elected process; two cvo commands sweeping one embedded cluster at once
would each apply, wait and write history as if alone.  ``install``, ``upgrade`` and ``reconcile``
therefore hold an exclusive ``flock`` on ``STATE.lock`` while they run; a second one is refused at
once, naming the holder.  The kernel releases the lock when its process ends in any way (SIGKILL
included), so a killed command never leaves a stale lock.  Commands that do not sweep (status,
override, sim-operators) do not take it: they are the concurrent writers the store serialises.

A leading ``cvo run`` holds it too, for as long as it leads (its record's ``what`` begins with
:data:`CONTROLLER`): a foreground ``cvo upgrade`` that finds it so becomes the controller's client
(it sets ``spec.desiredUpdate`` and follows the status) instead of sweeping beside it, and a
controller that wins the election while a foreground sweep runs waits for that sweep to end.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from datetime import UTC, datetime
from pathlib import Path

import orjson

CONTROLLER = "cvo run"  # how a leading controller's record begins: "cvo run (controller NAME)"


class SweepLockHeld(Exception):
    """Another process holds the sweep lock; the message says who and what, :attr:`record` the holder's
    record (``pid``, ``what``, ``since``; ``None`` when unreadable)."""

    def __init__(self, message: str, record: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.record = record

    @property
    def controller(self) -> bool:
        """Whether the holder is a leading ``cvo run`` (then a command becomes its client)."""
        return self.record is not None and str(self.record.get("what", "")).startswith(CONTROLLER)


def lock_path(state: Path) -> Path:
    return state.with_name(state.name + ".lock")


class SweepLock:
    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    @classmethod
    def acquire(cls, state: Path, what: str) -> SweepLock:
        """Take the lock for ``what`` (``install 4.16.0``), or :class:`SweepLockHeld` at once."""
        path = lock_path(state)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            record = _record(fd)
            os.close(fd)
            raise SweepLockHeld(f"another cvo command is already sweeping the embedded cluster {state}: "
                                f"{_describe(record)}; wait for it to end or stop it (a stopped sweep resumes "
                                f"when run again)", record) from None
        except BaseException:
            os.close(fd)
            raise
        record = {"pid": os.getpid(), "what": what, "since": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, orjson.dumps(record), 0)
        return cls(fd, path)

    def release(self) -> None:
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
        os.close(self.fd)  # closing the descriptor releases the flock
        self.fd = -1


def _record(fd: int) -> dict[str, object] | None:
    try:
        record = orjson.loads(os.pread(fd, 4096, 0))
        return record if isinstance(record, dict) else None
    except (OSError, orjson.JSONDecodeError):
        return None


def _describe(record: dict[str, object] | None) -> str:
    try:
        assert record is not None
        return f"pid {int(str(record['pid']))} ({record['what']}, since {record['since']})"
    except (AssertionError, KeyError, TypeError, ValueError):
        return "a process that is starting or stopping"
