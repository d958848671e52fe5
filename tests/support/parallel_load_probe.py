"""Loads a release serially and in forked parser processes, in a fresh interpreter, and prints both as JSON.

The loader forks parsers only while the process has a single thread (a fork copies one thread, and a lock
another thread held stays locked in the child).  A pytest session has other threads alive (the e2e control
plane's output readers), so the tests of the parallel parser run this probe in its own process.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

from cvo.payload import loader
from cvo.payload.loader import LoadError
from cvo.payload.parallel import run_shared


def shared_work() -> dict[str, Any]:
    """run_shared on its own: every item once, whatever the children do (one of them dies mid-way)."""
    parent = os.getpid()

    def square(i: int) -> int:
        return i * i

    def dies(i: int) -> int:
        if os.getpid() != parent and i % 7 == 3:
            os._exit(3)  # a child that crashes: the parent must do its items
        return i * i

    items = list(range(500))
    sizes = [(i * 37) % 101 for i in items]
    by_jobs = {jobs: run_shared(items, sizes, square, jobs) for jobs in (2, 3, 5)}
    died = run_shared(items, sizes, dies, 3)
    seen: list[tuple[int, int]] = []
    run_shared(items, sizes, square, 2, lambda done, total: seen.append((done, total)))
    return {
        "progress": [seen[-1] == (500, 500), all(a[0] <= b[0] for a, b in itertools.pairwise(seen))],
        "squares": [by_jobs[jobs][i] == i * i for jobs in (2, 3, 5) for i in items],
        "dies": all(died[i] == i * i for i in items) and len(died) == len(items),
        "empty": run_shared([], [], square, 2),
        "one": run_shared([4], [1], square, 4),
    }


def main(directory: str) -> None:
    started: list[str] = []
    real = os.fork

    def fork() -> int:
        started.append("fork")
        return real()

    loader.PARALLEL_THRESHOLD = 0
    os.fork = fork
    out: dict[str, Any] = {}
    for name, jobs in (("serial", 1), ("parallel", 2)):
        before = len(started)
        try:
            release = loader.load_release(Path(directory), use_cache=False, jobs=jobs)
        except LoadError as error:
            out[name] = {"errors": error.errors}
        else:
            out[name] = {"manifests": [[m.path, m.document, m.kind, m.raw.decode("utf-8", "replace")]
                                       for m in release.all_manifests],
                         "annotations": [m.annotations for m in release.manifests]}
        out[name]["pools"] = started[before:]
    out["shared"] = shared_work()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
