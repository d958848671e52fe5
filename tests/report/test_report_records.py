"""``cvo report`` without events: the report from the records cvo keeps on the cluster (ClusterVersion history,
sweep records, ClusterOperator conditions), and ``cvo plan -o html --recorded``, which estimates from the same
records as the forecast does."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvo.cli.main import main
from cvo.log import configure
from cvo.payload.graph import Mode
from cvo.payload.loader import load_release
from cvo.plan.build import make_plan
from cvo.report.critical import causes, critical_path
from cvo.report.estimate import estimate_timeline
from cvo.report.html import render_html
from cvo.report.model import select_sweep
from cvo.report.records import ClusterRecords, records_timeline
from cvo.report.text import render_text
from cvo.runner.durations import release_operator_graph
from cvo.status.forecast import OperatorGraph, duration_model, expected_durations, forecast
from cvo.status.godur import SECOND
from cvo.status.update_records import INSTALL, AttemptTime, NodeTime, OperatorTime, PoolTime, UpdateRecord
from tests.report.test_report_render import Page
from tests.support.helpers import PAYLOADS, REPO, state_kind

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SLOW = REPO / "scenarios" / "upgrade-slow-operator.yaml"
OLD, PATCH = PAYLOADS / "demo-4.16.0", PAYLOADS / "demo-4.16.3"

# a -> b -> (a node without ClusterOperators) -> c; d beside them
GRAPH = OperatorGraph(operators={0: ("a",), 1: ("b",), 2: (), 3: ("c",), 4: ("d",)},
                      predecessors={0: (), 1: (0,), 2: (1,), 3: (2,), 4: ()}, order=(0, 1, 2, 3, 4),
                      places={0: ("10", "x"), 1: ("20", "y"), 2: ("30", "z"), 3: ("40", "w"), 4: ("10", "v")})


def rfc(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def entry(version: str, start: datetime, end: datetime | None, state: str = "Completed",
          image: str = "file:///r") -> dict[str, Any]:
    return {"version": version, "image": image, "state": state, "startedTime": rfc(start),
            **({"completionTime": rfc(end)} if end is not None else {})}


def cv(*entries: dict[str, Any], progressing: bool = False) -> dict[str, Any]:
    return {"status": {"history": list(reversed(entries)),  # newest first, as the CVO writes it
                       "conditions": [{"type": "Progressing", "status": "True" if progressing else "False"}]}}


def co(name: str, version: str, progressing: str, since: datetime, degraded: datetime | None = None) -> dict:
    conditions = [{"type": "Progressing", "status": progressing, "lastTransitionTime": rfc(since),
                   "message": "rolling out"}]
    if degraded is not None:
        conditions.append({"type": "Degraded", "status": "True", "lastTransitionTime": rfc(degraded),
                           "reason": "Broken", "message": "pods crash"})
    return {"metadata": {"name": name}, "status": {"versions": [{"name": "operator", "version": version}],
                                                   "conditions": conditions}}


def graph_of(image: str, mode: str) -> OperatorGraph | None:
    return GRAPH if image == "file:///r" else None


def minutes(m: float) -> timedelta:
    return timedelta(minutes=m)


def test_a_recorded_update_is_a_bar_per_operator_through_the_graph() -> None:
    record = UpdateRecord("2", rfc(T0 + minutes(30) + timedelta(seconds=3)), {
        "a": OperatorTime(0, 60), "b": OperatorTime(60, 1800), "c": OperatorTime(1900, 2000),
        "d": OperatorTime(0, 120)}, attempts=[AttemptTime(0, 0, 600, "ClusterOperatorUpdating", "waiting on b"),
                                              AttemptTime(1, 900, 2000)], attempt_count=2)
    found = ClusterRecords(cv(entry("1", T0, T0 + minutes(30)), entry("2", T0 + minutes(30), T0 + minutes(65))),
                           [], [record], T0 + minutes(90))
    timeline = records_timeline(found, graph_of)
    install, update = timeline.sweeps
    assert (install.mode, install.version, install.result, install.duration) == ("install", "1", "completed", 1800)
    assert install.attempts == [] and "no per-operator times recorded" in install.note
    assert install.attempts_text == "attempts not recorded"
    assert (update.mode, update.start, update.end, update.attempts_text) == ("update", 1800, 3900, "2 attempts")
    [attempt] = update.attempts
    assert [(n.node, n.after, n.runlevel) for n in attempt.nodes] == [(0, (), "10"), (1, (0,), "20"),
                                                                      (3, (1,), "40"), (4, (), "10")]
    b = attempt.nodes[1].tasks[0]
    assert (b.task, b.start, b.end, b.wait and b.wait.ready) == ('clusteroperator "b"', 1863, 3603, True)
    links = critical_path(update, coarse=True)
    assert [link.node for link in links if link.kind == "node"] == [0, 1, 3]
    assert sum(link.share for link in links) == pytest.approx(1.0)
    top = causes(links, update.duration, coarse=True)[0]
    assert top.name == "clusteroperator b" and top.seconds == pytest.approx(1740)
    assert [(m.kind, m.what, m.reason, m.at) for m in timeline.marks] == [
        ("attempt", "attempt 0", "ClusterOperatorUpdating", 1803 + 600)]
    assert select_sweep(timeline, -1).sweeps == [update] and select_sweep(timeline, 1).sweeps == [install]
    with pytest.raises(IndexError):
        select_sweep(timeline, 3)
    text = render_text(timeline, "t")
    assert "update 2: completed, 35m00s, 2 attempts, from +30m00s" in text
    assert "not recorded (applying objects, back-offs, workers, status writes)" in text


def test_the_pools_nodes_are_drawn_under_the_run_levels_and_past_the_updates_end() -> None:
    """An update's record with its pools: a row per pool and per node (drain, then the rest); the worker pool went
    on after the ClusterVersion completed, so the chart goes on to its last node."""
    nodes = {f"worker-{i}": NodeTime(600.0 + 300 * i, 660.0 + 300 * i, 900.0 + 300 * i) for i in range(3)}
    nodes["worker-3"] = NodeTime(1500.0, 1560.0)  # rebooting when recorded
    record = UpdateRecord("2", rfc(T0 + minutes(30)), {"a": OperatorTime(0, 60), "b": OperatorTime(60, 900)},
                          pools={"worker": PoolTime(1, 5, 600.0, None, nodes), "infra": PoolTime(2, 0, None, None, {})})
    found = ClusterRecords(cv(entry("1", T0, T0 + minutes(30)), entry("2", T0 + minutes(30), T0 + minutes(45))),
                           [], [record], T0 + minutes(90))
    timeline = records_timeline(found, graph_of)
    update = timeline.sweeps[1]
    [pool] = update.pools  # infra saw no node: not drawn
    assert (pool.name, pool.width, pool.size, pool.start, pool.end) == ("worker", 1, 5, 2400.0, None)
    assert [(n.name, n.start, n.drained, n.end) for n in pool.nodes][-1] == ("worker-3", 3300.0, 3360.0, None)
    assert update.end == 2700.0 and update.drawn_end == 3360.0 and timeline.end == 3360.0
    assert "  pool worker: 5 nodes, 1 at a time, from +40m00s, 3 of 4 done; drains 1m00s, reboots 4m00s (medians)" \
        in render_text(timeline, "t")
    html = render_html(timeline, "t")
    rows = re.findall(r'<div class="row machine"><div class="label" title="[^"]*">([^<]*)</div>'
                      r'<div class="track">(.*?)</div></div>', html)
    assert [name for name, _ in rows] == ["worker-0", "worker-1", "worker-2", "worker-3"]
    assert re.findall(r'class="(bar [a-z ]+)"', rows[3][1]) == ["bar drain", "bar reboot cut"]
    assert "machine config pool worker · 5 nodes, 1 at a time" in " ".join(Page(html).text)


def test_records_without_history_and_history_without_records() -> None:
    lost = UpdateRecord("9", rfc(T0 + minutes(200)), {"a": OperatorTime(0, 60)}, ended_at=rfc(T0 + minutes(201)),
                        result="timeout")
    elsewhere = UpdateRecord("2", rfc(T0 + minutes(500)), {"a": OperatorTime(0, 60)})  # too far from the entry
    found = ClusterRecords(cv(entry("1", T0, T0 + minutes(30)), entry("2", T0 + minutes(30), T0 + minutes(65))),
                           [], [lost, elsewhere], T0 + minutes(600))
    sweeps = records_timeline(found, graph_of).sweeps
    assert [(s.version, s.result, s.start) for s in sweeps] == [
        ("1", "completed", 0), ("2", "completed", 1800), ("9", "timeout", 12000), ("2", "recorded", 30000)]
    assert sweeps[2].duration == 60 and sweeps[2].note.endswith("follows the order the operators were waited on")
    assert records_timeline(ClusterRecords(None, [], [], T0), graph_of).sweeps == []


def test_a_running_update_without_a_record_comes_from_the_clusteroperators() -> None:
    start = T0 + minutes(30)
    cos = [co("a", "2", "False", start + minutes(2)), co("b", "1", "True", start + minutes(3), start + minutes(4)),
           co("c", "1", "False", T0), co("d", "2", "False", T0 + minutes(5))]  # d: done before the update began
    found = ClusterRecords(cv(entry("1", T0, start), entry("2", start, None, "Partial"), progressing=True), cos, [],
                           start + minutes(10))
    timeline = records_timeline(found, graph_of)
    update = timeline.sweeps[-1]
    assert (update.result, update.duration) == ("running", 600)
    assert "from the ClusterOperators' conditions" in update.note
    waits = {w.operator: (w.start - update.start, w.end - update.start, w.ready) for w in timeline.waits()}
    assert waits == {"a": (0, 120, True), "b": (180, 600, False)}
    [mark] = timeline.marks
    assert (mark.kind, mark.what, mark.reason, mark.message) == ("degraded", "b", "Broken", "pods crash")
    assert [link.node for link in critical_path(update, coarse=True) if link.kind == "node"] == [0, 1]
    page = render_html(timeline, "t")
    assert "running, 10m00s" in page and "no record of this sweep" in page


def test_the_forecast_and_the_plan_take_the_same_expected_durations() -> None:
    records = [UpdateRecord("1", "x", {"dns": OperatorTime(0, 2700), "etcd": OperatorTime(0, 60),
                                       "network": OperatorTime(0, 120)}),
               UpdateRecord("2", "y", {"dns": OperatorTime(0, 1500)}),
               UpdateRecord("3", "z", {"dns": OperatorTime(0, 10)}, mode=INSTALL)]
    expected = expected_durations(records)
    assert expected == {"dns": 2100.0, "etcd": 60.0, "network": 120.0} and expected.records == 2
    plan = make_plan(load_release(PATCH), Mode.UPDATE, profile="self-managed-high-availability")
    estimate = estimate_timeline(plan, expected)
    waits = {w.operator: w.duration for w in estimate.waits()}
    assert waits["dns"] == 2100.0 and waits["etcd"] == 60.0
    assert waits["machine-config"] == expected.of("machine-config") == 120.0  # not recorded: the median
    graph = release_operator_graph(load_release(PATCH))
    ahead = forecast(graph, duration_model(records), done=(), updating={}, now=0)
    # the forecast's critical path of usual durations is the plan's estimated one
    assert ahead is not None and ahead.records == expected.records
    assert ahead.path_remaining == pytest.approx(estimate.sweeps[0].duration * SECOND, abs=SECOND)
    step = next(s for s in ahead.critical_path if s.name == "machine-config")
    assert step.expected == 120 * SECOND


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["True", "False", "2026-01-01T00:00:00Z",
                                                                       "2026-01-01T01:00:00Z", "x", "", "1", "2"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["status", "history", "version", "state", "startedTime", "completionTime", "image", "conditions", "type",
         "metadata", "name", "versions", "lastTransitionTime", "message", "reason", "Completed"]), inner, max_size=5),
    max_leaves=30)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.lists(json_values, max_size=3), st.lists(st.builds(
    UpdateRecord, st.sampled_from(["1", "2"]), st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z", "x"]),
    st.dictionaries(st.sampled_from(["a", "b", "c", "zz"]), st.builds(
        OperatorTime, st.floats(0, 1e6), st.none() | st.floats(0, 1e6)), max_size=3),
    st.sampled_from(["update", "install"]), pools=st.dictionaries(st.sampled_from(["worker", "w"]), st.builds(
        PoolTime, st.integers(1, 5), st.integers(0, 9), st.none() | st.floats(0, 1e6), st.none() | st.floats(0, 1e6),
        st.dictionaries(st.sampled_from(["n0", "n1"]), st.builds(NodeTime, st.floats(0, 1e6), st.none() | st.floats(
            0, 1e6), st.none() | st.floats(0, 1e6)), max_size=2)), max_size=2)), max_size=3))
def test_objects_of_any_shape_make_a_report(cv_doc: Any, cos: list[Any], records: list[UpdateRecord]) -> None:
    found = ClusterRecords(cv_doc if isinstance(cv_doc, dict) else {"status": cv_doc}, [
        c if isinstance(c, dict) else {"status": c} for c in cos], records, T0 + minutes(90))
    timeline = records_timeline(found, graph_of)
    for sweep in timeline.sweeps:
        assert sweep.end >= sweep.start
        links = critical_path(sweep, coarse=True)
        assert sweep.duration == 0 or sum(link.share for link in links) == pytest.approx(1.0)
    render_html(timeline, "t")
    render_text(timeline, "t")


# --- on the embedded cluster: cvo install and cvo upgrade of the demo payloads, dns taking 45 minutes -----------

def slow_operators(tmp: Path) -> Path:
    """The operators of the slow-dns scenario (scenarios/upgrade-slow-operator.yaml) as an --operators file."""
    path = tmp / "slow-operators.yaml"
    path.write_text(yaml.safe_dump(yaml.safe_load(SLOW.read_text())["operators"]))
    return path


def install_and_upgrade(tmp: Path) -> Path:
    state = tmp / "cluster.db"
    operators = slow_operators(tmp)
    assert main(["install", str(OLD), "--state", str(state), "--operators", str(operators), "-o", "json"]) == 0
    assert main(["upgrade", "--to", str(PATCH), "--state", str(state), "--operators", str(operators),
                 "-o", "json"]) == 0
    configure("text", 0)
    return state


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_and_upgrade(tmp_path_factory.mktemp("records"))


@pytest.fixture
def saved(cluster: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The cluster's ClusterVersion and ClusterOperators as saved objects: with the records ConfigMap, and without."""
    objects = state_kind(cluster, "ClusterVersion") + state_kind(cluster, "ClusterOperator")
    records = [c for c in state_kind(cluster, "ConfigMap") if c["metadata"]["name"] == "cvo-update-durations"]
    without, full = tmp_path / "without.yaml", tmp_path / "full.yaml"
    without.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    full.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects + records}))
    return full, without


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exit_:  # argparse's errors
        code = exit_.code if isinstance(exit_.code, int) else 2
    out, err = capsys.readouterr()
    configure("text", 0)
    return code, out, err


