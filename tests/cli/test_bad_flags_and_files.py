"""Bad flags and bad side files (``--operators``, scenarios): one ``error:`` line and exit 2, up front."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvo.cli.main import main
from cvo.operators.behaviour import MAX_DURATION, Behaviours, parse_duration, read_behaviours
from cvo.scenario.model import ScenarioError, load_scenario
from tests.support.helpers import PAYLOADS

OLD = str(PAYLOADS / "demo-4.16.0")


def usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert captured.out == ""
    return lines[0]


@pytest.mark.parametrize(("flags", "message"), [
    (["--interval", "0s"], "error: --interval: '0s' is too short: it must be at least 1s"),
    (["--interval", "0.5s"], "error: --interval: '0.5s' is too short: it must be at least 1s"),
    (["--interval", "99999999h"], "error: --interval: '99999999h' is longer than a year"),
    (["--timeout", "9000000h"], "error: --timeout: '9000000h' is longer than a year"),
    (["--speed", "0"], "error: --speed: 0 is not a positive number of simulated seconds per real second"),
    (["--speed", "-3"], "error: --speed: -3 is not a positive number of simulated seconds per real second"),
    (["--speed", "nan"], "error: --speed: nan is not a positive number of simulated seconds per real second"),
])
@pytest.mark.parametrize("command", [["install", OLD], ["upgrade", "--to", OLD], ["reconcile"]])
def test_spinning_or_absurd_timing_flags_are_refused_up_front(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str], flags: list[str],
        message: str) -> None:
    state = tmp_path / "state.json"
    assert usage_error(capsys, *command, *flags, "--state", str(state)) == message
    assert not state.exists()


@pytest.mark.parametrize(("value", "minimum", "seconds"), [("90s", 0, 90.0), (90, 0, 90.0), ("1h30m", 1, 5400.0),
                                                         ("0s", 0, 0.0), (0.5, 0, 0.5),
                                                         ("300", 0, 300.0), ("0", 0, 0.0), ("2.5", 0, 2.5)])
def test_parse_duration_accepts(value: object, minimum: float, seconds: float) -> None:
    assert parse_duration(value, "d", minimum) == seconds


@pytest.mark.parametrize(("value", "problem"), [
    (-1, "d: -1 is too short: it must be at least 0s"), (float("nan"), "d: nan is not a duration"),
    (float("inf"), "d: inf is longer than a year"), (True, "d: True is not a duration"),
    ("１h", "d: '１h' is not a duration"), ("", "d: '' is not a duration"), ([1], "d: [1] is not a duration"),
    (MAX_DURATION + 1, "is longer than a year"), ("x" * 100, "d: 'xxxxxxxxxx"), ("1e3", "d: '1e3' is not a duration"),
    ("-5", "d: '-5' is not a duration"), (".5", "d: '.5' is not a duration"), ("40000000", "is longer than a year"),
])
def test_parse_duration_refuses(value: object, problem: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(value, "d")
    assert str(info.value).startswith(problem) or problem in str(info.value)
    assert len(str(info.value)) < 120


@pytest.mark.parametrize(("content", "message"), [
    ("etcd: {flaps: 100000000000}\n", "etcd.flaps: expected an integer from 0 to 10,000"),
    ("default: 5\n", "default: expected a mapping of behaviours"),
    ("etcd: {delay: -5}\n", "etcd.delay: -5 is too short"),
    ("etcd: {degraded: {after: 1m, message: [1]}}\n", "etcd.degraded.message: expected text"),
    ("1: {delay: 1}\n", "1.delay: 1"),  # a non-string operator name is its text; the behaviour is fine
    ("a: 1\n---\nb: 2\n", "expected one YAML document"),
    ("a: [\n", "invalid YAML: line 2"),
])
def test_bad_behaviours_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "ops.yaml"
    path.write_text(content)
    if message == "1.delay: 1":
        assert read_behaviours(path).for_operator("1").delay == 1.0
        return
    with pytest.raises(ValueError, match=None) as info:
        read_behaviours(path)
    assert str(info.value).startswith(str(path)) and message in str(info.value), str(info.value)


def alias_bomb() -> str:
    lines = ["a: &a [" + ", ".join(["x"] * 9) + "]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("make", ["fifo", "device", "bomb", "loop"])
def test_operators_and_scenario_files_are_read_under_the_limits(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, make: str) -> None:
    path = tmp_path / "f.yaml"
    if make == "fifo":
        os.mkfifo(path)
        expected = "is a FIFO (named pipe), not a regular file"
    elif make == "device":
        os.symlink("/dev/zero", path)
        expected = "is a character device, not a regular file"
    elif make == "loop":
        os.symlink(path, path)
        expected = "symbolic link loop"
    else:
        path.write_text(alias_bomb())
        expected = "document contains excessive aliasing"
    line = usage_error(capsys, "install", OLD, "--state", "none", "--operators", str(path))
    assert line.startswith(f"error: {path}: ") and expected in line
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: ") and expected in str(info.value)


def test_scenario_interval_must_not_spin(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"options: {{interval: 0s}}\nactions: [{{install: {OLD}}}]\n")
    with pytest.raises(ScenarioError, match=r"options.interval: '0s' is too short: it must be at least 1s"):
        load_scenario(path)


def test_empty_behaviours_file_means_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "ops.yaml"
    path.write_text("# nothing\n")
    assert read_behaviours(path) == Behaviours()


@pytest.mark.parametrize("flag", ["--profile", "--exclude", "--release-image", "--feature-gates"])
@pytest.mark.parametrize("command", ["plan", "lint"])
def test_flags_that_are_not_utf8(capsys: pytest.CaptureFixture[str], command: str, flag: str) -> None:
    value = os.fsdecode(b"caf\xe9")
    assert usage_error(capsys, command, OLD, flag, value, "-o", "json") == (
        f"error: {flag}: 'caf\\\\xe9' is not UTF-8 text")


def test_release_directory_path_that_is_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    directory = tmp_path / os.fsdecode(b"rel\xff")
    directory.mkdir()
    line = usage_error(capsys, "plan", str(directory), "-o", "json")
    assert line.endswith("rel\\xff: the directory's path is not UTF-8 (cvo's rule)")


@pytest.mark.parametrize("args", [
    ["upgrade", "--to", "\x00", "--no-wait"],  # found by hypothesis in CI: ValueError: embedded null byte
    ["status", "--state", "\x00"],
    ["install", OLD, "--state", "x\x00y"],
    ["status", "--kubeconfig", "\x00"],
    ["install", OLD, "--events", "e\x00"],
    ["report", "e\x00"],
    ["replay", "s\x00"],
    ["upgrade", "status", "--from-file", "\x00"],
    ["plan", OLD, "--profile", "p\x00"],
])
def test_an_argument_with_a_nul_byte_is_one_usage_error(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    """exec cannot pass a NUL byte, but main(argv) can: no ValueError from the OS reaches the user."""
    assert "contains a NUL byte" in usage_error(capsys, *args)


def test_the_loader_refuses_a_path_with_a_nul_byte_and_its_cache_closes_cleanly(tmp_path: Path) -> None:
    from cvo.payload.cache import ParseCache
    from cvo.payload.loader import LoadError, load_release

    with pytest.raises(LoadError, match="a path cannot contain a NUL byte"):
        load_release("/nonexistent-release/\x00", cache_dir=tmp_path)
    cache = ParseCache(tmp_path, Path("x\x00y"))  # resolve() raises ValueError: the cache is just empty
    cache.load()
    assert cache.get(b"k") is None
    cache.close()


@pytest.mark.parametrize(("action", "problem"), [
    ("cv-override: 5", "actions[0] (cv-override): expected a list of {kind, group, namespace, name, unmanaged}"),
    ("apply: {kind: ConfigMap}", "actions[0] (apply): expected an object with apiVersion, kind and metadata.name"),
    ("fail-requests: {kind: Pod, count: x}", "actions[0] (fail-requests): expected {kind, name?, namespace?, error, "
                                             "count (0 to 1,000,000)}"),
    ("patch-status: {kind: A, name: b, merge: 5}", "actions[0] (patch-status): merge: expected an object"),
    ("set-condition: {clusteroperator: [1], type: a, status: b}", "actions[0] (set-condition): expected "
                                                                   "{clusteroperator, type, status"),
    ("upgrade: {to: 5}", "actions[0] (upgrade): expected a release directory path or {to: PATH"),
    ("install: [x]", "actions[0] (install): expected a release directory path"),
    ("override: {name: etcd}", "actions[0] (override): expected {name, status, type?, reason?, message?}"),
])
def test_scenario_action_values_are_checked_at_load(tmp_path: Path, action: str, problem: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"actions:\n- {{at: 1m, {action}}}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: actions[0] (") and problem in str(info.value), str(info.value)


@pytest.mark.parametrize(("body", "problem"), [
    ("cluster: {objects: abc}", "cluster.objects: expected a list of objects"),
    ("cluster: {objects: [{kind: A}]}", "cluster.objects: expected a list of objects"),
    ("cluster: {installed: [1]}", "cluster.installed: expected a release directory path"),
    ("options: {capabilities: Console}", "options.capabilities: expected a list of capability names"),
])
def test_scenario_cluster_and_options_shapes(tmp_path: Path, body: str, problem: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"{body}\nactions: [{{install: {OLD}}}]\n")
    with pytest.raises(ScenarioError, match=re.escape(problem)):
        load_scenario(path)


@pytest.mark.parametrize("command", ["plan", "lint"])
def test_an_unknown_profile_is_refused_with_the_known_ones(capsys: pytest.CaptureFixture[str], command: str) -> None:
    """An unknown profile used to give an empty plan and exit 0."""
    assert usage_error(capsys, command, OLD, "--profile", "nope") == (
        "error: --profile: unknown cluster profile 'nope'; known: self-managed-high-availability, "
        "single-node-developer, ibm-cloud-managed, hypershift")


@pytest.mark.parametrize(("value", "problem"), [("-5", "-5 is negative: give 0 or more"),
                                                ("x", "'x' is not a whole number")])
def test_a_negative_attempt_is_refused(capsys: pytest.CaptureFixture[str], value: str, problem: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["plan", OLD, "--attempt", value])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [f"error: cvo plan: argument --attempt: {problem} (see 'cvo plan --help')"]


@pytest.mark.parametrize("reason", ["not camel", "1Reason", "Reason-X", "", "Trailing:", "x" * 1025])
def test_an_override_reason_must_be_a_condition_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       reason: str) -> None:
    """metav1.Condition's reason rules, checked before the cluster is opened (no state file is created)."""
    state = tmp_path / "s.db"
    line = usage_error(capsys, "override", "etcd", "Upgradeable=True", "--reason", reason, "--state", str(state))
    assert line.startswith("error: --reason: ") and "is not a condition reason: CamelCase" in line
    assert not state.exists()


