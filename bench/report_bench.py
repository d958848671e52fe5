"""``make bench``'s report section: the corpus install and upgrade as report pages, measured in chromium.

The page's size, the time ``cvo report`` takes to write it, and the time chromium takes to parse,
style and lay it out (``performance.now()`` after a forced layout, in a copy of the page with a probe
script: tests/support/headless.py), median of several loads.  Goal (issue 15): the corpus install's page under
2 MB and rendered in under 2 s.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "ocp-5.0-nightly"
sys.path.insert(0, str(REPO))

from bench.scale import derived_release  # noqa: E402
from tests.support import headless  # noqa: E402

CORPUS_VERSION = "5.0.0-0.nightly-2026-08-22-120000"
NEXT_VERSION = "5.0.1-0.nightly-2026-09-05-120000"
MAX_BYTES = 2 * 1024 * 1024
MAX_RENDER_MS = 2000.0


def _cvo(*args: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cvo", *args], env=env, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark report step failed: cvo {' '.join(args)}\n{proc.stderr.decode()[-2000:]}")
    return time.perf_counter() - start


def report_section(repeats: int) -> list[str]:
    tmp = Path(tempfile.mkdtemp(prefix="cvo-bench-report-"))
    loads = max(3, repeats)
    try:
        env = dict(os.environ, CVO_CACHE_DIR=str(tmp / "cache"))
        state = str(tmp / "cluster.db")
        nxt = derived_release(CORPUS, CORPUS_VERSION, NEXT_VERSION, tmp / "next")
        _cvo("install", str(CORPUS), "--state", state, "--events", str(tmp / "install.jsonl"), "-o", "json", env=env)
        _cvo("upgrade", "--to", str(nxt), "--state", state, "--events", str(tmp / "upgrade.jsonl"), "-o", "json",
             env=env)
        blank = tmp / "blank.html"
        blank.write_text("<!DOCTYPE html><html><body></body></html>")
        baseline = statistics.median(headless.dump_dom(blank).seconds for _ in range(loads))
        rows = []
        for step in ("install", "upgrade"):
            events, page = tmp / f"{step}.jsonl", tmp / f"{step}.html"
            write = statistics.median(_cvo("report", str(events), "--output", str(page), env=env)
                                      for _ in range(max(3, repeats // 2)))
            render = statistics.median(headless.render_ms(page, tmp) for _ in range(loads))
            wall = statistics.median(headless.dump_dom(page).seconds for _ in range(loads))
            console = headless.dump_dom(page).console
            rows.append((step, events.stat().st_size, sum(1 for _ in events.open("rb")), page.stat().st_size, write,
                         render, wall, len(console)))  # wall: start-up included
        # the same two sweeps from what they recorded on the cluster (no events): cvo report --state
        page = tmp / "records.html"
        write = statistics.median(_cvo("report", "--state", state, "--output", str(page), env=env)
                                  for _ in range(max(3, repeats // 2)))
        render = statistics.median(headless.render_ms(page, tmp) for _ in range(loads))
        wall = statistics.median(headless.dump_dom(page).seconds for _ in range(loads))
        rows.append(("records", 0, 0, page.stat().st_size, write, render, wall, len(headless.dump_dom(page).console)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    install = rows[0]
    verdict = "met" if install[3] < MAX_BYTES and install[5] < MAX_RENDER_MS else "not met"
    lines = [
        "## The sweep report (`cvo report`) of the corpus, in chromium",
        "",
        f"`cvo install` of the corpus and `cvo upgrade` to a derived next version with `--events`, then "
        f"`cvo report` of each; *records* is `cvo report --state` of the same cluster afterwards: both sweeps from "
        f"what they recorded on it (ClusterVersion history, sweep records, ClusterOperators), no events file. "
        f"*render* is chromium's time from navigation start to the page parsed, styled and "
        f"laid out (median of {loads} loads of a copy with a probe script); *load* is the whole headless "
        f"`chromium --dump-dom` process, start-up included (a blank page: {baseline:.2f} s; the start-up varies "
        "by more than the page costs). *write* is the `cvo report` process.",
        "",
        "| sweep | events | events file KB | page KB | write s | render ms | load s | console messages |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for step, ev_bytes, ev_lines, page_bytes, write, render, load, console in rows:
        events_cells = f"{ev_lines:,} | {ev_bytes / 1024:.0f}" if ev_lines else "— | —"
        lines.append(f"| {step} | {events_cells} | {page_bytes / 1024:.0f} | {write:.2f} | "
                     f"{render:.0f} | {load:.2f} | {console} |")
    lines += ["", f"Goal: the corpus install's page under 2 MB and rendered in under 2 s: **{verdict}** "
                  f"({install[3] / 1024:.0f} KB, {install[5]:.0f} ms).", ""]
    return lines
