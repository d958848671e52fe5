"""A diff as people and scripts read it: unified diffs of YAML (as ``kubectl diff`` prints them), counts per kind
and run level, and one JSON/YAML document with the same content."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from typing import Any

import orjson

from cvo.diff.compute import ACTIONS, Diff, ObjectDiff
from cvo.diff.yamltext import to_lines

NO_RUNLEVEL = "(none)"  # a manifest whose file name has no run level


def _word(text: str) -> str:
    """``text`` as one printable word (JSON-quoted otherwise): a manifest's odd name cannot break a header."""
    if text and text.isprintable() and not any(c.isspace() for c in text):
        return text
    return json.dumps(text)


def object_path(obj: ObjectDiff) -> str:
    """``group.version.Kind.namespace.name``, as kubectl diff names its files (``core`` for the core group)."""
    group, _, version = obj.api_version.rpartition("/")
    parts = [group or "core", version, obj.kind, *([obj.namespace] if obj.namespace else []), obj.name]
    return _word(".".join(parts))


def to_yaml(obj: dict[str, Any] | None) -> list[str]:
    return [] if obj is None else to_lines(orjson.loads(orjson.dumps(obj)))


def unified(diff: Diff, obj: ObjectDiff, context: int = 3) -> list[str]:
    """One object's unified diff, headed as ``diff -u -N`` heads it (live side first)."""
    path = object_path(obj)
    old, new = f"{_side(diff)}/{path}", f"{_word(diff.version)}/{path}"
    where = f"{obj.action}: {_word(obj.file)}" + (f": {obj.message}" if obj.message else "")
    head = [f"diff -u -N {old} {new}", f"--- {old}\t({where})", f"+++ {new}"]
    if obj.action == "invalid":
        return head
    body = list(difflib.unified_diff(to_yaml(obj.before), to_yaml(obj.after), lineterm="", n=context))
    return head + body[2:]  # difflib's own ---/+++ lines name no file


def _side(diff: Diff) -> str:
    """The live side's name in the headers: ``live`` for a cluster, the version of a release."""
    return _word(diff.against.removeprefix("release ")) if diff.against.startswith("release ") else "live"


def counts(diff: Diff, key: Callable[[ObjectDiff], str]) -> dict[str, dict[str, int]]:
    """Actions counted per ``key`` (kind, run level), keys in sweep order."""
    out: dict[str, dict[str, int]] = {}
    for obj in diff.objects:
        row = out.setdefault(key(obj), dict.fromkeys(ACTIONS, 0))
        row[obj.action] += 1
    return out


def totals(diff: Diff) -> dict[str, int]:
    out = dict.fromkeys(ACTIONS, 0)
    for obj in diff.objects:
        out[obj.action] += 1
    return {**out, "unchanged": diff.unchanged, "skipped": diff.skipped}


def runlevel_of(obj: ObjectDiff) -> str:
    return obj.runlevel or NO_RUNLEVEL


def _table(title: str, rows: dict[str, dict[str, int]], columns: list[str]) -> list[str]:
    width = max([len(title), *(len(r) for r in rows)])
    lines = [f"{title:<{width}}  " + "  ".join(c.upper() for c in columns)]
    for name, row in rows.items():
        lines.append(f"{name:<{width}}  " + "  ".join(f"{row[c]:>{len(c)}}" for c in columns))
    return lines


def summary(diff: Diff) -> list[str]:
    """The counts: one line, then a table per kind and one per run level (when anything differs)."""
    total = totals(diff)
    said = ", ".join(f"{total[a]} {a}" for a in ACTIONS if total[a]) or "no differences"
    against = diff.against.partition(" (")[0]  # the cluster's whereabouts are on stderr already
    lines = [f"{diff.mode} to {diff.version} against {against}: {said} "
             f"({total['unchanged']} unchanged, {total['skipped']} skipped)"]
    if not diff.objects:
        return lines
    columns = [a for a in ACTIONS if total[a]]
    lines += ["", *_table("KIND", counts(diff, lambda o: o.kind_name), columns)]
    lines += ["", *_table("RUN LEVEL", counts(diff, runlevel_of), columns)]
    return lines


def text(diff: Diff) -> str:
    """Every object's unified diff in sweep order, then the counts."""
    lines: list[str] = []
    for obj in diff.objects:
        lines += unified(diff, obj)
    if lines:
        lines.append("")
    lines += summary(diff)
    return "".join(f"{line}\n" for line in lines)


def document(diff: Diff) -> dict[str, Any]:
    """``-o json|yaml``: the same content as data (each object's unified diff as text beside its fields)."""
    return {
        "version": diff.version,
        "image": diff.image,
        "against": diff.against,
        "mode": str(diff.mode),
        "differs": diff.differs,
        "summary": totals(diff),
        "byKind": [{"kind": k, **row} for k, row in counts(diff, lambda o: o.kind_name).items()],
        "byRunlevel": [{"runlevel": k, **row} for k, row in counts(diff, runlevel_of).items()],
        "objects": [{
            "action": o.action, "apiVersion": o.api_version, "kind": o.kind, "namespace": o.namespace,
            "name": o.name, "runlevel": o.runlevel, "component": o.component, "file": o.file,
            "fields": list(o.fields), "message": o.message, "before": o.before, "after": o.after,
            "diff": "".join(f"{line}\n" for line in unified(diff, o)[3:]),
        } for o in diff.objects],
    }
