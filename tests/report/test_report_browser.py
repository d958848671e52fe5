"""The report in a real browser: Debian's chromium, headless (installed by hack/install-chromium.sh,
which ``make test`` runs; the ``browser`` fixture runs it too when chromium is missing, and fails —
never skips — when it cannot).  The page loads from disk, shows the critical path naming the slow
operator, writes nothing to its console, and the corpus install's page is small and quick."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cvo.cli.main import main
from tests.report.test_report_records import install_and_upgrade
from tests.report.test_report_render import Page
from tests.support import headless
from tests.support.helpers import CORPUS, REPO

MAX_PAGE_BYTES = 2 * 1024 * 1024
MAX_RENDER_MS = 2000.0


@pytest.fixture(scope="module")
def browser() -> str:
    try:
        return headless.chromium()
    except headless.NoBrowser as err:
        pytest.fail(str(err))



def test_the_console_check_sees_errors(browser: str, tmp_path: Path) -> None:
    """The check below can fail: a page with a console error and an uncaught one is caught."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><script>console.error("boom"); nope();</script></body></html>')
    console = headless.dump_dom(page).console
    assert len(console) == 2 and '"boom"' in console[0] and "nope is not defined" in console[1]


def test_slow_operator_scenario_in_chromium(browser: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "-q", str(REPO / "scenarios" / "upgrade-slow-operator.yaml"), "--report",
                 str(tmp_path)]) == 0
    page = tmp_path / "upgrade-slow-operator.html"
    dom = headless.dump_dom(page)
    assert dom.console == []
    parsed = Page(dom.stdout)
    text = " ".join(" ".join(parsed.text).split())
    assert "scenario: upgrade slow operator" in text and "The critical path: 51m00s" in text
    # the path's first cause, as the browser shows it: the slow operator
    assert "the path's time went to time share clusteroperator dns 31m22s 61.5%" in text
    crit = [v for k, v in parsed.attrs if k == "class" and "crit" in v.split()]
    assert len(crit) >= 7  # dns's node in each of its seven attempts
    png = tmp_path / "slow.png"
    shot = headless.screenshot(page, png, 1400, 1200)
    assert shot.console == [] and headless.png_size(png) == (1400, 1200)
    assert png.stat().st_size > 20_000  # a drawn page, not a blank one


