"""The oc adm upgrade status assessment: states, estimate, insights, and the text oc prints."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.status.godur import (
    HOUR,
    MINUTE,
    SECOND,
    go_round,
    go_string,
    go_truncate,
    parse_time,
    short_duration,
    tabwrite,
)
from cvo.status.upgrade_status import (
    COMPLETED,
    PROGRESSING,
    PROGRESSING_SLOW,
    STALLED,
    StatusUnavailable,
    assess,
    timewise_complete,
)
from cvo.status.upgrade_text import NOT_UPDATING, render
from tests.support.upgrade_status_objects import at, co, cv, entry

# --- Go's durations and tabwriter ----------------------------------------------------------------


@pytest.mark.parametrize(("ns", "text"), [
    (0, "0s"), (1, "1ns"), (1500, "1.5µs"), (368975, "368.975µs"), (2 * 1000 * 1000, "2ms"),
    (SECOND, "1s"), (90 * SECOND, "1m30s"), (HOUR, "1h0m0s"), (HOUR + 59 * MINUTE, "1h59m0s"),
    (-5 * MINUTE, "-5m0s"), (41 * MINUTE + 7 * SECOND + 368975, "41m7.000368975s"), (26 * HOUR + 1, "26h0m0.000000001s"),
])
def test_duration_string_is_gos(ns: int, text: str) -> None:
    assert go_string(ns) == text


@pytest.mark.parametrize(("ns", "text"), [
    (0, "now"), (HOUR, "1h"), (HOUR + 59 * MINUTE, "1h59m"), (58 * MINUTE + 18 * SECOND, "58m18s"),
    (41 * MINUTE + 7 * SECOND + 368975, "41m7s"),
    # oc cuts "368.975µs" at its dot and reads "368s": a known oddity of shortDuration, kept
    (368975, "6m8s"), (-11 * MINUTE, "-11m"),
])
def test_short_duration_is_ocs(ns: int, text: str) -> None:
    assert short_duration(ns) == text


def test_round_halves_away_from_zero_and_truncate_towards_it() -> None:
    assert go_round(90 * SECOND, MINUTE) == 2 * MINUTE
    assert go_round(89 * SECOND, MINUTE) == MINUTE
    assert go_round(-90 * SECOND, MINUTE) == -2 * MINUTE
    assert go_truncate(-90 * SECOND, MINUTE) == -MINUTE
    assert go_truncate(119 * SECOND, MINUTE) == MINUTE


@given(st.integers(min_value=-(10 ** 15), max_value=10 ** 15), st.sampled_from([SECOND, MINUTE]))
def test_round_lands_on_a_multiple_within_half(d: int, m: int) -> None:
    r = go_round(d, m)
    assert r % m == 0 and abs(r - d) * 2 <= m
    t = go_truncate(d, m)
    assert t % m == 0 and abs(t) <= abs(d) and abs(d - t) < m


def test_tabwriter_a_line_with_fewer_cells_ends_the_column_block() -> None:
    text = tabwrite("NAME\tSINCE\tMESSAGE\nab\t1\tfirst line\nsecond line\nlonger-name\t22\tz\n")
    assert text.splitlines() == ["NAME   SINCE   MESSAGE", "ab     1       first line", "second line",
                                 "longer-name   22   z"]


# --- the assessment --------------------------------------------------------------------------------


def history_minor() -> list[dict]:
    return [entry("4.17.0", "Partial", at()), entry("4.16.3", "Completed", at(days=-10), at(days=-10, minutes=50)),
            entry("4.16.0", "Completed", at(days=-30), at(days=-30, minutes=30))]


def test_not_updating_when_progressing_is_false() -> None:
    status = assess(cv("4.16.3", [entry("4.16.3", "Completed", at(), at(hours=1))], progressing="False"),
                    [co("a", "4.16.3")], parse_time(at(hours=2)))
    assert render(status) == NOT_UPDATING == "The cluster is not updating.\n"


@pytest.mark.parametrize(("cv_obj", "cos", "message"), [
    (None, [co("a", "1")], "no cluster version information available"),
    (cv("1", []), [], "no cluster operator information available"),
])
def test_ocs_errors(cv_obj: dict | None, cos: list, message: str) -> None:
    with pytest.raises(StatusUnavailable, match=message):
        assess(cv_obj, cos, 0)


def test_no_progressing_condition_is_ocs_error() -> None:
    obj = cv("1", [])
    obj["status"]["conditions"] = [c for c in obj["status"]["conditions"] if c["type"] != "Progressing"]
    with pytest.raises(StatusUnavailable, match="no current Progressing info, see `oc describe clusterversion`"):
        assess(obj, [co("a", "1")], 0)


def test_progressing_with_counts_and_estimate_from_the_previous_update() -> None:
    # 1 of 4 updated after 10 minutes, progress observed at 5 minutes (not > 5m: the baseline is used):
    # baseline = the previous completed update (50m); remaining = (3000 - 600) * 1.2 = 2880 s = 48m.
    cos = [co("a", "4.17.0", since=at(minutes=5)), co("b", "4.16.3", progressing="True", since=at(minutes=5),
                                                      progressing_message="Working towards 4.17.0"),
           co("c", "4.16.3", since=at(minutes=1)), co("d", "4.16.3", since=at(minutes=1))]
    status = assess(cv("4.17.0", history_minor()), cos, parse_time(at(minutes=10)))
    cp = status.control_plane
    assert cp is not None and cp.assessment == PROGRESSING
    assert cp.est_time_to_complete == 48 * MINUTE
    lines = render(status).splitlines()
    assert lines[:7] == ["= Control Plane =", "Assessment:      Progressing", "Target Version:  4.17.0 (from 4.16.3)",
                         "Updating:        b", "Completion:      25% (1 operators updated, 1 updating, 2 waiting)",
                         "Duration:        10m (Est. Time Remaining: 48m)", "Operator Health: 4 Healthy"]
    assert lines[8:] == ["= Update Health =", "SINCE   LEVEL   IMPACT   MESSAGE",
                         "10m     Info    None     Update is proceeding well"]


def test_stalled_when_far_past_the_estimate() -> None:
    # half the operators after 2h, last progress at 10m: timewise(0.5) = 0.389515, total 600/0.389515 = 1540.4 s,
    # remaining (1540.4 - 7200) / 1.2 = -4716 s (< -10m: Stalled); estimated duration 7200 - 4716 = 41m24s -> 41m.
    cos = [co("a", "4.17.0", since=at(minutes=10)), co("b", "4.16.3", since=at(minutes=1))]
    assert timewise_complete(0.5) == pytest.approx(0.389515, abs=1e-6)
    status = assess(cv("4.17.0", history_minor()), cos, parse_time(at(hours=2)))
    assert status.control_plane is not None and status.control_plane.assessment == STALLED
    assert "Duration:        2h (Est. Time Remaining: N/A; estimate duration was 41m)" in render(status)


def test_progressing_slow_when_a_little_late() -> None:
    # 1 of 2 updated; last progress at 20m: total 1200/0.389515 = 3080.75 s.  At 40m the remaining
    # (3080.75 - 2400) * 1.2 = 816 s, over 10m: rounded to 14m; at 45m (3080.75 - 2700) * 1.2 = 456 s: "<10m";
    # at 55m (3080.75 - 3300) / 1.2 = -182 s: late, Progressing - Slow.
    cos = [co("a", "4.17.0", since=at(minutes=20)), co("b", "4.16.3", since=at(minutes=1))]
    early = assess(cv("4.17.0", history_minor()), cos, parse_time(at(minutes=40)))
    assert early.control_plane is not None and early.control_plane.assessment == PROGRESSING
    assert "Duration:        40m (Est. Time Remaining: 14m)" in render(early)
    near = assess(cv("4.17.0", history_minor()), cos, parse_time(at(minutes=45)))
    assert "Duration:        45m (Est. Time Remaining: <10m)" in render(near)
    late = assess(cv("4.17.0", history_minor()), cos, parse_time(at(minutes=55)))
    assert late.control_plane is not None and late.control_plane.assessment == PROGRESSING_SLOW
    assert late.control_plane.est_time_to_complete == -182 * SECOND


def test_completed_control_plane_form() -> None:
    history = [entry("4.17.0", "Completed", at(), at(minutes=83)), *history_minor()[1:]]
    status = assess(cv("4.17.0", history), [co("a", "4.17.0"), co("b", "4.17.0")], parse_time(at(minutes=90)))
    assert status.control_plane is not None and status.control_plane.assessment == COMPLETED
    assert render(status).startswith("= Control Plane =\nUpdate to 4.17.0 successfully completed at "
                                     "2024-03-01T11:23:00Z (duration: 1h23m)\n\n= Update Health =\n")


def test_from_incomplete_and_its_insight() -> None:
    history = [entry("4.17.1", "Partial", at()), entry("4.17.0", "Partial", at(hours=-2)), *history_minor()[1:]]
    status = assess(cv("4.17.1", history), [co("a", "4.17.0"), co("b", "4.17.1")], parse_time(at(minutes=3)))
    text = render(status, "health")
    assert "Target Version:  4.17.1 (from incomplete 4.17.0)" in text
    assert ("Message: Previous update to 4.17.0 never completed, last complete update was 4.16.3\n"
            "  Since:       3m\n  Level:       Warning\n  Impact:      None\n") in text
    assert "Description: Current update to 4.17.1 was initiated while the previous update to version 4.17.0 " in text


def test_first_update_after_install_is_a_new_install_form() -> None:
    status = assess(cv("4.16.0", [entry("4.16.0", "Partial", at())]), [co("a", "4.15.0")], parse_time(at(minutes=2)))
    assert "Target Version:  4.16.0 (a new install)" in render(status)


@pytest.mark.parametrize(("minutes", "level"), [(5, None), (6, "Warning"), (21, "Error")])
def test_unavailable_operator_thresholds(minutes: int, level: str | None) -> None:
    cos = [co("a", "4.16.3", available="False", available_reason="NoPods", available_message="none\nat all"),
           co("b", "4.17.0")]
    status = assess(cv("4.17.0", history_minor()), cos, parse_time(at(minutes=minutes)))
    text = render(status, "health")
    if level is None:
        assert "is unavailable" not in text
    else:
        assert f"Message: Cluster Operator a is unavailable (NoPods)\n  Since:       {minutes}m\n  Level:       {level}\n" \
               "  Impact:      API Availability\n  Reference:   https://github.com/openshift/runbooks/blob/master/" \
               "alerts/cluster-monitoring-operator/ClusterOperatorDown.md\n  Resources:\n" \
               "    clusteroperators.config.openshift.io: a\n  Description: none\n               , at all\n" in text
    assert "Operator Health: 1 Healthy, 1 Unavailable" in text


@pytest.mark.parametrize(("minutes", "level"), [(5, None), (39, "Warning"), (41, "Error")])
def test_degraded_operator_thresholds(minutes: int, level: str | None) -> None:
    cos = [co("a", "4.16.3", degraded="True", degraded_reason="Broken"), co("b", "4.17.0")]
    status = assess(cv("4.17.0", history_minor()), cos, parse_time(at(minutes=minutes)))
    rows = [line for line in render(status).splitlines() if "is degraded" in line]
    # SINCE is as wide as its title (5) plus 3; LEVEL as the wider of its title and its one value, plus 3
    width = max(len("LEVEL"), len(level or "")) + 3
    assert rows == ([] if level is None else [f"{minutes}m     {level:<{width}}API Availability   "
                                               "Cluster Operator a is degraded (Broken)"])


def test_failing_clusterversion_and_missing_failing() -> None:
    cos = [co("a", "4.16.3"), co("b", "4.17.0")]
    failing = cv("4.17.0", history_minor(), failing="True", failing_reason="ClusterOperatorDegraded",
                 failing_message="Cluster operator a is degraded", since=at(minutes=1))
    text = render(assess(failing, cos, parse_time(at(minutes=4))))
    assert "3m      Warning   Update Stalled   Cluster Version version is failing to proceed with the update " \
           "(ClusterOperatorDegraded)" in text
    missing = render(assess(cv("4.17.0", history_minor(), failing=None), cos, parse_time(at(minutes=4))), "health")
    assert "Message: Cluster Version version has no Failing condition\n  Since:       now\n" in missing
    # a Failing condition without a message makes an incomplete insight: oc drops it
    silent = cv("4.17.0", history_minor(), failing="Unknown", since=at(minutes=1))
    assert "Update is proceeding well" in render(assess(silent, cos, parse_time(at(minutes=4))))


def test_insights_sorted_by_level_then_newest_first() -> None:
    # at 40m: err unavailable 38m (Error), new degraded 10m and old degraded 39m (both Warning)
    cos = [co("old", "4.16.3", degraded="True", degraded_reason="R", degraded_since=at(minutes=1)),
           co("new", "4.16.3", degraded="True", degraded_reason="R", degraded_since=at(minutes=30)),
           co("err", "4.16.3", available="False", available_reason="R", available_since=at(minutes=2)),
           co("ok", "4.17.0")]
    status = assess(cv("4.17.0", history_minor()), cos, parse_time(at(minutes=40)))
    assert [i.summary.split()[2] for i in status.insights] == ["err", "new", "old"]


def test_non_platform_operators_are_not_counted() -> None:
    cos = [co("a", "4.17.0"), co("addon", "1.0", platform=False, available="False", since=at(minutes=-60))]
    status = assess(cv("4.17.0", history_minor()), cos, parse_time(at(minutes=5)))
    assert status.control_plane is not None and status.control_plane.operators.total == 1
    assert "addon" not in render(status, "all")


def test_parse_time_keeps_nanoseconds() -> None:
    from cvo.status.godur import SECOND, parse_time

    base = parse_time("2023-11-21T15:04:15Z")
    assert base is not None
    assert parse_time("2023-11-21T15:04:15.000368975Z") == base + 368975
    assert parse_time("2023-11-21T15:04:15.5Z") == base + SECOND // 2
    assert parse_time("2023-11-21T15:04:15.0000000019Z") == base + 1  # past the ninth digit: ignored, as Go does
    assert parse_time("2023-11-21T15:04:15.Z") is None
