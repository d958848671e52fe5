"""ClusterOperators derived from workloads (cvo/operators/workloads.py): the annotation's reader, the status derived
by kstatus's rules, and the example release (payloads/apps-*) installed and upgraded on the embedded cluster, where
the simulated operators play the deployment controller for those workloads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from cvo.operators.workloads import derive
from cvo.payload.manifest import manifests_from_headers, parse_headers
from cvo.payload.workloads import (
    STATUS_FROM,
    VERSION_FROM,
    WorkloadRef,
    WorkloadSpec,
    WorkloadSpecError,
    spec_of,
)
from tests.support.helpers import PAYLOADS, REPO

WEB = WorkloadRef("Deployment", "shop", "web")
API = WorkloadRef("Deployment", "shop", selector=(("app", "api"),))
SPEC = WorkloadSpec("shop", (WEB, API), "label:app.kubernetes.io/version", (("operator", "1.1.0"),))


def deployment(name: str, version: str, *, replicas: int = 1, ready: int | None = None, available: bool = True,
               deadline: str = "", generation: int = 1) -> dict[str, Any]:
    ready = replicas if ready is None else ready
    conditions = [{"type": "Available", "status": "True" if available else "False"}]
    if deadline:
        conditions.append({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                           "message": deadline})
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop", "generation": generation,
                         "labels": {"app": name, "app.kubernetes.io/version": version}},
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": ready, "readyReplicas": ready,
                       "availableReplicas": ready, "conditions": conditions}}


def conditions(derived: Any) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.message) for c in derived.conditions}


def test_every_workload_rolled_out_at_one_version_reports_the_declared_versions() -> None:
    derived = derive(SPEC, {WEB: [deployment("web", "1.1.0", replicas=2)], API: [deployment("api", "1.1.0")]})
    assert derived.versions == {"operator": "1.1.0"}
    assert conditions(derived) == {"Available": ("True", "All workloads serve"),
                                   "Progressing": ("False", "All workloads rolled out"), "Degraded": ("False", "")}


def test_a_rollout_in_progress_keeps_the_old_versions_and_stays_available() -> None:
    derived = derive(SPEC, {WEB: [deployment("web", "1.1.0", replicas=2, ready=1)], API: [deployment("api", "1.1.0")]})
    assert derived.versions is None
    assert conditions(derived)["Progressing"] == ("True", "deployment shop/web: Updated: 1/2")
    assert conditions(derived)["Available"][0] == "True"  # its Available condition says old pods serve


def test_a_workload_that_never_rolls_out_is_unavailable_with_its_own_message() -> None:
    message = 'ReplicaSet "web-1" has timed out progressing.'
    derived = derive(SPEC, {WEB: [deployment("web", "1.1.0", ready=0, available=False, deadline=message)],
                            API: [deployment("api", "1.1.0")]})
    assert conditions(derived)["Available"] == ("False", f"deployment shop/web: {message}")
    assert conditions(derived)["Degraded"] == ("True", f"deployment shop/web: {message}")
    assert derived.versions is None


def test_missing_workloads_and_versions_that_are_not_versions() -> None:
    derived = derive(SPEC, {WEB: [deployment("web", "latest")], API: []})
    assert conditions(derived)["Available"] == ("False", "deployment shop/app=api: not found")
    assert conditions(derived)["Degraded"][1] == ("deployment shop/app=api: not found; deployment shop/web: "
                                                  "label:app.kubernetes.io/version is 'latest', not a version")
    assert derived.versions is None


def test_workloads_at_two_versions_report_none() -> None:
    derived = derive(SPEC, {WEB: [deployment("web", "1.1.0")], API: [deployment("api", "1.0.0")]})
    assert derived.versions is None


def manifest(annotations: dict[str, str]) -> Any:
    doc = ("apiVersion: config.openshift.io/v1\nkind: ClusterOperator\nmetadata:\n  name: shop\n  annotations:\n"
           + "".join(f"    {k}: {v!r}\n" for k, v in annotations.items())
           + "status:\n  versions:\n  - {name: operator, version: 1.0.0}\n")
    path = "release-manifests/0000_50_shop_03_co.yaml"
    (m,) = manifests_from_headers(parse_headers(doc.encode(), path), "0000_50_shop_03_co.yaml", path)
    return m


@pytest.mark.parametrize(("value", "why"), [
    ("[", "not YAML"),
    ("[]", "must be a non-empty list"),
    ("- 5", "each entry must be a map"),
    ("- {kind: Pod, namespace: a, name: b}", "kind 'Pod' is not one of"),
    ("- {kind: Deployment, name: b}", "Deployment needs a namespace"),
    ("- {kind: Deployment, namespace: a}", "needs exactly one of name and selector"),
    ("- {kind: Deployment, namespace: a, name: b, selector: {x: y}}", "needs exactly one of name and selector"),
    ("- {kind: Deployment, namespace: a, selector: {x: 1}}", "selector must be a non-empty map of labels"),
])
def test_an_unusable_annotation_is_one_error_naming_the_manifest(value: str, why: str) -> None:
    with pytest.raises(WorkloadSpecError) as err:
        spec_of(manifest({STATUS_FROM: value}))
    assert why in str(err.value) and "ClusterOperator shop" in str(err.value)


def test_version_from_must_be_a_label_an_annotation_or_the_image() -> None:
    with pytest.raises(WorkloadSpecError, match="is not label:KEY, annotation:KEY or image"):
        spec_of(manifest({STATUS_FROM: "- {kind: Job, namespace: a, name: b}", VERSION_FROM: "label:"}))
    spec = spec_of(manifest({STATUS_FROM: "- {kind: Job, namespace: a, name: b}", VERSION_FROM: "image"}))
    assert spec is not None and spec.version_from == "image" and spec.versions == (("operator", "1.0.0"),)


@given(st.text(max_size=200))
def test_any_annotation_text_is_a_spec_or_one_error(text: str) -> None:
    try:
        spec_of(manifest({STATUS_FROM: text}))
    except WorkloadSpecError as err:
        assert "\n" not in str(err)


@given(st.recursive(st.none() | st.integers() | st.text(max_size=8),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=10), c, max_size=4),
                    max_leaves=15))
def test_any_workload_shape_derives_a_status(obj: Any) -> None:
    body = obj if isinstance(obj, dict) else {"status": obj}
    derived = derive(SPEC, {WEB: [{"apiVersion": "apps/v1", "kind": "Deployment", **body}], API: []})
    assert {c.type for c in derived.conditions} == {"Available", "Progressing", "Degraded"}


def cvo(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cvo", *args, "--state", str(state)], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_example_release_installs_and_upgrades_on_the_embedded_cluster(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    res = cvo("install", str(PAYLOADS / "apps-1.0.0"), "-o", "json", state=state)
    assert res.returncode == 0, res.stderr
    res = cvo("upgrade", "--to", str(PAYLOADS / "apps-1.1.0"), "-o", "json", state=state)
    assert res.returncode == 0, res.stderr
    res = cvo("get", "-o", "yaml", state=state)
    assert res.returncode == 0, res.stderr
    (shop,) = [o for o in yaml.safe_load(res.stdout)["items"]
               if o["kind"] == "ClusterOperator" and o["metadata"]["name"] == "shop"]
    assert shop["status"]["versions"] == [{"name": "operator", "version": "1.1.0"}]
    assert {c["type"]: c["status"] for c in shop["status"]["conditions"]} == {
        "Available": "True", "Progressing": "False", "Degraded": "False"}


def test_an_unusable_annotation_makes_its_clusteroperator_degraded_with_the_reason() -> None:
    from datetime import UTC, datetime

    from cvo.clock import Clock, run_virtual
    from cvo.cluster.api import co_ref
    from cvo.cluster.embedded.server import SimCluster
    from cvo.operators.workloads import WorkloadReporter

    async def main() -> dict[str, Any]:
        clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
        cluster = SimCluster(clock=clock)
        reporter = WorkloadReporter(cluster, clock, [], {"shop": "x.yaml: ClusterOperator shop: bad"})
        await reporter.start()
        await reporter.stop()
        co = await cluster.get(co_ref("shop"))
        assert co is not None
        return {c["type"]: (c["status"], c["reason"], c["message"]) for c in co["status"]["conditions"]}

    assert run_virtual(main)["Degraded"] == ("True", "InvalidWorkloadReference", "x.yaml: ClusterOperator shop: bad")
