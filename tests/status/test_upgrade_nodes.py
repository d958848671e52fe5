"""``cvo upgrade status``'s pools and nodes (oc's workerpool.go) and alert insights (alerts.go), beyond oc's
examples: each phase and assessment, the reasons a node is unavailable, odd shapes, and the command's flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.cli.main import main
from cvo.monitoring.answers import Alert
from cvo.objects import MachineConfig, MachineConfigPool, Node
from cvo.objects.machineconfigpool import LabelSelector
from cvo.status.godur import parse_time
from cvo.status.upgrade_alerts import alert_insights
from cvo.status.upgrade_nodes import Machines, selector_matches
from cvo.status.upgrade_status import StatusUnavailable, UpgradeStatus, assess
from cvo.status.upgrade_text import render, to_data
from tests.support.fuzz_machines import config_objects, node_objects, pool_objects
from tests.support.machines import node, pool, rendered
from tests.support.upgrade_status_objects import at, co, cv, entry

OLD, NEW = "4.16.0", "4.16.3"


def now_at(**kw: float) -> int:
    ns = parse_time(at(**kw))
    assert ns is not None
    return ns


def cluster(progressing: str = "True", done: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An update from OLD to NEW begun at T0; the operators updated when ``done``, else one still updating."""
    history = [entry(NEW, "Completed" if done else "Partial", at(), at(minutes=40) if done else None),
               entry(OLD, "Completed", at(days=-9), at(days=-9, minutes=50))]
    cos = [co("etcd", NEW), co("machine-config", NEW if done else OLD, progressing="False" if done else "True",
                               progressing_since=at(minutes=20))]
    return cv(NEW, history, progressing=progressing), cos


def machines(pools: list[dict[str, Any]], nodes: list[dict[str, Any]],
             configs: list[dict[str, Any]] | None = None) -> Machines:
    configs = configs if configs is not None else [rendered(p, v) for p in ("master", "worker", "infra")
                                                   for v in (OLD, NEW)]
    return Machines([MachineConfigPool.read(p) for p in pools], [Node.read(n) for n in nodes],
                    [MachineConfig.read(c) for c in configs])


def status_of(m: Machines, now: int | None = None, **kw: Any) -> UpgradeStatus:
    cv_, cos = cluster(**kw)
    return assess(cv_, cos, now if now is not None else now_at(minutes=30), "", m)


def rows(status: UpgradeStatus, name: str) -> dict[str, tuple[str, str, str, str]]:
    """Each node of pool ``name``: (assessment, phase, version, estimate)."""
    from cvo.status.upgrade_nodes import ASSESSMENT_NAMES, PHASE_NAMES

    assert status.pools is not None
    pools = [status.pools.control_plane, *status.pools.workers]
    found = next(p for p in pools if p is not None and p.name == name)
    return {n.name: (ASSESSMENT_NAMES[n.assessment], PHASE_NAMES[n.phase], n.version or "?", n.estimate)
            for n in found.nodes}


# --- phases and assessments -------------------------------------------------------------------------------


def test_each_phase_of_a_node_as_oc_names_it() -> None:
    m = machines([pool("master", NEW), pool("worker", NEW)], [
        node("m-updated", "master", NEW),
        node("m-drain", "master", OLD, NEW, state="Working", drain=(f"drain-rendered-master-{NEW}", "uncordon-x")),
        node("m-work", "master", OLD, NEW, state="Working", drain=("uncordon-a", "uncordon-a")),
        node("w-reboot", "worker", OLD, NEW, state="Rebooting"),
        node("w-done-not-drained", "worker", OLD, NEW, state="Done", drain=("uncordon-a", "uncordon-a")),
        node("w-pending", "worker", OLD),
    ])
    status = status_of(m)
    assert rows(status, "master") == {"m-drain": ("Progressing", "Draining", OLD, "+10m"),
                                      "m-work": ("Progressing", "Updating", OLD, "+5m"),
                                      "m-updated": ("Completed", "Updated", NEW, "-")}
    # a node told to update whose daemon still says Done is draining (isNodeDraining: "not had the time")
    assert rows(status, "worker") == {"w-done-not-drained": ("Progressing", "Draining", OLD, "+10m"),
                                      "w-reboot": ("Progressing", "Rebooting", OLD, "+5m"),
                                      "w-pending": ("Outdated", "Pending", OLD, "?")}
    text = render(status)
    assert "\nControl Plane Nodes\nNAME        ASSESSMENT    PHASE      VERSION   EST    MESSAGE\n" in text
    assert "worker        Progressing   0% (0/3)     1 Available, 2 Progressing, 1 Draining\n" in text  # daemons at work


