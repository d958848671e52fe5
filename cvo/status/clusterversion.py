"""ClusterVersion status, computed the way the CVO computes it.

A pure port of ``pkg/cvo/status.go`` (``updateClusterVersionStatus``, ``mergeOperatorHistory``,
``convertErrorToProgressing``, ``filterErrorForFailingCondition``), ``status_history.go`` (``prune``)
and ``lib/resourcemerge`` (``SetOperatorStatusCondition``).  Nothing here does I/O or reads a clock:
the sweep runner passes what it knows in a :class:`SyncStatus` plus ``now``, and gets back a new
``status`` dict for the ClusterVersion object.

Objects are plain dicts in Kubernetes JSON form; timestamps are RFC 3339 strings.
"""

from __future__ import annotations

import copy
import math
import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from cvo.clock import to_rfc3339
from cvo.payload.capabilities import Capabilities
from cvo.payload.conditions import (  # noqa: F401 - re-exported: status readers take them from here
    COMPLETED,
    Condition,
    HistoryEntry,
    current_version,
    find_condition,
    set_condition,
    set_optional,
)
from cvo.payload.errors import Effect, UpdateError, condense_cluster_operators, summarize, summary_for_reason
from cvo.payload.filters import API_CAPABILITIES
from cvo.updates.validation import INVALID, INVALID_REASON

MAX_HISTORY = 100
PARTIAL = "Partial"
MACHINE_CONFIG = "machine-config"
MULTIPLE_ERRORS = "MultipleErrors"
SLOW_REASON = "SlowClusterOperator"


@dataclass
class SyncStatus:
    """What the sweep runner reports after (or during) an apply: the CVO's ``SyncWorkerStatus``.

    ``failure`` is the error already summarised by :func:`cvo.payload.errors.summarize`.  When it is a
    ``MultipleErrors`` error, ``errors`` must hold the task errors it was summarised from: the CVO
    keeps them nested inside the error and re-summarises them without the ``None``-effect ones for
    the Failing condition (without them the MultipleErrors failure is used unfiltered).

    ``co_start_times`` is the first time each ClusterOperator was waited on in the current attempt
    series (the CVO's ``COUpdateStartTimes``).  ``initial`` (install mode) is not read here: the
    install-only ``Report`` effect already carries it.  The ReleaseAccepted condition is a part of its own
    (:class:`cvo.status.parts.Accepted`).
    """

    version: str
    image: str
    done: int = 0
    total: int = 0
    completed: int = 0
    reconciling: bool = False
    failure: Exception | None = None
    errors: Sequence[UpdateError] = ()
    initial: bool = False
    co_start_times: Mapping[str, datetime] = field(default_factory=dict)
    accepted_risks: str = ""
    verified: bool = False
    local: bool = False  # a local payload: accepted risks on an existing entry are left alone
    generation: int | None = None  # written as observedGeneration when set
    version_hash: str = ""
    capabilities: Capabilities | None = None  # status.capabilities and ImplicitlyEnabledCapabilities, when given
    channels: tuple[str, ...] = ()  # the release metadata's channels (sorted), for status.desired.channels
    url: str = ""  # the release metadata's url, for status.desired.url


@dataclass(frozen=True)
class Thresholds:
    """How long a ClusterOperator may be waited on before the CVO says so (pkg/cvo/status.go `convertErrorToProgressing`)."""

    slow: timedelta = timedelta(minutes=30)  # "updating versions" → Failing=Unknown
    slow_machine_config: timedelta = timedelta(minutes=90)
    degraded: timedelta = timedelta(minutes=40)  # Degraded → Failing=True


class _Cond(NamedTuple):
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class _Progress:
    """``convertErrorToProgressing``: how a failure reads as progress."""

    reason: str
    message: str
    tolerated: bool  # the CVO's skipFailure: shown as progress, not as a failure
    slow: bool = False  # longer than expected (the CVO marks the reason "Slow::"): Failing=Unknown


# --- conditions (SetOperatorStatusCondition) -------------------------------------------------------


# --- history (mergeOperatorHistory, prune) ---------------------------------------------------------


