"""The seam between the risk sources and the update evaluation (pkg/risk/risk.go ``Source``): each
source reports the risks it knows of now and the versions each one applies to; the evaluation merges
them into the conditional updates (``risk.Merge``) and derives ``Upgradeable`` from the ones that apply."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from cvo.updates.model import Risk


@dataclass(frozen=True)
class SourcedRisks:
    risks: tuple[Risk, ...] = ()
    versions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # risk name -> update versions
    error: str = ""  # what failed while detecting (the CVO logs it and goes on with what it found)


class RiskSource(Protocol):
    name: str  # e.g. "ClusterOperatorUpgradeable", "AdminAck", "Alert"

    async def risks(self, versions: Sequence[str]) -> SourcedRisks:
        """The risks now; ``versions`` are every update's version (a source about the cluster's own state
        applies its risks to all of them)."""
        ...
