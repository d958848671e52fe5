"""What the fuzzers run: each target takes one generated input and fails only on a real bug.

A target returns normally when cvo handled the input (it loaded, or it refused it with its own
one-line error) and raises anything else: a Python exception escaping cvo, a traceback on stderr, an
error of more than one line per problem, output that is not valid JSON.  ``tests/fuzz/test_fuzz.py`` runs
them under hypothesis in ``make test`` (bounded, derandomized); ``tests/support/fuzz_main.py`` runs them and a
mutation fuzzer over the corpus for ``make fuzz``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

from cvo.payload.limits import InputError
from cvo.payload.manifest import ManifestError, parse_headers
from cvo.payload.template import RenderTooLarge, TemplateContext, TemplateError, render
from cvo.payload.yamlorjson import load_documents
from cvo.payload.yamlparse import DocumentError

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "ocp-5.0-nightly"
PAYLOADS = REPO / "payloads"

# --- strategies --------------------------------------------------------------------------------

YAML_TOKENS = [
    "a", "b", "kind", "ConfigMap", "apiVersion", "v1", "metadata", "name", "namespace", "annotations", "spec",
    "status", "data", ":", ": ", "- ", "-", "\n", "\n  ", "\n    ", "  ", "{", "}", "[", "]", ",", "&a ", "*a", "&b ",
    "*b", "<<: ", "<<", "---\n", "...\n", "'", '"', "\\", "#", "!!str ", "!!int ", "!!binary ", "!x ", "? ", "|",
    ">", "~", "null", "true", "y", "n", "0x1F", "0o17", "017", "1_000", "1e3", ".inf", ".nan", "-.inf", "=",
    "2024-01-01", "9223372036854775808", "18446744073709551616", "1e400", "\t", "\r\n", "\ufeff", "%YAML 1.1\n",
    "\x00", "\udcff", "é", "\u2028",
]
TEMPLATE_TOKENS = [
    "{{", "}}", "{{-", "-}}", " ", ".ReleaseImage", ".ClusterProfile", "index", ".Images", '"tag"', '"', "`",
    "\\", "\\q", "\\u00e9", "\\ud800", "\\x41", "\\777", "\\U0010FFFF", "\\U00110000", "/*", "*/", "$x", "a: ",
    "\n", "printf", "{{/* c */}}", '{{ "x" }}', "{{`y`}}", '{{index .Images "tag"}}',
]


def token_text(tokens: list[str], max_size: int = 40) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(tokens), max_size=max_size).map("".join)


def manifest_doc(kind: str = "ConfigMap") -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": st.just(kind),
                                  "metadata": st.fixed_dictionaries({"name": st.sampled_from(["a", "b"]),
                                                                     "namespace": st.just("ns")})})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)

# A document's bytes: YAML or JSON from tokens, a valid manifest with junk, or raw bytes.
document_bytes = st.one_of(
    token_text(YAML_TOKENS).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=200),
    st.builds(lambda d, junk: (json.dumps(d) + junk).encode("utf-8", "surrogatepass"), manifest_doc(),
              token_text(YAML_TOKENS, 6)),
    json_values.map(lambda v: json.dumps(v, allow_nan=True).encode()),
)

file_names = st.one_of(
    st.sampled_from(["0000_10_a_x.yaml", "0000_50_b_01.yml", "x.json", "0000_20_c.YAML", "a.txt", "sub"]),
    st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b".."))
    .map(lambda b: b + b".yaml"),
)

SPECIALS = ("loop", "dangling", "fifo", "dev-zero", "dir", "regular-link")


@st.composite
def payload_dirs(draw: st.DrawFn) -> dict[str, Any]:
    """A release directory description: files of release-manifests/ and manifests/, and special entries."""
    files = draw(st.dictionaries(file_names, document_bytes, max_size=4))
    cvo_files = draw(st.dictionaries(file_names, token_text(YAML_TOKENS + TEMPLATE_TOKENS)
                                     .map(lambda t: t.encode("utf-8", "surrogatepass")), max_size=2))
    specials = draw(st.lists(st.sampled_from(SPECIALS), max_size=2, unique=True))
    metadata = draw(st.one_of(st.just(None), json_values, st.binary(max_size=30)))
    images = draw(st.one_of(st.just(None), json_values))
    return {"files": files, "cvo_files": cvo_files, "specials": specials, "metadata": metadata, "images": images}


# --- building a directory ----------------------------------------------------------------------

@contextlib.contextmanager
def release_dir(spec: dict[str, Any]) -> Iterator[Path]:
    """Write a :func:`payload_dirs` description into a fresh temporary directory."""
    with tempfile.TemporaryDirectory(prefix="cvo-fuzz-") as tmp:
        root = Path(tmp) / "release"
        rel = root / "release-manifests"
        cvo = root / "manifests"
        rel.mkdir(parents=True)
        cvo.mkdir()
        metadata = spec["metadata"]
        meta_bytes = metadata if isinstance(metadata, bytes) else json.dumps(
            metadata if metadata is not None else {"kind": "cincinnati-metadata-v0", "version": "4.16.0"}).encode()
        (rel / "release-metadata").write_bytes(meta_bytes)
        images = spec["images"]
        (rel / "image-references").write_text(json.dumps(images if images is not None else {
            "kind": "ImageStream", "apiVersion": "image.openshift.io/v1", "metadata": {"name": "4.16.0"},
            "spec": {"tags": [{"name": "tag", "from": {"name": "quay.io/x@sha256:1"}}]}}))
        for directory, files in ((rel, spec["files"]), (cvo, spec["cvo_files"])):
            for name, data in files.items():
                path = directory / os.fsdecode(name if isinstance(name, bytes) else name.encode())
                if name in (b"sub", "sub"):
                    path.mkdir(exist_ok=True)
                    continue
                with contextlib.suppress(OSError):
                    path.write_bytes(data)
        for special in spec["specials"]:
            target = rel / f"0000_05_{special}.yaml"
            if special == "loop":
                os.symlink(target.name, target)
            elif special == "dangling":
                os.symlink("missing.yaml", target)
            elif special == "fifo":
                os.mkfifo(target)
            elif special == "dev-zero":
                os.symlink("/dev/zero", target)
            elif special == "dir":
                target.mkdir()
            else:
                real = Path(tmp) / "real.yaml"
                real.write_text("kind: ConfigMap\napiVersion: v1\nmetadata: {name: linked, namespace: ns}\n")
                os.symlink(real, target)
        yield root


# --- targets -----------------------------------------------------------------------------------

def parse_target(data: bytes) -> None:
    """Decoding one file: documents or one ManifestError line, and every header's JSON is valid."""
    try:
        headers = parse_headers(data, "f.yaml")
    except ManifestError as err:
        _one_line(str(err))
        return
    for header in headers:
        orjson.loads(header[6])


