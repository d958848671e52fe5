"""Objects of the wrong shape, from the payload or the cluster: an error naming them, never a Python exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from cvo.cli.main import main
from cvo.cluster.embedded.kinds import crd_problem
from cvo.payload.graph import Mode
from cvo.payload.loader import load_release
from cvo.payload.schema import required_zero_values
from cvo.payload.shapes import object_problem
from cvo.runner.health import check_crd, check_deployment, check_job, check_operator_health
from tests.support.helpers import ReleaseFactory, obj

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")


def crd(spec: Any) -> dict[str, Any]:
    return obj("CustomResourceDefinition", "things.example.com", api="apiextensions.k8s.io/v1", spec=spec)


def co(status: Any) -> dict[str, Any]:
    return obj("ClusterOperator", "foo", api="config.openshift.io/v1", spec={}, status=status)


def deployment(spec: Any) -> dict[str, Any]:
    return obj("Deployment", "foo-operator", "openshift-foo", api="apps/v1", spec=spec)


GOOD_CRD_SPEC = {"group": "example.com", "scope": "Cluster", "names": {"plural": "things", "kind": "Thing"},
                 "versions": [{"name": "v1", "served": True, "storage": True}]}


@pytest.mark.parametrize(("group_kind", "document", "problem"), [
    (CRD, crd({"names": "thing"}), "spec.names must be an object, not a string"),
    (CRD, crd({**GOOD_CRD_SPEC, "versions": 5}), "spec.versions must be a list, not a number"),
    (CRD, crd({**GOOD_CRD_SPEC, "versions": [{"served": True}]}), "spec.versions[0].name is required"),
    (CRD, crd({**GOOD_CRD_SPEC, "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"required": "a"}}}]}),
     "spec.versions[0].schema.openAPIV3Schema.required must be a list, not a string"),
    (CRD, crd(7), "spec must be an object, not a number"),
    (CRD, {**crd(GOOD_CRD_SPEC), "spec": None}, "spec is required"),
    (("config.openshift.io", "ClusterOperator"), co([1, 2]), "status must be an object, not a list"),
    (("config.openshift.io", "ClusterOperator"), co("Never"), "status must be an object, not a string"),
    (("config.openshift.io", "ClusterOperator"), co({"relatedObjects": [{"name": 5}]}),
     "status.relatedObjects[0].name must be a string, not a number"),
    (("apps", "Deployment"), deployment(5), "spec must be an object, not a number"),
    (("apps", "Deployment"), deployment({"replicas": "3"}), "spec.replicas must be an integer, not a string"),
    (("apps", "Deployment"), deployment({"template": {"spec": {"containers": [{"env": [{"name": "A", "value": 1}]}]}}}),
     "spec.template.spec.containers[0].env[0].value must be a string, not a number"),
    (("batch", "Job"), obj("Job", "j", "ns", api="batch/v1", spec={"template": []}),
     "spec.template must be an object, not a list"),
    (("", "ConfigMap"), obj("ConfigMap", "c", "ns", data={"a": 1}), "data.a must be a string, not a number"),
    (("", "Secret"), {**obj("Secret", "s", "ns"), "metadata": {"name": "s", "labels": ["a"]}},
     "metadata.labels must be an object, not a list"),
])
def test_object_problem_names_the_field(group_kind: tuple[str, str], document: dict[str, Any], problem: str) -> None:
    assert object_problem(*group_kind, document) == problem


def test_well_formed_objects_have_no_problem() -> None:
    assert object_problem(*CRD, crd(GOOD_CRD_SPEC)) is None
    assert object_problem("config.openshift.io", "ClusterOperator", co({"versions": [{"name": "operator",
                                                                                        "version": "1"}]})) is None
    assert object_problem("apps", "Deployment", deployment({"replicas": 1, "template": {"spec": {
        "containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"}]}]}}})) is None
    assert object_problem("example.com", "Thing", {"spec": 5, "status": "anything"}) is None  # not a typed kind


def test_crd_problem_checks_types_before_the_rest() -> None:
    assert crd_problem(crd({"names": "thing"})) == "spec.names must be an object, not a string"
    assert crd_problem(crd({**GOOD_CRD_SPEC, "versions": 5})) == "spec.versions must be a list, not a number"
    assert crd_problem({**crd(GOOD_CRD_SPEC), "metadata": {"name": "things.example.com"}}) is None


def test_required_zero_values_skip_malformed_crds(make_release: ReleaseFactory) -> None:
    good = crd({**GOOD_CRD_SPEC, "versions": [{"name": "v1", "storage": True, "schema": {"openAPIV3Schema": {
        "required": ["spec"], "properties": {"spec": {"type": "object"}}}}}]})
    root = make_release({"a.yaml": [crd({"names": "thing"}), {**good, "metadata": {"name": "b"}},
                                    {**crd({**GOOD_CRD_SPEC, "versions": 5}), "metadata": {"name": "c"}},
                                    {**crd({**GOOD_CRD_SPEC, "versions": [{"name": "v1", "schema": {
                                        "openAPIV3Schema": {"required": [1, "x"], "properties": {"x": 5}}}}]}),
                                     "metadata": {"name": "d"}}]})
    release = load_release(root, use_cache=False)
    assert required_zero_values(release.all_manifests) == {("example.com", "Thing"): {"spec": {}}}


@pytest.mark.parametrize(("status", "nested"), [
    ([1, 2], "cluster operator foo has a malformed status: it is a list, not an object"),
    ("Never", "cluster operator foo has a malformed status: it is a string, not an object"),
])
def test_cluster_operator_with_a_malformed_live_status(status: Any, nested: str) -> None:
    error = check_operator_health("foo", (("operator", "1"),), {"status": status}, Mode.UPDATE)
    assert error is not None
    assert (error.reason, error.nested) == ("ClusterOperatorNotAvailable", nested)


@pytest.mark.parametrize("live", [
    {"status": {"conditions": "x", "versions": 5}},
    {"status": {"conditions": [5, {"type": "Available", "status": ["True"], "message": {"a": 1}}], "versions": [1]}},
    {"metadata": "x", "status": {"succeeded": "1", "active": None, "failed": [], "conditions": [{"type": 5}]}},
    {"status": {"conditions": [{"type": "Available", "status": "True"}, {"type": "Degraded", "status": "False"},
                               {"type": "Upgrading", "status": "True", "message": 7}]}},
])
def test_health_checks_read_malformed_live_objects(live: dict[str, Any]) -> None:
    error = check_operator_health("foo", (("operator", "1"),), live, Mode.UPDATE)
    assert error is not None and error.message.startswith("Cluster operator foo is")
    assert check_crd(live) is not None
    assert check_deployment(live) is None
    assert check_job(live) is None


def release_with(make_release: ReleaseFactory, files: dict[str, object]) -> Path:
    ns = obj("Namespace", "openshift-foo")
    return make_release({"0000_10_foo_00_ns.yaml": ns, **files})


@pytest.mark.parametrize(("files", "message"), [
    ({"0000_10_foo_01_crd.yaml": crd({"names": "thing"})},
     'error: Could not update customresourcedefinition "things.example.com" (2 of 2): spec.names must be an '
     "object, not a string"),
    ({"0000_10_foo_01_crd.yaml": crd({**GOOD_CRD_SPEC, "versions": 5})},
     'error: Could not update customresourcedefinition "things.example.com" (2 of 2): spec.versions must be a '
     "list, not a number"),
    ({"0000_10_foo_01_co.yaml": co([1, 2])},
     'error: Could not update clusteroperator "foo" (2 of 2): status must be an object, not a list'),
    ({"0000_10_foo_01_co.yaml": co("Never")},
     'error: Could not update clusteroperator "foo" (2 of 2): status must be an object, not a string'),
    ({"0000_10_foo_01_deployment.yaml": deployment(5),
      "0000_10_foo_02_co.yaml": co({"versions": [{"name": "operator", "version": "4.16.0"}]})},
     'error: Could not update deployment "openshift-foo/foo-operator" (2 of 3): spec must be an object, not a '
     "number"),
])
def test_install_of_a_malformed_manifest_fails_its_task_with_a_message(
        make_release: ReleaseFactory, capsys: pytest.CaptureFixture[str], files: dict[str, object],
        message: str) -> None:
    root = release_with(make_release, files)
    assert main(["lint", str(root)]) == 1
    assert "[malformed-object]" in capsys.readouterr().out
    assert main(["plan", str(root)]) == 0
    capsys.readouterr()
    code = main(["--log-format", "json", "install", str(root), "--state", "none", "--timeout", "10m",
                 "--operators", str(write_operators(root))])
    err = capsys.readouterr().err
    assert code == 1
    errors = [doc["message"] for doc in map(orjson.loads, err.splitlines()) if doc.get("level") == "error"]
    assert message.removeprefix("error: ") in errors  # with --log-format json, errors are JSON documents too
    assert "Traceback" not in err and "Error:" not in err and "object has no attribute" not in err


def write_operators(root: Path) -> Path:
    path = root.parent / "operators.yaml"
    path.write_text("default: {delay: 10s}\n")
    return path
