"""Run cvo on a real pseudo-terminal (a child process whose stdout and stderr are the pty's slave side) and
collect what it wrote, as a person at that terminal would see it."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PtyResult:
    code: int
    output: str  # stdout and stderr as the terminal received them (\r\n line ends)


def run_on_pty(args: Sequence[str], *, columns: int = 0, rows: int = 0, env: Mapping[str, str] | None = None,
               cwd: str | None = None, timeout: float = 120.0) -> PtyResult:
    """``python -m cvo ARGS`` on a new pty sized ``columns`` × ``rows`` (0 × 0: a pty nobody sized)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    environment.update(env or {})
    proc = subprocess.Popen([sys.executable, "-m", "cvo", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=environment, cwd=cwd, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                proc.kill()
                raise TimeoutError(f"cvo {' '.join(args)} wrote nothing for {timeout}s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the slave side
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(timeout)
    finally:
        os.close(master)
    return PtyResult(code, b"".join(chunks).decode("utf-8", "replace"))


class PtySession:
    """``python -m cvo ARGS`` on a pty, read as it goes: :meth:`read_until` what a test waits for."""

    def __init__(self, args: Sequence[str], *, columns: int = 80, rows: int = 24,
                 env: Mapping[str, str] | None = None) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        environment.update(env or {})
        self.proc = subprocess.Popen([sys.executable, "-m", "cvo", *args], stdin=slave, stdout=slave, stderr=slave,
                                     env=environment, close_fds=True, start_new_session=True)
        os.close(slave)
        self.output = b""

    def read_until(self, wanted: bytes, timeout: float = 120.0, count: int = 1) -> bytes:
        """Everything read so far once ``wanted`` occurs ``count`` times in it (selects: no sleeps)."""
        import time

        deadline = time.monotonic() + timeout
        while self.output.count(wanted) < count:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.master], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"{wanted!r} ×{count} not seen within {timeout}s: {self.output[-2000:]!r}")
            try:
                data = os.read(self.master, 65536)
            except OSError:
                data = b""
            if not data:
                raise EOFError(f"the process ended (exit {self.proc.wait()}) before {wanted!r}: {self.output[-2000:]!r}")
            self.output += data
        return self.output

    def finish(self, timeout: float = 60.0) -> int:
        """Read to the end and return the exit code."""
        while True:
            ready, _, _ = select.select([self.master], [], [], timeout)
            if not ready:
                break
            try:
                data = os.read(self.master, 65536)
            except OSError:
                break
            if not data:
                break
            self.output += data
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