def documents_target(data: bytes) -> None:
    with contextlib.suppress(DocumentError, UnicodeDecodeError):
        load_documents(data)


def template_target(text: str) -> None:
    ctx = TemplateContext("quay.io/release@sha256:1", "self-managed-high-availability", {"tag": "img"})
    try:
        out = render(text, ctx, limit=10_000)
    except (TemplateError, RenderTooLarge) as err:
        _one_line(str(err))
        return
    out.encode("utf-8", "surrogateescape")  # what the loader does with the result


def _one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message, message


def _check_cli_output(code: int, out: str, err: str, json_output: bool) -> None:
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err, err
    if code == 2:
        assert out == "", out
        lines = [line for line in err.splitlines() if not line.startswith("[")]  # log lines start with [level]
        assert not any(line.startswith("usage: ") for line in lines), err  # argparse's too: one error: line
        assert lines and all(line.startswith("error: ") for line in lines), err
    elif json_output:
        orjson.loads(out)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``cvo.cli.main.main(argv)`` in this process: exit code, stdout, stderr."""
    from cvo.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def cli_payload_target(spec: dict[str, Any]) -> None:
    """``cvo plan`` and ``cvo lint`` of a generated directory: ``-o json``, ``-o yaml`` (the same data) and
    ``plan -o name`` (one line per applied task)."""
    import yaml

    with release_dir(spec) as root:
        for command in ("plan", "lint"):
            code, out, err = run_cli([command, str(root), "-o", "json", "--no-cache"])
            _check_cli_output(code, out, err, json_output=True)
            as_yaml = run_cli([command, str(root), "-o", "yaml", "--no-cache"])
            assert as_yaml[0] == code, as_yaml[2]
            if code != 2:
                assert yaml.load(as_yaml[1], Loader=yaml.CSafeLoader) == orjson.loads(out)
            if command == "plan" and code == 0:
                doc = orjson.loads(out)
                applied = sum(1 for n in doc["nodes"] for t in n["tasks"] if not t.get("skip"))
                names = run_cli([command, str(root), "-o", "name", "--no-cache"])
                assert names[0] == 0 and names[1].count("\n") == applied, names
                assert all(len(shlex.split(line)) in (1, 3) for line in names[1].split("\n")[:-1]), names[1]


def loader_target(spec: dict[str, Any]) -> None:
    from cvo.payload.graph import Mode
    from cvo.payload.loader import LoadError, load_release
    from cvo.plan.build import make_plan
    from cvo.plan.lint import lint
    from cvo.plan.output import plan_json

    with release_dir(spec) as root:
        try:
            release = load_release(root, use_cache=False, jobs=1)
        except LoadError as err:
            for line in err.errors:
                _one_line(line)
            return
        orjson.dumps(plan_json(make_plan(release, Mode.INSTALL, profile="self-managed-high-availability")))
        orjson.dumps([f.to_json() for f in lint(release)])


SWEEP_FLAGS = st.lists(st.sampled_from([
    "--interval", "--timeout", "--speed", "0", "0s", "-1", "1s", "3m", "1e9", "nan", "inf", "99999999999h",
    "1h30m", "--profile", "x", "--capabilities", "Warp", "--feature-set", "", "--exclude", "--operators",
    "/dev/zero", "/nonexistent", "--release-version", "4.16.0", "--release-image", "--no-cache",
]), max_size=6)


def sweep_flags_target(flags: list[str]) -> None:
    """``cvo install`` of the small demo release with random flags, on an in-memory cluster."""
    argv = ["install", str(PAYLOADS / "demo-4.16.0"), "--state", "none", "--timeout", "30m", *flags]
    code, out, err = run_cli(argv)
    _check_cli_output(code, out, err, json_output=False)


def behaviours_target(data: bytes) -> None:
    from cvo.operators.behaviour import read_behaviours

    with tempfile.NamedTemporaryFile(suffix=".yaml") as f:
        f.write(data)
        f.flush()
        try:
            behaviours = read_behaviours(f.name)
        except ValueError as err:
            _one_line(str(err))
            return
        for name in [*behaviours.operators, "other"]:
            b = behaviours.for_operator(name)
            for window in (b.degraded, b.upgradeable):
                if window is not None:
                    window.edges()
            for pool in b.machines.pools if b.machines is not None else ():
                pool.node_names()


def scenario_target(data: bytes) -> None:
    from cvo.scenario.model import ScenarioError, load_scenario

    with tempfile.NamedTemporaryFile(suffix=".yaml") as f:
        f.write(data)
        f.flush()
        try:
            load_scenario(Path(f.name))
        except ScenarioError as err:
            _one_line(str(err))


def objects_target(obj: Any, kind: tuple[str, str]) -> None:
    """Every reader of live and payload objects: never an exception, whatever the shape."""
    from cvo.cluster.embedded.kinds import accepted_names, crd_kind, crd_problem
    from cvo.gates.olm import synced_status, unsupported_conditions, upgradeable_verdict
    from cvo.objects import OperatorCondition
    from cvo.payload.graph import Mode
    from cvo.payload.shapes import object_problem
    from cvo.runner.health import check_crd, check_deployment, check_job, check_operator_health

    if not isinstance(obj, dict):
        obj = {"status": obj, "spec": obj, "metadata": obj}
    object_problem(*kind, obj)
    for mode in Mode:
        check_operator_health("x", (("operator", "1"),), obj, mode)
    check_crd(obj)
    check_deployment(obj)
    check_job(obj)
    upgradeable_verdict(obj)
    unsupported_conditions(OperatorCondition.read(obj))
    synced_status(obj)
    if crd_problem(obj) is None:
        crd_kind(obj)
        accepted_names(obj)


def state_target(data: bytes) -> None:
    """The embedded cluster's state file, whatever its bytes: a usable cluster or one ``error: FILE: …`` line."""
    from cvo.clock import Clock, run_virtual
    from cvo.cluster.api import ApiError
    from cvo.cluster.embedded.server import SimCluster
    from cvo.cluster.embedded.store import StateError

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        path.write_bytes(data)

        async def main() -> None:
            try:
                cluster = SimCluster(Clock(), path=path)
            except StateError as err:
                _one_line(str(err))
                assert str(err).startswith(f"{path}: "), err
                return
            try:
                for group, kind in (("", "Namespace"), ("", "ConfigMap"), ("config.openshift.io", "ClusterVersion")):
                    await cluster.list(group, kind)
                await cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "fuzz", "namespace": "default"}})
            except ApiError as err:
                _one_line(str(err))
            finally:
                await cluster.close()

        run_virtual(main)


