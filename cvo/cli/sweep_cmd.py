"""``cvo install``, ``cvo upgrade`` and ``cvo reconcile``: sweep a release into the cluster.

``--timeout`` is the command's budget, from its start: connecting, the reads before the sweep and
the sweep itself share it, and everything around the sweep rides out a failing server within it
(:mod:`cvo.cluster.persist`).  SIGINT and SIGTERM cancel the sweep cleanly (:mod:`cvo.cli.signals`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cvo.cli.backend import (
    Backend,
    ClusterBusy,
    ClusterOptions,
    add_backend_flags,
    add_behaviour_flags,
    backend_clock,
    check_speed,
    load_behaviours,
    open_backend,
    open_reader,
)
from cvo.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    CommandFailed,
    OutputOptions,
    PayloadOptions,
    UsageError,
    add_payload_flags,
    add_saved_flags,
    describe_api_error,
    load,
    payload_options,
    print_error,
    terminal_width,
)
from cvo.cli.images import ImageFlags
from cvo.cli.output import STRUCTURED, TEXT, add_no_headers_flag, add_output_flag, dump, is_structured
from cvo.cli.signals import cancelled_by_signals
from cvo.clock import Clock, to_rfc3339
from cvo.cluster.api import ApiError, ReadOnlyCluster, cv_ref
from cvo.cluster.persist import Budget
from cvo.log import configure, get_logger
from cvo.operators.behaviour import parse_duration
from cvo.payload.fields import dig
from cvo.payload.filters import LoadFilter
from cvo.payload.loader import LoadError, Release, load_release

if TYPE_CHECKING:  # the runner is imported when a sweep runs: 'cvo upgrade' listing the updates never loads it
    from cvo.cli.gates import Unblock
    from cvo.cli.progress import LiveDisplay
    from cvo.report.events_io import EventsWriter
    from cvo.runner.decide import Plan, Runner
    from cvo.runner.events import Progress, Reporter
    from cvo.runner.retrieve import Retriever
    from cvo.runner.sweep import SweepOptions, SweepResult
    from cvo.updates.model import Risk

    MakeRunner = Callable[[Reporter, SweepOptions], Runner]
    Outlook = Callable[[Callable[[], Progress]], Any]  # the live display's forecast, given the sweep's progress

_EXAMPLES = {"install": "cvo install DIR", "upgrade": "cvo upgrade --to DIR", "reconcile": "cvo reconcile"}


def _add_sweep_flags(parser: argparse.ArgumentParser) -> None:
    add_backend_flags(parser)
    add_behaviour_flags(parser)
    parser.add_argument("--timeout", default="2h", metavar="DURATION",
                        help="give up after this long on the sweep's clock, counted from the start: connecting "
                             "and retries of a failing server included (default 2h; e.g. 90m, 1h30m; 0: never)")
    parser.add_argument("--interval", default="3m", metavar="DURATION",
                        help="reconcile interval: apply timeouts and back-off derive from it (default 3m; at least 1s)")
    name = parser.prog.split()[-1]
    command = _EXAMPLES.get(name, parser.prog)
    if name == "upgrade":
        add_output_flag(parser, (TEXT, *STRUCTURED), "cvo upgrade --to DIR --dry-run -o json | jq .blocked",
                        what="the final report (progress goes to stderr), with --dry-run every gate, without a "
                             "target the updates")
    else:
        add_output_flag(parser, (TEXT, *STRUCTURED), f"{command} -o json | jq .completed",
                        what="the final report (progress goes to stderr)")
    add_no_headers_flag(parser, f"{command} --no-headers")
    parser.add_argument("--events", type=Path, default=None, metavar="FILE",
                        help="write every event of the sweep to FILE as JSON lines (for cvo report; docs/report.md)")


INSTALL_DESCRIPTION = (
    "Install RELEASE_DIR into a cluster that has no release yet, and wait until every ClusterOperator is "
    "Available at the release's version. An install applies everything at once (no run-level order), as the "
    "CVO does on a new cluster. Installing the release the cluster already runs changes nothing (exit 0); "
    "another release is an upgrade's job."
)
INSTALL_EXAMPLES = """\
Examples:
  # Install into the embedded cluster (kept in ~/.local/state/cvo/sim-cluster.db)
  cvo install payloads/demo-4.16.0

  # A throwaway cluster in memory, with the demo's simulated operators, 600 times faster than real time
  cvo install payloads/demo-4.16.0 --state none --operators payloads/demo-operators.yaml --speed 600

  # Into a kind cluster (after 'cvo bootstrap --context kind-kind')
  cvo install payloads/demo-4.16.0 --context kind-kind

  # Keep every event of the install, for 'cvo report'
  cvo install payloads/demo-4.16.0 --events install.jsonl
