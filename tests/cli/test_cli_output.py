"""Issue 14, output formats as kubectl has them: ``-o json|yaml`` wherever a command prints a result (YAML
holding the same data as JSON), ``-o wide`` and ``-o name`` for ``cvo status`` and ``cvo plan``,
``--no-headers`` for tables.

The cluster is the demo's (``hack/demo.sh``): 4.16.0 installed with ``payloads/demo-operators.yaml``, so
etcd's OperatorCondition says ``Upgradeable=False``, then the 4.16.3 patch; the 4.17.0 minor update is
blocked.  Made once per module; a test that writes works on a copy of its state file.
"""

from __future__ import annotations

import io
import json
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvo.cli.main import build_parser, main
from cvo.cli.output import dump, group_of, kubectl_name
from cvo.status.text import format_table
from tests.support.helpers import PAYLOADS, REPO

OLD = str(PAYLOADS / "demo-4.16.0")
PATCH = str(PAYLOADS / "demo-4.16.3")
MINOR = str(PAYLOADS / "demo-4.17.0")
DEMO_OPERATORS = str(PAYLOADS / "demo-operators.yaml")
ENV = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR")}
HEADERS = ("NAME ", "SOURCE ")  # the first words of the status tables' header lines



def cvo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cvo", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=ENV, check=False)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def structured(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> dict[str, Any]:
    """The command's ``-o json`` document, checked to be the data of its ``-o yaml`` too."""
    got, out, err = cli(capsys, *args, "-o", "json")
    assert got == code, err
    doc = json.loads(out)
    got, out, err = cli(capsys, *args, "-o", "yaml")
    assert got == code, err
    assert yaml.safe_load(out) == doc
    assert not out.lstrip().startswith("{")  # block style, not JSON
    return doc


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state of the demo's cluster just before its dry run of 4.17.0 (as ``make demo`` makes it)."""
    state = tmp_path_factory.mktemp("output") / "demo.db"
    for args in (["install", OLD], ["upgrade", "--to", PATCH]):
        done = cvo(*args, "--state", str(state), "--operators", DEMO_OPERATORS)
        assert done.returncode == 0, done.stderr
    return state


@pytest.fixture
def state(demo: Path, tmp_path: Path) -> str:
    """A private copy of the demo's cluster."""
    copy = tmp_path / "cluster.db"
    shutil.copy(demo, copy)
    return str(copy)


# --- upgrade --dry-run ----------------------------------------------------------------------------------------


def test_dry_run_json_of_the_demos_minor_update_says_blocked_by_etcds_operator_condition(demo: Path) -> None:
    done = cvo("upgrade", "--to", MINOR, "--dry-run", "-o", "json", "--state", str(demo))
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)  # the whole of stdout is the document: no text verdict around it
    assert (doc["current"], doc["target"], doc["update"]) == ("4.16.3", "4.17.0", "minor update")
    assert (doc["blocked"], doc["verdict"], doc["forced"]) == (True, "blocked", False)
    results = {p["name"]: p["result"] for p in doc["preconditions"]}
    assert results == {"ClusterVersionRollback": "pass", "ClusterVersionGiantHop": "pass",
                       "ClusterVersionUpgradeable": "blocked", "ClusterVersionRecommendedUpdate": "warning"}
    gate = next(p for p in doc["preconditions"] if p["name"] == "ClusterVersionUpgradeable")
    assert gate["reason"] == "RiskNameNotCompatibleWithReasonProperty"
    assert gate["message"].startswith("Operator etcd should not be upgraded between minor or major versions")
    assert next(p for p in doc["preconditions"] if p["name"] == "ClusterVersionRecommendedUpdate")["reason"] \
        == "NoChannel"
    [blocker] = doc["blockers"]
    assert (blocker["name"], blocker["source"]) == (
        "OperatorConditionUpgradeable-openshift-etcd-operator.etcd", "OperatorConditionUpgradeable")
    assert blocker["url"] == "https://olm.operatorframework.io/docs/concepts/crds/operatorcondition/"
    assert "OperatorCondition openshift-etcd-operator/etcd" in blocker["message"]
    assert blocker["override"] == {  # data: the exact commands, as argv, on the same cluster
        "action": "override", "note": "an admin's override of the operator's OperatorCondition",
        "command": ["cvo", "override", "etcd", "Upgradeable=True", "--reason", "AdminAcknowledged", "--message",
                    "upgrade reviewed", "--state", str(demo)],
        "force": ["cvo", "upgrade", "--to", MINOR, "--force", "--state", str(demo)]}
    accepted = doc["releaseAccepted"]
    assert (accepted["type"], accepted["status"], accepted["reason"]) == (
        "ReleaseAccepted", "False", "PreconditionChecks")
    assert 'payload loaded version="4.17.0"' in accepted["message"] and "etcd is migrating" in accepted["message"]
    assert "Verdict" not in done.stdout + done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("error:")] == []
    assert yaml.safe_load(cvo("upgrade", "--to", MINOR, "--dry-run", "-o", "yaml", "--state", str(demo)).stdout) \
        == doc


