"""docs/kind.md's walkthrough on the local cluster that acts, run as a person runs it.

The commands of the section "Here, without kind" run in one bash session, in their order, from the
repository root: ``hack/kwok-cluster.sh up`` (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok), ``cvo bootstrap``, ``cvo sim-operators`` in the background, install, upgrades, the
blocked minor upgrade, the override, ``kill %1``, ``hack/kwok-cluster.sh down``.  A line's
``# exits N`` comment is its expected exit status (0 otherwise).  Changed, and only these: the simulated
operators' delays (2 s), the blocked upgrade's ``--timeout`` (20 s) and where sim-operators' log goes.
Before the clean-up, a check reads the cluster: the ClusterVersion's history, and every Deployment of
the payload really rolled out by the controllers and kwok (observed generation, updated and available
replicas), its Pods Running (a Job's Succeeded).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from .conftest import E2E_TIMEOUT

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "kind.md"
SECTION = "## Here, without kind: a local cluster that acts"
EXITS = re.compile(r"#\s*exits (\d+)")

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(E2E_TIMEOUT)]

CHECK = textwrap.dedent('''\
    """Run by the walkthrough before its clean-up: the cluster's state after the last upgrade."""
    import os, sys
    from kubernetes import client, config

    config.load_kube_config(config_file=os.environ["KUBECONFIG"])
    api = client.ApiClient()
    cv = client.CustomObjectsApi(api).get_cluster_custom_object("config.openshift.io", "v1", "clusterversions", "version")
    history = [(h["version"], h["state"]) for h in cv["status"]["history"]]
    assert history == [("4.17.0", "Completed"), ("4.16.3", "Completed"), ("4.16.0", "Completed")], history
    deployments = [d for d in client.AppsV1Api(api).list_deployment_for_all_namespaces().items
                   if d.metadata.namespace.startswith("openshift-")]
    assert deployments, "no Deployment of the payload"
    for d in deployments:
        s, want = d.status, d.spec.replicas
        where = f"deployment {d.metadata.namespace}/{d.metadata.name}"
        assert s.observed_generation == d.metadata.generation, (where, s)
        assert s.updated_replicas == want and s.available_replicas == want, (where, s)
    pods = [p for p in client.CoreV1Api(api).list_pod_for_all_namespaces().items
            if p.metadata.namespace.startswith("openshift-")]
    def job_pod(p):
        return any(o.kind == "Job" for o in p.metadata.owner_references or ())

    wrong = [(p.metadata.namespace, p.metadata.name, p.status.phase) for p in pods
             if p.status.phase != ("Succeeded" if job_pod(p) else "Running")]
    assert not wrong, wrong
    jobs = [j for j in client.BatchV1Api(api).list_job_for_all_namespaces().items
            if j.metadata.namespace.startswith("openshift-")]
    assert all(j.status.succeeded for j in jobs), [(j.metadata.name, j.status) for j in jobs]
    print(f"walkthrough check: {len(deployments)} Deployments rolled out, {len(jobs)} Jobs complete, "
          f"{len(pods)} Pods Running or (a Job's) Succeeded")
''')


def walkthrough_commands() -> list[str]:
    """The ``$ `` lines of the section's first console block."""
    text = DOC.read_text()
    assert SECTION in text, f"{DOC} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    commands = [line[2:] for line in block.splitlines() if line.startswith("$ ")]
    assert commands, f"no command in {SECTION!r}"
    return commands


def script(commands: list[str], tmp: Path) -> str:
    operators = yaml.safe_load((REPO / "payloads" / "demo-operators.yaml").read_text())
    for behaviour in operators.values():
        if isinstance(behaviour, dict) and "delay" in behaviour:
            behaviour["delay"] = "2s"
    quick = tmp / "demo-operators-2s.yaml"
    quick.write_text(yaml.safe_dump(operators))
    check = tmp / "check.py"
    check.write_text(CHECK)
    substitutions = {
        "payloads/demo-operators.yaml": str(quick),
        "--timeout 2m": "--timeout 20s",
        "> sim-operators.log": f"> {tmp / 'sim-operators.log'}",
    }
    lines = [
        "set -u",
        # Whatever happens, nothing is left running: the background sim-operators and the cluster.
        "trap 'kill $(jobs -p) 2>/dev/null; hack/kwok-cluster.sh down >/dev/null 2>&1' EXIT",
    ]
    for number, command in enumerate(commands, 1):
        for old, new in substitutions.items():
            command = command.replace(old, new)
        expected = int(m.group(1)) if (m := EXITS.search(command)) else 0
        if command.startswith("kill %1"):
            lines.append(f'{shlex.quote(sys.executable)} {shlex.quote(str(check))} || exit 101')
        lines.append(f"printf '%s\\n' {shlex.quote(f'+ {command}')}")
        lines.append(command)
        lines.append(
            f'rc=$?; [ "$rc" -eq {expected} ] || {{ echo "walkthrough: step {number} exited $rc, not {expected}: '
            f'{shlex.quote(command)}" >&2; exit 100; }}'
        )
    return "\n".join(lines) + "\n"


def test_every_step_of_the_kind_walkthrough_on_the_local_cluster(tmp_path: Path) -> None:
    commands = walkthrough_commands()
    assert commands[2].startswith("export KUBECONFIG=$(hack/kwok-cluster.sh up)"), commands
    assert commands[-1] == "hack/kwok-cluster.sh down", commands
    env = {**os.environ, "CVO_KWOK_CLUSTER_DIR": str(tmp_path / "cluster-state")}
    env.pop("KUBECONFIG", None)
    res = subprocess.run(["bash", "-c", script(commands, tmp_path)], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=E2E_TIMEOUT - 60)
    sim_log = tmp_path / "sim-operators.log"
    detail = (f"--- stdout ---\n{res.stdout[-6000:]}\n--- stderr ---\n{res.stderr[-4000:]}\n--- sim-operators.log ---\n"
              + (sim_log.read_text()[-3000:] if sim_log.exists() else "(none)"))
    assert res.returncode == 0, detail
    out = res.stdout
    assert "customresourcedefinition.apiextensions.k8s.io/clusterversions.config.openshift.io created" in out, detail
    assert "Verdict: BLOCKED" in out, detail
    assert "operatorcondition openshift-etcd-operator/etcd: spec.overrides Upgradeable=True (MigrationVerified)" in out
    assert "walkthrough check: " in out, detail
    assert "4.17.0" in out.split("+ cvo status", 1)[1], detail
    assert "clusteroperator/etcd: Available=True" in sim_log.read_text()
    # down removed the cluster's state: nothing is left running
    assert not (tmp_path / "cluster-state" / "pid").exists()