def upgrade_status_target(cv: Any, cos: list[Any]) -> None:
    """The upgrade status assessment of objects of any shape: a view, or oc's one-line error."""
    from cvo.status.forecast import co_state
    from cvo.status.update_records import parse_records
    from cvo.status.upgrade_status import StatusUnavailable, assess, latest_transition
    from cvo.status.upgrade_text import render, to_data

    cv = cv if isinstance(cv, dict) else {"status": cv, "metadata": cv}
    cos = [c if isinstance(c, dict) else {"status": c, "metadata": c} for c in cos]
    now = latest_transition(cv, cos) or 0
    try:
        status = assess(cv, cos, now)
    except StatusUnavailable as err:
        _one_line(str(err))
        return
    for details in ("none", "all"):
        render(status, details)
    orjson.dumps(to_data(status))
    co_state(cos, "1")
    parse_records(cv)


def saved_target(data: bytes) -> None:
    """Saved objects from a file of any bytes: objects, or one error line naming the file; then their view."""
    from cvo.cluster.saved.reader import read_paths

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "objects.yaml"
        path.write_bytes(data)
        try:
            found = read_paths([path])
        except InputError as err:
            _one_line(str(err))
            assert str(err).startswith(str(path))
            return
    objects = [obj for _, obj in found]
    cvs = [o for o in objects if o.get("kind") == "ClusterVersion"]
    upgrade_status_target(cvs[0] if cvs else {}, [o for o in objects if o.get("kind") == "ClusterOperator"])


