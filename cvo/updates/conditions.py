"""The CVO's condition registry (pkg/clusterconditions: ``clusterconditions.go``, ``always``, ``promql``,
``cache``, ``standard``): matching rules ``Always`` and ``PromQL``, the PromQL ones behind the CVO's
throttling cache, on an injected clock.

    Registry(prometheus, clock)     standard.NewConditionRegistry: Always + cached PromQL
    StaticRegistry(answers)         a scenario's simulated monitoring: query -> True/False/error text

A PromQL query goes to anything with ``async match(promql) -> bool`` (:class:`cvo.monitoring.client.Prometheus`);
with none, every PromQL rule fails to evaluate, as on a CVO that cannot reach Thanos.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from cvo.clock import Clock
from cvo.log import get_logger
from cvo.updates.errors import EvaluationError
from cvo.updates.model import ALWAYS, PROMQL, MatchingRule

log = get_logger(__name__)

NO_PROMETHEUS = "executing PromQL query: no Prometheus to query (cvo was given no --metrics-url)"


class PromQLMatcher(Protocol):
    async def match(self, promql: str) -> bool:
        """True for one sample of 1, False for one of 0; raises on anything else."""
        ...


class Condition(Protocol):
    """clusterconditions.go ``Condition``: ``valid`` returns why a rule is invalid ("" when it is valid)."""

    def valid(self, rule: MatchingRule) -> str: ...

    async def match(self, rule: MatchingRule) -> bool: ...


def aggregate(messages: Sequence[str]) -> str:
    """apimachinery's ``errors.NewAggregate(errs).Error()``: one message as is, several as ``[a, b]``
    (duplicates once)."""
    seen: list[str] = []
    for message in messages:
        if message not in seen:
            seen.append(message)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]" if seen else ""


class Always:
    """always.go: matches every cluster; a ``promql`` property makes the rule invalid."""

    def valid(self, rule: MatchingRule) -> str:
        return "the 'promql' property is not valid for 'type: Always' conditions" if rule.promql else ""

    async def match(self, rule: MatchingRule) -> bool:
        return True


class PromQL:
    """promql.go ``PromQL``: the query's one sample, 0 or 1; any failure is the evaluation's error."""

    def __init__(self, prometheus: PromQLMatcher | None) -> None:
        self.prometheus = prometheus

    def valid(self, rule: MatchingRule) -> str:
        if not rule.promql:
            return "the 'promql.promql' query string must be non-empty for 'type: PromQL' conditions"
        return ""

    async def match(self, rule: MatchingRule) -> bool:
        if self.prometheus is None:
            raise EvaluationError(NO_PROMETHEUS)
        try:
            return await self.prometheus.match(rule.promql)
        except EvaluationError:
            raise
        except Exception as err:  # promql.go returns every failure as the evaluation's error
            raise EvaluationError(str(err)) from None


def cache_key(rule: MatchingRule) -> str:
    """cache.go's key: ``json.Marshal`` of the ``ClusterCondition`` (Go escapes <, > and & in strings)."""
    data: dict[str, object] = {"type": rule.type}
    if rule.type == PROMQL or rule.promql:
        data["promql"] = {"promql": rule.promql}
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def rule_of_key(key: str) -> MatchingRule:
    """The rule a key was made from; :class:`ValueError` when the key is no ClusterCondition JSON."""
    data = json.loads(key)
    if not isinstance(data, Mapping):
        raise ValueError(f"cannot unmarshal {type(data).__name__} into a ClusterCondition")
    promql = data.get("promql")
    query = promql.get("promql", "") if isinstance(promql, Mapping) else ""
    return MatchingRule(str(data.get("type", "")), query if isinstance(query, str) else "")


@dataclass
class MatchResult:
    """cache.go ``MatchResult``: ``when`` None is Go's zero time (never evaluated)."""

    access: datetime
    when: datetime | None = None
    match: bool = False
    error: str | None = None


