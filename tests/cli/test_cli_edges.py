"""Issue 14, the CLI's edges: -v adds up on both sides of the command, every write names its cluster, installing
or upgrading to the current release, bad kubeconfigs, a moved release directory, usage examples in every
--help.  Through real processes (and the parser in process where that is what is tested)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.cli.main import build_parser
from tests.support.helpers import PAYLOADS, REPO

OLD = str(PAYLOADS / "demo-4.16.0")
PATCH = str(PAYLOADS / "demo-4.16.3")
OPS = str(PAYLOADS / "demo-operators.yaml")


def cvo(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR", "CVO_STATE")}
    full_env.update(env or {})
    full_env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "cvo", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=full_env)


# --- -v adds up -------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3), st.integers(0, 3),
       st.sampled_from([["status"], ["install", OLD], ["upgrade", "--to", OLD], ["reconcile"], ["plan", OLD],
                        ["override", "etcd", "Upgradeable=True"], ["upgrade", "status"]]))
def test_v_adds_up_before_and_after_the_command(before: int, after: int, command: list[str]) -> None:
    from cvo.cli.main import _aliased

    argv = _aliased([*["-v"] * before, *command, *["-v"] * after])
    args = build_parser(argv[before] if before < len(argv) else None).parse_args(argv)
    assert args.verbose == before + after
    assert not [name for name in vars(args) if name.startswith("verbose_")]


def test_v_before_and_after_is_vv(tmp_path: Path) -> None:
    """-vv shows debug lines; -v on each side of the command does too, -v alone does not."""
    def debug_lines(*argv: str) -> int:
        done = cvo(*argv, "--state", "none", "--speed", "6000")
        assert done.returncode == 0, done.stderr
        return sum(1 for line in done.stderr.splitlines() if line.startswith("[debug"))

    assert debug_lines("install", OLD, "-vv") > 0
    assert debug_lines("-v", "install", OLD, "-v") > 0
    assert debug_lines("install", OLD, "-v") == 0


# --- a bad kubeconfig: one error: line ------------------------------------------------------------

KUBECONFIG_OK = """apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t0ken-s3cret}
contexts:
- name: lab
  context: {cluster: a, user: u}
