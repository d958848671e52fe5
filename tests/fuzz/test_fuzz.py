"""Property-based fuzzing of every reader of user input, bounded for ``make test``.

The ``ci`` profile (default) is derandomized and small; ``HYPOTHESIS_PROFILE=fuzz`` (what
``make fuzz`` uses through ``tests/support/fuzz_main.py``) runs many more random examples.  Every crash a
fuzzer found is pinned in :data:`FOUND` or in ``tests/fuzz/test_input_limits.py`` and its neighbours.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support import fuzz_targets as t

settings.register_profile("ci", max_examples=150, derandomize=True, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("fuzz", max_examples=5_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Bounded further for the targets that build a directory or run a command.
SLOW = settings(max_examples=min(settings().max_examples, 30) if settings().derandomize else settings().max_examples)


@given(t.document_bytes)
@example(b"a: &a [1]\nb: [*a, *a]\n")
@example(b"{" + b'"a":' * 1 + b"[" * 1100 + b"]" * 1100 + b"}")
@example(b"{}\n{" + b"[" * 1100)
def test_parse_headers_raises_only_manifest_errors(data: bytes) -> None:
    t.parse_target(data)


@given(t.token_text(t.YAML_TOKENS, 80).map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_yaml_decoder_raises_only_document_errors(data: bytes) -> None:
    t.documents_target(data)


@given(t.token_text(t.TEMPLATE_TOKENS, 30) | st.text(max_size=60))
@example('{{"\\q"}}')
@example('{{"\\ud800"}}')
@example('{{index .Images "\\xff"}}')
@example("{{{{\n{{/* c */}}")  # found: the action's newline made a two-line error
def test_template_renderer_raises_only_template_errors(text: str) -> None:
    t.template_target(text)


@SLOW
@given(t.payload_dirs())
def test_loader_plan_and_lint_never_crash(spec: dict[str, Any]) -> None:
    t.loader_target(spec)


@SLOW
@given(t.payload_dirs())
@example({"files": {b"0000_10_\xff.yaml": b"kind: [\n"}, "cvo_files": {}, "specials": [], "metadata": None,
          "images": None})
@example({"files": {}, "cvo_files": {"a.yaml": b'{{"\\q"}}'}, "specials": ["loop", "fifo", "dev-zero"],
          "metadata": None, "images": None})
@example({"files": {b"\n\x80.yaml": b"", b"0000_10_a\nb.yaml": b'kind: A\nmetadata: {name: "x\\ny"}\n---\n'
                    b'kind: A\nmetadata: {name: "x\\ny"}\n'}, "cvo_files": {b"\n\x80.yaml": b""}, "specials": [],
          "metadata": None, "images": None})  # found: names with newlines made multi-line errors
def test_cli_plan_and_lint_exit_with_one_error_line_per_problem(spec: dict[str, Any]) -> None:
    t.cli_payload_target(spec)


@settings(max_examples=min(settings().max_examples, 15) if settings().derandomize else 300)
@given(t.SWEEP_FLAGS)
@example(["--interval", "0s"])
@example(["--speed", "nan"])
def test_cli_install_flags(flags: list[str]) -> None:
    t.sweep_flags_target(flags)


@given(t.document_bytes | t.token_text(["default", "etcd", ":", " ", "{", "}", "delay", "90s", "-1", "flaps",
                                        "1e99", "degraded", "after", "for", "message", "[", "]", "\n", "  ", "true",
                                        ",", "upgradeable", "reason", "&a ", "*a"], 40).map(str.encode))
@example(b'{"\\n":{"":null}}')  # found: an operator name with a newline made a two-line error
@example(b'{"a\\nb": 5}')
def test_behaviours_file_raises_only_value_errors(data: bytes) -> None:
    t.behaviours_target(data)


@given(t.document_bytes | t.token_text(["name", "actions", "at", "install", "options", "interval", "timeout",
                                        "expect", "result", "operators", "cluster", ":", " ", "{", "}", "[", "]",
                                        "\n", "  ", "- ", "0s", "3m", "-5", "x", ","], 40).map(str.encode))
def test_scenario_file_raises_only_scenario_errors(data: bytes) -> None:
    t.scenario_target(data)


@given(t.object_values, t.typed_kinds)
def test_object_readers_never_raise(obj: Any, kind: tuple[str, str]) -> None:
    t.objects_target(obj, kind)


@SLOW
@given(t.TARGETS["state"][0])
@example(b"")
@example(b"SQLite format 3\x00")
@example(b'{"format": 1, "history": "x"}')
def test_state_file_opens_or_is_one_error_line(data: bytes) -> None:
    t.state_target(data)


@given(t.TARGETS["saved"][0])
@example(b"kind: List\nitems: [{kind: ClusterVersion, metadata: {name: version}, status: {conditions: 3}}]\n")
def test_saved_objects_read_or_one_error_line(data: bytes) -> None:
    t.saved_target(data)


@given(t.TARGETS["upgrade-status"][0])
@example(({"status": {"conditions": [{"type": "Progressing", "status": "True"}], "history": [{}]}},
          [{"metadata": {"annotations": {"include.release.openshift.io/x": "true"}}}]))
def test_upgrade_status_of_any_objects(pair: tuple[Any, list[Any]]) -> None:
    t.upgrade_status_target(*pair)


@given(t.TARGETS["machines"][0])
@example(([{"kind": "MachineConfigPool", "metadata": {"name": "worker"}, "spec": {"nodeSelector": {
    "matchExpressions": [{"key": "a", "operator": "Near"}]}}}], [], [], True))
@example(([], [[]], ["x"], False))
def test_pools_nodes_and_configs_of_any_shape(args: tuple[Any, Any, Any, bool]) -> None:
    t.TARGETS["machines"][1](args)


@given(t.TARGETS["machines-from-file"][0])
def test_pools_nodes_and_configs_of_any_shape_from_a_file(args: tuple[Any, Any, Any, str]) -> None:
    t.TARGETS["machines-from-file"][1](args)


@given(t.TARGETS["machine-config-rules"][0])
def test_the_machine_config_operators_rules_over_pools_of_any_shape(args: tuple[Any, Any]) -> None:
    t.TARGETS["machine-config-rules"][1](args)


@settings(max_examples=min(settings().max_examples, 25) if settings().derandomize else 300)
@given(t.TARGETS["machine-config-operator"][0])
def test_the_simulated_machine_config_operator_over_pools_and_nodes_of_any_shape(args: tuple[Any, Any, Any]) -> None:
    t.TARGETS["machine-config-operator"][1](args)


@given(t.TARGETS["workload-annotation"][0])
@example(("- {kind: Deployment, namespace: shop, selector: {app: 5}}", "image"))
def test_workload_annotations_of_any_text(args: tuple[str, str]) -> None:
    t.TARGETS["workload-annotation"][1](args)


@given(t.TARGETS["rollout"][0])
def test_rollouts_of_workloads_of_any_shape(obj: dict[str, Any]) -> None:
    t.TARGETS["rollout"][1](obj)


@given(t.TARGETS["events"][0])
@example(b"")
@example(b'{"event": "sweep.started", "time": "2026-01-01T00:00:00"}\n{"event": "node.started", "time": '
         b'"2026-01-01T00:00:01", "node": 0, "after": [0]}')  # a node after itself
def test_events_file_reads_or_is_one_error_line(data: bytes) -> None:
    t.events_target(data)


@given(t.TARGETS["records"][0])
def test_records_of_any_shape_make_a_report(triple: tuple[Any, list[Any], Any]) -> None:
    t.records_target(*triple)


@settings(max_examples=min(settings().max_examples, 12) if settings().derandomize else 300)
@given(t.TARGETS["saved-objects"][0])
def test_saved_objects_of_any_shape_in_every_command(objects: list[dict[str, Any]]) -> None:
    t.saved_objects_target(objects)


@settings(max_examples=min(settings().max_examples, 6) if settings().derandomize else 100)
@given(t.TARGETS["store-objects"][0])
def test_store_contents_of_any_shape_in_every_command(pair: tuple[list[dict[str, Any]], int]) -> None:
    t.store_objects_target(*pair)
