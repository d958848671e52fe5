"""Child processes of the bench: timed whole runs, and background ones whose output lines are time-stamped."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.kube.settings import PROCESS_TIMEOUT


def cvo_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "cvo", *args]


def _preexec() -> None:
    """Children die with the bench (the control plane's own helper: PR_SET_PDEATHSIG)."""
    from tests.e2e.controlplane import _die_with_parent

    _die_with_parent()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Stamped:
    """A background process whose output lines are stamped with the wall time the bench read them."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.lines: list[tuple[float, str, str]] = []  # (time.time(), "out" | "err", line)
        self._changed = threading.Condition()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, preexec_fn=_preexec)
        self._readers = [threading.Thread(target=self._read, args=(stream, name), daemon=True)
                         for stream, name in ((self.proc.stdout, "out"), (self.proc.stderr, "err"))]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: Any, name: str) -> None:
        for raw in iter(stream.readline, b""):
            stamp = time.time()
            with self._changed:
                self.lines.append((stamp, name, raw.decode("utf-8", "replace").rstrip("\n")))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float) -> bool:
        """Until a line matching ``pattern`` was printed (False on timeout, or if the process ended)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                if any(regex.search(line) for _, _, line in self.lines):
                    return True
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return False
                self._changed.wait(min(left, 0.5))

    def tail(self, n: int = 15) -> str:
        with self._changed:
            return "\n".join(line for _, _, line in self.lines[-n:])

    def stop(self) -> None:
        _stop(self.proc)
        for reader in self._readers:
            reader.join(timeout=5)


@dataclass
class Timed:
    wall: float | None  # None: killed at PROCESS_TIMEOUT
    code: int | None
    started: float  # time.time() at start
    stdout: str
    stderr: str
    cpu: float = 0.0  # user + system CPU seconds of the process (and children it waited for)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str], timeout: float = PROCESS_TIMEOUT) -> Timed:
    """Run ``argv`` as a whole process, output to files (a pipe could fill), and time it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.time()
        t0 = time.perf_counter()
        cpu0 = _children_cpu()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, preexec_fn=_preexec)
        try:
            code: int | None = proc.wait(timeout=timeout)
            wall: float | None = time.perf_counter() - t0
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code, wall = None, None
        out.seek(0)
        err.seek(0)
        return Timed(wall, code, started, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                     _children_cpu() - cpu0)


def process_cpu_ms(proc: Any) -> int:
    """CPU milliseconds (user + system) a running process has used, from ``/proc/PID/stat``."""
    if proc is None:
        return 0
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int((int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK"))