"""
UPGRADE_DESCRIPTION = (
    "Without a target: the cluster's update state and the updates its channel offers, as 'oc adm upgrade' "
    "prints them (--include-not-recommended: also those with known issues). With --to VERSION (one of those "
    "updates), --to-latest, --to-image IMAGE or --to DIR: upgrade the cluster to that release. A version or "
    "image outside the cluster's updates is refused as oc refuses it (--allow-not-recommended, "
    "--allow-explicit-upgrade). The gates are checked first, as the CVO checks them: an operator can hold back "
    "a minor update (Upgradeable=False), and --dry-run shows every gate without changing anything. Then the new "
    "release is applied run level by run level until every ClusterOperator reports its new version. A held-back "
    "upgrade waits, and goes ahead by itself when the operator or an admin (cvo override) lets it through. When "
    "'cvo run' is running, the command asks it for the update and follows it instead. Upgrading to the release "
    "the cluster already runs changes nothing (exit 0)."
)
UPGRADE_EXAMPLES = """\
Examples:
  # What can the cluster update to? (set a channel first: cvo upgrade channel stable-4.16)
  cvo upgrade
  cvo upgrade --include-not-recommended

  # Upgrade to one of the recommended updates, by version, or to the newest of them
  cvo upgrade --to 4.16.3
  cvo upgrade --to-latest

  # An update with known issues, its risks accepted
  cvo upgrade --to 4.17.0 --allow-not-recommended

  # Upgrade the embedded cluster to the release in a directory (cvo's own, outside any graph)
  cvo upgrade --to payloads/demo-4.16.3

  # Would a minor update start? (exit 1 if not, saying who holds it back and how to override)
  cvo upgrade --to payloads/demo-4.17.0 --dry-run

  # Go ahead despite what holds it back (recorded in the cluster's history)
  cvo upgrade --to payloads/demo-4.17.0 --force

  # Ask the running controller ('cvo run') for the update, and return at once
  cvo upgrade --to payloads/demo-4.17.0 --no-wait

  # The current release's directory has moved since it was installed: say where it is now
  cvo upgrade --to payloads/demo-4.16.3 --from /srv/releases/4.16.0

  # The updates, or the gates, from objects saved from a cluster ('oc get clusterversion,co -o yaml')
  cvo upgrade --from-file cluster.yaml
  cvo upgrade --to payloads/demo-4.17.0 --dry-run --from-file cluster.yaml

  # Where the update is and when it will end (a command of its own)
  cvo upgrade status
"""
RECONCILE_DESCRIPTION = (
    "Apply the release the cluster runs once more, putting back whatever drifted from it (an edited "
    "ConfigMap, a deleted Deployment), as the CVO re-applies its release every few minutes: in a shuffled "
    "order, two at a time. It refuses another release: moving to one is 'cvo upgrade'."
)
RECONCILE_EXAMPLES = """\
Examples:
  # Put back what drifted on the embedded cluster
  cvo reconcile

  # The release's directory has moved since it was applied: say where it is now
  cvo reconcile --release /srv/releases/4.16.0

  # On a kind cluster, keeping the events for 'cvo report'
  cvo reconcile --context kind-kind --events reconcile.jsonl
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    install = sub.add_parser("install", help="install a release into an empty cluster and wait until it is done",
                             description=INSTALL_DESCRIPTION, epilog=INSTALL_EXAMPLES)
    add_payload_flags(install)
    _add_sweep_flags(install)
    install.set_defaults(func=run_install)

    upgrade = sub.add_parser("upgrade", help="list the cluster's updates, or upgrade to --to VERSION|DIR",
                             description=UPGRADE_DESCRIPTION, epilog=UPGRADE_EXAMPLES)
    target = upgrade.add_mutually_exclusive_group()
    target.add_argument("--to", dest="release_dir", metavar="VERSION|RELEASE",
                        help="the release to upgrade to: a version among the cluster's updates (as 'oc adm upgrade "
                             "--to'), a release directory or a release image. Without --to, --to-image or "
                             "--to-latest, 'cvo upgrade' lists the updates, as 'oc adm upgrade' does")
    target.add_argument("--to-image", dest="to_image", metavar="IMAGE",
                        help="the release image to upgrade to, as 'oc adm upgrade --to-image': by digest "
                             "(REGISTRY/REPO@sha256:…, oci:DIR[:TAG]); a tag only with --force. The cluster records "
                             "the digest it was pulled at")
    target.add_argument("--to-latest", action="store_true",
                        help="upgrade to the newest of the cluster's available updates (with --allow-not-recommended: "
                             "of its conditional updates too)")
    upgrade.add_argument("--allow-explicit-upgrade", action="store_true",
                         help="upgrade to an image that is not among the cluster's available updates")
    upgrade.add_argument("--allow-not-recommended", action="store_true",
                         help="upgrade to a conditional update that is not recommended for this cluster (its risks "
                              "are printed as a warning)")
    upgrade.add_argument("--allow-upgrade-with-warnings", action="store_true",
                         help="request the update although the cluster is failing or already updating (oc's "
                              "client-side guards; with --to VERSION, --to-image or --to-latest)")
    upgrade.add_argument("--clear", action="store_true",
                         help="withdraw a requested update (spec.desiredUpdate) that has not started, as 'oc adm "
                              "upgrade --clear'")
    upgrade.add_argument("--include-not-recommended", action="store_true",
                         help="without a target: also list the updates that are not recommended, with their reasons")
    upgrade.add_argument("--from", dest="from_dir", type=Path, default=None, metavar="RELEASE_DIR",
                         help="where the cluster's current release is now, if its directory has moved since it was "
                              "applied (default: the directory the cluster recorded)")
    upgrade.add_argument("--force", action="store_true",
                         help="go ahead despite blocking preconditions (recorded on the history entry)")
    upgrade.add_argument("--no-wait", action="store_true",
                         help="set spec.desiredUpdate and return at once: a running controller (cvo run) applies "
                              "it ('cvo status -w' follows it); without one, the next 'cvo run' does")
    upgrade.add_argument("--dry-run", action="store_true",
                         help="print every gate (pass or blocked, by whom, why, how to override) and exit: 0 if "
                              "the upgrade would start, 1 if it is blocked")
    from cvo.cli.diff_cmd import add_diff_flag

    add_diff_flag(upgrade)  # with --dry-run only
    _add_selection(upgrade)
    _add_sweep_flags(upgrade)
    add_saved_flags(upgrade)  # with --dry-run only
    upgrade.set_defaults(func=run_upgrade)

    reconcile = sub.add_parser("reconcile", help="re-apply the current release once, repairing drift",
                               description=RECONCILE_DESCRIPTION, epilog=RECONCILE_EXAMPLES)
    reconcile.add_argument("--release", dest="release_dir", default=None, metavar="RELEASE",
                           help="the current release's directory or image (default: from the ClusterVersion's image)")
    _add_selection(reconcile)
    _add_sweep_flags(reconcile)
    reconcile.set_defaults(func=run_reconcile)


