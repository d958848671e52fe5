"""An object read from outside, checked against its kind's OpenAPI v3 schema the way a reader takes it.

What Go's JSON decoding of the kind's struct refuses, and a CRD's ``openAPIV3Schema`` declares: a value of
the wrong ``type`` (``x-kubernetes-int-or-string`` allowing either), a ``format: date-time`` string that is
no time.  Such a value is left out of the checked copy (an item out of its list) and named in a
:class:`Problem`; so is a value nested deeper than cvo's input limit (:data:`cvo.payload.limits.MAX_DEPTH`),
known field or not.  What only the API server's validation enforces (``required``, ``enum``, patterns,
lengths) is no reader's business, unknown fields are kept, and ``null`` is kept (it reads as absent, Go's
zero value).  A well-formed object comes back as the very same object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from cvo.objects.times import parse_time
from cvo.payload.fields import type_name
from cvo.payload.limits import MAX_DEPTH, printable

ABSENT: Final = object()  # what :func:`check` returns for a root of the wrong shape
_MAX_PATH = 160  # characters of a field path a message shows
_TYPES = {"object": "an object", "array": "a list", "string": "a string", "integer": "an integer",
          "number": "a number", "boolean": "a boolean"}


@dataclass(frozen=True)
class Problem:
    """A value left out: where (``status.history[0]``) and why (``must be an object, not a number``)."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{printable(self.path or '<the object>', _MAX_PATH)} {self.problem}"


def _fits(type_: object, value: Any) -> bool:
    if type_ == "object":
        return isinstance(value, dict)
    if type_ == "array":
        return isinstance(value, list)
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True  # no type (or one this reader does not know): anything


def _deeper(value: Any, depth: int, limit: int) -> bool:
    """Whether ``value`` (at ``depth``) nests an object or a list deeper than ``limit``: containers only, without
    recursion (most of a Node's status is fields no schema describes, walked value by value before)."""
    stack = [(value, depth)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if at > limit:
            return True
        stack.extend((child, at + 1) for child in children if isinstance(child, dict | list))
    return False


class _Checker:
    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.problems: list[Problem] = []

    def wrong(self, path: str, problem: str) -> object:
        self.problems.append(Problem(path, problem))
        return ABSENT

    def value(self, schema: Mapping[str, Any], value: Any, path: str, depth: int) -> Any:
        if value is None:
            return None
        if not schema and not _deeper(value, depth, self.max_depth):
            return value  # a field no schema describes: only its depth counts, and it is within the limit
        if schema.get("x-kubernetes-int-or-string") is True:
            if not _fits("integer", value) and not isinstance(value, str):
                return self.wrong(path, f"must be an integer or a string, not {type_name(value)}")
            return value
        type_ = schema.get("type")
        if not _fits(type_, value):
            return self.wrong(path, f"must be {_TYPES.get(str(type_), type_)}, not {type_name(value)}")
        if isinstance(value, str):
            if schema.get("format") == "date-time" and parse_time(value) is None:
                return self.wrong(path, f"must be an RFC 3339 time, not {printable(repr(value), 80)}")
            return value
        if isinstance(value, dict | list) and depth > self.max_depth:
            return self.wrong(path, f"is nested deeper than {self.max_depth} levels (cvo's limit)")
        if isinstance(value, dict):
            return self.mapping(schema, value, path, depth)
        if isinstance(value, list):
            items = schema.get("items")
            return self.sequence(items if isinstance(items, Mapping) else {}, value, path, depth)
        return value

    def mapping(self, schema: Mapping[str, Any], value: dict[str, Any], path: str, depth: int) -> dict[str, Any]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        additional = schema.get("additionalProperties")
        out: dict[str, Any] | None = None
        for key, item in value.items():
            sub = properties.get(key)
            if not isinstance(sub, Mapping):
                sub = additional if isinstance(additional, Mapping) else {}  # unknown: only its depth is checked
            new = self.value(sub, item, f"{path}.{key}" if path else str(key), depth + 1)
            if new is not item:
                if out is None:
                    out = dict(value)  # copied on the first change; the order of the keys is kept
                if new is ABSENT:
                    del out[key]
                else:
                    out[key] = new
        return value if out is None else out

    def sequence(self, items: Mapping[str, Any], value: list[Any], path: str, depth: int) -> list[Any]:
        out: list[Any] | None = None
        for i, item in enumerate(value):
            new = self.value(items, item, f"{path}[{i}]", depth + 1)
            if new is not item and out is None:
                out = value[:i]
            if out is not None and new is not ABSENT:
                out.append(new)
        return value if out is None else out


def check(schema: Mapping[str, Any], value: Any, max_depth: int = MAX_DEPTH) -> tuple[Any, list[Problem]]:
    """``value`` as ``schema`` lets a reader take it, and what was left out.  The root's own depth is 1.

    :data:`ABSENT` when the root itself has the wrong shape."""
    checker = _Checker(max_depth)
    return checker.value(schema, value, "", 1), checker.problems