class Cache:
    """cache.go ``Cache``: evaluations at least ``min_between_matches`` apart; each call spends its
    evaluation on the most stale requested condition (not fresher than ``min_for_condition``); results
    expire after ``expiration``.  Calls are serialized (the CVO evaluates risks one after another)."""

    def __init__(self, condition: Condition, clock: Clock, *, min_between_matches: timedelta = timedelta(seconds=1),
                 min_for_condition: timedelta = timedelta(hours=1),
                 expiration: timedelta = timedelta(hours=24)) -> None:
        self.condition = condition
        self.clock = clock
        self.min_between_matches = min_between_matches
        self.min_for_condition = min_for_condition
        self.expiration = expiration
        self.last_match: datetime | None = None
        self.results: dict[str, MatchResult] = {}
        self._lock = asyncio.Lock()

    def valid(self, rule: MatchingRule) -> str:
        return self.condition.valid(rule)

    async def match(self, rule: MatchingRule) -> bool:
        async with self._lock:
            return await self._match(rule)

    def _cached(self, key: str) -> bool | None:
        result = self.results.get(key)
        if result is None or result.when is None:
            return None
        if result.error is not None:
            raise EvaluationError(result.error)
        return result.match

    async def _match(self, rule: MatchingRule) -> bool:
        key = cache_key(rule)
        now = self.clock.now()
        try:
            self._expire(now)
            if self.last_match is not None and now - self.last_match <= self.min_between_matches:
                cached = self._cached(key)
                if cached is not None:
                    return cached
                until = self.last_match + self.min_between_matches
                raise EvaluationError(f"evaluation is throttled until {until.strftime('%H:%M:%S')}Z")
            try:
                thief, target = self.most_stale(now)
            except ValueError as err:
                raise EvaluationError(f"calculating the most stale cached cluster-condition match entry: {err}") \
                    from None
            if not thief:
                thief, target = key, rule
            if target is None:
                cached = self._cached(key)
                if cached is not None:
                    return cached
                thief, target = key, rule
            if thief != key:
                log.debug("stealing a cluster-condition match call", thief=thief, key=key)
            match, error = False, None
            try:
                match = await self.condition.match(target)
            except EvaluationError as err:
                error = str(err)
            now = self.clock.now()
            self.last_match = now
            result = self.results.setdefault(thief, MatchResult(access=now))
            result.when, result.match, result.error = now, match, error
            cached = self._cached(key)
            if cached is not None:
                return cached
            raise EvaluationError("evaluation is throttled")
        finally:  # Go's deferred access stamp, with the latest ``now``
            if key in self.results:
                self.results[key].access = now
            else:
                self.results[key] = MatchResult(access=now)

    def _expire(self, now: datetime) -> None:
        """cache.go ``expireStaleMatchResults``: by the last evaluation, or the last request if never evaluated."""
        for key, value in list(self.results.items()):
            age = now - (value.when if value.when is not None else value.access)
            if age > self.expiration:
                log.debug("pruning from the condition cache", key=key, age=str(age))
                del self.results[key]

    def most_stale(self, now: datetime) -> tuple[str, MatchingRule | None]:
        """cache.go ``calculateMostStale``: the requested entry evaluated longest ago ("" when none was
        requested since its evaluation), with its rule, or None when it is fresher than ``min_for_condition``."""
        thief, best = "", None
        for key, value in self.results.items():
            if value.when is not None and not value.access > value.when:
                continue  # no requests since its last evaluation
            if best is None or _before(value.when, best.when) or (
                    value.when == best.when and value.access < best.access):
                thief, best = key, value
        if not thief:
            return "", None
        if best is not None and best.when is not None and now - best.when < self.min_for_condition:
            return thief, None
        try:
            return thief, rule_of_key(thief)
        except (ValueError, RecursionError) as err:
            del self.results[thief]
            raise ValueError(f"{thief} is the most stale cached cluster-condition match entry, but key is "
                             f"invalid JSON: {err}") from None


def _before(a: datetime | None, b: datetime | None) -> bool:
    """Go's ``a.Before(b)`` with None as the zero time."""
    if a is None:
        return b is not None
    return b is not None and a < b


class Registry:
    """clusterconditions.go ``conditionRegistry`` with standard.go's conditions; implements
    :class:`cvo.updates.rules.ConditionRegistry`."""

    def __init__(self, prometheus: PromQLMatcher | None, clock: Clock,
                 conditions: Mapping[str, Condition] | None = None) -> None:
        self.conditions: dict[str, Condition] = dict(conditions) if conditions is not None else {
            ALWAYS: Always(), PROMQL: Cache(PromQL(prometheus), clock)}

    def prune_invalid(self, rules: Sequence[MatchingRule]) -> tuple[tuple[MatchingRule, ...], str]:
        """``PruneInvalid``: the recognized, valid rules, and the aggregated complaints about the others."""
        valid: list[MatchingRule] = []
        errors: list[str] = []
        for rule in rules:
            condition = self.conditions.get(rule.type)
            if condition is None:
                errors.append(f"skipping unrecognized cluster condition type {json.dumps(rule.type)}")
                continue
            why = condition.valid(rule)
            if why:
                errors.append(why)
                continue
            valid.append(rule)
        return tuple(valid), aggregate(errors)

    async def match(self, rules: Sequence[MatchingRule]) -> bool:
        """``Match``: the first rule that evaluates decides; False when none is known; else the errors."""
        errors: list[str] = []
        for rule in rules:
            condition = self.conditions.get(rule.type)
            if condition is None:
                log.debug("skipping unrecognized cluster condition type", type=rule.type)
                continue
            try:
                return await condition.match(rule)
            except EvaluationError as err:
                errors.append(str(err))
        if errors:
            raise EvaluationError(aggregate(errors))
        return False


class StaticPromQL:
    """A scenario's simulated monitoring: each query's answer (True, False, or an error's text)."""

    def __init__(self, answers: Mapping[str, bool | str]) -> None:
        self.answers = dict(answers)

    async def match(self, promql: str) -> bool:
        answer = self.answers.get(promql)
        if answer is None:
            raise EvaluationError(f"executing PromQL query: the scenario's monitoring has no answer for {promql!r}")
        if isinstance(answer, str):
            raise EvaluationError(answer)
        return answer


class StaticRegistry(Registry):
    """:class:`Registry` over :class:`StaticPromQL`, without the cache: a replay evaluates every risk on
    every pass, whatever the simulated time between them."""

    def __init__(self, answers: Mapping[str, bool | str]) -> None:
        super().__init__(None, Clock(), {ALWAYS: Always(), PROMQL: PromQL(StaticPromQL(answers))})
