"""One sync of the available updates (pkg/cvo/availableupdates.go ``syncAvailableUpdates``): read the
ClusterVersion, decide by the refetch policy (:func:`cvo.updates.poll.plan`) whether to fetch the graph,
evaluate the conditional updates again or wait, and hand the resulting ``AvailableUpdates`` part to the one
status writer.  ``cvo run`` calls it on every poll; the commands that need the graph when no controller
runs call it once.

The evaluation of conditional updates happens in :func:`evaluate_conditional` only: the risk evaluation
(``evaluateConditionalUpdates``, risks' ``cvo.updates.evaluate``) replaces its body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from cvo.clock import Clock
from cvo.cluster.api import Cluster, cv_ref
from cvo.log import get_logger
from cvo.payload.arch import go_arch
from cvo.runner.status_writer import StatusWriter
from cvo.status.parts import AvailableUpdates
from cvo.updates.client import UpdateServiceOptions
from cvo.updates.errors import EvaluationError
from cvo.updates.model import ALWAYS, PROMQL, ConditionalUpdate, MatchingRule, Release, Risk, Updates
from cvo.updates.poll import (
    DEFAULT_UPDATE_SERVICE,
    Inputs,
    PollState,
    UpdatesState,
    after_fetch,
    conditional_from_status,
    needs_evaluation,
    plan,
    set_available_updates,
)
from cvo.updates.retrieve import calculate
from cvo.updates.rules import ConditionRegistry
from cvo.updates.select import MULTI
from cvo.updates.sources import RiskSource, SourcedRisks

log = get_logger("cvo.updates")


@dataclass(frozen=True)
class RefreshOptions:
    update_service: str = ""  # --update-service: overrides spec.upstream
    default_update_service: str = DEFAULT_UPDATE_SERVICE  # when neither names one ("": none, NoUpstream)
    minimum_interval: float = 180.0  # minimumUpdateCheckInterval (the CVO: its resync period, 2–4 min)
    client: UpdateServiceOptions = field(default_factory=UpdateServiceOptions)
    runtime_arch: str = field(default_factory=go_arch)  # runtime.GOARCH


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def inputs_of(cv: Mapping[str, Any], options: RefreshOptions) -> Inputs:
    """What ``syncAvailableUpdates`` reads of the ClusterVersion; the running release is status.desired."""
    spec, status = _mapping(cv.get("spec")), _mapping(cv.get("status"))
    desired = _mapping(status.get("desired"))
    current_arch = MULTI if desired.get("architecture") == MULTI else options.runtime_arch
    update = _mapping(spec.get("desiredUpdate"))
    arch = update.get("architecture") if isinstance(update.get("architecture"), str) else ""
    accept = update.get("acceptRisks")
    accepted = frozenset(str(r.get("name")) for r in accept if isinstance(r, Mapping)) \
        if isinstance(accept, list) else frozenset()

    def text(value: Any) -> str:
        return value if isinstance(value, str) else ""

    return Inputs(flag_update_service=options.update_service, spec_upstream=text(spec.get("upstream")),
                  channel=text(spec.get("channel")), desired_arch=arch or current_arch, current_arch=current_arch,
                  accept_risks=accepted, cluster_id=text(spec.get("clusterID")), version=text(desired.get("version")),
                  default_update_service=options.default_update_service)


async def evaluate_conditional(updates: tuple[Release, ...] | None, conditional: tuple[ConditionalUpdate, ...],
                               registry: ConditionRegistry, accept_risks: frozenset[str], gated: bool,
                               extra: Sequence[SourcedRisks], clock: Clock, desired_image: str = "") -> tuple[
                                   tuple[Release, ...] | None, tuple[ConditionalUpdate, ...], tuple[Risk, ...] | None]:
    """``evaluateConditionalUpdates`` (:func:`cvo.updates.evaluate.evaluate`: the risk sources' risks merged in
    and ``acceptRisks`` honoured under the ClusterUpdateAcceptRisks gate) and what ``updateClusterVersionStatus``
    writes of it (:func:`cvo.updates.evaluate.status_lists`: newest first; under the gate the risks' Applies
    conditions, ``riskNames`` and ``conditionalUpdateRisks``).  The one place conditional updates are evaluated."""
    from cvo.updates.evaluate import evaluate, status_lists

    now = clock.now()
    evaluated = await evaluate(updates, conditional, registry, accept_risks, gated, extra, now=now)
    lists = status_lists(evaluated, gated, desired_image, now)
    return lists.available, lists.conditional, lists.risks


class NoMonitoring:
    """The condition registry of a cluster without a Prometheus to ask: ``Always`` applies, a ``PromQL`` rule
    cannot be evaluated (as on a CVO that cannot reach Thanos), other rule types are pruned.  Risks'
    ``cvo.updates.conditions.Registry`` replaces it where monitoring is configured."""

    async def match(self, rules: Sequence[MatchingRule]) -> bool:
        for rule in rules:
            if rule.type == ALWAYS:
                return True
            if rule.type == PROMQL:
                raise EvaluationError("no Prometheus is configured to evaluate PromQL")
        raise EvaluationError("no recognized matching rule")

    def prune_invalid(self, rules: Sequence[MatchingRule]) -> tuple[tuple[MatchingRule, ...], str]:
        kept, why = [], []
        for i, rule in enumerate(rules):
            if rule.type == ALWAYS or (rule.type == PROMQL and rule.promql):
                kept.append(rule)
            elif rule.type == PROMQL:
                why.append(f"{i}: the PromQL rule has no query")
            else:
                why.append(f"{i}: unrecognized condition type {rule.type!r}")
        return tuple(kept), "; ".join(why)


def _part(state: UpdatesState, gated: bool) -> AvailableUpdates:
    retrieved = state.retrieved
    assert retrieved is not None
    return AvailableUpdates(Updates(state.update_service, state.channel, state.updates, state.conditional,
                                    retrieved, state.risks, state.current), gated)


async def refresh_updates(cluster: Cluster, clock: Clock, options: RefreshOptions, state: PollState,
                          sources: Sequence[RiskSource], registry: ConditionRegistry, gated: bool = False,
                          writer: StatusWriter | None = None) -> AvailableUpdates | None:
    """One ``syncAvailableUpdates``: the part for the status (None: no ClusterVersion, or nothing retrieved
    yet), handed to ``writer`` (forced when it changed).  ``state`` keeps what the next call needs."""
    cv = await cluster.get(cv_ref())
    if cv is None:
        return None
    inputs = inputs_of(cv, options)
    if state.value is not None and state.value.version != inputs.version:
        # The CVO runs the release it reconciles: another release is another CVO process, which starts afresh.
        log.info("available updates: another release is reconciled; starting afresh", previous=state.value.version,
                 version=inputs.version)
        state.value = None
    now = clock.now()
    step = plan(state.value, inputs, now, timedelta(seconds=options.minimum_interval))
    log.debug("available updates", action=step.action, why=step.why)
    if step.action == "wait":
        last = state.last_part if isinstance(state.last_part, AvailableUpdates) else None
        if writer is not None and last is not None:
            # the CVO's status sync runs on every ClusterVersion change (NeedsUpdate): a spec that now names the
            # upstream and channel the updates were computed for gets them written
            await writer.current()
            await writer.report(last, force=True)
        return last
    current = state.value
    if step.action == "fetch":
        seed = current or UpdatesState(conditional=conditional_from_status(_mapping(cv.get("status"))
                                                                             .get("conditionalUpdates")))
        calculated = await calculate(step.update_service, cluster_id=inputs.cluster_id,
                                     desired_arch=inputs.desired_arch, current_arch=inputs.current_arch,
                                     channel=inputs.channel, version=inputs.version, registry=registry,
                                     options=options.client)
        new = after_fetch(seed, step, inputs, calculated, now)
    else:
        assert current is not None
        new = current
    versions = [r.version for r in new.upstream_updates or ()] + [c.release.version for c in new.upstream_conditional]
    # The CVO's sources judge against its own release (pkg/cvo/cvo.go ``currentVersion``), never empty; ours read
    # status.desired, which a controller that has not written its first status yet lacks: nothing to judge then.
    reported = _mapping(_mapping(cv.get("status")).get("desired")).get("version")
    extra = [await source.risks(versions) if isinstance(reported, str) and reported else SourcedRisks() for source in sources]
    for source, found in zip(sources, extra, strict=True):
        if found.error:
            log.warning("detecting risks failed, which might impact risk evaluation", source=source.name,
                        error=found.error)
    desired = _mapping(_mapping(cv.get("status")).get("desired"))
    image = desired.get("image") if isinstance(desired.get("image"), str) else ""
    updates, conditional, risks = await evaluate_conditional(new.upstream_updates, new.upstream_conditional, registry,
                                                             inputs.accept_risks, gated, extra, clock, str(image))
    new = replace(new, updates=updates, conditional=conditional, risks=risks, accept_risks=inputs.accept_risks)
    state.value = set_available_updates(current, new)
    part = _part(state.value, gated)
    changed = part != state.last_part
    state.last_part = part
    if writer is not None:
        # The part applies only while spec.upstream and spec.channel are those it was computed for: the writer
        # decides that on the ClusterVersion it holds, which may predate the spec just read (nothing else it
        # writes depends on the spec, so it would not notice).
        await writer.current()
        await writer.report(part, force=changed)
    return part


def reevaluate_soon(state: PollState) -> bool:
    """A conditional update lacks a True/False Recommended: the CVO requeues the sync after a second."""
    return state.value is not None and needs_evaluation(state.value.conditional)


async def refresh_once(cluster: Cluster, clock: Clock, options: RefreshOptions,
                       registry: ConditionRegistry | None = None, sources: Sequence[RiskSource] = (),
                       gated: bool = False) -> AvailableUpdates | None:
    """For a command when no controller runs (``cvo upgrade`` listing, ``--to VERSION``, ``recommend``, ``path``):
    one retrieval, as the controller's first, written to the status as it would write it (a write that fails
    raises)."""
    writer = StatusWriter(cluster, clock)
    return await refresh_updates(cluster, clock, options, PollState(), sources, registry or NoMonitoring(), gated,
                                 writer=writer)
