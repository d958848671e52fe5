"""The YAML/JSON decoder: go-yaml v2 + sigs.k8s.io/yaml results, real-world quirks, and errors."""

from __future__ import annotations

import math
import re
from typing import Any

import orjson
import pytest
import yaml

from cvo.payload.limits import MAX_DEPTH
from cvo.payload.yamlorjson import load_documents
from cvo.payload.yamlparse import DocumentError, resolve_plain


def value_of(text: str) -> Any:
    """The decoded value of ``v: <text>``."""
    (doc,) = load_documents(f"v: {text}\n".encode())
    return doc["v"]


# --- scalars --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    # YAML 1.1 booleans, as go-yaml v2 resolves them (the "Norway problem" included).
    ("y", True), ("Y", True), ("yes", True), ("Yes", True), ("YES", True), ("on", True), ("On", True),
    ("ON", True), ("true", True), ("True", True), ("TRUE", True),
    ("n", False), ("N", False), ("no", False), ("No", False), ("NO", False), ("off", False), ("Off", False),
    ("false", False), ("FALSE", False),
    ("yEs", "yEs"), ("tRUE", "tRUE"), ("nope", "nope"),
    # nulls
    ("~", None), ("null", None), ("Null", None), ("NULL", None), ("", None), ("nULL", "nULL"),
    # integers: strconv.ParseInt(s, 0, 64) after removing underscores
    ("0", 0), ("42", 42), ("+42", 42), ("-42", -42), ("0x1F", 31), ("0X1f", 31), ("-0x10", -16),
    ("0o17", 15), ("0b101", 5), ("-0b101", -5), ("017", 15), ("-017", -15), ("0777", 511),
    ("1_000", 1000), ("0x_ff", 255), ("9223372036854775807", 2**63 - 1), ("-9223372036854775808", -(2**63)),
    ("18446744073709551615", 2**64 - 1),
    # floats; integral ones become JSON integers as sigs.k8s.io/yaml writes them
    ("1e3", 1000), ("1E3", 1000), ("1.5", 1.5), ("-1.5e-3", -0.0015), (".5", 0.5), ("1.", 1), ("08", 8),
    ("09.5", 9.5), ("1_0.5", 10.5),
    # strings that only look numeric
    ("0x", "0x"), ("0b2", "0b2"), ("1e", "1e"), ("1.2.3", "1.2.3"), ("-x", "-x"), ("+", "+"),
    ("12abc", "12abc"), ("v1", "v1"),
    # timestamps stay strings (go-yaml v2 into interface{})
    ("2001-12-14", "2001-12-14"), ("2001-12-14T21:59:43.10-05:00", "2001-12-14T21:59:43.10-05:00"),
    # the YAML "=" value (PyYAML's safe loader rejects it)
    ("=", "="),
    # "<<" is a merge only as a key
    ("<<", "<<"),
])
def test_plain_scalars_resolve_like_go_yaml_v2(text: str, expected: Any) -> None:
    got = value_of(text)
    assert got == expected
    assert type(got) is type(expected)


def test_integers_beyond_uint64_become_floats() -> None:
    got = value_of("99999999999999999999")
    assert isinstance(got, float)
    assert got == 1e20


@pytest.mark.parametrize(("text", "expected"), [
    (".inf", math.inf), (".Inf", math.inf), ("+.INF", math.inf), ("-.inf", -math.inf), ("-.Inf", -math.inf),
])
def test_infinities(text: str, expected: float) -> None:
    assert value_of(text) == expected


def test_nan() -> None:
    assert math.isnan(value_of(".nan"))
    assert math.isnan(resolve_plain(".NaN"))


@pytest.mark.parametrize(("text", "expected"), [
    ('"yes"', "yes"), ("'0x1F'", "0x1F"), ('"123"', "123"), ("'null'", "null"), ('"="', "="),
    ("!!str 123", "123"), ("!!str yes", "yes"), ("!!int '12'", 12), ("!!bool 'on'", True), ("!!null ''", None),
    ("! 12", "12"), ("!custom 12", 12), ("!custom '12'", "12"), ("!!timestamp 2001-12-14", "2001-12-14"),
])
def test_quoted_and_tagged_scalars(text: str, expected: Any) -> None:
    got = value_of(text)
    assert got == expected
    assert type(got) is type(expected)


def test_block_scalars_are_strings() -> None:
    (doc,) = load_documents(b"a: |\n  yes\n  0x1F\nb: >-\n  one\n  two\n")
    assert doc == {"a": "yes\n0x1F\n", "b": "one two"}


def test_non_string_keys_become_strings_as_sigs_yaml_writes_them() -> None:
    (doc,) = load_documents(b"1: a\ntrue: b\ny: c\n1.5: d\n0x10: e\n")
    assert doc == {"1": "a", "true": "c", "1.5": "d", "16": "e"}


