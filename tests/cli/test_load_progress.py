"""The load progress display: nothing for a short load, a bar on a terminal for a long one."""

from __future__ import annotations

import io

from rich.console import Console

from cvo.cli.load_progress import LoadProgress, for_terminal
from cvo.payload.loader import load_release
from tests.support.helpers import ReleaseFactory, obj


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100), out


def test_short_load_shows_nothing(make_release: ReleaseFactory) -> None:
    console, out = terminal()
    progress = LoadProgress(console, clock=FakeClock())
    load_release(make_release({"a.yaml": obj("ConfigMap", "a", "ns")}), use_cache=False, on_progress=progress)
    progress.close()
    assert not progress.shown and out.getvalue() == ""


def test_long_load_shows_the_stage_and_counts(make_release: ReleaseFactory) -> None:
    console, out = terminal()
    clock = FakeClock()
    progress = LoadProgress(console, clock=clock)
    calls: list[tuple[str, int, int]] = []

    def record(stage: str, done: int, total: int) -> None:
        calls.append((stage, done, total))
        clock.now += 0.2  # every file takes a fifth of a second
        progress(stage, done, total)

    files = {f"{i:02d}.yaml": obj("ConfigMap", f"c{i}", "ns") for i in range(6)}
    load_release(make_release(files), use_cache=False, on_progress=record, jobs=1)
    assert progress.shown
    progress.close()
    assert calls[0] == ("reading release-manifests/", 1, 8)  # with release-metadata and image-references
    assert calls[-1] == ("parsing", 6, 6)
    assert "parsing" in out.getvalue() and "6/6" in out.getvalue()


def test_no_display_off_a_terminal() -> None:
    assert for_terminal("text") is None  # pytest's stderr is not a terminal
    assert for_terminal("json") is None
