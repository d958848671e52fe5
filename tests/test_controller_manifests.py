"""manifests/controller/: the Deployment's arguments are ones cvo run accepts; two replicas; the Lease Role."""

from __future__ import annotations

from pathlib import Path

import yaml

from cvo.cli.main import build_parser

DIR = Path(__file__).resolve().parent.parent / "manifests" / "controller"


def docs() -> dict[str, dict]:
    out = {}
    for path in sorted(DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            out[doc["kind"]] = doc
    return out


def test_the_deployment_runs_two_replicas_with_flags_cvo_run_parses() -> None:
    deployment = docs()["Deployment"]
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = build_parser("run").parse_args(container["args"])
    assert args.in_cluster and args.listen == "0.0.0.0:9099"
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "cluster-version-operator"


def test_the_lease_role_grants_only_the_lease() -> None:
    role = docs()["Role"]
    assert {r["apiGroups"][0] for r in role["rules"]} == {"coordination.k8s.io"}
    assert {v for r in role["rules"] for v in r["verbs"]} == {"get", "create", "update"}
    assert docs()["Service"]["spec"]["ports"][0]["port"] == 9099
