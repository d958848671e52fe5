"""The session's real control planes, and helpers to talk to them: ``control_plane`` (etcd +
kube-apiserver v1.37 only) and ``acting_control_plane`` (with kube-controller-manager, kube-scheduler
and kwok's fake Nodes: workloads roll out, namespaces terminate, owned objects are collected).

``control_plane`` starts it once per session, building the binaries first if they are missing
(about 5 minutes on a fresh machine, then cached under ``CVO_CONTROL_PLANE_CACHE``).  When it
cannot start, every test that needs it FAILS with the log tail: CI must not pass without the
real API server.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import freezegun
import pytest

from cvo.cluster.kube import KubeCluster

from .controlplane import ACTING_BINARIES, ControlPlane, ensure_binaries

T = TypeVar("T")
TIMINGS: dict[str, float] = {}

# The kubernetes client (imported here at collection) builds its pydantic models lazily, on attribute
# access; freezegun's freeze_time() reads every attribute of every loaded module, so under a frozen
# clock it would build them with its FakeDatetime and fail (tests/status/test_cvstatus.py and others).
freezegun.configure(extend_ignore_list=["kubernetes"])


# Seconds an e2e test may take (pytest-timeout; the default is pyproject's): the longest take a few minutes on
# a busy machine, and the first one also builds the control plane's binaries when they are missing (about
# 5 minutes on a fresh machine, more on a busy one).
E2E_TIMEOUT = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything in tests/e2e that uses the control plane is an e2e test (``-m e2e`` / ``-m 'not e2e'``),
    with the e2e timeout."""
    for item in items:
        if {"control_plane", "acting_control_plane", "real_crds"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.timeout(E2E_TIMEOUT))


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    started = time.monotonic()
    try:
        ensure_binaries()
    except Exception as err:
        pytest.fail(f"cannot build the test control plane (hack/control-plane/build.sh): {err}", pytrace=False)
    TIMINGS["build"] = time.monotonic() - started
    cp = ControlPlane()
    try:
        cp.start()
    except Exception as err:
        pytest.fail(f"the test control plane did not start:\n{err}", pytrace=False)
    TIMINGS["start"] = cp.ready_seconds or 0.0
    TIMINGS["session_start"] = time.monotonic()
    try:
        yield cp
    finally:
        cp.stop()
        TIMINGS["session"] = time.monotonic() - TIMINGS["session_start"]
    leaked = kube_threads()
    assert not leaked, f"KubeCluster threads still running after the e2e tests: {leaked}"


@pytest.fixture(scope="session")
def acting_control_plane() -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with 3 fake Nodes."""
    started = time.monotonic()
    try:
        ensure_binaries(ACTING_BINARIES)
    except Exception as err:
        pytest.fail(f"cannot build the acting control plane (hack/control-plane/build.sh): {err}", pytrace=False)
    TIMINGS["acting_build"] = time.monotonic() - started
    cp = ControlPlane(acting=True)
    try:
        cp.start()
    except Exception as err:
        pytest.fail(f"the acting control plane did not start:\n{err}", pytrace=False)
    TIMINGS["acting_start"] = cp.ready_seconds or 0.0
    try:
        yield cp
    finally:
        cp.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if "start" in TIMINGS:
        line = (f"e2e control plane: binaries ready in {TIMINGS['build']:.2f}s, etcd + kube-apiserver ready in "
                f"{TIMINGS['start']:.2f}s")
        if "session" in TIMINGS:
            line += f"; e2e session {TIMINGS['session']:.1f}s"
        terminalreporter.write_line(line)
    if "acting_start" in TIMINGS:
        terminalreporter.write_line(
            f"e2e acting control plane: binaries ready in {TIMINGS['acting_build']:.2f}s, etcd, kube-apiserver, "
            f"kube-controller-manager, kube-scheduler, kwok and 3 Nodes ready in {TIMINGS['acting_start']:.2f}s"
        )


@pytest.fixture
def namespace() -> str:
    """A fresh namespace name per test (the tests create it; nothing deletes namespaces without controllers)."""
    return f"e2e-{uuid.uuid4().hex[:8]}"


def run_with(cp: ControlPlane, body: Callable[[KubeCluster], Awaitable[T]], **options: Any) -> T:
    """Run ``body(cluster)`` on a fresh real event loop with a KubeCluster on ``cp``; closes it after."""

    async def main() -> T:
        cluster = KubeCluster.from_kubeconfig(cp.kubeconfig_path, **options)
        try:
            return await body(cluster)
        finally:
            await cluster.close()

    return asyncio.run(main())


def kube_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith(("cvo-kube", "cvo-watch")))


async def make_namespace(cluster: KubeCluster, name: str) -> None:
    await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

