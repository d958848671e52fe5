"""The ``Recommended`` condition of conditional updates, as the CVO evaluates it
(pkg/cvo/availableupdates.go ``evaluateConditionalUpdates``; pkg/risk/risk.go ``Merge``;
pkg/risk/aggregate ``Risks``; pkg/cvo/status.go ``conditionalUpdateWithRiskNamesAndRiskConditions``,
``conditionalUpdateRisks`` and the history's accepted-risks message).

    evaluate(available, conditional, registry, accept_risks, gated, extra)
      gated: the sources' risks merged in (Merge) — an available update a risk names turns conditional
      each risk evaluated once, newest version first (loadRiskVersions, risksInOrder, loadRiskConditions)
      each conditional update: Recommended from its risks' Applies (evaluateConditionalUpdate);
      True -> also listed as available, else not

Conditions are plain dicts in the API's JSON shape (``metav1.Condition``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, NamedTuple

from cvo.clock import to_rfc3339
from cvo.log import get_logger
from cvo.payload.gostrings import go_quote
from cvo.payload.semver import SemverError, Version
from cvo.updates.errors import EvaluationError
from cvo.updates.model import ConditionalUpdate, MatchingRule, Release, Risk
from cvo.updates.rules import ConditionRegistry
from cvo.updates.sources import SourcedRisks

log = get_logger(__name__)

Condition = dict[str, Any]
RiskConditions = dict[str, tuple[Condition, ...]]

RECOMMENDED = "Recommended"
APPLIES = "Applies"
NOT_EXPOSED = "NotExposedToRisks"
ALL_ACCEPTED = "AllExposedRisksAccepted"
EVALUATION_FAILED = "EvaluationFailed"
MULTIPLE = "MultipleReasons"
EXPOSED = "ExposedToRisks"  # instead of a risk's name that is no valid condition reason
MATCH = "Match"
NOT_MATCH = "NotMatch"
NO_RISK_CONDITION = "InternalErrorFoundNoRiskCondition"

RECOMMENDED_MESSAGE = "The update is recommended, because none of the conditional update risks apply to this cluster."
ACCEPTED_MESSAGE = ("The update is recommended, because either risk does not apply to this cluster or it is accepted "
                    "by cluster admins.")

# metav1.Condition's reason pattern (availableupdates.go reasonPattern)
REASON_PATTERN = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
# risk.go validName: the non-empty CamelCase risk-naming convention
RISK_NAME = re.compile(r"^[A-Z][A-Za-z0-9.-]*$")


# ---- metav1 conditions (apimachinery meta.SetStatusCondition / FindStatusCondition / RemoveStatusCondition)

def find(conditions: Sequence[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def condition(type_: str, status: str, reason: str, message: str = "") -> Condition:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def set_status_condition(conditions: Sequence[Mapping[str, Any]], new: Mapping[str, Any],
                         now: datetime) -> tuple[Condition, ...]:
    """``meta.SetStatusCondition``: a new condition is appended (its lastTransitionTime, if unset, is now);
    an existing one takes the new status (and now, when the status changes), reason, message and
    observedGeneration."""
    out = [dict(c) for c in conditions]
    existing = next((c for c in out if c.get("type") == new.get("type")), None)
    if existing is None:
        added = dict(new)
        if not added.get("lastTransitionTime"):
            added["lastTransitionTime"] = to_rfc3339(now)
        out.append(_ordered(added))
        return tuple(out)
    if existing.get("status") != new.get("status"):
        existing["status"] = new.get("status")
        existing["lastTransitionTime"] = new.get("lastTransitionTime") or to_rfc3339(now)
    existing["reason"] = new.get("reason", "")
    existing["message"] = new.get("message", "")
    if new.get("observedGeneration"):
        existing["observedGeneration"] = new["observedGeneration"]
    else:
        existing.pop("observedGeneration", None)
    out[out.index(existing)] = _ordered(existing)
    return tuple(out)


def _ordered(c: Mapping[str, Any]) -> Condition:
    """metav1.Condition's JSON field order; ``observedGeneration`` only when set."""
    keys = ("type", "status", "observedGeneration", "lastTransitionTime", "reason", "message")
    out = {k: c[k] for k in keys if k in c and (k != "observedGeneration" or c[k])}
    out.update({k: v for k, v in c.items() if k not in out and k not in keys})
    return out


# ---- risk.Merge and the aggregate source

