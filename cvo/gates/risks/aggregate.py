"""Several sources as one (pkg/risk/aggregate/aggregate.go): the first definition of a risk name wins (a
different one from another source is an error), the versions of a name are joined, and every source's
error is kept while the others still count."""

from __future__ import annotations

from collections.abc import Sequence

from cvo.payload.gostrings import go_quote
from cvo.updates.model import Risk
from cvo.updates.sources import RiskSource, SourcedRisks


def _same(a: Risk, b: Risk) -> bool:
    """Equal but for ``conditions`` (``cmpopts.IgnoreFields(…, "Conditions")``)."""
    return (a.name, a.message, a.url, a.matching_rules) == (b.name, b.message, b.url, b.matching_rules)


def _diff(a: Risk, b: Risk) -> str:
    return "\n".join(f"  {field}: {getattr(a, field)!r} != {getattr(b, field)!r}"
                     for field in ("message", "url", "matching_rules") if getattr(a, field) != getattr(b, field))


def combine(found: Sequence[tuple[str, SourcedRisks]]) -> SourcedRisks:
    """The aggregate of each ``(source name, what it found)``, in order."""
    errors: list[str] = []
    risks: dict[str, Risk] = {}
    versions: dict[str, list[str]] = {}
    for source, result in found:
        if result.error:
            errors.append(result.error)
        for risk in result.risks:
            existing = risks.get(risk.name)
            if existing is None:
                risks[risk.name] = risk
            elif not _same(existing, risk):
                errors.append(f"divergent definitions of risk {go_quote(risk.name)} from {go_quote(source)}:\n{_diff(existing, risk)}")
        for name, vs in result.versions.items():
            joined = versions.setdefault(name, [])
            joined.extend(v for v in vs if v not in joined)
    return SourcedRisks(tuple(risks.values()), {k: tuple(v) for k, v in versions.items()}, "\n".join(errors))


class Aggregate:
    def __init__(self, *sources: RiskSource) -> None:
        self.sources = sources
        self.name = f"Aggregate({', '.join(s.name for s in sources)})"

    async def risks(self, versions: Sequence[str]) -> SourcedRisks:
        return combine([(s.name, await s.risks(versions)) for s in self.sources])
