"""The update graph: the update service's client, the graph's reader, the selection of updates, the
retrieval's reasons and the refetch policy; building and serving graphs, planning paths over them.

The update service and the condition registry are in tests.support.update_service; fixtures every folder
uses are in tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cvo.log import configure


@pytest.fixture(autouse=True)
def _quiet_logs() -> Iterator[None]:
    """The commands turn info logging on and bind it to the captured stderr: undo that after each test."""
    yield
    configure("text", 0)
