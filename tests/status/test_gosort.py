"""cvo.status.gosort against Go's sort.Slice itself: 150 recorded cases (tests/golden/go-sort.jsonl, written by
hack/go-sort/record.py) of keys with many repeats, where the order equal keys end in is Go's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.status.gosort import go_sort_slice

RECORDED = [json.loads(line) for line in
            (Path(__file__).resolve().parents[1] / "golden" / "go-sort.jsonl").read_text().splitlines()]


def sort_positions(keys: list[int]) -> list[int]:
    order = list(range(len(keys)))
    go_sort_slice(order, lambda i, j: keys[i] < keys[j])
    return order


@pytest.mark.parametrize("recorded", RECORDED, ids=[str(i) for i in range(len(RECORDED))])
def test_the_order_go_leaves(recorded: dict[str, list[int]]) -> None:
    assert sort_positions(recorded["keys"]) == recorded["order"]


def test_the_cases_are_not_all_stable() -> None:
    """Some cases end in an order a stable sort would not give: what the port is for."""
    stable = [sorted(range(len(r["keys"])), key=lambda i, keys=r["keys"]: keys[i]) for r in RECORDED]
    assert sum(s != r["order"] for s, r in zip(stable, RECORDED, strict=True)) > 20


@given(st.lists(st.integers(0, 5), max_size=400))
def test_it_sorts_and_keeps_every_element(keys: list[int]) -> None:
    order = sort_positions(keys)
    assert sorted(order) == list(range(len(keys)))
    assert [keys[i] for i in order] == sorted(keys)
