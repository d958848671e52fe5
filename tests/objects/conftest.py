"""The typed views of objects read from outside, and every odd shape of them through every command that reads them.

Fixtures of this folder; those every folder uses are in tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cvo.objects import base


@pytest.fixture(autouse=True)
def warnings_afresh() -> Iterator[None]:
    """A view warns once a process about each object and field: each test starts as a process of its own."""
    base._warned.clear()
    yield
    base._warned.clear()
