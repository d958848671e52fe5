"""Fuzz targets of ``cvo upgrade status``'s pools, nodes and rendered configs: name -> (hypothesis strategy,
target), merged into fuzz_targets.TARGETS.  The objects carry the machine-config daemon's annotations and the
values it writes, in odd combinations and shapes (a selector with an unknown operator, an annotation that is a
list, a time that is none, a pool twice)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.support.upgrade_status_objects import at, co, cv, entry

NEW, OLD = "4.16.3", "4.16.0"
WORDS = ["master", "worker", "infra", "", "Done", "Working", "Degraded", "Rebooting", "Unreconcilable",
         f"rendered-worker-{NEW}", f"rendered-worker-{OLD}", f"rendered-master-{NEW}", "drain-x", "uncordon-x",
         "True", "False", "Ready", "DiskPressure", "In", "NotIn", "Exists", "Near", "10%", NEW, OLD]
KEYS = ["machineconfiguration.openshift.io/" + k for k in (
    "currentConfig", "desiredConfig", "state", "reason", "desiredDrain", "lastAppliedDrain", "desiredImage",
    "currentImage")]
word = st.sampled_from(WORDS)
any_value = st.recursive(st.none() | st.booleans() | st.integers(-2, 2) | word,
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(word, inner, max_size=3),
                         max_leaves=6)
node_objects = st.builds(
    lambda name, labels, notes, conds, unsched: {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels, "annotations": notes},
        "spec": {"unschedulable": unsched}, "status": {"conditions": conds}},
    word, st.dictionaries(st.sampled_from(["node-role.kubernetes.io/" + w for w in WORDS[:3]]), word, max_size=2),
    st.dictionaries(st.sampled_from(KEYS), word, max_size=6) | any_value,
    st.lists(st.fixed_dictionaries({"type": word, "status": word}, optional={
        "lastTransitionTime": st.sampled_from([at(), at(minutes=29), "0001-01-01T00:00:00Z", "x"])}), max_size=3),
    st.booleans() | any_value)
pool_objects = st.builds(
    lambda name, selector, paused, config, mu: {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool", "metadata": {"name": name},
        "spec": {"nodeSelector": selector, "paused": paused, "configuration": {"name": config}, "maxUnavailable": mu}},
    word, st.none() | st.fixed_dictionaries({}, optional={
        "matchLabels": st.dictionaries(st.sampled_from(["node-role.kubernetes.io/" + w for w in WORDS[:3]]), word),
        "matchExpressions": st.lists(st.fixed_dictionaries({"key": word, "operator": word},
                                                           optional={"values": st.lists(word, max_size=2)}),
                                     max_size=2)}) | any_value,
    st.booleans() | any_value, word, any_value)
config_objects = st.builds(
    lambda name, version: {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                           "metadata": {"name": name, "annotations": {
                               "machineconfiguration.openshift.io/release-image-version": version}}},
    word, word | any_value)


def machines_target(pools: list[Any], nodes: list[Any], configs: list[Any], progressing: bool) -> None:
    """The views of pools, nodes and configs of any shape, and the status over them: text in every detail and
    data, or oc's one-line error; never an exception."""
    import orjson

    from cvo.objects import MachineConfig, MachineConfigPool, Node, Refused
    from cvo.status.godur import parse_time
    from cvo.status.upgrade_nodes import Machines
    from cvo.status.upgrade_status import StatusUnavailable, assess
    from cvo.status.upgrade_text import render, to_data

    def views(cls: Any, objects: list[Any]) -> list[Any]:
        out = []
        for obj in objects:
            try:
                out.append(cls.read(obj))
            except Refused as err:
                assert "\n" not in str(err)
        return out

    machines = Machines(views(MachineConfigPool, pools), views(Node, nodes), views(MachineConfig, configs))
    history = [entry(NEW, "Partial", at()), entry(OLD, "Completed", at(days=-9), at(days=-9, minutes=50))]
    cos = [co("machine-config", OLD, progressing="True")]
    now = parse_time(at(minutes=30))
    assert now is not None
    try:
        status = assess(cv(NEW, history, progressing="True" if progressing else "False"), cos, now, "", machines)
    except StatusUnavailable as err:
        assert "\n" not in str(err)
        return
    for details in ("none", "all", "nodes"):
        render(status, details)
    orjson.dumps(to_data(status))


any_shape = st.recursive(st.none() | st.booleans() | st.integers(-2, 2) | word,
                         lambda inner: st.lists(inner, max_size=2) | st.dictionaries(word, inner, max_size=2),
                         max_leaves=4)
TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {
    "machines": (st.tuples(st.lists(pool_objects | any_shape, max_size=4), st.lists(node_objects | any_shape, max_size=6),
                           st.lists(config_objects | any_shape, max_size=4), st.booleans()),
                 lambda args: machines_target(*args)),
}
