"""Fixtures every folder's tests use: small release directories built on the fly, the real corpus, and a
private parse cache.  Each folder's conftest.py holds its own; plain helpers are in :mod:`tests.support`."""

from __future__ import annotations

from pathlib import Path

import freezegun
import pytest

from tests.support.helpers import CORPUS, ReleaseFactory, release_factory

# The kubernetes client builds pydantic models on first attribute access; freezegun walks every
# attribute of every loaded module when it freezes time. Leave the client alone.
freezegun.configure(extend_ignore_list=["kubernetes"])


@pytest.fixture
def make_release(tmp_path: Path) -> ReleaseFactory:
    """Build a release directory: ``files`` maps names under release-manifests/ to documents or text."""
    return release_factory(tmp_path)


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "release-manifests").is_dir():
        pytest.fail(f"the corpus is missing: {CORPUS} (clone with ../shared beside the repository)")
    return CORPUS


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private parse cache, so tests never read or write the user's."""
    path = tmp_path / "cache"
    monkeypatch.setenv("CVO_CACHE_DIR", str(path))
    return path


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CVO_CACHE_DIR", str(tmp_path_factory.mktemp("cvo-cache")))


