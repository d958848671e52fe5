"""The diff's YAML writer (cvo/diff/yamltext.py): whatever JSON data it is given, YAML reads the same data back."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.diff.yamltext import to_lines

TRICKY = st.sampled_from(["", " ", "yes", "No", "on", "null", "~", "true", "1", "0o7", "0x1F", "1:20", "1e3",
                          "2001-12-14", "=", "<<", "-", "- a", "a: b", "a #b", "#x", "a:", "@x", "`x", "'q'",
                          '"q"', "multi\nline", "multi\nline\n", "two\n\n", "\nlead", " lead\nx", "tab\tx\ny",
                          "crlf\r\nx", "uni\u2028x", "ünï", "*a", "&a", "!t", "%x", "{a}", "[a]", "a,b",
                          "registry.io/x@sha256:0a1b", "--flag=value", "$(VAR)", ".", "a b", "x\x00y", "1_000", "0b101",
                          "1:20:30", ".inf", "-.Inf", ".NaN", "2001-12-14t21:59:43.10-05:00", "2001-1-2 3:04:05",
                          "+1", "1.0e+3", "~x", "yes!", "Off", "4.17.0", "-5", "-x", "a-", "(x)", "a:b", "x*y"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=False, allow_infinity=False), TRICKY, st.text(max_size=12))
DATA = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(TRICKY, st.text(max_size=6)), inner, max_size=4)),
    max_leaves=20)


@settings(max_examples=500)
@given(DATA)
def test_yaml_reads_the_data_back(data: Any) -> None:
    assert yaml.safe_load("\n".join(to_lines(data)) + "\n") == data


def test_the_layout_is_kubectls() -> None:
    data = {"spec": {"containers": [{"name": "web", "image": "web:1", "args": ["--v=2"]}], "replicas": 1,
                     "empty": {}, "none": []},
            "data": {"config.yaml": "a: 1\nb: 2\n"}}
    assert to_lines(data) == [
        "spec:", "  containers:", "  - name: web", "    image: web:1", "    args:", "    - --v=2",
        "  replicas: 1", "  empty: {}", "  none: []",
        "data:", "  config.yaml: |", "    a: 1", "    b: 2",
    ]
