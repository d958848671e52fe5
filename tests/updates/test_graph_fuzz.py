"""The update service client's fuzz targets (tests/support/fuzz_graph.py), bounded for make test; make fuzz runs
them longer (HYPOTHESIS_PROFILE=fuzz) and mutates tests/support/fuzz_graph.py's seeds."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, example, given, settings

from tests.support import fuzz_graph as t

BOUNDED = settings(max_examples=200 if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci" else 3_000,
                   derandomize=os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci", deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SLOW = settings(BOUNDED, max_examples=60 if BOUNDED.derandomize else 1_000)


@BOUNDED
@given(t.bodies())
@example(b'{"nodes": [{"version": "4.1.0", "payload": "a"}], "edges": [[0, 5]]}')  # the CVO panics here
@example(b'{"nodes": [{"version": "4.1.0", "payload": "a", "metadata": {"url": 1e400}}]}')  # Go: float64 overflow
@example(b'{"nodes": [{"version": "4.1.0"}], "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "9.9.9"}]}]}')
def test_any_body_is_a_selection_or_a_cvo_reason(body: bytes) -> None:
    t.graph_body_target(body)


@SLOW
@given(t.TARGETS["graph-response"][0])
@example((200, b"", True))
@example((200, b'{"nodes": [{"version": "4.1.0", "payload": "a"}]}', True))
def test_any_answer_of_a_real_server_is_a_cvo_condition(answer: tuple[int, bytes, bool]) -> None:
    t.graph_response_target(answer)
