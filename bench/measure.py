"""What every benchmark section measures a process with: wall time and peak RSS (GNU time)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Run:
    seconds: float
    max_rss_kb: int


TIME = Path("/usr/bin/time")


def run_process(argv: list[str], env: dict[str, str]) -> Run:
    """One whole process: wall time, and peak RSS in KB.

    The peak comes from GNU time when there is one: a child started straight from this process
    reports at least this process's own RSS at the fork (Linux carries the high-water mark over the
    exec), and this process holds the corpus it parsed for the parser table."""
    with tempfile.TemporaryFile() as err_file, tempfile.NamedTemporaryFile("r") as rss_file:
        wrapped = [str(TIME), "-f", "%M", "-o", rss_file.name, *argv] if TIME.exists() else argv
        start = time.perf_counter()
        proc = subprocess.Popen(wrapped, stdout=subprocess.DEVNULL, stderr=err_file, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err_file.seek(0)
            raise SystemExit(f"benchmark command failed: {' '.join(argv)}\n{err_file.read().decode()[-2000:]}")
        measured = rss_file.read().strip().splitlines()
    return Run(elapsed, int(measured[-1]) if measured and measured[-1].isdigit() else usage.ru_maxrss)


def cvo(*args: str) -> list[str]:
    return [sys.executable, "-m", "cvo", *args]
