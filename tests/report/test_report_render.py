"""``cvo report``: the HTML page and the text, escaped against hostile events; the command's errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvo.cli.main import main
from cvo.report.critical import causes, critical_path
from cvo.report.events_io import event_line
from cvo.report.html import render_html
from cvo.report.model import build_timeline
from cvo.report.text import render_text
from cvo.runner.sweep_events import Event, decode
from cvo.scenario.model import load_scenario
from cvo.scenario.replay import replay
from tests.support.helpers import REPO

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span", "i", "b", "ol", "li",
                "a", "table", "tr", "th", "td", "div", "section", "details", "summary"}
ALLOWED_ATTRS = {"lang", "charset", "name", "content", "class", "style", "title", "id", "href", "colspan"}


class Page(HTMLParser):
    """Every tag and attribute of a page, and the text and titles as a browser would read them."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str]] = []
        self.text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(k, v or "") for k, v in attrs]

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def titles(self) -> list[str]:
        return [v for k, v in self.attrs if k == "title"]


def slow_upgrade_events() -> list[Event]:
    return replay(load_scenario(REPO / "scenarios" / "upgrade-slow-operator.yaml")).events


@pytest.fixture(scope="module")
def slow_events() -> list[Event]:
    return slow_upgrade_events()


def test_the_page_shows_the_critical_path_and_the_tables(slow_events: list[Event]) -> None:
    timeline = build_timeline(slow_events)
    page = Page(render_html(timeline, "slow upgrade", "slow.jsonl"))
    assert set(page.tags) <= ALLOWED_TAGS and {k for k, _ in page.attrs} <= ALLOWED_ATTRS
    text = " ".join(page.text)
    assert "The critical path: 51m00s" in text
    sweep = next(s for s in timeline.sweeps if s.mode == "update")
    top = causes(critical_path(sweep), sweep.duration)[0]
    assert f"{top.name} 31m22s 61.5%" in " ".join(text.split())
    for heading in ("Slowest operators", "Longest waits", "Retries and failures by reason", "Requests by verb"):
        assert heading in text
    # one bar per node and attempt that ran tasks, critical ones marked; every attempt and back-off a band
    bars = [v for k, v in page.attrs if k == "class" and v.startswith("bar ")]
    spans = [n for a in sweep.attempts for n in a.nodes if n.tasks or n.size]
    assert len(bars) == len(spans)
    assert sum("crit" in b for b in bars) == len([x for x in critical_path(sweep) if x.kind == "node"])
    classes = [v for k, v in page.attrs if k == "class"]
    assert sum(c.startswith("band attempt") for c in classes) == len(sweep.attempts)
    assert sum(c == "band backoff" for c in classes) == len(sweep.attempts) - 1
    assert any("clusteroperator dns: waited 6m00s" in t and "not ready" in t for t in page.titles())
    html = render_html(timeline, "t")
    assert "<script" not in html and "http:" not in html and "https:" not in html  # nothing to fetch


hostile = st.text(min_size=1, max_size=40) | st.sampled_from([
    '<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', "' onmouseover='x", "</style><b>x",
    "\x1b[31mred\x1b[0m", "&amp;&lt;", "<!--", "]]>"])


def hostile_stream(text: str) -> list[Event]:
    task = f'clusteroperator "{text}" (1 of 1)'
    fields: dict[str, Any] = {"task": task, "node": 0}
    return [
        decode(T0, "sweep.started", {"version": text, "mode": text}),
        decode(T0, "attempt.started", {"attempt": 0}),
        decode(T0, "node.started", {"node": 0, "tasks": 1, "runlevel": text, "component": text, "after": []}),
        decode(T0, "task.started", fields),
        decode(T0, "task.applied", {**fields, "action": text, "file": text}),
        decode(T0, "task.waiting", {**fields, "operator": text, "reason": text, "message": text}),
        decode(T0 + timedelta(seconds=5), "task.retry", {**fields, "error": text, "message": text}),
        decode(T0 + timedelta(seconds=9), "task.failed", {**fields, "reason": text, "message": text}),
        decode(T0 + timedelta(seconds=9), "node.failed", {"node": 0, "message": text}),
        decode(T0 + timedelta(seconds=9), "attempt.failed", {"attempt": 0, "reason": text, "message": text}),
        decode(T0 + timedelta(seconds=20), "sweep.timeout", {"message": text}),
        decode(T0 + timedelta(seconds=20), "cluster.requests", {"verbs": {text: 3}}),
    ]


@settings(max_examples=150, deadline=None)
@given(hostile)
def test_text_from_events_never_becomes_markup(text: str) -> None:
    html = render_html(build_timeline(hostile_stream(text)), text, text)
    page = Page(html)
    assert set(page.tags) <= ALLOWED_TAGS and {k for k, _ in page.attrs} <= ALLOWED_ATTRS
    assert "script" not in page.tags and "img" not in page.tags
    assert any(text in t for t in page.titles())  # it is there, as text
    visible = "".join(page.text)
    assert text in visible or text.strip() == "" or any(text in t for t in page.titles())


