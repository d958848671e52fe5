"""The CVO's feature gates as a cluster says them: its FeatureGate ``cluster`` read (when the cluster serves
the kind) and judged by :func:`cvo.updates.featuregates.cvo_gates` (pkg/start/start.go
``processInitialFeatureGate``: a cluster without the object runs with the default gates)."""

from __future__ import annotations

from collections.abc import Iterable

from cvo.cluster.api import Cluster, Ref
from cvo.updates.featuregates import FEATURE_GATE, CvoGates, cvo_gates


async def read_gates(cluster: Cluster, version: str, *, feature_set: str = "",
                     enabled: Iterable[str] = ()) -> tuple[CvoGates, bool]:
    """The gates for the CVO of ``version``, and whether the cluster serves FeatureGates at all (the embedded
    cluster does not: its gates are then the flags' ``feature_set`` and ``enabled``)."""
    group, kind, name = FEATURE_GATE
    if not await cluster.serves(f"{group}/v1", kind):
        return cvo_gates(None, version, feature_set=feature_set, enabled=enabled), False
    gate = await cluster.get(Ref(group, kind, "", name))
    return cvo_gates(gate, version, feature_set=feature_set, enabled=enabled), True