# --- the report: an events file, and the records on a cluster ------------------------------------------------

EVENT_NAMES = ["sweep.started", "sweep.completed", "sweep.timeout", "sweep.blocked", "sweep.cancelled",
               "attempt.started", "attempt.failed", "attempt.woken", "node.started", "node.done", "node.failed",
               "node.error", "task.started", "task.applied", "task.done", "task.failed", "task.skipped",
               "task.waiting", "task.retry", "task.dependency", "operator.ready", "operator.degraded",
               "operator.done", "cluster.requests", "controller.sweep", "x"]
EVENT_KEYS = ["event", "time", "sim_time", "sweep", "field_time", "node", "after", "task", "operator", "attempt",
              "retry_in", "verbs", "runlevel", "component", "tasks", "total", "version", "mode", "reason", "message",
              "waited", "started", "level", "timestamp", "action", "file", "error", "kind", "dependency"]
EVENT_TIMES = ["2026-01-01T00:00:00", "2026-01-01T00:00:00+00:00", "2026-01-01T00:05:00Z", "2026-01-01T00:00:00.5",
               "2026-01-01T01:00:00+01:00", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "2026-13-01",
               "yesterday", ""]
event_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from([2**53, -(2**63), 1e308, 0.5, -1.5])
    | st.sampled_from(EVENT_NAMES + EVENT_TIMES + ['clusteroperator "dns" (1 of 2)', 'configmap "a/b" (2 of 2)',
                                                   "dns", "10", "<script>", "\x1b[31m", "\ud800"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from([*EVENT_KEYS, "create", "get"]),
                                                                inner, max_size=4),
    max_leaves=12)
event_docs = st.fixed_dictionaries(
    {"event": st.sampled_from(EVENT_NAMES) | event_values, "time": st.sampled_from(EVENT_TIMES) | event_values},
    optional={k: event_values for k in EVENT_KEYS[2:]})


def _event_line(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")


event_files = st.lists(event_docs.map(_event_line) | st.binary(max_size=60)
                       | st.sampled_from([b"", b"{", b"[1]", b"{}", b"not json", b'{"event": "a"}',
                                          b'{"time": "2026-01-01T00:00:00"}', b"\xff\xfe"]), max_size=14).map(
    lambda lines: b"\n".join(lines))


def events_target(data: bytes) -> None:
    """An events file of any bytes: its report (every sweep, the first, the last; HTML and text), or one error
    line naming the file (and the line)."""
    from cvo.report.critical import causes, critical_path
    from cvo.report.events_io import EventsError, read_stream
    from cvo.report.html import render_html
    from cvo.report.model import build_timeline
    from cvo.report.text import render_text

    for sweep in (None, 1, -1):
        try:
            read = read_stream(io.BytesIO(data), "events.jsonl", sweep)
        except EventsError as err:
            _one_line(str(err))
            assert str(err).startswith("events.jsonl"), err
            continue
        timeline = build_timeline(read.events)
        for span in timeline.sweeps:
            links = critical_path(span)
            assert span.duration == 0 or abs(sum(link.share for link in links) - 1.0) < 1e-6, links
            causes(links, span.duration)
        page = render_html(timeline, "fuzz")
        assert "<script" not in page.lower(), "markup from the events reached the page"
        text = render_text(timeline, "fuzz")
        assert "\x1b" not in text, "an escape sequence from the events reached the text"


records_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from(
        ["True", "False", "Completed", "Partial", "Progressing", "Degraded", "2026-01-01T00:00:00Z",
         "2026-01-01T00:30:00Z", "2026-01-01T01:00:00Z", "9999-12-31T23:59:59Z", "x", "", "4.16.0", "4.16.3",
         "file:///nonexistent", "operator", "install"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["status", "history", "version", "state", "startedTime", "completionTime", "image", "conditions", "type",
         "metadata", "name", "versions", "lastTransitionTime", "message", "reason", "operators", "started", "done",
         "startedAt", "mode", "attempts", "attemptCount", "attempt", "ended", "endedAt", "result", "dns", "etcd",
         "pools", "nodes", "maxUnavailable", "size", "worker", "worker-0"]),
        inner, max_size=5),
    max_leaves=30)