def _add_selection(parser: argparse.ArgumentParser) -> None:
    """The payload flags without the positional RELEASE_DIR (upgrade and reconcile take it otherwise)."""
    scratch = argparse.ArgumentParser(add_help=False)
    add_payload_flags(scratch)
    for action in scratch._actions:
        if action.dest == "release_dir" or isinstance(action, argparse._HelpAction):
            continue
        parser._add_action(action)


# Apply timeouts and back-off derive from the interval (interval/16 …): a shorter one would spin.
MIN_INTERVAL = 1.0


@dataclass(frozen=True)
class SweepFlags:
    """How a sweep command runs: its budget, its interval, where its events go."""

    timeout: float | None  # --timeout: the command's budget from its start, on the sweep's clock; None: never
    timeout_text: str  # --timeout as given, for the messages that name it
    interval: float  # --interval: the reconcile interval; apply timeouts and back-off derive from it
    events: Path | None  # --events FILE: every event of the sweep as JSON lines; None: not asked, or --dry-run


@dataclass(frozen=True)
class SweepCommand:
    """Everything ``cvo install``, ``upgrade`` or ``reconcile`` was told, parsed once (:meth:`from_args`)."""

    cluster: ClusterOptions  # which cluster, and how to reach it
    payload: PayloadOptions  # which release, read how
    sweep: SweepFlags  # how the sweep runs
    output: OutputOptions  # how its progress and report are printed
    images: ImageFlags = field(default_factory=ImageFlags)  # how release images are pulled (the registry flags; --timeout bounds a pull)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SweepCommand:
        """The flags, checked before anything is read (a :class:`UsageError` for a bad one)."""
        try:
            timeout = parse_duration(args.timeout, "--timeout")
            interval = parse_duration(args.interval, "--interval", minimum=MIN_INTERVAL)
        except ValueError as err:
            raise UsageError(str(err)) from None
        cluster = ClusterOptions.from_args(args)
        check_speed(cluster)
        payload = payload_options(args)
        events = None if vars(args).get("dry_run") else args.events
        return cls(cluster, payload, SweepFlags(timeout or None, args.timeout, interval, events),
                   OutputOptions.from_args(args), ImageFlags.from_args(args, timeout=timeout or None))

    def sweep_options(self) -> SweepOptions:
        from cvo.runner.sweep import SweepOptions

        return SweepOptions(interval=self.sweep.interval, timeout=self.sweep.timeout,
                            capabilities=self.payload.apply_filter)


@dataclass(frozen=True)
class UpgradeFlags:
    """What ``cvo upgrade`` asks for beside its target (``--to``)."""

    force: bool  # --force: go ahead despite blocking preconditions (recorded on the history entry)
    dry_run: bool  # --dry-run: print every gate and exit
    no_wait: bool  # --no-wait: set spec.desiredUpdate and return
    from_dir: Path | None  # --from DIR: where the cluster's current release is now; None: where it recorded
    allow_explicit: bool = False  # --allow-explicit-upgrade: an image that is not among the available updates
    from_graph: bool = False  # --to VERSION, --to-latest: the target was taken from the cluster's updates
    allow_not_recommended: bool = False  # --allow-not-recommended: a conditional update that is not recommended
    allow_with_warnings: bool = False  # --allow-upgrade-with-warnings: past oc's client-side guards
    diff: bool = False  # --diff (with --dry-run): also what the upgrade would change (cvo diff)
    to: tuple[str, ...] = ()  # the target as given (--to VERSION|DIR, --to-image IMAGE, --to-latest), for hints

    @classmethod
    def from_args(cls, args: argparse.Namespace, from_graph: bool = False, to: tuple[str, ...] = ()) -> UpgradeFlags:
        """The flags; ``--to-image`` (or ``--to`` with a pull spec) checked as ``oc adm upgrade`` checks it, before
        anything is pulled (an image of the cluster's updates is taken as the graph names it)."""
        from cvo.cli.images import is_image

        if args.to_image:
            args.release_dir = args.to_image
        if isinstance(args.release_dir, str) and is_image(args.release_dir) and not from_graph:
            _check_to_image(args.release_dir, args.force)
        if args.diff and not args.dry_run:
            raise UsageError("--diff: with --dry-run only (what the upgrade would change, before it starts)")
        return cls(args.force, args.dry_run, args.no_wait, args.from_dir, args.allow_explicit_upgrade, from_graph,
                   args.allow_not_recommended, args.allow_upgrade_with_warnings, args.diff, to)


def _check_to_image(spec: str, force: bool) -> None:
    """A by-tag pull spec only with ``--force`` (openshift/oc pkg/cli/admin/upgrade/upgrade.go ``Complete``)."""
    from cvo.images.errors import ImageError
    from cvo.images.reference import parse_image

    try:
        ref = parse_image(spec)
    except ImageError as err:
        raise UsageError(f"--to-image must be a valid image pull spec: {err.message}") from None
    if ref.digest:
        return
    if not force:
        raise UsageError("--to-image must be a by-digest pull spec, unless --force is also set, because release "
                         "images that are not accessed via digest cannot be verified by the cluster.  Even when "
                         "--force is set, using tags is not recommended, although we continue to allow it for "
                         "backwards compatibility")
    print("warning: Using by-tag pull specs is dangerous, and while we still allow it in combination with --force "
          "for backward compatibility, it would be much safer to pass a by-digest pull spec instead",
          file=sys.stderr)


