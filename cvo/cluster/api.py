"""The one interface the sweep drives; the simulated and the Kubernetes backends implement it.

Objects are plain dicts in Kubernetes JSON form.  An object is identified by :class:`Ref`:
(group, kind, namespace, name); the API version is only needed to talk to a real server.
Every call is a coroutine: the simulated backend completes at once on a virtual clock, the
Kubernetes backend runs blocking client calls in threads.  Nothing above this module knows which
backend it talks to.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

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
    """The API error classes the CVO's reason table distinguishes (pkg/payload/task.go `reasonForPayloadSyncError`)."""

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


class ApiError(Exception):
    """An error from a cluster, classified the way the CVO classifies API errors."""

    def __init__(self, kind: ApiErrorKind, message: str, ref: Ref | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.ref = ref
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        return self.kind in (ApiErrorKind.CONFLICT, ApiErrorKind.TIMEOUT, ApiErrorKind.SERVER_TIMEOUT,
                             ApiErrorKind.INTERNAL)


class EventType(enum.StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    obj: Object


class Cluster(Protocol):
    """What the sweep needs from a cluster."""

    async def get(self, ref: Ref) -> Object | None:
        """The live object, or ``None`` when it does not exist."""

    async def list(self, group: str, kind: str, namespace: str | None = None) -> list[Object]:
        """Every object of a kind (in one namespace, or all)."""

    async def create(self, obj: Object) -> Object:
        """Create ``obj``; :class:`ApiError` ALREADY_EXISTS if it exists."""

    async def update(self, obj: Object) -> Object:
        """Replace the object's spec and metadata (not status); CONFLICT on a stale resourceVersion."""

    async def update_status(self, obj: Object) -> Object:
        """Replace the object's status only (the status subresource)."""

    async def delete(self, ref: Ref) -> bool:
        """Delete the object; ``False`` if it did not exist."""

    async def serves(self, api_version: str, kind: str) -> bool:
        """Whether the server serves this kind (discovery); a kind it does not serve cannot be applied."""

    def watch(self, group: str, kind: str, namespace: str | None = None, name: str | None = None,
              ) -> AsyncIterator[WatchEvent]:
        """Changes to matching objects from now on (no initial list); stops when the consumer stops."""

    async def close(self) -> None:
        """Release connections and flush state (the simulated cluster writes its state file)."""
