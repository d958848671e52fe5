"""Release images: OCI layouts, building, pulling through the cache, describing; the registry, extraction.

Fixtures: until ``cvo.images.extract`` is on the branch, pulls extract with the stand-in of
:mod:`tests.support.oci_images` (remove ``_extract_stand_in`` once it is)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from cvo.images import pull
from tests.support.oci_images import stand_in_extract


@pytest.fixture(autouse=True, scope="session")
def _extract_stand_in() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        if importlib.util.find_spec("cvo.images.extract") is None:
            patch.setattr(pull, "_extract_layers", lambda: stand_in_extract)
        yield
