"""syncAvailableUpdates' refetch policy and setAvailableUpdates, branch by branch, on given times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cvo.updates.model import ConditionalUpdate, Release, Retrieved
from cvo.updates.poll import (
    DEFAULT_UPDATE_SERVICE,
    Inputs,
    UpdatesState,
    after_fetch,
    conditional_from_status,
    plan,
    set_available_updates,
)
from cvo.updates.retrieve import Calculated

T0 = datetime(2026, 1, 1, tzinfo=UTC)
MIN = timedelta(minutes=3)
URL = "https://updates.example.com/graph"
INPUTS = Inputs(spec_upstream=URL, channel="stable-4.1", desired_arch="amd64", current_arch="amd64",
                cluster_id="c", version="4.1.0")
STATE = UpdatesState(update_service=URL, channel="stable-4.1", architecture="amd64", last_attempt=T0,
                     last_sync_or_config_change=T0, retrieved=Retrieved("True"))


def recommended(status: str) -> ConditionalUpdate:
    return ConditionalUpdate(Release("4.1.2", "img-2"), (), ({"type": "Recommended", "status": status},))


@pytest.mark.parametrize(("state", "inputs", "now", "action", "preserve"), [
    (None, INPUTS, T0, "fetch", False),
    (STATE, INPUTS.__class__(**{**INPUTS.__dict__, "channel": "fast-4.1"}), T0, "fetch", False),
    (STATE, INPUTS.__class__(**{**INPUTS.__dict__, "desired_arch": "Multi"}), T0, "fetch", False),
    (STATE, INPUTS, T0 + timedelta(hours=24, seconds=1), "fetch", False),
    (STATE, INPUTS, T0 + MIN + timedelta(seconds=1), "fetch", True),
    (STATE, INPUTS, T0 + MIN - timedelta(seconds=1), "wait", True),
    (STATE, INPUTS.__class__(**{**INPUTS.__dict__, "spec_upstream": "https://other/graph"}), T0, "fetch", False),
    (STATE, INPUTS.__class__(**{**INPUTS.__dict__, "flag_update_service": "https://flag/graph"}), T0, "fetch", False),
    (STATE.__class__(**{**STATE.__dict__, "conditional": (recommended("Unknown"),)}), INPUTS, T0, "evaluate", True),
    (STATE.__class__(**{**STATE.__dict__, "conditional": (recommended("False"),)}), INPUTS, T0, "wait", True),
    (STATE.__class__(**{**STATE.__dict__, "conditional": (ConditionalUpdate(Release("4.1.2", "i")),)}), INPUTS, T0,
     "evaluate", True),
    (STATE, INPUTS.__class__(**{**INPUTS.__dict__, "accept_risks": frozenset({"RiskA"})}), T0, "evaluate", True),
])
def test_plan_follows_sync_available_updates(state: UpdatesState | None, inputs: Inputs, now: datetime, action: str,
                                             preserve: bool) -> None:
    step = plan(state, inputs, now, MIN)
    assert (step.action, step.preserve_on_failure) == (action, preserve), step.why


def test_the_default_update_service_is_remembered_as_empty() -> None:
    inputs = Inputs(channel="stable-4.1", desired_arch="amd64", cluster_id="c", version="4.1.0")
    step = plan(None, inputs, T0, MIN)
    assert (step.update_service, step.used_default) == (DEFAULT_UPDATE_SERVICE, True)
    state = set_available_updates(None, after_fetch(None, step, inputs, Calculated(retrieved=Retrieved("True")), T0))
    assert state.update_service == ""
    assert plan(state, inputs, T0 + timedelta(seconds=1), MIN).action == "wait"  # "" is the default one


def test_the_flag_overrides_spec_upstream() -> None:
    step = plan(None, Inputs(flag_update_service="https://flag/graph", spec_upstream=URL), T0, MIN)
    assert (step.update_service, step.used_default) == ("https://flag/graph", False)


OLD = Calculated(Release("4.1.0", "i0"), (Release("4.1.1", "i1"),), (), Retrieved("True"))


@pytest.mark.parametrize(("reason", "preserve", "kept"), [
    ("RemoteFailed", True, True), ("ResponseFailed", True, True), ("ResponseInvalid", True, True),
    ("VersionNotFound", True, False), ("NoChannel", True, False), ("RemoteFailed", False, False),
])
def test_a_failed_refetch_keeps_the_updates_only_when_the_exchange_failed_and_it_may(
        reason: str, preserve: bool, kept: bool) -> None:
    first = after_fetch(None, plan(None, INPUTS, T0, MIN), INPUTS, OLD, T0)
    step = plan(first, INPUTS, T0 + MIN * 2, MIN)
    step = step.__class__(**{**step.__dict__, "preserve_on_failure": preserve})
    failed = Calculated(retrieved=Retrieved("False", reason, "m"))
    state = after_fetch(first, step, INPUTS, failed, T0 + MIN * 2)
    assert state.retrieved == failed.retrieved and state.last_attempt == T0 + MIN * 2
    assert state.upstream_updates == (OLD.updates if kept else None)


def test_set_available_updates_sorts_newest_first_and_moves_the_last_change_on_success_only() -> None:
    releases = tuple(Release(v, v) for v in ("4.1.1", "4.1.10", "4.1.2", "4.1.10-rc.1"))
    new = UpdatesState(update_service=URL, channel="c", architecture="amd64", last_attempt=T0, updates=releases,
                       conditional=tuple(ConditionalUpdate(r) for r in releases), retrieved=Retrieved("True"))
    first = set_available_updates(None, new)
    assert [r.version for r in first.updates or ()] == ["4.1.10", "4.1.10-rc.1", "4.1.2", "4.1.1"]
    assert [c.release.version for c in first.conditional] == ["4.1.10", "4.1.10-rc.1", "4.1.2", "4.1.1"]
    assert first.last_sync_or_config_change == T0
    later = T0 + timedelta(hours=1)
    failed = set_available_updates(first, first.__class__(**{**first.__dict__, "last_attempt": later,
                                                             "retrieved": Retrieved("False", "RemoteFailed")}))
    assert failed.last_sync_or_config_change == T0
    moved = set_available_updates(first, first.__class__(**{**first.__dict__, "last_attempt": later, "channel": "d",
                                                            "retrieved": Retrieved("False", "RemoteFailed")}))
    assert moved.last_sync_or_config_change == later


def test_conditional_updates_read_back_from_the_status() -> None:
    status = [{"release": {"version": "4.1.2", "image": "i", "channels": ["a"]},
               "risks": [{"name": "R", "message": "m", "url": "u", "matchingRules": [
                   {"type": "PromQL", "promql": {"promql": "up"}}, {"type": "Always"}]}],
               "conditions": [{"type": "Recommended", "status": "False"}]}, "junk", {"release": 5}]
    (update,) = conditional_from_status(status)
    assert update.release == Release("4.1.2", "i", "", ("a",))
    assert [r.type for r in update.risks[0].matching_rules] == ["PromQL", "Always"]
    assert update.conditions == ({"type": "Recommended", "status": "False"},)
