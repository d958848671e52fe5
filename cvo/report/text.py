"""The report for a terminal: each sweep's critical path and what it went to, then the summary tables.

Text from events is made printable (control characters escaped): an events file must not be able to
move a terminal's cursor or change its colours.
"""

from __future__ import annotations

import statistics

from cvo.payload.limits import printable
from cvo.report.critical import causes, critical_path
from cvo.report.fmt import duration, offset, percent
from cvo.report.model import PoolSpan, Timeline
from cvo.report.summary import summarize


def p(value: object, limit: int = 140) -> str:
    return printable(str(value), limit)


def _pool_line(pool: PoolSpan) -> str:
    """``pool worker: 6 nodes, 1 at a time, 18m00s from +1m10s; drains 1m00s, reboots 2m00s (medians)``."""
    drains = [n.drained - n.start for n in pool.nodes if n.drained is not None]
    reboots = [n.end - n.drained for n in pool.nodes if n.end is not None and n.drained is not None]
    end = pool.end
    span = f"{duration(end - pool.start)} from {offset(pool.start)}" if end is not None else (
        f"from {offset(pool.start)}, {sum(n.end is not None for n in pool.nodes)} of {len(pool.nodes)} done")
    phases = ", ".join(f"{word} {duration(statistics.median(values))}" for word, values in
                       (("drains", drains), ("reboots", reboots)) if values)
    return (f"pool {p(pool.name, 60)}: {pool.size} node{'' if pool.size == 1 else 's'}, {pool.width} at a time, "
            f"{span}" + (f"; {phases} (medians)" if phases else ""))


def render_text(timeline: Timeline, title: str) -> str:
    lines = [p(title, 200)]
    coarse = timeline.from_records
    if timeline.basis:
        lines.append(p(timeline.basis, 300))
    if not timeline.sweeps:
        lines.append("no sweep in these records" if coarse else "no sweep in these events")
    for sweep in timeline.sweeps:
        links = critical_path(sweep, coarse)
        lines += ["", f"{p(sweep.mode or 'sweep')} {p(sweep.version)}: {sweep.result}, {duration(sweep.duration)}, "
                      f"{sweep.attempts_text}, from {offset(sweep.start)}".replace("  ", " ")]
        if sweep.note:
            lines.append(f"  ({p(sweep.note, 300)})")
        lines += [f"  {_pool_line(pool)}" for pool in sweep.pools]
        if timeline.estimated and sweep.result == "plan":
            lines.append("  no critical path: the operators' durations are not known")
            continue
        if coarse and not any(a.nodes for a in sweep.attempts):
            continue
        word = "estimated critical path" if timeline.estimated else "critical path"
        lines.append(f"  {word}:")
        lines.append(f"    {'share':>6} {'time':>7}  link")
        for link in links:
            if link.kind == "gap" and link.share < 0.01:
                continue
            lines.append(f"    {percent(link.share):>6} {duration(link.duration):>7}  {p(link.label)}")
            if link.what:
                lines.append(f"    {'':>6} {'':>7}    {p(link.what)}")
        lines.append("  the path's time went to:")
        for cause in causes(links, sweep.duration, coarse)[:10]:
            lines.append(f"    {percent(cause.share):>6} {duration(cause.seconds):>7}  {p(cause.name)}")
    summary = summarize(timeline)
    lines += ["", "slowest operators:"]
    lines += [f"  {p(r.operator, 40):<32} {duration(r.waited):>7} in {r.waits} wait(s), "
              + (f"ready at {offset(r.ready_at)}" if r.ready_at is not None else "not ready")
              for r in summary.operators] or ["  none"]
    lines += ["longest waits:"]
    lines += [f"  {p(w.operator, 40):<32} {duration(w.duration):>7} from {offset(w.start)} ("
              + (f"attempt {w.attempt}, " if w.attempt is not None else "")
              + f"{'ready' if w.ready else 'not ready'})" for w in summary.waits] or ["  none"]
    lines += ["retries and failures by reason:"]
    lines += [f"  {r.count:>5} {p(r.kind)} {p(r.reason or '-')}: {p(r.example, 100)}" for r in summary.reasons] or ["  none"]
    lines += ["requests by verb:"]
    lines += [f"  {p(verb, 40):<16} {count:>7}" for verb, count in summary.requests] or ["  not known"]
    return "\n".join(lines) + "\n"
