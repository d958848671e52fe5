#!/usr/bin/env python3
"""Record Go's text/tabwriter on generated cases: tests/golden/go-tabwriter.jsonl (needs Go).

    hack/go-tabwriter/record.py

Each case (from a seed) is a minimal width, a padding, DiscardEmptyColumns or not, and writes of text made of
cells, tabs, vertical tabs, newlines, form feeds, empty cells and non-ASCII letters, with flushes between.
"""
from __future__ import annotations

import json
import random
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "tests" / "golden" / "go-tabwriter.jsonl"
SEEDS = 300
PIECES = ["a", "version", "4.16.1", "no known issues", "", "é中", "  ", "x" * 17, "\t", "\t", "\t", "\v", "\n", "\n",
          "\f"]


def case(seed: int) -> dict:
    r = random.Random(seed)
    ops = []
    for _ in range(r.randint(1, 6)):
        if r.random() < 0.25:
            ops.append(["f"])
        else:
            ops.append(["w", "".join(r.choice(PIECES) for _ in range(r.randint(0, 14)))])
    ops.append(["f"])
    return {"minwidth": r.choice([0, 0, 4, 14]), "padding": r.choice([0, 1, 3]), "discard": r.random() < 0.5,
            "ops": ops}


def main() -> None:
    cases = [case(seed) for seed in range(SEEDS)]
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "gotabwriter"
        subprocess.run(["go", "build", "-o", str(binary), "."], cwd=HERE, check=True)
        answer = subprocess.run([str(binary)], input="".join(json.dumps(c) + "\n" for c in cases),
                                capture_output=True, text=True, check=True).stdout.splitlines()
    lines = [json.dumps({"case": c, "written": json.loads(a)}, ensure_ascii=False) for c, a in zip(cases, answer,
                                                                                                    strict=True)]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{OUT}: {len(lines)} cases")


if __name__ == "__main__":
    main()
