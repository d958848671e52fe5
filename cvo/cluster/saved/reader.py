"""Saved Kubernetes objects from files and directories, as ``oc get -o yaml`` and must-gather write them.

A PATH is a YAML or JSON file (several documents, each an object, a ``kind: List``/``…List`` whose
``items`` are objects — ``cvo get -o yaml`` writes one — or ``cvo status -o json|yaml``'s document) or a directory, read recursively in byte-wise name order: every ``*.yaml``,
``*.yml`` and ``*.json`` file under it (a must-gather's ``cluster-scoped-resources`` holds one object
per file, its ``namespaces/*/core/*.yaml`` lists).  Everything goes through cvo's input limits
(:mod:`cvo.payload.limits`: file size, documents per file, nesting depth, aliases) and the payload's
YAML/JSON decoder; all files together are bounded by :data:`MAX_TOTAL_BYTES`.  Anything unusable is an
:class:`~cvo.payload.limits.InputError`, one line naming the file and the document.  Objects of the kinds
cvo reads (:data:`cvo.objects.KINDS`) are checked against their schemas as they are read: a field of the
wrong shape is left out, with one warning naming the file, the document, the object and the field.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cvo.objects import KINDS
from cvo.objects.base import checked
from cvo.payload import limits
from cvo.payload.limits import InputError, display_name, read_input
from cvo.payload.yamlorjson import load_documents
from cvo.payload.yamlparse import DocumentError

SUFFIXES = (".yaml", ".yml", ".json")
MAX_TOTAL_BYTES = limits.MAX_RELEASE_BYTES  # all saved files of one command together
MAX_FILES = 100_000
MAX_OBJECTS = 1_000_000


def _files(path: Path, shown: str) -> list[tuple[Path, str]]:
    if path.is_dir():
        found = []
        for root, dirs, names in os.walk(path, followlinks=False):
            dirs.sort(key=os.fsencode)
            for name in sorted(names, key=os.fsencode):
                if name.endswith(SUFFIXES) and not name.startswith("."):
                    full = Path(root) / name
                    found.append((full, display_name(os.fspath(full))))
                    if len(found) > MAX_FILES:
                        raise InputError(shown, f"more than {MAX_FILES} files of objects (cvo's limit)")
        return found
    return [(path, shown)]


# `cvo status -o json|yaml`'s document: read back as the objects it holds
STATUS_DOCUMENT = frozenset({"clusterVersion", "clusterOperators", "operatorConditions"})


def _status_document(document: Mapping[str, Any], shown: str, number: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key in ("clusterVersion", "clusterOperators", "operatorConditions"):
        value = document.get(key)
        for item in (value if isinstance(value, list) else [] if value is None else [value]):
            if not isinstance(item, Mapping) or not item.get("kind"):
                raise InputError(shown, f"{key}: an entry is not an object with a kind", number)
            out.extend(_objects_of(item, shown, number))
    return out


def _objects_of(document: Any, shown: str, number: int) -> Iterable[dict[str, Any]]:
    if document is None:
        return []
    if not isinstance(document, Mapping):
        raise InputError(shown, f"expected an object (a mapping), got {type(document).__name__}", number)
    kind = document.get("kind")
    if kind is None and STATUS_DOCUMENT.issuperset(document) and "clusterVersion" in document:
        return _status_document(document, shown, number)
    if not isinstance(kind, str) or not kind:
        raise InputError(shown, "object without a kind (cvo get -o yaml saves a cluster as one kind: List)", number)
    shown_kind = limits.printable(kind, 60)  # a kind is the file's text: one line, quoted if it needs it
    if kind == "List" or (kind.endswith("List") and "items" in document):
        items = document.get("items")
        if items is None:
            return []
        if not isinstance(items, list):
            raise InputError(shown, f"{shown_kind}: items is not a list", number)
        out: list[dict[str, Any]] = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping) or not item.get("kind"):
                raise InputError(shown, f"{shown_kind}: items[{i}] is not an object with a kind", number)
            out.extend(_objects_of(item, shown, number))
        return out
    if not isinstance(document.get("apiVersion", ""), str):
        raise InputError(shown, "apiVersion is not text", number)
    meta = document.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        raise InputError(shown, f"{shown_kind} without metadata.name", number)
    if not isinstance(meta.get("namespace", ""), str | type(None)):
        raise InputError(shown, f"{shown_kind} {limits.printable(meta['name'], 60)}: metadata.namespace is not text",
                         number)
    view = KINDS.get((str(document.get("apiVersion", "")).rpartition("/")[0], kind))
    if view is None:
        return [dict(document)]
    # a kind cvo reads: checked against its schema here, where the warnings can name the file and document
    return [checked(view.KIND, document, f"{shown} (document {number})")]


def read_file(path: Path, shown: str, budget: list[int]) -> list[dict[str, Any]]:
    """The objects of one file; ``budget`` holds the bytes all files may still use."""
    data = read_input(path, shown)
    budget[0] -= len(data)
    if budget[0] < 0:
        raise InputError(shown, f"saved objects over cvo's limit of {limits.size_text(MAX_TOTAL_BYTES)} in all")
    try:
        documents = load_documents(data)
    except DocumentError as err:
        where = f"line {err.line}: " if err.line else ""
        raise InputError(shown, f"invalid YAML or JSON: {where}{err}", err.document) from None
    except UnicodeDecodeError as err:
        raise InputError(shown, f"not UTF-8 text: {err.reason}") from None
    except RecursionError:
        raise InputError(shown, f"nested deeper than {limits.MAX_DEPTH} levels (cvo's limit)") from None
    objects: list[dict[str, Any]] = []
    for number, document in enumerate(documents, start=1):
        objects.extend(_objects_of(document, shown, number))
    return objects


def read_paths(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, dict[str, Any]]]:
    """Every object of every PATH, with the file it came from."""
    budget = [MAX_TOTAL_BYTES]
    out: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        shown = display_name(os.fspath(path))
        p = Path(path)
        for file, file_shown in _files(p, shown):
            out.extend((file_shown, obj) for obj in read_file(file, file_shown, budget))
            if len(out) > MAX_OBJECTS:
                raise InputError(shown, f"more than {MAX_OBJECTS} saved objects (cvo's limit)")
    return out