def test_float_keys_are_written_as_float32() -> None:
    """sigs.k8s.io/yaml yaml.go ``convertToJSONableObject``: ``strconv.FormatFloat(key, 'g', -1, 32)``.

    Expected: ``YAMLToJSON`` of sigs.k8s.io/yaml v1.6.0 on the same text.
    """
    text = (b"1e6: a\n1.5: b\n3.14159265358979: c\n.inf: d\n-.inf: e\n.nan: f\n0.1: g\n1e-5: h\n100000: i\n"
            b"1e3: j\n-0.0: k\n1.5e300: l\n")
    (doc,) = load_documents(text)
    assert doc == {"1e+06": "a", "1.5": "b", "3.1415927": "c", ".inf": "l", "-.inf": "e", ".nan": "f", "0.1": "g",
                   "1e-05": "h", "100000": "i", "1000": "j", "-0": "k"}


@pytest.mark.parametrize(("text", "key"), [
    (b"~: f\n", "null"), (b"null: f\n", "null"), (b"18446744073709551615: a\n", "18446744073709551615 (a uint64)"),
])
def test_keys_sigs_yaml_cannot_convert_are_errors(text: bytes, key: str) -> None:
    """sigs.k8s.io/yaml yaml.go: ``unsupported map key of type`` for a nil or uint64 key (int64 keys are fine)."""
    with pytest.raises(DocumentError, match=re.escape(f"mapping key {key} cannot be converted to JSON")) as info:
        load_documents(text)
    assert (info.value.document, info.value.line) == (1, 1)
    assert load_documents(b"9223372036854775807: a\n") == [{"9223372036854775807": "a"}]


# --- documents ------------------------------------------------------------------------------


def test_multi_document_stream_keeps_empty_and_null_documents_as_none() -> None:
    docs = load_documents(b"---\n---\na: 1\n---\nnull\n---\n~\n---\n")
    assert docs == [None, {"a": 1}, None, None, None]


def test_empty_and_comment_only_streams_have_no_documents() -> None:
    assert load_documents(b"") == []
    assert load_documents(b"# nothing here\n\n") == []


def test_document_end_marker() -> None:
    assert load_documents(b"a: 1\n...\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]


def test_utf8_bom_is_ignored() -> None:
    assert load_documents(b"\xef\xbb\xbfkind: A\nname: x\n") == [{"kind": "A", "name": "x"}]
    assert load_documents(b'\xef\xbb\xbf{"kind": "A"}') == [{"kind": "A"}]


def test_json_stream() -> None:
    assert load_documents(b'  \n{"a": 1, "b": [true, null, 1.5]}\n') == [{"a": 1, "b": [True, None, 1.5]}]
    assert load_documents(b'{"a": 1}\n{"b": 2}\nnull\n') == [{"a": 1}, {"b": 2}, None]


def test_json_duplicate_keys_last_wins() -> None:
    assert load_documents(b'{"a": 1, "a": 2}') == [{"a": 2}]


def test_json_keeps_strings_that_yaml_would_resolve() -> None:
    assert load_documents(b'{"a": "yes", "b": "0x1F", "c": "="}') == [{"a": "yes", "b": "0x1F", "c": "="}]


def test_duplicate_mapping_keys_last_one_wins() -> None:
    (doc,) = load_documents(b"metadata:\n  namespace: a\n  name: x\n  namespace: b\n")
    assert doc == {"metadata": {"namespace": "b", "name": "x"}}


# --- anchors, aliases and merge keys --------------------------------------------------------


def test_anchors_and_aliases() -> None:
    (doc,) = load_documents(b"a: &x {k: [1, 2]}\nb: *x\nc: &s hello\nd: *s\n")
    assert doc == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}, "c": "hello", "d": "hello"}


def test_merge_key_from_alias_and_inline_mapping() -> None:
    (doc,) = load_documents(b"base: &b {p: 1, q: 2}\nobj:\n  <<: *b\n  q: 3\ninline:\n  <<: {p: 1}\n")
    assert doc["obj"] == {"p": 1, "q": 3}
    assert doc["inline"] == {"p": 1}
    assert doc["base"] == {"p": 1, "q": 2}  # the anchored mapping is not modified by the merge


def test_merge_key_overrides_keys_before_it_like_go_yaml_v2() -> None:
    # go-yaml v2 sets keys in document order, a merge included: what comes later wins.
    (doc,) = load_documents(b"m:\n  a: 1\n  <<: {a: 2, b: 2}\n  b: 3\n")
    assert doc == {"m": {"a": 2, "b": 3}}


def test_merge_sequence_earlier_mappings_take_precedence() -> None:
    (doc,) = load_documents(b"a: &a {k: a, p: 1}\nb: &b {k: b, q: 2}\nm:\n  <<: [*a, *b]\n")
    assert doc["m"] == {"k": "a", "p": 1, "q": 2}


