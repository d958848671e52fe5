"""Debian's chromium in headless mode: load a page from disk, dump its DOM, take a screenshot, and
collect what the page wrote to its console (chromium logs each console message, and every uncaught
error, as an ``INFO:CONSOLE`` line on stderr with ``--enable-logging=stderr``).

Used by tests/report/test_report_browser.py and bench/report_bench.py.  When chromium is missing it is
installed by hack/install-chromium.sh (apt-get); when that fails too, :class:`NoBrowser` says why.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "hack" / "install-chromium.sh"
CONSOLE = re.compile(r":CONSOLE(?:\(\d+\))?:?\d*\] (.*)$|:CONSOLE:\d+\] (.*)$")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-extensions", "--disable-background-networking", "--enable-logging=stderr", "--v=0"]
RENDER_PROBE = ('<script>document.body.offsetHeight;'
                'document.documentElement.setAttribute("data-render-ms",String(performance.now()))</script>')


class NoBrowser(Exception):
    """chromium is not there and could not be installed."""


def chromium() -> str:
    """The chromium binary, installed first when missing."""
    found = shutil.which("chromium")
    if found:
        return found
    proc = subprocess.run(["sh", str(INSTALL)], capture_output=True, text=True, timeout=900)
    found = shutil.which("chromium")
    if not found:
        raise NoBrowser(f"chromium is missing and {INSTALL.name} could not install it (exit {proc.returncode}): "
                        f"{(proc.stderr or proc.stdout).strip()[-600:]}")
    return found


@dataclass
class BrowserRun:
    stdout: str
    stderr: str
    console: list[str]  # what the page wrote to its console, uncaught errors included
    seconds: float  # wall time of the whole chromium process


def run(page: Path, *args: str, width: int = 1400, height: int = 1000, timeout: float = 120) -> BrowserRun:
    argv = [chromium(), *FLAGS, f"--window-size={width},{height}", *args, page.resolve().as_uri()]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=page.parent)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"chromium exited {proc.returncode}: {proc.stderr[-1500:]}")
    console = [m.group(1) or m.group(2) for m in map(CONSOLE.search, proc.stderr.splitlines()) if m]
    return BrowserRun(proc.stdout, proc.stderr, console, seconds)


def dump_dom(page: Path) -> BrowserRun:
    return run(page, "--dump-dom")


def screenshot(page: Path, png: Path, width: int = 1400, height: int = 1000) -> BrowserRun:
    result = run(page, f"--screenshot={png.resolve()}", width=width, height=height)
    if not png.is_file() or png.stat().st_size == 0:
        raise RuntimeError(f"chromium wrote no screenshot: {result.stderr[-1500:]}")
    return result


def png_size(png: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    head = png.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise ValueError(f"{png}: not a PNG")
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def render_ms(page: Path, work: Path) -> float:
    """Milliseconds from navigation start until the page is parsed, styled and laid out, in chromium.

    A copy of the page gets a script at its end that forces layout and records ``performance.now()``
    on the document (the page itself has no script); ``--dump-dom`` reads it back.
    """
    html = page.read_text(encoding="utf-8")
    probe = work / f"{page.stem}.probe.html"
    probe.write_text(html.replace("</body>", RENDER_PROBE + "</body>", 1), encoding="utf-8")
    dom = dump_dom(probe)
    match = re.search(r'data-render-ms="([0-9.]+)"', dom.stdout)
    if match is None:
        raise RuntimeError(f"the render probe did not run: {dom.stderr[-1500:]}")
    return float(match.group(1))