@settings(max_examples=100, deadline=None)
@given(hostile)
def test_text_output_has_no_control_characters(text: str) -> None:
    out = render_text(build_timeline(hostile_stream(text)), text)
    assert all(ch == "\n" or ch.isprintable() for ch in out)


def test_cli_text_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str], slow_events: list[Event]) -> None:
    events = tmp_path / "slow.jsonl"
    events.write_bytes(b"".join(event_line(e) for e in slow_events))
    capsys.readouterr()
    assert main(["report", str(events), "-o", "text"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cvo sweep report: update 4.16.3\n")
    assert "  the path's time went to:\n     61.5%  31m22s  clusteroperator dns\n" in out
    assert "\nrequests by verb:\n  get " in out
    page = tmp_path / "out" / "slow.html"
    page.parent.mkdir()
    assert main(["report", str(events), "--output-file", str(page), "--title", "<slow>"]) == 0
    assert capsys.readouterr().out == ""
    html = page.read_text()
    assert "<title>&lt;slow&gt;</title>" in html and html.endswith("</html>\n")


@pytest.mark.parametrize(("content", "message"), [
    (b'{"event": "a", "time": "2026-01-01T00:00:00"}\n{oops\n', "bad.jsonl:2: not a JSON object"),
    (b"\xff\xfe\x00garbage", "bad.jsonl: no sweep events"),
    (b'{"event": "a", "time": "2026-13-01T00:00:00"}\n', "bad.jsonl:1: the time is not an ISO-8601 time"),
])
def test_cli_bad_events_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes,
                                          message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    capsys.readouterr()
    assert main(["report", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path.parent}/{message}")


def test_cli_unwritable_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = tmp_path / "e.jsonl"
    events.write_bytes(event_line(decode(T0, "sweep.started", {})))
    capsys.readouterr()
    assert main(["report", str(events), "--output-file", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {tmp_path}: cannot write the report: Is a directory"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.sampled_from(["html", "text"]))
def test_cli_any_file_is_a_report_or_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes,
                                               fmt: str) -> None:
    path = tmp_path / "any.jsonl"
    path.write_bytes(content)
    capsys.readouterr()
    code = main(["report", str(path), "-o", fmt])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    if code == 2:
        assert len(captured.err.splitlines()) == 1 and captured.err.startswith(f"error: {path}")
    else:
        assert code == 0 and captured.out


def test_replay_writes_a_report_per_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenarios = REPO / "scenarios"
    out = tmp_path / "reports" / "nested"
    assert main(["replay", "-q", str(scenarios / "upgrade-slow-operator.yaml"), str(scenarios / "job-barrier.yaml"),
                 "--report", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["job-barrier.html", "upgrade-slow-operator.html"]
    slow = Page((out / "upgrade-slow-operator.html").read_text())
    text = " ".join(" ".join(slow.text).split())
    assert "scenario: upgrade slow operator" in text and "clusteroperator dns 31m22s 61.5%" in text
    barrier = Page((out / "job-barrier.html").read_text())
    assert "The critical path" in " ".join(barrier.text)


def test_replay_report_into_a_file_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    capsys.readouterr()
    assert main(["replay", "-q", str(REPO / "scenarios" / "job-barrier.yaml"), "--report", str(blocker)]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"error: {blocker}: cannot make the report directory: File exists"]
    assert captured.out == ""  # refused before anything was replayed


def test_output_is_the_format_and_a_terminal_gets_text_not_a_page(tmp_path: Path, slow_events: list[Event]) -> None:
    """-o/--output is the format, as in every command: 'cvo report F --output text' once wrote an HTML file
    named 'text'. On a terminal the default is text, and an HTML page is refused with a hint."""
    from tests.support.pty_run import run_on_pty

    events = tmp_path / "slow.jsonl"
    events.write_bytes(b"".join(event_line(e) for e in slow_events))
    shown = run_on_pty(["report", str(events)], columns=100, rows=40, cwd=str(tmp_path))
    assert shown.code == 0 and shown.output.startswith("cvo sweep report: update 4.16.3")
    assert "<html" not in shown.output.lower()
    as_text = run_on_pty(["report", str(events), "--output", "text"], columns=100, rows=40, cwd=str(tmp_path))
    assert as_text.code == 0 and as_text.output == shown.output
    assert not (tmp_path / "text").exists()
    page = run_on_pty(["report", str(events), "-o", "html"], columns=100, rows=40, cwd=str(tmp_path))
    assert page.code == 2 and page.output.strip() == (
        "error: an HTML page is no use on a terminal: write it to a file (--output-file report.html) and open it "
        "in a browser, or show text (-o text)")
    old = run_on_pty(["report", str(events), "--output", "page.html"], columns=200, rows=40, cwd=str(tmp_path))
    assert old.code == 2 and "write to a file with --output-file page.html" in old.output
    assert "<html" not in old.output.lower() and not (tmp_path / "page.html").exists()


def test_piped_the_default_is_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       slow_events: list[Event]) -> None:
    events = tmp_path / "slow.jsonl"
    events.write_bytes(b"".join(event_line(e) for e in slow_events))
    capsys.readouterr()
    assert main(["report", str(events)]) == 0
    assert capsys.readouterr().out.lstrip().lower().startswith("<!doctype html")
