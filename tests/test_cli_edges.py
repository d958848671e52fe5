"""Issue 14, the CLI's edges: -v adds up on both sides of the command, every write names its cluster, installing
or upgrading to the current release, bad kubeconfigs, a moved release directory, usage examples in every
--help.  Through real processes (and the parser in process where that is what is tested)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import PAYLOADS, REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.cli.main import build_parser

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
