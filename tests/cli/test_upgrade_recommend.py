"""`cvo upgrade recommend` beyond oc's examples: the alert sources (a file, Prometheus' API over HTTP, none), the
embedded cluster, the flags oc refuses and cvo's bad-input errors.  oc's text itself is pinned by the goldens
(test_upgrade_recommend_golden.py) and by oc's own code (test_upgrade_recommend_differential.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from cvo.cli.main import main
from cvo.cli.upgrade_recommend_cmd import accepted
from cvo.monitoring.answers import Alert
from cvo.objects import ClusterVersion
from cvo.status.recommend import alert_conditions, complete, recommend
from tests.support.recommend_objects import DEGRADED, DEGRADED_ALERTS, EXAMPLES, degraded, embedded


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["upgrade", "recommend", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- Prometheus' /api/v1/alerts over HTTP --------------------------------------------------------------


@dataclass
class FakePrometheus:
    """An HTTP server on 127.0.0.1 answering ``GET /api/v1/alerts`` with ``body`` and ``status``."""

    url: str = ""
    body: bytes = b""
    status: int = 200
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def prometheus() -> Iterator[FakePrometheus]:
    fake = FakePrometheus(body=DEGRADED_ALERTS.read_bytes())

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fake.requests.append((self.path, dict(self.headers)))
            self.send_response(fake.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(fake.body)))
            self.end_headers()
            self.wfile.write(fake.body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()


def test_alerts_from_prometheus_are_oc_alerts_from_a_file(tmp_path: Path, prometheus: FakePrometheus,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    state = embedded(tmp_path, degraded())
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    live = run(["--state", str(state), "--metrics-url", prometheus.url + "/", "--metrics-token-file", str(token)],
               capsys)
    from_file = run(["--from-file", str(DEGRADED), "--alerts-file", str(DEGRADED_ALERTS)], capsys)
    assert live == from_file
    assert live[1] == (EXAMPLES / "4.16.27-degraded-monitoring.output").read_text()
    assert [(path, headers["Authorization"]) for path, headers in prometheus.requests] == [
        ("/api/v1/alerts", "Bearer s3cret")]


@pytest.mark.parametrize(("status", "body", "why"), [
    # the Prometheus client's words (cvo.monitoring.answers: client_golang's "{type}: {msg}")
    (500, b"oops", "server_error: server error: 500"),
    (403, b"forbidden", "client_error: client error: 403"),
    (200, b"<html>a login page</html>", "bad_response: the answer is not JSON: Expecting value"),
    (200, b'{"status": "error", "errorType": "bad_data", "error": "no Thanos"}', "bad_data: no Thanos"),
])
def test_a_prometheus_without_alerts_is_unknown(status: int, body: bytes, why: str, tmp_path: Path,
                                                prometheus: FakePrometheus, capsys: pytest.CaptureFixture[str]) -> None:
    prometheus.status, prometheus.body = status, body
    code, out, err = run(["--state", str(embedded(tmp_path, degraded())), "--metrics-url", prometheus.url,
                          "--version", "4.16.32"], capsys)
    assert "recommended/Alert=Unknown:\n\n  Reason: NoAlertData\n" in out
    assert f"  Message: No alert data: Prometheus at {prometheus.url}: failed to get alerts: {why}" in out
    assert (code, err) == (1, "error: issues that apply to this cluster but which were not included in --accept: "
                              "AlertNoData,Failing\n")


def test_an_unreachable_prometheus_is_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        code, out, _ = run(["--state", str(embedded(tmp_path, degraded())), "--metrics-url", url], capsys)
    assert code == 0
    assert f"Message: No alert data: Prometheus at {url}: failed to get alerts: " in out


def test_without_any_alert_source_the_check_is_unknown_and_can_be_accepted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = str(embedded(tmp_path, degraded()))
    code, out, err = run(["--state", state, "--version", "4.16.32", "--accept", "Failing"], capsys)
    assert (code, err) == (1, "error: issues that apply to this cluster but which were not included in --accept: "
                              "AlertNoData\n")
    assert ("recommended/Alert=Unknown:\n\n  Reason: NoAlertData\n  Message: No alert data: no --metrics-url or "
            "--alerts-file to read the firing alerts from\n") in out
    code, out, err = run(["--state", state, "--version", "4.16.32", "--accept", "Failing,AlertNoData"], capsys)
    assert (code, err) == (0, "")
    assert out.endswith("Update to 4.16.32 has no known issues relevant to this cluster other than the accepted "
                        "AlertNoData,Failing.\n")
    assert "explicitly accepted via --accept: recommended/Alert\n" in out
    code, out, err = run(["--state", state, "--version", "4.16.32", "--accept", "Failing", "--accept", "AlertNoData",
                          "--quiet"], capsys)
    assert (code, out, err) == (0, "", "")


def test_quiet_prints_only_the_unaccepted_issue_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--from-file", str(DEGRADED), "--alerts-file", str(DEGRADED_ALERTS), "--version", "4.16.32",
                          "--quiet", "--accept", "Failing"], capsys)
    assert (code, out, err) == (1, "", "error: issues that apply to this cluster but which were not included in "
                                       "--accept: ClusterOperatorDown,PodDisruptionBudgetAtLimit\n")


def test_warnings_go_to_the_error_stream_in_order(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cv = degraded()
    cv["status"]["conditions"] = [c for c in cv["status"]["conditions"] if c["type"] != "Failing"]
    for c in cv["status"]["conditions"]:
        if c["type"] == "RetrievedUpdates":
            c.update(status="False", reason="RemoteFailed", message="Unable to retrieve\navailable updates")
    cv["status"]["availableUpdates"].append({"version": "4.16.x", "image": "quay.io/x@sha256:1"})
    path = tmp_path / "cv.yaml"
    path.write_text(yaml.safe_dump(cv))
    code, out, err = run(["--from-file", str(path), "--alerts-file", str(DEGRADED_ALERTS)], capsys)
    assert code == 0
    assert err == ("warning: No current Failing info, see `oc describe clusterversion` for more details.\n"
                   "warning: Cannot refresh available updates:\n  Reason: RemoteFailed\n  Message: Unable to retrieve\n"
                   "  available updates\n\n"
                   'warning: Cannot parse SemVer available update "4.16.x": Invalid character(s) found in patch '
                   'number "x"')  # oc's last warning has no newline
    assert out.startswith("The following conditions found no cause")


def test_no_clusterversion_is_ocs_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    assert run(["--from-file", str(empty), "--alerts-file", "/nonexistent"], capsys) == (
        1, "", "error: No cluster version information available - you must be connected to an OpenShift version 4 "
               "server to fetch the current version\n")


def test_no_embedded_cluster_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--state", str(tmp_path / "none.db")], capsys)
    assert (code, out) == (1, "")
    assert err.startswith("error: no cluster has been installed yet") and len(err.splitlines()) == 1


# --- flags ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "error"), [
    (["--quiet"], "--quiet can only be set when --version is set"),
    (["--version", "4.16.32", "--show-outdated-releases"], "when --version is set, --show-outdated-releases is "
                                                          "unnecessary"),
    (["--version", "v4.16"], 'cannot parse SemVer target "v4.16": No Major.Minor.Patch elements found'),
    (["--version", "4.16.032"], 'cannot parse SemVer target "4.16.032": Patch number must not contain leading '
                                'zeroes "032"'),
])
def test_ocs_refusals_exit_1(argv: list[str], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--from-file", str(DEGRADED), *argv], capsys) == (1, "", f"error: {error}\n")


@pytest.mark.parametrize("argv", [
    ["--from-file", str(DEGRADED), "--metrics-url", "http://127.0.0.1:9"],
    ["--mock-clusterversion", str(DEGRADED), "--from-file", str(DEGRADED)],
    ["--mock-clusterversion", str(DEGRADED), "--alerts-file", str(DEGRADED_ALERTS)],
    ["--alerts-file", str(DEGRADED_ALERTS), "--metrics-url", "http://127.0.0.1:9"],
    ["--metrics-url", "127.0.0.1:9090"],
    ["--metrics-token-file", str(DEGRADED)],
    ["--metrics-url", "http://127.0.0.1:9", "--metrics-ca-bundle-file", "/nonexistent"],
    ["--metrics-url", "http://127.0.0.1:9", "--metrics-timeout", "0"],
])
def test_conflicting_alert_sources_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, "")
    assert err.startswith("error: ") and len(err.splitlines()) == 1


def test_accept_reads_like_pflags_string_slice() -> None:
    assert accepted([]) == []
    assert accepted([""]) == []
    assert accepted(["A,B", "C"]) == ["A", "B", "C"]
    assert accepted(['"A,B",C']) == ["A,B", "C"]


# --- bad alert files: one error line, exit 2 -----------------------------------------------------------


@pytest.mark.parametrize(("content", "problem"), [
    (b"not json", "not JSON"),
    (b"[]", "the answer is a list, not an object with data.alerts"),
    (b'{"status": "success"}', "data is null, not an object with alerts"),
    (b'{"status": "success", "data": {"alerts": {}}}', "data.alerts is an object, not a list"),
    (b'{"data": {"alerts": [{"labels": {"alertname": 1}}]}}',
     "data.alerts[0].labels.alertname is a number, not a string"),
    (b'{"data": {"alerts": [{"labels": {}, "state": ["firing"]}]}}', "data.alerts[0].state is a list, not a string"),
    (b'{"status": "error", "error": "query timed out"}', "Prometheus answered status 'error': query timed out"),
    (b"\xff\xfe", "not JSON"),
])
def test_a_bad_alerts_file_is_one_error_line(content: bytes, problem: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    alerts = tmp_path / "alerts.json"
    alerts.write_bytes(content)
    code, out, err = run(["--from-file", str(DEGRADED), "--alerts-file", str(alerts)], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {alerts}: not Prometheus' /api/v1/alerts answer: {problem}")
    assert len(err.splitlines()) == 1


def test_a_huge_missing_or_unreadable_alerts_file_is_one_error_line(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.truncate(33 * 1024 * 1024)  # sparse: over the 32 MiB cap without writing it
    for path, problem in ((huge, "file is 33 MiB, over cvo's limit of 32 MiB"), (tmp_path / "missing.json",
                          "file not found"), (tmp_path, "is a directory, not a regular file")):
        code, out, err = run(["--from-file", str(DEGRADED), "--alerts-file", str(path)], capsys)
        assert (code, out) == (2, "")
        assert err.startswith(f"error: {path}: {problem}") and len(err.splitlines()) == 1


def test_ocs_mock_flag_without_alerts_beside_is_no_test_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cv = tmp_path / "x-cv.yaml"
    cv.write_text(DEGRADED.read_text())
    code, out, _ = run(["--mock-clusterversion", str(cv)], capsys)
    assert code == 0
    assert (f"  Reason: NoTestData\n  Message: This --mock-clusterversion run did not have alert data available at "
            f"{tmp_path}/x-alerts.json\n") in out
    (tmp_path / "x-alerts.json").write_bytes(DEGRADED_ALERTS.read_bytes())
    assert run(["--mock-clusterversion", str(cv)], capsys)[1] == (EXAMPLES / "4.16.27-degraded-monitoring.output").read_text()


# --- alerts.go's grouping, one alert at a time ---------------------------------------------------------


def one(name: str, severity: str = "warning", state: str = "firing", **labels: str) -> list[Any]:
    return alert_conditions([Alert(labels={"alertname": name, "severity": severity, **labels}, state=state)])


@pytest.mark.parametrize(("alert", "group"), [
    (one("Anything", "critical"), "CriticalAlerts"),
    (one("PodDisruptionBudgetAtLimit"), "PodDisruptionBudgetAlerts"),
    (one("KubeContainerWaiting"), "PodImagePullAlerts"),
    (one("KubeNodeNotReady", "info"), "NodeAlerts"),
    (one("Custom", openShiftUpdatePrecheck="true"), "UpdatePrecheckAlerts"),
    (one("VMCannotBeEvicted"), "VirtAlerts"),
])
def test_each_group_takes_its_alerts(alert: list[Any], group: str) -> None:
    sad = [c for c in alert if c.status == "False"]
    assert [(c.type.rsplit("/", 2)[0], c.reason) for c in sad] == [(f"recommended/{group}", "Alert:firing")]
    happy = {c.type for c in alert if c.status == "True"}
    assert f"recommended/{group}" not in happy and len(happy) == 5 - (group != "VirtAlerts")


def test_pending_unnamed_and_other_alerts_count_for_nothing() -> None:
    quiet = alert_conditions([])
    assert one("Anything", "critical", state="pending") == quiet
    assert one("", "critical") == quiet
    assert one("Watchdog", "none") == quiet
    assert one("Custom", openShiftUpdatePrecheck="false") == quiet


def test_a_critical_pdb_alert_names_its_budget_and_clears_the_pdb_group() -> None:
    conditions = one("PodDisruptionBudgetLimit", "critical", namespace="ns", poddisruptionbudget="pdb")
    assert conditions[0].message == (
        "critical alert PodDisruptionBudgetLimit firing, suggesting significant cluster issues worth investigating. "
        "Namespace=ns, PodDisruptionBudget=pdb. PodDisruptionBudgetLimit. The alert has no description. <alert does "
        "not have a runbook_url annotation>")
    assert "recommended/PodDisruptionBudgetAlerts" not in {c.type for c in conditions}


def test_the_writes_keep_ocs_order_across_its_two_streams() -> None:
    """No Failing condition: oc warns on its error stream first, then prints the checks, then warns again."""
    cv = degraded()
    cv["status"]["conditions"] = [c for c in cv["status"]["conditions"] if c["type"] != "Failing"]
    for c in cv["status"]["conditions"]:
        if c["type"] == "RetrievedUpdates":
            c.update(status="Unknown", reason="NoChannel", message="")
    result = recommend(ClusterVersion.read(cv), alert_conditions([]),
                       complete("", quiet=False, show_outdated_releases=False))
    firsts = [(to_err, text.split("\n", 1)[0]) for to_err, text in result.writes]
    assert firsts[:3] == [
        (True, "warning: No current Failing info, see `oc describe clusterversion` for more details."),
        (False, "The following conditions found no cause for concern in updating this cluster to later releases: "
                "recommended/CriticalAlerts (AsExpected), recommended/NodeAlerts (AsExpected), "
                "recommended/PodDisruptionBudgetAlerts (AsExpected), recommended/PodImagePullAlerts (AsExpected), "
                "recommended/UpdatePrecheckAlerts (AsExpected)"),
        (True, "warning: Cannot refresh available updates:")]
    assert result.error is None
