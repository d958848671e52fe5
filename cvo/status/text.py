"""ClusterVersion and ClusterOperator tables, as ``oc get clusterversion`` and ``oc get clusteroperators`` print them.

Columns follow the CRDs' printer columns; SINCE is kubectl's ``HumanDuration`` of a condition's
``lastTransitionTime``; columns are aligned like kubectl's tab writer (3 spaces of padding, cells at
least 6 wide).  Nothing here reads a clock: ``now`` is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TextIO

from cvo.objects import ClusterOperator, ClusterVersion, Condition, OperatorCondition
from cvo.objects.times import to_ns

_PADDING = 3
_MIN_WIDTH = 6


def format_age(delta: timedelta) -> str:
    """kubectl's ``duration.HumanDuration``: about 2–3 significant figures (45s, 5m, 3h12m, 2d3h)."""
    seconds = int(delta.total_seconds())  # truncated towards zero, like Go's int()
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return _two_units(minutes, "m", seconds % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    return _format_hours(minutes // 60, minutes % 60)


def _format_hours(hours: int, minutes: int) -> str:
    if hours < 8:
        return _two_units(hours, "h", minutes, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return _two_units(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return _two_units(days // 365, "y", days % 365, "d")
    return f"{days // 365}y"


def _two_units(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}{small}{small_unit}" if small else f"{big}{big_unit}"


def _since(condition: Condition | None, now: datetime) -> str:
    """The age of a condition's lastTransitionTime; empty when there is none."""
    if condition is None or condition.last_transition_time is None:
        return ""
    return format_age(timedelta(microseconds=(to_ns(now) - condition.last_transition_time.ns) // 1000))


def _field(condition: Condition | None, key: str) -> str:
    """``status``, ``reason`` or ``message`` of ``condition``; "" without one."""
    return "" if condition is None else str(getattr(condition, key))


def _single_line(text: str) -> str:
    """A multi-line message on one line, so it does not break the table."""
    return " ".join(text.split())


def format_table(rows: Sequence[Sequence[str]], *, headers: bool = True, width: int | None = None) -> str:
    """Align columns like kubectl's tab writer; the last column is not padded, lines carry no trailing blanks.
    ``rows[0]`` is the header; without ``headers`` its line is left out, the columns aligned as with it (so
    ``--no-headers`` drops exactly one line).

    With ``width`` (a terminal's), every line fits it (:func:`_fit_table`); without, as wide as the cells.
    """
    if not rows:
        return ""
    lines, header_lines = _aligned(rows, _PADDING), 1
    if width is not None and any(len(line) > width for line in lines):
        lines, header_lines = _fit_table(rows, width)
    return "".join(line + "\n" for line in lines[0 if headers else header_lines:])


def _column_widths(rows: Sequence[Sequence[str]], padding: int) -> list[int]:
    """The padded widths of every column but the last."""
    return [max(_MIN_WIDTH, max(len(row[i]) for row in rows) + padding) for i in range(len(rows[0]) - 1)]


def _aligned(rows: Sequence[Sequence[str]], padding: int) -> list[str]:
    widths = _column_widths(rows, padding)
    return [("".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + row[-1]).rstrip() for row in rows]


# The last column (MESSAGE, STATUS) stays a column while it has at least this many characters of room: wrapped
# there at word boundaries; with less room its text goes under its row.
_MIN_LAST_COLUMN = 24
_MAX_WRAPPED = 3  # lines of one cell's text at most; the last one ends with an ellipsis when it is cut
_UNDER_INDENT = "    "


def _wrapped(text: str, width: int, max_lines: int | None = _MAX_WRAPPED) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=max(width, 1), max_lines=max_lines, placeholder=" …",
                         break_long_words=True, break_on_hyphens=False) or [""]


def _fit_table(rows: Sequence[Sequence[str]], width: int) -> tuple[list[str], int]:
    """The table in ``width`` columns, cut nowhere but at word boundaries where it can be, and how many of its
    first lines are the header's.

    The last column is wrapped within its room when it has :data:`_MIN_LAST_COLUMN` characters of it; with less,
    each cell's text goes under its row, indented, and the header leaves the column out.  Narrower padding is
    tried before that; a table whose other columns alone do not fit is shown a row at a time (:func:`_expanded`).
    """
    for padding in range(_PADDING, 0, -1):
        start = sum(_column_widths(rows, padding))
        if width - start >= min(_MIN_LAST_COLUMN, width):  # (a table of one column always wraps in place)
            out: list[str] = []
            for line, row in zip(_aligned([[*r[:-1], ""] for r in rows], padding), rows, strict=True):
                first, *rest = _wrapped(row[-1], width - start) if row[-1] else [""]
                out.append((line.ljust(start) + first).rstrip())
                out += [" " * start + more for more in rest]
            return out, len(_wrapped(rows[0][-1], width - start))
    for padding in range(_PADDING, 0, -1):
        lines = _aligned([r[:-1] for r in rows], padding)
        if all(len(line) <= width for line in lines):
            out = [lines[0]]
            for line, row in zip(lines[1:], rows[1:], strict=True):
                out.append(line)
                if row[-1]:
                    out += [_UNDER_INDENT + more for more in _wrapped(row[-1], width - len(_UNDER_INDENT))]
            return out, 1
    return _expanded(rows, width)


def _expanded(rows: Sequence[Sequence[str]], width: int) -> tuple[list[str], int]:
    """Each row as ``HEADER: value`` lines (psql's expanded display), rows separated by a blank line: for a
    table whose columns do not fit side by side even without the last one.  No header lines, unless the table
    has no rows (then its names, wrapped)."""
    headers = rows[0]
    if len(rows) == 1:
        import textwrap

        names = textwrap.wrap(" ".join(h for h in headers if h), width) or [""]
        return names, len(names)
    label = max(len(h) for h in headers) + 2
    out: list[str] = []
    for row in rows[1:]:
        if out:
            out.append("")
        for i, (header, cell) in enumerate(zip(headers, row, strict=False)):
            if not cell and i:
                continue  # an empty MESSAGE says nothing
            # only the last column's text may be cut short; the others are kept whole
            first, *rest = _wrapped(cell, width - label, _MAX_WRAPPED if i == len(row) - 1 else None) if cell \
                else [""]
            out.append(f"{header + ':':<{label}}{first}".rstrip())
            out += [" " * label + more for more in rest]
    return out, 0


def clusterversion_table(cv: ClusterVersion, now: datetime, *, wide: bool = False, headers: bool = True,
                         width: int | None = None) -> str:
    """NAME, VERSION (the current version), AVAILABLE, PROGRESSING, SINCE and STATUS (the Progressing message);
    ``wide`` adds DESIRED (``status.desired.version``), FAILING and UPGRADEABLE before STATUS."""
    status = cv.status
    progressing = status.condition("Progressing")
    header = ["NAME", "VERSION", "AVAILABLE", "PROGRESSING", "SINCE"]
    row = [cv.name, status.current_version, _field(status.condition("Available"), "status"),
           _field(progressing, "status"), _since(progressing, now)]
    if wide:
        header += ["DESIRED", "FAILING", "UPGRADEABLE"]
        row += [status.desired.version, _field(status.condition("Failing"), "status"),
                _field(status.condition("Upgradeable"), "status")]
    header.append("STATUS")
    row.append(_single_line(_field(progressing, "message")))
    return format_table([header, row], headers=headers, width=width)


def _unhealthy(co: ClusterOperator) -> Condition | None:
    """The first unhealthy condition: Available=False, else Degraded=True, else Progressing=True."""
    for condition_type, bad in (("Available", "False"), ("Degraded", "True"), ("Progressing", "True")):
        condition = co.status.condition(condition_type)
        if condition is not None and condition.status == bad:
            return condition
    return None


def operator_message(co: ClusterOperator) -> str:
    """The message of the first unhealthy condition: Available=False, else Degraded=True, else Progressing=True."""
    return _single_line(_field(_unhealthy(co), "message"))


def operator_reason(co: ClusterOperator) -> str:
    """The reason of the condition :func:`operator_message` shows."""
    return _field(_unhealthy(co), "reason")


def completed_version(cv: ClusterVersion) -> str:
    """The version of the ClusterVersion's latest history entry when that entry is Completed, else ""."""
    history = cv.status.history
    return history[0].version if history and history[0].state == "Completed" else ""


def not_in_release(co: ClusterOperator, release: str) -> bool:
    """Whether ``co`` is left over from an earlier release: once an update to ``release`` has completed, every
    ClusterOperator of the release reports it as its operator version, so one that reports another is not
    part of it (an operator the new release dropped, whose ClusterOperator nobody deleted)."""
    version = co.status.version()
    return bool(release and version and version != release)


SAME_VERSION = "="  # a VERSION cell equal to the cluster's, where the full version does not fit the terminal


def clusteroperators_table(cos: Sequence[ClusterOperator], now: datetime, release: str = "", *,
                           wide: bool = False, headers: bool = True, width: int | None = None) -> str:
    """One row per ClusterOperator, sorted by name; SINCE is the age of the Available condition.  With the
    cluster's completed ``release``, a ClusterOperator it does not hold says so in MESSAGE.  ``wide`` adds
    UPGRADEABLE (the operator's own Upgradeable condition) and REASON (of the condition MESSAGE shows) before
    MESSAGE.

    On a terminal (``width``) too narrow for the table, a VERSION equal to ``release`` is shown as ``=`` and a
    line under the table says so: a nightly's 35-character version would otherwise push every row apart."""
    header = ["NAME", "VERSION", "AVAILABLE", "PROGRESSING", "DEGRADED", "SINCE"]
    rows = [header + (["UPGRADEABLE", "REASON"] if wide else []) + ["MESSAGE"]]
    for co in sorted(cos, key=lambda o: o.name):
        status = co.status
        message = operator_message(co)
        if not_in_release(co, release):
            message = f"not in the current release {release} (left over from {status.version()})" + (
                f"; {message}" if message else "")
        available = status.condition("Available")
        row = [co.name, status.version(), _field(available, "status"),
               _field(status.condition("Progressing"), "status"), _field(status.condition("Degraded"), "status"),
               _since(available, now)]
        if wide:
            row += [_field(status.condition("Upgradeable"), "status"), operator_reason(co)]
        rows.append([*row, message])
    note = ""
    if width is not None and not _columns_fit(rows, width):
        if release and len(release) > len(SAME_VERSION) and any(r[1] == release for r in rows[1:]):
            rows = [rows[0]] + [[r[0], SAME_VERSION if r[1] == release else r[1], *r[2:]] for r in rows[1:]]
            note = "".join(line + "\n" for line in _fit_line(f"{SAME_VERSION}: the cluster's version, {release}",
                                                             width))
        if not _columns_fit(rows, width):
            rows = [[SHORT_HEADERS.get(h, h) for h in rows[0]], *rows[1:]]
    return format_table(rows, headers=headers, width=width) + note


# Shorter headers for a terminal too narrow for the long ones (a 40-character operator name leaves 39 columns)
SHORT_HEADERS = {"AVAILABLE": "AVAIL", "PROGRESSING": "PROG", "DEGRADED": "DEGR", "UPGRADEABLE": "UPGR"}


def _columns_fit(rows: Sequence[Sequence[str]], width: int) -> bool:
    """Whether every column but the last fits ``width`` side by side (at the narrowest padding)."""
    return all(len(line) <= width for line in _aligned([r[:-1] for r in rows], 1))


def upgradeable_text(cv: ClusterVersion, cos: Sequence[ClusterOperator], ocs: Sequence[OperatorCondition] = (),
                     *, headers: bool = True, width: int | None = None) -> str:
    """The cluster's Upgradeable condition, then every operator's: ClusterOperators and OperatorConditions
    (a table; without ``headers``, without its header line).  With ``width``, every line fits it (the prose
    wrapped at word boundaries)."""
    from cvo.gates.olm import unsupported_conditions, upgradeable_verdict

    cond = cv.status.condition("Upgradeable")
    if cond is None:
        lines = ["Upgradeable: True (ClusterVersion, as of its last sweep: nothing blocks minor or major updates)"]
    else:
        message = cond.message.replace("\n", "\n    ")
        lines = [f"Upgradeable: {cond.status} ({cond.reason}; ClusterVersion, as of its last sweep)", f"    {message}"]
    rows = [["SOURCE", "NAME", "UPGRADEABLE", "REASON", "MESSAGE"]]
    for co in sorted(cos, key=lambda o: o.name):
        up = co.status.condition("Upgradeable")
        if up is not None:
            rows.append(["clusteroperator", co.name, up.status, up.reason, _single_line(up.message)])
    for oc in sorted(ocs, key=lambda o: (o.namespace, o.name)):
        verdict = upgradeable_verdict(oc)
        source = f"operatorcondition ({verdict.source})" if verdict.source else "operatorcondition"
        name = f"{oc.namespace}/{oc.name}"
        if verdict.source or not verdict.upgradeable:
            rows.append([source, name, str(verdict.upgradeable), verdict.reason, _single_line(verdict.message)])
        for extra in unsupported_conditions(oc):
            rows.append(["operatorcondition (not acted on)", name, f"{extra.type}={extra.status}", extra.reason,
                         _single_line(extra.message)])
    if width is not None:
        lines = [part for text in lines for line in text.split("\n") for part in _fit_line(line, width)]
    if len(rows) > 1:
        lines += ["", format_table(rows, headers=headers, width=width).rstrip("\n")]
    return "\n".join(lines) + "\n"


def _fit_line(line: str, width: int) -> list[str]:
    """A line of prose in ``width`` columns: wrapped at word boundaries, its indentation kept on every line."""
    import textwrap

    if len(line) <= width:
        return [line]
    indent = line[:len(line) - len(line.lstrip())]
    return textwrap.wrap(line, width=width, subsequent_indent=indent or "    ", break_on_hyphens=False) or [line]


def write_status_text(cv: ClusterVersion | Mapping[str, Any], cos: Sequence[ClusterOperator | Mapping[str, Any]],
                      now: datetime, out: TextIO, ocs: Sequence[OperatorCondition | Mapping[str, Any]] | None = None,
                      *, wide: bool = False, headers: bool = True, width: int | None = None) -> None:
    """Both tables, separated by a blank line, a requested release not accepted (ReleaseAccepted not True) between
    them; with ``ocs``, the Upgradeable section too.  ``wide``: the tables'
    extra columns (``-o wide``); without ``headers``, no header lines (``--no-headers``).  ``width``: a
    terminal's, which every line fits (:func:`format_table`); ``None`` (piped): lines as long as their cells.
    Objects not read into views yet are read here (:meth:`cvo.objects.Object.of`)."""
    from cvo.status.pending_release import pending_release, pending_text

    cv_view = ClusterVersion.of(cv)
    co_views = [ClusterOperator.of(co) for co in cos]
    out.write(clusterversion_table(cv_view, now, wide=wide, headers=headers, width=width))
    out.write("\n")
    if (pending := pending_release(cv_view)) is not None:  # under the ClusterVersion's line: never scrolled away
        out.write(pending_text(pending, width))
        out.write("\n")
    out.write(clusteroperators_table(co_views, now, completed_version(cv_view), wide=wide, headers=headers,
                                     width=width))
    if ocs is not None:
        out.write("\n")
        out.write(upgradeable_text(cv_view, co_views, [OperatorCondition.of(oc) for oc in ocs], headers=headers,
                                   width=width))