def check_explicit(cv: dict[str, Any] | None, spec: str, image: str, upgrade: UpgradeFlags) -> None:
    """``--to-image``: the image among ``status.availableUpdates`` (by image or digest), a not-recommended
    conditional update with ``--allow-not-recommended``, or any image with ``--allow-explicit-upgrade``; then
    oc's client-side guards (:func:`cvo.status.upgrade_target.resolve`).  A target taken from the graph
    (``--to VERSION``, ``--to-latest``) was checked when it was resolved."""
    from cvo.cli.upgrade_list_cmd import checked_target
    from cvo.status.upgrade_target import Request

    if not upgrade.from_graph:
        checked_target(cv, Request(to_image=spec, allow_not_recommended=upgrade.allow_not_recommended,
                                   allow_explicit=upgrade.allow_explicit, allow_with_warnings=upgrade.allow_with_warnings,
                                   force=upgrade.force, pulled=image))


def cluster_flags(options: ClusterOptions | None) -> tuple[str, ...]:
    """The flags that name the command's cluster (``--state``, ``--kubeconfig``, ``--context``), for a printed
    command that must reach the same cluster; none for saved objects (``--from-file``: no cluster to write)."""
    if options is None or options.saved:
        return ()
    flags: list[str] = []
    for flag, value in (("--kubeconfig", options.kubeconfig), ("--context", options.context),
                        ("--state", options.state)):
        if value is not None:
            flags += [flag, str(value)]
    return tuple(flags)


def _loader(payload: PayloadOptions) -> Callable[[Path, str | None], Release]:
    """Reads a release the cluster names (its directory, the image it is known by), with the command's filters."""
    def load_dir(directory: Path, image: str | None) -> Release:
        try:
            return load_release(directory, release_image=image, load_filter=payload.load_filter)
        except LoadError as err:
            raise UsageError("\n".join(err.errors)) from None
    return load_dir


def _runs(plan: Plan, backend: Backend, *, write_spec: bool = False) -> MakeRunner:
    """What runs ``plan`` on ``backend``, given the sweep's reporter and options (:func:`runner_for`)."""
    from cvo.runner.decide import runner_for

    return lambda reporter, options: runner_for(plan, backend.cluster, reporter, backend.clock, options,
                                                backend.register, write_spec=write_spec)


