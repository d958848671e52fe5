"""Work on every core: forked children and this process take items from one shared list.

Parsing the corpus's 16 MB of YAML is the cold ``cvo plan``; on a 2-core machine a pool of two parser
processes left this one idle while paying for the pool (its imports, threads, pickling every result
back).  Here ``jobs - 1`` children are forked and this process works too.  The items are ordered (the
biggest files first); each participant starts at its own share of the work and walks the list
circularly, claiming each item it finds unclaimed in a shared anonymous memory map (one byte per
item), so a participant that is faster (or less loaded) takes over the others' rest.  Two participants
may both take an item in the same instant: both compute it, the result is the same, one is kept.

A child returns its results through a pipe with :mod:`marshal` (results must be marshal-able), and
ends with ``os._exit``; if one fails or dies, this process computes what it left undone, so a bug
surfaces here as an ordinary exception.  Children ignore Ctrl-C (the command handles it and stops
them) and end on SIGTERM.  Forking with other threads alive is the caller's to avoid: a lock another
thread held stays locked in the child.
"""

from __future__ import annotations

import contextlib
import marshal
import mmap
import os
import signal
from collections.abc import Callable
from typing import Any

Progress = Callable[[int, int], None]  # (items claimed, items)


def _child_signals() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _drain(claimed: mmap.mmap, order: list[int], start: int, work: Callable[[int], Any],
           progress: Progress | None = None) -> list[tuple[int, Any]]:
    out = []
    n = len(order)
    for k in range(n):
        pos = (start + k) % n
        if claimed[pos]:
            continue
        claimed[pos] = 1
        item = order[pos]
        out.append((item, work(item)))
        if progress is not None:
            progress(n - claimed[:].count(0), n)
    if progress is not None:
        progress(n, n)  # every item is claimed once this participant has walked the whole list
    return out


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _starts(sizes: list[int], participants: int) -> list[int]:
    """Where each participant starts: at an equal share of the total size."""
    total = sum(sizes)
    starts, acc, p = [0], 0, 1
    for pos, size in enumerate(sizes):
        while p < participants and acc >= total * p / participants:
            starts.append(pos)
            p += 1
        acc += size
    while len(starts) < participants:
        starts.append(len(sizes) - 1 if sizes else 0)
    return starts


def run_shared(items: list[int], sizes: list[int], work: Callable[[int], Any], jobs: int,
               progress: Progress | None = None) -> dict[int, Any]:
    """``{item: work(item)}`` for every item, computed by this process and ``jobs - 1`` forked children.

    ``sizes`` (one per item) order and balance the work; ``work`` must be deterministic.
    """
    order = sorted(range(len(items)), key=lambda i: -sizes[i])
    ordered_items = [items[i] for i in order]
    ordered_sizes = [sizes[i] for i in order]
    participants = max(1, min(jobs, len(items)))
    starts = _starts(ordered_sizes, participants)
    claimed = mmap.mmap(-1, max(1, len(items)))  # anonymous and shared with the children
    children: list[tuple[int, int]] = []  # (pid, read end of its pipe)
    results: dict[int, Any] = {}
    try:
        for p in range(1, participants):
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: work, send, exit without running anything of the parent's
                code = 1
                try:
                    os.close(read_fd)
                    _child_signals()
                    data = marshal.dumps(_drain(claimed, ordered_items, starts[p], work))
                    view = memoryview(data)
                    while view:
                        view = view[os.write(write_fd, view):]
                    code = 0
                finally:
                    os._exit(code)
            os.close(write_fd)
            children.append((pid, read_fd))
        results.update(_drain(claimed, ordered_items, starts[0], work, progress))
        while children:
            pid, fd = children[0]
            data = _read_all(fd)
            os.close(fd)
            _, status = os.waitpid(pid, 0)
            children.pop(0)
            if os.waitstatus_to_exitcode(status) == 0:
                with contextlib.suppress(EOFError, ValueError, TypeError):
                    for item, value in marshal.loads(data):
                        results.setdefault(item, value)
    finally:
        for pid, fd in children:  # interrupted, or this process failed: stop the children
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        claimed.close()
    for item in items:  # what a child that failed left undone
        if item not in results:
            results[item] = work(item)
    return results