def test_dry_run_documents_of_a_forced_and_of_a_passing_update(state: str, capsys: pytest.CaptureFixture[str]) -> None:
    forced = structured(capsys, "upgrade", "--to", MINOR, "--dry-run", "--force", "--state", state)
    assert (forced["blocked"], forced["verdict"], forced["forced"]) == (False, "proceed-with-warnings", True)
    assert {p["name"]: p["result"] for p in forced["preconditions"]}["ClusterVersionUpgradeable"] == "warning"
    assert forced["acceptedRisks"].startswith("Forced through blocking failures:")
    assert forced["releaseAccepted"] is None
    cli(capsys, "override", "etcd", "Upgradeable=True", "--reason", "MigrationVerified", "--state", state)
    passing = structured(capsys, "upgrade", "--to", MINOR, "--dry-run", "--state", state)
    assert (passing["blocked"], passing["verdict"], passing["blockers"]) == (False, "proceed-with-warnings", [])
    assert passing["message"].startswith('Precondition "ClusterVersionRecommendedUpdate" failed because of "NoChannel"')
    assert {p["name"]: p["result"] for p in passing["preconditions"] if p["result"] != "pass"} == {
        "ClusterVersionRecommendedUpdate": "warning"}


# --- status ---------------------------------------------------------------------------------------------------


def test_status_yaml_is_the_json_document(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = structured(capsys, "status", "--state", str(demo))
    assert doc["clusterVersion"]["status"]["desired"]["version"] == "4.16.3"
    assert len(doc["clusterOperators"]) == 15
    assert [oc["metadata"]["name"] for oc in doc["operatorConditions"]].count("etcd") == 1


def test_status_name_prints_kubectl_get_o_name_lines(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "status", "--state", str(demo), "-o", "name")
    assert code == 0
    doc = structured(capsys, "status", "--state", str(demo))
    assert out.splitlines() == ["clusterversion.config.openshift.io/version"] + [
        f"clusteroperator.config.openshift.io/{co['metadata']['name']}" for co in doc["clusterOperators"]]


def _header_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if line.startswith(HEADERS)]


