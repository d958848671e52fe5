"""The width of a terminal that reports none: ``COLUMNS``, then 80, as ``shutil.get_terminal_size`` falls back
(a pseudo-terminal nobody sized reports 0 columns: ``script``, some CI runners, ``docker exec -t``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.pty_run import run_on_pty

PAYLOAD = str(Path(__file__).resolve().parents[2] / "payloads" / "demo-4.16.0")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("width") / "state.db"
    result = run_on_pty(["install", PAYLOAD, "--state", str(state), "--speed", "600"], columns=0)
    assert result.code == 0, result.output
    assert "Traceback" not in result.output and "completed: " in result.output
    return state


def test_a_sweep_on_a_terminal_of_zero_columns_completes_and_prints_its_report(installed: Path) -> None:
    result = run_on_pty(["status", "--state", str(installed)], columns=0)
    assert result.code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("version ") and "4.16.0" in line for line in lines), result.output
    assert max(len(line) for line in lines) <= 80, result.output  # the fallback width


def test_columns_from_the_environment_win_over_a_terminal_that_reports_none(installed: Path) -> None:
    narrow = run_on_pty(["status", "--state", str(installed)], columns=0, env={"COLUMNS": "60"})
    wide = run_on_pty(["status", "--state", str(installed)], columns=0, env={"COLUMNS": "200"})
    assert narrow.code == 0 and wide.code == 0
    assert max(len(line) for line in narrow.output.splitlines()) <= 60, narrow.output
    assert max(len(line) for line in wide.output.splitlines()) > 60, wide.output


def test_a_sized_terminal_is_used_when_columns_is_not_set(installed: Path) -> None:
    result = run_on_pty(["status", "--state", str(installed)], columns=50, rows=24)
    assert result.code == 0
    assert max(len(line) for line in result.output.splitlines()) <= 50, result.output