def records_target(cv: Any, cos: list[Any], records: Any) -> None:
    """The report from a cluster's records, whatever shape its ClusterVersion, ClusterOperators and records
    ConfigMap have: a page, never an exception."""
    from datetime import UTC, datetime

    from cvo.report.critical import critical_path
    from cvo.report.html import render_html
    from cvo.report.records import ClusterRecords, records_timeline
    from cvo.report.text import render_text
    from cvo.status.update_records import parse_records

    raw = records if isinstance(records, str) else json.dumps(records, allow_nan=True)
    parsed = parse_records({"data": {"records.json": raw}})
    found = ClusterRecords(cv if isinstance(cv, dict) else {"status": cv},
                           [c if isinstance(c, dict) else {"status": c} for c in cos], parsed,
                           datetime(2026, 1, 1, 2, tzinfo=UTC))
    timeline = records_timeline(found, lambda image, mode: None)
    for span in timeline.sweeps:
        assert span.end >= span.start and span.drawn_end >= span.end
        critical_path(span, coarse=True)
    render_html(timeline, "fuzz")
    render_text(timeline, "fuzz")
    # the nodes' part of a forecast from the same records (cvo/status/node_forecast.py)
    import random

    from cvo.status.node_forecast import DRAINING, NodeProgress, PoolProgress, node_model, sample_pool

    model = node_model(parsed)
    if model.usable:
        assert sample_pool(random.Random(0), PoolProgress("p", 2, False, (NodeProgress("n", DRAINING, 0),), 3, True),
                           model, 10**12) >= 0


def check_input_error(err: Exception) -> None:
    assert isinstance(err, InputError)
    _one_line(str(err))


OBJECT_KEYS = ["status", "spec", "metadata", "conditions", "versions", "names", "group", "plural", "kind", "type",
               "name", "version", "served", "storage", "template", "containers", "env", "value", "image", "message",
               "reason", "overrides", "generation", "observedGeneration", "succeeded", "active", "failed",
               "relatedObjects", "schema", "openAPIV3Schema", "required", "properties", "subresources", "scope",
               "replicas", "labels", "namespace", "deletionTimestamp"]
object_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["True", "False", "Available", "Degraded",
                                                                      "Upgradeable", "Established", "x", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(OBJECT_KEYS), inner, max_size=5),
    max_leaves=25,
)
typed_kinds = st.sampled_from([("apiextensions.k8s.io", "CustomResourceDefinition"), ("apps", "Deployment"),
                               ("batch", "Job"), ("", "ConfigMap"), ("config.openshift.io", "ClusterOperator"),
                               ("example.com", "Thing")])


# name -> (strategy, target): what ``make fuzz`` runs under hypothesis, the same as ``tests/fuzz/test_fuzz.py``.
BEHAVIOUR_TOKENS = ["default", "etcd", ":", " ", "{", "}", "delay", "90s", "-1", "flaps", "1e99", "degraded", "after",
                    "for", "message", "[", "]", "\n", "  ", "true", ",", "upgradeable", "reason", "&a ", "*a",
                    "machine-config", "nodes", "pools", "drain", "reboot", "fail", "worker", "worker-0", "max-unavailable",
                    "paused", "50%", "3"]
SCENARIO_TOKENS = ["name", "actions", "at", "install", "options", "interval", "timeout", "expect", "result",
                   "operators", "cluster", ":", " ", "{", "}", "[", "]", "\n", "  ", "- ", "0s", "3m", "-5", "x", ","]
TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {
    "parse": (document_bytes, parse_target),
    "yaml": (token_text(YAML_TOKENS, 80).map(lambda s: s.encode("utf-8", "surrogatepass")), documents_target),
    "template": (token_text(TEMPLATE_TOKENS, 30) | st.text(max_size=60), template_target),
    "loader": (payload_dirs(), loader_target),
    "cli-plan-lint": (payload_dirs(), cli_payload_target),
    "cli-install-flags": (SWEEP_FLAGS, sweep_flags_target),
    "behaviours": (document_bytes | token_text(BEHAVIOUR_TOKENS, 40).map(str.encode), behaviours_target),
    "scenario": (document_bytes | token_text(SCENARIO_TOKENS, 40).map(str.encode), scenario_target),
    "objects": (st.tuples(object_values, typed_kinds), lambda pair: objects_target(*pair)),
    "saved": (document_bytes | token_text(YAML_TOKENS, 80).map(lambda s: s.encode("utf-8", "surrogatepass")),
              saved_target),
    "upgrade-status": (st.tuples(object_values, st.lists(object_values, max_size=3)),
                       lambda pair: upgrade_status_target(*pair)),
    "state": (st.binary(max_size=600) | st.binary(max_size=400).map(lambda b: b"SQLite format 3\x00" + b)
              | st.binary(max_size=300).map(lambda b: b'{"format": 1, ' + b), state_target),
    "events": (event_files, events_target),
    "records": (st.tuples(records_values, st.lists(records_values, max_size=3), records_values),
                lambda triple: records_target(*triple)),
}


