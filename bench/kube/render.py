"""The section's text: the cvo-vs-kubectl table, requests by verb, CPU, where cvo's time goes, reaction delay."""

from __future__ import annotations

import os
import statistics
from collections import Counter

from bench.kube.prepare import Prepared
from bench.kube.reaction import Reaction
from bench.kube.settings import KUBECTL, TIMEOUT
from bench.kube.tool_runs import ToolRun


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: with fewer than 100 samples, p99 is the largest."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "—" if value is None else format(value, spec)


def _ratio(numerator: float | None, denominator: float | None) -> str:
    return f"{numerator / denominator:.2f}" if numerator and denominator else "—"


def _row(tool: str, docs: int, runs: list[ToolRun], ratio: str, errors: str) -> str:
    runs = [r for r in runs if r.wall is not None]  # killed or not run: reported in the errors column
    wall = _median([r.wall for r in runs if r.wall is not None])
    requests = _median([float(r.requests["total"]) for r in runs])
    rate = _median([r.requests["total"] / r.wall for r in runs if r.wall])
    return f"| {tool} | {docs} | {_fmt(wall)} | {_fmt(requests, '.0f')} | {_fmt(rate, '.0f')} | {errors} | {ratio} |"


def render(prep: Prepared, repeats: int, cvo_runs: list[ToolRun], kubectl_runs: list[ToolRun], kubectl: str | None,
           apiserver: str, react: Reaction, first_write: tuple[float, float] | None = None) -> list[str]:
    dropped = ", ".join(f"{n} {kind}" for kind, n in prep.dropped_unserved.most_common()) or "none"
    lines = [
        f"Input, prepared once: the corpus as cvo loads it (default profile and feature set: {prep.dropped_load} "
        f"documents for other profiles or feature sets left out, and {prep.dropped_delete} that cvo deletes "
        f"rather than applies), minus the kinds a plain kube-apiserver cannot serve (neither built in, by its "
        f"discovery, nor defined by a CRD in the payload): {dropped}. That leaves **{prep.documents} documents** "
        f"in {prep.files} files, each written as JSON under its original name, so both tools read the same "
        f"objects in the same order and run levels. Every run gets a fresh control plane (etcd and "
        f"kube-apiserver {apiserver}, `tests/e2e/controlplane.py`) with `cvo bootstrap` applied first (not timed); "
        f"runs alternate between the tools, {repeats} each.",
        "",
        f"*cvo*: `cvo install DIR --kubeconfig K -o json --timeout {TIMEOUT}` timed as a whole process (start-up, "
        f"load with a warm parse cache, sweep, report), with `cvo sim-operators` running beside it, every operator "
        f"reporting Available at once (`default: {{delay: 0s}}`): it returns only when all "
        f"{prep.cluster_operators} ClusterOperators are Available. *kubectl*: `kubectl apply --server-side "
        f"--force-conflicts -f DIR/manifests -f DIR/release-manifests` (" + (
            f"`{KUBECTL}` → `{os.path.realpath(KUBECTL)}`, {kubectl}, the Google Cloud SDK's packaged kubectl"
            if kubectl else f"`{KUBECTL}` is missing: no kubectl runs") +
        "); it waits on nothing, and a custom resource whose CRD is in the same apply fails (kubectl maps every "
        "kind before it applies anything). Its errors are the documents not applied; further passes on the same "
        "server show what repeating it achieves. Requests: `apiserver_request_total` from the API server's "
        "`/metrics` before and after (they include the API server's own internal requests and, for cvo, "
        "sim-operators' requests and watches).",
        "",
        "| tool | documents | wall s (median) | requests | requests/s | errors | ratio cvo/kubectl |",
        "|---|---|---|---|---|---|---|",
    ]
    cvo_wall = _median([r.wall for r in cvo_runs if r.wall is not None])
    failed = [r for r in cvo_runs if not r.ok]
    cvo_errors = (f"{_fmt(_median([float(r.errors) for r in cvo_runs if r.wall is not None]), '.0f')} task failures, "
                  f"{_fmt(_median([float(len(r.breakdown.attempts)) for r in cvo_runs if r.breakdown]), '.0f')} attempts"
                  + (f"; {len(failed)} of {len(cvo_runs)} runs failed: {failed[0].note}" if failed else ""))
    kubectl_wall = _median([r.wall for r in kubectl_runs if r.wall is not None])
    repeated_wall: float | None = None
    lines.append(_row(f"cvo install (waits on {prep.cluster_operators} ClusterOperators)", prep.documents, cvo_runs,
                      "—", cvo_errors))
    if kubectl is None:
        lines.append(f"| kubectl | {prep.documents} | — | — | — | not installed ({KUBECTL} missing) | — |")
    else:
        done = [r for r in kubectl_runs if r.wall is not None]
        errs = _median([float(r.errors) for r in done])
        broken = [r for r in kubectl_runs if r.wall is None]
        lines.append(_row("kubectl apply --server-side, one pass", prep.documents, kubectl_runs,
                          _ratio(cvo_wall, kubectl_wall),
                          (f"{_fmt(errs, '.0f')} not applied: {done[0].note}" if done else "—")
                          + (f"; {len(broken)} of {len(kubectl_runs)} runs failed: {broken[0].note}" if broken else "")))
        # Up to the first pass that reached the fewest errors: the end state repeating kubectl achieves.
        passes = [ps[:1 + min(range(len(ps)), key=lambda i: ps[i][2])] for ps in (r.passes for r in kubectl_runs)
                  if ps]
        if passes:
            total = [ToolRun(sum(p[0] for p in ps), Counter(total=sum(p[1] for p in ps)), ps[-1][2], ps[-1][2] == 0)
                     for ps in passes]
            counts = "/".join(str(n) for n in sorted({len(ps) for ps in passes}))
            repeated_wall = _median([r.wall for r in total if r.wall])
            lines.append(_row(f"kubectl, repeated until its errors stop falling ({counts} passes)", prep.documents,
                              total, _ratio(cvo_wall, repeated_wall),
                              f"{_fmt(_median([float(r.errors) for r in total]), '.0f')} never applied"))
    lines.append("")
    if cvo_wall and kubectl_wall:
        verdict = "met" if cvo_wall * 2 <= kubectl_wall else "not met"
        text = (f"Goal \"at least 2× faster than kubectl apply while waiting on every ClusterOperator\", against "
                f"one kubectl pass: **{verdict}** — cvo takes {cvo_wall / kubectl_wall:.2f}× kubectl's wall time "
                f"({cvo_wall:.1f} s vs {kubectl_wall:.1f} s, {kubectl_wall / cvo_wall:.1f}× faster), although that "
                f"pass leaves documents unapplied.")
        if repeated_wall:
            verdict = "met" if cvo_wall * 2 <= repeated_wall else "not met"
            text += (f" Against kubectl repeated until its errors stop falling (the nearest kubectl gets to an "
                     f"install, still short of one): **{verdict}** — {cvo_wall / repeated_wall:.2f}× "
                     f"({repeated_wall / cvo_wall:.1f}× faster).")
        lines += [text, ""]
    verbs = []
    for tool, runs in (("cvo", cvo_runs), ("kubectl (first pass)", kubectl_runs)):
        if runs:
            names = sorted({k for r in runs for k in r.requests if k.startswith("verb:") and r.requests[k] > 0},
                           key=lambda k: -max(r.requests[k] for r in runs))
            if names:
                verbs.append(f"{tool}: " + ", ".join(
                    f"{k[5:]} {_fmt(_median([float(r.requests[k]) for r in runs]), '.0f')}" for k in names))
    if verbs:
        per_doc = []
        for tool, runs in (("cvo", cvo_runs), ("kubectl (first pass)", kubectl_runs)):
            total = _median([float(r.requests["total"]) for r in runs if r.wall is not None])
            if total:
                per_doc.append(f"{tool} {total / prep.documents:.2f}")
        lines += ["Requests by verb (medians): " + "; ".join(verbs) + ". Requests per document (the server's "
                  "own and sim-operators' included): " + ", ".join(per_doc) + ".", ""]
    lines += cpu_lines(cvo_runs, kubectl_runs)
    lines += where_cvo_time_goes(cvo_runs)
    lines += crd_lines(cvo_runs, first_write, prep.needed_crds)
    lines += reaction_lines(react, prep)
    return lines