class ControllerLeads(Exception):
    """A controller leads the cluster: the command becomes its client (``holder`` names it)."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


def _sweep(cmd: SweepCommand, prepare: Callable[[Backend], Awaitable[tuple[str, MakeRunner] | int]],
           what: str, *, create: bool = False,
           forecast_of: Callable[[Backend], Awaitable[Outlook | None]] | None = None,
           client: Callable[[str], int] | None = None, unblock: Callable[[str], Unblock] | None = None) -> int:
    """Open the cluster, let ``prepare`` pick what runs, run it with progress, report.

    ``what`` names the sweep for the embedded cluster's sweep lock; only ``install`` creates a cluster.  With ``client``, a command that finds a controller leading becomes its client
    instead of sweeping: ``prepare`` raises :class:`ControllerLeads` when the Lease is held on a real cluster; on
    the embedded one the sweep lock held by ``cvo run`` says so (:class:`ClusterBusy` from a controller).
    ``client(holder)`` then does the command's work through the controller and returns the exit code.
    ``unblock``: how the live display names the way past each blocker of an upgrade (:func:`cvo.cli.gates.unblock`).
    """
    from cvo.cli.progress import LiveDisplay, LogReporter, wants_live_display
    from cvo.runner import start
    from cvo.runner.events import Fanout, Progress

    behaviours = load_behaviours(cmd.cluster)
    output = cmd.output
    if not wants_live_display(output.log_format):  # without a live display, progress is the info log
        configure(output.log_format, max(output.verbose, 1), details=output.verbose >= 1)  # detail lines at -v
    clock, run_loop = backend_clock(cmd.cluster)
    started = time.perf_counter()
    outcome: dict[str, Any] = {}
    events = _events_writer(cmd.sweep.events)

    async def sweep() -> int:
        budget = Budget.of(cmd.sweep.timeout)
        async with open_backend(cmd.cluster, clock, behaviours, create=create, sweep=what, budget=budget,
                                say_where=True) as backend:
            try:
                prepared = await prepare(backend)
            except start.Refused as err:
                raise UsageError(str(err)) from None
            except start.NotInstalled as err:
                raise CommandFailed(str(err)) from None
            if isinstance(prepared, int):
                return prepared
            title, make_runner = prepared
            reporters: list[Any] = [LogReporter(verbose=output.verbose >= 1)]
            if events is not None:
                reporters.append(events)
            live: LiveDisplay | None = None
            runner: Runner | None = None
            if wants_live_display(output.log_format):
                progress = lambda: runner.progress if runner is not None else Progress()  # noqa: E731
                outlook = await forecast_of(backend) if forecast_of is not None else None
                live = LiveDisplay(progress, clock.now, title, outlook and outlook(progress),
                                   blocked=lambda: runner.blocked if runner is not None else "",
                                   unblock=unblock, simulated=not cmd.cluster.real)
                reporters.append(live)
                if outlook is not None:
                    reporters.append(live.forecast)
            remaining = budget.remaining()
            runner = make_runner(Fanout(*reporters), dataclasses.replace(
                cmd.sweep_options(), timeout=None if remaining is None else max(0.0, remaining), budget=budget))
            if backend.simulator is not None:
                await backend.simulator.start()  # type: ignore[attr-defined]
            # the live forecast looks at the pools and their nodes beside the sweep (cvo/status/node_forecast.py)
            follow = getattr(live.forecast, "follow_machines", None) if live is not None else None
            machines = asyncio.create_task(follow(backend.steady, clock)) if follow is not None else None
            try:
                if live is not None:
                    with live:
                        result = await runner.run()
                else:
                    result = await runner.run()
            finally:
                if machines is not None:
                    machines.cancel()
                    await asyncio.gather(machines, return_exceptions=True)
            outcome["result"] = result
            if events is not None:
                _record_requests(events, backend, clock)
            outcome["cos"] = await backend.steady.list("config.openshift.io", "ClusterOperator")
            return EXIT_OK if result.ok else EXIT_FAILED

    async def main() -> int:
        return await cancelled_by_signals(sweep)

    try:
        code = run_loop(main)
    except ClusterBusy as busy:
        if client is None or not busy.controller:
            raise
        return client(busy.controller)
    except ControllerLeads as leads:
        assert client is not None
        return client(leads.holder)
    except ApiError as err:
        print_error(describe_api_error(err))
        return EXIT_FAILED
    finally:
        if events is not None:
            events.close()
    result: SweepResult | None = outcome.get("result")
    if result is not None:
        _report(output, result, outcome.get("cos", []), time.perf_counter() - started)
    return code


def _events_writer(path: Path | None) -> EventsWriter | None:
    """``--events FILE``, created before anything runs: a path that cannot be written is a usage error."""
    if path is None:
        return None
    from cvo.report.events_io import EventsError, EventsWriter

    try:
        return EventsWriter(path).open()
    except EventsError as err:
        raise UsageError(str(err)) from None


def _record_requests(events: EventsWriter, backend: Backend, clock: Clock) -> None:
    """The requests the command sent, per verb, when the backend counts them (both do): ``cluster.requests``."""
    from cvo.cluster.intercept import request_stats
    from cvo.runner.sweep_events import ClusterRequests

    counted = request_stats(backend.cluster)
    verbs = counted.stats.verbs if counted is not None else None
    if verbs:
        events.emit(ClusterRequests(clock.now(), verbs={str(k): int(v) for k, v in verbs.items()}))


def _say(text: str) -> None:
    """A line of the final report on stdout; on a terminal, wrapped at word boundaries to its width."""
    import textwrap

    width = terminal_width(sys.stdout)
    if width is not None:
        text = "\n".join(textwrap.fill(line, width, subsequent_indent="  ", break_on_hyphens=False)
                          for line in text.split("\n"))
    print(text)


def _report(output: OutputOptions, result: SweepResult, cos: list[dict[str, Any]], wall: float) -> None:
    from cvo.cli.progress import format_duration
    from cvo.status.text import write_status_text

    simulated = result.finished - result.started
    if is_structured(output.format):
        doc = {"ok": result.ok, "completed": result.completed, "attempts": result.attempts,
               "message": result.message, "done": result.done, "total": result.total,
               "simulatedSeconds": simulated.total_seconds(), "wallSeconds": round(wall, 3),
               "lastProgress": to_rfc3339(result.last_progress) if result.last_progress else None,
               "clusterVersion": result.cluster_version, "clusterOperators": cos}
        sys.stdout.write(dump(doc, output.format))
    else:
        write_status_text(result.cluster_version, cos, result.finished, sys.stdout, headers=output.headers,
                          width=terminal_width(sys.stdout))
        if result.blocked:
            _say(f"\nblocked: the upgrade did not start ({wall:.2f}s wall)")
        else:
            verdict = "completed" if result.completed else "did not complete"
            _say(f"\n{verdict}: {result.done}/{result.total} tasks, {result.attempts} attempt(s), "
                 f"{format_duration(simulated)} on the cluster's clock, {wall:.2f}s wall")
    if not result.ok:
        print_error(result.message or "the sweep failed")
        if result.failure is not None and result.failure.nested:
            from cvo.log import error_line, log_format

            for line in result.failure.nested.splitlines():
                print(error_line(f"detail: {line}") if log_format() == "json" else f"  detail: {line}",
                      file=sys.stderr)


def _already_there_message(release: Release) -> str:
    return f"the cluster already runs {release.version}: nothing to do ('cvo reconcile' re-applies it)"


def _already_there(output: OutputOptions, release: Release) -> int:
    """``install`` or ``upgrade --to`` the release the cluster runs: nothing to do, said the same way, exit 0
    (with ``-o json|yaml`` a document says it too, so that stdout always parses)."""
    message = _already_there_message(release)
    print(message, file=sys.stderr)
    _no_sweep_document(output, completed=True, message=message, version=release.version, image=release.image)
    return EXIT_OK


def _no_sweep_document(output: OutputOptions, completed: bool, message: str, version: str, image: str) -> None:
    """The document of a command that ran no sweep (nothing to do, or ``--no-wait``): ``ok``, ``completed`` and
    ``message`` as the sweeps' reports have them, ``swept: false``, and the release."""
    if is_structured(output.format):
        sys.stdout.write(dump({"ok": True, "completed": completed, "swept": False, "message": message,
                               "release": {"version": version, "image": image}}, output.format))


def run_install(args: argparse.Namespace) -> int:
    from cvo.runner.decide import for_install

    cmd = SweepCommand.from_args(args)  # bad flags fail before the release is read
    release = load(cmd.payload, cmd.output.log_format)

    async def prepare(backend: Backend) -> tuple[str, MakeRunner] | int:
        plan = for_install(await backend.steady.get(cv_ref()), release)
        if plan is None:
            return _already_there(cmd.output, release)
        return f"install {release.version}", _runs(plan, backend)

    return _sweep(cmd, prepare, f"install {release.version}", create=True)


