"""refresh_updates: one syncAvailableUpdates on the embedded cluster against a real update service on
127.0.0.1, written through the one status writer; the refetch policy on the virtual clock (time moves only
when the test sleeps)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import cv_ref
from cvo.cluster.embedded.server import SimCluster
from cvo.runner.available_updates import NoMonitoring, RefreshOptions, refresh_updates
from cvo.runner.status_writer import StatusWriter
from cvo.status.clusterversion import cluster_version_object
from cvo.updates.client import UpdateServiceOptions
from cvo.updates.poll import PollState
from tests.support.update_service import PROMQL_RULE, Answer, FixedRegistry, UpdateService, node, risk

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
ID = "897f0a22-33ca-4106-a2c4-29b75250255a"
IMG = "quay.io/openshift-release-dev/ocp-release:"
GRAPH = {"nodes": [node("4.1.0"), node("4.1.1"), node("4.1.10"), node("4.1.2"), node("4.1.3")],
         "edges": [[0, 1], [0, 2], [0, 3], [0, 4]],
         "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "4.1.3"}], "risks": [risk("BugB")]},
                              {"edges": [{"from": "4.1.0", "to": "4.1.2"}], "risks": [risk("BugA", PROMQL_RULE)]}]}


class Harness:
    def __init__(self, cluster: SimCluster, clock: Clock, service: UpdateService, **options: Any) -> None:
        self.cluster, self.clock, self.service = cluster, clock, service
        self.state = PollState()
        self.writer = StatusWriter(cluster, clock)
        self.registry: Any = FixedRegistry({PROMQL_RULE["promql"]["promql"]: False})  # type: ignore[index]
        self.options = RefreshOptions(minimum_interval=180, client=UpdateServiceOptions(timeout=5),
                                      runtime_arch="amd64", **options)

    async def spec(self, **spec: Any) -> None:
        cv = await self.cluster.get(cv_ref())
        assert cv is not None
        cv["spec"].update(spec)
        await self.cluster.update(cv)

    async def refresh(self) -> dict[str, Any]:
        await refresh_updates(self.cluster, self.clock, self.options, self.state, (), self.registry, writer=self.writer)
        cv = await self.cluster.get(cv_ref())
        assert cv is not None
        return dict(cv["status"])


def on_cluster(test: Callable[[Harness], Awaitable[None]], **options: Any) -> None:
    with UpdateService() as service:
        service.graph = GRAPH

        async def run() -> None:
            clock = Clock(EPOCH)
            cluster = SimCluster(clock)
            cv = cluster_version_object(cluster_id=ID)
            cv["spec"].update(upstream=service.url, channel="stable-4.1")
            await cluster.create(cv)
            created = await cluster.get(cv_ref())
            assert created is not None
            created["status"] = {"desired": {"version": "4.1.0", "image": IMG + "4.1.0"}}
            await cluster.update_status(created)
            await test(Harness(cluster, clock, service, **options))

        run_virtual(run)


def retrieved(status: dict[str, Any]) -> tuple[str, str, str]:
    c = next(c for c in status["conditions"] if c["type"] == "RetrievedUpdates")
    return c["status"], c.get("reason", ""), c.get("message", "")


def versions(status: dict[str, Any]) -> list[str] | None:
    updates = status["availableUpdates"]
    return None if updates is None else [u["version"] for u in updates]


def test_the_status_lists_updates_newest_first_with_the_conditional_ones_evaluated() -> None:
    async def test(h: Harness) -> None:
        h.registry = FixedRegistry({'max(cluster_proxy_enabled{type=~"https?"})': False})
        status = await h.refresh()
        assert retrieved(status) == ("True", "", "")
        # 4.1.2's risk does not apply: recommended, and listed; 4.1.3's Always risk applies
        assert versions(status) == ["4.1.10", "4.1.2", "4.1.1"]
        conditional = {c["release"]["version"]: c for c in status["conditionalUpdates"]}
        assert list(conditional) == ["4.1.3", "4.1.2"]
        assert [(c["type"], c["status"], c["reason"]) for c in conditional["4.1.3"]["conditions"]] == \
            [("Recommended", "False", "BugB")]
        assert conditional["4.1.3"]["conditions"][0]["message"] == "BugB breaks things. https://example.com/BugB"
        assert conditional["4.1.2"]["conditions"][0]["reason"] == "NotExposedToRisks"
        (request,) = h.service.requests
        assert request.query == {"arch": ["amd64"], "channel": ["stable-4.1"], "id": [ID], "version": ["4.1.0"]}

    on_cluster(test)


def test_no_refetch_within_the_minimum_interval_then_a_failed_refetch_keeps_the_updates() -> None:
    async def test(h: Harness) -> None:
        first = await h.refresh()
        await asyncio.sleep(60)
        assert await h.refresh() == first and len(h.service.requests) == 1
        h.service.answer = Answer(status=503, body=b"busy")
        await asyncio.sleep(200)
        status = await h.refresh()
        assert len(h.service.requests) == 2
        assert retrieved(status) == ("False", "ResponseFailed", "Unable to retrieve available updates: unexpected "
                                     "HTTP status: 503 Service Unavailable")
        assert versions(status) == versions(first)

        def without_times(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            # the CVO evaluates the kept conditional updates afresh from the conditions they were fetched with
            # (none, on the first fetch after a start): lastTransitionTime moves, as the CVO's does
            return [{**c, "conditions": [{k: v for k, v in x.items() if k != "lastTransitionTime"}
                                         for x in c["conditions"]]} for c in items]

        assert without_times(status["conditionalUpdates"]) == without_times(first["conditionalUpdates"])

    on_cluster(test)


def test_a_failure_after_a_channel_change_lists_nothing() -> None:
    async def test(h: Harness) -> None:
        await h.refresh()
        h.service.answer = Answer(body=b"<html>")
        await h.spec(channel="fast-4.1")
        status = await h.refresh()
        assert h.service.requests[-1].query["channel"] == ["fast-4.1"]
        assert retrieved(status) == ("False", "ResponseInvalid", "Unable to retrieve available updates: invalid "
                                     "character '<' looking for beginning of value")
        assert status["availableUpdates"] is None and "conditionalUpdates" not in status

    on_cluster(test)


def test_a_failure_after_an_upstream_change_lists_nothing() -> None:
    async def test(h: Harness) -> None:
        await h.refresh()
        with UpdateService() as other:
            other.answer = Answer(stall="before-headers")
            await h.spec(upstream=other.url)
            h.options = RefreshOptions(minimum_interval=180, client=UpdateServiceOptions(timeout=0.2),
                                       runtime_arch="amd64")
            status = await h.refresh()
        assert len(other.requests) == 1
        assert retrieved(status)[:2] == ("False", "RemoteFailed")
        assert status["availableUpdates"] is None

    on_cluster(test)


def test_after_24_hours_without_success_a_failure_clears_the_updates() -> None:
    async def test(h: Harness) -> None:
        await h.refresh()
        h.service.answer = Answer(status=500, body=b"")
        for _ in range(6):  # failed refetches every 3.5 h keep the updates ...
            await asyncio.sleep(3.5 * 3600)
            assert versions(await h.refresh()) == ["4.1.10", "4.1.2", "4.1.1"]
        await asyncio.sleep(3.1 * 3600)  # ... until 24 h have passed since the last success
        status = await h.refresh()
        assert status["availableUpdates"] is None and retrieved(status)[1] == "ResponseFailed"
        assert len(h.service.requests) == 8

    on_cluster(test)


def test_an_unevaluated_risk_is_evaluated_again_without_a_refetch() -> None:
    async def test(h: Harness) -> None:
        h.registry = NoMonitoring()  # no Prometheus: the PromQL risk cannot be evaluated
        status = await h.refresh()
        c412 = next(c for c in status["conditionalUpdates"] if c["release"]["version"] == "4.1.2")
        assert [(c["status"], c["reason"]) for c in c412["conditions"]] == [("Unknown", "EvaluationFailed")]
        assert c412["conditions"][0]["message"].startswith("Could not evaluate exposure to update risk BugA (no "
                                                           "Prometheus is configured to evaluate PromQL)\n")
        since = c412["conditions"][0]["lastTransitionTime"]
        h.registry = FixedRegistry({'max(cluster_proxy_enabled{type=~"https?"})': True})
        await asyncio.sleep(1)
        status = await h.refresh()
        assert len(h.service.requests) == 1  # evaluated again, not fetched
        c412 = next(c for c in status["conditionalUpdates"] if c["release"]["version"] == "4.1.2")
        assert (c412["conditions"][0]["status"], c412["conditions"][0]["reason"]) == ("False", "BugA")
        assert c412["conditions"][0]["lastTransitionTime"] != since
        assert versions(status) == ["4.1.10", "4.1.1"]

    on_cluster(test)


def test_the_first_attempt_keeps_the_lasttransitiontime_the_status_had() -> None:
    async def test(h: Harness) -> None:
        await h.refresh()
        since = {c["release"]["version"]: c["conditions"][0]["lastTransitionTime"]
                 for c in (await h.cluster.get(cv_ref()) or {})["status"]["conditionalUpdates"]}
        await asyncio.sleep(3600)
        h.state = PollState()  # a restarted controller: no state, the status as it was written
        status = await h.refresh()
        assert {c["release"]["version"]: c["conditions"][0]["lastTransitionTime"]
                for c in status["conditionalUpdates"]} == since

    on_cluster(test)


def test_the_flag_overrides_spec_upstream_and_the_status_waits_for_spec_upstream_to_name_it() -> None:
    async def test(h: Harness) -> None:
        with UpdateService() as flagged:
            flagged.graph = {"nodes": [node("4.1.0"), node("4.1.5")], "edges": [[0, 1]]}
            h.options = RefreshOptions(update_service=flagged.url, client=UpdateServiceOptions(timeout=5),
                                       runtime_arch="amd64")
            status = await h.refresh()
            assert len(flagged.requests) == 1 and not h.service.requests
            assert "availableUpdates" not in status  # NeedsUpdate: spec.upstream is not the service used
            await h.spec(upstream=flagged.url)
            status = await h.refresh()
            assert versions(status) == ["4.1.5"]
            assert len(flagged.requests) == 1  # the same service: nothing fetched again

    on_cluster(test)


def test_a_spec_problem_is_written_with_its_reason() -> None:
    async def test(h: Harness) -> None:
        await h.spec(channel="")
        status = await h.refresh()
        assert retrieved(status) == ("False", "NoChannel", "The update channel has not been configured.")
        assert status["availableUpdates"] is None and not h.service.requests

    on_cluster(test)


def test_a_multi_arch_migration_offers_the_current_version_only() -> None:
    async def test(h: Harness) -> None:
        await h.spec(desiredUpdate={"architecture": "Multi", "version": "4.1.0"})
        status = await h.refresh()
        assert h.service.requests[0].query["arch"] == ["multi"]
        assert versions(status) == ["4.1.0"] and "conditionalUpdates" not in status

    on_cluster(test)


def test_another_release_starts_afresh_as_a_new_cvo_would() -> None:
    async def test(h: Harness) -> None:
        await h.refresh()
        cv = await h.cluster.get(cv_ref())
        assert cv is not None
        cv["status"]["desired"] = {"version": "4.1.1", "image": IMG + "4.1.1"}
        await h.cluster.update_status(cv)
        h.service.graph = {"nodes": [node("4.1.1"), node("4.1.10")], "edges": [[0, 1]]}
        status = await h.refresh()  # within the minimum interval, yet fetched: another release
        assert [r.query["version"] for r in h.service.requests] == [["4.1.0"], ["4.1.1"]]
        assert versions(status) == ["4.1.10"] and "conditionalUpdates" not in status

    on_cluster(test)


# --- pkg/cvo/availableupdates_test.go TestSyncAvailableUpdatesDesiredUpdate ------------------------------

OSUS = {"nodes": [{"version": "4.5.5", "payload": "payload/4.5.5"}, {"version": "4.5.6", "payload": "payload/4.5.6"}],
        "conditionalEdges": [{"edges": [{"from": "4.5.5", "to": "4.5.6"}], "risks": [
            {"url": "https://example.com/4.5.6", "name": "FourFiveSix", "message": "Four Five Five is just fine",
             "matchingRules": [{"type": "PromQL", "promql": {"promql": "this is a query"}}]}]}]}
CONDITIONAL = ["4.5.6"]
MIGRATION = ["4.5.5"]  # only the current version, as the multi-architecture release

DESIRED_UPDATE_CASES = [
    # (operator is Multi, spec.desiredUpdate, query arch, available updates, conditional updates)
    (True, {"version": "4.5.6", "image": "payload/4.5.6"}, "multi", None, CONDITIONAL),
    (True, {"image": "payload/4.5.6"}, "multi", None, CONDITIONAL),
    (True, {"architecture": "Multi", "version": "4.5.6"}, "multi", None, CONDITIONAL),
    (True, {"version": "4.5.6"}, "multi", None, CONDITIONAL),
    (False, {"version": "4.5.6", "image": "payload/4.5.6"}, "amd64", None, CONDITIONAL),
    (False, {"image": "payload/4.5.6"}, "amd64", None, CONDITIONAL),
    (False, {"architecture": "Multi", "version": "4.5.5"}, "multi", MIGRATION, []),  # migration to multi
    (False, {"architecture": "Multi", "version": "4.5.6"}, "multi", MIGRATION, []),  # migration and update
    (False, {"version": "4.5.6"}, "amd64", None, CONDITIONAL),
    (True, None, "multi", None, CONDITIONAL),
    (False, None, "amd64", None, CONDITIONAL),
]


@pytest.mark.parametrize(("multi", "desired", "query_arch", "updates", "conditional"), DESIRED_UPDATE_CASES)
def test_sync_available_updates_desired_update(multi: bool, desired: dict[str, str] | None, query_arch: str,
                                               updates: list[str] | None, conditional: list[str]) -> None:
    with UpdateService() as service:
        service.graph = OSUS

        async def run() -> None:
            clock = Clock(EPOCH)
            cluster = SimCluster(clock)
            cv = cluster_version_object(cluster_id=ID)
            cv["spec"].update(upstream=service.url, channel="channel", **({"desiredUpdate": desired} if desired else {}))
            await cluster.create(cv)
            created = await cluster.get(cv_ref())
            assert created is not None
            created["status"] = {"desired": {"version": "4.5.5", "image": "payload/4.5.5",
                                             **({"architecture": "Multi"} if multi else {})}}
            await cluster.update_status(created)
            h = Harness(cluster, clock, service)
            h.registry = FixedRegistry({"this is a query": True})
            status = await h.refresh()
            assert service.requests[0].query == {"arch": [query_arch], "channel": ["channel"], "id": [ID],
                                                 "version": ["4.5.5"]}
            assert versions(status) == updates
            got = status.get("conditionalUpdates") or []
            assert [c["release"]["version"] for c in got] == conditional
            for c in got:  # expectedConditionalUpdatesFor: the matching risk makes it not recommended
                assert [(x["type"], x["status"], x["reason"], x["message"]) for x in c["conditions"]] == [
                    ("Recommended", "False", "FourFiveSix", "Four Five Five is just fine https://example.com/4.5.6")]

        run_virtual(run)


# --- TestSyncAvailableUpdates_ConditionalUpdateRecommendedConditions: when lastTransitionTime moves --------

BEFORE = "2025-12-31T00:00:00Z"
RECOMMENDED_FALSE = {"type": "Recommended", "status": "False", "lastTransitionTime": BEFORE, "reason": "FourFiveSix",
                     "message": "Four Five Five is just fine https://example.com/4.5.6"}


@pytest.mark.parametrize(("known", "in_status", "moves"), [
    (RECOMMENDED_FALSE, None, False),  # nothing changes
    ({**RECOMMENDED_FALSE, "reason": "OldReason", "message": "to be changed"}, None, False),  # same status
    ({**RECOMMENDED_FALSE, "status": "Unknown"}, None, True),  # the status changes
    (None, None, True),  # first fetch, nothing in the status
    (None, {**RECOMMENDED_FALSE, "status": "Unknown"}, True),  # first fetch, another status in the status
    (None, RECOMMENDED_FALSE, False),  # first fetch, the same status in the status
])
def test_recommended_last_transition_time(known: dict[str, str] | None, in_status: dict[str, str] | None,
                                          moves: bool) -> None:
    from cvo.updates.model import ConditionalUpdate
    from cvo.updates.model import Release as ModelRelease
    from cvo.updates.poll import UpdatesState

    with UpdateService() as service:
        service.graph = OSUS

        async def run() -> None:
            clock = Clock(EPOCH)
            cluster = SimCluster(clock)
            cv = cluster_version_object(cluster_id=ID)
            cv["spec"].update(upstream=service.url, channel="channel")
            await cluster.create(cv)
            created = await cluster.get(cv_ref())
            assert created is not None
            created["status"] = {"desired": {"version": "4.5.5", "image": "payload/4.5.5"}}
            if in_status is not None:
                created["status"]["conditionalUpdates"] = [{"release": {"version": "4.5.6", "image": "payload/4.5.6"},
                                                            "risks": [], "conditions": [in_status]}]
            await cluster.update_status(created)
            h = Harness(cluster, clock, service)
            h.registry = FixedRegistry({"this is a query": True})
            if known is not None:  # the operator's state from an earlier sync, due for a fetch
                h.state.value = UpdatesState(update_service=service.url, channel="channel", architecture="amd64",
                                             version="4.5.5", conditional=(ConditionalUpdate(
                                                 ModelRelease("4.5.6", "payload/4.5.6"), (), (known,)),))
            status = await h.refresh()
            (condition,) = status["conditionalUpdates"][0]["conditions"]
            assert {k: v for k, v in condition.items() if k != "lastTransitionTime"} == \
                {k: v for k, v in RECOMMENDED_FALSE.items() if k != "lastTransitionTime"}
            assert (condition["lastTransitionTime"] != BEFORE) == moves

        run_virtual(run)


def test_refresh_once_writes_what_the_controller_would() -> None:
    from cvo.runner.available_updates import refresh_once

    async def test(h: Harness) -> None:
        part = await refresh_once(h.cluster, h.clock, h.options)
        assert part is not None and part.updates.retrieved.status == "True"
        cv = await h.cluster.get(cv_ref())
        assert cv is not None
        # 4.1.2's PromQL risk cannot be evaluated without a Prometheus: not listed; 4.1.3's Always risk applies
        assert versions(cv["status"]) == ["4.1.10", "4.1.1"]
        reasons = {c["release"]["version"]: c["conditions"][0]["reason"] for c in cv["status"]["conditionalUpdates"]}
        assert reasons == {"4.1.3": "BugB", "4.1.2": "EvaluationFailed"}

    on_cluster(test)


def test_the_risk_sources_are_not_asked_before_the_cluster_reports_a_release() -> None:
    """The CVO's sources judge against its own release, which it always knows (pkg/cvo/cvo.go currentVersion);
    a ClusterVersion with no status.desired yet (an install's first poll) has no version to judge against, and
    asking would only log "Version string empty" from every source."""
    from cvo.updates.sources import SourcedRisks

    class Counting:
        name = "Counting"

        def __init__(self) -> None:
            self.asked: list[list[str]] = []

        async def risks(self, versions: Any) -> SourcedRisks:
            self.asked.append(list(versions))
            return SourcedRisks()

    async def test(h: Harness) -> None:
        source = Counting()
        cv = await h.cluster.get(cv_ref())
        assert cv is not None
        cv["status"] = {}
        await h.cluster.update_status(cv)
        await refresh_updates(h.cluster, h.clock, h.options, h.state, (source,), h.registry, writer=h.writer)
        assert source.asked == []
        cv = await h.cluster.get(cv_ref())
        assert cv is not None
        cv["status"] = {"desired": {"version": "4.1.0", "image": IMG + "4.1.0"}}
        await h.cluster.update_status(cv)
        await asyncio.sleep(600)
        await refresh_updates(h.cluster, h.clock, h.options, h.state, (source,), h.registry, writer=h.writer)
        assert source.asked and source.asked[-1]

    on_cluster(test)