def test_quoted_merge_key_is_an_ordinary_key() -> None:
    (doc,) = load_documents(b"m:\n  '<<': {a: 1}\n")
    assert doc == {"m": {"<<": {"a": 1}}}


def test_merge_of_a_scalar_is_an_error() -> None:
    with pytest.raises(DocumentError, match="map merge requires map") as info:
        load_documents(b"a: 1\n---\nm:\n  <<: 5\n")
    assert info.value.document == 2


def test_unknown_anchor_is_an_error_naming_document_and_line() -> None:
    with pytest.raises(DocumentError, match="unknown anchor 'nope'") as info:
        load_documents(b"a: 1\n---\nb: 2\nc: *nope\n")
    assert (info.value.document, info.value.line) == (2, 4)


def test_alias_inside_its_own_anchor_is_an_error() -> None:
    with pytest.raises(DocumentError, match="anchor 'x' value contains itself"):
        load_documents(b"a: &x\n  b: *x\n")


def test_anchors_do_not_leak_across_documents() -> None:
    with pytest.raises(DocumentError, match="unknown anchor") as info:
        load_documents(b"a: &x 1\n---\nb: *x\n")
    assert info.value.document == 2


def test_collection_as_mapping_key_is_an_error() -> None:
    with pytest.raises(DocumentError, match="mapping keys must be scalars"):
        load_documents(b"? [a, b]\n: 1\n")


# --- errors ---------------------------------------------------------------------------------


def test_syntax_error_names_document_and_line() -> None:
    with pytest.raises(DocumentError) as info:
        load_documents(b"a: 1\n---\nb: 2\nc: [unclosed\nd: 3\n")
    assert info.value.document == 2
    assert info.value.line is not None and info.value.line >= 4
    assert "\n" not in str(info.value)


def test_tab_indentation_is_an_error() -> None:
    with pytest.raises(DocumentError, match="cannot start any token") as info:
        load_documents(b"kind: A\nmetadata:\n\tname: a\n")
    assert (info.value.document, info.value.line) == (1, 3)


@pytest.mark.parametrize(("data", "reason", "line"), [
    (b"kind: A\nmetadata:\n  name: \xff\xfe\n", "invalid leading UTF-8 octet", 3),
    (b"kind: A\nname: a\x01\n", "control characters are not allowed", 2),
])
def test_unreadable_bytes_are_a_document_error_not_a_crash(data: bytes, reason: str, line: int) -> None:
    with pytest.raises(DocumentError, match=reason) as info:
        load_documents(data)
    assert (info.value.document, info.value.line) == (1, line)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("data", [b'{"a": 1', b'{"a": 1}{"b": 2} trailing', b'{"a": ['])
def test_invalid_json_is_a_document_error(data: bytes) -> None:
    with pytest.raises(DocumentError, match="invalid JSON"):
        load_documents(data)


# --- size and depth -------------------------------------------------------------------------


def test_nesting_up_to_the_limit_decodes_without_recursion() -> None:
    depth = MAX_DEPTH
    for data in (b"[" * depth + b"]" * depth, b"x: " + b"[" * (depth - 1) + b"]" * (depth - 1)):
        (doc,) = load_documents(data)
        for _ in range(depth - 1):
            assert isinstance(doc, list | dict) and len(doc) == 1
            doc = doc[0] if isinstance(doc, list) else doc["x"]
        assert doc == []


@pytest.mark.parametrize("data", [
    b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),  # YAML flow
    b"a:\n" + b"".join(b"  " * i + b"- \n" for i in range(MAX_DEPTH)),  # YAML block
    b' {"a":' + b"[" * 1100 + b"]" * 1100 + b"}",  # JSON, deeper than orjson decodes
    b'{"a":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}",  # JSON that orjson decodes
    b'{}\n{"a":' + b"[" * 1100 + b"]" * 1100 + b"}",  # several JSON values: Python's decoder would recurse
])
def test_nesting_deeper_than_the_limit_is_one_error(data: bytes) -> None:
    with pytest.raises(DocumentError, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_documents(data)


def test_large_crd_matches_pyyaml() -> None:
    """A CRD-sized document (thousands of properties) decodes to what PyYAML's C loader gives."""
    properties = {
        f"field{i}": {"type": "string", "description": f"Field {i} of a large schema: see docs.", "maxLength": i}
        for i in range(6000)
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "bigs.example.com", "annotations": {"a": "true"}},
        "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"properties": properties}}}]},
    }
    text = yaml.dump(crd, Dumper=yaml.CSafeDumper, default_flow_style=False)
    assert len(text) > 500_000
    (doc,) = load_documents(text.encode())
    assert doc == yaml.load(text, Loader=yaml.CSafeLoader)
    assert orjson.loads(orjson.dumps(doc)) == crd
