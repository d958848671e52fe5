"""One self-contained HTML page: a Gantt-style timeline by run level, the critical path, the summary tables.

No script and nothing fetched: inline CSS, bars positioned in percent of the sweep's duration, details
on hover (``title`` attributes) and failures and retries listed in a ``<details>`` block to click open.
Every text taken from events is escaped (:func:`html.escape` with quotes): an events file is input.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape

from cvo.report.critical import Link, causes, critical_path
from cvo.report.fmt import duration, offset, percent, ticks
from cvo.report.model import Mark, NodeSpan, SweepSpan, Timeline
from cvo.report.summary import Summary, summarize

MAX_MARKS_LISTED = 500
MAX_MARKS_DRAWN = 2000
MAX_NODE_ROWS = 60  # rows of a pool's nodes drawn (a 500-node pool: the first 60, then how many more)


def e(value: object) -> str:
    return escape(str(value), quote=True)


CSS = """
*{box-sizing:border-box}
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 1.5em 2em;color:#1d2330;background:#fff}
h1{font-size:20px;margin:.8em 0 .2em}h2{font-size:16px;margin:1.4em 0 .4em;border-bottom:1px solid #d5d9e0}
h3{font-size:14px;margin:1em 0 .3em}.sub{color:#5a6372}
table{border-collapse:collapse;margin:.3em 0 1em}td,th{padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #eceef2}
th{background:#f4f5f8;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.tables{display:flex;flex-wrap:wrap;gap:0 2.5em}
ol.path{padding-left:2em;margin:.3em 0}ol.path li{margin:2px 0}
.sharebar{display:inline-block;width:120px;height:10px;background:#eceef2;vertical-align:middle;margin-right:6px}
.sharebar span{display:block;height:100%;background:#d33a2c}
li.backoff .sharebar span{background:#b58900}li.gap .sharebar span{background:#8a93a3}
.what{color:#5a6372}
.chart{position:relative;margin:.5em 0 1em;border:1px solid #d5d9e0}
.overlay{position:absolute;top:0;bottom:0;left:26em;right:0;pointer-events:none}
.band{position:absolute;top:0;bottom:0}
.band.attempt.odd{background:rgba(60,110,200,.06)}.band.attempt.even{background:rgba(60,110,200,.12)}
.band.backoff{background:repeating-linear-gradient(135deg,rgba(181,137,0,.18) 0 6px,rgba(181,137,0,.05) 6px 12px)}
.band.critical{border-left:2px solid #d33a2c;border-right:2px solid #d33a2c;background:none}
.row{display:flex;align-items:center;min-height:16px}
.row:hover{background:rgba(0,0,0,.03)}
.label{width:26em;flex:none;padding:0 6px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-size:12px}
.track{position:relative;flex:1;height:14px}
.level{font-weight:600;background:#f4f5f8;padding:2px 6px;border-top:1px solid #d5d9e0;font-size:12px}
.axis{height:20px;border-bottom:1px solid #d5d9e0;background:#fff}.axis .track{height:20px}
.tick{position:absolute;top:0;font-size:11px;color:#5a6372;border-left:1px solid #c4c9d2;padding-left:3px;height:20px}
.bar{position:absolute;top:2px;height:10px;background:#7aa6e0;min-width:2px;border-radius:2px}
.bar.cut{background:#b8c2d0}.bar.failed{background:#e58b82}
.bar.crit{outline:2px solid #d33a2c;z-index:2}
.bar .pct{position:absolute;left:100%;top:-3px;margin-left:4px;font-size:11px;color:#d33a2c;font-weight:600;white-space:nowrap}
.bar.endish .pct{left:auto;right:100%;margin:0 4px 0 0}
.bar.inside .pct{left:auto;right:0;margin:0 4px 0 0;top:-1px;color:#fff}
.wait{position:absolute;top:4px;height:6px;background:#2e7d32;min-width:2px;z-index:3}
.wait.notready{background:#ef6c00}
.tk{position:absolute;top:1px;width:1px;height:12px;background:#1d2330;opacity:.35;z-index:3}
.mk{position:absolute;top:-1px;font-size:11px;line-height:14px;margin-left:-4px;z-index:4;cursor:help}
.mk.failed,.mk.error,.mk.attempt{color:#c62828}.mk.retry,.mk.dependency{color:#ef6c00}.mk.degraded{color:#6a1b9a}
.bar.drain{background:#ffb74d}.bar.reboot{background:#64b5f6}.row.pool .label{font-weight:600}
.legend span{display:inline-block;margin-right:1.2em}.legend i{display:inline-block;width:14px;height:8px;margin-right:4px;vertical-align:middle}
details{margin:.5em 0 1em}summary{cursor:pointer;font-weight:600}
.msg{max-width:60em;white-space:pre-wrap;word-break:break-word}
"""


@dataclass
class _Scale:
    start: float
    span: float

    def pct(self, t: float) -> float:
        if self.span <= 0:
            return 0.0
        return min(100.0, max(0.0, 100.0 * (t - self.start) / self.span))

    def width(self, a: float, b: float) -> float:
        return max(0.0, self.pct(b) - self.pct(a))


def _style(scale: _Scale, a: float, b: float) -> str:
    return f"left:{scale.pct(a):.3f}%;width:{scale.width(a, b):.3f}%"


def _wait_title(w: object) -> str:
    from cvo.report.model import Wait

    assert isinstance(w, Wait)
    state = "ready" if w.ready else "not ready"
    return (f"clusteroperator {w.operator}: waited {duration(w.duration)} from {offset(w.start)} to "
            f"{offset(w.end)} ({state})" + (f"\n{w.reason}: {w.message}" if w.reason or w.message else ""))


def _rows(sweep: SweepSpan) -> dict[int, list[NodeSpan]]:
    rows: dict[int, list[NodeSpan]] = defaultdict(list)
    for attempt in sweep.attempts:
        for node in attempt.nodes:
            if node.tasks or node.size:
                rows[node.node].append(node)
    return rows


def _level_key(level: str | None) -> tuple[int, str]:
    return (1, "") if level is None else (0, level)


def _node_html(node: NodeSpan, scale: _Scale, crit: dict[tuple[int | None, int], Link], estimated: bool) -> Iterator[str]:
    link = crit.get((node.attempt, node.node))
    # the share goes right of the bar; left of it when the bar ends near the right edge; inside it when the bar also
    # starts near the left edge (left of it, it would cover the row's name)
    place = "" if scale.pct(node.end) <= 92 else (" endish" if scale.pct(node.start) > 8 else " inside")
    classes = f"bar {node.outcome}" + (" crit" if link else "") + place
    title = (f"attempt {node.attempt}, node {node.node}: {len(node.tasks)} tasks, {duration(node.duration)} "
             f"from {offset(node.start)} to {offset(node.end)} ({node.outcome})")
    if node.message:
        title += f"\n{node.message}"
    if link:
        title += f"\ncritical path: {percent(link.share)} of the sweep"
    pct = f'<span class="pct">{percent(link.share)}</span>' if link and link.share >= 0.01 else ""
    yield f'<div class="{classes}" style="{_style(scale, node.start, node.end)}" title="{e(title)}">{pct}</div>'
    for task in node.tasks:
        at = task.applied if task.applied is not None else task.start
        verb = "estimated" if estimated else (task.action or task.outcome)
        task_title = f"{task.task}\n{verb} at {offset(at)}, {duration(task.duration)} ({task.outcome})"
        if task.file:
            task_title += f"\nfile: {task.file}"
        yield f'<div class="tk" style="left:{scale.pct(at):.3f}%" title="{e(task_title)}"></div>'
        if task.wait is not None and task.wait.end >= task.wait.start:
            w = task.wait
            cls = "wait" + ("" if w.ready else " notready")
            yield f'<div class="{cls}" style="{_style(scale, w.start, w.end)}" title="{e(_wait_title(w))}"></div>'


def _mark_html(mark: Mark, scale: _Scale) -> str:
    symbol = {"retry": "↻", "dependency": "⧗", "degraded": "◆"}.get(mark.kind, "✕")
    title = f"{mark.kind} at {offset(mark.at)}: {mark.what}\n{mark.reason}: {mark.message}".rstrip(": ")
    return f'<span class="mk {e(mark.kind)}" style="left:{scale.pct(mark.at):.3f}%" title="{e(title)}">{symbol}</span>'


def _gantt(sweep: SweepSpan, links: list[Link], marks: list[Mark], estimated: bool) -> Iterator[str]:
    scale = _Scale(sweep.start, sweep.drawn_end - sweep.start)
    crit = {(link.attempt, link.node): link for link in links if link.kind == "node" and link.node is not None}
    yield '<div class="chart"><div class="overlay">'
    for i, attempt in enumerate(sweep.attempts):
        parity = "odd" if i % 2 else "even"
        title = f"attempt {attempt.number}: {offset(attempt.start)} to {offset(attempt.end)} ({attempt.outcome})"
        if attempt.message:
            title += f"\n{attempt.reason}: {attempt.message}"
        yield f'<div class="band attempt {parity}" style="{_style(scale, attempt.start, attempt.end)}" title="{e(title)}"></div>'
        if attempt.backoff is not None:
            b = attempt.backoff
            yield (f'<div class="band backoff" style="{_style(scale, b.start, b.end)}" title="'
                   f'{e(f"back-off after attempt {attempt.number}: {duration(b.end - b.start)}")}"></div>')
    yield "</div>"
    yield '<div class="row axis"><div class="label">time since the start</div><div class="track">'
    for t in ticks(sweep.drawn_end - sweep.start):
        yield f'<span class="tick" style="left:{scale.pct(sweep.start + t):.3f}%">{e(offset(t))}</span>'
    yield "</div></div>"
    # Marks without a node (an attempt failing) get a row of their own; the others go on their node's row.
    by_node: dict[tuple[int | None, int | None], list[Mark]] = defaultdict(list)
    for mark in marks[:MAX_MARKS_DRAWN]:
        by_node[(mark.attempt, mark.node)].append(mark)
    sweep_marks = [m for m in marks[:MAX_MARKS_DRAWN] if m.node is None]
    if sweep_marks or sweep.attempts:
        yield '<div class="row"><div class="label">attempts, back-offs, failures</div><div class="track">'
        yield from (_mark_html(m, scale) for m in sweep_marks)
        yield "</div></div>"
    rows = _rows(sweep)
    levels: dict[str | None, list[int]] = defaultdict(list)
    for node_id, spans in rows.items():
        levels[spans[-1].runlevel].append(node_id)
    for level in sorted(levels, key=_level_key):
        yield f'<div class="level">{"run level " + e(level) if level is not None else "no run level"}</div>'
        for node_id in sorted(levels[level]):
            spans = rows[node_id]
            last = spans[-1]
            name = last.tasks[0].task if last.tasks else ""
            label = f"node {node_id}" + (f" · {last.component}" if last.component else "") + (f" · {name}" if name else "")
            yield (f'<div class="row" id="s{sweep.index}-n{node_id}"><div class="label" title="{e(label)}">{e(label)}'
                   f'</div><div class="track">')
            for span in spans:
                yield from _node_html(span, scale, crit, estimated)
                for mark in by_node.get((span.attempt, node_id), []):
                    yield _mark_html(mark, scale)
            yield "</div></div>"
    yield from _pools_html(sweep, scale)
    yield "</div>"


def _pools_html(sweep: SweepSpan, scale: _Scale) -> Iterator[str]:
    """Under the run levels, each MachineConfigPool: a row for the pool, then one per node (drain, then the rest)."""
    for pool in sweep.pools:
        end = pool.end
        yield (f'<div class="level">machine config pool {e(pool.name)} · {pool.size} node'
               f'{"" if pool.size == 1 else "s"}, {pool.width} at a time</div>')
        title = (f"pool {pool.name}: nodes from {offset(pool.start)} to "
                 + (f"{offset(end)} ({duration(end - pool.start)})" if end is not None else "not all done yet"))
        bar_end = end if end is not None else sweep.drawn_end
        yield (f'<div class="row pool"><div class="label" title="{e(title)}">pool {e(pool.name)}</div>'
               f'<div class="track"><div class="bar {"done" if end is not None else "cut"}" '
               f'style="{_style(scale, pool.start, bar_end)}" title="{e(title)}"></div></div></div>')
        for node in pool.nodes[:MAX_NODE_ROWS]:
            drained = node.drained if node.drained is not None else (node.end or sweep.drawn_end)
            done = node.end if node.end is not None else sweep.drawn_end
            drain = f"{node.name}: drained in {duration(drained - node.start)} from {offset(node.start)}"
            rest = (f"{node.name}: written, rebooted and uncordoned in {duration(done - drained)}, done at "
                    f"{offset(done)}" if node.end is not None else f"{node.name}: not done when recorded")
            yield (f'<div class="row machine"><div class="label" title="{e(node.name)}">{e(node.name)}</div>'
                   f'<div class="track"><div class="bar drain" style="{_style(scale, node.start, drained)}" '
                   f'title="{e(drain)}"></div>')
            if node.drained is not None:
                yield (f'<div class="bar reboot{"" if node.end is not None else " cut"}" '
                       f'style="{_style(scale, drained, done)}" title="{e(rest)}"></div>')
            yield "</div></div>"
        if len(pool.nodes) > MAX_NODE_ROWS:
            yield (f'<div class="row machine"><div class="label">… {len(pool.nodes) - MAX_NODE_ROWS} more nodes'
                   f'</div><div class="track"></div></div>')


UNKNOWN = ("No critical path: the operators' durations are not known (cvo plan -o html --operators FILE, "
           "--scenario FILE or --recorded gives them); every task is drawn as one second.")


def _path_html(sweep: SweepSpan, links: list[Link], estimated: bool, coarse: bool = False) -> Iterator[str]:
    if estimated and sweep.result == "plan":
        yield f"<h3>{e(UNKNOWN)}</h3>"
        return
    if coarse and not any(a.nodes for a in sweep.attempts):
        yield "<h3>No critical path: no per-operator times for this sweep.</h3>"
        return
    word = "estimated critical path" if estimated else "critical path"
    if coarse:
        word += " (from the recorded ClusterOperator waits and the release's task graph)"
    count = len([x for x in links if x.kind != "gap"])
    yield f'<h3>The {word}: {duration(sweep.duration)}, {count} link{"" if count == 1 else "s"}</h3>'
    yield '<ol class="path">'
    for link in links:
        if link.kind == "gap" and link.share < 0.01:
            continue
        label = e(link.label)
        if link.kind == "node" and link.node is not None:
            label = f'<a href="#s{sweep.index}-n{link.node}">{label}</a>'
        what = f' <span class="what">— {e(link.what)}</span>' if link.what else ""
        yield (f'<li class="{link.kind}"><span class="sharebar"><span style="width:{100 * link.share:.2f}%"></span>'
               f'</span><b>{percent(link.share)}</b> {e(duration(link.duration))} {label}{what}</li>')
    yield "</ol>"
    yield "<table><tr><th>the path's time went to</th><th>time</th><th>share</th></tr>"
    for cause in causes(links, sweep.duration, coarse):
        yield f'<tr><td>{e(cause.name)}</td><td class="n">{duration(cause.seconds)}</td><td class="n">{percent(cause.share)}</td></tr>'
    yield "</table>"


def _summary_html(summary: Summary, timeline: Timeline) -> Iterator[str]:
    yield '<h2>Summary</h2><div class="tables">'
    yield "<div><h3>Slowest operators</h3><table><tr><th>operator</th><th>waited</th><th>waits</th><th>ready at</th></tr>"
    for row in summary.operators:
        ready = offset(row.ready_at) if row.ready_at is not None else "not ready"
        yield (f'<tr title="{e(row.last_reason + ": " + row.last_message)}"><td>{e(row.operator)}</td>'
               f'<td class="n">{duration(row.waited)}</td><td class="n">{row.waits}</td><td class="n">{e(ready)}</td></tr>')
    yield "</table></div>"
    yield "<div><h3>Longest waits</h3><table><tr><th>operator</th><th>attempt</th><th>from</th><th>waited</th><th></th></tr>"
    for w in summary.waits:
        yield (f'<tr title="{e(_wait_title(w))}"><td>{e(w.operator)}</td><td class="n">{e(w.attempt if w.attempt is not None else "")}</td>'
               f'<td class="n">{offset(w.start)}</td><td class="n">{duration(w.duration)}</td>'
               f'<td>{"ready" if w.ready else "not ready"}</td></tr>')
    yield "</table></div>"
    yield "<div><h3>Retries and failures by reason</h3><table><tr><th>kind</th><th>reason</th><th>count</th></tr>"
    for r in summary.reasons:
        yield (f'<tr title="{e(r.where + chr(10) + r.example)}"><td>{e(r.kind)}</td><td>{e(r.reason or "-")}</td>'
               f'<td class="n">{r.count}</td></tr>')
    if not summary.reasons:
        yield '<tr><td colspan="3">none</td></tr>'
    yield "</table></div>"
    yield "<div><h3>Requests by verb</h3><table><tr><th>verb</th><th>requests</th></tr>"
    for verb, count in summary.requests:
        yield f'<tr><td>{e(verb)}</td><td class="n">{count}</td></tr>'
    if not summary.requests:
        yield '<tr><td colspan="2">not known (no cluster.requests event)</td></tr>'
    yield "</table></div></div>"
    marks = timeline.marks
    yield f"<details><summary>Failures and retries ({len(marks)}), with their messages</summary>"
    yield "<table><tr><th>at</th><th>kind</th><th>what</th><th>reason</th><th>message</th></tr>"
    for m in marks[:MAX_MARKS_LISTED]:
        yield (f'<tr><td class="n">{offset(m.at)}</td><td>{e(m.kind)}</td><td>{e(m.what)}</td><td>{e(m.reason)}</td>'
               f'<td class="msg">{e(m.message)}</td></tr>')
    if len(marks) > MAX_MARKS_LISTED:
        yield f'<tr><td colspan="5">… and {len(marks) - MAX_MARKS_LISTED} more</td></tr>'
    yield "</table></details>"


LEGEND = ('<p class="legend"><span><i style="background:#7aa6e0"></i>node</span>'
          '<span><i style="background:#2e7d32"></i>ClusterOperator wait, ready</span>'
          '<span><i style="background:#ef6c00"></i>wait, not ready</span>'
          '<span><i style="background:#e58b82"></i>failed node</span><span><i style="background:#b8c2d0"></i>cut by the '
          'attempt\'s end</span><span><i style="outline:2px solid #d33a2c"></i>critical path</span>'
          '<span><i style="background:rgba(181,137,0,.4)"></i>back-off</span><span>✕ failure</span><span>↻ retry</span>'
          '<span>| task applied</span><span><i style="background:#ffb74d"></i>a pool\'s node: drain</span>'
          '<span><i style="background:#64b5f6"></i>its reboot</span></p>')


def render_html(timeline: Timeline, title: str, source: str = "") -> str:
    parts: list[str] = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
                        '<meta name="viewport" content="width=device-width,initial-scale=1">',
                        f"<title>{e(title)}</title><style>{CSS}</style></head><body>",
                        f"<h1>{e(title)}</h1>"]
    what = timeline.basis or ("an estimate from the plan, before anything runs" if timeline.estimated
                              else f"{timeline.events} events")
    clock = ("times from the start of the first sweep" if timeline.from_records
             else "times are on the sweep's clock, from its first event")
    parts.append(f'<p class="sub">{e(source)}{" · " if source else ""}{e(what)} · {len(timeline.sweeps)} sweep(s) · '
                 f"{clock}</p>")
    parts.append(LEGEND)
    coarse = timeline.from_records
    for sweep in timeline.sweeps:
        links = [] if timeline.estimated and sweep.result == "plan" else critical_path(sweep, coarse)
        head = (f"{sweep.mode or 'sweep'} {sweep.version}".strip() + f": {sweep.result}, {duration(sweep.duration)}, "
                f"{sweep.attempts_text}, from {offset(sweep.start)}")
        parts.append(f'<section class="sweep" id="sweep-{sweep.index}"><h2>{e(head)}</h2>')
        if sweep.message:
            parts.append(f'<p class="msg">{e(sweep.message)}</p>')
        if sweep.note:
            parts.append(f'<p class="sub note">{e(sweep.note)}</p>')
        parts.extend(_path_html(sweep, links, timeline.estimated, coarse))
        marks = [m for m in timeline.marks if sweep.start <= m.at <= sweep.end]
        parts.extend(_gantt(sweep, links, marks, timeline.estimated))
        parts.append("</section>")
    if not timeline.sweeps:
        parts.append("<p>No sweep in these records.</p>" if timeline.from_records else "<p>No sweep in these events.</p>")
    parts.extend(_summary_html(summarize(timeline), timeline))
    parts.append("</body></html>\n")
    return "".join(parts)
