"""A status condition, as every kind cvo reads reports them.

:class:`Condition` is openshift/api ``config/v1`` ``ClusterOperatorStatusCondition`` (ClusterVersion and
ClusterOperator conditions), :class:`MetaCondition` apimachinery's ``metav1.Condition`` (an
OperatorCondition's), which adds ``observedGeneration``.  ``lastTransitionTime`` is a :class:`~cvo.objects.times.Time`: any time Go can
hold, ``0001-01-01T00:00:00+14:00`` included.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from cvo.objects.times import Time
from cvo.objects.view import View


@dataclass(frozen=True)
class Condition(View):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: Time | None = None

    @property
    def since(self) -> int | None:
        """``lastTransitionTime`` in nanoseconds since the Unix epoch; ``None`` when it has none."""
        return None if self.last_transition_time is None else self.last_transition_time.ns


@dataclass(frozen=True)
class MetaCondition(Condition):
    observed_generation: int | None = None


C = TypeVar("C", bound=Condition)


def find(conditions: Iterable[C], type_: str) -> C | None:
    """The first condition of ``type_`` (client-go's ``FindStatusCondition``)."""
    return next((c for c in conditions if c.type == type_), None)


def find_last(conditions: Iterable[C], type_: str) -> C | None:
    """The last condition of ``type_`` (oc's loops over the conditions keep the last one)."""
    found = None
    for c in conditions:
        if c.type == type_:
            found = c
    return found
