"""The one interface the sweep drives; the simulated and the Kubernetes backends implement it.

Objects are plain dicts in Kubernetes JSON form.  An object is identified by :class:`Ref`:
(group, kind, namespace, name); the API version is only needed to talk to a real server.
Every call is a coroutine: the simulated backend completes at once on a virtual clock, the
Kubernetes backend runs blocking client calls in threads.  Nothing above this module knows which
backend it talks to.

The interface is split by role, as controller-runtime's ``pkg/client/interfaces.go`` splits its
``Client`` (``Reader``, ``Writer``, ``StatusClient``, ``WithWatch``): :class:`Reader`, :class:`Writer`,
:class:`StatusWriter`, :class:`Watcher`.  :class:`Cluster` is all of them; :class:`ReadOnlyCluster`
(what saved objects are, and all a command that only looks needs) is a reader that can be watched.
What only some backends can do is a small protocol of its own, reached with
:func:`cvo.cluster.intercept.capability`: :class:`ReadHooks`, :class:`RequestStats`, :class:`CrdEstablisher`.
"""

from __future__ import annotations

import builtins
import enum
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

Object = dict[str, Any]


@dataclass(frozen=True, slots=True, order=True)
class Ref:
    group: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Ref:
        api_version = obj.get("apiVersion", "")
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        meta = obj.get("metadata") or {}
        return cls(group, obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", ""))

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{kind} {self.namespace}/{self.name}" if self.namespace else f"{kind} {self.name}"


CLUSTER_OPERATOR = ("config.openshift.io", "ClusterOperator")
CLUSTER_VERSION = ("config.openshift.io", "ClusterVersion")
OPERATOR_CONDITION = ("operators.coreos.com", "OperatorCondition")


def co_ref(name: str) -> Ref:
    return Ref(*CLUSTER_OPERATOR, "", name)


def cv_ref(name: str = "version") -> Ref:
    return Ref(*CLUSTER_VERSION, "", name)


class ApiErrorKind(enum.Enum):
    """The API error classes the CVO's reason table distinguishes (``pkg/payload/task.go``
    ``reasonForPayloadSyncError``, after apimachinery's ``errors.IsX``)."""

    NOT_FOUND = "NotFound"
    ALREADY_EXISTS = "AlreadyExists"
    CONFLICT = "Conflict"
    INVALID = "Invalid"
    FORBIDDEN = "Forbidden"
    UNAUTHORIZED = "Unauthorized"
    TIMEOUT = "Timeout"  # Timeout, ServiceUnavailable, unexpected server error: the cluster is down
    SERVER_TIMEOUT = "ServerTimeout"  # ServerTimeout and TooManyRequests: overloaded
    INTERNAL = "InternalError"
    NO_KIND_MATCH = "NoKindMatch"  # the server does not serve this kind
    OTHER = "Other"


# The one definition of transient: the same request may succeed if sent again later (the server was
# down, overloaded, or failed inside).  A Conflict is not: the same write with the same stale
# resourceVersion cannot succeed; a caller that wants to go on reads the object again and writes
# again (cvo.cluster.persist.reread_on_conflict), which is a different loop, said so where it is used.
TRANSIENT = frozenset({ApiErrorKind.TIMEOUT, ApiErrorKind.SERVER_TIMEOUT, ApiErrorKind.INTERNAL})


class ApiError(Exception):
    """An error from a cluster, classified the way the CVO classifies API errors.

    ``namespace_missing``: a NotFound because the object's namespace does not exist names that
    namespace (the API server says so in the Status details: kind ``namespaces``).
    """

    def __init__(self, kind: ApiErrorKind, message: str, ref: Ref | None = None, retry_after: float | None = None,
                 *, namespace_missing: str | None = None, refused: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.ref = ref
        self.retry_after = retry_after
        self.namespace_missing = namespace_missing
        self.refused = refused  # no server listens there (connection refused): transient, but maybe a wrong address

    @property
    def transient(self) -> bool:
        return self.kind in TRANSIENT


def is_transient(err: ApiError) -> bool:
    """Whether sending the same request again may succeed (:data:`TRANSIENT`)."""
    return err.kind in TRANSIENT


class EventType(enum.StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    obj: Object


class Reader(Protocol):
    """Reads (controller-runtime's ``client.Reader``, and discovery)."""

    async def get(self, ref: Ref) -> Object | None:
        """The live object, or ``None`` when it does not exist."""

    async def list(self, group: str, kind: str, namespace: str | None = None) -> builtins.list[Object]:
        """Every object of a kind (in one namespace, or all)."""

    async def serves(self, api_version: str, kind: str) -> bool:
        """Whether the server serves this kind (discovery); a kind it does not serve cannot be applied.
        A read: it never writes (a CRD the server left unestablished is :class:`CrdEstablisher`'s)."""


class Writer(Protocol):
    """Writes of whole objects (``client.Writer``)."""

    async def create(self, obj: Object) -> Object:
        """Create ``obj``; :class:`ApiError` ALREADY_EXISTS if it exists."""

    async def update(self, obj: Object) -> Object:
        """Replace the object's spec and metadata (not status); CONFLICT on a stale resourceVersion."""

    async def delete(self, ref: Ref) -> bool:
        """Delete the object; ``False`` if it did not exist."""


class StatusWriter(Protocol):
    """Writes of the status subresource (``client.StatusClient``)."""

    async def update_status(self, obj: Object) -> Object:
        """Replace the object's status only (the status subresource)."""


class Watcher(Protocol):
    """Watches (``client.WithWatch``)."""

    def watch(self, group: str, kind: str, namespace: str | None = None, name: str | None = None,
              ) -> AsyncIterator[WatchEvent]:
        """Changes to matching objects from now on (no initial list); stops when the consumer stops.
        The iterator ends only when the cluster closes; a broken watch raises."""


class ReadOnlyCluster(Reader, Watcher, Protocol):
    """A cluster that is only looked at: saved objects (``--from-file``), and what a command that only
    reads (``status``, ``upgrade status``, ``upgrade --dry-run``, ``report``) needs."""

    async def close(self) -> None:
        """Release connections and flush state."""


@runtime_checkable
class Cluster(Reader, Writer, StatusWriter, Watcher, Protocol):
    """What the sweep needs from a cluster (``isinstance`` tells it from a :class:`ReadOnlyCluster`)."""

    async def close(self) -> None:
        """Release connections and flush state (the simulated cluster writes its state file)."""


# --- optional capabilities: what only some backends can do -------------------------------------------------


@runtime_checkable
class ReadHooks(Protocol):
    """The embedded cluster calls a hook on every ``get`` (its simulated operators start on a read)."""

    def on_read(self, callback: Callable[[Ref], object]) -> Callable[[], None]:
        """Call ``callback(ref)`` on every ``get``; returns a function that removes it."""


class VerbCounts(Protocol):
    @property
    def verbs(self) -> Counter[str]: ...


@runtime_checkable
class RequestStats(Protocol):
    """A backend that counts its calls per verb (both do; the sweep's events record them)."""

    @property
    def stats(self) -> VerbCounts: ...


@runtime_checkable
class CrdEstablisher(Protocol):
    """A backend that can wake a server which left a CRD accepted but not Established (a write)."""

    async def establish(self, crd_name: str) -> bool:
        """Nudge CRD ``crd_name`` if the server has left it unestablished long enough; True if it was nudged."""


@runtime_checkable
class PodEvicter(Protocol):
    """A backend with the Eviction API (a real API server): evicting a Pod asks its PodDisruptionBudgets."""

    async def evict(self, ref: Ref) -> bool:
        """Evict Pod ``ref`` (``pods/NAME/eviction``, as k8s.io/kubectl pkg/drain ``EvictPod``): True once it is
        evicted or gone, False while a PodDisruptionBudget refuses (the API's 429)."""