def _differs(a: Risk, b: Risk) -> str:
    """go-cmp's diff of two risks, ignoring their conditions ("" when equal); a field-by-field summary."""
    lines = [f"  {field}: {go_quote(str(x))} != {go_quote(str(y))}"
             for field, x, y in (("Name", a.name, b.name), ("Message", a.message, b.message), ("URL", a.url, b.url),
                                 ("MatchingRules", a.matching_rules, b.matching_rules)) if x != y]
    return "\n".join(lines)


def aggregate_sources(sourced: Sequence[tuple[str, SourcedRisks]]) -> tuple[SourcedRisks, list[str]]:
    """pkg/risk/aggregate ``Risks``: every source's risks (the first definition of a name wins) and
    versions (united in order), with the sources' errors."""
    errors: list[str] = []
    risks: dict[str, Risk] = {}
    versions: dict[str, list[str]] = {}
    for name, found in sourced:
        if found.error:
            errors.append(found.error)
        for risk in found.risks:
            if risk.name in risks:
                diff = _differs(risks[risk.name], risk)
                if diff:
                    errors.append(f"divergent definitions of risk {go_quote(risk.name)} from {go_quote(name)}:\n{diff}")
                continue
            risks[risk.name] = risk
        for risk_name, vs in found.versions.items():
            merged = versions.setdefault(risk_name, [])
            merged.extend(v for v in vs if v not in merged)
    return SourcedRisks(tuple(risks.values()), {k: tuple(v) for k, v in versions.items()}), errors


def _semver_key(version: str) -> tuple[int, Version | None, str]:
    """risk.Merge's order: unparsable versions first (by text), then semantic versions ascending."""
    try:
        return (1, Version.parse(version), "")
    except SemverError:
        return (0, None, version)


def merge_risks(available: Sequence[Release] | None, conditional: Sequence[ConditionalUpdate],
                risks: Sequence[Risk], versions: Mapping[str, Sequence[str]],
                ) -> tuple[tuple[Release, ...] | None, tuple[ConditionalUpdate, ...], list[str]]:
    """pkg/risk/risk.go ``Merge``: each risk joins the updates of the versions it names (an available
    update becomes conditional); conditional updates sorted by version ascending, their risks by name.
    Returns the updates (None when none is left), the conditional updates and the errors."""
    errors: list[str] = []
    by_name: dict[str, Risk] = {}
    invalid: set[str] = set()
    for risk in risks:
        if not RISK_NAME.match(risk.name):
            invalid.add(risk.name)
            errors.append(f"invalid risk name {go_quote(risk.name)} does not match {go_quote(RISK_NAME.pattern)}")
            continue
        if risk.name in by_name:
            diff = _differs(by_name[risk.name], risk)
            if diff:
                errors.append(f"divergent definitions of risk {go_quote(risk.name)} from the merging source:\n{diff}")
            continue
        by_name[risk.name] = risk
    updates: list[Release] | None = list(available) if available is not None else None
    merged = list(conditional)
    misses: set[str] = set()
    for risk_name in sorted(n for n in versions if n not in invalid):
        found_risk = by_name.get(risk_name)
        if found_risk is None:
            misses.add(risk_name)
            continue
        for version in versions[risk_name]:
            index = next((i for i, u in enumerate(updates or []) if u.version == version), None)
            if updates is not None and index is not None:
                merged.append(ConditionalUpdate(updates[index], (found_risk,)))
                del updates[index]
                if not updates:
                    updates = None
                continue
            found = False
            for i, update in enumerate(merged):
                if update.release.version != version:
                    continue
                found = True
                existing = next((r for r in update.risks if r.name == found_risk.name), None)
                if existing is None:
                    merged[i] = replace(update, risks=(*update.risks, found_risk))
                elif _differs(existing, found_risk):
                    errors.append(f"divergent definitions of risk {go_quote(found_risk.name)}:\n"
                                  f"{_differs(existing, found_risk)}")
            if not found:
                errors.append(f"cannot merge risk {go_quote(found_risk.name)} into unknown release version "
                              f"{go_quote(version)}")
    if misses:
        errors.append(f"merge versions referenced unknown risks: {', '.join(sorted(misses))}")
    merged.sort(key=lambda u: _semver_key(u.release.version))
    merged = [replace(u, risks=tuple(sorted(u.risks, key=lambda r: r.name))) for u in merged]
    return (tuple(updates) if updates is not None else None), tuple(merged), errors


# ---- evaluateConditionalUpdates

@dataclass(frozen=True)
class RiskWithVersion:
    version: Version | None  # None: a version that does not parse (the CVO's MustParse would panic)
    risk: Risk


def _newer(a: Version | None, b: Version | None) -> bool:
    if a is None:
        return False
    return b is None or a > b


