"""cvo.status.tabwriter against Go's text/tabwriter itself: 300 recorded cases (tests/golden/go-tabwriter.jsonl,
written by hack/go-tabwriter/record.py), each the output of every Write and Flush, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.status.tabwriter import TabWriter

RECORDED = [json.loads(line) for line in
            (Path(__file__).resolve().parents[1] / "golden" / "go-tabwriter.jsonl").read_text().splitlines()]


def replay(case: dict[str, Any]) -> list[str]:
    w = TabWriter(case["minwidth"], case["padding"], discard_empty_columns=case["discard"])
    return [w.write(op[1]) if op[0] == "w" else w.flush() for op in case["ops"]]


@pytest.mark.parametrize("recorded", RECORDED, ids=[str(i) for i in range(len(RECORDED))])
def test_what_go_writes(recorded: dict[str, Any]) -> None:
    assert replay(recorded["case"]) == recorded["written"]


def test_the_cases_cover_the_writer() -> None:
    texts = "".join(op[1] for r in RECORDED for op in r["case"]["ops"] if op[0] == "w")
    assert all(ch in texts for ch in "\t\v\n\f中")
    assert any(w for r in RECORDED for w in r["written"][:-1])  # output before the last flush: a line of one cell


def test_ocs_table() -> None:
    w = TabWriter(14, 1, discard_empty_columns=True)
    assert w.write("  VERSION\tISSUES\n") == ""
    assert w.write("  4.20.0-okd-scos.ec.14\tno known issues relevant to this cluster\n") == ""
    assert w.flush() == ("  VERSION               ISSUES\n"
                         "  4.20.0-okd-scos.ec.14 no known issues relevant to this cluster\n")
    assert w.flush() == ""


@given(st.lists(st.text(alphabet="ab\t\v\n\f é", max_size=30), max_size=6))
def test_text_comes_out_whole_and_flush_empties(writes: list[str]) -> None:
    """Nothing but padding is added and nothing is lost: the cells come out in order, form feeds as newlines."""
    w = TabWriter(3, 1)
    out = "".join(w.write(text) for text in writes) + w.flush()
    assert out.replace(" ", "") == "".join(writes).replace("\f", "\n").replace("\t", "").replace("\v", "").replace(" ", "")
    assert w.flush() == ""
