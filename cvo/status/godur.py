"""Go's ``time.Duration`` arithmetic and text, and Go's ``text/tabwriter``, as ``oc adm upgrade status`` uses them.

The view of :mod:`cvo.status.upgrade_status` must print what oc prints, to the character: durations are
integer nanoseconds (as Go's are; instants parsed by :mod:`cvo.objects.times`), rounded and truncated the way ``Duration.Round`` and ``Duration.Truncate``
do, printed by ``Duration.String`` and oc's ``shortDuration`` (pkg/cli/admin/upgrade/status/health.go), and
tables are laid out by a port of ``text/tabwriter`` (column blocks end at a line with fewer cells, which is
how a multi-line message shifts the columns after it).  Instants are nanoseconds since the Unix epoch.
"""

from __future__ import annotations

from cvo.objects.times import from_ns, parse_datetime, parse_time, to_ns

__all__ = ["HOUR", "MINUTE", "SECOND", "ZERO_TIME", "from_ns", "go_round", "go_string", "go_truncate",
           "parse_datetime", "parse_time", "rfc3339", "short_duration", "tabwrite", "to_ns"]

SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
# Go's zero time.Time (0001-01-01T00:00:00Z): what a missing timestamp reads as.
ZERO_TIME = -62135596800 * SECOND


def rfc3339(ns: int) -> str:
    """``Time.UTC().Format(time.RFC3339)``: seconds precision, ``Z``."""
    return from_ns(ns).strftime("%Y-%m-%dT%H:%M:%SZ") if ns >= 0 else "0001-01-01T00:00:00Z"


def go_round(d: int, m: int) -> int:
    """``Duration.Round``: to the nearest multiple of ``m``, halves away from zero."""
    if m <= 0:
        return d
    if d < 0:
        return -go_round(-d, m)
    r = d % m
    return d - r if r + r < m else d + m - r


def go_truncate(d: int, m: int) -> int:
    """``Duration.Truncate``: towards zero."""
    if m <= 0:
        return d
    r = abs(d) % m
    return d - r if d >= 0 else d + r


def _frac(v: int, prec: int) -> tuple[str, int]:
    """Go's ``fmtFrac``: the fraction of ``v`` / 10**prec without trailing zeros, and the integer part."""
    digits = []
    printed = False
    for _ in range(prec):
        digit = v % 10
        printed = printed or digit != 0
        if printed:
            digits.append(str(digit))
        v //= 10
    frac = "".join(reversed(digits))
    return ("." + frac if frac else ""), v


def go_string(d: int) -> str:
    """``Duration.String``: ``72h3m0.5s``, ``1m0s``, ``368.975µs``, ``0s``."""
    if d == 0:
        return "0s"
    sign = "-" if d < 0 else ""
    u = abs(d)
    if u < SECOND:
        if u < 1000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            frac, whole = _frac(u, 3)
            return f"{sign}{whole}{frac}µs"
        frac, whole = _frac(u, 6)
        return f"{sign}{whole}{frac}ms"
    frac, secs = _frac(u, 9)
    text = f"{secs % 60}{frac}s"
    minutes = secs // 60
    if minutes > 0:
        text = f"{minutes % 60}m{text}"
        hours = minutes // 60
        if hours > 0:
            text = f"{hours}h{text}"
    return sign + text


def _parse_whole_seconds(text: str) -> int | None:
    """``time.ParseDuration`` of the text oc builds by cutting a duration at its dot and adding ``s``."""
    total, number = 0, ""
    units = {"h": HOUR, "m": MINUTE, "s": SECOND}
    sign = 1
    if text.startswith("-"):
        sign, text = -1, text[1:]
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isdigit():
            number += ch
        elif ch in units and number:
            total += int(number) * units[ch]
            number = ""
        else:
            return None
        i += 1
    return None if number else sign * total


def short_duration(d: int) -> str:
    """oc's ``shortDuration``: ``now`` for zero, no trailing zero units, fractions of seconds cut off."""
    orig = go_string(d)
    if orig in ("0h0m0s", "0s"):
        return "now"
    if orig.endswith("h0m0s"):
        return orig[:-4]
    if orig.endswith("m0s"):
        return orig[:-2]
    if orig.endswith("h0m"):
        return orig[:-2]
    if "." in orig:
        parsed = _parse_whole_seconds(orig[:orig.index(".")] + "s")
        return orig if parsed is None else short_duration(parsed)
    return orig


def tabwrite(text: str, padding: int = 3) -> str:
    """Go's ``tabwriter.NewWriter(w, 0, 0, padding, ' ', 0)`` applied to ``text`` (then flushed).

    Cells end at a tab; the text after a line's last tab is not aligned.  A column's width is its
    widest cell plus ``padding``, over a block of consecutive lines that all have a cell in it.
    """
    lines = [line.split("\t") for line in text.split("\n")]
    out: list[str] = []
    _format(lines, 0, len(lines), [], out, padding)
    return "\n".join(out)


def _format(lines: list[list[str]], line0: int, line1: int, widths: list[int], out: list[str],
            padding: int) -> None:
    column = len(widths)
    this = line0
    while this < line1:
        if column >= len(lines[this]) - 1:
            this += 1
            continue
        _write_lines(lines, line0, this, widths, out)
        line0 = this
        width = 0
        while this < line1 and column < len(lines[this]) - 1:
            width = max(width, len(lines[this][column]) + padding)
            this += 1
        _format(lines, line0, this, [*widths, width], out, padding)
        line0 = this
    _write_lines(lines, line0, line1, widths, out)


def _write_lines(lines: list[list[str]], line0: int, line1: int, widths: list[int], out: list[str]) -> None:
    for cells in lines[line0:line1]:
        out.append("".join(cell.ljust(widths[j]) if j < len(widths) else cell for j, cell in enumerate(cells)))