def run_upgrade(args: argparse.Namespace) -> int:
    """Without a controller: the controller's decision (:func:`cvo.runner.decide.for_upgrade`) on the
    ClusterVersion with this target as ``spec.desiredUpdate``, run in this process until it ends.  With one:
    its client (:func:`_upgrade_through_controller`)."""
    from cvo.cli import upgrade_list_cmd as graph

    if args.clear:
        return graph.run_clear(args)
    if not (args.release_dir or args.to_image or args.to_latest):
        return graph.run_list(args)  # oc adm upgrade: the updates (without loading the runner)
    from cvo.cli.gates import upgrade_target
    from cvo.controller.client import lease_holder
    from cvo.runner import start
    from cvo.runner.decide import for_upgrade
    from cvo.runner.releases import RetrieveFailed
    from cvo.runner.retrieve import Retriever
    from cvo.runner.upgrade import desired_update, set_desired_update

    if vars(args).get("from_file") and not args.dry_run:
        raise UsageError("--from-file: saved objects are read-only; use it with --dry-run")
    graph.check_to(args.release_dir)
    from_graph = bool(args.to_latest) or graph.is_version(args.release_dir)
    asked = upgrade_target(args.release_dir, args.to_image, to_latest=args.to_latest)
    if from_graph:  # --to VERSION, --to-latest: the release the cluster's updates name
        chosen = graph.resolve_through_graph(args)
        if chosen.info:
            output = OutputOptions.from_args(args)
            if args.dry_run and is_structured(output.format):  # the dry run's document, of the same shape
                return _nothing_to_do_document(ClusterOptions.from_args(args), output, chosen.info, asked)
            return graph.say_info(chosen, output)
        args.release_dir = graph.target_source(chosen)
    upgrade = UpgradeFlags.from_args(args, from_graph, asked)  # a by-tag image is refused before anything is pulled
    cmd = SweepCommand.from_args(args)
    target = load(cmd.payload, cmd.output.log_format)
    target_dir = cmd.payload.directory  # --to
    assert target_dir is not None

    if upgrade.dry_run:
        return _dry_run(cmd, upgrade, target, target_dir)

    async def prepare(backend: Backend) -> tuple[str, MakeRunner] | int:
        if cmd.cluster.real:
            holder = await lease_holder(backend.steady, time.time())
            if holder:
                raise ControllerLeads(holder)
        if cmd.payload.image is not None and not upgrade.from_graph:  # --to-image: checked against the graph
            await graph.refresh_available_updates(cmd.cluster, backend)
        cv = await backend.steady.get(cv_ref())
        begin = start.check_upgrade(cv, target)
        if begin.already_there:
            return _already_there(cmd.output, target)
        # the current release, moved: known by the image the cluster recorded
        current = (start.current_release_from(cv, upgrade.from_dir, _loader(cmd.payload)) if upgrade.from_dir
                   else None)
        retriever = Retriever(cmd.images.pull_options())
        verified, risks = False, ""
        try:  # the controller's decision, on the ClusterVersion as it would be with the target asked for
            if cmd.payload.image is not None:
                check_explicit(cv, cmd.payload.image, target.image, upgrade)
                verified, risks = await _check_signature(backend, cv, target, upgrade.force, current,
                                                         cmd.payload.load_filter, retriever)
            plan = for_upgrade(cv, target, upgrade.force, current, cmd.payload.load_filter, retriever,
                               verified=verified, accepted_risks=risks)
        except RetrieveFailed as err:
            raise UsageError(f"the cluster's current release: {err.message}") from None
        if upgrade.no_wait:
            await set_desired_update(backend.steady, desired_update(target, upgrade.force), backend.budget)
            message = (f"spec.desiredUpdate: {target.version} ({target.image}); no controller leads this cluster: "
                       f"'cvo run' applies it when started")
            print(message, file=sys.stderr)
            _no_sweep_document(cmd.output, completed=False, message=message, version=target.version,
                               image=target.image)
            return EXIT_OK
        return f"upgrade to {target.version}", _runs(plan, backend, write_spec=True)

    async def forecast_of(backend: Backend) -> Outlook | None:
        """The update's forecast from the records of earlier updates (none: no forecast line)."""
        from cvo.runner.durations import RECORDS_REF, LiveForecast, release_operator_graph
        from cvo.status.update_records import of_mode, parse_records

        records = of_mode(parse_records(await backend.steady.get(RECORDS_REF)))
        if not records:
            return None
        graph = release_operator_graph(target)
        return lambda progress: LiveForecast(graph, records, progress, backend.clock.now, target.version)

    from cvo.cli.gates import unblock

    cluster = cluster_flags(cmd.cluster)
    return _sweep(cmd, prepare, f"upgrade to {target.version}",
                  forecast_of=forecast_of, client=lambda holder: _upgrade_through_controller(cmd, upgrade, target, holder),
                  unblock=lambda name: unblock(name, upgrade.to, cluster))


async def _check_signature(backend: Backend, cv: dict[str, Any] | None, target: Release, force: bool,
                           current: Release | None, load_filter: LoadFilter, retriever: Retriever) -> tuple[bool, str]:
    """The target image's signature, checked as the CVO's ``RetrievePayload`` checks it against the release the
    cluster runs; refused: ``ReleaseAccepted=False`` is written and the command fails."""
    from cvo.runner.decide import upgrade_releases
    from cvo.runner.releases import Desired, retrieve_failure
    from cvo.runner.retrieve import RetrieveError, check_signature, read_trust
    from cvo.runner.status_writer import StatusWriter
    from cvo.status.parts import Accepted

    releases = upgrade_releases(cv, target, current, load_filter, retriever)
    running = str(dig(cv or {}, "status", "desired", "image") or "")
    trust = await read_trust(backend.steady, current or releases.by_image(running), cv)
    try:
        return check_signature(target.image, target.version, force, trust)
    except RetrieveError as err:
        failure = retrieve_failure("RetrievePayload", Desired(target.version, target.image, force), target.image, str(err))
        writer = StatusWriter(backend.cluster, backend.clock, budget=backend.budget)
        await writer.report(Accepted("False", failure.reason, failure.message), force=True, must_land=True)
        raise CommandFailed(f"{target.image}: {err}") from None


