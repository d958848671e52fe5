"""YAML documents decoded the way the CVO's Go loader decodes them.

The CVO reads manifests with ``k8s.io/apimachinery``'s ``YAMLOrJSONDecoder`` (JSON first, then YAML:
:mod:`cvo.payload.yamlorjson`), and every YAML document is turned into JSON by ``sigs.k8s.io/yaml``
on top of ``go-yaml`` v2.  This module reproduces go-yaml's values:

* go-yaml v2 scalar resolution (YAML 1.1 booleans including ``y``/``n``, ``0x``/``0o``/``0b`` and
  leading-zero octal integers, underscores in numbers, floats such as ``1e3``); timestamps stay
  strings, as go-yaml v2 keeps them when decoding into ``interface{}``; the YAML ``=`` value is the
  string ``"="`` (PyYAML's safe loader rejects it);
* duplicate mapping keys: the last one wins, as in go-yaml v2;
* merge keys (``<<``) with go-yaml v2's precedence: keys are set in document order, so a merge
  overrides the keys before it and is overridden by the keys after it, and in ``<<: [*a, *b]``
  ``*a`` wins over ``*b``; anchors and aliases (an alias inside its own anchor is an error);
* a UTF-8 byte-order mark is ignored;
* non-string keys become strings the way ``sigs.k8s.io/yaml`` writes them.

It is also fast: PyYAML's C parser produces the events and a small iterative builder constructs
the values, skipping PyYAML's Python resolver and constructor, which cost more than the parsing.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

from yaml import MarkedYAMLError, YAMLError
from yaml._yaml import CParser  # the libyaml-backed parser; required (checked at import)
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from cvo.payload import limits

__all__ = ["DocumentError", "LimitExceeded", "load_yaml_stream"]

BOM = b"\xef\xbb\xbf"

_BOOL = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
_NULL = frozenset(("", "~", "null", "Null", "NULL"))
_SPECIAL_FLOAT = {
    ".inf": math.inf, ".Inf": math.inf, ".INF": math.inf,
    "+.inf": math.inf, "+.Inf": math.inf, "+.INF": math.inf,
    "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf,
    ".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan,
}
_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$", re.ASCII)
_GO_INT = re.compile(
    r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$", re.ASCII
)
_MERGE = object()
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1

_TAG_PREFIX = "tag:yaml.org,2002:"


class DocumentError(ValueError):
    """A stream that cannot be decoded; ``document`` is the 1-based document number when known."""

    def __init__(self, message: str, document: int | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.document = document
        self.line = line


class LimitExceeded(DocumentError):
    """Well-formed input over one of cvo's limits (:mod:`cvo.payload.limits`)."""


