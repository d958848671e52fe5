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


@pytest.fixture(scope="module")
def corpus_installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support.helpers import CORPUS

    state = tmp_path_factory.mktemp("corpus") / "state.db"
    result = run_on_pty(["install", str(CORPUS), "--state", str(state), "--speed", "6000"], columns=80, rows=24)
    assert result.code == 0, result.output[-2000:]
    return state


def test_the_real_payloads_status_keeps_a_table_at_80_columns(corpus_installed: Path) -> None:
    """A nightly's 35-character version and a 40-character operator name: a VERSION equal to the cluster's is
    shown as '=' (said under the table) and the long condition headers are shortened, so each ClusterOperator
    stays one row instead of a 6-line record."""
    result = run_on_pty(["status", "--state", str(corpus_installed)], columns=80, rows=24)
    assert result.code == 0
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    header = next(line for line in lines if line.startswith("NAME ") and "DEGR" in line)
    assert header.split() == ["NAME", "VERSION", "AVAIL", "PROG", "DEGR", "SINCE"]
    rows = [line for line in lines if line.split()[:2] and line.split()[1:2] == ["="]]
    assert len(rows) > 30 and any(r.startswith("operator-lifecycle-manager-packageserver ") for r in rows)
    assert any(line.startswith("=: the cluster's version, 5.0.0-") for line in lines)
    assert not any(line.startswith("VERSION:") for line in lines)  # no expanded records


def test_piped_and_wide_output_keep_the_full_version(corpus_installed: Path) -> None:
    import contextlib
    import io

    from cvo.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["status", "--state", str(corpus_installed)]) == 0
    assert "=: the cluster's version" not in out.getvalue()
    assert any(line.split()[1:2] and line.split()[1].startswith("5.0.0-") for line in out.getvalue().splitlines()[3:])
