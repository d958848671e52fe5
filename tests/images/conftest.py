"""Release images: the real registries the registry client's tests talk to (tests/support/registry.py).

Each registry is started once per worker process and shared by the tests that use it (they use their own
repository names); a registry that cannot start FAILS the tests that need it, with its log.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.registry import Registry

USERS = {"alice": "s3cret-pass"}


@pytest.fixture(scope="session")
def plain_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """Plain HTTP, no auth."""
    with Registry(tmp_path_factory.mktemp("registry-plain")) as registry:
        yield registry


@pytest.fixture(scope="session")
def tls_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """TLS from a CA made for it, no auth."""
    with Registry(tmp_path_factory.mktemp("registry-tls"), tls=True) as registry:
        yield registry


@pytest.fixture(scope="session")
def basic_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """TLS + htpasswd basic auth (:data:`USERS`)."""
    with Registry(tmp_path_factory.mktemp("registry-basic"), tls=True, users=USERS) as registry:
        yield registry


@pytest.fixture(scope="session")
def token_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """TLS + Bearer tokens from a token server that knows :data:`USERS`; anonymous callers may pull."""
    with Registry(tmp_path_factory.mktemp("registry-token"), tls=True, users=USERS, token=True,
                  anonymous_actions=("pull",)) as registry:
        yield registry


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """The empty directory an extraction writes into."""
    path = tmp_path / "tree"
    path.mkdir()
    return path