def _go_parse_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)`` then ``ParseUint``, as go-yaml v2 tries them."""
    if not _GO_INT.match(text):
        return None
    sign = -1 if text[0] == "-" else 1
    body = text[1:] if text[0] in "+-" else text
    if len(body) > 1 and body[0] == "0":
        prefix = body[1]
        if prefix in "xX":
            value = int(body[2:], 16)
        elif prefix in "oO":
            value = int(body[2:], 8)
        elif prefix in "bB":
            value = int(body[2:], 2)
        else:
            value = int(body[1:], 8)
    else:
        value = int(body, 10)
    value *= sign
    if _INT64_MIN <= value <= _UINT64_MAX:
        return value
    return None


def resolve_plain(text: str) -> Any:
    """The value go-yaml v2 gives a plain (unquoted, untagged) scalar."""
    if not text:
        return None
    first = text[0]
    if first in "yYnNtTfFoO~":
        if text in _BOOL:
            return _BOOL[text]
        if text in _NULL:
            return None
        return text
    if first == "<" and text == "<<":
        return _MERGE
    if first == ".":
        special = _SPECIAL_FLOAT.get(text)
        if special is not None:
            return special
        if _YAML_STYLE_FLOAT.match(text):
            return _float(text)
        return text
    if first in "0123456789+-":
        special = _SPECIAL_FLOAT.get(text)
        if special is not None:
            return special
        plain = text.replace("_", "") if "_" in text else text
        as_int = _go_parse_int(plain)
        if as_int is not None:
            return as_int
        if _YAML_STYLE_FLOAT.match(plain):
            return _float(plain)
        return text
    return text


def _float(text: str) -> float | int:
    value = float(text)
    # sigs.k8s.io/yaml writes integral floats as JSON integers (1e3 -> 1000), so the API server and
    # every Go client see an integer; keep that, so the JSON we send is the JSON the CVO would send.
    # Negative zero stays a float: Go writes it as -0.
    if value.is_integer() and abs(value) < 2**63 and (value or math.copysign(1.0, value) > 0):
        return int(value)
    return value


def _tagged(tag: str, text: str, plain: bool) -> Any:
    short = tag[len(_TAG_PREFIX):] if tag.startswith(_TAG_PREFIX) else tag
    if short in ("str", "!str", "binary", "!binary", "timestamp"):
        return text
    if short in ("int", "float", "bool", "null", "!int", "!float", "!bool", "!null"):
        value = resolve_plain(text)
        return value if value is not _MERGE else text
    # Unknown local tags decode as their plain or quoted content, as go-yaml v2 does for interface{}.
    return resolve_plain(text) if plain else text


def _float32_g(value: float) -> str:
    """``strconv.FormatFloat(value, 'g', -1, 32)``, with sigs.k8s.io/yaml's names for NaN and the infinities."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:  # beyond float32: Go's conversion gives an infinity
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1.0, single) < 0 else "0"
    sign, size = ("-" if single < 0 else ""), abs(single)
    for precision in range(9):  # the shortest digits that read back as the same float32
        text = f"{size:.{precision}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == size:
            break
    mantissa, _, exponent_text = text.partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    exponent = int(exponent_text)
    if exponent < -4 or exponent >= 6:  # %e: the shortest digits, two exponent digits at least
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    point = exponent + 1
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _float_key(text: str) -> str | None:
    """sigs.k8s.io/yaml's string for a plain key that go-yaml v2 resolves to a float, else ``None``."""
    special = _SPECIAL_FLOAT.get(text)
    if special is not None:
        return _float32_g(special)
    plain = text.replace("_", "") if "_" in text else text
    if _go_parse_int(plain) is None and _YAML_STYLE_FLOAT.match(plain):
        return _float32_g(float(plain))
    return None


def _key_string(key: Any) -> str:
    """``sigs.k8s.io/yaml`` turns int, float and bool keys into strings and refuses the others."""
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if isinstance(key, float):
        return _float32_g(key)
    if isinstance(key, int) and key <= _INT64_MAX:
        return str(key)
    what = "null" if key is None else f"{key} (a uint64)" if isinstance(key, int) else repr(key)
    raise DocumentError(f"mapping key {what} cannot be converted to JSON (sigs.k8s.io/yaml: unsupported map key)")


def _merge_into(target: dict[str, Any], source: Any) -> None:
    """go-yaml v2's ``merge``: the merged keys are set now, over any key set before the ``<<``.

    In a sequence the earlier mappings take precedence, so they are applied last.
    """
    sources = reversed(source) if isinstance(source, list) else (source,)
    for item in sources:
        if not isinstance(item, dict):
            raise DocumentError("map merge requires map or sequence of maps as the value")
        target.update(item)


class _Budget:
    """What one file's aliases have used: go-yaml v2 counts per document, the byte budget per file."""

    __slots__ = ("alias_bytes", "aliased", "checked", "decoded", "floats", "sizes")

    def __init__(self) -> None:
        self.alias_bytes = 0
        self.new_document()

    def new_document(self) -> None:
        self.floats = False  # whether the document holds a float (Go writes floats its own way: gojson.py)
        self.decoded = 1  # go-yaml counts the document node too
        self.aliased = 0
        self.checked = 1  # ``decoded`` when the ratio was last checked
        self.sizes: dict[int, tuple[int, int]] = {}  # id(container) -> (JSON bytes, height), this document

    def plain_nodes(self, decoded: int, line: int | None) -> None:
        """Decodes up to ``decoded`` without an alias: go-yaml v2's test as if made at each of them.

        Only ``decoded`` grew, so ``aliased/decoded`` minus the allowed ratio is convex in ``decoded``
        below 4,000,000 and falling above it: its maximum over the stretch is at an end or at 4,000,000.
        """
        before, self.decoded = self.checked, decoded
        self.checked = decoded
        if self.aliased > limits.ALIAS_MIN_ALIASED:
            points = [decoded]
            if before < limits.ALIAS_RATIO_RANGE_HIGH < decoded:
                points.append(limits.ALIAS_RATIO_RANGE_HIGH)
            if any(limits.excessive_aliasing(self.aliased, d) for d in points):
                raise LimitExceeded("document contains excessive aliasing (go-yaml v2's limit)", line=line)

    def alias(self, expanded: int, line: int | None) -> None:
        """One alias node and the ``expanded`` nodes of its value, all counted as aliased but the alias.

        Both counters grow together, so the ratio only rises: the test at the last node is enough.
        """
        self.decoded += 1 + expanded
        self.aliased += expanded
        self.checked = self.decoded
        if limits.excessive_aliasing(self.aliased, self.decoded):
            raise LimitExceeded("document contains excessive aliasing (go-yaml v2's limit)", line=line)


