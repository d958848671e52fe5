"""make demo (hack/demo.sh) reads as a story: each step narrated before it runs, an expected non-zero exit
shown as the expected outcome, piped output one line per meaningful event, the dropped operator marked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_the_demo_tells_its_story(tmp_path: Path) -> None:
    cvo = Path(sys.executable).parent / "cvo"
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR")}
    env.update(CVO=str(cvo), DEMO_STATE=str(tmp_path / "demo.db"), DEMO_SPEED="600")
    done = subprocess.run(["bash", str(REPO / "hack" / "demo.sh")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    lines = done.stdout.splitlines()
    steps = [i for i, line in enumerate(lines) if re.match(r"^\d+\. \S", line)]
    commands = [i for i, line in enumerate(lines) if line.startswith("$ cvo ")]
    assert len(steps) == 9
    for i in commands:  # every command is introduced by a narrated step before it
        assert any(s < i for s in steps)
    for s in steps:  # every step is one line, then what it runs
        assert lines[s + 1].startswith("$ "), lines[s:s + 2]
    assert '--message "storage migration checked by the admin"' in done.stdout
    assert "(exit 1, as expected: the upgrade is blocked" in done.stdout
    assert "Error" not in out and "(ignored)" not in out and "Traceback" not in out
    assert "condition.changed" not in out  # -v detail, not the story
    status = done.stdout[done.stdout.rindex("$ cvo status"):]
    assert re.search(r"^openshift-samples +4\.16\.3 .*not in the current release 4\.17\.0", status, re.M)
    assert re.search(r"^etcd +4\.17\.0 ", status, re.M)
