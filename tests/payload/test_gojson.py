"""A YAML document's ``Raw``: Go's ``encoding/json`` text of sigs.k8s.io/yaml's value.

Upstream: ``kubernetes-sigs/yaml`` ``yaml.go`` (``YAMLToJSON``: go-yaml v2, ``convertToJSONableObject``,
``json.Marshal``) and golang/go ``src/encoding/json/encode.go`` (``appendString`` with ``escapeHTML``,
``floatEncoder``, ``mapEncoder`` sorting keys).  Expected bytes are what ``sigs.k8s.io/yaml`` v1.6.0's
``YAMLToJSON`` and Go 1.26's ``json.Marshal(float64)`` return for the same input.
"""

from __future__ import annotations

import json
import math
import re
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.payload.gojson import UnsupportedValue, go_float, go_json
from cvo.payload.manifest import ManifestError, parse_headers
from cvo.payload.yamlorjson import decode, load_documents


def yaml_to_json(text: bytes) -> bytes:
    ((doc, _, floats),) = decode(text)
    return go_json(doc, exact=floats)


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(b"b: 1\na: 2\nB: 3\n\xc3\xa9: 4\nZ: 5\n_: 6\n", b'{"B":3,"Z":5,"_":6,"a":2,"b":1,"\xc3\xa9":4}',
                 id="keys-sorted-bytewise"),
    pytest.param('a: "<&> \u2028\u2029 \\b\\f\\x01\\x1f \\t\\n\\r \\" \\\\ é 😀"\n'.encode(),
                 '{"a":"\\u003c\\u0026\\u003e\\u2028\\u2029\\b\\f\\u0001\\u001f \\t\\n\\r \\" \\\\ é 😀"}'.encode(),
                 id="escapes-and-unicode"),  # a literal U+2028 or U+2029 is a YAML line break: folded
    pytest.param(b'a: "x\\u2028y\\u2029z"\nb: "\\x7f"\n', b'{"a":"x\\u2028y\\u2029z","b":"\x7f"}',
                 id="line-separators-escaped-delete-not"),
    pytest.param(b"a: 0o17\nb: 0x1F\nc: 017\nd: 1_000\n", b'{"a":15,"b":31,"c":15,"d":1000}', id="integers"),
    pytest.param(b"a: 1.5e-7\nb: -1e-7\nc: 5e-324\nd: 1.7976931348623157e308\ne: 0.1\nf: 100.0\ng: 1e21\n"
                 b"h: 123456789012345678\n",
                 b'{"a":1.5e-7,"b":-1e-7,"c":5e-324,"d":1.7976931348623157e+308,"e":0.1,"f":100,"g":1e+21,'
                 b'"h":123456789012345678}', id="floats"),
    pytest.param(b"a: -0.0\n", b'{"a":-0}', id="negative-zero"),
    pytest.param(b"a: 1e20\n", b'{"a":100000000000000000000}', id="large-integral-float"),
    pytest.param(b"a: 99999999999999999999\n", b'{"a":100000000000000000000}', id="integer-beyond-uint64"),
    pytest.param(b"a: 0.0000001234\n", b'{"a":1.234e-7}', id="small-float"),
    pytest.param(b"a: 0.000001\n", b'{"a":0.000001}', id="smallest-plain-float"),
    pytest.param(b"a: 2001-12-14\n", b'{"a":"2001-12-14"}', id="timestamp-string"),
    pytest.param(b"{1: a, true: b, 1.5e300: c}\n", b'{".inf":"c","1":"a","true":"b"}', id="non-string-keys"),
])
def test_yaml_to_json_as_sigs_yaml(text: bytes, expected: bytes) -> None:
    assert yaml_to_json(text) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (1e20, "100000000000000000000"), (1e21, "1e+21"), (1e-7, "1e-7"), (1e-6, "0.000001"), (0.1, "0.1"),
    (-0.0, "-0"), (0.0, "0"), (1.5e300, "1.5e+300"), (123.0, "123"), (5e-324, "5e-324"), (1.234e-06, "0.000001234"),
    (1e-10, "1e-10"), (2.5e-08, "2.5e-8"), (9.999999999999999e20, "999999999999999900000"), (1e16, "10000000000000000"),
    (12345678.9, "12345678.9"), (1 / 3, "0.3333333333333333"), (-2 / 3, "-0.6666666666666666"),
    (1.7976931348623157e308, "1.7976931348623157e+308"), (2.0**63, "9223372036854776000"),
    (2.0**64, "18446744073709552000"), (4.35e-07, "4.35e-7"),
])
def test_go_float(value: float, expected: str) -> None:
    """encode.go ``floatEncoder``: 'f' from 1e-6 to below 1e21, else 'e' with ``e-09`` cleaned to ``e-9``."""
    assert go_float(value) == expected


