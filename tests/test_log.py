"""Logging: JSON lines stay whole when threads log at once; secrets never reach the output."""

from __future__ import annotations

import io
import json
import sys
import threading

import pytest

from cvo.log import configure, get_logger


class _SlowStream(io.StringIO):
    """Gives other threads a chance to run between the pieces of one write (as a pipe under load does)."""

    def write(self, text: str) -> int:
        n = 0
        for char in text:
            n += super().write(char)
            if char in "}\n":
                threading.Event().wait(0)  # yields the GIL
        return n


def test_json_lines_from_many_threads_never_interleave(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = _SlowStream()
    monkeypatch.setattr(sys, "stderr", stream)
    configure("json", 1)
    try:
        def work(worker: int) -> None:
            log = get_logger(f"t{worker}")
            for i in range(200):
                log.info("line", worker=worker, i=i)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        configure("text", 0)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 8 * 200
    seen = {(doc["worker"], doc["i"]) for doc in map(json.loads, lines)}
    assert len(seen) == 8 * 200


def test_secret_fields_are_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    configure("json", 1)
    try:
        get_logger("t").info("applied", token="abc123", data={"password": "hunter2"}, name="cm")
    finally:
        configure("text", 0)
    err = capsys.readouterr().err
    doc = json.loads(err.strip())
    assert doc["token"] == "<redacted>" and doc["data"] == "<redacted>" and doc["name"] == "cm"
    assert "abc123" not in err and "hunter2" not in err


def test_a_replaced_stderr_receives_later_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = io.StringIO(), io.StringIO()
    configure("json", 1)
    try:
        monkeypatch.setattr(sys, "stderr", first)
        get_logger("t").info("one")
        monkeypatch.setattr(sys, "stderr", second)
        get_logger("t").info("two")
    finally:
        configure("text", 0)
    assert '"one"' in first.getvalue() and '"two"' not in first.getvalue()
    assert '"two"' in second.getvalue()


def test_the_first_log_line_does_not_import_rich_and_rich_still_imports_later() -> None:
    # structlog imports rich (and pygments) for tracebacks cvo never renders: ~40 ms inside every sweep.
    import subprocess

    code = """
import sys
from cvo.log import configure, get_logger
configure("text", 1, color=False)
get_logger("t").info("first.line", n=1)
assert "structlog" in sys.modules and "rich" not in sys.modules, sorted(m for m in sys.modules if "rich" in m)
import rich.console  # the live display's import still works
try:
    raise ValueError("boom")
except ValueError:
    get_logger("t").error("failed", exc_info=True)  # rendered as a plain traceback
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "ok\n"
    assert "first.line" in out.stderr and "ValueError: boom" in out.stderr
