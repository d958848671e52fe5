"""The available updates kept between syncs, and when to fetch them again: pkg/cvo/availableupdates.go
``syncAvailableUpdates``, ``availableUpdates``, ``setAvailableUpdates``.

:func:`plan` decides, in the CVO's order::

    no state yet ─────────────────────────► fetch (a failure lists nothing)
    channel or architecture changed ──────► fetch (a failure lists nothing)
    nothing retrieved for 24 h ───────────► fetch (a failure clears what was kept)
    last attempt older than the interval ─► fetch (a failure keeps the previous updates)
    same update service ──┬ a Recommended not True/False, or acceptRisks changed ─► evaluate again
                          └ otherwise ──────────────────────────────────────────► wait
    update service changed ───────────────► fetch (a failure lists nothing)

"Keeps" applies to the exchange's failures only (``RemoteFailed``, ``ResponseFailed``,
``ResponseInvalid``).  Time is what ``now`` says (the caller's :class:`cvo.clock.Clock`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from cvo.payload.semver import SemverError, Version
from cvo.updates.model import ConditionalUpdate, MatchingRule, Release, Retrieved, Risk
from cvo.updates.retrieve import RESPONSE_FAILED, Calculated

DEFAULT_UPDATE_SERVICE = "https://api.openshift.com/api/upgrades_info/v1/graph"
MAXIMUM_CACHE_INTERVAL = timedelta(hours=24)
RECOMMENDED = "Recommended"


@dataclass(frozen=True)
class UpdatesState:
    """``availableUpdates``: ``update_service`` is "" when the default one was used; ``upstream_*`` as
    retrieved, ``updates``/``conditional`` as evaluated; ``retrieved`` None before any retrieval."""

    update_service: str = ""
    channel: str = ""
    architecture: str = ""
    accept_risks: frozenset[str] = frozenset()
    last_attempt: datetime | None = None
    last_sync_or_config_change: datetime | None = None
    current: Release | None = None
    upstream_updates: tuple[Release, ...] | None = None
    upstream_conditional: tuple[ConditionalUpdate, ...] = ()
    updates: tuple[Release, ...] | None = None
    conditional: tuple[ConditionalUpdate, ...] = ()
    retrieved: Retrieved | None = None
    risks: tuple[Risk, ...] | None = None  # RiskConditions, as the gated status.conditionalUpdateRisks
    version: str = ""  # the release it was retrieved for (the CVO's own: a new one is a new CVO process)

    def recently_attempted(self, now: datetime, interval: timedelta) -> bool:
        return self.last_attempt is not None and self.last_attempt > now - interval

    def recently_changed(self, now: datetime, interval: timedelta) -> bool:
        return self.last_sync_or_config_change is not None and self.last_sync_or_config_change > now - interval


@dataclass(frozen=True)
class Inputs:
    """What ``syncAvailableUpdates`` reads: the operator's flag, the ClusterVersion's spec, its own release."""

    flag_update_service: str = ""  # --update-service: overrides spec.upstream
    spec_upstream: str = ""
    channel: str = ""
    desired_arch: str = ""  # spec.desiredUpdate.architecture, else the current one (getDesiredArchitecture)
    current_arch: str = ""  # Multi, or the runtime's (getCurrentArchitecture)
    accept_risks: frozenset[str] = frozenset()
    cluster_id: str = ""
    version: str = ""  # the release being reconciled
    default_update_service: str = DEFAULT_UPDATE_SERVICE  # "": none (then NoUpstream; cvo's embedded cluster)

    def update_service(self) -> tuple[str, bool, str]:
        """The update service, whether it is the default one, and where it came from."""
        if self.flag_update_service:
            return self.flag_update_service, False, "the --update-service command line option"
        if self.spec_upstream:
            return self.spec_upstream, False, "ClusterVersion spec.upstream"
        return self.default_update_service, True, "the operator's default update service"


@dataclass(frozen=True)
class Step:
    action: Literal["wait", "fetch", "evaluate"]
    update_service: str
    used_default: bool
    preserve_on_failure: bool
    why: str


def needs_evaluation(conditional: Sequence[ConditionalUpdate]) -> bool:
    """A conditional update without a Recommended condition, or with one that is neither True nor False."""
    for update in conditional:
        recommended = next((c for c in update.conditions if c.get("type") == RECOMMENDED), None)
        if recommended is None or recommended.get("status") not in ("True", "False"):
            return True
    return False


def plan(state: UpdatesState | None, inputs: Inputs, now: datetime, minimum_interval: timedelta) -> Step:
    service, used_default, source = inputs.update_service()

    def step(action: Literal["wait", "fetch", "evaluate"], why: str, preserve: bool = False) -> Step:
        return Step(action, service, used_default, preserve, why)

    if state is None:
        return step("fetch", "First attempt to retrieve available updates")
    if inputs.channel != state.channel:
        return step("fetch", f"Retrieving available updates again, because the channel has changed from "
                             f"{state.channel!r} to {inputs.channel!r}")
    if inputs.desired_arch != state.architecture:
        return step("fetch", f"Retrieving available updates again, because the architecture has changed from "
                             f"{state.architecture!r} to {inputs.desired_arch!r}")
    if not state.recently_changed(now, MAXIMUM_CACHE_INTERVAL):
        return step("fetch", "Retrieving available updates again, because more than 24h0m0s has elapsed since "
                             "last change.  Will clear the cache if this fails.")
    if not state.recently_attempted(now, minimum_interval):
        return step("fetch", "Retrieving available updates again, because more than the minimum interval has "
                             "elapsed since last attempt", preserve=True)
    if service == state.update_service or (used_default and state.update_service == ""):
        if needs_evaluation(state.conditional) or inputs.accept_risks != state.accept_risks:
            return step("evaluate", "Evaluating conditional updates again", preserve=True)
        return step("wait", "Available updates were recently retrieved, will try later.", preserve=True)
    return step("fetch", f"Retrieving available updates again, because the update service has changed from "
                         f"{state.update_service!r} to {service!r} from {source}")


def after_fetch(state: UpdatesState | None, step: Step, inputs: Inputs, calculated: Calculated,
                now: datetime) -> UpdatesState:
    """The ``needFreshFetch`` block: the attempt recorded, and what was retrieved kept unless the exchange
    failed on a refetch that may keep the previous updates.  ``state`` None: seed nothing."""
    base = state or UpdatesState()
    conditional = tuple(_with_conditions_of(c, base.conditional) for c in calculated.conditional)
    new = replace(base, last_attempt=now, update_service="" if step.used_default else step.update_service,
                  channel=inputs.channel, architecture=inputs.desired_arch, retrieved=calculated.retrieved,
                  version=inputs.version)
    failed = calculated.retrieved.status == "False" and calculated.retrieved.reason in RESPONSE_FAILED
    if not failed or not step.preserve_on_failure:
        new = replace(new, current=calculated.current, upstream_updates=calculated.updates,
                      upstream_conditional=conditional)
    return new


def _with_conditions_of(update: ConditionalUpdate, known: Sequence[ConditionalUpdate]) -> ConditionalUpdate:
    """The conditions the operator already had for this target (by image): lastTransitionTime kept."""
    for old in known:
        if old.release.image == update.release.image:
            return replace(update, conditions=old.conditions)
    return update


def set_available_updates(previous: UpdatesState | None, new: UpdatesState) -> UpdatesState:
    """``setAvailableUpdates``: updates and conditional updates newest first; ``last_sync_or_config_change``
    moves to the attempt on success or a change of update service, channel or architecture."""
    updates = None if new.updates is None else tuple(sorted(new.updates, key=_version_key, reverse=True))
    conditional = tuple(sorted(new.conditional, key=lambda c: _version_key(c.release), reverse=True))
    new = replace(new, updates=updates, conditional=conditional)
    success = new.retrieved is not None and new.retrieved.status == "True"
    if (previous is None or previous.update_service != new.update_service or previous.channel != new.channel
            or previous.architecture != new.architecture or success):
        return replace(new, last_sync_or_config_change=new.last_attempt)
    return replace(new, last_sync_or_config_change=previous.last_sync_or_config_change)


def _version_key(release: Release) -> Version:
    try:
        return Version.parse(release.version)
    except SemverError:  # the CVO's semver.MustParse would panic; such a release sorts last
        return Version(0, 0, 0, ("0",))


# --- conditional updates as a ClusterVersion's status holds them ------------------------------------------


def release_from_status(data: Mapping[str, Any]) -> Release:
    channels = data.get("channels")
    return Release(str(data.get("version") or ""), str(data.get("image") or ""), str(data.get("url") or ""),
                   tuple(str(c) for c in channels) if isinstance(channels, list) else (),
                   str(data.get("architecture") or ""))


def _rule_from_status(data: Any) -> MatchingRule:
    if not isinstance(data, Mapping):
        return MatchingRule("")
    promql = data.get("promql")
    query = promql.get("promql") if isinstance(promql, Mapping) else ""
    return MatchingRule(str(data.get("type") or ""), query if isinstance(query, str) else "")


def conditional_from_status(items: Any) -> tuple[ConditionalUpdate, ...]:
    """``status.conditionalUpdates`` (the first attempt seeds its conditions from them, as the CVO does)."""
    out: list[ConditionalUpdate] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping) or not isinstance(item.get("release"), Mapping):
            continue
        risks = tuple(Risk(str(r.get("name") or ""), str(r.get("message") or ""), str(r.get("url") or ""),
                           tuple(_rule_from_status(m) for m in r.get("matchingRules") or []
                                 if isinstance(r.get("matchingRules"), list)))
                      for r in item.get("risks") or [] if isinstance(r, Mapping))
        conditions = tuple(dict(c) for c in item.get("conditions") or [] if isinstance(c, Mapping))
        out.append(ConditionalUpdate(release_from_status(item["release"]), risks, conditions))
    return tuple(out)


@dataclass
class PollState:
    """The state a controller (or a command) keeps between syncs; ``value`` None before the first."""

    value: UpdatesState | None = None
    last_part: Any = field(default=None)  # the last status part handed to the writer