def _dry_run(cmd: SweepCommand, upgrade: UpgradeFlags, target: Release, target_dir: Path) -> int:
    """``cvo upgrade --dry-run``: every gate, from a cluster only read (saved objects too), then exit 0 if the
    upgrade would start, 1 if it is blocked.  The current release is not needed (saved objects may name any
    image)."""
    from cvo.cli.diff_cmd import print_diff, upgrade_diff, with_diff
    from cvo.cli.gates import nothing_to_do_data, print_verdict, verdict_data
    from cvo.cli.progress import wants_live_display
    from cvo.cli.upgrade_list_cmd import refresh_available_updates
    from cvo.runner import start
    from cvo.runner.upgrade import preflight

    to, cluster = upgrade.to, cluster_flags(cmd.cluster)
    if not wants_live_display(cmd.output.log_format):  # as a sweep configures it
        configure(cmd.output.log_format, max(cmd.output.verbose, 1), details=cmd.output.verbose >= 1)
    clock, run_loop = backend_clock(cmd.cluster)

    async def check() -> int:
        async with open_reader(cmd.cluster, clock, budget=Budget.of(cmd.sweep.timeout), say_where=True) as reader:
            if cmd.payload.image is not None and not upgrade.from_graph:  # --to-image: checked against the graph
                await refresh_available_updates(cmd.cluster, reader)
            cv = await reader.steady.get(cv_ref())
            if start.check_upgrade(cv, target).already_there:
                if not is_structured(cmd.output.format):
                    return _already_there(cmd.output, target)
                message = _already_there_message(target)
                print(message, file=sys.stderr)
                doc = nothing_to_do_data(target.version, target.image, message, await current_blockers(reader.steady),
                                         to, cluster)
                sys.stdout.write(dump(doc, cmd.output.format))
                return EXIT_OK
            if cmd.payload.image is not None:  # as the upgrade itself would refuse it
                check_explicit(cv, cmd.payload.image, target.image, upgrade)
            verdict = await preflight(reader.steady, target, upgrade.force, clock.now())
            changes = await upgrade_diff(reader, target, cmd.payload) if upgrade.diff else None
        if is_structured(cmd.output.format):
            sys.stdout.write(dump(with_diff(verdict_data(verdict, target, to, cluster), changes), cmd.output.format))
        else:
            print_verdict(verdict, target, to, cluster, width=terminal_width(sys.stdout))
            print_diff(changes, cmd.output.format)
        return EXIT_FAILED if verdict.verdict.blocked else EXIT_OK

    try:
        return run_loop(lambda: cancelled_by_signals(check))
    except start.Refused as err:
        raise UsageError(str(err)) from None
    except start.NotInstalled as err:
        raise CommandFailed(str(err)) from None
    except ApiError as err:
        print_error(describe_api_error(err))
        return EXIT_FAILED


async def current_blockers(cluster: ReadOnlyCluster) -> list[Risk]:
    """Who holds back minor and major updates now (``Upgradeable=False``), as :func:`cvo.runner.upgrade.preflight`
    finds them, without a target (pkg/cvo/upgradeable.go ``syncUpgradeable``)."""
    from cvo.gates.upgradeable import applies, update_versions, upgradeable_risks
    from cvo.runner.blockers import read_cluster_state

    state = await read_cluster_state(cluster, assume_synced=True)
    status = state.cluster_version.section("status") if state.cluster_version is not None else {}
    return [r for r in upgradeable_risks(state, update_versions(status)).risks if applies(r)]


def _nothing_to_do_document(cluster: ClusterOptions, output: OutputOptions, message: str, to: tuple[str, ...]) -> int:
    """``upgrade --to VERSION --dry-run -o json|yaml`` of the version the cluster runs (oc's ``info:``): the dry
    run's document all the same (:func:`cvo.cli.gates.nothing_to_do_data`), exit 0."""
    from cvo.cli.gates import nothing_to_do_data

    clock, run_loop = backend_clock(cluster)

    async def read() -> dict[str, Any]:
        async with open_reader(cluster, clock, budget=Budget.of(None), say_where=True) as reader:
            cv = await reader.steady.get(cv_ref()) or {}
            desired = dig(cv, "status", "desired") or {}
            return nothing_to_do_data(str(desired.get("version") or ""), str(desired.get("image") or ""), message,
                                      await current_blockers(reader.steady), to, cluster_flags(cluster))

    print(message, file=sys.stderr)
    sys.stdout.write(dump(run_loop(lambda: cancelled_by_signals(read)), output.format))
    return EXIT_OK