current-context: lab
"""

BAD_KUBECONFIGS = {
    "unterminated quote": ('clusters:\n- name: a\n  cluster: {server: "https://x\n', "not valid YAML"),
    "bad flow mapping": ("clusters: [\n  foo: : bar\n", "not valid YAML"),
    "a tab": ("clusters:\n\t- name: a\n", "not valid YAML"),
    "not a mapping": ("- a\n- b\n", "is not a kubeconfig"),
    "contexts not a list": ("contexts: 5\n", "contexts is not a list"),
    "context not a mapping": ("current-context: c\ncontexts:\n- name: c\n  context: 5\n", "cannot be loaded"),
    "unknown cluster": ("current-context: c\ncontexts:\n- name: c\n  context: {cluster: zz, user: u}\n",
                        "Expected object with name zz"),
    "not UTF-8": (b"\xff\xfe\x00 bad", "not UTF-8"),
    "missing context": (KUBECONFIG_OK, "has no context 'nope' (it has: lab)"),
    "missing file": (None, "does not exist"),
}


@pytest.mark.parametrize("case", sorted(BAD_KUBECONFIGS))
def test_a_bad_kubeconfig_is_one_error_line(tmp_path: Path, case: str) -> None:
    content, expected = BAD_KUBECONFIGS[case]
    path = tmp_path / "kubeconfig"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    context = ["--context", "nope"] if case == "missing context" else []
    for argv in (["status"], ["install", OLD], ["override", "etcd", "Upgradeable=True"]):
        done = cvo(*argv, "--kubeconfig", str(path), *context)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"error: kubeconfig {path}") and expected in line, line
        assert "Traceback" not in done.stderr and "^" not in line


def test_an_unreachable_server_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG_OK)
    done = cvo("install", OLD, "--kubeconfig", str(path), "--timeout", "2s")
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "unreachable (connection refused)" in errors[0], done.stderr
    assert "t0ken-s3cret" not in done.stderr + done.stdout


# --- install or upgrade to the current release --------------------------------------------------------


def test_install_and_upgrade_to_the_current_release_say_the_same_and_exit_0(tmp_path: Path) -> None:
    state = str(tmp_path / "s.db")
    done = cvo("install", OLD, "--state", state, "--speed", "6000", "--operators", OPS)
    assert done.returncode == 0, done.stderr
    said = set()
    for argv in (["install", OLD], ["upgrade", "--to", OLD], ["upgrade", "--to", OLD, "--dry-run"],
                 ["install", OLD, "-o", "json"], ["upgrade", "--to", OLD, "-o", "yaml"]):
        done = cvo(*argv, "--state", state)
        assert done.returncode == 0, done.stderr
        lines = [line for line in done.stderr.splitlines() if not line.startswith("cluster: ")]
        assert lines == ["the cluster already runs 4.16.0: nothing to do ('cvo reconcile' re-applies it)"], lines
        said.add(lines[0])
        if "-o" in argv:  # a document on stdout all the same: a script's jq .completed still parses
            doc = yaml.safe_load(done.stdout)
            assert doc == {"ok": True, "completed": True, "swept": False, "message": lines[0],
                           "release": {"version": "4.16.0", "image": doc["release"]["image"]}}
        else:
            assert done.stdout == ""
    assert len(said) == 1
    done = cvo("upgrade", "--to", PATCH, "--no-wait", "-o", "json", "--state", state)  # no controller: only asked for
    assert done.returncode == 0, done.stderr
    doc = yaml.safe_load(done.stdout)
    assert (doc["ok"], doc["completed"], doc["swept"], doc["release"]["version"]) == (True, False, False, "4.16.3")
    assert doc["message"].startswith("spec.desiredUpdate: 4.16.3 (") and doc["message"] in done.stderr
    status = yaml.safe_load(cvo("status", "-o", "json", "--state", state).stdout)
    assert status["clusterVersion"]["spec"]["desiredUpdate"]["version"] == "4.16.3"
    done = cvo("install", PATCH, "--state", state)  # another release: that is an upgrade's job
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == ("error: the cluster already runs 4.16.0; use 'cvo upgrade --to DIR' "
                                            "or a new --state file")


# --- the current release's directory has moved -----------------------------------------------------------


def test_a_moved_current_release_is_named_with_the_option_that_finds_it(tmp_path: Path) -> None:
    import shutil

    installed_from, moved = tmp_path / "4.16.0", tmp_path / "elsewhere" / "4.16.0"
    shutil.copytree(OLD, installed_from)
    state = ["--state", str(tmp_path / "s.db"), "--speed", "6000", "--operators", OPS]
    done = cvo("install", str(installed_from), *state)
    assert done.returncode == 0, done.stderr
    moved.parent.mkdir()
    installed_from.rename(moved)

    for argv, option in ((["reconcile"], "--release"), (["upgrade", "--to", PATCH], "--from")):
        done = cvo(*argv, *state)
        assert done.returncode == 2, done.stderr
        (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert error == (f"error: the cluster's current release 4.16.0 was read from {installed_from}, which no "
                         f"longer exists (moved or deleted?): give its new place with {option} DIR")

    done = cvo("upgrade", "--to", PATCH, "--from", PATCH, *state)  # --from is the current release, not another
    assert done.returncode == 2 and "--from says where the current release is now" in done.stderr
    done = cvo("reconcile", "--release", str(moved), *state)
    assert done.returncode == 0, done.stderr
    done = cvo("upgrade", "--to", PATCH, "--from", str(moved), *state)
    assert done.returncode == 0, done.stderr
    assert "completed: 157/157 tasks" in done.stdout


# --- which cluster: one cluster: line at the start of every write, and of status ---------------------------


def test_every_write_and_status_says_which_cluster_first(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    flags = ["--state", str(state), "--speed", "6000", "--operators", OPS]
    expected = "cluster: embedded, state state.db"  # the path as given, relative to the working directory
    for argv in (["install", OLD, *flags], ["upgrade", "--to", PATCH, *flags], ["reconcile", *flags],
                 ["upgrade", "--to", OLD, "--dry-run", "--state", str(state)],
                 ["override", "etcd", "Upgradeable=True", "--state", str(state)],
                 ["status", "--state", str(state)], ["bootstrap", "--state", str(state)]):
        done = cvo(*argv, cwd=tmp_path)
        assert done.returncode in (0, 1), done.stderr
        lines = done.stderr.splitlines()
        assert lines[0] == expected, (argv, lines[:3])
        assert sum(line.startswith("cluster: ") for line in lines) == 1, argv
    done = cvo("status", "--state", "none")
    assert done.stderr.splitlines()[0] == "cluster: embedded, in memory (--state none)"
    done = cvo("status", "--log-format", "json", "--state", str(state), cwd=tmp_path)
    first = __import__("orjson").loads(done.stderr.splitlines()[0])
    assert (first["event"], first["cluster"]) == ("cluster", "embedded, state state.db")


def test_the_controller_says_which_cluster_first(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    run = subprocess.Popen([sys.executable, "-m", "cvo", "run", "--state", str(tmp_path / "s.db"), "--listen", "none",
                            "--speed", "600"], cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)},
                           stderr=subprocess.PIPE, text=True)
    try:
        assert run.stderr is not None
        assert run.stderr.readline().rstrip("\n") == "cluster: embedded, state s.db"
    finally:
        run.terminate()
        run.communicate(timeout=60)
    assert run.returncode == 0


def test_a_real_cluster_is_named_by_context_and_server_without_credentials(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG_OK.replace("https://127.0.0.1:9", "https://admin:pa55word@127.0.0.1:9/?x=s3cret"))
    done = cvo("install", OLD, "--kubeconfig", str(path), "--timeout", "1s")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == "cluster: context lab, server https://127.0.0.1:9/"
    for secret in ("pa55word", "s3cret", "t0ken-s3cret", "admin:"):
        assert secret not in done.stderr + done.stdout


def test_the_cluster_line_fits_the_width() -> None:
    from cvo.cli.backend import cluster_line

    where = "embedded, state /tmp/pytest-of-someone/pytest-123/test_a_long_name_for_a_test0/states/cluster.db"
    assert cluster_line(where, None) == f"cluster: {where}"
    fitted = cluster_line(where, 80)
    assert len(fitted) <= 80 and fitted.startswith("cluster: embedded, state …/") and fitted.endswith(
        "/states/cluster.db")
    assert cluster_line("embedded, state " + "x" * 100, 80).endswith("…")
    kube = "context a-rather-long-context-name-for-a-kind-cluster, server https://a-long-host.example.com:6443"
    fitted = cluster_line(kube, 80)
    assert len(fitted) <= 80 and fitted.endswith("…") and fitted.startswith("cluster: context ")
    kube = "context a-rather-long-context-name-for-a-kind-cluster, server https://a.example.com:6443"
    assert len(cluster_line(kube, 80)) <= 80 and "…/" not in cluster_line(kube, 80)  # a URL is not a path


# --- every command's --help: written for people, with examples that parse --------------------------------


def examples_of(help_text: str) -> list[str]:
    """The command lines of the help's ``Examples:`` section (comments and blank lines left out)."""
    assert "\nExamples:\n" in help_text, help_text[-500:]
    section = help_text.split("\nExamples:\n", 1)[1]
    return [line.strip() for line in section.splitlines() if line.strip() and not line.strip().startswith("#")]


