"""The fields cvo would write, paired with the live values they replace.

:func:`cvo.runner.apply.merge` sends a top-level field whole when the manifest's value is not contained in
the live one (:func:`cvo.runner.apply.contains`); a field the manifest leaves out is not drift.  The diff
shows the same thing: the live object restricted to the fields the manifest sets (:func:`project`), beside
the manifest's values (:func:`pair`), so what the server defaults or an operator owns never shows up.
Lists are paired element by element (by ``name`` when every element has one, else by position).
"""

from __future__ import annotations

from typing import Any

import orjson

from cvo.runner.apply import _empty as empty_value  # the one rule of what a server drops (apply.py)
from cvo.runner.apply import contains


def project(desired: Any, live: Any) -> Any:
    """``live`` restricted to the fields ``desired`` sets."""
    if isinstance(desired, dict) and isinstance(live, dict):
        return {k: project(v, live[k]) for k, v in desired.items() if k in live}
    if isinstance(desired, list) and isinstance(live, list) and len(desired) == len(live):
        return [project(d, lv) for d, lv in zip(desired, live, strict=True)]
    return live


def _names(items: list[Any]) -> dict[str, Any] | None:
    """Elements by their ``name``, when every element is a mapping with a unique string name."""
    out: dict[str, Any] = {}
    for item in items:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or name in out:
            return None
        out[name] = item
    return out


def pair(desired: Any, live: Any) -> tuple[Any, Any]:
    """(before, after): the live value and the value cvo would write, both restricted to what ``desired``
    sets.  Equal when :func:`contains` finds no drift."""
    if contains(desired, live):
        shown = project(desired, live)
        return shown, shown
    if isinstance(desired, dict) and isinstance(live, dict):
        before: dict[str, Any] = {}
        after: dict[str, Any] = {}
        for key, value in desired.items():
            if key not in live:
                if not empty_value(value):
                    after[key] = value
                continue
            before[key], after[key] = pair(value, live[key])
        return before, after
    if isinstance(desired, list) and isinstance(live, list):
        if len(desired) == len(live):
            pairs = [pair(d, lv) for d, lv in zip(desired, live, strict=True)]
            return [b for b, _ in pairs], [a for _, a in pairs]
        wanted, found = _names(desired), _names(live)
        if wanted is not None and found is not None:
            return ([pair(wanted[n], item)[0] if n in wanted else item for n, item in found.items()],
                    [pair(item, found[n])[1] if n in found else item for n, item in wanted.items()])
    return live, desired


def changed_paths(before: Any, after: Any, path: str = "") -> list[str]:
    """The dotted paths (``spec.template.spec.containers[0].image``) whose values differ (as JSON: ``true`` is not
    ``1``, as for :func:`cvo.runner.apply.contains`)."""
    if before == after and orjson.dumps(before) == orjson.dumps(after):
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in [*before, *(k for k in after if k not in before)]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in before or key not in after:
                out.append(sub)
            else:
                out += changed_paths(before[key], after[key], sub)
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [p for i, (b, a) in enumerate(zip(before, after, strict=True))
                for p in changed_paths(b, a, f"{path}[{i}]")]
    return [path or "."]


__all__ = ["changed_paths", "empty_value", "pair", "project"]
