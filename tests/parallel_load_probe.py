"""Loads a release serially and in forked parser processes, in a fresh interpreter, and prints both as JSON.

The loader forks parsers only while the process has a single thread (a fork copies one thread, and a lock
another thread held stays locked in the child).  A pytest session has other threads alive (the e2e control
plane's output readers), so the tests of the parallel parser run this probe in its own process.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
from pathlib import Path
from typing import Any

from cvo.payload import loader
from cvo.payload.loader import LoadError


def main(directory: str) -> None:
    started: list[str] = []
    real = multiprocessing.get_context

    def get_context(method: str | None = None) -> Any:
        started.append(str(method))
        return real(method)

    loader.PARALLEL_THRESHOLD = 0
    multiprocessing.get_context = get_context  # type: ignore[assignment]
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
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