def test_corpus_install_page_is_small_and_quick(browser: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    events = tmp_path / "install.jsonl"
    assert main(["install", str(CORPUS), "--state", "none", "--events", str(events), "-o", "json"]) == 0
    page = tmp_path / "install.html"
    assert main(["report", str(events), "--output-file", str(page)]) == 0
    assert page.stat().st_size < MAX_PAGE_BYTES
    dom = headless.dump_dom(page)
    assert dom.console == []
    text = " ".join(" ".join(Page(dom.stdout).text).split())
    assert "install 5.0.0-0.nightly-2026-08-22-120000: completed" in text and "The critical path" in text
    assert re.search(r"Requests by verb verb requests create \d{4} get \d+ ", text)  # an install: creates first
    assert headless.render_ms(page, tmp_path) < MAX_RENDER_MS


def test_plan_page_in_chromium(browser: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["plan", str(REPO / "payloads" / "demo-4.16.3"), "-o", "html", "--scenario",
                 str(REPO / "scenarios" / "upgrade-slow-operator.yaml")]) == 0
    page = tmp_path / "plan.html"
    page.write_text(capsys.readouterr().out)
    dom = headless.dump_dom(page)
    assert dom.console == []
    assert "clusteroperator dns 45m00s 88.2%" in " ".join(" ".join(Page(dom.stdout).text).split())


def test_report_from_the_clusters_records_in_chromium(browser: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """``cvo install`` and ``cvo upgrade`` of the demo payloads with dns taking 45 minutes (the operators of
    scenarios/upgrade-slow-operator.yaml), then ``cvo report`` from what they recorded on the embedded cluster."""
    state = install_and_upgrade(tmp_path)
    page = tmp_path / "records.html"
    assert main(["report", "--state", str(state), "--output-file", str(page)]) == 0
    assert page.stat().st_size < MAX_PAGE_BYTES
    dom = headless.dump_dom(page)
    assert dom.console == []
    parsed = Page(dom.stdout)
    text = " ".join(" ".join(parsed.text).split())
    assert "cvo report from the cluster's records: install 4.16.0, update 4.16.3" in text
    assert "the ClusterVersion's history (2 entries), 2 sweep record(s)" in text
    assert "install 4.16.0: completed, 46m00s, 9 attempts, from +0s" in text
    assert "update 4.16.3: completed, 51m00s, 7 attempts, from +46m00s" in text
    update = text.split("update 4.16.3: completed")[1]
    assert ("The critical path (from the recorded ClusterOperator waits and the release's task graph): 51m00s, "
            "7 links") in update
    # the path's first cause, as the browser shows it: the slow operator
    assert "the path's time went to time share clusteroperator dns 45m00s 88.2%" in update
    assert re.search(r"Retries and failures by reason kind reason count attempt ClusterOperatorNotAvailable 8 ", text)
    crit = [v for k, v in parsed.attrs if k == "class" and "crit" in v.split()]
    assert len(crit) == 2 + 7  # the install's path and the update's
    titles = [v for k, v in parsed.attrs if k == "title" and v.startswith("clusteroperator dns: waited 45m")]
    assert len(titles) == 4  # a wait bar per sweep, and its row in the longest waits
    png = tmp_path / "records.png"
    shot = headless.screenshot(page, png, 1400, 1200)
    assert shot.console == [] and headless.png_size(png) == (1400, 1200)
    assert png.stat().st_size > 20_000
    assert headless.render_ms(page, tmp_path) < MAX_RENDER_MS


OVERLAP_PROBE = """<script>
let overlaps = 0, inside = 0;
for (const pct of document.querySelectorAll('.bar .pct')) {
  const row = pct.closest('.row'), label = row && row.querySelector('.label');
  if (pct.closest('.bar').classList.contains('inside')) inside++;
  if (!label) continue;
  const a = pct.getBoundingClientRect(), b = label.getBoundingClientRect();
  if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlaps++;
}
document.body.dataset.overlaps = overlaps; document.body.dataset.inside = inside;
</script>"""


def test_a_critical_bar_as_wide_as_the_sweep_keeps_its_share_off_the_rows_name(browser: str, tmp_path: Path) -> None:
    """The share of a critical bar that starts at the left edge and ends at the right one is drawn inside it:
    left of it, it covered the row's name."""
    from datetime import UTC, datetime, timedelta

    from cvo.report.events_io import event_line
    from cvo.runner.sweep_events import decode

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    events = [decode(t0, "sweep.started", {"version": "4.16.3", "mode": "update", "total": 2}),
              decode(t0, "attempt.started", {"attempt": 1, "nodes": 2, "workers": 1}),
              decode(t0, "node.started", {"node": 0, "tasks": 1, "runlevel": "10", "component": "kube-apiserver"}),
              decode(t0 + timedelta(minutes=30), "node.done", {"node": 0}),
              decode(t0 + timedelta(minutes=30), "sweep.completed", {"version": "4.16.3", "attempts": 1})]
    source = tmp_path / "wide.jsonl"
    source.write_bytes(b"".join(event_line(e) for e in events))
    page = tmp_path / "wide.html"
    assert main(["report", str(source), "--output-file", str(page)]) == 0
    probe = tmp_path / "wide.probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", OVERLAP_PROBE + "</body>", 1),
                     encoding="utf-8")
    dom = headless.dump_dom(probe)
    assert dom.console == []
    inside = re.search(r'data-inside="(\d+)"', dom.stdout)
    overlaps = re.search(r'data-overlaps="(\d+)"', dom.stdout)
    assert inside is not None and overlaps is not None, dom.stderr[-1500:]
    assert int(inside.group(1)) >= 1  # the case: a bar from edge to edge, its share shown
    assert int(overlaps.group(1)) == 0
