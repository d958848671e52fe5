"""The parts of a ClusterVersion's status, each reported by one producer and merged by one writer.

The CVO's operator keeps the latest value of each producer — the sync worker's ``SyncWorkerStatus``,
the risks behind ``Upgradeable`` (``setUpgradeableCondition``), the available updates of ``syncAvailableUpdates`` —
and ``syncStatus`` (pkg/cvo/status.go) merges all of them into the status it writes.  A part here is
such a value: ``apply`` is a pure function of the status read, the ClusterVersion it belongs to and
``now``; :class:`cvo.runner.status_writer.StatusWriter` keeps the latest part of each :data:`SLOTS`
entry and applies them in that order on every write.  A new producer (the update graph) adds a slot,
not a writer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Protocol

from cvo.cluster.api import Ref
from cvo.gates.risks.reads import Failed, Read
from cvo.gates.upgradeable import ClusterState, set_upgradeable, update_versions, upgradeable_risks
from cvo.objects import ClusterOperator, ClusterVersion, OperatorCondition
from cvo.payload.conditions import set_condition
from cvo.payload.fields import dig
from cvo.status.clusterversion import SyncStatus, update_cluster_version_status
from cvo.updates.model import Updates
from cvo.updates.sources import SourcedRisks

# The order parts are applied in; each later one owns fields the earlier ones keep.
SLOTS = ("sync", "updates", "upgradeable", "accepted")


class StatusPart(Protocol):
    slot: ClassVar[str]  # one of SLOTS: a part replaces the earlier part of its slot

    def apply(self, status: dict[str, Any], cv: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        """``status`` with this part's fields set (``status`` itself is not modified)."""
        ...


@dataclass(frozen=True)
class Sync:
    """The sync worker's report (``SyncWorkerStatus``): history, desired, Available, Failing, Progressing."""

    slot: ClassVar[str] = "sync"
    status: SyncStatus

    def apply(self, status: dict[str, Any], cv: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        generation = dig(cv, "metadata", "generation")
        sync = dataclasses.replace(self.status, generation=generation if isinstance(generation, int) else None)
        return update_cluster_version_status(status, sync, now)


@dataclass(frozen=True)
class AvailableUpdates:
    """What the update graph offers (``syncAvailableUpdates`` in pkg/cvo/availableupdates.go):
    ``availableUpdates``, ``conditionalUpdates`` and ``RetrievedUpdates``; written only while the
    ClusterVersion's upstream and channel are still those it was computed for (``NeedsUpdate``)."""

    slot: ClassVar[str] = "updates"
    updates: Updates
    gated: bool = False  # the ClusterUpdateAcceptRisks family: riskNames, conditionalUpdateRisks

    def apply(self, status: dict[str, Any], cv: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        spec = cv.get("spec") if isinstance(cv.get("spec"), Mapping) else {}
        upstream = spec.get("upstream") if isinstance(spec, Mapping) else None
        channel = spec.get("channel") if isinstance(spec, Mapping) else None
        if (upstream or "") != self.updates.upstream or (channel or "") != self.updates.channel:
            return status
        new = dict(status)
        available = self.updates.available
        new["availableUpdates"] = None if available is None else [r.to_json() for r in available]
        if self.updates.conditional:
            new["conditionalUpdates"] = [c.to_json(self.gated) for c in self.updates.conditional]
        else:
            new.pop("conditionalUpdates", None)
        if self.gated and self.updates.risks:
            new["conditionalUpdateRisks"] = [r.to_json(with_conditions=True) for r in self.updates.risks]
        else:
            new.pop("conditionalUpdateRisks", None)
        conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, dict)]
        retrieved = self.updates.retrieved
        set_condition(conditions, "RetrievedUpdates", retrieved.status, retrieved.reason, retrieved.message, now)
        new["conditions"] = conditions
        return new


@dataclass(frozen=True)
class UpgradeableInputs:
    """What the risk sources of ``Upgradeable`` read, as the sync worker's watches see it; evaluated against the
    ClusterVersion being written (its ``spec.overrides``, and the status this write gives it: ``Progressing``,
    ``desired``, the updates), as ``setUpgradeableCondition`` (pkg/cvo/status.go) evaluates during ``syncStatus``."""

    slot: ClassVar[str] = "upgradeable"
    cluster_operators: Sequence[Mapping[str, Any]] | Failed = ()  # those reporting Upgradeable=False will do
    operator_conditions: Sequence[Mapping[str, Any]] | Failed = ()
    deletes_in_progress: Sequence[Ref] = ()
    admin_gates: Read = None
    admin_acks: Read = None

    def apply(self, status: dict[str, Any], cv: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        cos, ocs = self.cluster_operators, self.operator_conditions
        state = ClusterState(ClusterVersion.of({**cv, "status": status}),
                             cos if isinstance(cos, Failed) else tuple(ClusterOperator.of(c) for c in cos),
                             ocs if isinstance(ocs, Failed) else tuple(OperatorCondition.of(o) for o in ocs),
                             self.deletes_in_progress, self.admin_gates, self.admin_acks)
        return set_upgradeable(status, upgradeable_risks(state, update_versions(status)), now)


@dataclass(frozen=True)
class Upgradeable:
    """The risks of ``Upgradeable``, already found (the upgrade's preconditions, :mod:`cvo.runner.upgrade`)."""

    slot: ClassVar[str] = "upgradeable"
    found: SourcedRisks

    def apply(self, status: dict[str, Any], cv: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        return set_upgradeable(status, self.found, now)


@dataclass(frozen=True)
class Accepted:
    """The ReleaseAccepted condition: whether the desired release was loaded and let through its
    preconditions (``LoadPayloadStatus`` of ``SyncWorkerStatus``; reasons ``PayloadLoaded``,
    ``PreconditionChecks``, ``RetrievePayload`` …)."""

    slot: ClassVar[str] = "accepted"
    status: str
    reason: str
    message: str

    def apply(self, status: dict[str, Any], cv: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, dict)]
        set_condition(conditions, "ReleaseAccepted", self.status, self.reason, self.message, now)
        return {**status, "conditions": conditions}


def merge(parts: Mapping[str, StatusPart], status: dict[str, Any], cv: Mapping[str, Any],
          now: datetime) -> dict[str, Any]:
    """``status`` with every part applied, in :data:`SLOTS` order."""
    for slot in SLOTS:
        part = parts.get(slot)
        if part is not None:
            status = part.apply(status, cv, now)
    return status
