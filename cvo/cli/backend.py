"""Choosing and opening the cluster a command talks to.

The default is the embedded simulated cluster, persisted to a state file so that ``cvo install``,
``cvo upgrade`` and ``cvo status`` see one cluster, with simulated operators running beside the
sweep on a virtual clock.

``--kubeconfig PATH`` or ``--context NAME`` chooses a real cluster instead (:mod:`cvo.cluster.kube`): the
kubeconfig is PATH, else ``$KUBECONFIG``, else ``~/.kube/config``, and the context NAME, else the
file's current context.  ``$KUBECONFIG`` alone does not switch backends: a user's kubeconfig must
not turn ``cvo install`` on the embedded cluster into an install on whatever cluster it points at.
A real cluster runs on the real clock (:func:`backend_clock`); its operators are real, so
``--state``, ``--speed`` and ``--operators`` (the embedded cluster's) are refused with it.

The flags are read once, into :class:`ClusterOptions` (:meth:`ClusterOptions.from_args`); everything here
takes those.

Every command runs within a :class:`~cvo.cluster.persist.Budget` (its ``--timeout``, or
:data:`DEFAULT_BUDGET`): connecting rides out an unreachable or failing API server until it runs
out, and :attr:`Backend.steady` is the cluster for the reads and writes around a sweep, which do
the same (:mod:`cvo.cluster.persist`).  A server still unreachable at the end is an
:class:`~cvo.cluster.persist.GaveUp` error (exit 1), not a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import orjson

from cvo.cli.common import CommandFailed, UsageError, terminal_width
from cvo.cli.common import add_saved_flags as add_saved_flags  # the commands' import of it
from cvo.cli.common import uses_saved_objects as uses_saved_objects
from cvo.clock import Clock, parse_rfc3339, run_real, run_virtual
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, ReadOnlyCluster
from cvo.cluster.persist import Budget, GaveUp, persist, steady
from cvo.payload.loader import Release

if TYPE_CHECKING:
    from cvo.cluster.saved.cluster import SavedCluster
    from cvo.operators.behaviour import Behaviours

T = TypeVar("T")
DEFAULT_BUDGET = 30.0  # seconds: how long commands without --timeout (status, override, …) ride out an outage


def default_state_path() -> Path:
    if env := os.environ.get("CVO_STATE"):
        return Path(env)
    base = Path(os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state"))
    path = base / "cvo" / "sim-cluster.db"
    legacy = base / "cvo" / "sim-cluster.json"  # cvo 0.1's default; migrated to SQLite when opened
    if not path.exists() and legacy.is_file():
        with contextlib.suppress(OSError):
            os.replace(legacy, path)
    return path


@dataclass
class ClusterOptions:
    """Which cluster a command talks to, and how: its cluster flags, read once (:meth:`from_args`)."""

    kubeconfig: str | None = None  # --kubeconfig PATH: a real cluster, from this kubeconfig
    context: str | None = None  # --context NAME: a real cluster, this context of the kubeconfig
    in_cluster: bool = False  # --in-cluster (cvo run): a real cluster, through the pod's service account
    state: Path | None = None  # --state FILE: the embedded cluster's store (None: the default; "none": in memory)
    speed: float | None = None  # --speed X: the embedded cluster's simulated seconds per real second (None: no wait)
    operators: Path | None = None  # --operators FILE: the embedded cluster's simulated operators' behaviours
    from_file: tuple[str, ...] = ()  # --from-file PATH (repeatable): saved objects as a read-only cluster
    now: str | None = None  # --now RFC3339: with --from-file, the moment the saved objects describe
    log_format: str = "text"  # --log-format: how the cluster line and hints are said on stderr
    # What the command has read or said already: the saved objects, and the cluster line (once per command)
    _saved: SavedCluster | None = field(default=None, init=False, repr=False, compare=False)
    _said_where: str = field(default="", init=False, repr=False, compare=False)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ClusterOptions:
        """The flags as parsed; a command lacks those it does not register (``--in-cluster``: ``cvo run``)."""
        flags = vars(args)
        return cls(kubeconfig=flags.get("kubeconfig"), context=flags.get("context"),
                   in_cluster=bool(flags.get("in_cluster")), state=flags.get("state"), speed=flags.get("speed"),
                   operators=flags.get("operators"), from_file=tuple(flags.get("from_file") or ()),
                   now=flags.get("now"), log_format=flags.get("log_format") or "text")

    @property
    def real(self) -> bool:
        """Whether the command talks to a real cluster (``--kubeconfig``, ``--context`` or ``--in-cluster``), on
        the real clock."""
        return bool(self.kubeconfig or self.context or self.in_cluster)

    @property
    def saved(self) -> bool:
        """Whether the cluster is saved objects (``--from-file``)."""
        return bool(self.from_file)


def check_speed(options: ClusterOptions) -> None:
    """``--speed`` of a command that runs the embedded cluster's clock: a positive number."""
    speed = options.speed
    if speed is not None and not (math.isfinite(speed) and speed > 0):
        raise UsageError(f"--speed: {speed:g} is not a positive number of simulated seconds per real second")


