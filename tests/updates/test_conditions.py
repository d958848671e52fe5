"""The condition registry and the CVO's throttling cache (pkg/clusterconditions: cache_test.go's TestCache and
Test_calculateMostStale on an injected clock, clusterconditions_test.go's PruneInvalid and Match)."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.clock import Clock
from cvo.updates.conditions import (
    NO_PROMETHEUS,
    Always,
    Cache,
    MatchResult,
    PromQL,
    Registry,
    StaticRegistry,
    aggregate,
    cache_key,
    rule_of_key,
)
from cvo.updates.errors import EvaluationError
from cvo.updates.model import MatchingRule

NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)


class FakeClock(Clock):
    def __init__(self) -> None:
        super().__init__(NOW)
        self.at = NOW

    def now(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


class Recorder:
    """clusterconditions/mock: every Match call with its time; answers True unless told otherwise."""

    def __init__(self, clock: FakeClock, answers: dict[str, bool | str] | None = None) -> None:
        self.clock = clock
        self.answers = answers or {}
        self.calls: list[tuple[datetime, str]] = []

    def valid(self, rule: MatchingRule) -> str:
        return ""

    async def match(self, rule: MatchingRule) -> bool:
        self.calls.append((self.clock.now(), rule.type))
        answer = self.answers.get(rule.type, True)
        if isinstance(answer, str):
            raise EvaluationError(answer)
        return answer


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def ask(cache: Cache, name: str) -> bool | str:
    try:
        return await cache.match(MatchingRule(name))
    except EvaluationError as err:
        return f"error: {err}"


def test_cache_under_load_keeps_its_spacing_rules() -> None:
    """TestCache: 2 then 10 then 2 conditions asked every 100 ms; calls ≥ MinBetweenMatches apart, no
    condition evaluated twice within MinForCondition, every condition evaluated in every phase."""
    clock = FakeClock()
    mock = Recorder(clock)
    cache = Cache(mock, clock, min_between_matches=timedelta(milliseconds=225),
                  min_for_condition=timedelta(seconds=1), expiration=timedelta(seconds=2))
    low, high, tail = 5, 10 * 2 * 20, 2 * 20  # as the Go test: Expiration / sleep = 20 rounds
    success: dict[int, bool] = {}

    async def main() -> None:
        for i in range(low + high + tail):
            if i:
                clock.advance(0.1)
            concurrent = 10 if low <= i < low + high else 2
            for j in range(concurrent):
                if await ask(cache, f"condition {j}") is True:
                    success[j] = True
            if i in (low - 1, low + high - 1, low + high + tail - 1):
                good = sum(1 for k in range(concurrent) if success.pop(k, False))
                assert good == concurrent or good >= 7, f"only {good} evaluated in round {i}"

    run(main())
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(mock.calls)]
    assert min(gaps) >= timedelta(milliseconds=225)
    assert max(gaps) <= timedelta(seconds=1) + timedelta(milliseconds=150)
    for j in range(10):
        times = [t for t, name in mock.calls if name == f"condition {j}"]
        assert times, f"condition {j} never evaluated"
        assert all(b - a >= timedelta(seconds=1) for a, b in itertools.pairwise(times))


def test_within_a_second_a_new_condition_is_throttled_a_cached_one_answers() -> None:
    clock = FakeClock()
    mock = Recorder(clock, {"b": False})
    cache = Cache(mock, clock)

    async def main() -> list[bool | str]:
        first = await ask(cache, "a")
        second = await ask(cache, "b")  # same instant: within MinBetweenMatches (1 s)
        again = await ask(cache, "a")
        clock.advance(1.5)
        third = await ask(cache, "b")
        return [first, second, again, third]

    assert run(main()) == [True, "error: evaluation is throttled until 12:00:01Z", True, False]
    assert [name for _t, name in mock.calls] == ["a", "b"]


def test_a_lone_condition_is_evaluated_whenever_asked_after_min_between_matches() -> None:
    """cache.go: only conditions asked for since their last evaluation compete for a call; a condition
    nobody else competes with is evaluated again as soon as MinBetweenMatches has passed."""
    clock = FakeClock()
    mock = Recorder(clock)
    cache = Cache(mock, clock)

    async def main() -> None:
        await ask(cache, "a")
        clock.advance(2)
        await ask(cache, "a")

    run(main())
    assert [t for t, _name in mock.calls] == [NOW, NOW + timedelta(seconds=2)]


def test_a_waiting_condition_steals_the_call_and_min_for_condition_holds() -> None:
    clock = FakeClock()
    mock = Recorder(clock, {"a": True, "b": False})
    cache = Cache(mock, clock)

    async def main() -> list[bool | str]:
        out = [await ask(cache, "a"), await ask(cache, "b")]  # b: throttled, queued (never evaluated)
        clock.advance(2)
        out.append(await ask(cache, "a"))  # b, never evaluated, steals this call; a answers from the cache
        clock.advance(2)
        out.append(await ask(cache, "a"))  # a is the most stale requested, but evaluated < 1 h ago: cached
        clock.advance(3600)
        out.append(await ask(cache, "a"))  # an hour after its evaluation: a is evaluated again
        return out

    assert run(main()) == [True, "error: evaluation is throttled until 12:00:01Z", True, True, True]
    assert mock.calls == [(NOW, "a"), (NOW + timedelta(seconds=2), "b"), (NOW + timedelta(seconds=3604), "a")]


def test_errors_are_cached_like_answers() -> None:
    clock = FakeClock()
    mock = Recorder(clock, {"a": "executing PromQL query: server_error: server error: 500"})
    cache = Cache(mock, clock)

    async def main() -> list[bool | str]:
        first = await ask(cache, "a")
        await ask(cache, "b")
        clock.advance(2)
        return [first, await ask(cache, "a")]  # b steals the call: a's error comes from the cache

    assert run(main()) == ["error: executing PromQL query: server_error: server error: 500"] * 2
    assert [name for _t, name in mock.calls] == ["a", "b"]


def test_results_and_queued_requests_expire_after_a_day() -> None:
    clock = FakeClock()
    cache = Cache(Recorder(clock), clock)

    async def main() -> None:
        await ask(cache, "a")
        await ask(cache, "b")  # throttled: queued, by its access time
        assert set(cache.results) == {cache_key(MatchingRule("a")), cache_key(MatchingRule("b"))}
        clock.advance(24 * 3600 + 1)
        await ask(cache, "c")

    run(main())
    assert set(cache.results) == {cache_key(MatchingRule("c"))}


# ---- Test_calculateMostStale

H, M = timedelta(hours=1), timedelta(minutes=1)
STALE_CASES = [
    ("empty cache", {}, "", None, None),
    ("single entry, invalid key", {"a": MatchResult(access=NOW, match=True)}, "", None,
     "a is the most stale cached cluster-condition match entry, but key is invalid JSON: "),
    ("single entry, never evaluated", {'{"type": "a"}': MatchResult(access=NOW)}, '{"type": "a"}', MatchingRule("a"),
     None),
    ("single entry, no access since old evaluation", {'{"type": "a"}': MatchResult(access=NOW - H, when=NOW - H)},
     "", None, None),
    ("single entry, has access since old evaluation", {'{"type": "a"}': MatchResult(access=NOW, when=NOW - H)},
     '{"type": "a"}', MatchingRule("a"), None),
    ("single entry, has access since new evaluation", {'{"type": "a"}': MatchResult(access=NOW, when=NOW - M)},
     '{"type": "a"}', None, None),
    ("two entries, both old evaluations, clear evaluation winner",
     {'{"type": "a"}': MatchResult(access=NOW, when=NOW - 2 * H), '{"type": "b"}': MatchResult(access=NOW - M, when=NOW - H)},
     '{"type": "a"}', MatchingRule("a"), None),
    ("two entries, both old evaluations, tied evaluation, access winner",
     {'{"type": "a"}': MatchResult(access=NOW - M, when=NOW - H),
      '{"type": "b"}': MatchResult(access=datetime(1, 1, 1, tzinfo=UTC), when=NOW - H)},
     '{"type": "a"}', MatchingRule("a"), None),
]


@pytest.mark.parametrize(("results", "key", "rule", "error"), [c[1:] for c in STALE_CASES],
                         ids=[c[0] for c in STALE_CASES])
def test_calculate_most_stale(results: dict[str, MatchResult], key: str, rule: MatchingRule | None,
                              error: str | None) -> None:
    cache = Cache(Always(), FakeClock(), min_for_condition=timedelta(minutes=30))
    cache.results = dict(results)
    if error:
        with pytest.raises(ValueError, match="^" + error):
            cache.most_stale(NOW)
        assert cache.results == {}
        return
    assert cache.most_stale(NOW) == (key, rule)


# ---- keys, registry

def test_cache_key_is_gos_json_marshal() -> None:
    assert cache_key(MatchingRule("Always")) == '{"type":"Always"}'
    assert cache_key(MatchingRule("PromQL", 'a{x="<&>"} > 0')) == \
        '{"type":"PromQL","promql":{"promql":"a{x=\\"\\u003c\\u0026\\u003e\\"} \\u003e 0"}}'


@given(st.text(), st.sampled_from(["PromQL", "Always", "Other"]))
def test_cache_keys_read_back_as_their_rule(query: str, type_: str) -> None:
    rule = MatchingRule(type_, query if type_ == "PromQL" else "")
    assert rule_of_key(cache_key(rule)) == rule


def test_prune_invalid() -> None:
    registry = Registry(None, FakeClock())
    rules = [MatchingRule("Always"), MatchingRule("PromQL", "up"), MatchingRule("PromQL", ""),
             MatchingRule("Always", "up"), MatchingRule("Nope")]
    kept, why = registry.prune_invalid(rules)
    assert kept == (MatchingRule("Always"), MatchingRule("PromQL", "up"))
    assert why == ("[the 'promql.promql' query string must be non-empty for 'type: PromQL' conditions, "
                   "the 'promql' property is not valid for 'type: Always' conditions, "
                   'skipping unrecognized cluster condition type "Nope"]')
    assert registry.prune_invalid([MatchingRule("Always")]) == ((MatchingRule("Always"),), "")
    assert aggregate(["x", "x"]) == "x"


def test_match_first_evaluable_rule_decides() -> None:
    registry = StaticRegistry({"up": False, "broken": "executing PromQL query: bad_data: parse error"})

    async def main() -> list[bool | str]:
        out: list[bool | str] = []
        for rules in ([], [MatchingRule("Unknown")], [MatchingRule("PromQL", "up"), MatchingRule("Always")],
                      [MatchingRule("PromQL", "broken"), MatchingRule("Always")],
                      [MatchingRule("PromQL", "broken"), MatchingRule("PromQL", "missing")]):
            try:
                out.append(await registry.match(rules))
            except EvaluationError as err:
                out.append(str(err))
        return out

    assert run(main()) == [False, False, False, True,
                           "[executing PromQL query: bad_data: parse error, executing PromQL query: the scenario's "
                           "monitoring has no answer for 'missing']"]


def test_promql_without_prometheus_fails_to_evaluate() -> None:
    with pytest.raises(EvaluationError, match="no Prometheus to query"):
        run(PromQL(None).match(MatchingRule("PromQL", "up")))
    assert NO_PROMETHEUS.startswith("executing PromQL query: ")


def test_promql_wraps_any_failure_of_its_matcher() -> None:
    class Broken:
        async def match(self, promql: str) -> bool:
            raise OSError("connection refused")

    with pytest.raises(EvaluationError, match=r"^connection refused$"):
        run(PromQL(Broken()).match(MatchingRule("PromQL", "up")))
