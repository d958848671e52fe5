"""Every event a sweep reports, by name, with its fields: the one catalogue emitters and readers share.

Each event is a frozen dataclass: ``name`` is its wire name (the ``event`` of an ``--events`` line and
of a ``--log-format json`` line), its fields are the rest of the line, in the order declared.  Emitters
build them (``emit(TaskApplied, task=…, action=…, file=…, node=…)``, the time stamped by the emitter's
clock); readers match on the type.  An events file from another cvo may carry a name this catalogue
does not know: :func:`decode` keeps it as an :class:`UnknownEvent`, never an error.

Reading a file (:func:`decode`): a field absent, or of the wrong type, reads as ``None`` where the field
may be ``None``, else as its type's empty value (``""``, ``0``, ``0.0``, ``False``, ``[]``, ``{}``); a list
with one item of the wrong type is wrong as a whole, a mapping keeps its entries of the right types; fields
the catalogue does not declare are dropped.  ``docs/scenarios.md`` and ``docs/report.md`` list the events.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Concatenate, ParamSpec, Protocol, TypeAlias, TypeVar

P = ParamSpec("P")
E = TypeVar("E", bound="SweepEvent")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SweepEvent:
    """An event of the catalogue: its name, and when it happened on the sweep's clock (simulated time on the
    embedded cluster).  Events are records of what happened, compared by their fields (``eq=False``); the
    events share this class's ``repr`` (a dataclass's own costs each class an ``exec`` at import)."""

    name: ClassVar[str]
    time: datetime

    @property
    def fields(self) -> dict[str, object]:
        """The fields as the wire writes them: name to value, in declared order."""
        return {key: getattr(self, key) for key in _FIELDS[type(self)]}

    def __repr__(self) -> str:
        values = ", ".join(f"{key}={getattr(self, key)!r}" for key in ("time", *_FIELDS[type(self)]))
        return f"{type(self).__name__}({values})"


@dataclass(frozen=True, slots=True, eq=False)
class UnknownEvent:
    """An event read from a file whose name the catalogue does not know (a newer or older cvo's)."""

    time: datetime
    name: str
    fields: dict[str, object]


Event: TypeAlias = SweepEvent | UnknownEvent
# An event's class, called with the time and the fields: what an emitter's ``emit(TaskDone, task=…, node=…)``
# takes, checked by mypy against the class's fields.
Kind: TypeAlias = Callable[Concatenate[datetime, P], SweepEvent]


class Emit(Protocol):
    """An emitter's ``emit``: builds the event at its clock's now and reports it."""

    def __call__(self, kind: Kind[P], /, *args: P.args, **fields: P.kwargs) -> None: ...


# --- a sweep (cvo.runner.worker, cvo.runner.upgrade, cvo.scenario.replay) ---------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SweepStarted(SweepEvent):
    """A sweep of a release begins (cvo.runner.worker)."""

    name: ClassVar[str] = "sweep.started"
    version: str  # the release swept
    image: str  # its pull spec (file://DIR for a release directory)
    mode: str  # install, update or reconcile
    total: int | None  # the release's manifests (None: the events do not say)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SweepCompleted(SweepEvent):
    """Every task of the release applied and done."""

    name: ClassVar[str] = "sweep.completed"
    version: str
    attempts: int  # how many attempts it took
    elapsed: float  # seconds on the sweep's clock


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SweepTimeout(SweepEvent):
    """The sweep ran out of time (its options' timeout) before it completed."""

    name: ClassVar[str] = "sweep.timeout"
    attempts: int
    message: str  # the last failure's message ("" when there was none)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SweepCancelled(SweepEvent):
    """A scenario's sweep stopped: cancelled, or replaced by new work."""

    name: ClassVar[str] = "sweep.cancelled"
    version: str
    reason: str  # "cancelled by the scenario", "new work: upgrade 4.17.0", ...


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SweepDeferred(SweepEvent):
    """An upgrade asked for while the install runs: it starts when the install is done (the CVO's
    "Ignoring detected version change during payload initialization")."""

    name: ClassVar[str] = "sweep.deferred"
    version: str  # the upgrade's
    running: str  # the install's
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SweepBlocked(SweepEvent):
    """An upgrade still blocked by its preconditions when its time ran out, or by one only ``--force`` passes."""

    name: ClassVar[str] = "sweep.blocked"
    version: str  # the target
    message: str  # the preconditions' summary


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class StatusUnwritten(SweepEvent):
    """The sweep's last ClusterVersion status could not be written."""

    name: ClassVar[str] = "status.unwritten"
    error: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ConditionChanged(SweepEvent):
    """A ClusterVersion condition the status writer changed (cvo.runner.status_writer)."""

    name: ClassVar[str] = "condition.changed"
    type: str  # Available, Progressing, Failing, ...
    status: str  # True, False, Unknown
    reason: str
    message: str


# --- attempts ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class AttemptStarted(SweepEvent):
    """An attempt walks the task graph once (the CVO's apply of one payload sync)."""

    name: ClassVar[str] = "attempt.started"
    attempt: int | None  # from 1 (None: the events do not say; older events count from 0)
    nodes: int  # nodes of the task graph
    workers: int  # nodes run at once


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class AttemptFailed(SweepEvent):
    """An attempt ended with errors: the back-off before the next begins."""

    name: ClassVar[str] = "attempt.failed"
    attempt: int
    reason: str  # the failure's reason (the CVO's UpdateError reason)
    message: str
    retry_in: float | None  # seconds of back-off before the next attempt (None: the events do not say)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class AttemptWoken(SweepEvent):
    """The back-off after a failed attempt ended early."""

    name: ClassVar[str] = "attempt.woken"
    reason: str  # "ClusterOperator changed"


# --- nodes of the task graph -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class NodeStarted(SweepEvent):
    """A node of the task graph begins: its tasks run one after the other."""

    name: ClassVar[str] = "node.started"
    node: int | None  # the node's id in the attempt's graph (None: the events do not say)
    tasks: int  # tasks in the node
    runlevel: str | None  # its first task's run level
    component: str | None  # and component
    after: list[int] | None  # the nodes it ran after (None: the events do not say)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class NodeDone(SweepEvent):
    """Every task of the node done."""

    name: ClassVar[str] = "node.done"
    node: int | None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class NodeFailed(SweepEvent):
    """A task of the node failed: the node's remaining tasks do not run in this attempt."""

    name: ClassVar[str] = "node.failed"
    node: int | None
    reason: str
    message: str
    nested: str  # the detailed message (the CVO's wrapped error)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class NodeBlocked(SweepEvent):
    """A failed node's dependents will not run in this attempt."""

    name: ClassVar[str] = "node.blocked"
    node: int | None
    dependents: int  # nodes with tasks that will not run


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class NodeError(SweepEvent):
    """A node ended by something that is not an API error: a bug or an unexpected condition."""

    name: ClassVar[str] = "node.error"
    node: int | None
    task: str  # the node's first task
    error: str  # "TypeName: message"


# --- tasks -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class TaskStarted(SweepEvent):
    """A task's first apply."""

    name: ClassVar[str] = "task.started"
    task: str  # 'deployment "ns/name" (i of n)'
    node: int | None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class TaskApplied(SweepEvent):
    """A task's manifest applied: what the apply did."""

    name: ClassVar[str] = "task.applied"
    task: str
    action: str  # created, updated, unchanged, deleted, delete-verified, skipped
    file: str  # the manifest's file in the release
    node: int | None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class TaskDone(SweepEvent):
    """A task applied and, where it has one, its wait or health check passed."""

    name: ClassVar[str] = "task.done"
    task: str
    node: int | None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class TaskSkipped(SweepEvent):
    """A task not applied (disabled capability, overridden unmanaged, ...)."""

    name: ClassVar[str] = "task.skipped"
    task: str
    reason: str  # "disabled capabilities: Console", "overridden", ...
    node: int | None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class TaskRetry(SweepEvent):
    """An apply failed with an API error and is tried again (the task's back-off)."""

    name: ClassVar[str] = "task.retry"
    task: str
    error: str  # the API error's kind
    message: str
    call: int  # the apply call that failed, from 1
    node: int | None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class TaskFailed(SweepEvent):
    """A task failed: its UpdateError ends its node."""

    name: ClassVar[str] = "task.failed"
    task: str
    reason: str
    message: str
    nested: str
    node: int | None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class TaskDependency(SweepEvent):
    """An install task waits for a Namespace or CRD that another node applies (cvo.runner.waits)."""

    name: ClassVar[str] = "task.dependency"
    task: str
    kind: str  # Namespace or CustomResourceDefinition
    dependency: str  # its name
    error: str  # the API error's kind that named it (NotFound, NoKindMatch)
    seen: str | None = None  # "watch": known missing from the watch, before any apply (left out when None)
    node: int | None

    @property
    def fields(self) -> dict[str, object]:
        out = {key: getattr(self, key) for key in _FIELDS[TaskDependency]}
        if self.seen is None:
            del out["seen"]
        return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class TaskWaiting(SweepEvent):
    """A ClusterOperator task waits for its operator: when the wait starts and when its reason changes."""

    name: ClassVar[str] = "task.waiting"
    task: str
    operator: str  # the ClusterOperator's name
    reason: str  # ClusterOperatorNotAvailable, ClusterOperatorUpdating, ...
    message: str
    nested: str
    node: int | None


# --- ClusterOperators --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class OperatorReady(SweepEvent):
    """A waited-on ClusterOperator is at the release (only after a wait)."""

    name: ClassVar[str] = "operator.ready"
    operator: str
    waited: float  # seconds since its wait started
    task: str
    node: int | None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class OperatorDegraded(SweepEvent):
    """Degraded at install: reported, not blocking."""

    name: ClassVar[str] = "operator.degraded"
    operator: str
    message: str
    nested: str
    task: str
    node: int | None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class OperatorDone(SweepEvent):
    """A ClusterOperator's task is done: what the update-duration records keep (cvo.runner.durations)."""

    name: ClassVar[str] = "operator.done"
    operator: str
    started: str  # RFC 3339: when the sweep first waited on it (or now, when it never waited)


# --- an upgrade's preconditions (cvo.runner.upgrade) -------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class PreconditionPassed(SweepEvent):
    """An upgrade's preconditions pass: its sweep starts."""

    name: ClassVar[str] = "precondition.passed"
    version: str  # the target
    warnings: str  # failures that do not block ("" when none)
    forced: bool  # --force


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class PreconditionBlocked(SweepEvent):
    """An upgrade refused, and again whenever the preconditions' summary changes."""

    name: ClassVar[str] = "precondition.blocked"
    version: str
    message: str  # the preconditions' summary
    blockers: list[str]  # the names of the risks behind Upgradeable=False ([] when only GiantHop/Rollback block)


# --- the controller (cvo.controller.loop) ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ControllerStarted(SweepEvent):
    """cvo run's controller loop begins."""

    name: ClassVar[str] = "controller.started"
    interval: float  # seconds between reconciles


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ControllerIdle(SweepEvent):
    """No release to sweep: the controller waits for a ClusterVersion spec."""

    name: ClassVar[str] = "controller.idle"
    message: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ControllerRetrieveFailed(SweepEvent):
    """The desired release could not be retrieved (the CVO's RetrievePayload failure)."""

    name: ClassVar[str] = "controller.retrieve_failed"
    reason: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ControllerError(SweepEvent):
    """The controller's loop failed an iteration (an API error): it tries again after a back-off."""

    name: ClassVar[str] = "controller.error"
    error: str
    retry_in: float  # seconds


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ControllerNext(SweepEvent):
    """A sweep ended: when the controller sweeps again."""

    name: ClassVar[str] = "controller.next"
    after: float  # seconds until the next sweep
    completed: bool  # whether the last one completed


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ControllerSweep(SweepEvent):
    """The controller starts a sweep (what it decided)."""

    name: ClassVar[str] = "controller.sweep"
    state: str  # Initializing, Updating, Reconciling (the CVO's payload states)
    version: str
    image: str
    what: str  # "updating 4.16.0 -> 4.17.0", "reconciling 4.16.0", ...


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ControllerRetarget(SweepEvent):
    """The ClusterVersion's spec changed under a sweep: it stops, and the controller decides again."""

    name: ClassVar[str] = "controller.retarget"
    what: str


# --- a scenario replay (cvo.scenario.replay) and a command's end -------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ScenarioStarted(SweepEvent):
    """A scenario replay begins."""

    name: ClassVar[str] = "scenario.started"
    scenario: str  # its name


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ScenarioAction(SweepEvent):
    """A scenario's timed action happens."""

    name: ClassVar[str] = "scenario.action"
    action: str  # install, upgrade, override, ...
    value: object  # the action's value as the scenario file gives it


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ScenarioOverrun(SweepEvent):
    """The replay's watchdog stopped a sweep that ran past the scenario's limit."""

    name: ClassVar[str] = "scenario.overrun"
    limit: float  # seconds after the last action
    version: str
    kind: str  # install, upgrade, reconcile ("" when none ran)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ScenarioFinished(SweepEvent):
    """A scenario replay ends."""

    name: ClassVar[str] = "scenario.finished"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ClusterRequests(SweepEvent):
    """What a command or replay asked of the cluster, per verb: written at its end."""

    name: ClassVar[str] = "cluster.requests"
    verbs: dict[str, int]  # verb -> requests


CATALOGUE: tuple[type[SweepEvent], ...] = (
    SweepStarted, SweepCompleted, SweepTimeout, SweepCancelled, SweepDeferred, SweepBlocked, StatusUnwritten,
    ConditionChanged, AttemptStarted, AttemptFailed, AttemptWoken, NodeStarted, NodeDone, NodeFailed,
    NodeBlocked, NodeError, TaskStarted, TaskApplied, TaskDone, TaskSkipped, TaskRetry, TaskFailed,
    TaskDependency, TaskWaiting, OperatorReady, OperatorDegraded, OperatorDone, PreconditionPassed,
    PreconditionBlocked, ControllerStarted, ControllerIdle, ControllerRetrieveFailed, ControllerError,
    ControllerNext, ControllerSweep, ControllerRetarget, ScenarioStarted, ScenarioAction, ScenarioOverrun,
    ScenarioFinished, ClusterRequests)
BY_NAME: dict[str, type[SweepEvent]] = {kind.name: kind for kind in CATALOGUE}
# each event's fields but the time, in declared (wire) order, and their declared types
_FIELDS: dict[type[SweepEvent], tuple[str, ...]] = {
    kind: tuple(f.name for f in dataclasses.fields(kind) if f.name != "time") for kind in CATALOGUE}
_TYPES: dict[type[SweepEvent], tuple[tuple[str, str], ...]] = {
    kind: tuple((f.name, str(f.type)) for f in dataclasses.fields(kind) if f.name != "time") for kind in CATALOGUE}


def field_names(kind: type[SweepEvent]) -> tuple[str, ...]:
    """An event's fields but its time, in declared (wire) order."""
    return _FIELDS[kind]


# --- reading an event from a file --------------------------------------------------------------------------

_MISSING = object()


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53


def _float(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 1e300


def _ints(value: object) -> object:
    return value if isinstance(value, list) and all(_int(v) for v in value) else _MISSING


def _texts(value: object) -> object:
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else _MISSING


def _counts(value: object) -> object:
    if not isinstance(value, dict):
        return _MISSING
    return {k: v for k, v in value.items() if isinstance(k, str) and _int(v)}


# declared type -> (the value read, or _MISSING when it is of the wrong type; the value when absent or wrong)
_READERS: dict[str, tuple[Callable[[object], object], Callable[[], object]]] = {
    "str": (lambda v: v if isinstance(v, str) else _MISSING, str),
    "str | None": (lambda v: v if isinstance(v, str) else _MISSING, lambda: None),
    "int": (lambda v: v if _int(v) else _MISSING, int),
    "int | None": (lambda v: v if _int(v) else _MISSING, lambda: None),
    "float": (lambda v: v if _float(v) else _MISSING, float),
    "float | None": (lambda v: v if _float(v) else _MISSING, lambda: None),
    "bool": (lambda v: v if isinstance(v, bool) else _MISSING, bool),
    "list[int] | None": (_ints, lambda: None),
    "list[str]": (_texts, list),
    "dict[str, int]": (_counts, dict),
    "object": (lambda v: v, lambda: None),
}


def decode(time: datetime, name: str, fields: dict[str, Any]) -> Event:
    """The event ``name`` with ``fields`` as a line of a file gives them (see the module's docstring)."""
    kind = BY_NAME.get(name)
    if kind is None:
        return UnknownEvent(time, name, fields)
    values: dict[str, object] = {}
    for key, declared in _TYPES[kind]:
        read, empty = _READERS[declared]
        value = fields.get(key, _MISSING)
        if value is not _MISSING:
            value = read(value)
        values[key] = empty() if value is _MISSING else value
    return kind(time, **values)