def _json_size(value: Any, sizes: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(about how many JSON bytes ``value`` becomes, its nesting height); shared containers counted once."""
    if isinstance(value, str):
        return len(value) + 2, 0
    if not isinstance(value, dict | list):
        return 8, 0
    known = sizes.get(id(value))
    if known is not None:
        return known
    total, height = 2, 0
    if isinstance(value, dict):
        for key, item in value.items():
            size, h = _json_size(item, sizes)
            total += len(key) + 4 + size
            height = max(height, h)
    else:
        for item in value:
            size, h = _json_size(item, sizes)
            total += size + 1
            height = max(height, h)
    sizes[id(value)] = result = (total, height + 1)
    return result


def _build(get_event: Any, first: Any, anchors: dict[str, Any], budget: _Budget) -> Any:
    """Construct one node starting at event ``first``, consuming events iteratively.

    Aliases share the anchored value (nothing is copied), and are charged the way go-yaml v2 charges
    them: each node of the anchored value counts again, as a decode and as an aliased decode.
    """
    # Each frame: [container, pending_key, is_mapping, anchor, decodes before it started]
    stack: list[list[Any]] = []
    nodes: dict[str, int] = {}  # anchor -> nodes in its value (aliases inside it expanded)
    decoded = budget.decoded
    max_depth = limits.MAX_DEPTH
    event = first
    while True:
        etype = type(event)
        if etype is ScalarEvent:
            decoded += 1
            style = event.style
            if event.tag is not None:
                value = event.value if event.tag == "!" else _tagged(event.tag, event.value, not style)
                if type(value) is float:
                    budget.floats = True
            elif style is None or style == "":
                value = resolve_plain(event.value)
                if type(value) in _NUMBERS:
                    if stack and stack[-1][2] and stack[-1][1] is _NO_KEY:
                        value = _float_key(event.value) or value  # a float key is written as a float32
                    elif type(value) is float:
                        budget.floats = True
            else:
                value = event.value
            if value is _MERGE:
                # ``<<`` merges only as a mapping key; anywhere else it is the string "<<".
                if event.anchor is not None:
                    anchors[event.anchor] = "<<"
                    nodes[event.anchor] = 1
                if not (stack and stack[-1][2] and stack[-1][1] is _NO_KEY):
                    value = "<<"
                else:
                    decoded -= 1  # go-yaml v2 does not decode a merge key
            elif event.anchor is not None:
                anchors[event.anchor] = value
                nodes[event.anchor] = 1
        elif etype is MappingStartEvent or etype is SequenceStartEvent:
            decoded += 1
            if len(stack) >= max_depth:
                raise LimitExceeded(f"nested deeper than {max_depth} levels (cvo's limit; see docs/loading.md)",
                                    line=_line(event))
            frame = [{} if etype is MappingStartEvent else [], _NO_KEY, etype is MappingStartEvent, event.anchor,
                     decoded - 1]
            if event.anchor is not None:
                anchors[event.anchor] = frame[0]
            stack.append(frame)
            event = get_event()
            continue
        elif etype is MappingEndEvent or etype is SequenceEndEvent:
            frame = stack.pop()
            value = frame[0]
            if frame[3] is not None and anchors.get(frame[3]) is value:
                nodes[frame[3]] = decoded - frame[4]
        elif etype is AliasEvent:
            try:
                value = anchors[event.anchor]
            except KeyError:
                raise DocumentError(f"unknown anchor '{event.anchor}' referenced", line=_line(event)) from None
            if isinstance(value, dict | list) and any(f[0] is value for f in stack):
                # go-yaml v2 refuses this too; the value would contain itself and never become JSON.
                raise DocumentError(f"anchor '{event.anchor}' value contains itself", line=_line(event))
            budget.plain_nodes(decoded, _line(event))
            budget.alias(nodes[event.anchor], _line(event))
            decoded = budget.decoded
            size, height = _json_size(value, budget.sizes)
            budget.alias_bytes += size
            if budget.alias_bytes > limits.MAX_ALIAS_EXPANSION_BYTES:
                raise LimitExceeded(
                    f"aliases repeat more than {limits.size_text(limits.MAX_ALIAS_EXPANSION_BYTES)} of JSON in this "
                    "file (cvo's limit; see docs/loading.md)", line=_line(event))
            if len(stack) + height > max_depth:
                raise LimitExceeded(f"nested deeper than {max_depth} levels through alias '{event.anchor}' "
                                    "(cvo's limit; see docs/loading.md)", line=_line(event))
        else:  # pragma: no cover - libyaml guarantees well-formed event streams
            raise DocumentError(f"unexpected YAML event {etype.__name__}")

        if not stack:
            budget.plain_nodes(decoded, _line(event))
            return value
        frame = stack[-1]
        if frame[2]:
            key = frame[1]
            if key is _NO_KEY:
                if isinstance(value, dict | list):
                    raise DocumentError(
                        "mapping keys must be scalars to convert the document to JSON", line=_line(event)
                    )
                frame[1] = value
            else:
                frame[1] = _NO_KEY
                if key is _MERGE:
                    try:
                        _merge_into(frame[0], value)
                    except DocumentError as err:
                        err.line = _line(event)
                        raise
                else:
                    if type(key) is not str:
                        try:
                            key = _key_string(key)
                        except DocumentError as err:
                            err.line = _line(event)
                            raise
                    frame[0][key] = value  # duplicate keys: the last one wins, as in go-yaml v2
        else:
            frame[0].append(value)
        event = get_event()


_NO_KEY = object()
_NUMBERS = (int, float)


def _line(event: Any) -> int | None:
    mark = getattr(event, "start_mark", None)
    return mark.line + 1 if mark is not None else None


def too_many_documents() -> DocumentError:
    n = limits.MAX_DOCUMENTS_PER_FILE
    return LimitExceeded(f"more than {n:,} documents in one file (cvo's limit; see docs/loading.md)", n + 1)


def load_yaml_stream(data: bytes, floats: list[bool] | None = None) -> list[Any]:
    """Every document of a YAML stream (libyaml's events, go-yaml v2's values), ``None`` for empty ones.

    ``floats`` gets, for each document, whether it holds a float.
    """
    parser = CParser(data)
    documents: list[Any] = []
    budget = _Budget()
    try:
        get_event = parser.get_event
        get_event()  # StreamStartEvent
        while True:
            event = get_event()
            if type(event) is StreamEndEvent:
                break
            if type(event) is not DocumentStartEvent:  # pragma: no cover - libyaml invariant
                raise DocumentError("malformed YAML stream")
            if len(documents) >= limits.MAX_DOCUMENTS_PER_FILE:
                raise too_many_documents()
            budget.new_document()
            try:
                root = _build(get_event, get_event(), {}, budget)
            except DocumentError as err:
                err.document = len(documents) + 1
                raise
            end = get_event()
            if type(end) is not DocumentEndEvent:  # pragma: no cover - libyaml invariant
                raise DocumentError("malformed YAML stream", len(documents) + 1)
            documents.append(root)
            if floats is not None:
                floats.append(budget.floats)
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = err.problem or err.context or "invalid YAML"
        raise DocumentError(f"{problem}", len(documents) + 1, line) from None
    except YAMLError as err:
        # libyaml's reader: bytes that are not UTF-8 (or UTF-16 with a BOM), control characters.
        position = getattr(err, "position", None)
        character = getattr(err, "character", None)
        reason = getattr(err, "reason", None) or "unreadable YAML stream"
        where = []
        if isinstance(character, int) and character >= 0:
            where.append(f"#x{character:02x}")
        line = None
        if isinstance(position, int):
            where.append(f"at byte {position}")
            line = data.count(b"\n", 0, position) + 1
        detail = f" ({' '.join(where)})" if where else ""
        raise DocumentError(f"{reason}{detail}", len(documents) + 1, line) from None
    finally:
        parser.dispose()
    return documents
