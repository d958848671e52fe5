"""Fixtures of the signature tests: one GNUPGHOME of throwaway keys per session (made with the real gpg),
a signature store directory per test, and verifiers over them.  Helpers are in tests.support.gpgkeys."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gpgkeys import Keys, make_keys, stop_agent


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keys]:
    if shutil.which("gpg") is None:
        pytest.fail("gpg is not installed (GnuPG 2.2: apt-get install gnupg)")
    home = tmp_path_factory.mktemp("gnupg")
    made = make_keys(home)
    yield made
    stop_agent(home)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "signatures"
    path.mkdir()
    return path
