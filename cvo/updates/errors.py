"""Why updates could not be retrieved (pkg/cincinnati/cincinnati.go ``Error``; the reasons of
``calculateAvailableUpdatesStatus`` in pkg/cvo/availableupdates.go).  ``reason`` and ``message`` become the
``RetrievedUpdates=False`` condition's."""

from __future__ import annotations


class UpdateError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class EvaluationError(Exception):
    """A matching rule could not be evaluated (a PromQL query that failed, or answered other than one
    sample of 0 or 1): the risk's exposure is unknown (``EvaluationFailed``)."""
