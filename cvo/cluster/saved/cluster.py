"""``SavedCluster``: the ``Cluster`` protocol over saved objects, read-only.

Objects are keyed by :class:`~cvo.cluster.api.Ref`; the same object saved twice (a must-gather holds
some objects in several files) keeps its last copy.  Every write is refused with
:class:`ReadOnlyCluster` (an :class:`~cvo.cluster.api.ApiError`, kind ``Forbidden``) naming what was
attempted.  ``serves`` answers for the kinds present; ``watch`` yields nothing (saved objects never change).
"""

from __future__ import annotations

import copy
import os
from collections.abc import AsyncIterator, Iterable

from cvo.cluster.api import ApiError, ApiErrorKind, Object, Ref, WatchEvent
from cvo.cluster.saved.reader import read_paths


class ReadOnlyCluster(ApiError):
    """A write to saved objects."""


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
        return copy.deepcopy(obj) if obj is not None else None

    async def list(self, group: str, kind: str, namespace: str | None = None) -> list[Object]:
        return [copy.deepcopy(o) for r, o in sorted(self.objects.items(), key=lambda item: item[0])
                if r.group == group and r.kind == kind and (namespace is None or r.namespace == namespace)]

    def _refuse(self, what: str, ref: Ref) -> ReadOnlyCluster:
        return ReadOnlyCluster(ApiErrorKind.FORBIDDEN, f"cannot {what} {ref}: {self.description} are read-only "
                                                       "(--from-file)", ref)

    async def create(self, obj: Object) -> Object:
        raise self._refuse("create", Ref.of(obj))

    async def update(self, obj: Object) -> Object:
        raise self._refuse("update", Ref.of(obj))

    async def update_status(self, obj: Object) -> Object:
        raise self._refuse("update the status of", Ref.of(obj))

    async def delete(self, ref: Ref) -> bool:
        raise self._refuse("delete", ref)

    async def serves(self, api_version: str, kind: str) -> bool:
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        return any(r.group == group and r.kind == kind for r in self.objects)

    async def watch(self, group: str, kind: str, namespace: str | None = None,  # type: ignore[override]
                    name: str | None = None) -> AsyncIterator[WatchEvent]:
        return
        yield  # an async generator that ends at once

    async def close(self) -> None:
        return None
