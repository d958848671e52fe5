"""``make bench``'s graph section: the update-service client on generated graphs, and ``cvo graph serve``'s queries
per second beside Python's ``http.server`` serving the same answer as a static file.

The graphs are generated (seeded, so every run measures the same ones): releases of consecutive minor versions,
edges drawn at random among pairs of releases of the same or the next minor (older to newer), 2 % of them
conditional with a PromQL risk each, every release in ``candidate`` and in the ``stable-4.N`` channels of its minor
and the next.

* *client*: in this process, ``parse_graph`` of the answer's bytes plus the selection of the current version's
  updates (:func:`select`), median of repeated runs: a channel-sized graph (100 releases, 3,000
  edges) and a large one (2,000 releases, 100,000 edges, the whole ``candidate`` answer);
* *serve*: ``cvo graph serve`` of the 2,000-release graph as the graph builder writes it, pinned to one core
  (``taskset -c 0``), queried as the CVO queries (``channel``, ``arch``, ``id``, ``version``; ``Accept:
  application/json``) by ApacheBench with keep-alive on the other core; the peer, ``http.server``'s
  ``SimpleHTTPRequestHandler`` (HTTP/1.1, threaded, Nagle off as in cvo's server) serving the same answer's bytes
  as a file, measured the same way in the same rounds;
* *listing*: ``cvo upgrade`` without a target beside ``cvo status`` as whole processes on the demo's embedded
  cluster (the listing retrieves a ``file://`` graph, as the controller would, and writes the status), and the
  modules it imports beyond the status's (``-X importtime``).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cvo.updates.build import ARCH_KEY, CHANNELS_KEY, MANIFESTREF_KEY  # noqa: E402
from cvo.updates.graph import ConditionalEdges, Graph, Node, parse_graph  # noqa: E402
from cvo.updates.model import ConditionalUpdate, MatchingRule, Release, Risk  # noqa: E402
from cvo.updates.serve import Answers, filter_graph, versioned_json  # noqa: E402

AB = Path("/usr/bin/ab")
TASKSET = Path("/usr/bin/taskset")
SEED = 23
CLIENT_SMALL_GOAL = 0.020
CLIENT_LARGE_GOAL = 0.5
SERVE_GOAL = 500.0
QUERY_CHANNEL = "stable-4.20"
AB_SECONDS = 4
AB_CONNECTIONS = 4


def generate_graph(minors: int, patches: int, edges: int, seed: int = SEED) -> Graph:
    """The graph builder's graph (versions ``+amd64``): ``minors`` × ``patches`` releases, ``edges`` edges."""
    rng = random.Random(seed)
    first_minor = 21 - minors
    versions = [(m, p) for m in range(first_minor, 21) for p in range(patches)]
    nodes = []
    for m, p in versions:
        channels = ["candidate", f"stable-4.{m}"] + ([f"stable-4.{m + 1}"] if m < 20 else [])
        digest = f"sha256:{rng.getrandbits(256):064x}"
        nodes.append(Node(f"4.{m}.{p}+amd64", f"quay.io/openshift-release-dev/ocp-release@{digest}",
                          {ARCH_KEY: "amd64", CHANNELS_KEY: ",".join(channels), MANIFESTREF_KEY: digest,
                           "url": f"https://access.redhat.com/errata/RHSA-2026:{rng.randrange(10000, 99999)}"}))
    candidates = [(i, j) for i, (mi, _) in enumerate(versions) for j, (mj, _) in enumerate(versions)
                  if i < j and mj - mi <= 1]
    chosen = sorted(rng.sample(candidates, edges))
    conditional_count = len(chosen) // 50
    conditional = set(rng.sample(range(len(chosen)), conditional_count))
    plain = tuple(e for k, e in enumerate(chosen) if k not in conditional)
    entries: dict[int, list[tuple[str, str]]] = {}
    for k in sorted(conditional):
        a, b = chosen[k]
        entries.setdefault(rng.randrange(20), []).append((nodes[a].version, nodes[b].version))
    risks = tuple(ConditionalEdges(tuple(pairs), (Risk(f"GeneratedRisk{n}", f"Risk {n} may apply.",
                                                       f"https://issues.example.com/OCPBUGS-{n}",
                                                       (MatchingRule("PromQL", f"max(cluster_risk_{n}) > 0"),)),))
                  for n, pairs in sorted(entries.items()))
    return Graph(tuple(nodes), plain, risks)


