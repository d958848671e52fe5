"""cvo's /metrics as text and as samples: render a :class:`~cvo.controller.metrics.Snapshot` the way the
controller's endpoint does, and read the exposition back with Prometheus' own text parser (prometheus_client's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from cvo.controller.metrics import CvoCollector, Snapshot


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def render(snapshot: Snapshot) -> str:
    """The exposition ``/metrics`` serves for ``snapshot`` (the endpoint's registry holds the same collector)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CvoCollector(snapshot))
    return generate_latest(registry).decode()


def samples(exposition: str, name: str | None = None) -> list[Sample]:
    """Every sample of the exposition (or of one family), in the order written."""
    found = [Sample(s.name, dict(s.labels), s.value) for family in text_string_to_metric_families(exposition)
             for s in family.samples]
    return [s for s in found if name is None or s.name == name]


def helps(exposition: str) -> dict[str, str]:
    return {family.name: family.documentation for family in text_string_to_metric_families(exposition)}


def snapshot_of(cv: dict[str, Any] | None = None, *operators: dict[str, Any], **fields: Any) -> Snapshot:
    """A Snapshot holding ``cv`` (named version) and ``operators``, as the informers would fill it."""
    snapshot = Snapshot(**fields)
    if cv is not None:
        snapshot.set_cluster_version("version", cv)
    for co in operators:
        snapshot.set_cluster_operator(co["metadata"]["name"], co)
    return snapshot
