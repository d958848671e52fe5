"""The object views' base: a kind and its schema, reading once at the boundary, one warning per field left out.

``ClusterVersion.read(obj)`` checks ``obj`` against the kind's schema (:mod:`cvo.objects.schema`), logs one
warning for each field of the wrong shape (the object and the field path; the same one is not repeated in
a process), and builds the typed view of what is left (:mod:`cvo.objects.view`).  ``body`` is that checked
object, for what prints or passes on the JSON (``-o json``, the writers).  A kind's schema comes from a CRD
of ``manifests/`` (:func:`crd`) or is declared in code (:func:`declared`: Node, MachineConfigPool, the
release metadata, Cincinnati's graph), ``metadata`` always from :data:`~cvo.objects.meta.OBJECT_META_SCHEMA`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from cvo.log import get_logger
from cvo.objects.crds import crd_schema
from cvo.objects.meta import OBJECT_META_SCHEMA, ObjectMeta
from cvo.objects.schema import ABSENT, Problem, check
from cvo.objects.view import View, build
from cvo.payload.fields import type_name
from cvo.payload.limits import printable

log = get_logger(__name__)
_WARNED_MAX = 4096  # (object, field, problem) remembered so a process warns once about each
_warned: dict[tuple[str, ...], None] = {}


class Refused(ValueError):
    """An object that cannot be used at all (not an object); ``str()`` names it."""


def _with_meta(schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return {**schema, "properties": {**(properties if isinstance(properties, Mapping) else {}),
                                     "metadata": OBJECT_META_SCHEMA}}


def crd(file: str, version: str) -> Callable[[], Mapping[str, Any]]:
    """The schema of ``version`` of the CRD in ``manifests/file``, read when first needed."""
    return functools.cache(lambda: _with_meta(crd_schema(file, version)))


def declared(schema: Mapping[str, Any]) -> Callable[[], Mapping[str, Any]]:
    """A schema written in code, for a kind without a CRD in ``manifests/``."""
    full = _with_meta(schema)
    return lambda: full


@dataclass(frozen=True)
class Kind:
    group: str
    kind: str
    schema: Callable[[], Mapping[str, Any]]


def describe(kind: str, obj: Mapping[str, Any]) -> str:
    """``ClusterOperator etcd``, ``OperatorCondition openshift-etcd-operator/etcd``: an object in a message."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name, namespace = meta.get("name"), meta.get("namespace")
    shown = name if isinstance(name, str) and name else "(no name)"
    if isinstance(namespace, str) and namespace:
        shown = f"{namespace}/{shown}"
    return f"{kind} {printable(shown, 200)}"


def warn(what: str, problems: list[Problem], source: str = "") -> None:
    """One warning per field left out of ``what`` (an object as :func:`describe` names it), once a process."""
    for problem in problems:
        key = (what, problem.path, problem.problem)
        if key in _warned:
            continue
        if len(_warned) >= _WARNED_MAX:
            del _warned[next(iter(_warned))]
        _warned[key] = None
        fields = {"file": source} if source else {}
        log.warning("a field of the wrong shape is read as absent", object=what,
                    field=printable(problem.path or "<the object>", 160), problem=problem.problem, **fields)


def checked(kind: Kind, obj: Mapping[str, Any], source: str = "") -> dict[str, Any]:
    """``obj`` as ``kind``'s schema lets a reader take it, each field left out warned about."""
    body, problems = check(kind.schema(), obj)
    what = describe(kind.kind, obj)
    if body is ABSENT:
        raise Refused(f"{what}: {problems[0].problem if problems else 'not an object'}")
    warn(what, problems, source)
    return dict(body) if body is not obj else dict(obj)


@dataclass(frozen=True)
class Object(View):
    """A top-level object.  Subclasses set :attr:`KIND` and add ``spec`` and ``status`` views."""

    KIND: ClassVar[Kind]
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    body: Mapping[str, Any] = field(default_factory=dict, metadata={"key": None}, repr=False, compare=False)

    @classmethod
    def read(cls, obj: Any, source: str = "", *, checked_already: bool = False) -> Self:
        """The view of ``obj`` (a decoded JSON object); :class:`Refused` for anything but an object.
        ``checked_already``: ``obj`` is what :func:`checked` made of it (saved objects are checked as they are
        read from their file: cvo/cluster/saved/reader.py), and is taken as it is."""
        if not isinstance(obj, Mapping):
            raise Refused(f"{cls.KIND.kind}: expected an object, got {type_name(obj)}")
        body = dict(obj) if checked_already else checked(cls.KIND, obj, source)
        return build(cls, body, body=body)

    @classmethod
    def of(cls, obj: Self | Mapping[str, Any]) -> Self:
        """``obj`` if it is a view already, else :meth:`read` it (for callers that still hold plain JSON)."""
        return obj if isinstance(obj, cls) else cls.read(obj)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    def section(self, key: str) -> dict[str, Any]:
        """A copy of the checked ``body[key]`` (``spec``, ``status``) to change and write; ``{}`` when absent."""
        value = self.body.get(key)
        return dict(value) if isinstance(value, Mapping) else {}

    def replaced(self, **sections: Any) -> Self:
        """The view of ``body`` with ``sections`` (``status={...}``) in place of its own."""
        return type(self).read({**self.body, **sections})