# --- saved objects and store contents: the kinds cvo reads, every field of every type --------------------------

# What a field of each kind holds now and then: the values the readers look for, and a few edge times.
FIELD_WORDS = ["True", "False", "Unknown", "Progressing", "Available", "Degraded", "Upgradeable", "Failing",
               "Completed", "Partial", "4.16.0", "4.16.3", "4.17.0", "operator", "operator-image", "machine-config",
               "machine-config-operator", "etcd", "version", ""]
FIELD_TIMES = ["2026-01-01T00:00:00Z", "2026-01-01T00:30:00.123456789Z", "2026-01-01T01:00:00+01:00",
               "0001-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "9999-12-31T23:59:59Z",
               "2026-13-01T00:00:00Z", "yesterday", ""]
any_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([2**63, 1.5, -0.0]) | st.sampled_from(FIELD_WORDS),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELD_WORDS[:8]) | st.text(max_size=4),
                                                                inner, max_size=3),
    max_leaves=8)


def shaped(schema: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values for a field of ``schema``: of its type (built from the schema, so a field added to a CRD is
    generated too) or of any other shape."""
    if not isinstance(schema, dict) or depth > 12:
        return any_json
    type_ = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        good: st.SearchStrategy[Any] = st.integers(-2, 2) | st.sampled_from(FIELD_WORDS)
    elif type_ == "object" and isinstance(schema.get("properties"), dict):
        good = st.fixed_dictionaries({}, optional={k: shaped(v, depth + 1) for k, v in schema["properties"].items()})
    elif type_ == "object" and isinstance(schema.get("additionalProperties"), dict):
        good = st.dictionaries(st.sampled_from(FIELD_WORDS), shaped(schema["additionalProperties"], depth + 1),
                               max_size=3)
    elif type_ == "object":
        good = st.dictionaries(st.sampled_from(FIELD_WORDS), any_json, max_size=3)
    elif type_ == "array":
        good = st.lists(shaped(schema.get("items"), depth + 1), max_size=3)
    elif type_ == "string" and schema.get("format") == "date-time":
        good = st.sampled_from(FIELD_TIMES)
    elif type_ == "string":
        good = st.sampled_from([*FIELD_WORDS, *(schema.get("enum") or [])]) | st.text(max_size=6)
    elif type_ == "integer":
        good = st.integers(-2, 3)
    elif type_ == "boolean":
        good = st.booleans()
    else:
        return any_json
    return st.one_of(good, good, good, any_json)  # mostly of the right shape, deeper down too


# The objects the commands read: (view class name, name, namespace).
ODD_OBJECTS = [("ClusterVersion", "version", ""), ("ClusterOperator", "etcd", ""),
               ("ClusterOperator", "machine-config", ""), ("OperatorCondition", "etcd", "openshift-etcd-operator")]


def schema_paths(schema: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Every field of ``schema`` (a list's items as its first item), with its own schema."""
    out = [(prefix, schema)] if prefix else []
    if not isinstance(schema, dict) or len(prefix) > 8:
        return out
    for key, sub in (schema.get("properties") or {}).items() if isinstance(schema.get("properties"), dict) else ():
        out += schema_paths(sub, (*prefix, key))
    if isinstance(schema.get("items"), dict):
        out += schema_paths(schema["items"], (*prefix, 0))
    return out


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    """``obj[path] = value`` where the path leads through containers of the right kind; otherwise nothing."""
    *head, last = path
    for step in head:
        if isinstance(step, int):
            if not isinstance(obj, list) or not obj:
                return
            obj = obj[step]
        else:
            if not isinstance(obj, dict):
                return
            obj = obj.setdefault(step, {})
    if (isinstance(last, int) and isinstance(obj, list) and obj) or (isinstance(last, str) and isinstance(obj, dict)):
        obj[last] = value


def base_objects() -> dict[tuple[str, str], dict[str, Any]]:
    """(kind, name) -> the object as :func:`base_store` holds it."""
    import sqlite3

    conn = sqlite3.connect(f"file:{base_store()}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT kind, name, data FROM objects WHERE data IS NOT NULL")
        return {(kind, name): orjson.loads(data) for kind, name, data in rows}
    finally:
        conn.close()


def _updating(cv: dict[str, Any]) -> dict[str, Any]:
    """The installed ClusterVersion as it is while an update to 4.16.3 runs (Progressing=True, a Partial entry)."""
    status = cv["status"]
    started = "2026-01-01T00:00:00Z"
    status["desired"] = {"version": "4.16.3", "image": "img:4.16.3"}
    status["history"].insert(0, {"state": "Partial", "version": "4.16.3", "image": "img:4.16.3",
                                 "startedTime": started, "completionTime": None, "verified": False})
    for c in status["conditions"]:
        if c["type"] == "Progressing":
            c.update(status="True", lastTransitionTime=started, message="Working towards 4.16.3")
    return cv


@st.composite
def odd_objects(draw: st.DrawFn) -> list[dict[str, Any]]:
    """The ClusterVersion (installed, or updating), two ClusterOperators and an OperatorCondition of the demo's
    cluster with a few fields of any shape, or one now and then made up whole from its schema; their kind, name
    and namespace as the commands look them up.  The fields come from the kinds' schemas: a field added to a
    CRD is fuzzed too."""
    import copy

    import cvo.objects as views

    bases, updating = base_objects(), draw(st.booleans())
    out = []
    for kind, name, namespace in ODD_OBJECTS:
        cls = getattr(views, kind)
        schema = cls.KIND.schema()
        if draw(st.integers(0, 4)) == 0:
            obj = draw(st.fixed_dictionaries({}, optional={k: shaped(v) for k, v in schema["properties"].items()}))
        else:
            obj = copy.deepcopy(bases[(kind, name)])
            if updating and kind == "ClusterVersion":
                obj = _updating(obj)
            paths = schema_paths(schema)
            for path, sub in draw(st.lists(st.sampled_from(paths), max_size=3)):
                _set(obj, path, draw(shaped(sub)))
        # half the time metadata as generated (the embedded server refuses a store with bad metadata)
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) and draw(st.booleans()) else {}
        obj["metadata"] = {**meta, "name": name, **({"namespace": namespace} if namespace else {})}
        if not namespace:
            obj["metadata"].pop("namespace", None)
        obj["apiVersion"] = f"{cls.KIND.group}/{'v2' if kind == 'OperatorCondition' else 'v1'}"
        obj["kind"] = kind
        out.append(obj)
    return out