def test_a_paused_pool_excludes_its_nodes_and_says_so() -> None:
    m = machines([pool("master", NEW), pool("worker", NEW, paused=True)],
                 [node("m0", "master", NEW), node("w0", "worker", OLD), node("w1", "worker", NEW)])
    status = status_of(m)
    assert rows(status, "worker") == {"w0": ("Excluded", "Paused", OLD, "-"), "w1": ("Completed", "Updated", NEW, "-")}
    text = render(status)
    assert "worker        Excluded     50% (1/2)    2 Available, 0 Progressing, 0 Draining, 1 Excluded\n" in text
    assert "\nAll control plane nodes successfully updated to 4.16.3\n" in text
    assert "Warning   Update Stalled   Outdated nodes in a paused pool 'worker' will not be updated" in text


def test_a_degraded_node_is_an_error_with_its_name_shortened_in_the_table() -> None:
    m = machines([pool("master", NEW), pool("worker", NEW)], [
        node("m0", "master", NEW),
        node("worker-long-name", "worker", OLD, NEW, state="Degraded",
             reason="failed to drain node: worker-long-name after 1 hour"),
    ])
    status = status_of(m)
    assert rows(status, "worker") == {"worker-long-name": ("Degraded", "Updating", OLD, "?")}
    text = render(status)
    assert "failed to drain node: <node> after 1 hour\n" in text
    assert "worker        Degraded     0% (0/1)     1 Available, 0 Progressing, 0 Draining, 1 Degraded\n" in text
    assert "\n-       Error   Update Stalled   Node worker-long-name is degraded\n" in text


@pytest.mark.parametrize(("minutes_not_ready", "insight"), [(10, True), (2, False)])
def test_a_node_not_ready_for_5_minutes_is_worth_an_insight_on_the_given_clock(minutes_not_ready: int,
                                                                              insight: bool) -> None:
    """layered_node_state.go ``SeriouslyUnavailable`` reads the wall clock; cvo reads ``now``."""
    m = machines([pool("master", NEW), pool("worker", NEW)], [
        node("m0", "master", NEW), node("w0", "worker", OLD, ready="False", ready_since=at(minutes=30 - minutes_not_ready))])
    status = status_of(m)
    assert rows(status, "worker") == {"w0": ("Unavailable", "Pending", OLD, "?")}
    summaries = [i.summary for i in status.insights]
    assert ("Node w0 is not ready" in summaries) is insight
    if insight:
        found = next(i for i in status.insights if i.summary == "Node w0 is not ready")
        assert found.description == ('Node has a Ready!=True condition with Reason "Not ready" and message '
                                     '"kubelet says so"')
        assert "\n10m     Warning   Update Speed   Node w0 is not ready\n" in render(status)


def test_cordoned_and_working_nodes_are_unavailable_without_an_insight() -> None:
    m = machines([pool("master", NEW), pool("worker", NEW)], [
        node("m0", "master", NEW), node("w0", "worker", NEW, unschedulable=True),
        node("w1", "worker", OLD, state="Working")])
    status = status_of(m)
    assert rows(status, "worker") == {"w1": ("Unavailable", "Pending", OLD, "?"), "w0": ("Unavailable", "Updated", NEW, "-")}
    assert [n.message for n in status.pools.workers[0].nodes] == [  # type: ignore[union-attr]  # pools were read
        "Machine Config Daemon is processing the node", "Node is marked unschedulable"]
    assert not [i for i in status.insights if "Node" in i.summary]


def test_more_than_ten_nodes_are_counted_unless_details_nodes() -> None:
    nodes = [node("m0", "master", NEW)] + [node(f"w{i:02d}", "worker", NEW if i < 8 else OLD) for i in range(14)]
    status = status_of(machines([pool("master", NEW), pool("worker", NEW)], nodes))
    short = render(status)
    # the outdated nodes sort first: the four not shown are updated ones
    assert ("...\nOmitted additional 4 Total, 4 Completed, 4 Available, 0 Progressing, 0 Outdated, 0 Draining, "
            "0 Excluded, and 0 Degraded nodes.\nPass along --details=nodes to see all information.\n") in short
    assert short.count("Outdated     Pending") == 6
    full = render(status, "nodes")
    assert "Omitted" not in full and all(f"w{i:02d} " in full for i in range(14))


