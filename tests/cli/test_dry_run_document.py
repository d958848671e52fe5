"""Issue 24, finding 13 (and 6 for the dry run's text): ``cvo upgrade --dry-run -o json`` is one shape whatever
the verdict, also when there is nothing to do; each blocker's ``override`` is data (the exact commands, as
argv, naming the same cluster); the README's ``jq`` examples work on the demo's cluster before and after the
update; on an 80-column terminal the text fits and its commands, pasted, run.

The cluster is the demo's (``hack/demo.sh``): 4.16.0 with ``payloads/demo-operators.yaml`` (etcd's
OperatorCondition says ``Upgradeable=False``), then 4.16.3; the 4.17.0 minor update is blocked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.cli.gates import shell_lines, unblock
from tests.support.helpers import PAYLOADS, REPO
from tests.support.pty_run import run_on_pty

OLD = str(PAYLOADS / "demo-4.16.0")
PATCH = str(PAYLOADS / "demo-4.16.3")
MINOR = str(PAYLOADS / "demo-4.17.0")
DEMO_OPERATORS = str(PAYLOADS / "demo-operators.yaml")
ENV = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR", "COLUMNS", "LINES", "CVO_STATE")}
KEYS = ["current", "target", "image", "update", "preconditions", "blockers", "blocked", "forced", "verdict",
        "message", "acceptedRisks", "releaseAccepted"]
OVERRIDE_KEYS = ["action", "command", "note", "force"]


def cvo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cvo", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=env or ENV, check=False)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("dry-run") / "demo.db"
    for args in (["install", OLD], ["upgrade", "--to", PATCH]):
        done = cvo(*args, "--state", str(state), "--operators", DEMO_OPERATORS)
        assert done.returncode == 0, done.stderr
    return state


@pytest.fixture(scope="module")
def upgraded(demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's cluster at its end: 4.17.0 (forced past etcd here; the demo overrides it)."""
    state = tmp_path_factory.mktemp("dry-run-done") / "demo.db"
    shutil.copy(demo, state)
    done = cvo("upgrade", "--to", MINOR, "--force", "--state", str(state), "--operators", DEMO_OPERATORS)
    assert done.returncode == 0, done.stderr
    return state


def document(state: Path, *extra: str, code: int) -> dict[str, Any]:
    done = cvo("upgrade", "--to", MINOR, "--dry-run", "-o", "json", "--state", str(state), *extra)
    assert done.returncode == code, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    assert list(doc) == KEYS, list(doc)
    for blocker in doc["blockers"]:
        assert list(blocker["override"]) == OVERRIDE_KEYS
    return doc


def test_the_document_has_one_shape_blocked_forced_and_with_nothing_to_do(demo: Path, upgraded: Path) -> None:
    blocked = document(demo, code=1)
    assert (blocked["verdict"], blocked["update"], len(blocked["preconditions"])) == ("blocked", "minor update", 4)
    forced = document(demo, "--force", code=0)
    assert (forced["verdict"], forced["forced"]) == ("proceed-with-warnings", True)
    assert forced["blockers"] == blocked["blockers"]  # who holds minor updates back, whether or not forced

    done = document(upgraded, code=0)  # the release the cluster runs: was {"ok", "completed", "swept", …}
    assert (done["current"], done["target"], done["update"], done["verdict"]) == ("4.17.0", "4.17.0", "none",
                                                                                   "nothing-to-do")
    assert (done["preconditions"], done["blocked"], done["releaseAccepted"]) == ([], False, None)
    assert done["message"] == "the cluster already runs 4.17.0: nothing to do ('cvo reconcile' re-applies it)"
    assert done["image"].endswith("/payloads/demo-4.17.0")

    by_version = cvo("upgrade", "--to", "4.17.0", "--dry-run", "-o", "json", "--state", str(upgraded))
    assert by_version.returncode == 0, by_version.stderr  # oc's "info: Cluster is already at version", as data
    doc = json.loads(by_version.stdout)
    assert list(doc) == KEYS
    assert (doc["verdict"], doc["current"], doc["message"]) == ("nothing-to-do", "4.17.0",
                                                                "info: Cluster is already at version 4.17.0")
    assert doc["blockers"][0]["override"]["force"][:4] == ["cvo", "upgrade", "--to", "4.17.0"]  # as it was asked