def cpu_lines(cvo_runs: list[ToolRun], kubectl_runs: list[ToolRun]) -> list[str]:
    """Who used the machine's CPU during the runs: the server, the tool, sim-operators."""
    cores = os.cpu_count() or 1
    parts = []
    for tool, runs in (("cvo", cvo_runs), ("kubectl (first pass)", kubectl_runs)):
        done = [r for r in runs if r.wall]
        if not done:
            continue
        wall = _median([r.wall for r in done if r.wall])
        server = _median([r.requests["server_cpu_ms"] / 1000 for r in done])
        own = _median([r.cpu for r in done])
        helper = _median([r.helper_cpu for r in done]) if tool == "cvo" else 0.0
        busy = ((server or 0.0) + (own or 0.0) + (helper or 0.0)) / (wall or 1.0) / cores
        parts.append(f"{tool}: kube-apiserver + etcd {_fmt(server, '.1f')} s, the tool itself {_fmt(own, '.1f')} s"
                     + (f", sim-operators {_fmt(helper, '.1f')} s" if tool == "cvo" else "")
                     + f" over {_fmt(wall, '.1f')} s of wall time ({100 * busy:.0f} % of {cores} cores)")
    if not parts:
        return []
    lines = ["CPU seconds during a run (medians): " + "; ".join(parts) + ". Most of it is the API server's own "
             "work on the payload's CRDs (validating and storing their schemas, then re-publishing OpenAPI and "
             "discovery for each one), which both tools cause; once the server is the bottleneck, more parallel "
             "requests from cvo cannot make the install faster on this machine.", ""]
    done = [r for r in cvo_runs if r.wall]
    if done:
        wall = _median([r.wall for r in done if r.wall]) or 0.0
        server = _median([r.requests["server_cpu_ms"] / 1000 for r in done]) or 0.0
        own = _median([r.cpu for r in done]) or 0.0
        helper = _median([r.helper_cpu for r in done]) or 0.0
        if server:
            floor = server / cores
            machine = (server + own + helper) / cores
            lines += [f"How close cvo is to the server's limit: were the API server's CPU the only cost, the install "
                      f"would take its CPU time over the {cores} cores, {floor:.1f} s; cvo's wall time is "
                      f"{wall / floor:.2f}× that. With cvo's own and sim-operators' CPU on the same cores "
                      f"({own:.1f} s and {helper:.1f} s), the machine cannot do it in less than {machine:.1f} s: "
                      f"{wall / machine:.2f}×. The rest is waiting: for CRDs to be Established before their "
                      "custom resources apply, for ClusterOperators to report.", ""]
    return lines