@pytest.mark.parametrize(("text", "name"), [(b"a: .nan\n", "NaN"), (b"a: .inf\n", "+Inf"), (b"a: [-.Inf]\n", "-Inf")])
def test_nan_and_infinities_cannot_be_json(text: bytes, name: str) -> None:
    """encode.go: ``UnsupportedValueError`` (``json: unsupported value: NaN``); the CVO fails to load such a file."""
    with pytest.raises(UnsupportedValue, match=re.escape(f"json: unsupported value: {name}")):
        yaml_to_json(text)
    manifest = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: 1\n" + text
    with pytest.raises(ManifestError, match=re.escape(f"cannot be converted to JSON: json: unsupported value: {name}")):
        parse_headers(manifest, "f.yaml")


@pytest.mark.parametrize(("text", "floats"), [
    (b"a: .NaN\n", True), (b"a: [1, {b: .5}]\n", True), (b"a: !!float 2.5\n", True), (b"a: &x 1.5\nb: *x\n", True),
    (b"a: 1e3\nb: nan\nc: '1.5'\n1.5: d\n", False),  # an integral float is an integer; a float key a string
])
def test_the_decoder_says_which_documents_hold_floats(text: bytes, floats: bool) -> None:
    """Only those need the exact encoder: orjson writes ``1e+20``, ``123.0``, and ``null`` for a NaN."""
    ((_, _, found),) = decode(text)
    assert found is floats
    assert go_json({"a": math.nan}, exact=False) == b'{"a":null}'
    with pytest.raises(UnsupportedValue):
        go_json({"a": math.nan}, exact=True)


def json_values(floats: bool) -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | st.text()
    if floats:
        scalars |= st.floats(allow_nan=False, allow_infinity=False)
    return st.recursive(
        scalars, lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
        max_leaves=20)


def same(read: Any, value: Any) -> bool:
    """``read`` (from JSON) is ``value``, a float read back as float64 as Go reads it."""
    if isinstance(value, float):
        return isinstance(read, int | float) and float(read) == value
    if isinstance(value, dict):
        return isinstance(read, dict) and read.keys() == value.keys() and all(same(read[k], value[k]) for k in value)
    if isinstance(value, list):
        return isinstance(read, list) and len(read) == len(value) and all(map(same, read, value))
    return bool(read == value and type(read) is type(value))


@given(json_values(floats=True))
def test_go_json_reads_back(value: object) -> None:
    """Go's text is JSON for the same value, with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped."""
    out = go_json(value, exact=True)
    assert same(json.loads(out), value)
    assert not any(c in out for c in (b"<", b">", b"&", "\u2028".encode(), "\u2029".encode()))


@given(json_values(floats=False))
def test_without_floats_the_fast_path_writes_what_the_exact_encoder_writes(value: object) -> None:
    """orjson (keys sorted) plus the escapes is Go's text when there is no float."""
    assert go_json(value, exact=False) == go_json(value, exact=True)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_go_float_reads_back_with_the_exponent_where_go_puts_it(value: float) -> None:
    text = go_float(value)
    assert float(text) == value and math.copysign(1, float(text)) == math.copysign(1, value)
    plain = value == 0 or 1e-6 <= abs(value) < 1e21
    assert ("e" not in text) is plain
    assert not text.endswith(".0") and "e-0" not in text and "e+0" not in text


def test_float32_key_digits_are_the_shortest() -> None:
    """``FormatFloat(k, 'g', -1, 32)`` keys read back as the same float32."""
    for text in ("0.1", "3.4028235e+38", "1.1754944e-38", "16777217", "0.3"):
        (doc,) = load_documents(f"{text}: x\n".encode())
        (key,) = doc
        assert struct.pack("f", float(key)) == struct.pack("f", float(text))