def test_an_override_message_has_the_apis_limit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = usage_error(capsys, "override", "etcd", "Upgradeable=True", "--message", "m" * 32769,
                       "--state", str(tmp_path / "s.db"))
    assert line == "error: --message: 32769 characters; a condition message holds at most 32768"


# --- cvo run ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("flags", "message"), [
    (["--interval", "0s"], "--interval"),
    (["--lease-duration", "10s", "--renew-deadline", "20s"], "the lease duration must be greater than the renew deadline"),
    (["--retry-period", "100s"], "1.2 × the retry period"),
    (["--listen", "nowhere"], "--listen: 'nowhere' is not HOST:PORT"),
    (["--release", "/nonexistent-release"], "--release /nonexistent-release: not a directory"),
    (["--releases", "/nonexistent-catalogue"], "--releases /nonexistent-catalogue: not a directory"),
    (["--in-cluster", "--state", "none"], "--in-cluster cannot be combined"),
    (["--lease-duration", "soon"], "--lease-duration"),
    (["--update-service-ca-file", "/nonexistent.pem"], "--update-service-ca-file /nonexistent.pem: not a file"),
    (["--update-service-timeout", "soon"], "--update-service-timeout"),
])
def test_cvo_run_refuses_bad_flags_with_one_line(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    backend = [] if "--state" in flags else ["--state", "none"]
    assert main(["run", "--listen", "none", *backend, *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err


def test_cvo_run_on_an_address_in_use_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        assert main(["run", "--state", "none", "--listen", address]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: --listen {address}: Address already in use"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lease=st.text(max_size=8), renew=st.text(max_size=8), retry=st.text(max_size=8), listen=st.text(max_size=12),
       interval=st.text(max_size=6))
def test_cvo_run_flags_of_any_text_end_in_one_error_line(lease: str, renew: str, retry: str, listen: str,
                                                        interval: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever the durations and address, a run whose --release is missing exits 2 with one line."""
    args = ["run", "--state", "none", "--lease-duration", lease, "--renew-deadline", renew, "--retry-period", retry,
            "--listen", listen, "--interval", interval, "--release", "/nonexistent-release"]
    if any(a.startswith("-") and a not in ("-",) for a in (lease, renew, retry, listen, interval)):
        return  # argparse reads a value starting with "-" as a flag (its own usage error, tested elsewhere)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(to=st.text(max_size=10), timeout=st.text(max_size=6), watch=st.booleans(),
       output=st.sampled_from(["text", "json", "yaml", "wide", "name"]))
def test_upgrade_no_wait_and_status_watch_of_any_text_end_in_one_error_line(
        to: str, timeout: str, watch: bool, output: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``cvo upgrade --no-wait`` and ``cvo status -w``: a release that is not there is exit 2 with one line; a
    cluster that was never installed is exit 1 with one line (a watch does not wait for a state file)."""
    if to.startswith("-") or timeout.startswith("-"):
        return  # argparse reads a value starting with "-" as a flag (its own usage error)
    missing = str(tmp_path / "never-installed.db")
    assert main(["upgrade", "--to", f"/nonexistent-release/{to}", "--no-wait", "--timeout", timeout or "1h",
                 "--state", missing]) == 2
    status = ["status", "-o", output, "--state", missing, *(["-w"] if watch else [])]
    assert main(status) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err), err
    assert "no cluster has been installed yet" in err[1]


@pytest.mark.parametrize("timeout", ["300", "0"])
def test_a_bare_number_is_seconds_and_0_is_never_as_the_timeout_flags_help_says(
        timeout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = str(tmp_path / "state.db")
    assert main(["install", OLD, "--state", state, "--speed", "600"]) == 0
    capsys.readouterr()
    code = main(["upgrade", "--to", str(PAYLOADS / "demo-4.16.3"), "--dry-run", "--timeout", timeout, "--state", state])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Verdict: would proceed" in out


def parse_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one line of an error argparse finds (exit 2 through SystemExit)."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    assert exited.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    return lines[0]


@pytest.mark.parametrize(("args", "line"), [
    (["instal"], "error: cvo: argument COMMAND: invalid choice: 'instal'; did you mean 'install'? (see 'cvo --help')"),
    (["status", "-o", "jsn"], "error: cvo status: argument -o/--output: invalid choice: 'jsn'; did you mean 'json'? "
                              "(see 'cvo status --help')"),
    (["upgrade", "--to", OLD, "--dryrun"], "error: cvo upgrade: unrecognized arguments: --dryrun; did you mean "
                                           "--dry-run? (see 'cvo upgrade --help')"),
    # a sub-command's own flags, under its own name
    (["upgrade", "channel", "stable-4.16", "--uptream", "x"],
     "error: cvo upgrade channel: unrecognized arguments: --uptream x; did you mean --upstream? "
     "(see 'cvo upgrade channel --help')"),
    # a flag other commands have is never suggested as itself
    (["graph", "serve", "g.json", "--kubeconfig", "k"],
     "error: cvo graph serve: unrecognized arguments: --kubeconfig k (see 'cvo graph serve --help')"),
])
def test_a_typo_gets_a_suggestion(args: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_error(capsys, *args) == line


def test_an_unknown_choice_far_from_every_one_lists_them(capsys: pytest.CaptureFixture[str]) -> None:
    line = parse_error(capsys, "xyzzy")
    assert "did you mean" not in line and "(choose from 'plan', 'lint', 'install'" in line


def test_override_of_a_misspelt_name_suggests_the_one_that_exists(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    state = str(tmp_path / "state.db")
    assert main(["install", OLD, "--state", state, "--speed", "600"]) == 0
    capsys.readouterr()
    assert main(["override", "etdc", "Upgradeable=True", "--state", state]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "error: no OperatorCondition named 'etdc'; did you mean 'etcd'?"
    assert main(["override", "zzz", "Upgradeable=True", "--state", state]) == 2
    line = capsys.readouterr().err.splitlines()[-1]
    assert line.startswith("error: no OperatorCondition named 'zzz'; the cluster has ") and "etcd" in line