def select(graph: Graph, version: str, arch: str) -> tuple[tuple[Release, ...], tuple[ConditionalUpdate, ...]]:
    """The client's selection of ``version``'s updates (pkg/cincinnati/cincinnati.go ``GetUpdates`` after the
    download): :func:`cvo.updates.select.select_updates` with the registry a cluster without monitoring has."""
    from cvo.runner.available_updates import NoMonitoring
    from cvo.updates.select import select_updates

    chosen = select_updates(graph, version, arch, NoMonitoring())
    return chosen.updates, chosen.conditional


def _client_seconds(body: bytes, version: str, repeats: int) -> tuple[float, float, float, int, int]:
    """Medians of the whole (parse and select), of the parse alone and of ``json.loads`` of the body."""
    import json

    times, parses, loads = [], [], []
    for _ in range(repeats):
        started = time.perf_counter()
        graph = parse_graph(body)
        parsed = time.perf_counter()
        available, conditional = select(graph, version, "amd64")
        times.append(time.perf_counter() - started)
        parses.append(parsed - started)
        started = time.perf_counter()
        json.loads(body)
        loads.append(time.perf_counter() - started)
    return (statistics.median(times), statistics.median(parses), statistics.median(loads), len(available),
            len(conditional))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        if proc.poll() is not None:
            raise SystemExit(f"error: a graph server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("error: a graph server did not start")


PEER = """
import sys
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
class Handler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as cvo's server: without it Nagle holds every answer's tail (300 q/s)
    def end_headers(self):
        if self.request_version == "HTTP/1.0" and not self.close_connection:  # ab's keep-alive, as cvo's server
            self.send_header("Connection", "keep-alive")
        super().end_headers()
    def log_message(self, *args):
        pass
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), partial(Handler, directory=sys.argv[1])).serve_forever()
"""


def _ab(url: str) -> float:
    """Requests per second ApacheBench reaches with keep-alive on core 1 (every answer must be a 200)."""
    argv = [str(AB), "-k", "-q", "-c", str(AB_CONNECTIONS), "-t", str(AB_SECONDS), "-n", "10000000",
            "-H", "Accept: application/json", url]
    out = subprocess.run([str(TASKSET), "-c", "1", *argv], check=True, capture_output=True, text=True).stdout
    failed = re.search(r"Failed requests:\s+(\d+)", out)
    non_2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    if (failed and int(failed.group(1))) or non_2xx:
        raise SystemExit(f"error: the graph benchmark's queries failed:\n{out[-1500:]}")
    found = re.search(r"Requests per second:\s+([\d.]+)", out)
    if not found:
        raise SystemExit(f"error: no rate in ApacheBench's output:\n{out[-1500:]}")
    return float(found.group(1))


def _serve_rates(root: Path, graph: Graph, rounds: int) -> tuple[float, float, int, float, int]:
    """Medians of cvo graph serve's and the static peer's rates, the answer's size, the precompute time and the
    number of answers precomputed."""
    path = root / "graph.json"
    path.write_bytes(graph.dumps())
    started = time.perf_counter()
    answers = Answers(graph)
    precompute = time.perf_counter() - started
    body = answers.bodies[(QUERY_CHANNEL, "amd64")]
    static = root / "static" / "api" / "upgrades_info" / "v1"
    static.mkdir(parents=True)
    (static / "graph").write_bytes(body)
    query = f"/api/upgrades_info/v1/graph?arch=amd64&channel={QUERY_CHANNEL}&id=0b3f2a0e-0000-4000-8000-" \
            f"000000000000&version=4.20.0"
    ours, peers = [], []
    for _ in range(rounds):
        for who, rates in (("cvo", ours), ("peer", peers)):
            port = _free_port()
            argv = ([sys.executable, "-m", "cvo", "graph", "serve", str(path), "--address", f"127.0.0.1:{port}"]
                    if who == "cvo" else [sys.executable, "-c", PEER, str(root / "static"), str(port)])
            proc = subprocess.Popen([str(TASKSET), "-c", "0", *argv], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, cwd=REPO)
            try:
                _wait_for(port, proc)
                rates.append(_ab(f"http://127.0.0.1:{port}{query}"))
            finally:
                proc.terminate()
                proc.wait(timeout=20)
    return statistics.median(ours), statistics.median(peers), len(body), precompute, len(answers.bodies)


LISTING_GOAL = 1.3  # `cvo upgrade` (listing) within 1.3x of `cvo status`, as whole processes
CATALOGUE = "cvo.runner.sweep_events"


def _own_imports(argv: list[str], env: dict[str, str]) -> dict[str, int]:
    """The modules a whole process imports and each one's own import time in microseconds (``-X importtime``)."""
    err = subprocess.run([sys.executable, "-X", "importtime", *argv[1:]], env=env, capture_output=True, text=True,
                         check=True).stderr
    found: dict[str, int] = {}
    for line in err.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            found[parts[2].strip()] = int(parts[0])
    return found


Extra = tuple[int, float, list[tuple[str, float]], bool]


def _listing_imports(state: Path, env: dict[str, str]) -> Extra:
    """What the listing imports that ``cvo status`` does not: how many modules, their own import time in ms
    (``-X importtime``, which slows imports down: a share, not a saving), the largest four, and whether the
    sweep's event catalogue is among them."""
    from bench.measure import cvo

    status = _own_imports(cvo("status", "--state", str(state)), env)
    listing = _own_imports(cvo("upgrade", "--state", str(state)), env)
    extra = sorted(((m, us / 1000) for m, us in listing.items() if m not in status), key=lambda mu: -mu[1])
    return len(extra), sum(ms for _, ms in extra), extra[:4], any(m == CATALOGUE for m, _ in extra)


def _listing_vs_status(root: Path, rounds: int) -> tuple[float, float, Extra]:
    """Median wall seconds of ``cvo status`` and of ``cvo upgrade`` (the listing, which retrieves the graph as the
    controller would: from a ``file://`` upstream here) on the demo's embedded cluster, alternating the two; and
    the modules the listing imports beyond the status's (:func:`_listing_imports`)."""
    from bench.measure import cvo, run_process

    env = {**os.environ, "NO_COLOR": "1"}
    state = root / "listing.db"
    payloads = REPO / "payloads"
    run_process(cvo("install", str(payloads / "demo-4.16.0"), "--state", str(state), "--speed", "100000"), env)
    graph = Graph((Node("4.16.0", (payloads / "demo-4.16.0").as_uri()), Node("4.16.3", (payloads / "demo-4.16.3").as_uri()),
                   Node("4.17.0", (payloads / "demo-4.17.0").as_uri())), ((0, 1), (0, 2), (1, 2)))
    (root / "graph.json").write_bytes(graph.dumps())
    run_process(cvo("upgrade", "channel", "stable-4.16", "--upstream", (root / "graph.json").as_uri(),
                    "--allow-explicit-channel", "--state", str(state)), env)
    status, listing = [], []
    for _ in range(rounds):
        status.append(run_process(cvo("status", "--state", str(state)), env).seconds)
        listing.append(run_process(cvo("upgrade", "--state", str(state)), env).seconds)
    return statistics.median(status), statistics.median(listing), _listing_imports(state, env)


def _verdict(ok: bool) -> str:
    return "met" if ok else "not met"


def graph_section(repeats: int) -> list[str]:
    if not AB.exists() or not TASKSET.exists():
        raise SystemExit("error: the graph benchmark needs ApacheBench (/usr/bin/ab, Debian's apache2-utils: "
                         "make registry-tools) and taskset")
    small = generate_graph(2, 50, 3000)
    large = generate_graph(20, 100, 100_000)
    small_body = versioned_json(filter_graph(small, "candidate", "amd64"))
    large_body = versioned_json(filter_graph(large, "candidate", "amd64"))
    small_s, _, _, small_avail, small_cond = _client_seconds(small_body, "4.19.10", max(15, repeats * 3))
    large_s, large_parse, large_loads, large_avail, large_cond = _client_seconds(large_body, "4.10.10",
                                                                                   max(5, repeats))
    tmp = Path(tempfile.mkdtemp(prefix="cvo-bench-graph-"))
    try:
        ours, peer, size, precompute, pairs = _serve_rates(tmp, large, max(3, repeats // 2))
        status_s, listing_s, (extra_count, extra_ms, extra_top, catalogue) = _listing_vs_status(tmp,
                                                                                             max(7, repeats * 3))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rounds = max(3, repeats // 2)
    return [
        "## The update graph: the client's parse and selection, and `cvo graph serve`",
        "",
        f"Generated graphs (seed {SEED}, `bench/graph_bench.py`): releases of consecutive minor versions, edges drawn "
        "among pairs of the same or the next minor, 2 % of them conditional with a PromQL risk. *client*: in the "
        "bench's process, `parse_graph` of the update service's answer plus the selection of the current version's "
        "updates (`cvo.updates.select.select_updates` with the registry of a cluster without monitoring), median of "
        f"{max(15, repeats * 3)} and {max(5, repeats)} runs.",
        "",
        "| graph | releases | edges | answer KB | updates found (available + conditional) | client ms | goal ms | |",
        "|---|---|---|---|---|---|---|---|",
        f"| a channel | {len(small.nodes)} | {len(small.edges) + sum(len(c.edges) for c in small.conditional_edges)} | "
        f"{len(small_body) / 1024:.0f} | {small_avail} + {small_cond} | {small_s * 1000:.1f} | "
        f"{CLIENT_SMALL_GOAL * 1000:.0f} | **{_verdict(small_s <= CLIENT_SMALL_GOAL)}** |",
        f"| large | {len(large.nodes)} | {len(large.edges) + sum(len(c.edges) for c in large.conditional_edges)} | "
        f"{len(large_body) / 1024:.0f} | {large_avail} + {large_cond} | {large_s * 1000:.1f} | "
        f"{CLIENT_LARGE_GOAL * 1000:.0f} | **{_verdict(large_s <= CLIENT_LARGE_GOAL)}** |",
        "",
        f"Where the large graph's time goes: `parse_graph` {large_parse * 1000:.0f} ms (the JSON decoding alone, "
        f"`json.loads`, {large_loads * 1000:.0f} ms: the rest is checking and converting 100,000 edges one at a time "
        f"in Python), the selection {(large_s - large_parse) * 1000:.0f} ms (the parser: `cvo/updates/graph.py`).",
        "",
        f"*serve*: the large graph as the graph builder writes it (`+amd64` versions), `cvo graph serve` pinned to one "
        f"core (`taskset -c 0`), its answers computed at start ({precompute:.2f} s for {pairs} channel and "
        f"architecture pairs); ApacheBench on the other core, {AB_CONNECTIONS} keep-alive connections for "
        f"{AB_SECONDS} s, asking as the CVO asks (`channel={QUERY_CHANNEL}`, `arch`, `id`, `version`, `Accept: "
        f"application/json`; a {size / 1024:.0f} KB answer of 200 releases). The peer: Python's `http.server` "
        "(`SimpleHTTPRequestHandler`, threaded, HTTP/1.1, `TCP_NODELAY` as cvo's: with Nagle's algorithm on, it "
        "manages about 300/s, every answer's tail waiting for an ACK) serving the same answer's bytes as a static file, pinned and "
        f"asked the same way; medians of {rounds} rounds alternating the two.",
        "",
        "| server | queries/s | ratio |",
        "|---|---|---|",
        f"| `cvo graph serve` | {ours:.0f} | {ours / peer:.2f}× |",
        f"| `http.server`, static file | {peer:.0f} | 1.00× |",
        "",
        f"Goal ≥ {SERVE_GOAL:.0f} queries/s on one core for the 2,000-release graph: **{_verdict(ours >= SERVE_GOAL)}** "
        f"({ours:.0f}/s, {ours / peer:.2f}× the static file server measured beside it).",
        "",
        "*listing*: `cvo upgrade` without a target (no controller runs, so it retrieves the graph from the cluster's "
        "`spec.upstream`, a `file://` graph of the demo releases, evaluates it and writes the status, then prints "
        "oc's listing) beside `cvo status`, as whole processes on the demo's embedded cluster at 4.16.0; medians of "
        "alternating runs.",
        "",
        "| command | wall | ratio |",
        "|---|---|---|",
        f"| `cvo upgrade` (listing) | {listing_s * 1000:.0f} ms | {listing_s / status_s:.2f}× |",
        f"| `cvo status` | {status_s * 1000:.0f} ms | 1.00× |",
        "",
        f"Goal: the listing within {LISTING_GOAL}× of `cvo status`: **{_verdict(listing_s <= LISTING_GOAL * status_s)}**.",
        "",
        f"What the listing imports beyond `cvo status`: {extra_count} modules, {extra_ms:.0f} ms of their own import "
        "time under `python -X importtime` (which inflates it; a share, not a saving); the largest: "
        + ", ".join(f"`{m}` {ms:.1f} ms" for m, ms in extra_top) + ". The update client imports urllib3 only for "
        "an http(s) upstream, and the listing never imports the target resolution"
        + ("; the status writer it needs (`cvo.runner.status_writer`) brings the sweep's event catalogue "
           f"(`{CATALOGUE}`) with it." if catalogue else "."),
        "",
    ]


if __name__ == "__main__":
    print("\n".join(graph_section(int(os.environ.get("REPEATS", "3")))))
