"""Issue 14, the CLI a kubectl/oc user expects: global flags before or after the command, errors in the
log format, --no-color, one-line usage errors.  Through real processes, and argparse properties in process."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.cli.main import build_parser, main
from tests.support.helpers import PAYLOADS, REPO

OLD = str(PAYLOADS / "demo-4.16.0")


def cvo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "cvo", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=full_env)


# --- global flags anywhere --------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["before", "after"])
def test_global_flags_work_before_or_after_the_command(tmp_path: Path, where: str) -> None:
    state = tmp_path / "s.db"
    flags = ["-v", "--log-format", "json", "--state", str(state), "--no-color"]
    command = ["install", OLD, "-o", "json"]
    done = cvo(*(flags + command if where == "before" else command + flags))
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["completed"] is True
    assert state.is_file()  # --state reached the backend
    lines = [orjson.loads(line) for line in done.stderr.splitlines()]  # every log line is JSON
    assert any(doc.get("event") == "sweep.started" for doc in lines)  # -v: the events
    status = cvo("status", "-o", "json", "--state", str(state))
    assert orjson.loads(status.stdout)["clusterVersion"]["status"]["desired"]["version"] == "4.16.0"


def test_the_flag_after_the_command_wins() -> None:
    args = build_parser("status").parse_args(["--log-format", "json", "status", "--log-format", "text"])
    assert args.log_format == "text"
    args = build_parser("status").parse_args(["--log-format", "json", "status"])
    assert args.log_format == "json"


GLOBALS = [["-v"], ["--log-format", "json"], ["--no-color"], ["--state", "/tmp/x.db"], ["--context", "kind-kind"],
           ["--kubeconfig", "/tmp/kc"]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(range(len(GLOBALS))), unique=True), st.data())
def test_any_global_flag_parses_the_same_on_either_side(chosen: list[int], data: st.DataObject) -> None:
    command = data.draw(st.sampled_from([["status"], ["plan", OLD], ["lint", OLD], ["install", OLD],
                                         ["upgrade", "--to", OLD], ["override", "etcd", "Upgradeable=True"],
                                         ["upgrade-status"], ["reconcile"]]))
    before: list[str] = []
    after: list[str] = []
    for i in chosen:
        (before if data.draw(st.booleans()) else after).extend(GLOBALS[i])
    args = build_parser(command[0]).parse_args([*before, *command, *after])
    reference = build_parser(command[0]).parse_args([*command, *[f for i in chosen for f in GLOBALS[i]]])
    for name in ("verbose", "log_format", "no_color", "state", "context", "kubeconfig"):
        assert getattr(args, name) == getattr(reference, name), name


# --- errors -----------------------------------------------------------------------------------------


def test_usage_errors_are_one_line_naming_the_help() -> None:
    done = cvo("install", OLD, "--bogus")
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: cvo install: unrecognized arguments: --bogus "
                                        "(see 'cvo install --help')"]
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize("argv", [["--log-format", "json", "install", OLD, "--bogus"],
                                  ["status", "--state", "{missing}", "--log-format=json"],
                                  ["plan", "/nonexistent", "--log-format", "json"]])
def test_with_log_format_json_errors_are_json(tmp_path: Path, argv: list[str]) -> None:
    argv = [a.replace("{missing}", str(tmp_path / "missing.db")) for a in argv]
    done = cvo(*argv)
    assert done.returncode in (1, 2)
    (line,) = done.stderr.splitlines()
    doc = orjson.loads(line)
    assert doc["level"] == "error" and doc["message"]
    assert not (tmp_path / "missing.db").exists()


def test_status_on_an_empty_machine_exits_1_without_creating_a_state(tmp_path: Path) -> None:
    done = cvo("status", env={"XDG_STATE_HOME": str(tmp_path), "CVO_STATE": ""})
    assert done.returncode == 1
    assert done.stderr.startswith("error: no cluster has been installed yet")
    assert len(done.stderr.splitlines()) == 1
    assert list(tmp_path.rglob("*")) == []


def test_version_flag_and_the_release_version_flag_do_not_clash(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("cvo ")
    args = build_parser("plan").parse_args(["plan", OLD, "--release-version", "4.16.0"])
    assert args.version == "4.16.0"


# --- colour -----------------------------------------------------------------------------------------


def test_no_color_and_NO_COLOR_turn_colours_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from cvo import log

    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Tty())
    monkeypatch.delenv("NO_COLOR", raising=False)
    try:
        log.configure("text", 0, color=True)
        assert log.use_color()
        monkeypatch.setenv("NO_COLOR", "1")
        assert not log.use_color()
        monkeypatch.delenv("NO_COLOR")
        log.configure("text", 0, color=False)
        assert not log.use_color()
    finally:
        log.configure("text", 0, color=True)


def test_the_command_list_shows_the_views_as_they_are_typed(capsys: pytest.CaptureFixture[str]) -> None:
    from cvo.cli.main import main

    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    assert "\n    upgrade status      show the progress" in listed and "upgrade-status" not in listed


@pytest.mark.parametrize("command", [["status"], ["override", "etcd"], ["version"], ["upgrade", "status"],
                                     ["bootstrap"]])
def test_speed_is_offered_only_where_the_clusters_clock_runs(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from cvo.cli.main import main

    with pytest.raises(SystemExit):
        main([*command, "--help"])
    assert "--speed" not in capsys.readouterr().out
    for runs in (["install", "DIR"], ["run"], ["sim-operators"]):
        with pytest.raises(SystemExit):
            main([*runs, "--help"])
        assert "--speed X" in capsys.readouterr().out


def test_every_positional_argument_is_described(capsys: pytest.CaptureFixture[str]) -> None:
    from cvo.cli.main import COMMANDS, build_parser

    for command in COMMANDS:
        parser = build_parser(command)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for action in sub.choices[command]._actions:
            if not action.option_strings and not isinstance(action, argparse._SubParsersAction):
                assert action.help, f"cvo {command}: {action.metavar or action.dest} has no help"