def load_risk_versions(conditional: Sequence[ConditionalUpdate]) -> dict[str, RiskWithVersion]:
    """``loadRiskVersions``: each risk with the newest version it is exposed to (and that update's copy)."""
    out: dict[str, RiskWithVersion] = {}
    for update in conditional:
        try:
            candidate: Version | None = Version.parse(update.release.version)
        except SemverError:
            candidate = None
        for risk in update.risks:
            if risk.name not in out or _newer(candidate, out[risk.name].version):
                out[risk.name] = RiskWithVersion(candidate, risk)
    return out


def risks_in_order(risk_versions: Mapping[str, RiskWithVersion]) -> list[str]:
    """``risksInOrder``: by version descending, then by name."""
    def key(item: RiskWithVersion) -> tuple[int, Any, str]:
        return (0, _Desc(item.version), item.risk.name) if item.version is not None else (1, None, item.risk.name)
    return [v.risk.name for v in sorted(risk_versions.values(), key=key)]


@dataclass(frozen=True)
class _Desc:
    version: Version

    def __lt__(self, other: _Desc) -> bool:
        return self.version > other.version


def unknown_exposure_message(risk: Risk, error: str) -> str:
    """``unknownExposureMessage``."""
    return (f"Could not evaluate exposure to update risk {risk.name} ({error})\n"
            f"  {risk.name} description: {risk.message}\n"
            f"  {risk.name} URL: {risk.url}")


async def load_risk_conditions(risks: Sequence[str], risk_versions: Mapping[str, RiskWithVersion],
                               registry: ConditionRegistry) -> RiskConditions:
    """``loadRiskConditions``: each risk's ``Applies`` (True Match, False NotMatch, Unknown EvaluationFailed);
    a source's own Applies of the same status is kept (its reason, message and time)."""
    out: RiskConditions = {}
    for name in risks:
        risk = risk_versions[name].risk
        applies = condition(APPLIES, "False", NOT_MATCH)
        try:
            match = await registry.match(risk.matching_rules)
        except EvaluationError as err:
            applies = condition(APPLIES, "Unknown", EVALUATION_FAILED, unknown_exposure_message(risk, str(err)))
        else:
            if match:
                applies = condition(APPLIES, "True", MATCH)
            existing = find(risk.conditions, APPLIES)
            if existing is not None and existing.get("status") == applies["status"]:
                applies = dict(existing)
        out[risk.name] = (applies,)
    return out


def new_recommended_status(now: str, want: str) -> str:
    """``newRecommendedStatus``."""
    if "False" in (now, want):
        return "False"
    if "Unknown" in (now, want):
        return "Unknown"
    return want


def new_recommended_reason(now: str, want: str) -> str:
    """``newRecommendedReason``."""
    if (now in (NOT_EXPOSED, want) or (now == ALL_ACCEPTED and want != NOT_EXPOSED)
            or (now == EVALUATION_FAILED and want == EXPOSED)):
        return want
    if (want == NOT_EXPOSED or (now == EVALUATION_FAILED and want == ALL_ACCEPTED)
            or (now == EXPOSED and want in (ALL_ACCEPTED, EVALUATION_FAILED))):
        return now
    return MULTIPLE


def evaluate_conditional_update(update: ConditionalUpdate, accept_risks: frozenset[str] | set[str], gated: bool,
                                risk_conditions: Mapping[str, Sequence[Mapping[str, Any]]]) -> Condition:
    """``evaluateConditionalUpdate``: the update's ``Recommended`` condition from its risks' ``Applies``."""
    status, reason, message = "True", NOT_EXPOSED, RECOMMENDED_MESSAGE
    messages: list[str] = []
    for risk in update.risks:
        applies = find(risk_conditions.get(risk.name, ()), APPLIES) or condition(
            APPLIES, "Unknown", NO_RISK_CONDITION, f"failed to find risk condition for risk {risk.name}")
        if applies.get("status") == "Unknown":
            status = new_recommended_status(status, "Unknown")
            reason = new_recommended_reason(reason, EVALUATION_FAILED)
            messages.append(str(applies.get("message", "")))
        elif applies.get("status") == "True":
            if gated and risk.name in accept_risks:
                status = new_recommended_status(status, "True")
                reason = new_recommended_reason(reason, ALL_ACCEPTED)
                message = ACCEPTED_MESSAGE
                log.debug("risk accepted by the cluster admin", risk=risk.name, version=update.release.version)
            else:
                status = new_recommended_status(status, "False")
                reason = new_recommended_reason(reason, risk.name if REASON_PATTERN.match(risk.name) else EXPOSED)
                messages.append(f"{risk.message} {risk.url}")
    if messages:
        message = "\n\n".join(messages)
    return condition(RECOMMENDED, status, reason, message)


