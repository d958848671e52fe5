"""`oc get clusterversion` / `oc get clusteroperators` style tables."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cvo.clock import to_rfc3339
from cvo.objects import ClusterOperator, ClusterVersion
from cvo.status.clusterversion import SyncStatus, cluster_version_object, update_cluster_version_status
from cvo.status.text import (
    clusteroperators_table,
    clusterversion_table,
    format_age,
    format_table,
    operator_message,
    write_status_text,
)

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def view(obj: dict[str, Any]) -> ClusterOperator:
    return ClusterOperator.read(obj)


def views(objs: list[dict[str, Any]]) -> list[ClusterOperator]:
    return [ClusterOperator.read(o) for o in objs]


def ago(**kw: float) -> str:
    return to_rfc3339(NOW - timedelta(**kw))


def co(name: str, version: str | None = "4.16.0", since: str | None = None, messages: dict[str, str] | None = None,
       **statuses: str) -> dict[str, Any]:
    """A ClusterOperator; ``statuses`` overrides Available=True, Progressing=False, Degraded=False."""
    wanted = {"Available": "True", "Progressing": "False", "Degraded": "False", **statuses}
    conditions = []
    for type_, status in wanted.items():
        c = {"type": type_, "status": status, "lastTransitionTime": since or ago(minutes=12)}
        if messages and type_ in messages:
            c["message"] = messages[type_]
        conditions.append(c)
    status: dict[str, Any] = {"conditions": conditions}
    if version is not None:
        status["versions"] = [{"name": "operand", "version": "9.9"}, {"name": "operator", "version": version}]
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": name},
            "status": status}


def reconciled_cv(version: str = "4.16.0", minutes_ago: float = 5) -> dict[str, Any]:
    cv = cluster_version_object()
    cv["status"] = update_cluster_version_status(
        {}, SyncStatus(version, f"img:{version}", completed=1, reconciling=True), NOW - timedelta(minutes=minutes_ago))
    return cv


@pytest.mark.parametrize(("delta", "text"), [
    (timedelta(seconds=-5), "<invalid>"),
    (timedelta(seconds=-1), "0s"),
    (timedelta(0), "0s"),
    (timedelta(seconds=45), "45s"),
    (timedelta(seconds=119), "119s"),
    (timedelta(minutes=2), "2m"),
    (timedelta(minutes=5, seconds=30), "5m30s"),
    (timedelta(minutes=10, seconds=30), "10m"),
    (timedelta(minutes=179), "179m"),
    (timedelta(hours=3), "3h"),
    (timedelta(hours=3, minutes=12), "3h12m"),
    (timedelta(hours=8, minutes=30), "8h"),
    (timedelta(hours=47), "47h"),
    (timedelta(days=2), "2d"),
    (timedelta(days=2, hours=3), "2d3h"),
    (timedelta(days=8, hours=3), "8d"),
    (timedelta(days=730), "2y"),
    (timedelta(days=735), "2y5d"),
    (timedelta(days=365 * 9), "9y"),
])
def test_format_age_like_kubectl(delta: timedelta, text: str) -> None:
    assert format_age(delta) == text


def test_clusterversion_table() -> None:
    assert clusterversion_table(ClusterVersion.read(reconciled_cv()), NOW) == (
        "NAME      VERSION   AVAILABLE   PROGRESSING   SINCE   STATUS\n"
        "version   4.16.0    True        False         5m      Cluster version is 4.16.0\n")


def test_clusterversion_version_is_the_current_not_the_desired_version() -> None:
    cv = reconciled_cv("4.15.0", minutes_ago=60 * 24)
    cv["status"] = update_cluster_version_status(cv["status"], SyncStatus("4.16.0", "img:4.16.0", done=10, total=40),
                                                 NOW - timedelta(minutes=3, seconds=20))
    assert clusterversion_table(ClusterVersion.read(cv), NOW).splitlines()[1] == (
        "version   4.15.0    True        True          3m20s   Working towards 4.16.0: 10 of 40 done (25% complete)")


def test_clusterversion_without_status() -> None:
    assert clusterversion_table(ClusterVersion.read(cluster_version_object()), NOW) == (
        "NAME      VERSION   AVAILABLE   PROGRESSING   SINCE   STATUS\n"
        "version\n")


def test_clusteroperators_table() -> None:
    assert clusteroperators_table(views([co("authentication")]), NOW) == (
        "NAME             VERSION   AVAILABLE   PROGRESSING   DEGRADED   SINCE   MESSAGE\n"
        "authentication   4.16.0    True        False         False      12m\n")


def test_clusteroperators_are_sorted_and_aligned() -> None:
    table = clusteroperators_table(views([
        co("kube-apiserver", since=ago(hours=3, minutes=12), Progressing="True",
           messages={"Progressing": "NodeInstallerProgressing: 1 node is at revision 7"}),
        co("dns", version=None, since=ago(seconds=45), Available="False",
           messages={"Available": "DNS default is not available"}),
    ]), NOW)
    assert table == (
        "NAME             VERSION   AVAILABLE   PROGRESSING   DEGRADED   SINCE   MESSAGE\n"
        "dns                        False       False         False      45s     DNS default is not available\n"
        "kube-apiserver   4.16.0    True        True          False      3h12m   "
        "NodeInstallerProgressing: 1 node is at revision 7\n")


def test_operator_message_prefers_unavailable_then_degraded_then_progressing() -> None:
    messages = {"Available": "down", "Degraded": "sad", "Progressing": "moving"}
    assert operator_message(view(co("x", messages=messages, Available="False", Degraded="True", Progressing="True"))) == "down"
    assert operator_message(view(co("x", messages=messages, Degraded="True", Progressing="True"))) == "sad"
    assert operator_message(view(co("x", messages=messages, Progressing="True"))) == "moving"
    assert operator_message(view(co("x", messages={"Available": "All is well"}))) == ""


def test_missing_conditions_leave_cells_empty() -> None:
    bare = {"metadata": {"name": "new-operator"}, "status": {}}
    assert clusteroperators_table(views([bare]), NOW).splitlines()[1] == "new-operator"


def test_multi_line_messages_stay_on_one_row() -> None:
    table = clusteroperators_table(views([co("x", messages={"Degraded": "A: one\nB: two"}, Degraded="True")]), NOW)
    assert table.splitlines()[1].endswith("A: one B: two")
    assert len(table.splitlines()) == 2


def test_clusteroperators_wide_adds_upgradeable_and_the_reason_of_the_message() -> None:
    degraded = co("etcd", Degraded="True", Upgradeable="False", messages={"Degraded": "member down"})
    degraded["status"]["conditions"][2]["reason"] = "MemberDown"
    table = clusteroperators_table(views([co("authentication"), degraded]), NOW, wide=True)
    assert table == (
        "NAME             VERSION   AVAILABLE   PROGRESSING   DEGRADED   SINCE   UPGRADEABLE   REASON       MESSAGE\n"
        "authentication   4.16.0    True        False         False      12m\n"
        "etcd             4.16.0    True        False         True       12m     False         MemberDown   "
        "member down\n")
    assert clusteroperators_table(views([co("authentication"), degraded]), NOW, wide=True, headers=False) == (
        "".join(table.splitlines(keepends=True)[1:]))


def test_clusterversion_wide_adds_desired_failing_and_upgradeable() -> None:
    assert clusterversion_table(ClusterVersion.read(reconciled_cv()), NOW, wide=True) == (
        "NAME      VERSION   AVAILABLE   PROGRESSING   SINCE   DESIRED   FAILING   UPGRADEABLE   STATUS\n"
        "version   4.16.0    True        False         5m      4.16.0    False                   "
        "Cluster version is 4.16.0\n")
    assert clusterversion_table(ClusterVersion.read(reconciled_cv()), NOW, headers=False) == (
        "version   4.16.0    True        False         5m      Cluster version is 4.16.0\n")


def test_format_table_pads_to_kubectl_minimum_width() -> None:
    assert format_table([["A", "B", "C"], ["x", "y", "z"]]) == "A     B     C\nx     y     z\n"


def test_write_status_text() -> None:
    out = io.StringIO()
    write_status_text(reconciled_cv(), [co("authentication")], NOW, out)
    assert out.getvalue() == (
        "NAME      VERSION   AVAILABLE   PROGRESSING   SINCE   STATUS\n"
        "version   4.16.0    True        False         5m      Cluster version is 4.16.0\n"
        "\n"
        "NAME             VERSION   AVAILABLE   PROGRESSING   DEGRADED   SINCE   MESSAGE\n"
        "authentication   4.16.0    True        False         False      12m\n")


# --- on a terminal: every line fits its width ------------------------------------------------------------

cells = st.text(st.characters(codec="ascii", categories=("L", "N", "P", "Zs")), max_size=90).map(
    lambda t: " ".join(t.split()))


def tables(n: int) -> st.SearchStrategy[list[list[str]]]:
    header = st.lists(st.from_regex(r"[A-Z]{1,12}", fullmatch=True), min_size=n, max_size=n)
    return st.tuples(header, st.lists(st.lists(cells, min_size=n, max_size=n), max_size=5)).map(
        lambda t: [t[0], *t[1]])


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7).flatmap(tables), st.integers(20, 200))
@example([["A", "AAAAAAAAA"], ["00000000000000000000000000 1", ""]], 20)  # found: a first column cut to 3 lines
def test_a_table_fits_any_terminal_width_and_keeps_its_words(rows: list[list[str]], width: int) -> None:
    table = format_table(rows, width=width)
    assert all(len(line) <= width for line in table.splitlines()), table
    if all(len(line) <= width for line in format_table(rows).splitlines()):
        assert table == format_table(rows)  # a table that fits is as oc prints it
    bare = format_table(rows, headers=False, width=width).splitlines()
    assert table.splitlines()[len(table.splitlines()) - len(bare):] == bare  # --no-headers drops the header only
    assert len(table.splitlines()) - len(bare) <= 1 or len(rows) == 1
    squeezed = table.replace("\n", "").replace(" ", "")
    for row in rows[1:]:  # the columns before the last are never cut (a word longer than the room is broken)
        for word in (w for cell in row[:-1] for w in cell.split()):
            assert word in squeezed or len(word) > width // 3, (word, table)


def test_a_wide_table_on_80_columns() -> None:
    rows = [["NAME", "VERSION", "AVAILABLE", "PROGRESSING", "DEGRADED", "SINCE", "MESSAGE"],
            ["kube-controller-manager", "4.17.0", "True", "False", "False", "46m", ""],
            ["openshift-samples", "4.16.3", "True", "False", "False", "42m",
             "not in the current release 4.17.0 (left over from 4.16.3)"]]
    assert format_table(rows, width=80).splitlines() == [
        "NAME                      VERSION   AVAILABLE   PROGRESSING   DEGRADED   SINCE",
        "kube-controller-manager   4.17.0    True        False         False      46m",
        "openshift-samples         4.16.3    True        False         False      42m",
        "    not in the current release 4.17.0 (left over from 4.16.3)"]
    assert format_table(rows, width=200) == format_table(rows)  # wide enough: as oc prints it
    status = [["NAME", "VERSION", "AVAILABLE", "PROGRESSING", "SINCE", "STATUS"],
              ["version", "4.16.3", "True", "True", "2m", "Working towards 4.17.0: 106 of 158 done (67% complete), "
               "waiting on etcd, kube-apiserver, kube-controller-manager, kube-scheduler and more"]]
    assert format_table(status, width=80).splitlines() == [
        "NAME      VERSION   AVAILABLE   PROGRESSING   SINCE   STATUS",
        "version   4.16.3    True        True          2m      Working towards 4.17.0:",
        "                                                      106 of 158 done (67%",
        "                                                      complete), waiting on …"]
    assert format_table(rows, width=40).splitlines()[:4] == ["NAME:        kube-controller-manager", "VERSION:     4.17.0",
                                                       "AVAILABLE:   True", "PROGRESSING: False"]
