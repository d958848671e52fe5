"""A command as the controller's client (``cvo/controller/client.py``), in-process on the virtual clock: a
replica leads the embedded cluster; the client writes ``spec.desiredUpdate`` and follows the ClusterVersion
until the controller has completed it, or it is blocked (the command's timeout), cannot be had, or was
retargeted by someone else.  The real processes are in ``tests/controller/test_controller_processes.py``."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.cluster.api import Ref, cv_ref
from cvo.controller.client import at_timeout, follow, judge, lease_holder
from cvo.controller.lease import lease_ref
from cvo.gates.olm import OC_GROUP, OC_KIND
from cvo.operators.behaviour import read_behaviours
from cvo.runner.overrides import Override, set_override
from cvo.runner.releases import Desired
from cvo.runner.upgrade import desired_update, set_desired_update
from tests.controller.test_controller_loop import completed, run, until
from tests.support.controller_harness import Harness, history, image, new_cluster, releases, set_desired
from tests.support.helpers import PAYLOADS

DEMO_OPERATORS = PAYLOADS / "demo-operators.yaml"


def release(version: str) -> Any:
    return releases().resolve(Desired(image=image(version)))


def test_the_client_sees_the_controller_complete_the_update_it_asked_for() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        assert await lease_holder(cluster, clock.now().timestamp()) == ""  # no Lease: no controller
        a = Harness(cluster, clock, "a")
        task = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        assert await lease_holder(cluster, clock.now().timestamp()) == "a"
        target = release("4.16.3")
        assert await set_desired_update(cluster, desired_update(target), None) is True
        assert await set_desired_update(cluster, desired_update(target), None) is False  # not written twice
        seen: list[str] = []
        verdict, cv = await follow(cluster, "4.16.3", target.image, 3 * 3600.0, "3h",
                                   lambda v, _: seen.append(v.message))
        assert verdict.state == "completed" and verdict.message == "Done applying 4.16.3"
        assert history(cv) == [("4.16.3", "Completed"), ("4.16.0", "Completed")]
        assert any(m.startswith("Working towards 4.16.3") for m in seen)
        assert [e.fields["state"] for e in a.events.events if e.name == "controller.sweep"][-1] == "Updating"
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert await lease_holder(cluster, clock.now().timestamp()) == ""  # released on cancel

    run(body)


def test_blocked_until_the_timeout_then_an_override_lets_the_controller_through() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a", behaviours=read_behaviours(DEMO_OPERATORS))
        task = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        target = release("4.17.0")
        await set_desired_update(cluster, desired_update(target), None)
        loop = asyncio.get_running_loop()
        began = loop.time()
        verdict, cv = await follow(cluster, "4.17.0", target.image, 600.0, "10m")
        assert verdict.state == "blocked" and loop.time() - began >= 600.0
        assert verdict.message.startswith("upgrade to 4.17.0 is blocked: ") and "etcd" in verdict.message
        assert history(cv)[0] == ("4.16.0", "Completed")

        [oc] = [o for o in await cluster.list(OC_GROUP, OC_KIND) if o["metadata"]["name"] == "etcd"]
        await set_override(cluster, Ref.of(oc), Override("Upgradeable", "True", "MigrationVerified"), clock.now())
        verdict, cv = await follow(cluster, "4.17.0", target.image, 3 * 3600.0, "3h")
        assert verdict.state == "completed", verdict
        assert history(cv) == [("4.17.0", "Completed"), ("4.16.0", "Completed")]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run(body)


def test_a_release_the_controller_cannot_read_fails_at_once_and_a_retarget_supersedes() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a")
        task = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        nowhere = "file:///nowhere/4.17.0"
        await set_desired_update(cluster, {"version": "4.17.0", "image": nowhere, "force": False}, None)
        loop = asyncio.get_running_loop()
        began = loop.time()
        verdict, _ = await follow(cluster, "4.17.0", nowhere, 3600.0, "1h")
        assert verdict.state == "failed" and loop.time() - began < 600
        assert verdict.message.startswith('the controller cannot use the release: Retrieving payload failed '
                                          'version="4.17.0" image="file:///nowhere/4.17.0" failure=')

        target = release("4.16.3")
        await set_desired_update(cluster, desired_update(target), None)

        async def retarget() -> None:
            await until(lambda: _partial(cluster), 3600)
            await set_desired(cluster, image=image("4.17.0"))

        other = asyncio.create_task(retarget())
        verdict, _ = await follow(cluster, "4.16.3", target.image, 3600.0, "1h")
        await other
        assert verdict.state == "superseded" and image("4.17.0") in verdict.message
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run(body)


async def _partial(cluster: Any) -> bool:
    return history(await cluster.get(cv_ref()))[:1] == [("4.16.3", "Partial")]


def test_a_lease_that_is_not_a_lease_is_no_controller() -> None:
    async def body() -> None:
        cluster, clock = new_cluster()
        await cluster.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                              "metadata": {"name": "version", "namespace": lease_ref().namespace},
                              "spec": {"holderIdentity": "x", "renewTime": "yesterday"}})
        assert await lease_holder(cluster, clock.now().timestamp()) == ""

    run(body)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                     max_leaves=12)
_condition = st.fixed_dictionaries({"type": st.sampled_from(["ReleaseAccepted", "Failing", "Progressing", "Available"]),
                                    "status": st.sampled_from(["True", "False", "Unknown", 3]),
                                    "reason": st.sampled_from(["PreconditionChecks", "RetrievePayload", "", None]),
                                    "message": st.text(max_size=30) | st.just('x image="I": y')})
_cv = st.fixed_dictionaries({
    "spec": st.one_of(_json, st.fixed_dictionaries({"desiredUpdate": st.one_of(_json, st.fixed_dictionaries(
        {"image": st.sampled_from(["I", "J", 7])}))})),
    "status": st.one_of(_json, st.fixed_dictionaries({
        "history": st.one_of(_json, st.lists(st.fixed_dictionaries({"image": st.sampled_from(["I", "J"]),
                                                                    "state": st.sampled_from(["Completed", "Partial"])}),
                                             max_size=2)),
        "desired": st.one_of(_json, st.fixed_dictionaries({"image": st.sampled_from(["I", "J"])})),
        "conditions": st.one_of(_json, st.lists(_condition, max_size=4))}))})


@settings(max_examples=300, deadline=None)
@given(_cv)
def test_judge_and_at_timeout_read_any_cluster_version(cv: dict[str, Any]) -> None:
    verdict = judge(cv, "I")
    assert verdict.state in ("working", "completed", "failed", "superseded", "blocked")
    assert isinstance(verdict.message, str) and verdict.message
    if verdict.state == "completed":
        assert cv["status"]["history"][0] == {"image": "I", "state": "Completed"} and cv["status"]["desired"]["image"] == "I"
        assert cv["spec"]["desiredUpdate"]["image"] == "I"
    ended = at_timeout(cv, "4.17.0", "I", "2h")
    assert ended.state in ("blocked", "failed") and ended.final and ended.message


def test_judge_examples() -> None:
    spec = {"desiredUpdate": {"image": "I"}}
    done = {"spec": spec, "status": {"desired": {"image": "I"}, "history": [{"image": "I", "state": "Completed"}],
                                     "conditions": [{"type": "Available", "status": "True", "message": "Done applying 4.17.0"}]}}
    assert judge(done, "I").state == "completed" and judge(done, "I").message == "Done applying 4.17.0"
    earlier = {**done, "status": {**done["status"], "desired": {"image": "H"}}}  # an older entry for the same image
    assert judge(earlier, "I").state == "working"
    stale = {"spec": spec, "status": {"conditions": [
        {"type": "ReleaseAccepted", "status": "False", "reason": "RetrievePayload", "message": 'image="OTHER" x'}]}}
    assert judge(stale, "I").state == "working"  # another release's failure is not this update's
    blocked = {"spec": spec, "status": {"conditions": [
        {"type": "ReleaseAccepted", "status": "False", "reason": "PreconditionChecks",
         "message": 'Preconditions failed for payload loaded version="4.17.0" image="I": Precondition '
                    '"ClusterVersionUpgradeable" failed because of "StorageMigration": etcd migrates'}]}}
    assert judge(blocked, "I").state == "working"  # etcd's block can clear: the command waits
    assert at_timeout(blocked, "4.17.0", "I", "2h").message == (
        'upgrade to 4.17.0 is blocked: Precondition "ClusterVersionUpgradeable" failed because of '
        '"StorageMigration": etcd migrates\n'
        "the --timeout of 2h (on the wall clock: the command follows the controller in real time) ended the wait; the "
        "controller goes on with spec.desiredUpdate ('cvo upgrade --clear' withdraws it). To wait longer: a longer "
        "--timeout, or --timeout 0 for no limit")
    rollback = {"spec": {"desiredUpdate": {"image": "I", "version": "4.16.3"}}, "status": {"conditions": [
        {"type": "ReleaseAccepted", "status": "False", "reason": "PreconditionChecks",
         "message": 'Preconditions failed for payload loaded version="4.16.3" image="I": Multiple precondition checks '
                    'failed:\n* Precondition "ClusterVersionRollback" failed because of "LowDesiredVersion": 4.16.3 is '
                    'less than the current target 4.17.0\n* Precondition "ClusterVersionRecommendedUpdate" failed '
                    'because of "NoChannel": unset'}]}}
    ended = judge(rollback, "I")  # only --force passes it: the command does not wait for its timeout
    assert ended.state == "blocked" and ended.final
    assert ended.message.startswith("upgrade to 4.16.3 is blocked: Multiple precondition checks failed:\n")
    assert ended.message.endswith("\nClusterVersionRollback blocks for good: waiting would not clear it, only --force "
                                  "passes it; the controller keeps spec.desiredUpdate ('cvo upgrade --clear' "
                                  "withdraws it)")
    assert at_timeout({"spec": spec}, "4.17.0", "I", "2h").message == (
        "the controller had not completed 4.17.0 after 2h: no status yet")
