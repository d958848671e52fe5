"""Releases, risks and conditional updates as a ClusterVersion's status holds them (openshift/api
``config/v1/types_cluster_version.go``: ``Release``, ``ConditionalUpdate``, ``ConditionalUpdateRisk``,
``ClusterCondition``).  Values the code builds and compares; ``to_json`` gives the status's shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ALWAYS = "Always"
PROMQL = "PromQL"


@dataclass(frozen=True)
class Release:
    version: str
    image: str
    url: str = ""
    channels: tuple[str, ...] = ()
    architecture: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.architecture:
            out["architecture"] = self.architecture
        if self.channels:
            out["channels"] = list(self.channels)
        out["image"] = self.image
        if self.url:
            out["url"] = self.url
        out["version"] = self.version
        return out



@dataclass(frozen=True)
class MatchingRule:
    """A ``ClusterCondition``: ``type`` is ``Always`` or ``PromQL`` (then ``promql`` is its query); other
    types are kept as read (the CVO prunes rules its registry does not know)."""

    type: str
    promql: str = ""

    def to_json(self) -> dict[str, Any]:
        if self.type == PROMQL:
            return {"promql": {"promql": self.promql}, "type": self.type}
        return {"type": self.type}


@dataclass(frozen=True)
class Risk:
    """A ``ConditionalUpdateRisk``; ``conditions`` (the ``Applies`` condition, feature-gated) as JSON."""

    name: str
    message: str
    url: str
    matching_rules: tuple[MatchingRule, ...] = ()
    conditions: tuple[Mapping[str, Any], ...] = ()

    def to_json(self, with_conditions: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if with_conditions and self.conditions:
            out["conditions"] = [dict(c) for c in self.conditions]
        out["matchingRules"] = [r.to_json() for r in self.matching_rules]
        out["message"] = self.message
        out["name"] = self.name
        out["url"] = self.url
        return out



@dataclass(frozen=True)
class ConditionalUpdate:
    """An update that is recommended only when none of its risks apply (``conditions``: its
    ``Recommended`` condition, as JSON); ``risk_names`` is the gated ``riskNames`` field."""

    release: Release
    risks: tuple[Risk, ...] = ()
    conditions: tuple[Mapping[str, Any], ...] = ()
    risk_names: tuple[str, ...] = ()

    def to_json(self, gated: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.conditions:
            out["conditions"] = [dict(c) for c in self.conditions]
        out["release"] = self.release.to_json()
        if gated and self.risk_names:
            out["riskNames"] = list(self.risk_names)
        out["risks"] = [r.to_json(with_conditions=gated) for r in self.risks]  # Applies: gated too
        return out



@dataclass(frozen=True)
class Retrieved:
    """The ``RetrievedUpdates`` condition (reasons as ``calculateAvailableUpdatesStatus`` and
    pkg/cincinnati's ``Error`` give them: ``NoChannel``, ``VersionNotFound``, ``RemoteFailed`` …)."""

    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class Updates:
    """What a fetch and evaluation of the graph found, for one upstream and channel: the status's
    ``availableUpdates`` (``None``: JSON null, as the CVO writes no updates) and ``conditionalUpdates``,
    and ``RetrievedUpdates``.  ``risks``: the gated ``conditionalUpdateRisks`` (``None`` when the gate is off)."""

    upstream: str  # spec.upstream this was computed for ("" = the default update service)
    channel: str
    available: tuple[Release, ...] | None
    conditional: tuple[ConditionalUpdate, ...] = ()
    retrieved: Retrieved = field(default_factory=lambda: Retrieved("False"))
    risks: tuple[Risk, ...] | None = None
    current: Release | None = None  # the graph's node for the cluster's release (mergeReleaseMetadata's source)
