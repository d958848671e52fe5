"""``SavedCluster``: a :class:`~cvo.cluster.api.ReadOnlyCluster` over saved objects.

Objects are keyed by :class:`~cvo.cluster.api.Ref`; the same object saved twice (a must-gather holds
some objects in several files) keeps its last copy, in the place of its first.  ``list`` gives them in the
order they were saved (``oc get -o yaml`` saves a list in the server's order, which oc's views print in:
the worker pools, for one).  It has no writes at all: the commands that read
saved objects take a read-only cluster.  ``serves`` answers for the kinds present; ``watch`` yields
nothing (saved objects never change).
"""

from __future__ import annotations

import builtins
import copy
import os
from collections.abc import AsyncIterator, Iterable
from typing import Any

from cvo.cluster.api import Object, Ref, WatchEvent
from cvo.cluster.saved.reader import read_paths


class SavedCluster:
    def __init__(self, objects: Iterable[Object], description: str = "saved objects") -> None:
        self.objects: dict[Ref, Object] = {}
        for obj in objects:
            self.objects[Ref.of(obj)] = obj
        self.description = description

    @classmethod
    def from_paths(cls, paths: Iterable[str | os.PathLike[str]]) -> SavedCluster:
        paths = list(paths)
        found = read_paths(paths)
        shown = ", ".join(os.fspath(p) for p in paths)
        return cls((obj for _, obj in found), f"saved objects ({shown})")

    async def get(self, ref: Ref) -> Object | None:
        obj = self.objects.get(ref)
        return _copy(obj) if obj is not None else None

    async def list(self, group: str, kind: str, namespace: str | None = None) -> builtins.list[Object]:
        return [_copy(o) for r, o in self.objects.items()
                if r.group == group and r.kind == kind and (namespace is None or r.namespace == namespace)]

    async def serves(self, api_version: str, kind: str) -> bool:
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        return any(r.group == group and r.kind == kind for r in self.objects)

    def watch(self, group: str, kind: str, namespace: str | None = None, name: str | None = None,
              ) -> AsyncIterator[WatchEvent]:
        return _NoEvents()

    async def close(self) -> None:
        return None


def _copy(value: Any) -> Any:
    """A copy of decoded JSON or YAML, every object and list its own (``copy.deepcopy``'s result, four times
    faster: no memo, no reduce protocol; what a decoder makes holds no cycles)."""
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return copy.deepcopy(value) if isinstance(value, dict | list) else value


class _NoEvents:
    """A watch that ends at once."""

    def __aiter__(self) -> _NoEvents:
        return self

    async def __anext__(self) -> WatchEvent:
        raise StopAsyncIteration
