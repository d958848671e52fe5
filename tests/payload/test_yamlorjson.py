"""JSON followed by YAML, read as apimachinery's ``YAMLOrJSONDecoder`` reads it for library-go's ``ParseManifests``.

Upstream: ``k8s.io/apimachinery/pkg/util/yaml/decoder.go`` (``YAMLOrJSONDecoder.Decode``,
``consumeWhitespace``, ``YAMLReader``, ``LineReader``, ``GuessJSONStream``) with ``stream_reader.go``,
and ``openshift/library-go`` ``pkg/manifest/manifest.go`` (``ParseManifests``, ``Manifest.UnmarshalJSON``).
Every expected outcome below, documents and ``Raw`` bytes or which error, is what that code (apimachinery
v0.37.2, library-go's ``ParseManifests`` and ``UnmarshalJSON`` transcribed over client-go's scheme)
returned for the same bytes; cvo words its errors its own way (docs/loading.md).
"""

from __future__ import annotations

import pytest

from cvo.payload.manifest import ManifestError, parse_headers
from cvo.payload.yamlorjson import first_yaml_document, load_documents, looks_like_json, yaml_start
from cvo.payload.yamlparse import DocumentError

M = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}'
M2 = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}'
Y = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: '<&>'\n"
Y_RAW = b'{"apiVersion":"v1","data":{"k":"\\u003c\\u0026\\u003e"},"kind":"ConfigMap","metadata":{"name":"b"}}'
M_AS_YAML = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}'


def raws(data: bytes) -> list[bytes]:
    return [h[6] for h in parse_headers(data, "f.yaml")]


def error(data: bytes) -> str:
    with pytest.raises(ManifestError) as info:
        parse_headers(data, "f.yaml")
    return str(info.value)


@pytest.mark.parametrize(("data", "expected"), [
    pytest.param(M + b"\n---\n" + Y, [M, Y_RAW], id="json-separator-yaml"),
    pytest.param(M + b"\n" + Y, [M, Y_RAW], id="json-then-yaml-without-separator"),
    pytest.param(M + b" " + Y, [M, Y_RAW], id="yaml-on-the-json-line"),
    pytest.param(M + b"\n---\n" + M2, [M, M2], id="json-then-json-as-yaml"),
    pytest.param(M + b"\n  \n---\n" + Y, [M, Y_RAW], id="blank-lines-before-the-separator"),
    pytest.param(M + b"\n---\n", [M], id="only-a-separator-after-json"),
    pytest.param(M + b"\n---", [M], id="four-bytes-after-json"),
])
def test_json_then_yaml_loads_every_document(data: bytes, expected: list[bytes]) -> None:
    """decoder.go: after one JSON object the stream is still ambiguous; a JSON failure rewinds and reads YAML."""
    assert raws(data) == expected


def test_json_followed_by_yaml_was_rejected_before() -> None:
    """The report of issue 10: a ``.yaml`` file whose first document is JSON, then ``---`` and YAML."""
    (json_doc, yaml_doc) = load_documents(M + b"\n---\n" + Y)
    assert json_doc["metadata"]["name"] == "a"
    assert yaml_doc["data"] == {"k": "<&>"}


@pytest.mark.parametrize(("data", "expected"), [
    pytest.param(M + b"\n" + M2 + b"\n---\n" + Y,
                 "f.yaml (document 3): invalid YAML/JSON, line 3: invalid JSON: ", id="two-objects-then-yaml"),
    pytest.param(M + b"\nnull\n---\n" + Y,
                 "f.yaml (document 3): invalid YAML/JSON, line 3: invalid JSON: ", id="null-counts-as-an-object"),
    pytest.param(M + M2 + b"x", "f.yaml (document 3): invalid YAML/JSON, line 1: invalid JSON: ", id="garbage"),
])
def test_after_two_json_objects_a_failure_is_an_error(data: bytes, expected: str) -> None:
    """decoder.go: ``if d.count > 1`` the JSON error is returned, with no YAML fallback."""
    assert error(data).startswith(expected)


@pytest.mark.parametrize("data", [
    pytest.param(b"{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n", id="flow-mapping"),
    pytest.param(b"\x0c" + M, id="form-feed-first"),
    pytest.param("\u00a0".encode() + M, id="no-break-space-first"),
    pytest.param(b"\xef\xbb\xbf" + M, id="byte-order-mark"),
])
def test_a_stream_read_as_yaml_keeps_go_json_bytes(data: bytes) -> None:
    """GuessJSONStream says JSON (Unicode white space skipped) but json.Decoder fails: the whole stream is YAML.

    A byte-order mark is not white space: that stream is YAML from the start.  Either way the document's
    ``Raw`` is its value in Go's JSON, not the file's bytes.
    """
    assert raws(data) == [M_AS_YAML]


