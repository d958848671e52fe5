"""One walk over the task graph: what it applied, what failed, what its waits were cut short on."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from cvo.payload.errors import UpdateError
from cvo.runner.apply import ApplyOutcome

CONTEXT_REASON = "UpdatePayloadFailed"  # an attempt cut short by its deadline (the CVO's errContext)


@dataclass
class Attempt:
    number: int
    errors: dict[int, UpdateError] = field(default_factory=dict)  # node -> its error
    report_errors: list[UpdateError] = field(default_factory=list)  # tolerated (install: Degraded operators)
    interrupted_waits: dict[str, UpdateError] = field(default_factory=dict)  # ClusterOperator waits cut by the deadline
    unapplied: set[int] = field(default_factory=set)  # id() of manifests this attempt will not apply (skipped, or a failed node's)
    precreated: dict[int, dict[str, Any]] = field(default_factory=dict)  # id() of tasks -> the ClusterOperator just created
    early: dict[int, asyncio.Future[ApplyOutcome]] = field(default_factory=dict)  # id() of CRD tasks -> their early apply
