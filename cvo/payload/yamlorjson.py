"""A file's documents as apimachinery's ``YAMLOrJSONDecoder`` finds them, driven like library-go's ``ParseManifests``.

``k8s.io/apimachinery/pkg/util/yaml/decoder.go`` (with ``stream_reader.go``), as the CVO vendors it:

* the stream is JSON when its first 1,024 bytes, after Unicode white space, start with ``{``
  (``GuessJSONStream``); anything else, a UTF-8 byte-order mark included, is YAML;
* JSON values are read one after another (``json.Decoder``); a value counts once the caller has
  accepted it (library-go's ``Manifest.UnmarshalJSON``: an object with ``kind`` and a name, or ``null``);
* when reading or accepting a JSON value fails after at most one accepted value, the decoder goes back
  to the end of the last accepted value, skips white space up to and including the first newline
  (``consumeWhitespace``: it gives up, keeping the JSON error, when fewer than 4 bytes are left or on a
  byte that is not UTF-8) and reads the rest as YAML.  If the first YAML document fails too, the JSON
  error is the one reported; an error in a later YAML document is reported as such;
* after two or more accepted JSON values a failure is an error, with no YAML fallback.

YAML goes through :mod:`cvo.payload.yamlparse` (go-yaml v2's results) with two details of the
``YAMLReader`` that splits it for go-yaml: every line ends with a newline, the last one included (a
block scalar at the end of a file without one keeps a ``\\n``), and the first document after JSON ends
at the first ``---`` line, which must hold nothing but a comment.

A JSON document keeps its own bytes, as library-go's ``Manifest.Raw`` does; a YAML document's bytes
are its value in Go's JSON (:mod:`cvo.payload.gojson`), computed by the caller.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

from cvo.payload import limits
from cvo.payload.yamlparse import BOM, DocumentError, LimitExceeded, load_yaml_stream, too_many_documents

__all__ = ["Accept", "Decoded", "Rejected", "decode"]

# (value, the JSON document's own bytes or None for a YAML document, whether a YAML document holds a float)
Decoded = tuple[Any, bytes | None, bool]
# Why a decoded document would fail library-go's Manifest.UnmarshalJSON, or None if it would not.
Accept = Callable[[Any], str | None]

# How far GuessJSONStream looks (ParseManifests passes 1024).
GUESS_BYTES = 1024
_JSON_SPACE = " \t\r\n"
# Go's unicode.IsSpace: Latin-1 spaces and the White_Space property.
GO_SPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                     "\u200a\u2028\u2029\u202f\u205f\u3000")
_GO_SPACE_CHARS = "".join(sorted(GO_SPACE))


class Rejected(DocumentError):
    """A document that decodes but that the caller does not accept; the message is the caller's."""


def _rune(data: bytes, i: int) -> tuple[str | None, int]:
    """Go's ``utf8.DecodeRune(data[i:i+4])``: the character and its size, ``None`` for ``RuneError``."""
    lead = data[i]
    if lead < 0x80:
        return chr(lead), 1
    size = 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 0
    try:
        char = data[i:i + size].decode("utf-8") if size else ""
    except UnicodeDecodeError:
        char = ""
    if len(char) != 1 or char == "\ufffd":  # Go returns RuneError for U+FFFD itself too
        return None, 1
    return char, size


def looks_like_json(data: bytes) -> bool:
    """``GuessJSONStream``: the first 1,024 bytes, after Unicode white space, start with ``{``."""
    head = data[:GUESS_BYTES]
    i = 0
    while i < len(head):
        char, size = _rune(head, i)
        if char is None or char not in GO_SPACE:
            return char == "{"
        i += size
    return False


def yaml_start(data: bytes, pos: int) -> int | None:
    """``consumeWhitespace`` from ``pos``: where the YAML decoder starts, or ``None`` if it is not started."""
    i = pos
    while True:
        if len(data) - i < 4:  # ReadN(4) reached the end of the stream
            return None
        char, size = _rune(data, i)
        if char is None:  # "invalid utf8 rune"
            return None
        if char not in GO_SPACE:
            return i
        if char == "\n":
            return i + 1
        i += size


def first_yaml_document(data: bytes, start: int) -> tuple[int, int, int] | None:
    """Go's ``YAMLReader.Read`` once: (start, end) of the first document's lines and where the next begins.

    ``None`` when only separators are left.  A ``---`` line with more than a comment after it is an error.
    """
    pos, first, end = start, -1, -1
    while pos < len(data):
        newline = data.find(b"\n", pos)
        line_end = len(data) if newline < 0 else newline + 1
        if data.startswith(b"---", pos):
            rest = data[pos + 3:line_end].decode("utf-8", "replace").strip(_GO_SPACE_CHARS)
            if rest and not rest.startswith("#"):
                raise DocumentError(f"invalid Yaml document separator: {limits.printable(rest, 80)}")
            if first >= 0:
                return first, end, line_end
        else:
            if first < 0:
                first = pos
            end = line_end
        pos = line_end
    return (first, end, len(data)) if first >= 0 else None


def _with_final_newline(data: bytes) -> bytes:
    """The YAMLReader ends every line with a newline, the last one included."""
    return data if not data or data.endswith(b"\n") else data + b"\n"