def merge_history(history: Sequence[HistoryEntry], version: str, image: str, completed: bool, now: datetime,
                  accepted_risks: str = "", verified: bool = False, local: bool = False) -> list[HistoryEntry]:
    """``mergeOperatorHistory``: a new history (newest first, at most 100 entries) for the desired release.

    The input is not modified.  Without an image the history is returned as it is.
    """
    merged = copy.deepcopy(list(history))
    if not image:
        return merged
    stamp = to_rfc3339(now)
    if not merged:
        merged.append(_new_entry(version, image, PARTIAL, stamp, accepted_risks))
    last = merged[0]
    if not last.get("state"):
        last["state"] = PARTIAL
    if _merge_equal_versions(last, version, image):
        if completed:
            last["state"] = COMPLETED
            if last.get("completionTime") is None:
                last["completionTime"] = stamp
        if not local:
            set_optional(last, "acceptedRisks", accepted_risks)
    else:
        if last.get("completionTime") is None:
            last["completionTime"] = stamp  # the old head keeps its state: an abandoned Partial stays Partial
        merged.insert(0, _new_entry(version, image, COMPLETED if completed else PARTIAL, stamp, accepted_risks))
    if verified:
        merged[0]["verified"] = True
    while len(merged) > MAX_HISTORY:
        merged = prune(merged, MAX_HISTORY)
    return merged


def _new_entry(version: str, image: str, state: str, stamp: str, accepted_risks: str) -> HistoryEntry:
    entry: HistoryEntry = {
        "state": state,
        "startedTime": stamp,
        "completionTime": stamp if state == COMPLETED else None,
        "version": version,
        "image": image,
        "verified": False,
    }
    set_optional(entry, "acceptedRisks", accepted_risks)
    return entry


def _merge_equal_versions(last: HistoryEntry, version: str, image: str) -> bool:
    """``mergeEqualVersions``: whether ``last`` is the desired release; fills in its missing version or image."""
    last_version, last_image = last.get("version", ""), last.get("image", "")
    if image and image == last_image:
        if not version:
            return True
        if not last_version or version == last_version:
            last["version"] = version
            return True
    if version and version == last_version and (not last_image or image == last_image):
        last["image"] = image
        return True
    return False


# Weights from status_history.go: the highest-ranked entries survive.
_MOST_IMPORTANT = 1000.0
_INTERESTING = 30.0  # first or last completed update in a minor
_PARTIAL_MINOR = 20.0  # partial update between completed updates of different minors
_PARTIAL_Z_STREAM = -20.0  # partial update between completed updates of different z-streams
_INDEX_WEIGHT = -1.01
_FINAL_ENTRIES = 5  # indices 0..4 are never pruned


def prune(history: list[HistoryEntry], max_size: int = MAX_HISTORY) -> list[HistoryEntry]:
    """``prune``: drop the single least informative entry when ``history`` is longer than ``max_size``."""
    if len(history) <= max_size:
        return history
    newest_completed = next((j for j, e in enumerate(history) if e.get("state") == COMPLETED), -1)
    ranks = [_rank(history, i, max_size, newest_completed) for i in range(len(history))]
    lowest = ranks.index(min(ranks))  # the first of equal ranks, as in the CVO
    return history[:lowest] + history[lowest + 1:]


def _rank(h: Sequence[HistoryEntry], i: int, max_size: int, newest_completed: int) -> float:
    if i in (max_size, newest_completed) or i < _FINAL_ENTRIES:
        rank = _MOST_IMPORTANT
    elif _first_or_last_completed_in_minor(h, i, max_size):
        rank = _INTERESTING
    elif _partial_between(h, i, max_size, _minor):
        rank = _PARTIAL_MINOR
    elif _partial_between(h, i, max_size, _z_stream):
        rank = _PARTIAL_Z_STREAM
    else:
        rank = 0.0
    return rank + _INDEX_WEIGHT * i


def _older_completed(h: Sequence[HistoryEntry], i: int) -> int:
    return next((j for j in range(i + 1, len(h)) if h[j].get("state") == COMPLETED), i)


def _newer_completed(h: Sequence[HistoryEntry], i: int) -> int:
    return next((j for j in range(i - 1, -1, -1) if h[j].get("state") == COMPLETED), i)


