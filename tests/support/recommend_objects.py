"""ClusterVersions for the `cvo upgrade recommend` tests: oc's examples (tests/golden/recommend/examples), and an
embedded cluster's state holding one, as a controller would have left it."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import yaml

from cvo.cluster.embedded.server import SimCluster

EXAMPLES = Path(__file__).resolve().parents[1] / "golden" / "recommend" / "examples"
DEGRADED = EXAMPLES / "4.16.27-degraded-monitoring-cv.yaml"
DEGRADED_ALERTS = EXAMPLES / "4.16.27-degraded-monitoring-alerts.json"


def degraded() -> dict[str, Any]:
    """oc's 4.16.27-degraded-monitoring ClusterVersion: Failing=True, four 4.16 updates, Upgradeable=False."""
    loaded: dict[str, Any] = yaml.safe_load(DEGRADED.read_text())
    return loaded


def embedded(tmp_path: Path, cv: dict[str, Any]) -> Path:
    """An embedded cluster's state file in ``tmp_path`` holding ``cv`` (its spec and status as given), kept by a
    controller: the sweep lock records a ``cvo run`` of this (live) process, so the commands read the status as the
    controller wrote it instead of retrieving the graph themselves (oc's examples name update services that are not
    reachable from here)."""
    import os

    import orjson

    from cvo.cluster.embedded.sweep_lock import lock_path

    path = tmp_path / "state.db"
    lock_path(path).write_bytes(orjson.dumps({"pid": os.getpid(), "what": "cvo run (controller test)"}))

    async def write() -> None:
        cluster = SimCluster(path=path)
        body = copy.deepcopy(cv)
        body["metadata"] = {"name": "version"}
        made = await cluster.create(body)
        made["status"] = body["status"]
        await cluster.update_status(made)
        await cluster.close()

    asyncio.run(write())
    return path
