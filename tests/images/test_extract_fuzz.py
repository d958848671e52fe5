"""The layer extraction's fuzz target (tests/support/fuzz_images.py ``layer-tar``), bounded for make test; make
fuzz runs it longer (HYPOTHESIS_PROFILE=fuzz)."""

from __future__ import annotations

import os
import tarfile
from typing import Any

from hypothesis import HealthCheck, example, given, settings

from tests.support import fuzz_images as t

CI = os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci"
BOUNDED = settings(max_examples=150 if CI else 3_000, derandomize=CI, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def spec(*entries: tuple[str, bytes, bytes, str], damage: tuple[int, int, bytes] = (0, 0, b""),
         gzip: bool = True) -> dict[str, Any]:
    return {"entries": list(entries), "format": tarfile.PAX_FORMAT, "gzip": gzip, "damage": damage,
            "digest_matches": True}


@BOUNDED
@given(t.tar_specs)
@example([spec(("manifests/x/y/a", tarfile.SYMTYPE, b"", "b/../.."),),
          spec(("manifests/x/y/b", tarfile.SYMTYPE, b"", "../../../release-manifests"))])
@example([spec(("manifests/a", tarfile.SYMTYPE, b"", "../release-manifests"),
               ("manifests/a/.wh.x", tarfile.REGTYPE, b"", ""))])
@example([spec(("manifests/l", tarfile.SYMTYPE, b"", "../../outside"),
               ("manifests/l/canary", tarfile.REGTYPE, b"owned", ""))])
@example([spec(("manifests/a", tarfile.REGTYPE, b"x" * 40, ""), damage=(2, 700, b""), gzip=False)])
def test_layers_extract_or_give_one_error_line_and_nothing_leaves_the_target(specs: list[dict[str, Any]]) -> None:
    t.tar_stream_target(specs)