def test_the_override_is_the_exact_command_and_running_it_lets_the_upgrade_through(demo: Path,
                                                                                   tmp_path: Path) -> None:
    state = tmp_path / "demo.db"
    shutil.copy(demo, state)
    [blocker] = document(state, code=1)["blockers"]
    override = blocker["override"]
    assert override["action"] == "override"
    assert override["command"] == ["cvo", "override", "etcd", "Upgradeable=True", "--reason", "AdminAcknowledged",
                                   "--message", "upgrade reviewed", "--state", str(state)]
    assert override["force"] == ["cvo", "upgrade", "--to", MINOR, "--force", "--state", str(state)]
    ran = cvo(*override["command"][1:])  # as given: no flag added
    assert ran.returncode == 0, ran.stderr
    assert document(state, code=0)["verdict"] == "proceed-with-warnings"  # only the unset channel's warning left


def test_the_readmes_jq_examples_work_before_and_after_the_demos_update(demo: Path, upgraded: Path,
                                                                          tmp_path: Path) -> None:
    """Run exactly the README's lines (``cvo`` being this checkout's, the cluster the default one)."""
    readme = (REPO / "README.md").read_text()
    examples = [line for line in readme.splitlines() if re.match(r"cvo upgrade .*--dry-run -o json \| jq ", line)]
    assert len(examples) >= 2, examples
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cvo").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m cvo "$@"\n')
    (bin_dir / "cvo").chmod(0o755)
    outputs = []
    for state in (demo, upgraded):
        env = {**ENV, "PATH": f"{bin_dir}:{ENV['PATH']}", "CVO_STATE": str(state)}
        for line in examples:
            done = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=REPO, env=env, capture_output=True,
                                  text=True, timeout=300, check=False)
            assert done.returncode in (0, 1), f"{line}\n{done.stderr}"  # 1: the dry run's own "blocked"
            assert "jq: error" not in done.stderr, f"{line}\n{done.stderr}"
            outputs.append(done.stdout)
    assert '"verdict": "blocked"' in outputs[0] and "OperatorConditionUpgradeable-" in outputs[0]
    assert outputs[1].startswith("'cvo' 'override' 'etcd' 'Upgradeable=True'")
    assert '"verdict": "nothing-to-do"' in outputs[2]  # etcd still holds minor updates back (forced past here)
    assert outputs[3] == outputs[1]  # the default cluster: no --state in the command


def test_on_an_80_column_terminal_the_text_fits_and_its_commands_pasted_run(demo: Path, tmp_path: Path) -> None:
    state = tmp_path / "demo.db"
    shutil.copy(demo, state)
    shown = run_on_pty(["upgrade", "--to", MINOR, "--dry-run", "--state", str(state)], columns=80, rows=24,
                       env={"PYTHONPATH": str(REPO)}, cwd=str(REPO))
    assert shown.code == 1, shown.output
    lines = shown.output.replace("\r\n", "\n").splitlines()
    for line in lines:  # longer only when it is one word that cannot be broken (the URL)
        assert len(line) <= 80 or (line.startswith("    url:") and len(line.split()) == 2), line
    at = next(i for i, line in enumerate(lines) if line.startswith("    override: "))
    pasted = [lines[at].removeprefix("    override: ")]
    while pasted[-1].endswith("\\"):
        at += 1
        pasted.append(lines[at])
    assert len(pasted) > 1  # it did not fit one line at 80 columns: broken, not cut with "…"
    command = "\n".join(pasted)
    assert tuple(shlex.split(command.replace("\\\n", ""))) == unblock(
        "OperatorConditionUpgradeable-openshift-etcd-operator.etcd", ["--to", MINOR], ["--state", str(state)]).command
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cvo").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m cvo "$@"\n')
    (bin_dir / "cvo").chmod(0o755)
    ran = subprocess.run(["bash", "-c", command], cwd=REPO, env={**ENV, "PATH": f"{bin_dir}:{ENV['PATH']}"},
                         capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr
    assert document(state, code=0)["verdict"] == "proceed-with-warnings"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30),
                min_size=1, max_size=12),
       st.integers(min_value=30, max_value=120))
def test_shell_lines_fit_and_paste_back_into_the_same_argv(argv: list[str], width: int) -> None:
    lines = shell_lines(argv, width, "    override: ", " " * 18)
    assert lines[0].startswith("    override: ")
    pasted = "\n".join(lines).removeprefix("    override: ").replace("\\\n", "")  # as the shell reads it
    assert shlex.split(pasted) == argv
    for line in lines:  # too long only when it holds one quoted word (a plain one is broken inside)
        body = line.removesuffix("\\").strip().removeprefix("override: ")
        assert len(line) <= width or len(shlex.split(body)) == 1, lines
    assert not lines[-1].endswith("\\")