def add_backend_flags(parser: argparse.ArgumentParser, *, runs_the_clock: bool = True) -> None:
    """``--speed`` here, for a command that runs the embedded cluster's clock (``runs_the_clock``: a sweep, the
    controller, simulated operators; a command that only reads or writes an object does not offer it);
    ``--state``, ``--kubeconfig`` and ``--context`` are global flags (:func:`cvo.cli.common.add_global_flags`),
    accepted before or after the command."""
    if runs_the_clock:
        group = parser.add_argument_group("cluster")
        group.add_argument("--speed", type=float, default=None, metavar="X",
                           help="simulated seconds per real second (default: as fast as possible)")


def saved_cluster(options: ClusterOptions) -> SavedCluster:
    """The saved objects of ``--from-file``, read once per command (:class:`UsageError` for bad input)."""
    from cvo.cluster.saved.cluster import SavedCluster
    from cvo.payload.limits import InputError

    if options._saved is not None:
        return options._saved
    for flag, value in (("--kubeconfig", options.kubeconfig), ("--context", options.context), ("--state", options.state),
                        ("--speed", options.speed), ("--operators", options.operators)):
        if value is not None:
            raise UsageError(f"{flag} cannot be used with --from-file (saved objects are the cluster)")
    try:
        cluster = SavedCluster.from_paths(list(options.from_file))
    except InputError as err:
        raise UsageError(str(err)) from None
    options._saved = cluster
    return cluster


def saved_now(options: ClusterOptions, cluster: SavedCluster) -> datetime:
    """``--now``, else the moment the saved objects describe (:func:`cvo.status.upgrade_status.latest_transition`)."""
    from cvo.status.godur import from_ns, parse_time
    from cvo.status.upgrade_status import latest_transition

    if options.now is not None:
        parsed = parse_time(options.now)
        if parsed is None or "T" not in options.now:
            raise UsageError(f"--now: {options.now!r} is not an RFC 3339 time (e.g. 2024-05-01T12:00:00Z)")
        return from_ns(parsed)
    cv = next((o for r, o in cluster.objects.items() if (r.group, r.kind, r.name) ==
               ("config.openshift.io", "ClusterVersion", "version")), None)
    cos = [o for r, o in cluster.objects.items() if (r.group, r.kind) == ("config.openshift.io", "ClusterOperator")]
    latest = latest_transition(cv, cos)
    return from_ns(latest) if latest is not None else datetime.now(UTC)


def backend_clock(options: ClusterOptions) -> tuple[Clock, Callable[[Callable[[], Awaitable[T]]], T]]:
    """The clock and the event-loop runner for the command's cluster.

    A real cluster: the real clock and :func:`cvo.clock.run_real`.  The embedded cluster: a virtual
    clock that continues its state file's timeline, run by :func:`cvo.clock.run_virtual` at ``--speed``.
    """
    if options.saved:
        return Clock(saved_now(options, saved_cluster(options))), run_virtual
    if options.real:
        from cvo.clock import WallClock

        return WallClock(), run_real
    speed = options.speed
    return Clock(saved_time(state_path(options))), lambda main: run_virtual(main, speed=speed)


def add_behaviour_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--operators", type=Path, metavar="FILE",
                        help="YAML file of simulated operator behaviours (see docs/scenarios.md)")


def state_path(options: ClusterOptions) -> Path | None:
    """The embedded cluster's state file; ``None`` when it lives in memory, or for a real cluster."""
    if options.real:
        return None
    if options.state is not None and str(options.state) == "none":
        return None
    return options.state or default_state_path()


