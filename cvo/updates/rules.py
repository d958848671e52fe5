"""The seam between conditional updates and what evaluates their matching rules
(pkg/clusterconditions/clusterconditions.go ``ConditionRegistry``): ``match`` decides whether a risk
applies (the first rule the registry can evaluate decides; an error is :class:`EvaluationError`),
``prune_invalid`` drops rules it does not know or that are malformed (``PruneInvalid``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from cvo.updates.model import MatchingRule


class ConditionRegistry(Protocol):
    async def match(self, rules: Sequence[MatchingRule]) -> bool:
        """Whether the risk with these rules applies; raises :class:`cvo.updates.errors.EvaluationError`."""
        ...

    def prune_invalid(self, rules: Sequence[MatchingRule]) -> tuple[tuple[MatchingRule, ...], str]:
        """The rules that are valid, and why the others are not ("" when all are)."""
        ...
