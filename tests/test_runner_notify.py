"""The Notifier: one watch per kind, waiters woken per name, and listeners that see every object."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import Ref
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.runner.notify import Notifier

EPOCH = datetime(2025, 6, 1, tzinfo=UTC)


def cm(name: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": {"v": value}}


def test_a_change_wakes_the_waiters_of_that_name_only() -> None:
    async def main() -> tuple[bool, bool, bool, dict, int]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        await cluster.create(cm("a", "1"))
        notifier = Notifier(cluster, "", "ConfigMap")
        seen: dict[str, dict] = {}
        notifier.listeners.append(lambda name, obj: seen.__setitem__(name, obj))
        await notifier.start()
        marks = notifier.mark("a"), notifier.mark("b"), notifier.mark()
        waits = [asyncio.create_task(notifier.wait_change("a", marks[0], 10.0)),
                 asyncio.create_task(notifier.wait_change("b", marks[1], 10.0)),
                 asyncio.create_task(notifier.wait_change(None, marks[2], 10.0))]
        await asyncio.sleep(1.0)
        live = await cluster.get(Ref("", "ConfigMap", "ns", "a"))
        await cluster.update({**live, "data": {"v": "2"}})
        a, b, any_ = await asyncio.gather(*waits)
        waiters_left = sum(len(w) for w in notifier._waiters.values())
        cached = seen["a"]
        await notifier.stop()
        return a, b, any_, cached, waiters_left

    a, b, any_, cached, waiters_left = run_virtual(main)
    assert (a, b, any_) == (True, False, True)
    assert cached["data"] == {"v": "2"}
    assert waiters_left == 0  # a timed-out waiter leaves nothing behind


def test_a_key_filters_changes_but_listeners_see_them_all() -> None:
    async def main() -> tuple[bool, dict, int, int]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        await cluster.create(cm("a", "1"))
        notifier = Notifier(cluster, "", "ConfigMap", key=lambda obj: (obj.get("metadata") or {}).get("labels"))
        seen: list[dict] = []
        notifier.listeners.append(lambda name, obj: seen.append(obj))
        await notifier.start()
        mark = notifier.mark("a")
        waiter = asyncio.create_task(notifier.wait_change("a", mark, 5.0))
        live = await cluster.get(Ref("", "ConfigMap", "ns", "a"))
        await cluster.update({**live, "data": {"v": "2"}})  # not a key change
        woke = await waiter
        await notifier.stop()
        return woke, seen, notifier.mark("a") - mark

    woke, seen, changes = run_virtual(main)
    assert not woke and changes == 0
    # The listener saw the object at start, then the change the key filtered out.
    assert [o["data"] for o in seen] == [{"v": "1"}, {"v": "2"}]


def test_poke_wakes_a_waiter_without_a_watch_event() -> None:
    async def main() -> tuple[bool, float]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock)
        notifier = Notifier(cluster, "", "ConfigMap")
        await notifier.start()
        loop = asyncio.get_running_loop()
        begin = loop.time()
        waiter = asyncio.create_task(notifier.wait_change("x", notifier.mark("x"), 60.0))
        loop.call_later(3.0, notifier.poke, "x")
        woke = await waiter
        await notifier.stop()
        return woke, loop.time() - begin

    woke, waited = run_virtual(main)
    assert woke and waited == 3.0


def test_without_a_baseline_nothing_is_listed_and_the_first_event_wakes() -> None:
    """The CRD notifier lists nothing at start (a list decodes every CRD at once): a first event whose key
    did not change wakes the waiters, who read again; the next one like it does not."""

    async def main() -> tuple[int, bool, bool]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        await cluster.create(cm("a", "1"))
        lists = cluster.stats.verbs["list"]
        notifier = Notifier(cluster, "", "ConfigMap", key=lambda obj: (obj.get("metadata") or {}).get("labels"),
                            baseline=False)
        await notifier.start()
        listed = cluster.stats.verbs["list"] - lists
        woke = []
        for value in ("2", "3"):
            mark = notifier.mark("a")
            waiter = asyncio.create_task(notifier.wait_change("a", mark, 5.0))
            live = await cluster.get(Ref("", "ConfigMap", "ns", "a"))
            await cluster.update({**live, "data": {"v": value}})  # not a key change
            woke.append(await waiter)
        await notifier.stop()
        return listed, woke[0], woke[1]

    listed, first, second = run_virtual(main)
    assert (listed, first, second) == (0, True, False)


def test_kept_objects_are_the_newest_delivered_and_only_while_the_watch_runs() -> None:
    """``keep_objects``: what the baseline list and the watch delivered, by name, as an informer's lister
    would give it; nothing before start or after stop (the caller reads then), nothing once deleted."""

    async def main() -> tuple[dict | None, dict | None, dict | None, dict | None, dict | None]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        await cluster.create(cm("a", "1"))
        notifier = Notifier(cluster, "", "ConfigMap", keep_objects=True)
        before = notifier.cached("a")
        await notifier.start()
        listed = notifier.cached("a")
        mark = notifier.mark("a")
        live = await cluster.get(Ref("", "ConfigMap", "ns", "a"))
        await cluster.update({**live, "data": {"v": "2"}})
        await notifier.wait_change("a", mark, 5.0)
        changed = notifier.cached("a")
        mark = notifier.mark("a")
        await cluster.delete(Ref("", "ConfigMap", "ns", "a"))
        await notifier.wait_change("a", mark, 5.0)
        deleted = notifier.cached("a")
        await cluster.create(cm("a", "3"))
        await asyncio.sleep(1.0)
        await notifier.stop()
        return before, listed, changed, deleted, notifier.cached("a")

    before, listed, changed, deleted, stopped = run_virtual(main)
    assert before is None and deleted is None and stopped is None
    assert listed is not None and listed["data"] == {"v": "1"}
    assert changed is not None and changed["data"] == {"v": "2"}


def test_kept_objects_are_dropped_when_the_watch_breaks() -> None:
    """A watch that breaks is opened again later, from then on: what it missed is unknown, so the kept
    objects go (waiters read) until the new watch delivers them."""

    class Breaking(SimCluster):
        breaks = 1

        def watch(self, group: str, kind: str, namespace: str | None = None, name: str | None = None):  # type: ignore[no-untyped-def]
            inner = super().watch(group, kind, namespace, name)
            if not self.breaks:
                return inner
            self.breaks -= 1

            async def broken():  # type: ignore[no-untyped-def]
                async for event in inner:
                    yield event
                    raise RuntimeError("the watch broke")

            return broken()

    async def main() -> tuple[dict | None, dict | None]:
        clock = Clock(EPOCH)
        cluster = Breaking(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        await cluster.create(cm("a", "1"))
        notifier = Notifier(cluster, "", "ConfigMap", keep_objects=True)
        await notifier.start()
        mark = notifier.mark()
        await cluster.create(cm("b", "1"))  # delivered, then the watch breaks
        await notifier.wait_change(None, mark, 5.0)
        await asyncio.sleep(0)
        after_break = notifier.cached("a")
        await asyncio.sleep(2.0)  # watching again
        mark = notifier.mark("a")
        live = await cluster.get(Ref("", "ConfigMap", "ns", "a"))
        await cluster.update({**live, "data": {"v": "2"}})
        await notifier.wait_change("a", mark, 5.0)
        again = notifier.cached("a")
        await notifier.stop()
        return after_break, again

    after_break, again = run_virtual(main)
    assert after_break is None
    assert again is not None and again["data"] == {"v": "2"}