def where_cvo_time_goes(runs: list[ToolRun]) -> list[str]:
    timed_runs = sorted((r for r in runs if r.wall is not None and r.breakdown), key=lambda r: r.wall or 0.0)
    if not timed_runs:
        return []
    r = timed_runs[(len(timed_runs) - 1) // 2]  # the median run (the lower one of an even count)
    b = r.breakdown
    assert b is not None and r.wall is not None
    codes = ", ".join(f"{r.requests[k]} {k[5:]}" for k in sorted(r.requests, key=lambda k: -r.requests[k])
                      if k.startswith("code:") and r.requests[k] > 0) or "none"
    if r.requests.get("code:404"):
        codes += ("; a 404 is a create into a namespace another node has not created yet, or a discovery "
                  "look-up of a kind whose CRD is not Established yet (cvo then waits for it and applies again), "
                  "or a read of an object that does not exist yet")
    parts = []
    for i, a in enumerate(b.attempts, start=1):
        failed = ", ".join(f"{n} {reason}" for reason, n in a.task_failures.most_common())
        what = ("completed" if a.errors == 0 else
                f"{a.errors} failed node(s), " + (f"task failures: {failed}" if failed else "none of them a task's"))
        parts.append(f"attempt {i}: {a.seconds:.1f} s, {what}" + (f", then {a.backoff:.1f} s back-off" if a.backoff
                                                                    else ""))
    return [
        f"Where cvo's time goes (its median run, {r.wall:.1f} s, from its own events): start-up and load "
        f"{b.startup:.1f} s; {len(b.attempts)} attempt(s) applying and waiting {b.applying:.1f} s in all; back-off "
        f"between a failed attempt and the next {b.backoff:.1f} s in all (the CVO's interval/8, /4, /2, then the "
        f"interval, 3m by default, +20 % jitter); final status and report {b.finish:.1f} s. " + "; ".join(parts)
        + f". 4xx/5xx answers: {r.requests['errors']} ({codes})"
        + (f"; {r.requests['cv_conflicts']} were 409 Conflicts on the ClusterVersion status that cvo writes from its "
           "parallel nodes (a Conflict on the write after a task fails that node without a `task.failed` event, "
           "and the attempt with it; one during a ClusterOperator wait re-applies the task after its back-off)"
           if r.requests["cv_conflicts"] else "; none on the ClusterVersion status") + ".",
        "",
    ]


def crd_lines(runs: list[ToolRun], first_write: tuple[float, float] | None, needed: frozenset[str]) -> list[str]:
    """What bounds the install: when the payload's CRDs were created and Established (the median run)."""
    timed_runs = sorted((r for r in runs if r.wall is not None and r.crds), key=lambda r: r.wall or 0.0)
    if not timed_runs:
        return []
    r = timed_runs[(len(timed_runs) - 1) // 2]
    assert r.wall is not None and r.breakdown is not None
    took = [e - c for _, c, e in r.crds]
    used = [(c, e) for name, c, e in r.crds if name in needed]
    others = [(c, e) for name, c, e in r.crds if name not in needed]

    def last(pairs: list[tuple[float, float]], i: int) -> str:
        return f"{max(p[i] for p in pairs):.0f} s" if pairs else "—"

    probe = (f" On an idle server (measured once, on the control plane the input was prepared on), the first "
             f"create of a kind whose CRD was just Established took {first_write[0]:.2f} s and the next one "
             f"{1000 * first_write[1]:.0f} ms: a fixed wait in the API server before it serves the first write "
             "of a new kind, which the first custom resource of each kind meets."
             if first_write else "")
    end = r.wall - r.breakdown.finish
    return [
        f"What bounds the install (the median run, {r.wall:.1f} s; times from the process start, whole seconds "
        f"as the API server stamps them): cvo sends the payload's {len(r.crds)} CRDs when the attempt starts, "
        f"8 at a time, first the {len(used)} whose kinds the payload applies (created by {last(used, 0)}, "
        f"Established by {last(used, 1)}), then the other {len(others)} (created by {last(others, 0)}, "
        f"Established by {last(others, 1)}). The API server establishes CRDs one after another (from creation to "
        f"Established: median {statistics.median(took):.0f} s, at most {max(took):.0f} s) while it serves the "
        f"rest of the payload's creates and re-publishes OpenAPI and discovery for each CRD.{probe} After that, "
        f"until the sweep ends at {end:.1f} s, the custom resources and what follows them in their nodes are "
        "created one request after another on a busy server (a node's tasks run in order, and the longest "
        "nodes have dozens), and the last ClusterOperators report.",
        "",
    ]


def _stats(values: list[float]) -> str:
    ms = [1000 * v for v in values]
    return f"median {statistics.median(ms):.1f} ms, p99 {percentile(ms, 99):.1f} ms over {len(ms)}"


def reaction_lines(react: Reaction, prep: Prepared) -> list[str]:
    head = ("Reaction delay, from one more run: `cvo install` (with `--interval 30s`: it only sets the cluster up), "
            "then `cvo upgrade --to` a derived next version (`bench.scale.derived_release`, images renamed so "
            "that each operator rolls out when cvo applies its new Deployment) in update mode, where run levels "
            "wait on ClusterOperators; sim-operators (`--log-format json -v`) report each operator 1 s after its "
            "rollout starts (`default: {delay: 1s}`), so that cvo is already waiting when the report lands. Its "
            "report lines are text on stdout with whole-second timestamps (no JSON, no sub-second wall time), so "
            "the bench stamps each line with the wall time it reads it (right after the status write returned); "
            "cvo's `operator.ready` event (ready as seen by cvo) is the second clock. The start is the first "
            "`task.started` or `node.started` event after that moment belonging to a task after the "
            "ClusterOperator in its node or to a node that depends on its node. p99 is the nearest rank: with "
            "fewer than 100 samples, the largest.")
    if not react.samples:
        why = react.note or "cvo never waited on a ClusterOperator that something depended on"
        return [head, "", f"Reaction delay: not measured — {why}.", ""]
    report = [s.report for s in react.samples if s.report is not None]
    ready = [s.ready for s in react.samples if s.ready is not None]
    clean = [s.report for s in react.samples if s.report is not None and s.gating and not s.retried]
    retried = [s for s in react.samples if s.retried]
    text = [f"**Reaction delay, report → next dependent task: {_stats(report)} ClusterOperators**"
            if report else "**Reaction delay: no report lines matched**",
            f"(cvo waited on {react.waited} of {react.operators} during the upgrade, which took "
            f"{_fmt(react.wall, '.1f')} s in {react.attempts} attempt(s)"
            + ("" if react.ok else f" and did not complete: {react.note}") + ")."]
    if retried:
        errors = ", ".join(f"{n} {kind}" for kind, n in react.retry_errors.most_common())
        worst = [1000 * s.report for s in retried if s.report is not None]
        own = " — the ClusterVersion status cvo writes from its parallel tasks" if "clusterversions" in errors else ""
        text.append(f"{len(retried)} of those waits were abandoned on an API error ({errors}{own}) and the "
                    f"ClusterOperator task re-applied after the update-mode "
                    f"back-off of 10 s" + (f", so their dependents started {min(worst) / 1000:.1f}–"
                                          f"{max(worst) / 1000:.1f} s after the report" if worst else "")
                    + "; run-level siblings waiting for them inherit the delay.")
    if clean:
        others = sum(1 for s in react.samples if not s.gating and not s.retried)
        text.append(f"Where nothing else held the next task up (not retried, and the last thing it waited for): "
                    f"{_stats(clean)}" + (f"; the other {others} also waited for other nodes of their run level"
                                          if others else "") + ".")
    if ready:
        text.append(f"From cvo's `operator.ready` event instead (none is emitted for an abandoned wait): "
                    f"{_stats(ready)}.")
    noticed = [s.noticed for s in react.samples if s.noticed is not None]
    if noticed:
        text.append(f"Report → `operator.ready` (the watch event reaching cvo, and its check): {_stats(noticed)}.")
    if clean:
        goal = "met" if percentile(clean, 99) < 0.1 else "not met"
        text.append(f"Goal \"reaction delay under 100 ms\" (p99 over the ClusterOperators that were the last thing "
                    f"their dependent waited for; a dependent that still waits for a sibling of its run level has "
                    f"nothing to react to yet): **{goal}** ({1000 * percentile(clean, 99):.1f} ms).")
    elif report:
        goal = "met" if percentile(report, 99) < 0.1 else "not met"
        text.append(f"Goal \"reaction delay under 100 ms\" (p99): **{goal}**.")
    return [head, "", " ".join(text), ""]