READ_COMMANDS = {
    "status": (["status"], False), "status -o json": (["status", "-o", "json"], True),
    "upgrade status": (["upgrade", "status"], False), "upgrade status -o json": (["upgrade", "status", "-o", "json"], True),
    "upgrade --dry-run": (["upgrade", "--to", str(PAYLOADS / "demo-4.17.0"), "--dry-run", "--no-cache"], False),
    "report": (["report", "-o", "text"], False),
}


def check_read_command(code: int, out: str, err: str, json_output: bool) -> None:
    """A command reading objects of any shape: exit 0, or 1 or 2 with exactly one ``error:`` line (or a dry run's
    verdict that the upgrade is blocked: exit 1, no error); never a traceback; valid JSON when asked for."""
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    blocked = code == 1 and "Verdict: BLOCKED." in out
    assert len(errors) == (0 if code == 0 or blocked else 1), err
    if json_output and code == 0:
        orjson.loads(out)


def saved_objects_target(objects: list[dict[str, Any]]) -> None:
    """The objects saved to a file (``kind: List``), read by every command that takes ``--from-file``."""
    with tempfile.TemporaryDirectory(prefix="cvo-fuzz-") as tmp:
        path = Path(tmp) / "objects.json"
        path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
        for argv, json_output in READ_COMMANDS.values():
            check_read_command(*run_cli([*argv, "--from-file", str(path)]), json_output)


_BASE_STORE: list[Path] = []


def base_store() -> Path:
    """An embedded cluster with the demo's 4.16.0 installed, made once per process (the store is only copied)."""
    if not _BASE_STORE:
        import atexit
        import shutil

        tmp = Path(tempfile.mkdtemp(prefix="cvo-fuzz-store-"))
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        path = tmp / "base.db"
        code, _, err = run_cli(["install", str(PAYLOADS / "demo-4.16.0"), "--state", str(path), "--no-cache"])
        assert code == 0, err
        _BASE_STORE.append(path)
    return _BASE_STORE[0]


def store_with(path: Path, objects: list[dict[str, Any]], raw: dict[tuple[str, str, str, str], bytes] | None = None,
               ) -> Path:
    """A copy of :func:`base_store` at ``path`` whose rows for ``objects`` (by kind, namespace and name) hold them
    as written (``raw``: rows of bytes as they are), as a hand-edited store would."""
    import shutil
    import sqlite3

    shutil.copy(base_store(), path)
    conn = sqlite3.connect(path)
    try:
        rows = {(o["apiVersion"].rpartition("/")[0], o["kind"], o["metadata"].get("namespace", ""),
                 o["metadata"]["name"]): orjson.dumps(o) for o in objects}
        for (group, kind, namespace, name), data in {**rows, **(raw or {})}.items():
            conn.execute("UPDATE objects SET data = ? WHERE grp = ? AND kind = ? AND namespace = ? AND name = ?",
                         (data, group, kind, namespace, name))
        conn.commit()
    finally:
        conn.close()
    return path