class Evaluated(NamedTuple):
    available: tuple[Release, ...] | None
    conditional: tuple[ConditionalUpdate, ...]
    risk_conditions: RiskConditions


async def evaluate(available: Sequence[Release] | None, conditional: Sequence[ConditionalUpdate],
                   registry: ConditionRegistry, accept_risks: frozenset[str] | set[str], gated: bool,
                   extra: Sequence[SourcedRisks] = (), now: datetime | None = None) -> Evaluated:
    """``availableUpdates.evaluateConditionalUpdates``.  ``gated``: the ClusterUpdateAcceptRisks gate
    (``shouldReconcileAcceptRisks``): only then are ``extra`` (the sources' risks) merged in and
    ``accept_risks`` honoured.  ``now`` stamps new conditions (default: the wall clock)."""
    stamp = now or datetime.now(UTC)
    updates: tuple[Release, ...] | None = tuple(available) if available is not None else None
    merged = tuple(conditional)
    if gated and extra:
        found, errors = aggregate_sources([(f"source {i}", e) for i, e in enumerate(extra)])
        for error in errors:
            log.error("detecting risks failed, which might impact risk evaluation", error=error)
        updates, merged, errors = merge_risks(updates, merged, found.risks, found.versions)
        for error in errors:
            log.error("merging risks failed, which might impact risk evaluation", error=error)
    risk_versions = load_risk_versions(merged)
    risk_conditions = await load_risk_conditions(risks_in_order(risk_versions), risk_versions, registry)
    out: list[ConditionalUpdate] = []
    listed: list[Release] | None = list(updates) if updates is not None else None
    for update in merged:
        recommended = evaluate_conditional_update(update, accept_risks, gated, risk_conditions)
        if recommended["status"] == "True":
            if listed is None:
                listed = [update.release]
            elif all(r.image != update.release.image for r in listed):
                listed.append(update.release)
        elif listed is not None:
            listed = [r for r in listed if r.image != update.release.image]
        out.append(replace(update, conditions=set_status_condition(update.conditions, recommended, stamp)))
    return Evaluated(tuple(listed) if listed is not None else None, tuple(out), risk_conditions)


# ---- what status.go writes under the gate

def with_risk_names_and_conditions(conditional: Sequence[ConditionalUpdate], risk_conditions: Mapping[str, Sequence[
        Mapping[str, Any]]], desired_image: str, now: datetime) -> tuple[tuple[ConditionalUpdate, ...], tuple[str, ...]]:
    """status.go ``conditionalUpdateWithRiskNamesAndRiskConditions``: each risk carries its evaluated
    conditions (types no longer evaluated removed), each update its sorted ``riskNames``; also the risk
    names of the update to ``desired_image``."""
    out: list[ConditionalUpdate] = []
    desired_names: tuple[str, ...] = ()
    for update in conditional:
        names = sorted({r.name for r in update.risks})
        risks: list[Risk] = []
        for risk in update.risks:
            conditions = risk_conditions.get(risk.name)
            if conditions is None:
                conditions = (condition(APPLIES, "Unknown", NO_RISK_CONDITION,
                                        f"failed to find risk condition for risk {risk.name}"),)
            kept = tuple(c for c in risk.conditions if find(conditions, str(c.get("type"))) is not None)
            for c in conditions:
                kept = set_status_condition(kept, c, now)
            risks.append(replace(risk, conditions=kept))
        new = replace(update, risks=tuple(risks), risk_names=tuple(names) if names else update.risk_names)
        if desired_image == update.release.image:
            desired_names = new.risk_names
        out.append(new)
    return tuple(out), desired_names


def conditional_update_risks(conditional: Sequence[ConditionalUpdate]) -> tuple[Risk, ...]:
    """status.go ``conditionalUpdateRisks``: every risk once (the first update's copy), sorted by name."""
    seen: dict[str, Risk] = {}
    for update in conditional:
        for risk in update.risks:
            seen.setdefault(risk.name, risk)
    return tuple(sorted(seen.values(), key=lambda r: r.name))


def accepted_risks_message(previous: str, desired_image: str, risk_names: Sequence[str]) -> str:
    """status.go ``updateClusterVersionStatus``: the history's ``acceptedRisks`` when the target's risks
    were all accepted through ``spec.desiredUpdate.acceptRisks`` (gated)."""
    if not risk_names:
        return previous
    names = ",".join(risk_names)
    if not previous:
        return (f"The target release {desired_image} is exposed to the risks [{names}] which were all explicitly "
                f"accepted by the cluster administrator.")
    return f"{previous}; It is exposed to the risks [{names}] which were all explicitly accepted by the cluster administrator."