@pytest.mark.parametrize("output", ["text", "wide"])
def test_status_no_headers_drops_exactly_the_header_lines(demo: Path, output: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, table, _ = cli(capsys, "status", "--state", str(demo), "-o", output)
    assert code == 0
    headers = _header_lines(table)
    assert len(headers) == 3  # ClusterVersion, ClusterOperators, the Upgradeable section's table
    code, bare, _ = cli(capsys, "status", "--state", str(demo), "-o", output, "--no-headers")
    assert code == 0
    assert bare.splitlines() == [line for i, line in enumerate(table.splitlines()) if i not in headers]


def test_status_wide_adds_columns(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, text, _ = cli(capsys, "status", "--state", str(demo))
    code, wide, _ = cli(capsys, "status", "--state", str(demo), "-o", "wide")
    assert code == 0
    cv_header, cv_row, _, co_header, *_ = wide.splitlines()
    assert cv_header.split() == ["NAME", "VERSION", "AVAILABLE", "PROGRESSING", "SINCE", "DESIRED", "FAILING",
                                 "UPGRADEABLE", "STATUS"]
    assert cv_row.split()[:8] == ["version", "4.16.3", "True", "False", "0s", "4.16.3", "False", "False"]
    assert co_header.split() == ["NAME", "VERSION", "AVAILABLE", "PROGRESSING", "DEGRADED", "SINCE", "UPGRADEABLE",
                                 "REASON", "MESSAGE"]
    # the same rows, the same order
    assert [line.split()[:1] for line in wide.splitlines()] == [line.split()[:1] for line in text.splitlines()]
    assert "Upgradeable: False (RiskNameNotCompatibleWithReasonProperty" in wide


def test_status_watch_yaml_and_name(demo: Path) -> None:
    """``-w -o yaml`` opens each document with ``---``; ``-w -o name`` names the objects."""
    for output, last in (("yaml", "operatorConditions:"), ("name", "clusteroperator.config.openshift.io/storage")):
        watch = subprocess.Popen([sys.executable, "-m", "cvo", "status", "-w", "-o", output, "--state", str(demo)],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV, cwd=REPO)
        try:
            first = _output_until(watch, last)
            watch.send_signal(signal.SIGINT)
            assert watch.stdout is not None
            rest = watch.stdout.read()  # what follows, to the end (nothing was read through the buffer)
            assert watch.wait(timeout=60) == 0  # Ctrl-C ends a watch: not an error
        finally:
            if watch.poll() is None:
                watch.kill()
                watch.wait()
        printed = (first + rest).decode()
        if output == "yaml":
            assert printed.startswith("---\n")
            [doc] = list(yaml.safe_load_all(printed))  # nothing changed: one document
            assert doc["clusterVersion"]["status"]["desired"]["version"] == "4.16.3"
        else:
            lines = printed.splitlines()
            assert lines[0] == "clusterversion.config.openshift.io/version" and len(lines) == 16


def _output_until(process: subprocess.Popen[bytes], wanted: str, timeout: float = 120) -> bytes:
    """What ``process`` prints until a line starting with ``wanted`` (selectors wait: no sleeps)."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    out = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while not any(line.startswith(wanted.encode()) for line in out.splitlines(keepends=True)
                      if line.endswith(b"\n")):
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                pytest.fail(f"no line starting with {wanted!r} within {timeout} s: {out!r}")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                pytest.fail(f"the watch ended (exit {process.wait()}) before {wanted!r}: {out!r}")
            out += chunk
    return out


def test_watch_names_only_what_changed() -> None:
    from cvo.cli.status_cmd import Found, _changed_names
    from cvo.objects import ClusterOperator, ClusterVersion

    def co(name: str, version: str) -> ClusterOperator:
        return ClusterOperator.read({"metadata": {"name": name},
                                     "status": {"versions": [{"name": "operator", "version": version}]}})

    seen: dict[str, bytes] = {}
    found = Found(ClusterVersion.read({"metadata": {"name": "version"}}), [co("a", "1"), co("b", "1")], [],
                  datetime.now(UTC))
    assert _changed_names(found, seen) == ("clusterversion.config.openshift.io/version\n"
                                           "clusteroperator.config.openshift.io/a\n"
                                           "clusteroperator.config.openshift.io/b\n")
    assert _changed_names(found, seen) == ""
    found.cos = [co("a", "1"), co("b", "2"), co("c", "1")]
    assert _changed_names(found, seen) == "clusteroperator.config.openshift.io/b\nclusteroperator.config.openshift.io/c\n"


# --- the sweeps' final reports --------------------------------------------------------------------------------


def test_sweep_reports_in_yaml_and_without_headers(state: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    second = tmp_path / "second.db"
    shutil.copy(state, second)
    code, out, err = cli(capsys, "reconcile", "--state", state, "-o", "json")
    assert code == 0, err
    as_json = json.loads(out)
    code, out, err = cli(capsys, "reconcile", "--state", str(second), "-o", "yaml")
    assert code == 0, err
    as_yaml = yaml.safe_load(out)
    assert list(as_yaml) == list(as_json)  # the same document, keys in the same order
    for key in ("ok", "completed", "done", "total", "clusterOperators"):
        assert as_yaml[key] == as_json[key], key
    assert as_yaml["completed"] is True
    code, out, err = cli(capsys, "reconcile", "--state", state, "--no-headers")
    assert code == 0, err
    assert not [line for line in out.splitlines() if line.startswith(HEADERS)]
    assert re.search(r"^version +4\.16\.3 +True", out, re.MULTILINE)
    assert "\ncompleted: " in out


# --- plan, lint -----------------------------------------------------------------------------------------------


def _expected_names(plan: dict[str, Any]) -> list[str]:
    nodes = {n["id"]: n for n in plan["nodes"]}
    names = []
    for step in plan["steps"]:
        for node in step:
            for task in nodes[node]["tasks"]:
                if task.get("skip"):
                    continue
                group = task["apiVersion"].rpartition("/")[0]
                name = f"{task['kind'].lower()}{'.' + group if group else ''}/{task['name']}"
                names.append(f"{name} -n {task['namespace']}" if task["namespace"] else name)
    return names


@pytest.mark.parametrize("mode", ["install", "update"])
def test_plan_yaml_and_name(mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    plan = structured(capsys, "plan", MINOR, "--mode", mode)
    assert plan["version"] == "4.17.0" and plan["mode"] == mode
    code, out, _ = cli(capsys, "plan", MINOR, "--mode", mode, "-o", "name")
    assert code == 0
    lines = out.splitlines()
    assert lines == _expected_names(plan)
    assert len(lines) == plan["total"] - sum(1 for n in plan["nodes"] for t in n["tasks"] if t.get("skip"))
    assert "namespace/openshift-etcd-operator" in lines  # core group: no ".group"
    assert "deployment.apps/etcd-operator -n openshift-etcd-operator" in lines
    assert all(re.fullmatch(r"[a-z0-9]+(\.[a-z0-9.-]+)?/[^ ]+( -n [^ ]+)?", line) for line in lines), lines
    assert cli(capsys, "plan", MINOR, "--mode", mode, "-o", "name")[1] == out  # the cached plan prints the same


def test_plan_name_leaves_out_skipped_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    plan = structured(capsys, "plan", MINOR, "--capabilities", "")
    skipped = [t for n in plan["nodes"] for t in n["tasks"] if t.get("skip")]
    assert skipped
    _, out, _ = cli(capsys, "plan", MINOR, "--capabilities", "", "-o", "name")
    assert out.splitlines() == _expected_names(plan) and len(out.splitlines()) == plan["total"] - len(skipped)


def test_lint_yaml_is_the_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    doc = structured(capsys, "lint", MINOR)
    assert doc["version"] == "4.17.0" and doc["summary"] == {"error": 0, "warning": 0, "info": 0}


# --- override, version, upgrade status, replay ----------------------------------------------------------------


def test_override_prints_the_operator_condition_or_its_name(state: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    second = tmp_path / "second.db"
    shutil.copy(state, second)
    args = ["override", "etcd", "Upgradeable=True", "--reason", "MigrationVerified", "--message", "checked"]
    code, out, err = cli(capsys, *args, "--state", state, "-o", "json")
    assert code == 0, err
    oc = json.loads(out)
    assert (oc["kind"], oc["metadata"]["namespace"], oc["metadata"]["name"]) == (
        "OperatorCondition", "openshift-etcd-operator", "etcd")
    [override] = oc["spec"]["overrides"]
    assert (override["type"], override["status"], override["reason"], override["message"]) == (
        "Upgradeable", "True", "MigrationVerified", "checked")
    code, out, err = cli(capsys, *args, "--state", str(second), "-o", "yaml")
    assert code == 0, err
    assert yaml.safe_load(out) == oc  # the same write on the same cluster: the same object
    code, out, _ = cli(capsys, "override", "etcd", "--clear", "--state", state, "-o", "name")
    assert (code, out) == (0, "operatorcondition.operators.coreos.com/etcd\n")


def test_version_documents(demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cvo import __version__

    doc = structured(capsys, "version", "--state", str(demo))
    assert doc == {"clientVersion": {"version": __version__},
                   "cluster": f"embedded simulated cluster (state: {demo})", "openshiftVersion": "4.16.3"}
    assert structured(capsys, "version", "--client") == {"clientVersion": {"version": __version__}}
    missing = tmp_path / "missing.db"
    assert structured(capsys, "version", "--state", str(missing)) == {
        "clientVersion": {"version": __version__}, "cluster": None, "openshiftVersion": None}
    assert not missing.exists()


def test_upgrade_status_yaml_is_the_json_document(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = structured(capsys, "upgrade", "status", "--state", str(demo))
    assert doc["updating"] is False


def test_replay_documents(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = str(REPO / "scenarios" / "cancel-and-resume.yaml")
    doc = structured(capsys, "replay", scenario)
    assert (doc["passed"], doc["failed"]) == (1, 0)
    [replayed] = doc["scenarios"]
    assert replayed["passed"] is True and replayed["result"] == "completed"
    assert all(e["ok"] for e in replayed["expectations"]) and replayed["expectations"]
    assert {e["event"] for e in replayed["events"]} >= {"sweep.started", "sweep.completed"}
    quiet = structured(capsys, "replay", scenario, "-q")
    assert "events" not in quiet["scenarios"][0]
    assert quiet["scenarios"][0]["expectations"] == replayed["expectations"]


# --- errors stay one line -------------------------------------------------------------------------------------


def test_a_bad_format_is_one_usage_line_naming_the_choices() -> None:
    done = cvo("status", "-o", "xml")
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("error: cvo status: argument -o/--output: invalid choice: 'xml'")
    assert "'yaml', 'wide', 'name'" in line


def test_errors_with_yaml_output_stay_error_lines(tmp_path: Path) -> None:
    done = cvo("status", "-o", "yaml", "--state", str(tmp_path / "none.db"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("error: no cluster has been installed yet") and len(done.stderr.splitlines()) == 1
    done = cvo("upgrade", "--to", "/nonexistent", "--dry-run", "-o", "yaml", "--log-format", "json")
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert json.loads(line)["level"] == "error"


# --- properties -----------------------------------------------------------------------------------------------

JSON_DATA = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(JSON_DATA, st.lists(JSON_DATA, min_size=1, max_size=3))
def test_yaml_holds_the_json_documents_data(doc: Any, stream: list[Any]) -> None:
    assert yaml.safe_load(dump(doc, "yaml")) == json.loads(dump(doc, "json"))
    if isinstance(doc, dict):
        assert list(yaml.safe_load(dump(doc, "yaml"))) == list(doc)  # keys in the JSON's order
    assert list(yaml.safe_load_all("".join(dump(d, "yaml", stream=True) for d in stream))) == stream
    lines = "".join(dump(d, "json", stream=True) for d in stream).split("\n")[:-1]  # not at U+2028 and the like
    assert [json.loads(line) for line in lines] == stream


CELL = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp")), max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=6).flatmap(
    lambda n: st.lists(st.lists(CELL, min_size=n, max_size=n), min_size=1, max_size=6)))
def test_no_headers_drops_exactly_the_header_line(rows: list[list[str]]) -> None:
    with_headers = format_table(rows)
    assert format_table(rows, headers=False) == "".join(io.StringIO(with_headers).readlines()[1:])


DNS = st.from_regex(r"[a-z]([a-z0-9-]{0,8}[a-z0-9])?(\.[a-z]([a-z0-9-]{0,8}[a-z0-9])?){0,2}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.just(""), DNS), st.from_regex(r"[A-Z][A-Za-z0-9]{0,12}", fullmatch=True), DNS,
       st.sampled_from(["v1", "v1beta1", "v2"]))
def test_kubectl_names(group: str, kind: str, name: str, version: str) -> None:
    api_version = f"{group}/{version}" if group else version
    assert group_of(api_version) == group
    line = kubectl_name(group_of(api_version), kind, name)
    resource, _, named = line.partition("/")
    assert named == name
    assert resource == (f"{kind.lower()}.{group}" if group else kind.lower())


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text())
def test_any_name_is_one_shell_word(name: str, namespace: str) -> None:
    """A manifest may name anything: ``-o name`` quotes what no cluster would accept, a line stays words."""
    from cvo.cli.output import one_word

    line = f"{kubectl_name('apps', 'Deployment', name)} -n {one_word(namespace)}"
    words = shlex.split(line)
    assert len(words) == 3 and words[1] == "-n" and "\n" not in line
    for text in (f"deployment.apps/{name}", namespace):
        shown = one_word(text)
        assert shown == text or json.loads(shown) == text  # as is, or JSON-quoted


OUTPUTS = {"status": ("text", "json", "yaml", "wide", "name"), "lint": ("text", "json", "yaml"),
           "plan": ("text", "json", "yaml", "name", "dot", "mermaid", "html"), "install": ("text", "json", "yaml"),
           "upgrade": ("text", "json", "yaml"), "reconcile": ("text", "json", "yaml"),
           "override": ("text", "json", "yaml", "name"), "version": ("text", "json", "yaml"),
           "upgrade-status": ("text", "json", "yaml"), "replay": ("text", "json", "yaml")}
POSITIONAL = {"lint": [OLD], "plan": [OLD], "install": [OLD], "upgrade": ["--to", OLD],
              "override": ["etcd", "Upgradeable=True"], "replay": ["scenario.yaml"]}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(sorted(OUTPUTS)),
       value=st.one_of(st.sampled_from(["text", "json", "yaml", "wide", "name", "dot", "html", "mermaid", "JSON",
                                        "yml", ""]), st.text(max_size=8)),
       no_headers=st.booleans())
def test_every_output_flag_takes_its_formats_and_refuses_others_in_one_line(
        command: str, value: str, no_headers: bool, capsys: pytest.CaptureFixture[str]) -> None:
    if value.startswith("-") or "\x00" in value:
        return  # a flag to argparse; a NUL byte is refused before parsing (test_cli_conventions)
    with_headers = command in ("status", "install", "upgrade", "reconcile")
    argv = [command, *POSITIONAL.get(command, []), "-o", value, *(["--no-headers"] if no_headers else [])]
    capsys.readouterr()
    try:
        args = build_parser(command).parse_args(argv)
    except SystemExit as exit_:
        assert exit_.code == 2
        [line] = capsys.readouterr().err.splitlines()
        assert line.startswith(f"error: cvo {command.replace('-', ' ')}: ")
        assert value not in OUTPUTS[command] or (no_headers and not with_headers)
        return
    assert value in OUTPUTS[command] and args.output == value
    assert not no_headers or (with_headers and args.no_headers)