def saved_time(path: Path | None) -> datetime | None:
    """The embedded cluster's clock as its store last recorded it: the next command continues from it."""
    if path is None or not path.is_file():
        return None
    from cvo.cluster.embedded.store import peek_clock

    clock = peek_clock(path)
    if clock is not None:
        return datetime.fromtimestamp(clock, UTC)
    try:  # the JSON state of an earlier cvo (migrated when the cluster is opened)
        with open(path, "rb") as f:
            data = orjson.loads(f.read(64 * 1024 * 1024))
        return parse_rfc3339(data["clock_time"])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None  # opening the cluster reports a corrupt file properly


def load_behaviours(options: ClusterOptions) -> Behaviours:
    """The simulated operators' behaviours of ``--operators FILE`` (none given: the defaults)."""
    from cvo.operators.behaviour import Behaviours, read_behaviours  # a command that only reads skips them

    path = options.operators
    if path is None:
        return Behaviours()
    try:
        return read_behaviours(path)  # under cvo's input limits (cvo/payload/limits.py)
    except ValueError as err:
        raise UsageError(str(err)) from None


@dataclass
class Reader:
    """A cluster a command only reads: any backend, or saved objects (``--from-file``)."""

    cluster: ReadOnlyCluster
    clock: Clock
    description: str
    budget: Budget | None = None
    where: str = ""  # which cluster, for the ``cluster:`` line (:func:`announce`): short, no credentials

    @property
    def steady(self) -> ReadOnlyCluster:
        """The cluster retrying transient errors until the command's budget runs out."""
        return steady(self.cluster, self.budget)


@dataclass
class Backend(Reader):
    """A cluster a command may write to (never saved objects)."""

    cluster: Cluster
    simulator: object | None = None

    @property
    def steady(self) -> Cluster:
        """The cluster retrying transient errors until the command's budget runs out (reads and writes
        around a sweep; the sweep's own applies use :attr:`cluster`, with the CVO's back-off)."""
        return steady(self.cluster, self.budget)

    def register(self, release: Release) -> None:
        if self.simulator is not None:
            self.simulator.register_release(release)  # type: ignore[attr-defined]


def display_path(path: Path) -> str:
    """``path`` as a person reads it: relative to the working directory when inside it, ``~/…`` under the home
    directory, else absolute."""
    absolute = Path(os.path.abspath(path))
    for base, shown in ((Path.cwd(), ""), (Path.home(), "~")):
        try:
            rest = absolute.relative_to(base)
        except ValueError:
            continue
        return os.path.join(shown, rest) if shown else str(rest)
    return str(absolute)


def cluster_line(where: str, width: int | None) -> str:
    """``cluster: WHERE`` in at most ``width`` columns: a state file's path loses its leading directories
    (``…/dir/state.db``), anything else is cut at a word boundary with an ellipsis."""
    line = f"cluster: {where}"
    if width is None or len(line) <= width:
        return line
    head, sep, path = where.rpartition(" ")
    if sep and "/" in path and "://" not in path:  # a file's path, not a server's URL
        parts = path.split("/")
        for i in range(1, len(parts)):
            shorter = f"cluster: {head} …/{'/'.join(parts[i:])}"
            if len(shorter) <= width:
                return shorter
    from cvo.cli.progress import shorten

    return shorten(line, width)


def announce(options: ClusterOptions, where: str) -> None:
    """Say on stderr which cluster the command acts on, once, at its start: ``cluster: embedded, state FILE`` or
    ``cluster: context NAME, server URL`` (never credentials), fitted to a terminal's width; with
    ``--log-format json`` a JSON document (``"event": "cluster"``).  Once per command, even when it opens the
    cluster twice (an upgrade that finds a controller leading becomes its client)."""
    if options._said_where == where:
        return
    options._said_where = where
    if options.log_format == "json":
        print(orjson.dumps({"level": "info", "event": "cluster", "cluster": where,
                            "timestamp": datetime.now(UTC).isoformat()}).decode(), file=sys.stderr, flush=True)
        return
    print(cluster_line(where, terminal_width(sys.stderr)), file=sys.stderr, flush=True)


class NoCluster(CommandFailed):
    """The embedded cluster a read-only command asked for has never been created; exits 1."""


_KUBECONFIG_HINT = [True]


