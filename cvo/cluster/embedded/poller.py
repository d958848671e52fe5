"""Noticing, in real time, that another process committed to the embedded cluster's store.

A process that only waits (a blocked upgrade waiting for an admin's override, say) makes no
requests, so it would never look at the store.  :class:`StorePoller` is a daemon thread with its
own read-only connection that checks ``PRAGMA data_version`` every :data:`POLL_INTERVAL` seconds
of real time (a few microseconds each) and, when another connection has committed, asks the event
loop to take the changes in; the loop's watches then deliver them as events.  The thread never
reads objects and never touches the loop's connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import weakref
from collections.abc import Callable
from pathlib import Path

POLL_INTERVAL = 0.1  # seconds of real time: another process's write reaches a watch within this


class StorePoller:
    def __init__(self, path: Path, loop: asyncio.AbstractEventLoop, on_change: Callable[[], None],
                 interval: float = POLL_INTERVAL) -> None:
        self.path = path
        self.loop = loop
        # Weakly: a cluster dropped without close() must not be kept alive by its own poller.
        self._on_change = weakref.WeakMethod(on_change) if hasattr(on_change, "__self__") else (lambda: on_change)
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"cvo-store-poller {path.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop and wait for the thread: its connection must be closed before the store's last one is,
        or SQLite would leave the write-ahead log beside the file instead of merging it."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.Error:
            return  # the loop still takes changes in before every request
        try:
            last = conn.execute("PRAGMA data_version").fetchone()[0]
            # A commit between the loop's last look and this baseline would go unnoticed: look once now.
            changed = True
            while True:
                if changed:
                    callback = self._on_change()
                    if callback is None:
                        return  # the cluster is gone
                    with contextlib.suppress(RuntimeError):  # the loop has closed
                        self.loop.call_soon_threadsafe(callback)
                    del callback
                if self._stop.wait(self.interval):
                    return
                version = conn.execute("PRAGMA data_version").fetchone()[0]
                changed, last = version != last, version
        except sqlite3.Error:
            return
        finally:
            conn.close()