@pytest.mark.parametrize(("data", "expected"), [
    pytest.param(b'{"apiVersion": "v1", "kind": [}\n',
                 "f.yaml (document 1): invalid YAML/JSON, line 1: invalid JSON: ", id="both-fail"),
    pytest.param(b'{"apiVersion": "v1", "kind":', "f.yaml (document 1): invalid YAML/JSON, line 1: invalid JSON: ",
                 id="truncated"),
    pytest.param(M + b"\n---\nkind: [\n", "f.yaml (document 2): invalid YAML/JSON, line 2: invalid JSON: ",
                 id="first-yaml-document-invalid"),
    pytest.param(M + b"\n---\nfoo: bar\n", "f.yaml (document 2): invalid YAML/JSON, line 2: invalid JSON: ",
                 id="first-yaml-document-not-a-manifest"),
    pytest.param(M + b"\n--- x\n" + Y, "f.yaml (document 2): invalid YAML/JSON, line 2: invalid JSON: ",
                 id="separator-with-content"),
    pytest.param(M + b" trailing", "f.yaml (document 2): invalid YAML/JSON, line 1: invalid JSON: ",
                 id="a-word-is-not-a-manifest"),
    pytest.param(M + b"\n--", "f.yaml (document 2): invalid YAML/JSON, line 2: invalid JSON: ",
                 id="fewer-than-4-bytes-left"),
    pytest.param(M + "\ufffd\n".encode() + Y, "f.yaml (document 2): invalid YAML/JSON, line 1: invalid JSON: ",
                 id="replacement-character"),
    pytest.param(M + b'\n{"a":', "f.yaml (document 2): invalid YAML/JSON, line 2: invalid JSON: ",
                 id="truncated-second-object"),
    pytest.param(b'{"apiVersion": "v1"}\n---\n' + Y,
                 "f.yaml (document 1): must contain kubernetes required fields kind and name", id="json-not-a-manifest"),
])
def test_when_both_fail_the_json_error_is_reported(data: bytes, expected: str) -> None:
    """decoder.go: the JSON error is ``firstErr``; a failure of the first YAML document returns it.

    That includes the YAML document decoding but failing ``Manifest.UnmarshalJSON`` (library-go), and
    ``consumeWhitespace`` giving up (fewer than 4 bytes left, a U+FFFD), which leaves no YAML decoder.
    """
    assert error(data).startswith(expected)


def test_an_error_in_a_later_yaml_document_is_the_yaml_error() -> None:
    """decoder.go: once the first YAML document decoded, ``firstErr`` is empty in later calls."""
    message = error(M + b"\n---\n" + Y + b"---\nkind: [\n")
    assert message == "f.yaml (document 3): invalid YAML/JSON, line 11: did not find expected node content"


@pytest.mark.parametrize(("data", "value"), [
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |+\n    text", "text\n"),
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |\n    text", "text\n"),
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |-\n    text", "text"),
])
def test_the_last_line_ends_with_a_newline(data: bytes, value: str) -> None:
    """decoder.go ``LineReader.Read`` appends ``\\n`` to every line: a block scalar at the end of a file keeps one.

    The corpus's ``0000_50_insights-operator_10-insights-runtime-extractor-proxy-configmap.yaml`` ends so.
    """
    (doc,) = load_documents(data)
    assert doc["data"]["k"] == value


def test_generic_documents_follow_the_same_rule() -> None:
    """Without library-go's check any value counts: a JSON object then a YAML word are two documents."""
    assert load_documents(b'{"a": 1} trailing') == [{"a": 1}, "trailing"]
    assert load_documents(b'{"a": 1}\n{"b": }') == [{"a": 1}, {"b": None}]
    with pytest.raises(DocumentError, match="invalid JSON"):
        load_documents(b'{"a": 1}{"b": 2}\n---\nc: 3\n')


@pytest.mark.parametrize(("data", "expected"), [
    (b"{", True), (b" \t\r\n\v\f{", True), ("\u0085\u00a0\u2028\u3000{".encode(), True),
    (b"\x1c{", False),  # Python's str.isspace() says yes, Go's unicode.IsSpace no
    (b"\xef\xbb\xbf{", False), (b"[{}]", False), (b"", False), (b" " * 1023 + b"{", True), (b" " * 1024 + b"{", False),
    (b" " * 1022 + "\u00a0".encode() + b"{", False),  # the space cut at byte 1024 is not a space
])
def test_guess_json_stream(data: bytes, expected: bool) -> None:
    """decoder.go ``GuessJSONStream(r, 1024)``: ``bytes.TrimLeftFunc(buf, unicode.IsSpace)`` starts with ``{``."""
    assert looks_like_json(data) is expected


@pytest.mark.parametrize(("data", "expected"), [
    (b"}  x: 1", 3), (b"} \n x: 1", 3), (b"}\n\nx: 1", 2), (b"}\nx", None), (b"} \xffx: 1", None),
    ("} \ufffdx: 1".encode(), None), ("}\u00a0x: 1".encode(), 3),
])
def test_consume_whitespace(data: bytes, expected: int | None) -> None:
    """decoder.go ``consumeWhitespace`` from after ``}``: up to and including the first newline; ``ReadN(4)``."""
    assert yaml_start(data, 1) == expected


def test_first_yaml_document() -> None:
    """decoder.go ``YAMLReader.Read``: leading separators skipped; comments allowed after ``---``; nothing else."""
    data = b"---\n---  # c\na: 1\n---\nb: 2\n"
    assert first_yaml_document(data, 0) == (13, 18, 22)  # "a: 1\n", then "b: 2\n"
    assert first_yaml_document(b"---\n---\n", 0) is None
    with pytest.raises(DocumentError, match="invalid Yaml document separator: x"):
        first_yaml_document(b"a: 1\n--- x\n", 0)