def _version_part(entry: HistoryEntry, index: int) -> str:
    parts = entry.get("version", "").split(".")
    return parts[index] if len(parts) > index else ""


def _minor(entry: HistoryEntry) -> tuple[str, ...]:
    return (_version_part(entry, 1),)


def _z_stream(entry: HistoryEntry) -> tuple[str, ...]:
    return (_version_part(entry, 1), _version_part(entry, 2))


def _first_or_last_completed_in_minor(h: Sequence[HistoryEntry], i: int, max_size: int) -> bool:
    if h[i].get("state") == PARTIAL:
        return False
    if i in (0, max_size):
        return True
    return any(j == i or _minor(h[i]) != _minor(h[j]) for j in (_older_completed(h, i), _newer_completed(h, i)))


def _partial_between(h: Sequence[HistoryEntry], i: int, max_size: int,
                     key: Callable[[HistoryEntry], tuple[str, ...]]) -> bool:
    """A partial entry between completed entries whose ``key`` (minor, or minor and z) differ."""
    if h[i].get("state") == COMPLETED or i in (0, max_size):
        return False
    older, newer = _older_completed(h, i), _newer_completed(h, i)
    return older != i and newer != i and key(h[older]) != key(h[newer])


# --- errors as progress (convertErrorToProgressing, filterErrorForFailingCondition) ---------------