# --- odd shapes -------------------------------------------------------------------------------------------


def test_selectors_as_apimachinery_reads_them() -> None:
    def sel(**kw: Any) -> LabelSelector:
        return LabelSelector.build(kw)

    labels = {"a": "1", "b": "2"}
    assert selector_matches(sel(), labels) and not selector_matches(None, labels)
    assert selector_matches(sel(matchLabels={"a": "1"}), labels)
    assert not selector_matches(sel(matchLabels={"a": "2"}), labels)
    assert selector_matches(sel(matchExpressions=[{"key": "a", "operator": "In", "values": ["1", "3"]}]), labels)
    assert not selector_matches(sel(matchExpressions=[{"key": "a", "operator": "NotIn", "values": ["1"]}]), labels)
    assert selector_matches(sel(matchExpressions=[{"key": "c", "operator": "NotIn", "values": ["1"]}]), labels)
    assert selector_matches(sel(matchExpressions=[{"key": "b", "operator": "Exists"}]), labels)
    assert not selector_matches(sel(matchExpressions=[{"key": "b", "operator": "DoesNotExist"}]), labels)


def test_nodes_in_no_pool_in_two_pools_and_pools_of_none() -> None:
    m = machines([pool("master", NEW), pool("worker", NEW), pool("infra", NEW), pool("empty", NEW, selector=None)], [
        node("m0", "master", NEW, roles=("worker",)),       # master wins over worker
        node("i0", "infra", OLD, roles=("worker",)),        # a custom pool wins over worker
        node("lost", "nobody", OLD)])                       # in no pool: not shown
    status = status_of(m)
    assert rows(status, "master") == {"m0": ("Completed", "Updated", NEW, "-")}
    assert rows(status, "infra") == {"i0": ("Outdated", "Pending", OLD, "?")}
    text = render(status)
    assert "lost" not in text
    assert "\nworker        Empty                     0 Total\n" in text
    assert "\nempty         Empty                     0 Total\n" in text


def test_a_node_without_annotations_or_whose_config_names_no_release_is_unknown() -> None:
    m = machines([pool("master", NEW), pool("worker", NEW, max_unavailable="10%")],
                 [node("m0", "master", NEW), node("bare", "worker", None, state=""), node("norel", "worker", "x")],
                 [rendered("master", NEW), rendered("worker", None)])
    status = status_of(m)
    assert rows(status, "worker") == {"bare": ("Unavailable", "Pending", "?", "?"),
                                      "norel": ("Outdated", "Pending", "?", "?")}


@pytest.mark.parametrize("value", ["10%", "33%", 0, "0%", -1, "-10%", "5", "abc%", "", 1.5, [1], {"a": 1}])
def test_any_max_unavailable_leaves_the_status_as_without_one(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             value: Any) -> None:
    """oc's status reads no ``maxUnavailable`` (workerpool.go): a percentage, 0, a negative or an invalid one
    (which stops the machine-config controller) shows the pools as they are, through --from-file too."""
    def text(max_unavailable: Any) -> str:
        pools = [pool("master", NEW), pool("worker", NEW, max_unavailable=max_unavailable)]
        nodes = [node("m0", "master", NEW), node("w0", "worker", OLD, NEW, state="Working"), node("w1", "worker", OLD)]
        cv_, cos = cluster(done=True)
        path = tmp_path / "objects.yaml"
        path.write_text(yaml.safe_dump_all([cv_, *cos, *pools, *nodes,
                                            *(rendered(p, v) for p in ("master", "worker") for v in (OLD, NEW))]))
        assert main(["upgrade", "status", "--from-file", str(path), "--details", "all"]) == 0
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        odd = max_unavailable is not None and not isinstance(max_unavailable, int | str)
        assert ("field=spec.maxUnavailable" in err) == odd  # read as absent, one warning naming the field
        return out

    plain = text(None)
    assert "w0" in plain and "w1" in plain
    assert text(value) == plain


