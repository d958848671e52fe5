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
from cvo.log import get_logger
from cvo.objects import ClusterOperator, ClusterVersion, OperatorCondition
from cvo.payload.conditions import set_condition
from cvo.payload.fields import dig
from cvo.status.clusterversion import SyncStatus, update_cluster_version_status
from cvo.updates.model import Updates
from cvo.updates.sources import SourcedRisks
from cvo.updates.validation import INVALID, INVALID_REASON, invalid_message, validate_cluster_version

# The order parts are applied in; each later one owns fields the earlier ones keep.
SLOTS = ("sync", "updates", "upgradeable", "accepted")

log = get_logger("cvo.status")


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
        status = merge_release_metadata(status, self.updates)  # whatever the spec says now, as the CVO
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


def _digest(pullspec: str) -> str:
    """pkg/cvo/sync_worker.go ``splitDigest``: the pull spec's digest, "" when it is not by digest."""
    parts = pullspec.split("@")
    return parts[1] if len(parts) == 2 else ""


def equal_digest(a: str, b: str) -> bool:
    """pkg/cvo/sync_worker.go ``equalDigest``: identical pull specs, or by-digest ones of equal digests."""
    return a == b or (_digest(a) != "" and _digest(a) == _digest(b))


def merge_release_metadata(status: dict[str, Any], updates: Updates) -> dict[str, Any]:
    """``status`` with ``desired``'s missing version, url and channels filled in from the update graph's node for
    that release (the current release's, else an available update's, matched by digest), as pkg/cvo/cvo.go
    ``mergeReleaseMetadata`` does: what the release's own metadata gave is kept.  (The architecture is left out,
    as the CVO leaves it without the StatusReleaseArchitecture gate.)"""
    desired = status.get("desired")
    if not isinstance(desired, Mapping) or (desired.get("version") and desired.get("url") and "channels" in desired):
        return status
    image = str(desired.get("image") or "")
    candidates = [updates.current] if updates.current is not None else []
    node = next((r for r in [*candidates, *(updates.available or ())] if equal_digest(image, r.image)), None)
    if node is None:
        log.debug("no available update matches the desired release's digest", image=image,
                  version=desired.get("version"))
        return status
    merged = dict(desired)
    merged["version"] = merged.get("version") or node.version
    merged["url"] = merged.get("url") or node.url
    if "channels" not in merged and node.channels:
        merged["channels"] = list(node.channels)
    order = ("version", "image", "url", "channels")
    merged = {**{k: merged[k] for k in order if merged.get(k)}, **{k: v for k, v in merged.items() if k not in order}}
    return {**status, "desired": merged}


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


def set_invalid(status: dict[str, Any], cv: Mapping[str, Any], gated: bool, now: datetime) -> dict[str, Any]:
    """The ``Invalid`` condition from lib/validation ``ValidateClusterVersion`` (pkg/cvo/status.go
    ``updateClusterVersionStatus``): set while the spec is invalid, removed otherwise.  ``gated``: the
    ClusterUpdateAcceptRisks gate, which decides whether ``acceptRisks`` may be given."""
    errors = validate_cluster_version(cv, gated)
    conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, dict)]
    if errors:
        set_condition(conditions, INVALID, "True", INVALID_REASON, invalid_message(errors), now)
    else:
        conditions = [c for c in conditions if c.get("type") != INVALID]
    return {**status, "conditions": conditions}


def desired_risk_names(status: Mapping[str, Any]) -> list[str]:
    """The gated ``riskNames`` of the conditional update to ``status.desired.image`` (status.go
    ``conditionalUpdateWithRiskNamesAndRiskConditions``' second result); [] without the gate, which writes none."""
    image = dig(status, "desired", "image")
    updates = status.get("conditionalUpdates")
    for update in updates if isinstance(updates, list) and image else []:
        if isinstance(update, Mapping) and dig(update, "release", "image") == image:
            names = update.get("riskNames")
            return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    return []


def _with_local_reconcile(parts: Mapping[str, StatusPart]) -> Mapping[str, StatusPart]:
    """A reconcile whose release was the last one loaded applies the CVO's own payload, which the CVO loads as
    local (pkg/cvo/sync_worker.go ``LoadPayloadStatus.Local``): its sync leaves the history's accepted risks as
    they are.  A reconcile while another release was refused (ReleaseAccepted=False) is not: that load's empty
    risks are written, as the CVO writes them."""
    sync, accepted = parts.get("sync"), parts.get("accepted")
    if not isinstance(sync, Sync) or not sync.status.reconciling or sync.status.local or (
            isinstance(accepted, Accepted) and accepted.status != "True"):
        return parts
    return {**parts, "sync": Sync(dataclasses.replace(sync.status, local=True))}


def merge(parts: Mapping[str, StatusPart], status: dict[str, Any], cv: Mapping[str, Any],
          now: datetime, gated: bool | None = None) -> dict[str, Any]:
    """``status`` with every part applied, in :data:`SLOTS` order, then the history's ``acceptedRisks`` extended
    with the risks of the update to the desired release (``updateClusterVersionStatus``: gated, and written
    only under the gate).  ``gated``: the ClusterUpdateAcceptRisks gate, when the writer knows it; then the
    ``Invalid`` condition is set first (the sync part's Progressing message reads it)."""
    if gated is not None:
        status = set_invalid(status, cv, gated, now)
    parts = _with_local_reconcile(parts)
    for slot in SLOTS:
        part = parts.get(slot)
        if part is not None:
            status = part.apply(status, cv, now)
    names = desired_risk_names(status)
    history = status.get("history")
    if names and isinstance(history, list):
        from cvo.updates.evaluate import with_accepted_risks  # here: the listing's import time

        image = str(dig(status, "desired", "image") or "")
        status = {**status, "history": with_accepted_risks([h for h in history if isinstance(h, Mapping)], image,
                                                          names)}
    return status
