"""statusWrapper.Report (pkg/cvo/sync_worker.go): which reports reach the ClusterVersion, and LastProgress."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cvo.runner.report_filter import Report, ReportFilter

T0 = datetime(2025, 1, 1, tzinfo=UTC)
A, B = "quay.io/ocp@sha256:aaaa", "quay.io/ocp@sha256:bbbb"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_a_report_getting_less_far_than_the_failed_one_is_dropped() -> None:
    f = ReportFilter()
    assert f.accept(Report(A, 50, 100, 0, failed=True), at(0))
    assert not f.accept(Report(A, 10, 100, 0, failed=False), at(1))
    assert f.previous == Report(A, 50, 100, 0, failed=True)  # a dropped report is not remembered


def test_a_report_getting_exactly_as_far_is_accepted() -> None:
    """``fractionComplete < previousFractionComplete``: only a strictly lower fraction is dropped (cvo used to
    drop an equal one too)."""
    f = ReportFilter()
    assert f.accept(Report(A, 50, 100, 0, failed=True), at(0))
    assert f.accept(Report(A, 50, 100, 0, failed=False), at(1))
    assert f.accept(Report(A, 10, 100, 0, failed=False), at(2))  # the failure is gone: nothing to protect


def test_failures_are_never_dropped() -> None:
    f = ReportFilter()
    assert f.accept(Report(A, 90, 100, 0, failed=True), at(0))
    assert f.accept(Report(A, 1, 100, 0, failed=True), at(1))


def test_another_image_resets_the_comparison_and_moves_last_progress() -> None:
    f = ReportFilter()
    assert f.accept(Report(A, 90, 100, 0, failed=True), at(0))
    assert f.accept(Report(B, 0, 100, 0, failed=False), at(5))
    assert f.last_progress == at(5)


def test_last_progress_moves_when_the_fraction_or_completed_grows() -> None:
    f = ReportFilter()
    assert f.accept(Report(A, 0, 100, 0, failed=False), at(0))
    assert f.last_progress == at(0)  # a new image (the previous report is the CVO's zero status)
    assert f.accept(Report(A, 0, 100, 0, failed=False), at(1))
    assert f.last_progress == at(0)  # nothing got further
    assert f.accept(Report(A, 30, 100, 0, failed=False), at(2))
    assert f.last_progress == at(2)
    assert f.accept(Report(A, 30, 100, 1, failed=False), at(3))
    assert f.last_progress == at(3)  # a completed sync
    assert f.accept(Report(A, 0, 100, 1, failed=True), at(4))
    assert f.last_progress == at(3)  # a failure is not progress
    assert f.accept(Report(B, 0, 100, 1, failed=True), at(5))
    assert f.last_progress == at(3)  # nor is a new image that fails at once