def test_a_selector_oc_cannot_read_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = pool("worker", NEW, selector={"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]})
    with pytest.raises(StatusUnavailable, match=r"^failed to get label selector from the pool: worker$"):
        status_of(machines([pool("master", NEW), bad], []))
    cv_, cos = cluster()
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all([cv_, *cos, pool("master", NEW), bad, node("w0", "worker", OLD)]))
    assert main(["upgrade", "status", "--from-file", str(path)]) != 0
    err = capsys.readouterr().err
    assert err == "error: failed to get label selector from the pool: worker\n"


# --- an update of the worker pools only ---------------------------------------------------------------


def test_outdated_worker_pools_keep_the_status_shown_after_the_control_plane_is_done() -> None:
    nodes = [node("m0", "master", NEW), node("w0", "worker", NEW), node("w1", "worker", OLD, NEW, state="Working")]
    status = status_of(machines([pool("master", NEW), pool("worker", NEW)], nodes), progressing="False", done=True)
    text = render(status)
    assert text.startswith("= Control Plane =\nUpdate to 4.16.3 successfully completed at 2024-03-01T10:40:00Z "
                           "(duration: 40m)\n\nAll control plane nodes successfully updated to 4.16.3\n\n"
                           "= Worker Upgrade =\n")
    assert "worker        Progressing   50% (1/2)    1 Available, 1 Progressing, 0 Draining\n" in text
    done = [node("m0", "master", NEW), node("w0", "worker", NEW)]
    assert render(status_of(machines([pool("master", NEW), pool("worker", NEW)], done), progressing="False",
                            done=True)) == "The cluster is not updating.\n"
    data = to_data(status)
    assert [p["name"] for p in data["pools"]] == ["master", "worker"] and data["pools"][1]["completion"] == 50


# --- alerts -------------------------------------------------------------------------------------------------


def alert(name: str, active_at: str, *, severity: str = "warning", state: str = "firing", **notes: str) -> Alert:
    return Alert(labels={"alertname": name, "severity": severity, "namespace": "ns"}, annotations=notes,
                 state=state, active_at=active_at)


def test_alerts_during_the_update_or_known_to_affect_it() -> None:
    started = now_at()
    found = alert_insights([
        alert("During", at(minutes=5), description="d", runbook_url="https://r"),
        alert("Before", at(minutes=-5)),
        alert("PodDisruptionBudgetAtLimit", at(days=-1), summary="PDB at limit", message="m"),
        alert("Pending", at(minutes=5), state="pending"),
        alert("Info", at(minutes=5), severity="info"),
        alert("Critical", at(minutes=6), severity="critical", description="d", message="m"),
        Alert(labels={"severity": "critical"}, active_at=at(minutes=5)),
    ], started)
    assert [(i.summary, i.level, i.description, i.reference) for i in found] == [
        ("Alert is firing: During", 1, "Alert started firing during the update. The alert description is: d",
         "https://r"),
        ("Alert is firing: PDB at limit", 1, "Alert known to affect updates has been firing since before the update "
         "started. The alert description is: m", "<alert does not have a runbook_url annotation>"),
        ("Alert is firing: Critical", 3, "Alert started firing during the update. The alert description is: d | m",
         "<alert does not have a runbook_url annotation>"),
    ]
    assert found[0].resources[0].namespace == "ns" and found[0].started_at == now_at(minutes=5)


def test_alerts_file_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cv_, cos = cluster()
    objects = tmp_path / "objects.yaml"
    objects.write_text(yaml.safe_dump_all([cv_, *cos]))
    good = tmp_path / "alerts.json"
    good.write_text(json.dumps({"status": "success", "data": {"alerts": [
        {"labels": {"alertname": "KubePodNotReady", "severity": "warning", "namespace": "x"},
         "annotations": {"summary": "a pod is not ready"}, "state": "firing", "activeAt": at(minutes=10)}]}}))
    assert main(["upgrade", "status", "--from-file", str(objects), "--alerts-file", str(good),
                 "--now", at(minutes=30)]) == 0
    assert "\n20m     Warning   Unknown   Alert is firing: a pod is not ready\n" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": {"alerts": {}}}')
    assert main(["upgrade", "status", "--from-file", str(objects), "--alerts-file", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1 and "bad.json" in err
    assert main(["upgrade", "status", "--from-file", str(objects), "--metrics-url", "http://127.0.0.1:1"]) == 2
    assert "--metrics-url cannot be used with --from-file" in capsys.readouterr().err


# --- any shape ----------------------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(st.lists(pool_objects, max_size=4), st.lists(node_objects, max_size=6), st.lists(config_objects, max_size=4),
       st.booleans())
def test_pools_and_nodes_of_any_shape_are_a_view_or_one_line(pools: list[Any], nodes: list[Any], configs: list[Any],
                                                            progressing: bool) -> None:
    m = Machines([MachineConfigPool.read(p) for p in pools], [Node.read(n) for n in nodes],
                 [MachineConfig.read(c) for c in configs])
    try:
        status = status_of(m, progressing="True" if progressing else "False")
    except StatusUnavailable as err:
        assert "\n" not in str(err)
        return
    for details in ("none", "all", "nodes"):
        render(status, details)
    to_data(status)
    if status.pools is not None:
        for row in [status.pools.control_plane, *status.pools.workers]:
            if row is not None:
                o = row.overview
                assert o.total == len(row.nodes) and o.outdated <= o.total and o.available <= o.total
        shown = sum(len(r.nodes) for r in [status.pools.control_plane, *status.pools.workers] if r is not None)
        assert shown <= len(nodes)


def test_alerts_from_prometheus_are_fetched_with_the_token_and_their_failure_is_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--metrics-url``: one GET of /api/v1/alerts with the bearer token (a stub serving Prometheus' answer),
    on the demo's installed cluster; a Prometheus that cannot be reached is a note on stderr, not an error."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    payloads = Path(__file__).resolve().parents[2] / "payloads"
    state = str(tmp_path / "cluster.db")
    assert main(["install", str(payloads / "demo-4.16.0"), "--state", state, "--operators",
                 str(payloads / "demo-operators.yaml")]) == 0
    capsys.readouterr()
    seen: list[tuple[str, str]] = []

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("Authorization", "")))
            body = json.dumps({"status": "success", "data": {"alerts": []}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token = tmp_path / "token"
    token.write_text("sekrit\n")
    try:
        code = main(["upgrade", "status", "--state", state, "--metrics-url",
                     f"http://127.0.0.1:{server.server_address[1]}", "--metrics-token-file", str(token)])
    finally:
        server.shutdown()
        server.server_close()
    assert seen == [("/api/v1/alerts", "Bearer sekrit")]
    out, err = capsys.readouterr()
    assert (code, out, err) == (0, "The cluster is not updating.\n", "")
    code = main(["upgrade", "status", "--state", state, "--metrics-url", "http://127.0.0.1:1"])
    out, err = capsys.readouterr()
    assert (code, out) == (0, "The cluster is not updating.\n")
    assert err.startswith("note: no alerts in 'Update Health': failed to get alerts") and err.count("\n") == 1


def test_mock_clusterversion_wants_ocs_files_and_nothing_else(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cv_path = tmp_path / "x-cv.yaml"
    cv_path.write_text(yaml.safe_dump(cluster()[0]))
    assert main(["upgrade", "status", "--mock-clusterversion", str(cv_path)]) == 2
    assert capsys.readouterr().err == f"error: --mock-clusterversion: {tmp_path}/x-co.yaml: no such file\n"
    assert main(["upgrade", "status", "--mock-clusterversion", str(tmp_path / "x.yaml")]) == 2
    assert "not a NAME-cv.yaml file" in capsys.readouterr().err
    assert main(["upgrade", "status", "--mock-clusterversion", str(cv_path), "--from-file", str(cv_path)]) == 2
    assert "cannot be used with --from-file" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "quoted"), [
    ("kubelet is still setting up stuff", '"kubelet is still setting up stuff"'),
    ('say "hi"\\\n', '"say \\"hi\\"\\\\\\n"'), ("\a\x01é\u00a0", '"\\a\\x01é\\u00a0"'),
])
def test_a_node_condition_message_is_quoted_as_gos_percent_q(text: str, quoted: str) -> None:
    """layered_node_state.go ``GetUnavailableDescription``: ``%q`` of the Ready condition's message."""
    m = machines([pool("master", NEW), pool("worker", NEW)],
                 [node("m0", "master", NEW), node("w0", "worker", OLD, ready="False", ready_since=at())])
    m = Machines(m.pools, [m.nodes[0], Node.read({**m.nodes[1].body, "status": {"conditions": [
        {"type": "Ready", "status": "False", "message": text, "lastTransitionTime": at()}]}})], m.configs)
    found = next(i for i in status_of(m).insights if i.summary == "Node w0 is not ready")
    assert found.description == f'Node has a Ready!=True condition with Reason "Not ready" and message {quoted}'
