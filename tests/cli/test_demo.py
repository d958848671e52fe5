"""make demo (hack/demo.sh) reads as a story: each step narrated before it runs, an expected non-zero exit
shown as the expected outcome, piped output one line per meaningful event, the dropped operator marked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import REPO


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """``make demo``, piped (no terminal: the log lines are the progress), at a high DEMO_SPEED."""
    cvo = Path(sys.executable).parent / "cvo"
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR")}
    work = tmp_path_factory.mktemp("demo")
    env.update(CVO=str(cvo), DEMO_STATE=str(work / "demo.db"), DEMO_SPEED="6000", DEMO_WORK=str(work / "images"))
    return subprocess.run(["bash", str(REPO / "hack" / "demo.sh")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_demo_tells_its_story(demo: subprocess.CompletedProcess[str]) -> None:
    done = demo
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    lines = done.stdout.splitlines()
    steps = [i for i, line in enumerate(lines) if re.match(r"^\d+\. \S", line)]
    commands = [i for i, line in enumerate(lines) if line.startswith("$ cvo ")]
    assert len(steps) == 17
    for i in commands:  # every command is introduced by a narrated step before it
        assert any(s < i for s in steps)
    for s in steps:  # every step is one line, then what it runs
        assert lines[s + 1].startswith("$ "), lines[s:s + 2]
    assert '--message "storage migration checked by the admin"' in done.stdout
    # the update graph: built, served on 127.0.0.1, a channel set, the recommended updates listed, taken by version
    assert re.search(r"^  Serving \S+graph\.json \(3 releases; .*\) at http://127\.0\.0\.1:\d+/api/upgrades_info/v1/graph$",
                     done.stdout, re.M)
    assert re.search(r"^Channel: stable-4\.16 .*\n\nRecommended updates:\n\n  VERSION     IMAGE\n  4\.16\.3      oci:\S+@sha256:",
                     done.stdout, re.M)
    assert re.search(r"^\$ cvo upgrade --to 4\.16\.3 ", done.stdout, re.M)
    # 4.16.3's metadata names no channels: the graph's node for it does (mergeReleaseMetadata), stable-4.17 among
    # them, so the channel moves there without --allow-explicit-channel
    assert "Channel: stable-4.16 (available channels: fast-4.17, stable-4.16, stable-4.17)\nNo updates available." \
        in done.stdout
    assert re.search(r"^\$ cvo upgrade channel stable-4\.17 --state \S+$", done.stdout, re.M)
    assert not re.search(r"^\$ cvo .*--allow-explicit-channel", done.stdout, re.M)
    assert re.search(r"^  4\.17\.0      oci:\S+@sha256:", done.stdout, re.M)
    assert "(exit 1, as expected: the upgrade is blocked" in done.stdout
    # the releases are signed images: 4.16.3 verified, unsigned images refused (twice), the rebuild forced
    assert done.stdout.count("$ cvo release new --from-dir ") == 4
    assert done.stdout.count("(exit 1, as expected: an unsigned image is refused)") == 2
    assert out.count("The update cannot be verified: unable to verify sha256:") == 2
    assert re.search(r"^\$ cvo upgrade --to-image oci:\S+@sha256:[0-9a-f]{64} .*--force", done.stdout, re.M)
    assert "Error" not in out and "(ignored)" not in out and "Traceback" not in out
    assert "condition.changed" not in out  # -v detail, not the story
    # the nodes: the worker pool goes on after the control plane, worker-0's drain held by the database's budget
    # (the pool with it), the paused infra pool left out; the admin deletes the budget and unpauses the pool
    held = done.stdout[done.stdout.index("$ cvo upgrade status --details nodes"):]
    assert re.search(r"^Update to 4\.16\.3 successfully completed at \S+ \(duration: \d+m\)$", held, re.M)
    assert "\ninfra         Excluded      0% (0/2)     2 Available, 0 Progressing, 0 Draining, 2 Excluded\n" in held
    assert "\nworker        Progressing   0% (0/3)     2 Available, 1 Progressing, 1 Draining\n" in held
    assert "\nworker-0   Progressing   Draining   4.16.0    +10m   \n" in held
    assert "Outdated nodes in a paused pool 'infra' will not be updated" in held
    assert re.search(r"^Forecast: +\S+ remaining, done at \S+ when pool worker is done \(3 nodes to go; control plane "
                     r"done\); paused pool infra not counted", held, re.M)
    acted = held[held.index("$ cvo delete pdb db -n demo"):]
    assert acted.startswith('$ cvo delete pdb db -n demo --state ')
    assert '\npoddisruptionbudget.policy "db" deleted\n' in acted
    assert "\n$ cvo patch mcp infra --type merge -p '{\"spec\":{\"paused\":false}}' --state " in acted
    assert "\nmachineconfigpool.machineconfiguration.openshift.io/infra patched\n" in acted
    after = acted[acted.index("$ cvo upgrade status --state"):]
    assert after.splitlines()[1] == "The cluster is not updating."
    status = done.stdout[done.stdout.rindex("$ cvo status"):]
    assert re.search(r"^openshift-samples +4\.16\.3 .*not in the current release 4\.17\.0", status, re.M)
    assert re.search(r"^etcd +4\.17\.0 ", status, re.M)


LOG_LINE = re.compile(r"^\[(info|warning|debug) *\] (\S+(?: [a-z]+)*)")


def test_the_piped_demo_is_one_line_per_meaningful_event(demo: subprocess.CompletedProcess[str]) -> None:
    """No simulator chatter ("operator rolling out": the sweep's wait for that operator says it), no reconcile
    repeated every interval while the blocked upgrade waits, no wait said twice in a sweep."""
    assert demo.returncode == 0, (demo.stdout + demo.stderr)[-3000:]
    lines = (demo.stdout + demo.stderr).splitlines()
    events = [m.group(2).strip() for line in lines if (m := LOG_LINE.match(line))]
    assert "operator rolling out" not in events
    assert not [line for line in lines if line.startswith("[debug")]
    assert len(events) < 150, len(events)  # 116 today: install, patch, the blocked wait, the minor update, the rebuild
    # the only reconciles are the blocked upgrade's, of 4.16.3 every interval while it waits: said once
    assert demo.stderr.count("mode=reconcile") == 1
    sweeps = re.split(r"^\[info *\] sweep\.started ", demo.stderr, flags=re.M)
    # install 4.16.0, update 4.16.3, the reconcile while blocked, update 4.17.0, the forced rebuild
    assert len(sweeps) == 1 + 5
    for sweep in sweeps:
        waits = re.findall(r"^\[info *\] task\.waiting +message='([^']*)'", sweep, re.M)
        assert len(waits) == len(set(waits)), [w for w in waits if waits.count(w) > 1]


def test_the_chatter_is_there_with_v(tmp_path: Path) -> None:
    """What the piped demo leaves out is one -v away."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR")}
    argv = [sys.executable, "-m", "cvo", "install", str(REPO / "payloads" / "demo-4.16.0"), "--state", "none",
            "--speed", "6000", "--operators", str(REPO / "payloads" / "demo-operators.yaml")]
    quiet = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    loud = subprocess.run([*argv, "-v"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == loud.returncode == 0, quiet.stderr + loud.stderr
    assert "operator rolling out" not in quiet.stderr
    assert loud.stderr.count("operator rolling out") >= 15  # every operator of the release
    assert "condition.changed" in loud.stderr and "condition.changed" not in quiet.stderr
