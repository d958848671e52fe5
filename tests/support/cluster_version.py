"""Writing an embedded cluster's ClusterVersion as a controller would have (its spec, and a status with the
update graph's fields), for the tests of the commands that read them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from cvo.clock import Clock
from cvo.cluster.api import cv_ref
from cvo.cluster.embedded.server import SimCluster

T = "2024-06-01T10:00:00Z"


def write_cluster_version(state: str | Path, spec: dict[str, Any], status: dict[str, Any],
                          retrieved: tuple[str, str, str] | None = None) -> None:
    """Merge ``spec`` and ``status`` into the ClusterVersion of the embedded cluster stored in ``state``;
    ``retrieved``: the RetrievedUpdates condition's status, reason and message."""
    async def write() -> None:
        cluster = SimCluster(Clock(None), path=Path(state))
        try:
            cv = await cluster.get(cv_ref())
            assert cv is not None
            cv = await cluster.update({**cv, "spec": {**cv["spec"], **spec}})
            conditions = cv["status"]["conditions"]
            if retrieved is not None:
                conditions = [c for c in conditions if c["type"] != "RetrievedUpdates"]
                conditions.append({"type": "RetrievedUpdates", "status": retrieved[0], "reason": retrieved[1],
                                   "message": retrieved[2], "lastTransitionTime": T})
            await cluster.update_status({**cv, "status": {**cv["status"], **status, "conditions": conditions}})
        finally:
            await cluster.close()

    asyncio.run(write())
