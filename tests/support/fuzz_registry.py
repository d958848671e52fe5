"""Fuzz targets of the registry client (cvo.images.registry, cvo.images.auth): name -> (strategy, target),
merged into fuzz_targets.TARGETS."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {}
