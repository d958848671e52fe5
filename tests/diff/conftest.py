"""The diff: cvo diff, plan --diff-from, upgrade --dry-run --diff.

Fixtures of this folder; those every folder uses are in tests/conftest.py."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cvo.cli.main import main
from cvo.log import configure
from tests.support.helpers import PAYLOADS, state_objects


@pytest.fixture(autouse=True)
def _quiet_logs() -> Iterator[None]:
    """The commands turn info logging on and bind it to the captured stderr: undo that after each test."""
    yield
    configure("text", 0)


@dataclass(frozen=True)
class DemoUpgrade:
    """The demo cluster at 4.16.0 (``before``: its store, kept), and the same cluster after a forced upgrade to
    4.17.0 (``after``); ``objects_*``: their objects as the store holds them."""

    before: Path
    after: Path
    objects_before: list[dict]
    objects_after: list[dict]


@pytest.fixture(scope="session")
def demo_upgrade(tmp_path_factory: pytest.TempPathFactory) -> DemoUpgrade:
    root = tmp_path_factory.mktemp("demo-upgrade")
    before, after = root / "before.db", root / "after.db"
    operators = str(PAYLOADS / "demo-operators.yaml")
    assert main(["install", str(PAYLOADS / "demo-4.16.0"), "--state", str(before), "--operators", operators,
                 "-o", "json"]) == 0
    shutil.copyfile(before, after)
    assert main(["upgrade", "--to", str(PAYLOADS / "demo-4.17.0"), "--force", "--state", str(after),
                 "--operators", operators, "-o", "json"]) == 0
    configure("text", 0)
    return DemoUpgrade(before, after, state_objects(before), state_objects(after))
