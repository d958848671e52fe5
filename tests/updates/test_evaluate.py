"""The Recommended evaluation, ported from pkg/cvo/availableupdates_test.go (TestEvaluateConditionalUpdate,
Test_loadRiskVersions, Test_risksInOrder, Test_loadRiskConditions, Test_newRecommendedReason,
Test_evaluateConditionalUpdates) and pkg/risk/risk_test.go (Test_Merge), plus the status.go helpers."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.payload.semver import Version
from cvo.updates.conditions import Always, Registry, StaticRegistry
from cvo.updates.errors import EvaluationError
from cvo.updates.evaluate import (
    ACCEPTED_MESSAGE,
    ALL_ACCEPTED,
    EVALUATION_FAILED,
    EXPOSED,
    MULTIPLE,
    NOT_EXPOSED,
    RECOMMENDED_MESSAGE,
    RiskWithVersion,
    accepted_risks_message,
    available_from_json,
    conditional_from_json,
    conditional_update_risks,
    evaluate,
    evaluate_conditional_update,
    load_risk_conditions,
    load_risk_versions,
    merge_risks,
    new_recommended_reason,
    new_recommended_status,
    risks_in_order,
    set_status_condition,
    status_lists,
    with_accepted_risks,
    with_risk_names_and_conditions,
)
from cvo.updates.model import ConditionalUpdate, MatchingRule, Release, Risk
from cvo.updates.sources import SourcedRisks

T0 = datetime(2026, 3, 4, 0, 38, 19, tzinfo=UTC)
T1 = datetime(2026, 3, 4, 1, 0, 0, tzinfo=UTC)
ERROR_MSG = ("Could not evaluate exposure to update risk RiskThatFailsToEvaluate (ERROR)\n"
             "  RiskThatFailsToEvaluate description: {}\n"
             "  RiskThatFailsToEvaluate URL: https://whokno.ws")


def applies(status: str, reason: str, message: str = "") -> dict[str, str]:
    return {"type": "Applies", "status": status, "reason": reason, "message": message}


def recommended(status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": "Recommended", "status": status, "reason": reason, "message": message}


def risk(name: str, message: str = "", url: str = "", rules: Sequence[MatchingRule] = (), **kw: object) -> Risk:
    return Risk(name, message, url, tuple(rules), **kw)  # type: ignore[arg-type]  # conditions only


def cu(version: str, *risks: Risk, image: str = "") -> ConditionalUpdate:
    return ConditionalUpdate(Release(version, image or f"quay.io/r@{version}"), risks)


# ---- TestEvaluateConditionalUpdate

MATCHES = risk("RiskThatApplies", "This is a risk!", "https://match.es")
CASES = [
    ("no risks", (), set(), False, {}, recommended("True", NOT_EXPOSED, RECOMMENDED_MESSAGE)),
    ("one risk that does not match", (risk("ShouldNotApply"),), set(), False,
     {"ShouldNotApply": (applies("False", "NotMatch"),)}, recommended("True", NOT_EXPOSED, RECOMMENDED_MESSAGE)),
    ("one risk that matches", (MATCHES,), set(), False, {"RiskThatApplies": (applies("True", "Match"),)},
     recommended("False", "RiskThatApplies", "This is a risk! https://match.es")),
    ("one risk that matches and is accepted", (risk("RiskThatApplies"),), {"RiskThatApplies", "not-important"}, True,
     {"RiskThatApplies": (applies("True", "Match"),)}, recommended("True", ALL_ACCEPTED, ACCEPTED_MESSAGE)),
    ("accepted, but the gate is off", (MATCHES,), {"RiskThatApplies"}, False,
     {"RiskThatApplies": (applies("True", "Match"),)},
     recommended("False", "RiskThatApplies", "This is a risk! https://match.es")),
    ("matching risk with name that cannot be used as a condition reason",
     (risk("RISK-THAT-APPLIES", "This is a risk!", "https://match.es", [MatchingRule("PromQL")]),), set(), False,
     {"RISK-THAT-APPLIES": (applies("True", "Match"),)},
     recommended("False", EXPOSED, "This is a risk! https://match.es")),
    ("two risks that match",
     (MATCHES, risk("ShouldNotApply", "ShouldNotApply", "https://doesnotmat.ch"),
      risk("RiskThatAppliesToo", "This is a risk too!", "https://match.es/too")), set(), False,
     {"RiskThatApplies": (applies("True", "Match"),), "ShouldNotApply": (applies("False", "NotMatch"),),
      "RiskThatAppliesToo": (applies("True", "Match"),)},
     recommended("False", MULTIPLE, "This is a risk! https://match.es\n\nThis is a risk too! https://match.es/too")),
    ("first risk matches, second fails to evaluate",
     (MATCHES, risk("RiskThatFailsToEvaluate", "This is a risk too!", "https://whokno.ws")), set(), False,
     {"RiskThatApplies": (applies("True", "Match"),),
      "RiskThatFailsToEvaluate": (applies("Unknown", "EvaluationFailed", ERROR_MSG.format("This is a risk too!")),)},
     recommended("False", MULTIPLE, "This is a risk! https://match.es\n\n" + ERROR_MSG.format("This is a risk too!"))),
    ("one risk that fails to evaluate", (risk("RiskThatFailsToEvaluate", "This is a risk!", "https://whokno.ws"),),
     set(), False,
     {"RiskThatFailsToEvaluate": (applies("Unknown", "EvaluationFailed", ERROR_MSG.format("This is a risk!")),)},
     recommended("Unknown", EVALUATION_FAILED, ERROR_MSG.format("This is a risk!"))),
    ("no Applies condition for a risk (the CVO's 'should never happen')", (risk("Lost"),), set(), False, {},
     recommended("Unknown", EVALUATION_FAILED, "failed to find risk condition for risk Lost")),
]


@pytest.mark.parametrize(("risks", "accept", "gated", "conditions", "expected"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_evaluate_conditional_update(risks: tuple[Risk, ...], accept: set[str], gated: bool,
                                     conditions: dict[str, tuple[dict[str, str], ...]],
                                     expected: dict[str, str]) -> None:
    update = ConditionalUpdate(Release("", ""), risks)
    assert evaluate_conditional_update(update, accept, gated, conditions) == expected


# ---- Test_loadRiskVersions, Test_risksInOrder

def test_load_risk_versions_keeps_each_risks_newest_version() -> None:
    assert load_risk_versions([]) == {}
    updates = [cu("4.20.1", risk("riskA"), risk("riskB")), cu("4.20.3", risk("riskA"), risk("riskC")),
               cu("4.22.1", risk("riskD"), risk("riskB")), cu("5.0.1", risk("riskB"), risk("riskC"))]
    got = {name: (str(v.version), v.risk.name) for name, v in load_risk_versions(updates).items()}
    assert got == {"riskA": ("4.20.3", "riskA"), "riskB": ("5.0.1", "riskB"), "riskC": ("5.0.1", "riskC"),
                   "riskD": ("4.22.1", "riskD")}


def test_load_risk_versions_survives_a_version_the_cvo_would_panic_on() -> None:
    got = load_risk_versions([cu("not-a-version", risk("A")), cu("4.1.0", risk("A"), risk("B"))])
    assert str(got["A"].version) == "4.1.0" and got["B"].version is not None
    assert risks_in_order(load_risk_versions([cu("junk", risk("Z")), cu("1.0.0", risk("Y"))])) == ["Y", "Z"]


def test_risks_in_order_newest_version_first_then_by_name() -> None:
    assert risks_in_order({}) == []
    versions = {n: RiskWithVersion(Version.parse(v), risk(n)) for n, v in
                (("riskA", "4.20.3"), ("riskB", "5.0.1"), ("riskC", "5.0.1"), ("riskD", "4.22.1"))}
    assert risks_in_order(versions) == ["riskB", "riskC", "riskD", "riskA"]


# ---- Test_loadRiskConditions

class QueuedPromQL:
    """clusterconditions/mock: answers in the order asked."""

    def __init__(self, answers: list[bool | str]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def valid(self, rule: MatchingRule) -> str:
        return ""

    async def match(self, rule: MatchingRule) -> bool:
        self.asked.append(rule.promql)
        answer = self.answers.pop(0)
        if isinstance(answer, str):
            raise EvaluationError(answer)
        return answer


def test_load_risk_conditions_in_the_order_given() -> None:
    registry = Registry(None, None, {"PromQL": QueuedPromQL(["ERROR1", True, False, True])})  # type: ignore[arg-type]
    rule = [MatchingRule("PromQL")]
    versions = {n: RiskWithVersion(Version.parse(v), risk(n, rules=rule)) for n, v in
                (("riskA", "4.20.3"), ("riskB", "5.0.1"), ("riskC", "5.0.1"), ("riskD", "4.22.1"))}
    got = asyncio.run(load_risk_conditions(["riskB", "riskC", "riskD", "riskA"], versions, registry))
    assert got == {
        "riskA": (applies("True", "Match"),),
        "riskB": (applies("Unknown", "EvaluationFailed",
                          "Could not evaluate exposure to update risk riskB (ERROR1)\n  riskB description: \n  riskB URL: "),),
        "riskC": (applies("True", "Match"),),
        "riskD": (applies("False", "NotMatch"),),
    }


def test_load_risk_conditions_keeps_a_sources_own_applies_of_the_same_status() -> None:
    own = {"type": "Applies", "status": "True", "reason": "Alert:firing", "message": "critical alert firing",
           "lastTransitionTime": "2026-03-04T00:38:19Z"}
    stale = {**own, "status": "False", "reason": "Gone"}
    registry = StaticRegistry({})
    versions = {"A": RiskWithVersion(Version.parse("1.0.0"), risk("A", rules=[MatchingRule("Always")], conditions=(own,))),
                "B": RiskWithVersion(Version.parse("1.0.0"), risk("B", rules=[MatchingRule("Always")], conditions=(stale,)))}
    got = asyncio.run(load_risk_conditions(["A", "B"], versions, registry))
    assert got["A"] == (own,)
    assert got["B"] == (applies("True", "Match"),)


# ---- Test_newRecommendedReason, newRecommendedStatus

REASONS = (NOT_EXPOSED, ALL_ACCEPTED, EVALUATION_FAILED, MULTIPLE, EXPOSED)
EXPECTED_REASON = {  # (now, want) -> result, every pair of the CVO's test
    (NOT_EXPOSED, ALL_ACCEPTED): ALL_ACCEPTED, (NOT_EXPOSED, EVALUATION_FAILED): EVALUATION_FAILED,
    (NOT_EXPOSED, MULTIPLE): MULTIPLE, (NOT_EXPOSED, EXPOSED): EXPOSED,
    (ALL_ACCEPTED, NOT_EXPOSED): ALL_ACCEPTED, (ALL_ACCEPTED, EVALUATION_FAILED): EVALUATION_FAILED,
    (ALL_ACCEPTED, MULTIPLE): MULTIPLE, (ALL_ACCEPTED, EXPOSED): EXPOSED,
    (EVALUATION_FAILED, NOT_EXPOSED): EVALUATION_FAILED, (EVALUATION_FAILED, ALL_ACCEPTED): EVALUATION_FAILED,
    (EVALUATION_FAILED, MULTIPLE): MULTIPLE, (EVALUATION_FAILED, EXPOSED): EXPOSED,
    (MULTIPLE, NOT_EXPOSED): MULTIPLE, (MULTIPLE, ALL_ACCEPTED): MULTIPLE,
    (MULTIPLE, EVALUATION_FAILED): MULTIPLE, (MULTIPLE, EXPOSED): MULTIPLE,
    (EXPOSED, NOT_EXPOSED): EXPOSED, (EXPOSED, ALL_ACCEPTED): EXPOSED,
    (EXPOSED, EVALUATION_FAILED): EXPOSED, (EXPOSED, MULTIPLE): MULTIPLE,
}


@pytest.mark.parametrize(("now", "want"), sorted(EXPECTED_REASON))
def test_new_recommended_reason(now: str, want: str) -> None:
    assert new_recommended_reason(now, want) == EXPECTED_REASON[(now, want)]


def test_new_recommended_reason_two_risk_names() -> None:
    assert new_recommended_reason(NOT_EXPOSED, "RiskA") == "RiskA"
    assert new_recommended_reason("RiskA", "RiskA") == "RiskA"
    assert new_recommended_reason("RiskA", "RiskB") == MULTIPLE
    assert new_recommended_reason(EVALUATION_FAILED, "RiskA") == MULTIPLE


def test_new_recommended_status_false_wins_then_unknown() -> None:
    assert new_recommended_status("True", "False") == "False"
    assert new_recommended_status("False", "True") == "False"
    assert new_recommended_status("Unknown", "True") == "Unknown"
    assert new_recommended_status("True", "Unknown") == "Unknown"
    assert new_recommended_status("Unknown", "False") == "False"
    assert new_recommended_status("True", "True") == "True"


# ---- Test_Merge (pkg/risk/risk_test.go): the mock source puts each risk on every version

def every_version(risks: Sequence[Risk], updates: Sequence[Release], conditional: Sequence[ConditionalUpdate],
                  ) -> dict[str, tuple[str, ...]]:
    versions = tuple([u.version for u in updates] + [c.release.version for c in conditional])
    return {r.name: versions for r in risks}


def merged_twice(updates: Sequence[Release] | None, conditional: Sequence[ConditionalUpdate], risks: Sequence[Risk],
                 ) -> tuple[tuple[Release, ...] | None, tuple[ConditionalUpdate, ...], list[str]]:
    versions = every_version(risks, updates or (), conditional)
    first = merge_risks(updates, conditional, risks, versions)
    again = merge_risks(first[0], first[1], risks, versions)  # Merge is idempotent
    assert again == first
    return first


TEST_ALERT = risk("TestAlert", "Test summary.", "https://example.com/testAlert", [MatchingRule("Always")])


def test_merge_basic_case() -> None:
    updates, conditional, errors = merged_twice(
        [Release("4.21.1", ""), Release("4.21.2", "")], [cu("4.21.3", risk("ExistingRisk"), image="")], [TEST_ALERT])
    assert updates is None and errors == []
    assert [(c.release.version, [r.name for r in c.risks]) for c in conditional] == [
        ("4.21.1", ["TestAlert"]), ("4.21.2", ["TestAlert"]), ("4.21.3", ["ExistingRisk", "TestAlert"])]
    assert conditional[0].risks[0] == TEST_ALERT


def test_merge_invalid_risk_name() -> None:
    bad = risk("", "Test summary.", "https://example.com/testAlert", [MatchingRule("Always")])
    updates, conditional, errors = merged_twice([Release("1.2.3", "")], [], [bad])
    assert updates == (Release("1.2.3", ""),) and conditional == ()
    assert errors == ['invalid risk name "" does not match "^[A-Z][A-Za-z0-9.-]*$"']


def test_merge_single_source_collision_keeps_the_first() -> None:
    one = risk("RiskA", "Test summary 1.", "https://example.com/testAlert", [MatchingRule("Always")])
    two = risk("RiskA", "Test summary 2.", "https://example.com/testAlert", [MatchingRule("Always")])
    updates, conditional, errors = merged_twice([Release("1.2.3", "")], [], [one, two])
    assert updates is None and conditional == (ConditionalUpdate(Release("1.2.3", ""), (one,)),)
    assert len(errors) == 1 and errors[0].startswith('divergent definitions of risk "RiskA" from the merging source:\n')
    assert '"Test summary 1." != "Test summary 2."' in errors[0]


def test_merge_multi_source_collision_keeps_the_update_services() -> None:
    one = risk("RiskA", "Test summary 1.", "https://example.com/testAlert", [MatchingRule("Always")])
    two = risk("RiskA", "Test summary 2.", "https://example.com/testAlert", [MatchingRule("Always")])
    start = (ConditionalUpdate(Release("1.2.3", ""), (one,)),)
    updates, conditional, errors = merged_twice(None, start, [two])
    assert updates is None and conditional == start
    assert len(errors) == 1 and errors[0].startswith('divergent definitions of risk "RiskA":\n')


def test_merge_unknown_version_and_unknown_risk() -> None:
    _, _, errors = merge_risks(None, [], [TEST_ALERT], {"TestAlert": ("9.9.9",), "Nobody": ("1.0.0",)})
    assert errors == ['cannot merge risk "TestAlert" into unknown release version "9.9.9"',
                      "merge versions referenced unknown risks: Nobody"]


def test_merge_sorts_ascending_with_unparsable_versions_first() -> None:
    _, conditional, _ = merge_risks(None, [cu("4.10.0"), cu("junk"), cu("4.9.1")], [], {})
    assert [c.release.version for c in conditional] == ["junk", "4.9.1", "4.10.0"]


# ---- Test_evaluateConditionalUpdates: an alert source's risk turns both updates not recommended

ALERT_APPLIES = {"type": "Applies", "status": "True", "reason": "Alert:firing",
                 "message": "critical alert TestAlert firing, suggesting significant cluster issues worth "
                            "investigating. Test summary. The alert description is: Test description. "
                            "<alert does not have a runbook_url annotation>",
                 "lastTransitionTime": "2026-03-04T00:38:19Z"}


def test_evaluate_conditional_updates_basic_case() -> None:
    alert = risk("TestAlert", "Test summary.", "https://example.com/testAlert", [MatchingRule("Always")],
                 conditions=(ALERT_APPLIES,))
    source = SourcedRisks((alert,), {"TestAlert": ("4.21.1", "4.21.2")})
    registry = Registry(None, None, {"Always": Always()})  # type: ignore[arg-type]
    got = asyncio.run(evaluate([Release("4.21.1", "a"), Release("4.21.2", "b")], [], registry, set(), True,
                               [source], now=T1))
    assert got.available is None
    assert [c.release.version for c in got.conditional] == ["4.21.1", "4.21.2"]
    for update in got.conditional:
        assert update.risks == (alert,)
        assert update.conditions == ({"type": "Recommended", "status": "False", "lastTransitionTime": "2026-03-04T01:00:00Z",
                                      "reason": "TestAlert", "message": "Test summary. https://example.com/testAlert"},)
    assert got.risk_conditions == {"TestAlert": (ALERT_APPLIES,)}


def test_evaluate_without_the_gate_merges_no_source_and_accepts_nothing() -> None:
    source = SourcedRisks((TEST_ALERT,), {"TestAlert": ("4.21.1",)})
    got = asyncio.run(evaluate([Release("4.21.1", "a")], [cu("4.21.2", TEST_ALERT)], StaticRegistry({}),
                               {"TestAlert"}, False, [source], now=T1))
    assert got.available == (Release("4.21.1", "a"),)
    assert got.conditional[0].conditions[0]["reason"] == "TestAlert"
    gated = asyncio.run(evaluate([Release("4.21.1", "a")], [cu("4.21.2", TEST_ALERT)], StaticRegistry({}),
                                 {"TestAlert"}, True, [source], now=T1))
    assert [c.conditions[0]["reason"] for c in gated.conditional] == [ALL_ACCEPTED, ALL_ACCEPTED]
    assert [r.version for r in gated.available or ()] == ["4.21.1", "4.21.2"]


def test_evaluate_lists_the_recommended_and_unlists_the_rest() -> None:
    safe = risk("Safe", "m", "u", [MatchingRule("PromQL", "safe")])
    bad = risk("Bad", "bad thing", "https://bad", [MatchingRule("PromQL", "bad")])
    registry = StaticRegistry({"safe": False, "bad": True})
    got = asyncio.run(evaluate([Release("1.0.1", "x"), Release("1.0.3", "img-3")],
                               [cu("1.0.2", safe, image="img-2"), cu("1.0.3", bad, image="img-3")],
                               registry, set(), False, now=T1))
    assert [r.version for r in got.available or ()] == ["1.0.1", "1.0.2"]
    assert [c.conditions[0]["status"] for c in got.conditional] == ["True", "False"]
    # evaluated again later: the Recommended condition keeps its lastTransitionTime while its status holds
    again = asyncio.run(evaluate(got.available, got.conditional, registry, set(), False, now=T0))
    assert again.conditional[0].conditions[0]["lastTransitionTime"] == "2026-03-04T01:00:00Z"


def test_evaluate_without_prometheus_a_promql_risk_fails_to_evaluate() -> None:
    query = risk("NeedsQuery", "about x", "https://x", [MatchingRule("PromQL", "up == 0")])
    registry = Registry(None, _Clock())
    got = asyncio.run(evaluate(None, [cu("2.0.0", query)], registry, set(), False, now=T1))
    condition = got.conditional[0].conditions[0]
    assert (condition["status"], condition["reason"]) == ("Unknown", EVALUATION_FAILED)
    assert condition["message"].startswith("Could not evaluate exposure to update risk NeedsQuery (executing PromQL "
                                           "query: no Prometheus to query")
    assert got.available is None


class _Clock:
    def now(self) -> datetime:
        return T1


# ---- status.go helpers

def test_risk_names_and_conditions_and_the_risks_list() -> None:
    a, b = risk("B-risk"), risk("A-risk", conditions=({"type": "Gone", "status": "True"},))
    updates = (cu("1.0.1", a, b, image="one"), cu("1.0.2", b, image="two"))
    conditions = {"B-risk": (applies("True", "Match"),), "A-risk": (applies("False", "NotMatch"),)}
    got, desired = with_risk_names_and_conditions(updates, conditions, "one", T1)
    assert desired == ("A-risk", "B-risk")
    assert got[0].risk_names == ("A-risk", "B-risk") and got[1].risk_names == ("A-risk",)
    assert got[0].risks[1].conditions == ({"type": "Applies", "status": "False", "lastTransitionTime": "2026-03-04T01:00:00Z",
                                            "reason": "NotMatch", "message": ""},)
    assert [r.name for r in conditional_update_risks(got)] == ["A-risk", "B-risk"]


def test_accepted_risks_message() -> None:
    assert accepted_risks_message("", "img", []) == ""
    assert accepted_risks_message("", "img", ["A", "B"]) == (
        "The target release img is exposed to the risks [A,B] which were all explicitly accepted by the cluster "
        "administrator.")
    assert accepted_risks_message("forced", "img", ["A"]) == (
        "forced; It is exposed to the risks [A] which were all explicitly accepted by the cluster administrator.")


def test_set_status_condition_moves_the_time_only_on_a_change_of_status() -> None:
    first = set_status_condition((), recommended("True", NOT_EXPOSED, "m"), T0)
    same = set_status_condition(first, recommended("True", ALL_ACCEPTED, "n"), T1)
    assert same[0]["lastTransitionTime"] == "2026-03-04T00:38:19Z" and same[0]["reason"] == ALL_ACCEPTED
    changed = set_status_condition(same, recommended("False", "X", "y"), T1)
    assert changed[0]["lastTransitionTime"] == "2026-03-04T01:00:00Z"


def test_status_lists_with_and_without_the_gate() -> None:
    bad = risk("Bad", "bad thing", "https://bad", [MatchingRule("PromQL", "bad")])
    got = asyncio.run(evaluate([Release("1.0.1", "x")], [cu("1.0.2", bad, image="two"), cu("1.0.10", bad, image="ten")],
                               StaticRegistry({"bad": True}), set(), True, now=T1))
    plain = status_lists(got, False, "ten", T1)
    assert plain.risks is None and plain.desired_risk_names == ()
    assert [u.release.version for u in plain.conditional] == ["1.0.10", "1.0.2"]
    assert plain.conditional[0].to_json()["risks"][0].get("conditions") is None
    gated = status_lists(got, True, "ten", T1)
    assert gated.desired_risk_names == ("Bad",) and [r.name for r in gated.risks or ()] == ["Bad"]
    written = gated.conditional[0].to_json(gated=True)
    assert written["riskNames"] == ["Bad"]
    assert written["risks"][0]["conditions"] == [{"type": "Applies", "status": "True",
                                                  "lastTransitionTime": "2026-03-04T01:00:00Z", "reason": "Match",
                                                  "message": ""}]
    assert "riskNames" not in gated.conditional[0].to_json(gated=False)


def test_with_accepted_risks_extends_the_newest_entry_once() -> None:
    history = [{"image": "img-2", "version": "1.0.2", "state": "Partial", "acceptedRisks": "forced"},
               {"image": "img-1", "version": "1.0.1", "state": "Completed"}]
    once = with_accepted_risks(history, "img-2", ["A", "B"])
    assert once[0]["acceptedRisks"] == ("forced; It is exposed to the risks [A,B] which were all explicitly accepted "
                                        "by the cluster administrator.")
    assert with_accepted_risks(once, "img-2", ["A", "B"]) == once
    assert "acceptedRisks" not in with_accepted_risks(history[1:], "img-1", ["A"])[1:]
    assert with_accepted_risks(history[1:], "img-1", ["A"])[0]["acceptedRisks"].startswith(
        "The target release img-1 is exposed to the risks [A]")
    assert with_accepted_risks(history, "other", ["A"]) == history
    assert with_accepted_risks(history, "img-2", []) == history
    assert history[0]["acceptedRisks"] == "forced"



JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(["PromQL", "Always", "1.0.0", "4.16.3", "x", "q", "R"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["release", "risks", "conditions", "riskNames", "version", "image", "name", "message", "url",
         "matchingRules", "type", "promql", "status", "reason", "channels"]), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(JSON, JSON, st.booleans())
def test_any_status_lists_evaluate_without_crashing(conditional: object, available: object, gated: bool) -> None:
    """A saved ClusterVersion's lists, whatever their shape: read back, evaluated, written again."""
    updates = conditional_from_json(conditional)
    got = asyncio.run(evaluate(available_from_json(available), updates, StaticRegistry({"q": True, "x": "boom"}),
                               {"R"}, gated, now=T1))
    lists = status_lists(got, gated, "x", T1)
    assert len(lists.conditional) == len(updates) or gated
    for update in lists.conditional:
        recommended = next(c for c in update.to_json(gated)["conditions"] if c.get("type") == "Recommended")
        assert recommended["status"] in ("True", "False", "Unknown") and recommended["reason"]
