"""What a person sees while a sweep runs, and the summary at the end.

On a terminal: a live rich display (done/total, the nodes running, what is being waited on and for
how long, on the sweep's clock).  Otherwise, or with ``--log-format json``: one log line per event
(JSON lines with ``--log-format json``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from cvo.log import debug_enabled, get_logger
from cvo.runner.events import Progress
from cvo.runner.sweep_events import (
    AttemptFailed,
    AttemptStarted,
    AttemptWoken,
    ConditionChanged,
    ControllerError,
    ControllerIdle,
    ControllerNext,
    ControllerRetarget,
    ControllerRetrieveFailed,
    ControllerStarted,
    ControllerSweep,
    Event,
    NodeBlocked,
    NodeError,
    NodeFailed,
    OperatorDegraded,
    OperatorReady,
    PreconditionBlocked,
    PreconditionPassed,
    SweepCompleted,
    SweepStarted,
    SweepTimeout,
    TaskFailed,
    TaskWaiting,
)

if TYPE_CHECKING:
    from cvo.cli.gates import Unblock

log = get_logger("cvo.sweep")

# Events worth a line of their own in text logs (the rest are debug detail).
_INFO: frozenset[type[Event]] = frozenset({
    SweepStarted, AttemptStarted, AttemptFailed, AttemptWoken, NodeFailed, NodeError, TaskFailed, TaskWaiting,
    OperatorReady, OperatorDegraded, ConditionChanged, SweepCompleted, SweepTimeout, PreconditionBlocked,
    PreconditionPassed, NodeBlocked, ControllerStarted, ControllerIdle, ControllerSweep, ControllerRetarget,
    ControllerNext, ControllerError, ControllerRetrieveFailed})
# Of those, the ones that do not count as the sweep having said something (a quiet reconcile says only these).
_ROUTINE: frozenset[type[Event]] = frozenset({SweepStarted, AttemptStarted, SweepCompleted})


def format_duration(delta: timedelta | float) -> str:
    seconds = int(delta.total_seconds() if isinstance(delta, timedelta) else delta)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"




class LogReporter:
    """Every event as a structured log line (stderr).

    Piped output is one line per meaningful event; unless ``verbose``, these are debug detail:
    ``condition.changed``, a ``task.waiting`` that repeats the operator's last wait (same message), and a
    reconcile of a release that an earlier reconcile already found in place, when it finds nothing either
    (a blocked upgrade reconciles its current release every interval while it waits).
    """

    def __init__(self, verbose: bool = True) -> None:
        self.verbose = verbose
        self._last_wait: dict[str, str] = {}
        self._in_place: set[str] = set()  # releases a reconcile found in place (one attempt, nothing said)
        self._sweep: dict[str, Any] = {}  # the sweep under way: its mode and version, whether it said anything

    def _noise(self, event: Event) -> bool:
        match event:
            case TaskWaiting(operator=operator, node=node, message=message):
                key = str(operator or node or "")
                noise = self._last_wait.get(key) == message
                self._last_wait[key] = message
                return noise
            case OperatorReady(operator=operator):
                self._last_wait.pop(operator, None)
            case SweepStarted(version=version, mode=mode):
                again = mode == "reconcile" and version in self._in_place
                self._sweep = {"version": version, "mode": mode, "again": again, "said": False}
                return again
            case AttemptStarted(attempt=1) if self._sweep.get("again"):
                return True
            case SweepCompleted(attempts=attempts):
                quiet = not self._sweep.get("said")
                if self._sweep.get("mode") == "reconcile" and quiet and attempts == 1:
                    self._in_place.add(str(self._sweep.get("version")))
                return bool(self._sweep.get("again")) and quiet
            case ConditionChanged():
                return True  # repeats what the reader already knows: in piped output only with -v
        return False

    def emit(self, event: Event) -> None:
        noise = self._noise(event)  # first: it follows the sweep whatever is written
        if type(event) in _INFO and (self.verbose or not noise):
            if type(event) not in _ROUTINE:
                self._sweep["said"] = True
            log.info(event.name, **{"sim_time": event.time.isoformat(), **event.fields})
        elif debug_enabled():  # most events are debug lines: not even formatted unless written
            log.debug(event.name, **{"sim_time": event.time.isoformat(), **event.fields})


def shorten(text: str, width: int, *, keep_spacing: bool = False) -> str:
    """``text`` on one line of at most ``width`` characters, cut at a word boundary with an ellipsis.
    ``keep_spacing``: runs of spaces stay (a table's padding); otherwise all whitespace becomes one space."""
    text = " ".join(text.split()) if not keep_spacing else re.sub(r"[\r\n\t]+", " ", text).rstrip()
    if width <= 1:
        return text[:max(width, 0)]
    if len(text) <= width:
        return text
    cut = text[:width - 1]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def because(name: str, message: str) -> str:
    """A wait's message without the name its row already shows: "Cluster operator dns is not available" on dns's
    row says "not available" (the CVO's ClusterOperator messages, pkg/cvo/internal/operatorstatus.go)."""
    text = " ".join(message.split())
    for prefix in (f"Cluster operator {name} is ", f"Cluster operator {name} ", f"{name} is ", f"{name} "):
        if text.startswith(prefix) and len(text) > len(prefix):
            return text[len(prefix):]
    return text


_WARNED = re.compile(r"^(sim )?\d\d:\d\d:\d\d (proceeding with warnings|forced through): ")
_BLOCKED = re.compile(r'^Precondition "(?P<check>[^"]+)" failed because of "(?P<reason>[^"]+)": (?P<message>.*)$', re.S)


def blocked_headline(message: str) -> tuple[str, str]:
    """``(who, why)`` of a blocked upgrade's precondition message: ``ClusterVersionUpgradeable (Reason)`` and the
    rest.  Of "Multiple precondition checks failed" the first check that can block (RecommendedUpdate only
    warns), "and N more" when others fail too; the preconditions and the whole message when none parses."""
    text = message.strip()
    bullets = text.split("\n* ")[1:] if text.startswith("Multiple precondition checks failed:") else [text]
    found = [m for b in bullets if (m := _BLOCKED.match(b)) is not None]
    blocking = [m for m in found if m["check"] != "ClusterVersionRecommendedUpdate"] or found
    if not blocking:
        return "the preconditions", message
    first, more = blocking[0], len(bullets) - 1
    return f"{first['check']} ({first['reason']}){f' and {more} more' if more else ''}", first["message"]


class LiveDisplay:
    """A rich Live panel redrawn on every event; rich is imported only when a terminal is attached.

    Every line fits the terminal's width (long ones are shortened at a word boundary with an ellipsis)
    and the panel its height (the waits beyond it are counted, not listed).  While an upgrade is blocked
    by its preconditions the panel says so, by what and why (wrapped, not cut), and prints the exact
    command that lets each blocker through (``unblock``: a blocker's name to :class:`cvo.cli.gates.Unblock`),
    instead of showing the reconcile of the current release that runs meanwhile.  Attempts are counted from
    1, as the summary counts them.
    """

    def __init__(self, progress: Callable[[], Progress], clock_now: Any, title: str,
                 forecast: Callable[[], Any] | None = None, *, blocked: Callable[[], str] | None = None,
                 unblock: Callable[[str], Unblock] | None = None, status: Callable[[], str] | None = None,
                 console: Any = None, simulated: bool = False) -> None:
        from rich.console import Console
        from rich.live import Live

        from cvo.log import use_color

        self.progress = progress
        self.forecast = forecast  # cvo.runner.durations.LiveForecast: the update's end from its records
        self.blocked = blocked or (lambda: "")
        self.unblock = unblock
        # a controller runs the update (cvo.cli.controller_panel): its status line instead of the nodes running here
        self.status = status
        self.blockers: list[str] = []  # the risks behind Upgradeable=False, as the last precondition.blocked named them
        self.now = clock_now
        self.title = title
        # the embedded cluster's clock runs ahead of the wall clock: its times say so ("sim 12:04:02")
        self.stamp = "sim %H:%M:%S" if simulated else "%H:%M:%S"
        self.console = console or Console(stderr=True, no_color=not use_color())
        # the panel is drawn from the state at each refresh (twice a second), not only on events: the "for" column
        # counts on while nothing happens, as it does on a real cluster for minutes at a time
        self.live = Live(_Redrawn(self), console=self.console, refresh_per_second=2, transient=False,
                         auto_refresh=True)
        self.last_events: list[str] = []

    def __enter__(self) -> LiveDisplay:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.refresh()
        self.live.__exit__(None, None, None)

    def emit(self, event: Event) -> None:
        if isinstance(event, PreconditionBlocked):
            self.blockers = list(event.blockers)
        if isinstance(event, PreconditionPassed):
            if event.warnings:  # a warning is not a pass: say what goes ahead despite it
                how = "forced through" if event.forced else "proceeding with warnings"
                self.last_events = [f"{event.time.strftime(self.stamp)} {how}: {' '.join(event.warnings.split())}"]
            else:
                self.last_events = [f"{event.time.strftime(self.stamp)} the preconditions pass: the upgrade starts"]
        elif self.blocked():
            pass  # the reconcile of the current release while blocked: the headline says what matters
        elif (said := _said(event)) is not None:
            line = f"{event.time.strftime(self.stamp)} {event.name} {said[0]} {said[1]}".strip()
            if not self.last_events or self.last_events[-1] != line:
                self.last_events = [*self.last_events, line][-5:]
        self.live.refresh()

    def say(self, when: datetime, text: str) -> None:
        """An event line of the panel's own (what a controller's ClusterVersion said), then a redraw."""
        self.last_events = [*self.last_events, f"{when.strftime(self.stamp)} {text}"][-5:]
        self.live.refresh()

    def lines(self, width: int, height: int) -> list[tuple[str, str]]:
        """The panel as ``(text, style)`` lines, each at most ``width`` wide, at most ``height`` of them."""
        p = self.progress()
        now: datetime = self.now()
        out: list[tuple[str, str]] = []
        if blocked := self.blocked():
            return self._blocked_lines(blocked, width, height)
        if self.status is None:
            out.append((shorten(f"{self.title}  attempt {p.attempt + 1}  {p.done}/{p.total} tasks", width), "bold"))
        else:  # the controller's attempts are its own: not known here
            out.append((shorten(f"{self.title}  {p.done}/{p.total} tasks" if p.total else self.title, width), "bold"))
        bar_width = max(10, min(60, width))
        filled = bar_width * p.done // max(p.total, 1)
        out.append(("━" * filled + "╺" * (filled < bar_width) + "─" * max(0, bar_width - filled - 1), "bar"))
        if self.status is None:
            running = ", ".join(f"node {n}: {t}" for n, t in sorted(p.running.items())[:4]) or "-"
            out.append((shorten(f"running: {running}", width), ""))
        else:
            out.append((shorten(f"status: {self.status() or '-'}", width), ""))
        if self.forecast is not None and (outlook := self.forecast()) is not None:
            from cvo.status.godur import to_ns

            clock = " (the simulated clock)" if self.stamp.startswith("sim") else ""
            out.append((shorten(f"forecast: {outlook.summary(to_ns(now))}{clock}", width), ""))
        events = []
        for line in self.last_events:
            if _WARNED.match(line):  # what went ahead despite a warning is read in full (three lines at most)
                import textwrap

                events += [(part, "warn") for part in textwrap.wrap(line, max(width, 10), max_lines=3, placeholder=" …",
                                                                    subsequent_indent="    ")]
            else:
                events.append((shorten(line, width), "dim"))
        room = max(1, height - len(out) - len(events) - 1)
        if p.waiting:
            waits = sorted(p.waiting.items())
            shown = waits if len(waits) <= room else waits[:room - 1]
            name_w = max(len("waiting on"), *(len(n) for n, _ in shown))
            out.append((shorten(f"{'waiting on':<{name_w}}  {'for':>6}  because", width, keep_spacing=True), "bold"))
            for name, wait in shown:
                out.append((shorten(f"{name:<{name_w}}  {format_duration(now - wait.since):>6}  "
                                    f"{because(name, wait.error.message)}", width, keep_spacing=True), ""))
            if len(shown) < len(waits):
                out.append((f"… and {len(waits) - len(shown)} more", "dim"))
        return (out + events)[:height]

    def _blocked_lines(self, blocked: str, width: int, height: int) -> list[tuple[str, str]]:
        """The blocked panel: who blocks, the way through (the exact commands: they are what a person needs, so
        they are kept whole and come before anything cut), why, and what the upgrade does meanwhile."""
        from cvo.cli.gates import shell_lines

        who, why = blocked_headline(blocked)
        head = [(line, "bold") for line in _wrap(f"{self.title}: blocked by {who}", width, "  ")]
        how: list[tuple[str, str]] = []
        if self.unblock is not None:
            ways = [self.unblock(name) for name in self.blockers]
            commands = [w for w in ways if w.command]
            if commands:
                how.append(("To let it through, run (from another terminal):", ""))
                for way in commands:
                    how += [(line, "cmd") for line in shell_lines(way.command, width, "  ", "      ")]
            for way, name in zip(ways, self.blockers, strict=True):
                if not way.command:
                    how += [(line, "") for line in _wrap(f"{name}: {way.note}.", width, "  ")]
            how.append(("Or stop this command (Ctrl-C) and run it again with --force, past every block.", "dim")
                       if commands or ways else
                       ("Only --force passes this block: stop this command (Ctrl-C) and run it again with --force.",
                        ""))
            how = [(line, style) for text, style in how
                   for line in ([text] if style == "cmd" or text.startswith("  ") else _wrap(text, width, ""))]
        waits = _wrap("The upgrade waits: it goes ahead by itself when the blocker clears or an admin lets it "
                      "through; meanwhile the cluster keeps reconciling its current release.", width, "")
        room = height - len(head) - len(how)
        reasons = _wrap(why, width, "")
        if len(reasons) + len(waits) > room:  # the why is cut first (cvo upgrade --dry-run prints it whole)
            waits = waits[:max(0, room - 1)]
            keep = max(0, room - len(waits))
            if keep < len(reasons):
                reasons = [*reasons[:max(0, keep - 1)], shorten(" ".join(reasons[max(0, keep - 1):]), width)][:keep]
        out = [*head, *((line, "") for line in reasons), *((line, "dim") for line in waits), *how]
        return out[:height] if len(head) + len(how) <= height else [*head, *how][:height]

    def _render(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        width, height = self.console.size
        styles = {"bar": "green", "dim": "dim", "bold": "bold", "warn": "yellow", "cmd": "cyan", "": ""}
        return Group(*(Text(text, style=styles[style], no_wrap=True, overflow="ellipsis")
                       for text, style in self.lines(width, max(3, height - 1))))


def _wrap(text: str, width: int, indent: str) -> list[str]:
    """``text`` (whitespace collapsed) wrapped at word boundaries to ``width``, later lines after ``indent``; a word
    longer than a line is cut with an ellipsis."""
    import textwrap

    lines = textwrap.wrap(" ".join(text.split()), max(width, 10), subsequent_indent=indent, break_on_hyphens=False,
                          break_long_words=False) or [""]
    return [line if len(line) <= width else shorten(line, width, keep_spacing=True) for line in lines]


class _Redrawn:
    """What the Live shows: the display's panel as of each refresh."""

    def __init__(self, display: LiveDisplay) -> None:
        self.display = display

    def __rich__(self) -> Any:
        return self.display._render()


def _said(event: Event) -> tuple[object, str] | None:
    """Who and why, for the live display's list of recent events (None: an event it does not list)."""
    match event:
        case TaskWaiting(operator=operator, node=node, message=message, reason=reason):
            return operator or node or "", message or reason
        case OperatorDegraded(operator=operator, node=node, message=message):
            return operator or node or "", message
        case OperatorReady(operator=operator, node=node):
            return operator or node or "", ""
        case NodeFailed(node=node, message=message, reason=reason):
            return node or "", message or reason
        case AttemptFailed(message=message, reason=reason):
            return "", message or reason
        case SweepTimeout(message=message):
            return "", message
        case SweepCompleted():
            return "", ""
    return None


def wants_live_display(log_format: str) -> bool:
    return log_format != "json" and sys.stderr.isatty()
