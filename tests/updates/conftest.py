"""The update graph: building and serving graphs, planning paths over them.

Fixtures of this folder; those every folder uses are in tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cvo.log import configure


@pytest.fixture(autouse=True)
def _quiet_logs() -> Iterator[None]:
    """The commands turn info logging on and bind it to the captured stderr: undo that after each test."""
    yield
    configure("text", 0)