def command_line(example: str) -> list[str]:
    """The cvo command of an example line (``source <(cvo …)``, ``cvo … > FILE &``) as argv, without ``cvo``."""
    import shlex

    match = re.search(r"(?:^|\(|\$\()\s*cvo\s+([^)|&;<>]*)", example)
    assert match, f"an example that does not run cvo: {example!r}"
    return shlex.split(match.group(1))


COMMAND_NAMES = sorted(name.replace("upgrade-", "upgrade ", 1) for name in  # `cvo upgrade status|ack …`
                       __import__("cvo.cli.main", fromlist=["COMMANDS"]).COMMANDS)


@pytest.mark.parametrize("command", ["", *COMMAND_NAMES])
def test_every_help_has_examples_that_parse(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    from cvo.cli.main import COMMANDS, _aliased, _command, main

    with pytest.raises(SystemExit) as exit_:
        main([*command.split(), "--help"])
    assert exit_.value.code == 0
    help_text = capsys.readouterr().out
    examples = examples_of(help_text)
    assert examples
    if command:
        assert any(command_line(e)[:len(command.split())] == command.split() for e in examples), examples
    for example in examples:
        argv = _aliased(command_line(example))
        if "--help" in argv:
            continue  # `cvo install --help`: the way to the examples
        args = build_parser(_command(argv)).parse_args(argv)  # a bad example exits 2 here
        assert args.command in COMMANDS
    # written for people: not the help line with its first letter raised and the rest lowered
    assert "release_dir" not in help_text and "clusterversion and every clusteroperator" not in help_text.lower()
    for name, (_, line) in COMMANDS.items():
        if line[1:] != line[1:].lower():  # str.capitalize lowers ClusterVersion, RELEASE_DIR…
            assert line.capitalize() not in help_text, name


# --- piped output: one line per meaningful event -------------------------------------------------------


def test_a_reconcile_that_finds_everything_in_place_again_is_detail(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blocked upgrade reconciles its current release every interval: said once, unless -v."""
    import io
    from datetime import UTC, datetime, timedelta

    import orjson

    from cvo.cli.progress import LogReporter
    from cvo.log import configure
    from cvo.runner.sweep_events import Event, decode

    t0 = datetime(2024, 5, 1, tzinfo=UTC)

    def reconcile(n: int, *, drift: bool = False) -> list[Event]:
        t = t0 + timedelta(minutes=3 * n)
        middle = [decode(t, "task.failed", {"task": "configmap a/b", "message": "drifted"})] if drift else []
        return [decode(t, "sweep.started", {"version": "4.16.3", "mode": "reconcile"}),
                decode(t, "attempt.started", {"attempt": 0}), *middle,
                decode(t, "sweep.completed", {"version": "4.16.3", "attempts": 1})]

    def levels(verbose: bool) -> list[tuple[str, str]]:
        stream = io.StringIO()
        monkeypatch.setattr(sys, "stderr", stream)
        configure("json", 2)
        reporter = LogReporter(verbose=verbose)
        for event in [decode(t0, "precondition.blocked", {"message": "etcd"}), *reconcile(0), *reconcile(1),
                      *reconcile(2, drift=True), *reconcile(3)]:
            reporter.emit(event)
        configure("text", 0)
        return [(d["level"], d["event"]) for d in map(orjson.loads, stream.getvalue().splitlines())]

    quiet = [event for level, event in levels(False) if level == "info"]
    assert quiet == ["precondition.blocked", "sweep.started", "attempt.started", "sweep.completed",
                     "task.failed", "sweep.completed"]  # the first reconcile, then only what changed
    assert all(level == "info" for level, _ in levels(True))
