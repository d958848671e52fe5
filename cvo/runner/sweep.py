"""What a sweep is given (:class:`SweepOptions`) and what it gives back (:class:`SweepResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cvo.cluster.persist import Budget
from cvo.payload.errors import UpdateError
from cvo.payload.filters import ApplyFilter
from cvo.status.parts import Accepted


@dataclass
class SweepOptions:
    interval: float = 180.0  # the CVO picks [2m, 4m); cvo uses the middle, deterministically
    timeout: float | None = 2 * 3600.0  # the whole sweep, on the sweep's clock; None: no limit
    max_workers: int | None = None  # default: the mode's (install unbounded, update 16, reconcile 2)
    attempt: int = 0  # the number of the first attempt (the CVO's Attempt; its ClusterOperator start times reset at it)
    seed: int = 0  # for the back-off jitter
    status_throttle: float = 15.0  # seconds between unforced ClusterVersion status writes (the CVO's status notifier)
    capabilities: ApplyFilter | None = None  # what the cluster is given (capabilities, feature gates); None: the defaults
    accepted_risks: str = ""  # recorded on the history entry (warnings the update went ahead with)
    verified: bool = False  # the release image's signature was verified (the history entry's ``verified``)
    implicit_capabilities: frozenset[str] = frozenset()  # kept enabled by an upgrade (GetImplicitlyEnabledCapabilities)
    release_accepted: Accepted | None = None  # default: True/PayloadLoaded for this release
    # How long the reads and writes around the walk (the ClusterVersion, the watches' first lists)
    # ride out a failing server; None: the backend's own retries only (cvo.cluster.persist).
    budget: Budget | None = None


@dataclass
class SweepResult:
    ok: bool
    completed: bool
    attempts: int
    failure: UpdateError | None
    message: str
    started: datetime
    finished: datetime
    cluster_version: dict[str, Any] = field(default_factory=dict)
    report_errors: list[UpdateError] = field(default_factory=list)
    done: int = 0
    total: int = 0
    blocked: bool = False  # an upgrade its preconditions never let start
    last_progress: datetime | None = None  # when a report last got further (the CVO's LastProgress)


class WrongRelease(Exception):
    """A reconcile was asked to apply a release other than the one the cluster runs.

    Only an upgrade, through its preconditions, may move the cluster to another release; a reconcile
    of another release would bypass every gate.
    """
