"""`cvo completion SHELL` and the completions the shell gets back, through real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CVO = [sys.executable, "-m", "cvo"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CVO, *args], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete "), ("zsh", "#compdef cvo"), ("fish", "complete ")])
def test_the_script_for_each_shell(shell: str, marker: str) -> None:
    done = run("completion", shell)
    assert done.returncode == 0, done.stderr
    assert marker in done.stdout and "cvo" in done.stdout and "_ARGCOMPLETE" in done.stdout


def test_an_unknown_shell_is_one_error_line() -> None:
    done = run("completion", "tcsh")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("error: ")


def complete(line: str, tmp_path: Path) -> list[str]:
    out = tmp_path / "candidates"
    script = "import sys; from cvo.cli.main import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)),
                               "_ARGCOMPLETE_STDOUT_FILENAME": str(out), "_ARGCOMPLETE_IFS": "\n"})
    assert done.returncode == 0, done.stderr
    return sorted(c.strip() for c in out.read_text().split("\n"))


def test_commands_and_flags_complete_from_the_parser_the_command_line_uses(tmp_path: Path) -> None:
    assert complete("cvo up", tmp_path) == ["upgrade", "upgrade-ack", "upgrade-status"]
    assert "--profile" in complete("cvo plan --prof", tmp_path)
    assert complete("cvo completion f", tmp_path) == ["fish"]


def test_output_formats_complete_with_their_choices(tmp_path: Path) -> None:
    assert complete("cvo status -o ", tmp_path) == ["json", "name", "text", "wide", "yaml"]
    assert complete("cvo plan DIR -o n", tmp_path) == ["name"]
    assert complete("cvo upgrade --to DIR --dry-run -o y", tmp_path) == ["yaml"]
    assert "--no-headers" in complete("cvo status --no-h", tmp_path)
