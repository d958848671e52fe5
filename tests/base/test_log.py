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


def test_the_first_log_line_hides_no_module_and_renders_tracebacks_plainly() -> None:
    # Nothing is hidden from the import system while structlog loads (a sys.modules entry set to None
    # would make another thread's "import rich" fail meanwhile), and a traceback is plain text, not rich's
    # panel: the renderer names structlog.dev.plain_traceback although structlog itself imports rich.
    import subprocess

    code = """
import sys

class Probe:  # sees sys.modules at the moment structlog is looked for
    seen = None
    def find_spec(self, name, path=None, target=None):
        if name == "structlog":
            Probe.seen = sorted(k for k, v in sys.modules.items() if v is None)
        return None

sys.meta_path.insert(0, Probe())
from cvo.log import configure, get_logger
configure("text", 1, color=False)
get_logger("t").info("first.line", n=1)
assert Probe.seen == [], Probe.seen
assert [k for k, v in sys.modules.items() if v is None] == []
import rich.console  # the live display's import
try:
    raise ValueError("boom")
except ValueError:
    get_logger("t").error("failed", exc_info=True)
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "ok\n"
    assert "first.line" in out.stderr
    assert "Traceback (most recent call last):" in out.stderr and "ValueError: boom" in out.stderr
    assert "╭" not in out.stderr and "│" not in out.stderr  # rich's traceback panel