def _deep(levels: int) -> bytes:
    return b"[" * levels + b"1" + b"]" * levels


def store_objects_target(objects: list[dict[str, Any]], deep: int = 0) -> None:
    """The objects written into the embedded cluster's store (``deep``: the ClusterVersion also holds a value
    nested that many levels), read by every command that reads the cluster, and ``cvo override``."""
    with tempfile.TemporaryDirectory(prefix="cvo-fuzz-") as tmp:
        raw = {}
        if deep:
            cv = next(o for o in objects if o["kind"] == "ClusterVersion")
            raw[("config.openshift.io", "ClusterVersion", "", "version")] = orjson.dumps({**cv, "deep": "@"}).replace(
                b'"deep":"@"', b'"deep":' + _deep(deep))
        for argv, json_output in [*READ_COMMANDS.values(), (["override", "etcd", "Upgradeable=True"], False)]:
            path = store_with(Path(tmp) / "state.db", objects, raw)  # afresh: the override writes
            check_read_command(*run_cli([*argv, "--state", str(path)]), json_output)


def saved_file_target(data: bytes) -> None:
    """A file of saved objects, whatever its bytes (``make fuzz`` mutates the demo cluster's objects): every
    command that takes ``--from-file`` answers cleanly."""
    with tempfile.TemporaryDirectory(prefix="cvo-fuzz-") as tmp:
        path = Path(tmp) / "objects.yaml"
        path.write_bytes(data)
        for argv, json_output in READ_COMMANDS.values():
            check_read_command(*run_cli([*argv, "--from-file", str(path)]), json_output)


def saved_file_seeds() -> list[bytes]:
    """The demo cluster's ClusterVersion, ClusterOperators and OperatorConditions as ``oc get -o yaml`` and
    ``-o json`` would save them."""
    import yaml

    objects = [o for (kind, _), o in sorted(base_objects().items())
               if kind in ("ClusterVersion", "ClusterOperator", "OperatorCondition")]
    listed = {"apiVersion": "v1", "kind": "List", "items": objects}
    return [yaml.safe_dump(listed).encode(), orjson.dumps(listed, option=orjson.OPT_INDENT_2),
            yaml.safe_dump(objects[0]).encode()]


TARGETS["saved-objects"] = (odd_objects(), saved_objects_target)
TARGETS["store-objects"] = (st.tuples(odd_objects(), st.sampled_from([0, 0, 0, 250, 1100])),
                            lambda pair: store_objects_target(*pair))

def checked_rows_target(blob: bytes) -> None:
    """The cache's listing of a store's checked rows, whatever its bytes: whole digests, or nothing (every row
    of the store is then checked, as without a cache)."""
    from cvo.cluster.embedded.checked_rows import DIGEST_BYTES, MAGIC, parse

    got = parse(blob)
    assert all(type(d) is bytes and len(d) == DIGEST_BYTES for d in got)
    assert not got or (blob.startswith(MAGIC) and (len(blob) - len(MAGIC)) % DIGEST_BYTES == 0)


TARGETS["checked-rows"] = (st.binary(max_size=300) | st.binary(max_size=300).map(
    lambda body: b"cvo checked rows 1\n" + body), checked_rows_target)


# The release images' readers (tests/support/fuzz_images.py), the registry client's (fuzz_registry.py), the update
# service's client (fuzz_graph.py) and the signature verifier's
# (tests/support/fuzz_verify.py) keep their targets beside their own strategies.
from tests.support.fuzz_graph import TARGETS as GRAPH_TARGETS  # noqa: E402
from tests.support.fuzz_images import TARGETS as IMAGE_TARGETS  # noqa: E402
from tests.support.fuzz_machines import TARGETS as MACHINES_TARGETS  # noqa: E402  (pools, nodes, configs)
from tests.support.fuzz_monitoring import TARGETS as MONITORING_TARGETS  # noqa: E402  (Prometheus answers)
from tests.support.fuzz_registry import TARGETS as REGISTRY_TARGETS  # noqa: E402
from tests.support.fuzz_verify import TARGETS as VERIFY_TARGETS  # noqa: E402
from tests.support.fuzz_workloads import TARGETS as WORKLOAD_TARGETS  # noqa: E402  (derived ClusterOperators)

TARGETS.update(IMAGE_TARGETS)
TARGETS.update(GRAPH_TARGETS)
TARGETS.update(REGISTRY_TARGETS)
TARGETS.update(VERIFY_TARGETS)
TARGETS.update(MONITORING_TARGETS)
TARGETS.update(MACHINES_TARGETS)
TARGETS.update(WORKLOAD_TARGETS)
