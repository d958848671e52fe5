"""The manifest, index and image config readers' fuzz targets (tests/support/fuzz_images.py), bounded for make test;
make fuzz runs them longer (HYPOTHESIS_PROFILE=fuzz)."""

from __future__ import annotations

import os

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cvo.images import media
from tests.support import fuzz_images as t

CI = os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci"
BOUNDED = settings(max_examples=200 if CI else 5_000, derandomize=CI, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@BOUNDED
@given(st.tuples(t.near(t.MANIFEST), t.served_types))
@example((orjson.dumps({**t.MANIFEST, "schemaVersion": 2.0}), media.DOCKER_MANIFEST))  # found in review: taken for 2
@example((orjson.dumps({**t.MANIFEST, "mediaType": "a/b\nc"}), media.OCI_MANIFEST))  # found in review: a two-line error
@example((orjson.dumps({**t.MANIFEST, "config": {**t.MANIFEST["config"], "mediaType": "x\ny"}}), ""))
def test_manifests_parse_or_give_one_error_line(case: tuple[bytes, str]) -> None:
    t.manifest_target(case)


@BOUNDED
@given(st.tuples(t.near(t.INDEX), t.served_types))
@example((orjson.dumps({**t.INDEX, "mediaType": "a/b\nc"}), "application/json"))
def test_indexes_parse_or_give_one_error_line(case: tuple[bytes, str]) -> None:
    t.manifest_target(case)


@BOUNDED
@given(t.near(t.CONFIG))
def test_image_configs_parse_or_give_one_error_line(data: bytes) -> None:
    t.config_target(data)