def squeeze(text: str) -> str:
    return " ".join(text.split())


def test_report_from_the_embedded_clusters_records(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "report", "--state", str(cluster), "-o", "text")
    assert code == 0, err
    assert out.startswith("cvo report from the cluster's records: install 4.16.0, update 4.16.3\n")
    install, update = out.split("\ninstall 4.16.0: ")[1].split("\nupdate 4.16.3: ")
    assert install.startswith("completed, 46m00s, 9 attempts, from +0s\n")
    assert update.startswith("completed, 51m00s, 7 attempts, from +46m00s\n")
    assert squeeze(update.split("the path's time went to:")[1]).startswith("88.2% 45m00s clusteroperator dns")
    assert "retries and failures by reason:" in out and "ClusterOperatorNotAvailable" in out
    code, out, err = run_cli(capsys, "report", "--state", str(cluster), "--sweep", "1")
    assert code == 0, err
    text = squeeze(" ".join(Page(out).text))
    assert "install 4.16.0: completed, 46m00s, 9 attempts" in text and "update 4.16.3" not in text


def test_report_from_saved_objects_with_and_without_the_records(saved: tuple[Path, Path],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    full, without = saved
    code, out, err = run_cli(capsys, "report", "--from-file", str(full), "--sweep", "last", "-o", "text")
    assert code == 0, err
    assert "update 4.16.3: completed, 51m00s, 7 attempts" in out and "critical path" in out
    code, out, err = run_cli(capsys, "report", "--from-file", str(without), "-o", "text")
    assert code == 0, err
    assert "install 4.16.0: completed, 46m00s, attempts not recorded" in out
    update = out.split("\nupdate 4.16.3: ")[1]
    assert "(no record of this sweep: per-operator times from the ClusterOperators' conditions)" in update
    assert squeeze(update.split("the path's time went to:")[1]).startswith("88.2% 45m00s clusteroperator dns")


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["report", "EVENTS.jsonl", "--state", "X"], 2, "error: --state: cvo report EVENTS reads the events file, not "
                                                    "a cluster (leave EVENTS out to read the cluster's records)"),
    (["report", "--sweep", "0"], 2, "error: cvo report: argument --sweep: sweeps are counted from 1 (-1 or 'last': "
                                   "the last)"),
    (["report", "--now", "2026-01-01T00:00:00Z"], 2, "error: --now is for saved objects (--from-file)"),
    (["report", "--state", "{tmp}/none.db"], 1, "error: no cluster has been installed yet"),
    (["report", "--state", "{cluster}", "--sweep", "3"], 2, "error: --sweep 3: the cluster's records hold 2 sweep(s)"),
    (["plan", str(PATCH), "--recorded"], 2, "error: --operators, --scenario, --recorded and --from-file give "
                                            "durations for -o html only"),
])
def test_report_and_plan_bad_flags(argv: list[str], code: int, message: str, cluster: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.format(tmp=tmp_path, cluster=cluster) for a in argv]
    got, out, err = run_cli(capsys, *argv)
    assert got == code and out == ""
    assert len(err.splitlines()) == 1 and err.startswith(message), err


