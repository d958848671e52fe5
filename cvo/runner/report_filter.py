"""Which progress reports reach the ClusterVersion, and when the sweep last made progress.

A port of the CVO's ``statusWrapper.Report`` (pkg/cvo/sync_worker.go):

* a report without a failure that gets *less far* than the previous report, which had a failure,
  for the same release image is dropped: a new attempt starting over must not erase the failure an
  earlier attempt reached further on.  A report that gets exactly as far is accepted (only a
  strictly lower fraction is dropped), and a report for another image is never compared;
* ``LastProgress`` moves when the fraction done grows, when the number of completed syncs grows, or
  when the image changes without a failure.

The previous report is the last one accepted, whatever sweep made it: an upgrade shares one filter
between the reconcile of the release it runs and the update to its target, as the CVO's sync worker
keeps one status across payloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Report:
    image: str
    done: int
    total: int
    completed: int
    failed: bool

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total > 0 else 0.0


NOTHING = Report("", 0, 0, 0, False)  # the CVO's zero-valued previous status


class ReportFilter:
    def __init__(self) -> None:
        self.previous = NOTHING
        self.last_progress: datetime | None = None

    def accept(self, report: Report, now: datetime) -> bool:
        """Whether ``report`` is written; it becomes the previous report when it is."""
        p = self.previous
        if p.failed and not report.failed and p.image == report.image and report.fraction < p.fraction:
            return False  # "Dropping status report from earlier in sync loop"
        if (report.fraction > p.fraction or report.completed > p.completed
                or (not report.failed and report.image != p.image)):
            self.last_progress = now
        self.previous = report
        return True