def _yaml(data: bytes, start: int, documents_before: int) -> list[Decoded]:
    """The YAML documents of ``data[start:]``, errors numbered and placed in the whole stream."""
    floats: list[bool] = []
    try:
        values = load_yaml_stream(_with_final_newline(data[start:] if start else data), floats)
        return list(zip(values, [None] * len(values), floats, strict=True))
    except DocumentError as err:
        if err.document is not None:
            err.document += documents_before
        if err.line is not None:
            err.line += data.count(b"\n", 0, start)
        raise


def _too_deep(value: Any, limit: int) -> bool:
    """Whether a decoded JSON value nests more than ``limit`` mappings and sequences."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _check_depth(value: Any, brackets: int, number: int) -> None:
    """cvo's nesting limit; ``brackets`` (how many ``[`` and ``{`` the text has) bounds the depth cheaply."""
    limit = limits.MAX_DEPTH
    if brackets > limit and isinstance(value, dict | list) and _too_deep(value, limit):
        raise LimitExceeded(f"nested deeper than {limit} levels (cvo's limit; see docs/loading.md)", number)


def _json_then_yaml(data: bytes, accept: Accept | None) -> list[Decoded]:
    try:
        value = orjson.loads(data)  # the usual case: one JSON value and nothing else
    except orjson.JSONDecodeError:
        pass
    else:
        _check_depth(value, data.count(b"[") + data.count(b"{"), 1)
        if accept is None or accept(value) is None:
            return [(value, data.strip(_JSON_SPACE.encode()), False)]
    text = data.decode("utf-8")  # a file that is not UTF-8 is refused as such (docs/loading.md)
    decoder = json.JSONDecoder()
    documents: list[Decoded] = []
    pos = 0  # the end of the last accepted value: where a YAML fallback starts
    while True:
        start = pos
        while start < len(text) and text[start] in _JSON_SPACE:
            start += 1
        if start == len(text):
            return documents
        if len(documents) >= limits.MAX_DOCUMENTS_PER_FILE:
            raise too_many_documents()
        number = len(documents) + 1
        try:
            _, end = decoder.raw_decode(text, start)  # only to find where the value ends
            chunk = text[start:end]
            value = orjson.loads(chunk)  # orjson's rules for every value (no NaN, ...), as for a single one
        except json.JSONDecodeError as err:
            problem: DocumentError = DocumentError(f"invalid JSON: {err.msg}", number, err.lineno)
        except orjson.JSONDecodeError as err:
            problem = DocumentError(f"invalid JSON: {err.msg}", number, text.count("\n", 0, start) + err.lineno)
        except RecursionError:
            raise LimitExceeded(f"nested deeper than {limits.MAX_DEPTH} levels (cvo's limit; see docs/loading.md)",
                                number) from None
        else:
            _check_depth(value, chunk.count("[") + chunk.count("{"), number)
            reason = accept(value) if accept is not None else None
            if reason is None:
                documents.append((value, chunk.encode(), False))
                pos = end
                continue
            problem = Rejected(reason, number, text.count("\n", 0, start) + 1)
        if len(documents) > 1:  # an unambiguous JSON stream: no YAML fallback
            raise problem
        return documents + _yaml_after_json(data, len(text[:pos].encode()), len(documents), accept, problem)


def _yaml_after_json(data: bytes, pos: int, count: int, accept: Accept | None,
                     problem: DocumentError) -> list[Decoded]:
    """The rest of the stream as YAML, after the JSON error ``problem`` at ``pos`` with ``count`` JSON documents."""
    start = yaml_start(data, pos)
    if start is None:
        raise problem
    try:
        first = first_yaml_document(data, start)
    except DocumentError:
        raise problem from None
    if first is None:  # nothing but separators: the stream ends there
        return []
    begin, end, rest = first
    try:
        documents = _yaml(data[:end], begin, count)
    except LimitExceeded:
        raise
    except DocumentError:
        raise problem from None
    if documents and accept is not None and accept(documents[0][0]) is not None:
        raise problem
    return documents + (_yaml(data, rest, count + len(documents)) if rest < len(data) else [])


def decode(data: bytes, accept: Accept | None = None) -> list[Decoded]:
    """Every document of a YAML or JSON stream (``None`` for empty and ``null`` ones), with JSON documents' bytes.

    ``accept`` says why a document would fail library-go's ``Manifest.UnmarshalJSON``; such a failure
    counts as a decoding failure for the JSON-or-YAML rule.  Raises :class:`DocumentError` (``Rejected``
    for a document ``accept`` refuses where the decoder reports it) and ``UnicodeDecodeError`` for a
    JSON stream that is not UTF-8.
    """
    if data.startswith(BOM):  # not white space to GuessJSONStream: YAML, and go-yaml skips the mark
        return _yaml(data, len(BOM), 0)
    if looks_like_json(data):
        return _json_then_yaml(data, accept)
    return _yaml(data, 0, 0)


def load_documents(data: bytes) -> list[Any]:
    """Every document of a YAML or JSON stream, ``None`` for empty and ``null`` documents.

    JSON followed by YAML is read as apimachinery's ``YAMLOrJSONDecoder`` reads it (:func:`decode`).
    """
    return [value for value, _, _ in decode(data)]