def test_plan_estimates_from_the_recorded_durations(cluster: Path, saved: tuple[Path, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "plan", str(PATCH), "-o", "html", "--recorded", "--state", str(cluster))
    assert code == 0, err
    text = squeeze(" ".join(Page(out).text))
    assert f"durations: recorded on embedded simulated cluster (state: {cluster}) (1 recorded update, 15 operators)" \
        in text
    # the records hold the first wait to the millisecond of the virtual clock, which drifts by a fraction of a
    # second with the machine's load: the estimate is within seconds of the update's 51 minutes
    assert re.search(r"The estimated critical path: 51m0\ds, 7 links", text), text
    assert re.search(r"the path's time went to time share clusteroperator dns 45m0\ds 88\.\d%", text), text
    full, without = saved
    code, out, err = run_cli(capsys, "plan", str(OLD), "-o", "html", "--mode", "install", "--from-file", str(full))
    assert code == 0, err
    text = squeeze(" ".join(Page(out).text))
    assert "(1 recorded install, 15 operators)" in text and re.search(r"clusteroperator dns 45m0\ds", text)
    code, out, err = run_cli(capsys, "plan", str(OLD), "-o", "html", "--from-file", str(without))
    assert code == 0, err
    text = squeeze(" ".join(Page(out).text))
    assert "durations: none recorded on saved objects" in text and "No critical path" in text
