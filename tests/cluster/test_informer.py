"""The Informer: one watch per kind, waiters woken per name, listeners that see every object, and the
handlers every watch loop of cvo runs on."""

from __future__ import annotations

import asyncio
import itertools
import re
from datetime import UTC, datetime
from pathlib import Path

from cvo.clock import Clock, run_virtual
from cvo.cluster.api import ApiError, ApiErrorKind, Ref, WatchEvent
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster
from cvo.cluster.informer import Backoff, Informer

EPOCH = datetime(2025, 6, 1, tzinfo=UTC)


def cm(name: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": {"v": value}}


def test_a_change_wakes_the_waiters_of_that_name_only() -> None:
    async def main() -> tuple[bool, bool, bool, dict, int]:
        clock = Clock(EPOCH)
        cluster = SimCluster(clock=clock, namespaces=(*DEFAULT_NAMESPACES, "ns"))
        await cluster.create(cm("a", "1"))
        notifier = Informer(cluster, "", "ConfigMap")
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
        notifier = Informer(cluster, "", "ConfigMap", key=lambda obj: (obj.get("metadata") or {}).get("labels"))
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
        notifier = Informer(cluster, "", "ConfigMap")
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
        notifier = Informer(cluster, "", "ConfigMap", key=lambda obj: (obj.get("metadata") or {}).get("labels"),
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
        notifier = Informer(cluster, "", "ConfigMap", keep_objects=True)
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
        notifier = Informer(cluster, "", "ConfigMap", keep_objects=True)
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


# --- handlers: the watch loops of cvo, on the informer ---------------------------------------------------------


class Flaky(SimCluster):
    """The embedded cluster whose next ``breaks`` watches fail at once."""

    breaks = 0

    def watch(self, group: str, kind: str, namespace: str | None = None, name: str | None = None):  # type: ignore[no-untyped-def]
        if not self.breaks:
            return super().watch(group, kind, namespace, name)
        self.breaks -= 1

        async def broken():  # type: ignore[no-untyped-def]
            raise ApiError(ApiErrorKind.TIMEOUT, "the watch broke")
            yield

        return broken()


def test_handlers_see_each_watch_opened_and_each_event_in_order_and_a_failure_restarts_after_the_back_off() -> None:
    """``on_watch`` runs after each subscription (told whether it is the first), ``on_event`` for each event;
    an API error from a handler, as from the watch, opens the watch again after the back-off, which doubles
    while failures go on and starts over once an event was handled."""

    async def main() -> tuple[list[tuple[float, str]], list[tuple[str, float]]]:
        cluster = Flaky(clock=Clock(EPOCH), namespaces=(*DEFAULT_NAMESPACES, "ns"))
        loop = asyncio.get_running_loop()
        seen: list[tuple[float, str]] = []
        failures: list[tuple[str, float]] = []
        fail_on = {"b", "d"}

        async def on_watch(first: bool) -> None:
            seen.append((loop.time(), f"watch first={first}"))

        async def on_event(event: WatchEvent) -> None:
            name = event.obj["metadata"]["name"]
            seen.append((loop.time(), f"{event.type} {name}"))
            if name in fail_on:
                fail_on.discard(name)
                raise ApiError(ApiErrorKind.INTERNAL, f"handling {name} failed")

        informer = Informer(cluster, "", "ConfigMap", baseline=False, on_watch=on_watch, on_event=on_event,
                            on_error=lambda err, delay: failures.append((str(err), delay)),
                            backoff=Backoff(1.0, 8.0), task_name="test configmaps")
        await informer.start()
        assert any(t.get_name() == "test configmaps" for t in asyncio.all_tasks())
        await cluster.create(cm("a", "1"))
        await asyncio.sleep(0.5)
        await cluster.create(cm("b", "1"))  # its handler fails: watched again after 1 s ...
        cluster.breaks = 2  # ... which fails, again after 2 s, fails, again after 4 s
        await asyncio.sleep(10.0)
        await cluster.create(cm("c", "1"))  # handled: the back-off starts over
        await asyncio.sleep(0.5)
        await cluster.create(cm("d", "1"))  # its handler fails: watched again after 1 s
        await asyncio.sleep(2.0)
        await informer.stop()
        return seen, failures

    seen, failures = run_virtual(main)
    assert [what for _, what in seen] == [
        "watch first=True", "ADDED a", "ADDED b",
        "watch first=False", "watch first=False", "watch first=False", "ADDED c", "ADDED d", "watch first=False"]
    times = [t for t, _ in seen]
    assert [round(b - a, 3) for a, b in itertools.pairwise(times[2:6])] == [1.0, 2.0, 4.0]
    assert round(times[8] - times[7], 3) == 1.0
    assert failures == [("handling b failed", 1.0), ("the watch broke", 2.0), ("the watch broke", 4.0),
                        ("handling d failed", 1.0)]


def test_the_informer_stops_when_the_cluster_closes_and_can_follow_one_object() -> None:
    async def main() -> tuple[list[str], bool]:
        cluster = SimCluster(clock=Clock(EPOCH), namespaces=(*DEFAULT_NAMESPACES, "ns"))
        names: list[str] = []

        async def on_event(event: WatchEvent) -> None:
            names.append(event.obj["metadata"]["name"])

        informer = Informer(cluster, "", "ConfigMap", name="b", on_event=on_event)
        await informer.start()
        for name in ("a", "b", "c"):
            await cluster.create(cm(name, "1"))
        await asyncio.sleep(1.0)
        await cluster.close()  # the watch ends: nothing to watch any more
        await asyncio.sleep(5.0)
        task = informer._task
        done = task is not None and task.done() and not task.cancelled()
        await informer.stop()
        return names, done

    names, done = run_virtual(main)
    assert names == ["b"] and done


WATCH_CALL = re.compile(r"\.watch\(")


def test_every_watch_loop_of_cvo_runs_on_the_informer() -> None:
    """Only the informer opens watches (the backends implement them, the interceptors pass them on)."""
    root = Path(__file__).resolve().parents[2] / "cvo"
    allowed = {"cluster/informer.py", "cluster/intercept.py"}
    callers = sorted(str(path.relative_to(root)) for path in root.rglob("*.py")
                     if WATCH_CALL.search(path.read_text()) and str(path.relative_to(root)) not in allowed)
    assert callers == []