def _minutes(delta: timedelta) -> int:
    return int(delta.total_seconds() // 60)


def _names(err: UpdateError) -> list[str]:
    return list(err.names) or [err.name]


def _convert_error_to_progressing(failure: Exception | None, starts: Mapping[str, datetime], now: datetime,
                                  limits: Thresholds) -> _Progress | None:
    """How the failure reads in Progressing; ``None`` when it is shown as a plain failure.

    ``MultipleErrors`` carries no effect in the CVO, so it is never converted.
    """
    if not isinstance(failure, UpdateError) or failure.reason == MULTIPLE_ERRORS:
        return None
    if failure.effect == Effect.REPORT:
        return _Progress(failure.reason, failure.message, tolerated=False)
    if failure.effect == Effect.NONE:
        return _updating_progress(failure, starts, now, limits)
    if failure.effect == Effect.FAIL_AFTER_INTERVAL:
        return _degraded_progress(failure, starts, now, limits)
    return None


def _updating_progress(err: UpdateError, starts: Mapping[str, datetime], now: datetime,
                       limits: Thresholds) -> _Progress:
    """Operators still updating versions: "waiting on", or slow past 30 (machine-config: 90) minutes.

    An operator without a recorded start time is never slow.
    """
    names = _names(err)

    def slow(name: str, limit: timedelta) -> bool:
        started = starts.get(name)
        return started is not None and started < now - limit

    exceeded = [n for n in names if n != MACHINE_CONFIG and slow(n, limits.slow)]
    mco_slow = MACHINE_CONFIG in names and slow(MACHINE_CONFIG, limits.slow_machine_config)
    parts = []
    if exceeded:
        parts.append(f"{', '.join(exceeded)} over {_minutes(limits.slow)} minutes")
    if mco_slow:
        parts.append(f"{MACHINE_CONFIG} over {_minutes(limits.slow_machine_config)} minutes")
    if parts:
        message = f"waiting on {' and '.join(parts)} which is longer than expected"
        return _Progress(err.reason, message, tolerated=True, slow=True)
    return _Progress(err.reason, f"waiting on {', '.join(names)}", tolerated=True)


def _degraded_progress(err: UpdateError, starts: Mapping[str, datetime], now: datetime,
                       limits: Thresholds) -> _Progress:
    """Degraded operators: tolerated for 40 minutes from their start time, then a failure.

    ⚠ As in the CVO, an operator without a recorded start time has exceeded the interval at once.
    """
    cutoff = now - limits.degraded
    exceeded = [n for n in _names(err) if n not in starts or starts[n] < cutoff]
    minutes = _minutes(limits.degraded)
    if exceeded:
        message = f"wait has exceeded {minutes} minutes for these operators: {', '.join(exceeded)}"
        return _Progress(err.reason, message, tolerated=False)
    return _Progress(err.reason, f"waiting up to {minutes} minutes on {err.name}", tolerated=True)


def _filter_for_failing(failure: Exception | None, errors: Sequence[UpdateError]) -> Exception | None:
    """``filterErrorForFailingCondition``: a MultipleErrors failure without its ``None``-effect errors."""
    if not isinstance(failure, UpdateError) or failure.reason != MULTIPLE_ERRORS or not errors:
        return failure
    remaining = [e for e in condense_cluster_operators(errors) if e.effect != Effect.NONE]
    return summarize(remaining)


def _reason_message(err: Exception | None) -> tuple[str, str]:
    if err is None:
        return "", ""
    return (err.reason if isinstance(err, UpdateError) else ""), str(err)


# --- the status -----------------------------------------------------------------------------------


def version_string(version: str, image: str) -> str:
    """``versionStringFromRelease``."""
    return version or image or "<unknown>"


def update_cluster_version_status(status: Mapping[str, Any], sync: SyncStatus, now: datetime, *,
                                  slow_threshold: timedelta = timedelta(minutes=30),
                                  mco_threshold: timedelta = timedelta(minutes=90),
                                  degraded_interval: timedelta = timedelta(minutes=40)) -> dict[str, Any]:
    """``updateClusterVersionStatus``: the new ClusterVersion ``status`` for ``sync`` at ``now``.

    ``status`` is not modified.  Written: ``desired``, ``history``, ``observedGeneration`` and
    ``versionHash`` and ``capabilities`` (when given), and the conditions ImplicitlyEnabledCapabilities
    (when given), Available, Failing, Progressing and RetrievedUpdates (defaulted).
    Other fields and conditions are kept.
    """
    limits = Thresholds(slow_threshold, mco_threshold, degraded_interval)
    new = copy.deepcopy(dict(status))
    if sync.generation is not None:
        new["observedGeneration"] = sync.generation
    if sync.version_hash:
        new["versionHash"] = sync.version_hash
    # Fields OpenShift's ClusterVersion CRD requires (a real API server rejects a status without them).
    new.setdefault("versionHash", "")
    new.setdefault("observedGeneration", 0)
    new.setdefault("availableUpdates", None)
    new["history"] = merge_history(new.get("history") or [], sync.version, sync.image, sync.completed > 0, now,
                                   sync.accepted_risks, sync.verified, sync.local)
    if sync.image:  # pkg/cvo/status.go syncStatus: the payload's URL and channels backfill status.desired
        new["desired"] = {"version": sync.version, "image": sync.image, **({"url": sync.url} if sync.url else {}),
                          **({"channels": list(sync.channels)} if sync.channels else {})}
    conditions: list[Condition] = new.setdefault("conditions", [])
    version = version_string(sync.version, sync.image)
    if sync.capabilities is not None:
        caps = sync.capabilities
        api = frozenset(API_CAPABILITIES)  # the CRD's enum: a real server refuses any other name
        new["capabilities"] = {"enabledCapabilities": sorted(caps.enabled & api),
                               "knownCapabilities": sorted(caps.known & api)}
        _set_implicitly_enabled(conditions, caps.implicit, now)
    _set_available(conditions, sync, version, now)
    invalid = (find_condition(conditions, INVALID) or {}).get("status") == "True"  # set by cvo.status.parts
    failing, progressing = _failing_and_progressing(sync, version, bool(new["history"]), now, limits, invalid)
    set_condition(conditions, "Failing", *failing, now)
    set_condition(conditions, "Progressing", *progressing, now)
    if find_condition(conditions, "RetrievedUpdates") is None:
        set_condition(conditions, "RetrievedUpdates", "False", "", "", now)
    return new


def _set_implicitly_enabled(conditions: list[Condition], implicit: frozenset[str], now: datetime) -> None:
    """``setImplicitlyEnabledCapabilitiesCondition`` (pkg/cvo/status.go)."""
    if implicit:
        set_condition(conditions, "ImplicitlyEnabledCapabilities", "True", "CapabilitiesImplicitlyEnabled",
                      f"The following capabilities could not be disabled: {', '.join(sorted(implicit))}", now)
    else:
        set_condition(conditions, "ImplicitlyEnabledCapabilities", "False", "AsExpected",
                      "Capabilities match configured spec", now)


def _set_available(conditions: list[Condition], sync: SyncStatus, version: str, now: datetime) -> None:
    """True once this payload was applied; otherwise left alone (defaulting to False)."""
    if sync.completed > 0:
        set_condition(conditions, "Available", "True", "", f"Done applying {version}", now)
    elif find_condition(conditions, "Available") is None:
        set_condition(conditions, "Available", "False", "", "", now)


def _failing_and_progressing(sync: SyncStatus, version: str, has_history: bool, now: datetime,
                             limits: Thresholds, invalid: bool = False) -> tuple[_Cond, _Cond]:
    progress = None
    failure = sync.failure
    if not sync.reconciling and has_history:
        progress = _convert_error_to_progressing(failure, sync.co_start_times, now, limits)
        failure = _filter_for_failing(failure, sync.errors)
    tolerated = progress is not None and progress.tolerated
    return _failing(failure, progress, tolerated), _progressing(sync, version, progress, tolerated, invalid)


def _failing(failure: Exception | None, progress: _Progress | None, tolerated: bool) -> _Cond:
    if failure is not None and progress is not None and progress.slow:
        return _Cond("Unknown", SLOW_REASON, progress.message)
    if failure is not None and not tolerated:
        return _Cond("True", *_reason_message(failure))
    return _Cond("False")


def _progressing(sync: SyncStatus, version: str, progress: _Progress | None, tolerated: bool,
                 invalid: bool = False) -> _Cond:
    """``invalid``: the spec fails validation (the Invalid condition): its reason, and said instead of progress."""
    err = sync.failure
    if err is not None and not tolerated:
        reason = err.reason if isinstance(err, UpdateError) else ""
        summary = progress.message if progress is not None and progress.message else _summary(err)
        if sync.reconciling:
            return _Cond("False", reason, f"Error while reconciling {version}: {summary}")
        return _Cond("True", reason, f"Unable to apply {version}: {summary}")
    if invalid:
        if sync.reconciling:
            return _Cond("False", INVALID_REASON, f"Stopped at {version}: the cluster version is invalid")
        return _Cond("True", INVALID_REASON, f"Reconciling {version}: the cluster version is invalid")
    if sync.reconciling:
        return _Cond("False", "", f"Cluster version is {version}")
    if progress is not None and tolerated:
        return _Cond("True", progress.reason, _working_towards(sync, version, progress.message))
    return _Cond("True", "", _working_towards(sync, version, ""))


def _summary(err: Exception) -> str:
    if isinstance(err, UpdateError):
        return summary_for_reason(err.reason, err.name)
    return "an error occurred"


def _working_towards(sync: SyncStatus, version: str, waiting: str) -> str:
    message = f"Working towards {version}"
    if sync.total > 0 and sync.done > 0:
        message += f": {sync.done} of {sync.total} done ({percent_complete(sync.done, sync.total)}% complete)"
        return f"{message}, {waiting}" if waiting else message
    return f"{message}: {waiting}" if waiting else message


def _float32(x: float) -> float:
    (value,) = struct.unpack("f", struct.pack("f", x))
    return float(value)


def percent_complete(done: int, total: int) -> int:
    """``math.Trunc(float64(float32(done)/float32(total)*100))``, float32 rounding included.

    The CVO computes in float32, so some fractions land just under a whole number: 53 of 100 → 52.
    """
    return math.trunc(_float32(_float32(done / total) * 100))


def cluster_version_object(name: str = "version", cluster_id: str = "",
                           desired_update: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An empty ClusterVersion object, before the CVO has written any status."""
    spec: dict[str, Any] = {"clusterID": cluster_id or str(uuid.uuid4())}  # required by the CRD
    if desired_update:
        spec["desiredUpdate"] = dict(desired_update)
    spec["overrides"] = []
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterVersion",
        "metadata": {"name": name},
        "spec": spec,
        "status": {},
    }
