"""Typed views: frozen dataclasses built from checked JSON, one converter per field from its annotation.

A view class declares its fields with Python types, each with a default (what an absent field reads as,
Go's zero value).  The JSON key of a field is its name in camelCase (``last_transition_time`` →
``lastTransitionTime``) unless ``field(metadata={"key": ...})`` names another; ``{"key": None}`` is a field
:func:`build` leaves alone.  The types a field may have:

    str, int, bool, float            the JSON scalar (an integer is no bool)
    Time | None                      an RFC 3339 timestamp (:mod:`cvo.objects.times`)
    a View, or a View | None         a nested object
    tuple[X, ...]                    a list, its items of type X (an item of another shape is left out)
    Mapping[str, str]                an object of strings (other values left out)
    Mapping[str, Any], Any           the JSON value as it is

The JSON was checked against the kind's schema (:mod:`cvo.objects.schema`) before, so nothing is dropped
here that was not named there; a value that still does not fit (a field the schema leaves free) reads as
absent.  Converters are made once per class.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from cvo.objects.times import Time

V = TypeVar("V", bound="View")
_MISSING: Any = object()
Convert = Callable[[Any], Any]


class View:
    """Base of the view classes (each a frozen dataclass): :func:`build` makes them."""

    @classmethod
    def build(cls: type[V], data: Mapping[str, Any]) -> V:
        return build(cls, data)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _scalar(type_: type) -> Convert:
    if type_ is int:
        return lambda v: v if isinstance(v, int) and not isinstance(v, bool) else _MISSING
    if type_ is float:
        return lambda v: float(v) if isinstance(v, int | float) and not isinstance(v, bool) else _MISSING
    return lambda v: v if isinstance(v, type_) else _MISSING


def _tuple(item: Convert) -> Convert:
    def convert(value: Any) -> Any:
        if not isinstance(value, list):
            return _MISSING
        return tuple(x for x in map(item, value) if x is not _MISSING)

    return convert


def _strings(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return _MISSING
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _view(cls: type[View]) -> Convert:
    return lambda v: build(cls, v) if isinstance(v, Mapping) else _MISSING


def _time(value: Any) -> Any:
    parsed = Time.parse(value)
    return _MISSING if parsed is None else parsed


def converter(annotation: Any) -> Convert:
    """The converter of a field annotated ``annotation`` (see the module's docstring); ``TypeError`` for
    a type views do not hold."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return converter(rest[0])
    if annotation is Any or annotation is object:
        return lambda v: v
    if annotation is Time:
        return _time
    if isinstance(annotation, type) and issubclass(annotation, View):
        return _view(annotation)
    if annotation in (str, int, bool, float):
        return _scalar(annotation)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _tuple(converter(args[0]))
    if origin is Mapping and args == (str, str):
        return _strings
    if origin is Mapping and args and args[1] is Any:
        return lambda v: v if isinstance(v, Mapping) else _MISSING
    raise TypeError(f"a view field cannot be of type {annotation!r}")


_PLANS: dict[type, list[tuple[str, str, Convert]]] = {}


def _plan(cls: type[View]) -> list[tuple[str, str, Convert]]:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        plan = []
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # every View is a dataclass
            key = f.metadata.get("key", _camel(f.name))
            if key is not None:
                plan.append((f.name, key, converter(hints[f.name])))
        _PLANS[cls] = plan
    return plan


def build(cls: type[V], data: Mapping[str, Any], **given: Any) -> V:
    """A ``cls`` of ``data``'s fields (absent and unfitting ones: the defaults), and ``given`` as they are."""
    values = dict(given)
    for name, key, convert in _plan(cls):
        raw = data.get(key)
        if raw is not None:
            value = convert(raw)
            if value is not _MISSING:
                values[name] = value
    return cls(**values)


def key_of(cls: type[View], name: str) -> str | None:
    """The JSON key of field ``name`` of ``cls`` (``None``: not read from JSON)."""
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name == name:
            key = f.metadata.get("key", _camel(f.name))
            return None if key is None else str(key)
    raise KeyError(name)