@asynccontextmanager
async def open_reader(options: ClusterOptions, clock: Clock, *, budget: Budget | None = None,
                      say_where: bool = False, snapshot: bool = False) -> AsyncIterator[Reader]:
    """The cluster a command only reads: the saved objects of ``--from-file``, or :func:`open_backend`'s
    (without creating an embedded cluster or starting simulated operators).  ``snapshot``: the command reads once
    and ends; the embedded cluster is read as it was opened (saved objects are anyway)."""
    if not options.saved:
        async with open_backend(options, clock, simulate_operators=False, create=False, budget=budget,
                                say_where=say_where, refused_at_once=True, snapshot=snapshot) as backend:
            yield backend
        return
    saved = saved_cluster(options)
    where = "saved objects from " + ", ".join(display_path(Path(p)) for p in options.from_file)
    if say_where:
        announce(options, where)
    yield Reader(saved, clock, saved.description, budget=budget if budget is not None else Budget.of(DEFAULT_BUDGET),
                 where=where)


@asynccontextmanager
async def open_backend(options: ClusterOptions, clock: Clock, behaviours: Behaviours | None = None,
                       simulate_operators: bool = True, *, create: bool = True,
                       sweep: str | None = None, budget: Budget | None = None,
                       say_where: bool = False, refused_at_once: bool = False,
                       snapshot: bool = False) -> AsyncIterator[Backend]:
    """The cluster the command talks to.

    ``say_where``: say which cluster on stderr (:func:`announce`) as soon as it is known, before connecting
    (every command that writes, and ``status``).

    ``create=False``: a command that only reads (or only amends what is there) does not create an
    embedded cluster; :class:`NoCluster` when there is none.  ``sweep``: what the command is about to
    run (``install 4.16.0``); on the embedded cluster only one sweep runs at a time
    (:mod:`cvo.cluster.embedded.sweep_lock`), and a second one is refused with who holds it.  ``budget`` (default
    :data:`DEFAULT_BUDGET` from now) bounds the retries of a real cluster's transient errors.  ``refused_at_once``
    (the commands that only read, as kubectl): a server that refuses the first connection fails the command at once
    (nothing listens there: a wrong address, or a server that is down) instead of retrying for the budget.
    """
    if budget is None:
        budget = Budget.of(DEFAULT_BUDGET)
    if options.saved:  # read-only: open_reader
        raise UsageError("--from-file: saved objects are read-only; only commands that read a cluster "
                         "(status, upgrade status, upgrade --dry-run, report, plan --recorded) can use them")
    if options.real:
        async with _open_kube(options, clock, simulate_operators, budget, say_where, refused_at_once) as backend:
            yield backend
        return
    from cvo.cluster.embedded.checked_rows import CheckedRows
    from cvo.cluster.embedded.server import SimCluster
    from cvo.cluster.embedded.store import StateError
    from cvo.cluster.embedded.sweep_lock import SweepLock, SweepLockHeld
    from cvo.payload.cache import default_cache_dir

    if os.environ.get("KUBECONFIG") and _KUBECONFIG_HINT:
        _KUBECONFIG_HINT.clear()  # once per process
        hint = "KUBECONFIG is set but cvo uses the embedded cluster unless --kubeconfig or --context is given"
        if options.log_format == "json":
            print(orjson.dumps({"level": "warning", "event": "hint", "message": hint}).decode(), file=sys.stderr)
        else:
            print(f"hint: {hint}", file=sys.stderr)
    path = state_path(options)
    if path is not None and not create and (not path.exists() or (path.is_file() and path.stat().st_size == 0)):
        raise NoCluster(f"no cluster has been installed yet: the embedded cluster's state {path} does not exist "
                        f"(cvo install RELEASE_DIR creates it; --state chooses another)")
    lock: SweepLock | None = None
    if path is not None and sweep is not None:
        try:
            lock = SweepLock.acquire(path, sweep)
        except SweepLockHeld as err:
            if err.controller:
                assert err.record is not None
                raise ClusterBusy(f"the controller {err.record.get('what')} (pid {err.record.get('pid')}) leads the "
                                  f"embedded cluster {path}: it runs the sweeps; ask it for an update with "
                                  f"'cvo upgrade --to DIR' (or stop it)",
                                  controller=controller_name(str(err.record.get("what", "")))) from None
            raise ClusterBusy(str(err)) from None
        except OSError as err:
            raise UsageError(f"{path}: cannot lock the state for a sweep: {err.strerror}") from None
    where = f"embedded, state {display_path(path)}" if path else "embedded, in memory (--state none)"
    if say_where:
        announce(options, where)
    try:
        try:
            cluster = SimCluster(clock=clock, path=path, group_commit=True,
                                 checked_rows=CheckedRows(default_cache_dir(), path) if path is not None else None,
                                 snapshot_reads=snapshot)
        except StateError as err:
            raise UsageError(str(err)) from None
        description = f"embedded simulated cluster (state: {path})" if path else "embedded simulated cluster (in memory)"
        simulator = None
        if simulate_operators:  # imported only here: a command that only reads does not pay for it
            from cvo.operators.simulated import OperatorSimulator

            simulator = OperatorSimulator(cluster, clock, behaviours)
        backend = Backend(cluster, clock, description, budget=budget, where=where, simulator=simulator)
        try:
            yield backend
        finally:
            if simulator is not None:
                await simulator.stop()
            await cluster.close()
    finally:
        if lock is not None:
            lock.release()


