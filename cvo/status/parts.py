"""The parts of a ClusterVersion's status, each reported by one producer and merged by one writer.

The CVO's operator keeps the latest value of each producer — the sync worker's ``SyncWorkerStatus``,
the Upgradeable conditions of ``syncUpgradeable``, the available updates of ``syncAvailableUpdates`` —
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
from cvo.gates.upgradeable import Blocker, apply_upgradeable, blockers
from cvo.payload.conditions import set_condition
from cvo.payload.fields import dig
from cvo.status.clusterversion import SyncStatus, update_cluster_version_status
from cvo.updates.model import Updates

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
    """What blocks minor updates, as the sync worker's watches see it; evaluated against the ClusterVersion
    being written (its ``spec.overrides``), as ``syncUpgradeable`` (pkg/cvo/upgradeable.go) does."""

    slot: ClassVar[str] = "upgradeable"
    cluster_operators: Sequence[Mapping[str, Any]] = ()  # those reporting Upgradeable=False
    operator_conditions: Sequence[Mapping[str, Any]] = ()
    deletes_in_progress: Sequence[Ref] = ()

    def apply(self, status: dict[str, Any], cv: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        found = blockers(dict(cv), [dict(c) for c in self.cluster_operators],
                         [dict(o) for o in self.operator_conditions], self.deletes_in_progress)
        return apply_upgradeable(status, found, now)


@dataclass(frozen=True)
class Upgradeable:
    """What blocks minor updates, already evaluated (the upgrade's preconditions, :mod:`cvo.runner.upgrade`)."""

    slot: ClassVar[str] = "upgradeable"
    blockers: Sequence[Blocker]

    def apply(self, status: dict[str, Any], cv: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        return apply_upgradeable(status, self.blockers, now)


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
