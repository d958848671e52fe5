"""Reading fields of untyped Kubernetes objects without trusting their types.

Objects come from manifests and from the cluster as plain JSON values: ``status`` may be a list, a
condition may be a string.  The CVO decodes them into typed Go structs and gets an error for a
wrong type; cvo reads them through these helpers, which treat a value of the wrong type as absent,
and names the problem with :func:`type_name` where it matters to the user.
"""

from __future__ import annotations

from typing import Any


def mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def entries(value: Any) -> list[dict[str, Any]]:
    """The objects of a list (other items skipped); empty for anything but a list."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def string(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def dig(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]…``, ``None`` where a step is missing or not an object."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def type_name(value: Any) -> str:
    """What a JSON value is, for messages: ``a list``, ``a string``, ``null``…"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
