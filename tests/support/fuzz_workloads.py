"""Fuzz targets for the workload-status readers: the ``release.cvo.dev/status-from-workloads`` annotation
(cvo/payload/workloads.py), kstatus's rules over live workloads of any shape (cvo/objects/rollout.py) and the
ClusterOperator status derived from them (cvo/operators/workloads.py).  Each answer is a spec or one
``WorkloadSpecError`` line, and a status, never an exception."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from cvo.objects.rollout import RolloutStatus, compute
from cvo.operators.workloads import derive
from cvo.payload.manifest import manifests_from_headers, parse_headers
from cvo.payload.workloads import STATUS_FROM, VERSION_FROM, WorkloadSpecError, spec_of

TOKENS = ["- ", "{", "}", "[", "]", ":", ", ", "\n", "  ", "kind", "Deployment", "StatefulSet", "DaemonSet", "Job",
          "Pod", "namespace", "name", "selector", "shop", "web", "app", "'", '"', "5", "null", "~", "&a", "*a"]
VERSION_FROM_VALUES = ["label:app.kubernetes.io/version", "annotation:v", "image", "label:", "x", "", "image:x"]
WORDS = ["Available", "Progressing", "Failed", "Complete", "True", "False", "ProgressDeadlineExceeded",
         "NewReplicaSetAvailable", "1.0.0", "latest", "app.kubernetes.io/version", "OnDelete", ""]
value = st.recursive(st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from(WORDS),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(WORDS) | st.text(max_size=6),
                                                                         c, max_size=4), max_leaves=12)
workload = st.fixed_dictionaries({"apiVersion": st.sampled_from(["apps/v1", "batch/v1", "v1"]),
                                  "kind": st.sampled_from(["Deployment", "StatefulSet", "DaemonSet", "Job", "Pod"])},
                                 optional={"metadata": value, "spec": value, "status": value})


def annotation_target(args: tuple[str, str]) -> None:
    text, version_from = args
    doc = {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
           "metadata": {"name": "shop", "annotations": {STATUS_FROM: text, VERSION_FROM: version_from}},
           "status": {"versions": [{"name": "operator", "version": "1.0.0"}]}}
    path = "release-manifests/0000_50_shop_03_co.yaml"
    (m,) = manifests_from_headers(parse_headers(json.dumps(doc).encode(), path), "0000_50_shop_03_co.yaml", path)
    try:
        spec = spec_of(m)
    except WorkloadSpecError as err:
        assert "\n" not in str(err) and "ClusterOperator shop" in str(err)
        return
    assert spec is not None
    derived = derive(spec, {ref: [] for ref in spec.workloads})
    assert {c.type for c in derived.conditions} == {"Available", "Progressing", "Degraded"}


def rollout_target(obj: dict[str, Any]) -> None:
    assert isinstance(compute(obj).status, RolloutStatus)


TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {
    "workload-annotation": (st.tuples(st.lists(st.sampled_from(TOKENS), max_size=30).map("".join)
                                      | st.text(max_size=60), st.sampled_from(VERSION_FROM_VALUES)),
                            annotation_target),
    "rollout": (workload, rollout_target),
}
