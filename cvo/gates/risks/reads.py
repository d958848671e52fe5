"""What a source was given to read: the object, ``None`` when it does not exist, or :class:`Failed`
(the read failed; the CVO's lister error)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Failed:
    message: str


Read = Mapping[str, Any] | None | Failed