# ---- a status's lists read back (the replay and the commands re-evaluate what a ClusterVersion holds)

def _strs(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _maps(value: Any) -> tuple[dict[str, Any], ...]:
    return tuple(dict(v) for v in value if isinstance(v, Mapping)) if isinstance(value, list) else ()


def release_from_json(data: Any) -> Release:
    data = data if isinstance(data, Mapping) else {}
    text = {k: data.get(k) if isinstance(data.get(k), str) else "" for k in ("version", "image", "url", "architecture")}
    return Release(text["version"], text["image"], text["url"], _strs(data.get("channels")), text["architecture"])


def risk_from_json(data: Any) -> Risk:
    data = data if isinstance(data, Mapping) else {}
    rules = []
    for rule in _maps(data.get("matchingRules")):
        promql = rule.get("promql")
        query = promql.get("promql") if isinstance(promql, Mapping) else ""
        rules.append(MatchingRule(str(rule.get("type", "")), query if isinstance(query, str) else ""))
    text = {k: data.get(k) if isinstance(data.get(k), str) else "" for k in ("name", "message", "url")}
    return Risk(text["name"], text["message"], text["url"], tuple(rules), _maps(data.get("conditions")))


def conditional_from_json(data: Any) -> tuple[ConditionalUpdate, ...]:
    """``status.conditionalUpdates`` as written (entries that are not objects are dropped)."""
    return tuple(ConditionalUpdate(release_from_json(u.get("release")),
                                   tuple(risk_from_json(r) for r in _maps(u.get("risks"))),
                                   _maps(u.get("conditions")), _strs(u.get("riskNames")))
                 for u in _maps(data))


def available_from_json(data: Any) -> tuple[Release, ...] | None:
    return tuple(release_from_json(r) for r in _maps(data)) if isinstance(data, list) else None


def newest_first(updates: Sequence[Release] | None, conditional: Sequence[ConditionalUpdate],
                 ) -> tuple[tuple[Release, ...] | None, tuple[ConditionalUpdate, ...]]:
    """availableupdates.go ``setAvailableUpdates``: both lists by version, newest first (a version that is no
    semantic version last, where the CVO's MustParse would panic)."""
    def key(version: str) -> tuple[int, Any]:
        try:
            return (0, _Desc(Version.parse(version)))
        except SemverError:
            return (1, version)
    listed = tuple(sorted(updates, key=lambda r: key(r.version))) if updates is not None else None
    return listed, tuple(sorted(conditional, key=lambda u: key(u.release.version)))


class StatusLists(NamedTuple):
    available: tuple[Release, ...] | None
    conditional: tuple[ConditionalUpdate, ...]
    risks: tuple[Risk, ...] | None  # status.conditionalUpdateRisks; None with the gate off
    desired_risk_names: tuple[str, ...]  # the risks of the update to the desired image (the history's message)


def status_lists(evaluated: Evaluated, gated: bool, desired_image: str, now: datetime) -> StatusLists:
    """What status.go ``updateClusterVersionStatus`` writes from an evaluation, newest first: with the gate
    on, each risk with its Applies condition, each update with its ``riskNames``, and the list of risks."""
    available, conditional = newest_first(evaluated.available, evaluated.conditional)
    if not gated:
        return StatusLists(available, conditional, None, ())
    conditional, names = with_risk_names_and_conditions(conditional, evaluated.risk_conditions, desired_image, now)
    return StatusLists(available, conditional, conditional_update_risks(conditional), names)


ACCEPTED_BY_ADMIN = "which were all explicitly accepted by the cluster administrator."


def with_accepted_risks(history: Sequence[Mapping[str, Any]], desired_image: str, risk_names: Sequence[str],
                        ) -> list[dict[str, Any]]:
    """``history`` with the newest entry's ``acceptedRisks`` extended as status.go ``updateClusterVersionStatus``
    extends it under the gate: when that entry is the update to ``desired_image`` and the conditional update to
    it has risks (``risk_names``, from :func:`status_lists`).  Applying it twice adds the text once."""
    out = [dict(h) for h in history]
    if not out or not risk_names or out[0].get("image") != desired_image:
        return out
    previous = out[0].get("acceptedRisks")
    previous = previous if isinstance(previous, str) else ""
    if ACCEPTED_BY_ADMIN in previous:
        return out
    out[0]["acceptedRisks"] = accepted_risks_message(previous, desired_image, risk_names)
    return out