class ClusterBusy(CommandFailed):
    """Another cvo process is running a sweep on the same embedded cluster; exits 1.

    ``controller``: the identity of the leading ``cvo run`` that holds it, if it is one (``""`` otherwise).
    """

    def __init__(self, message: str, controller: str = "") -> None:
        super().__init__(message)
        self.controller = controller


def controller_lock_record(identity: str) -> str:
    """What a leading ``cvo run`` writes in the embedded cluster's sweep lock (:func:`controller_name` reads it)."""
    from cvo.cluster.embedded.sweep_lock import CONTROLLER

    return f"{CONTROLLER} (controller {identity})"


def controller_name(what: str) -> str:
    prefix = "cvo run (controller "
    return what[len(prefix):-1] if what.startswith(prefix) and what.endswith(")") else what


def _refuse_simulator_flags(options: ClusterOptions, simulate_operators: bool) -> None:
    which = "--in-cluster" if options.in_cluster else "--kubeconfig" if options.kubeconfig else "--context"
    if options.state is not None:
        raise UsageError(f"--state is the embedded cluster's state file; it cannot be used with {which}")
    if options.speed is not None:
        raise UsageError(f"--speed sets the embedded cluster's virtual clock; a real cluster ({which}) runs in real time")
    if simulate_operators and options.operators is not None:
        raise UsageError(f"--operators configures the embedded cluster's simulated operators; with {which} the "
                         "cluster's own operators report (or run 'cvo sim-operators' against it)")


@asynccontextmanager
async def _open_kube(options: ClusterOptions, clock: Clock, simulate_operators: bool,
                     budget: Budget, say_where: bool, refused_at_once: bool = False) -> AsyncIterator[Backend]:
    """Connect (``GET /version`` and discovery), riding out an unreachable or failing server within ``budget``.

    A server that is still unreachable when the budget runs out raises the last error
    (:class:`~cvo.cluster.persist.GaveUp`: exit 1); credentials it rejects, or TLS it cannot
    agree on, are the kubeconfig's problem: a usage error at once.
    """
    from cvo.cluster.kube import KubeCluster, KubeconfigError

    _refuse_simulator_flags(options, simulate_operators)
    try:
        if options.in_cluster:
            cluster = KubeCluster.in_cluster()
        else:
            cluster = KubeCluster.from_kubeconfig(options.kubeconfig, options.context)
    except KubeconfigError as err:
        raise UsageError(str(err)) from None
    if say_where:
        announce(options, cluster.where)
    try:
        connected = False
        if refused_at_once:
            try:
                await cluster.connect(refused_at_once=True)
                connected = True
            except ApiError as err:
                if err.refused:  # kubectl's words
                    raise CommandFailed(f"the connection to the server {cluster.server} was refused - did you specify "
                                        f"the right host or port? ({cluster.description})") from None
        try:
            if not connected:
                await persist(cluster.connect, budget, f"connecting to {cluster.description}")
        except GaveUp:
            raise
        except ApiError as err:
            raise UsageError(f"cannot use {cluster.description}: {err}") from None
        try:
            yield Backend(cluster, clock, cluster.description, budget=budget, where=cluster.where)
        except ApiError as err:
            if err.kind is ApiErrorKind.NO_KIND_MATCH and err.ref is not None and err.ref.group == "config.openshift.io":
                raise UsageError(f"{err}: the cluster lacks the CRDs cvo writes (ClusterVersion, ClusterOperator, "
                                 "OperatorCondition); run 'cvo bootstrap' with the same --kubeconfig/--context "
                                 "first") from None
            raise
    finally:
        await cluster.close()


