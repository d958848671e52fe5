#!/usr/bin/env python3
"""Record the order Go's sort.Slice leaves equal keys in: tests/golden/go-sort.jsonl (needs Go).

    hack/go-sort/record.py

Each case (from a seed) is a list of keys with many repeats: random, sorted, reversed, nearly sorted, or a
pattern that makes pdqsort break patterns, up to 300 long (insertion sort below 13, the ninther from 50).
"""
from __future__ import annotations

import json
import random
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "tests" / "golden" / "go-sort.jsonl"
SEEDS = 150


def case(seed: int) -> list[int]:
    r = random.Random(seed)
    n = r.choice([0, 1, 5, 12, 13, 20, 49, 50, 51, 100, 300])
    distinct = r.choice([1, 2, 3, 10, 1000])
    keys = [r.randrange(distinct) for _ in range(n)]
    shape = r.choice(["random", "sorted", "reversed", "nearly", "organ"])
    if shape == "sorted":
        keys.sort()
    elif shape == "reversed":
        keys.sort(reverse=True)
    elif shape == "nearly":
        keys.sort()
        for _ in range(r.randint(1, 6)):
            if n > 1:
                i, j = r.randrange(n), r.randrange(n)
                keys[i], keys[j] = keys[j], keys[i]
    elif shape == "organ":
        keys = sorted(keys[: n // 2]) + sorted(keys[n // 2:], reverse=True)
    return keys


def main() -> None:
    cases = [case(seed) for seed in range(SEEDS)]
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "gosort"
        subprocess.run(["go", "build", "-o", str(binary), "."], cwd=HERE, check=True)
        answer = subprocess.run([str(binary)], input="".join(json.dumps(c) + "\n" for c in cases),
                                capture_output=True, text=True, check=True).stdout.splitlines()
    lines = [json.dumps({"keys": c, "order": json.loads(a)}, separators=(",", ":")) for c, a in zip(cases, answer,
                                                                                                     strict=True)]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{OUT}: {len(lines)} cases")


if __name__ == "__main__":
    main()
