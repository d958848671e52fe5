"""A health insight of ``oc adm upgrade status`` (health.go ``updateInsight``): what, where, how bad, and
where to read more; shared by the control plane's, the nodes' and the alerts' assessments."""

from __future__ import annotations

from dataclasses import dataclass

from cvo.objects import Condition
from cvo.status.godur import ZERO_TIME

# Impact levels (health.go): the order is the sort order, highest first.
INFO, WARNING, ERROR, CRITICAL = 0, 1, 2, 3
LEVEL_NAMES = {INFO: "Info", WARNING: "Warning", ERROR: "Error", CRITICAL: "Critical"}

# Impact types (health.go).
IMPACT_NONE = "None"
IMPACT_API_AVAILABILITY = "API Availability"
IMPACT_UPDATE_STALLED = "Update Stalled"


class StatusUnavailable(ValueError):
    """The objects do not allow an assessment (oc's errors, word for word)."""


def since_ns(condition: Condition) -> int:
    """A condition's ``lastTransitionTime`` in nanoseconds; Go's zero time when it has none."""
    return ZERO_TIME if condition.since is None else condition.since


@dataclass(frozen=True)
class Resource:
    group: str
    kind: str
    name: str
    namespace: str = ""


@dataclass(frozen=True)
class Insight:
    """An update health insight (UpdateHealthInsight): what, where, how bad, and where to read more."""

    started_at: int | None  # None: unknown (printed "-")
    scope_type: str
    resources: tuple[Resource, ...]
    level: int
    impact_type: str
    summary: str
    description: str = ""
    reference: str = ""

    @property
    def incomplete(self) -> bool:
        return not self.description or not self.summary or not self.reference