def _upgrade_through_controller(cmd: SweepCommand, upgrade: UpgradeFlags, target: Release, holder: str) -> int:
    """``cvo upgrade`` as the client of the controller ``holder``: set ``spec.desiredUpdate``, follow the
    ClusterVersion until the controller is done with it (:func:`cvo.controller.client.follow`), report as a
    sweep run here would.  ``--timeout`` is real time here: the controller's sweep runs on its own clock.  On a
    terminal the progress is the live display a sweep run here shows, fed from the cluster
    (:mod:`cvo.cli.controller_panel`); otherwise the info log."""
    from cvo.cli.progress import wants_live_display
    from cvo.clock import run_real
    from cvo.cluster.api import CLUSTER_OPERATOR
    from cvo.controller.client import Verdict, follow
    from cvo.runner import start
    from cvo.runner.upgrade import desired_update, set_desired_update

    output = cmd.output
    live = wants_live_display(output.log_format)
    if not live:
        configure(output.log_format, max(output.verbose, 1))  # the controller's progress is the info log
    log = get_logger("cvo.cli")
    clock, _ = backend_clock(cmd.cluster)
    started = time.perf_counter()
    outcome: dict[str, Any] = {}

    def on_change(verdict: Verdict, cv: dict[str, Any]) -> None:
        log.info("upgrade.progress", controller=holder, state=verdict.state, message=verdict.message)

    async def main() -> int:
        budget = Budget.of(cmd.sweep.timeout)
        async with open_backend(cmd.cluster, clock, simulate_operators=False, create=False, budget=budget,
                                say_where=True) as backend:
            log.info("controller.leads", controller=holder)
            cv = await backend.steady.get(cv_ref())
            try:
                begin = start.check_upgrade(cv, target)
            except start.NotInstalled as err:
                raise CommandFailed(str(err)) from None
            if begin.already_there:
                return _already_there(output, target)
            if cmd.payload.image is not None:  # the controller verifies the image's signature
                check_explicit(cv, cmd.payload.image, target.image, upgrade)
            await set_desired_update(backend.steady, desired_update(target, upgrade.force), budget)
            log.info("upgrade.requested", controller=holder, version=target.version, image=target.image,
                     force=upgrade.force)
            if upgrade.no_wait:
                message = (f"spec.desiredUpdate: {target.version} ({target.image}); the controller {holder} applies "
                           f"it ('cvo status -w' follows it)")
                print(message, file=sys.stderr)
                _no_sweep_document(output, completed=False, message=message, version=target.version,
                                   image=target.image)
                return EXIT_OK
            if live:
                verdict, cv = await _follow_on_screen(cmd, upgrade, target, holder, backend, clock)
            else:
                verdict, cv = await follow(backend.cluster, target.version, target.image, cmd.sweep.timeout,
                                           cmd.sweep.timeout_text, on_change, budget)
            outcome.update(verdict=verdict, cv=cv, now=clock.now(),
                           cos=await backend.steady.list(*CLUSTER_OPERATOR))
            return EXIT_OK if verdict.state == "completed" else EXIT_FAILED

    try:
        code = run_real(lambda: cancelled_by_signals(main))
    except ApiError as err:
        print_error(describe_api_error(err))
        return EXIT_FAILED
    if "verdict" in outcome:
        _report_client(output, outcome, holder, time.perf_counter() - started)
    return code


async def _follow_on_screen(cmd: SweepCommand, upgrade: UpgradeFlags, target: Release, holder: str, backend: Backend,
                            clock: Clock) -> tuple[Any, dict[str, Any]]:
    """:func:`cvo.controller.client.follow` with the live display of a sweep, fed from the cluster."""
    import asyncio

    from cvo.cli.controller_panel import ControllerPanel, feed
    from cvo.cli.gates import unblock
    from cvo.cli.progress import LiveDisplay
    from cvo.controller.client import follow

    panel = ControllerPanel(target, clock)
    cluster = cluster_flags(cmd.cluster)
    display = LiveDisplay(panel.progress, clock.now, f"upgrade to {target.version} by the controller {holder}",
                          blocked=panel.blocked, unblock=lambda name: unblock(name, upgrade.to, cluster),
                          status=panel.status, simulated=not cmd.cluster.real)
    feeder = asyncio.create_task(feed(backend.steady, panel, display, upgrade.force))
    try:
        with display:
            return await follow(backend.cluster, target.version, target.image, cmd.sweep.timeout,
                                cmd.sweep.timeout_text, lambda _verdict, cv: panel.on_cluster_version(cv, display),
                                backend.budget)
    finally:
        feeder.cancel()
        await asyncio.gather(feeder, return_exceptions=True)


def _report_client(output: OutputOptions, outcome: dict[str, Any], holder: str, wall: float) -> None:
    """The report of :func:`_report` for an update the controller ran: same shape, from the ClusterVersion."""
    from cvo.cli.progress import format_duration
    from cvo.clock import parse_rfc3339
    from cvo.payload.fields import dig
    from cvo.status.text import write_status_text

    verdict, cv = outcome["verdict"], outcome["cv"]
    history = dig(cv, "status", "history")
    head = history[0] if isinstance(history, list) and history and isinstance(history[0], dict) else {}
    simulated = None
    try:
        if verdict.state == "completed" and head.get("startedTime") and head.get("completionTime"):
            simulated = parse_rfc3339(head["completionTime"]) - parse_rfc3339(head["startedTime"])
    except ValueError:
        simulated = None
    ok = verdict.state == "completed"
    if is_structured(output.format):
        doc = {"ok": ok, "completed": ok, "attempts": None, "message": "" if ok else verdict.message,
               "done": None, "total": None,
               "simulatedSeconds": simulated.total_seconds() if simulated is not None else None,
               "wallSeconds": round(wall, 3), "lastProgress": dig(cv, "status", "lastProgress"),
               "clusterVersion": cv, "clusterOperators": outcome["cos"], "controller": holder,
               "outcome": verdict.state}
        sys.stdout.write(dump(doc, output.format))
    else:
        write_status_text(cv, outcome["cos"], outcome["now"], sys.stdout, headers=output.headers,
                          width=terminal_width(sys.stdout))
        if verdict.state == "blocked":
            _say(f"\nblocked: the upgrade did not start ({wall:.2f}s wall)")
        elif ok:
            took = f"{format_duration(simulated)} on the cluster's clock, " if simulated is not None else ""
            _say(f"\ncompleted by the controller {holder}: {took}{wall:.2f}s wall")
        else:
            _say(f"\ndid not complete ({verdict.state}), the controller {holder} goes on with "
                 f"spec.desiredUpdate: {wall:.2f}s wall")
    if not ok:
        print_error(verdict.message)


def run_reconcile(args: argparse.Namespace) -> int:
    from cvo.runner.decide import for_reconcile
    from cvo.runner.retrieve import Retriever

    cmd = SweepCommand.from_args(args)  # the flags are checked before anything is read
    given = load(cmd.payload, cmd.output.log_format) if cmd.payload.directory is not None else None

    async def prepare(backend: Backend) -> tuple[str, MakeRunner] | int:
        plan = for_reconcile(await backend.steady.get(cv_ref()), given, cmd.payload.directory,
                             bool(cmd.payload.release_image), _loader(cmd.payload),
                             Retriever(cmd.images.pull_options()))
        return f"reconcile {plan.release.version}", _runs(plan, backend)

    return _sweep(cmd, prepare, "reconcile")
