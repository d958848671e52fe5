"""manifests/controller/: the Deployment's arguments are ones cvo run accepts; two replicas; the Lease Role."""

from __future__ import annotations

from pathlib import Path

import yaml

from cvo.cli.main import build_parser

DIR = Path(__file__).resolve().parents[2] / "manifests" / "controller"


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


def test_the_controller_clusterrole_reads_and_writes_only_the_clusterversion_status() -> None:
    """Least privilege for the controller's own machinery (the e2e test proves it sufficient on its own):
    no wildcard, reads of the kinds it watches, and one write, the ClusterVersion's status."""
    role = docs()["ClusterRole"]
    rules = role["rules"]
    assert all("*" not in r["apiGroups"] + r["resources"] + r["verbs"] for r in rules)
    writes = [(g, res, tuple(r.get("resourceNames", ())), v) for r in rules for g in r["apiGroups"]
              for res in r["resources"] for v in r["verbs"] if v not in ("get", "list", "watch")]
    assert writes == [("config.openshift.io", "clusterversions/status", ("version",), "update")]
    reads = {(g, res) for r in rules for g in r["apiGroups"] for res in r["resources"]}
    assert {("config.openshift.io", "clusterversions"), ("config.openshift.io", "clusteroperators"),
            ("operators.coreos.com", "operatorconditions")} <= reads
    binding = docs()["ClusterRoleBinding"]
    sa = docs()["Deployment"]["spec"]["template"]["spec"]["serviceAccountName"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert [(s["kind"], s["name"]) for s in binding["subjects"]] == [("ServiceAccount", sa)]
    assert [(s["kind"], s["name"]) for s in docs()["RoleBinding"]["subjects"]] == [("ServiceAccount", sa)]
