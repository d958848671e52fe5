"""Checking a replay against a scenario's expectations: each gives a PASS or a FAIL with why."""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cvo.gates.olm import OC_GROUP, OC_KIND
from cvo.objects import ClusterVersion, MachineConfig, MachineConfigPool, Node
from cvo.operators.behaviour import parse_duration
from cvo.payload.conditions import find_condition
from cvo.runner.durations import RECORDS_REF, cluster_forecast
from cvo.runner.sweep_events import BY_NAME, Event, SweepEvent, TaskApplied, TaskDone, field_names
from cvo.scenario.model import EXPECTATIONS, ScenarioError
from cvo.scenario.replay import ReplayOutcome
from cvo.status.godur import to_ns
from cvo.status.node_state import STATE
from cvo.status.text import write_status_text
from cvo.status.upgrade_nodes import (
    ASSESSMENT_NAMES,
    MC_GROUP,
    PHASE_NAMES,
    Machines,
    NodeRow,
    Pools,
    assess_pools,
)
from cvo.status.upgrade_status import StatusUnavailable, assess
from cvo.status.upgrade_text import DETAILS, render


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


_TASK_SUFFIX = re.compile(r" \(\d+ of \d+\)$")


def _text_matches(actual: Any, spec: Mapping[str, Any], key: str) -> str | None:
    """Match ``key`` exactly, ``key-contains`` as a substring, ``key-matches`` as a regex."""
    text = "" if actual is None else str(actual)
    if key in spec and text != str(spec[key]):
        return f"{key} is {text!r}, expected {spec[key]!r}"
    if f"{key}-contains" in spec and str(spec[f"{key}-contains"]) not in text:
        return f"{key} {text!r} does not contain {spec[f'{key}-contains']!r}"
    if f"{key}-matches" in spec and not re.search(str(spec[f"{key}-matches"]), text):
        return f"{key} {text!r} does not match /{spec[f'{key}-matches']}/"
    return None


def _check_result(out: ReplayOutcome, value: Any) -> Check:
    return Check(f"result is {value}", out.result == value, f"result was {out.result}"
                 + (f": {out.last.message}" if out.last and out.last.message else ""))


def _check_elapsed(out: ReplayOutcome, value: Any) -> list[Check]:
    checks = []
    if not isinstance(value, Mapping):
        raise ScenarioError("expect.elapsed: expected {min: DURATION, max: DURATION}")
    for bound in ("min", "max"):
        if bound in value:
            limit = parse_duration(value[bound], f"expect.elapsed.{bound}")
            ok = out.elapsed >= limit if bound == "min" else out.elapsed <= limit
            checks.append(Check(f"elapsed {bound} {value[bound]}", ok, f"elapsed {out.elapsed:.0f}s"))
    return checks


def _check_conditions(out: ReplayOutcome, value: Any) -> list[Check]:
    conditions = (out.cluster_version.get("status") or {}).get("conditions") or []
    checks = []
    for spec in value or []:
        type_ = spec.get("type")
        cond = find_condition(conditions, type_)
        name = f"condition {type_}" + "".join(f" {k}={v!r}" for k, v in spec.items() if k != "type")
        if cond is None:
            checks.append(Check(name, spec.get("absent", False) is True, "condition absent"))
            continue
        if spec.get("absent"):
            checks.append(Check(name, False, f"present: {cond.get('status')} {cond.get('message', '')!r}"))
            continue
        problems = [p for key in ("status", "reason", "message") if (p := _text_matches(cond.get(key), spec, key))]
        checks.append(Check(name, not problems, "; ".join(problems) or f"{cond.get('status')} {cond.get('reason')}"))
    return checks


def _check_history(out: ReplayOutcome, value: Any) -> list[Check]:
    history = (out.cluster_version.get("status") or {}).get("history") or []
    expected = value.get("entries", []) if isinstance(value, Mapping) else value
    checks = []
    if isinstance(value, Mapping) and "count" in value:
        checks.append(Check(f"history has {value['count']} entries", len(history) == value["count"],
                            f"{len(history)} entries"))
    for i, spec in enumerate(expected or []):
        entry = history[i] if i < len(history) else None
        name = f"history[{i}] " + " ".join(f"{k}={v}" for k, v in spec.items())
        if entry is None:
            checks.append(Check(name, False, f"history has only {len(history)} entries"))
            continue
        problems = [p for key in ("version", "state", "acceptedRisks") if (p := _text_matches(entry.get(key), spec, key))]
        checks.append(Check(name, not problems, "; ".join(problems) or "ok"))
    return checks


def _check_operators(out: ReplayOutcome, value: Any) -> list[Check]:
    by_name = {o["metadata"]["name"]: o for o in out.cluster_operators}
    checks = []
    for spec in value or []:
        name = spec.get("name")
        co = by_name.get(name)
        label = f"clusteroperator {name} " + " ".join(f"{k}={v}" for k, v in spec.items() if k != "name")
        if co is None:
            checks.append(Check(label, False, "no such ClusterOperator"))
            continue
        status = co.get("status") or {}
        versions = {v.get("name"): v.get("version") for v in status.get("versions") or []}
        problems = []
        if "version" in spec and versions.get("operator") != spec["version"]:
            problems.append(f"operator version is {versions.get('operator')}")
        for cond_type in ("Available", "Degraded", "Progressing", "Upgradeable", "Upgrading"):
            key = cond_type.lower()
            if key in spec:
                cond = find_condition(status.get("conditions") or [], cond_type)
                actual = cond.get("status") if cond else None
                expected = spec[key]  # null: the operator has no such condition
                if actual != (None if expected is None else str(expected)):
                    problems.append(f"{cond_type} is {actual if actual is not None else 'not set'}")
        checks.append(Check(label, not problems, "; ".join(problems) or "ok"))
    return checks


_EVENT_KEYS = ("name", "count", "absent", "after", "before", "from", "until")


def _offset(out: ReplayOutcome, event: Event) -> float:
    return (event.time - out.started).total_seconds()


def _event_kind(spec: Mapping[str, Any]) -> type[SweepEvent]:
    """The event a spec names; a name or a field the catalogue does not have is an error, not a silent miss."""
    kind = BY_NAME.get(str(spec["name"]))
    if kind is None:
        raise ScenarioError(f"expect.events: no event is named {spec['name']!r} (docs/scenarios.md lists them)")
    for key in spec:
        base = str(key).removesuffix("-contains").removesuffix("-matches")
        if key not in _EVENT_KEYS and base not in field_names(kind):
            raise ScenarioError(f"expect.events: {kind.name} has no field {base!r} (its fields: "
                                f"{', '.join(field_names(kind)) or 'none'})")
    return kind


def _event_matches(event: Event, kind: type[SweepEvent], spec: Mapping[str, Any]) -> bool:
    if type(event) is not kind:
        return False
    for key, expected in spec.items():
        if key in _EVENT_KEYS:
            continue
        base = key.removesuffix("-contains").removesuffix("-matches")
        if _text_matches(event.fields.get(base), {key: expected}, base) is not None:
            return False
    return True


def _check_events(out: ReplayOutcome, value: Any) -> list[Check]:
    """Each spec matches events by name and fields; ``from``/``until`` keep only the events in that
    window (offsets from the start), then ``absent``, ``count`` or (default) "at least one, the first
    one ``after``/``before`` these offsets" is checked."""
    checks = []
    for spec in value or []:
        if not isinstance(spec, Mapping) or "name" not in spec:
            raise ScenarioError(f"expect.events: each entry needs a name (the event name); got {spec!r}")
        start = parse_duration(spec["from"], "expect.events.from") if "from" in spec else None
        end = parse_duration(spec["until"], "expect.events.until") if "until" in spec else None
        kind = _event_kind(spec)
        matching = [e for e in out.events if _event_matches(e, kind, spec)
                    and (start is None or _offset(out, e) >= start) and (end is None or _offset(out, e) <= end)]
        label = "event " + " ".join(f"{k}={v!r}" for k, v in spec.items())
        if spec.get("absent"):
            checks.append(Check(label, not matching, f"{len(matching)} matching events"))
        elif "count" in spec:
            checks.append(Check(label, len(matching) == spec["count"], f"{len(matching)} matching events"))
        else:
            detail = (f"first at {matching[0].time - out.started}" if matching else "no matching event")
            ok = bool(matching)
            for bound in ("after", "before"):
                if bound in spec and matching:
                    limit = parse_duration(spec[bound], f"expect.events.{bound}")
                    at = (matching[0].time - out.started).total_seconds()
                    ok = ok and (at >= limit if bound == "after" else at <= limit)
            checks.append(Check(label, ok, detail))
    return checks


_MISSING = object()


def _field(obj: Any, path: str) -> Any:
    """``a/b/0/c``: mapping keys and list indexes, separated by ``/`` (keys may contain dots)."""
    for part in path.strip("/").split("/"):
        if isinstance(obj, Mapping) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return _MISSING
    return obj


def _check_objects(out: ReplayOutcome, value: Any) -> list[Check]:
    """Objects in the cluster at the end: present (or ``absent: true``), with ``fields`` matching."""
    checks = []
    for spec in value or []:
        if not isinstance(spec, Mapping) or "kind" not in spec or "name" not in spec:
            raise ScenarioError(f"expect.objects: each entry needs kind and name; got {spec!r}")
        api = str(spec.get("apiVersion", ""))
        group = api.rpartition("/")[0] if "/" in api else ("" if api else None)
        found = [obj for ref, obj in out.objects.items()
                 if ref.kind == spec["kind"] and ref.name == spec["name"]
                 and ref.namespace == str(spec.get("namespace", "")) and (group is None or ref.group == group)]
        where = f"{spec['namespace']}/{spec['name']}" if spec.get("namespace") else spec["name"]
        label = f"object {spec['kind']} {where}" + (" absent" if spec.get("absent") else "")
        fields = spec.get("fields") or {}
        if not isinstance(fields, Mapping):
            raise ScenarioError(f"expect.objects: fields of {spec['kind']} {where}: expected a mapping of path to value")
        if spec.get("absent"):
            checks.append(Check(label, not found, "present" if found else "absent"))
            continue
        if not found:
            checks.append(Check(label, False, "not in the cluster"))
            continue
        problems = []
        for key, expected in fields.items():
            path = str(key).removesuffix("-contains").removesuffix("-matches")
            actual = _field(found[0], path)
            if expected is None and path == key:  # null: the path must not be set
                if actual is not _MISSING:
                    problems.append(f"{path} is {actual!r}, expected it not to be set")
            elif actual is _MISSING:
                problems.append(f"{path} is not set")
            elif path == key and not isinstance(expected, str):
                if actual != expected:
                    problems.append(f"{path} is {actual!r}, expected {expected!r}")
            elif (problem := _text_matches(actual, {key: expected}, path)) is not None:
                problems.append(problem)
        label += "".join(f" {k}={v!r}" for k, v in fields.items())
        checks.append(Check(label, not problems, "; ".join(problems) or "ok"))
    return checks


def _first_index(out: ReplayOutcome, item: str) -> int | None:
    """Where an order item first happened: ``operator:NAME`` (ready), ``KIND "ns/name"`` (applied)."""
    if item.startswith("operator:"):
        name = item.split(":", 1)[1]
        return next((i for i, e in enumerate(out.events) if isinstance(e, TaskDone)
                     and _TASK_SUFFIX.sub("", e.task) == f'clusteroperator "{name}"'), None)
    return next((i for i, e in enumerate(out.events) if isinstance(e, TaskApplied)
                 and _TASK_SUFFIX.sub("", e.task) == item), None)


def _check_order(out: ReplayOutcome, value: Any) -> list[Check]:
    checks = []
    for chain in value or []:
        if not isinstance(chain, list) or len(chain) < 2:
            raise ScenarioError("expect.order: each entry is a list of two or more items, first to last")
        positions = [_first_index(out, str(item)) for item in chain]
        missing = [item for item, pos in zip(chain, positions, strict=True) if pos is None]
        label = "order " + " < ".join(str(c) for c in chain)
        if missing:
            checks.append(Check(label, False, f"never happened: {missing[0]}"))
            continue
        ok = all(a < b for a, b in itertools.pairwise(positions))  # type: ignore[operator]
        checks.append(Check(label, ok, f"event positions {positions}"))
    return checks


def _texts(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ScenarioError(f"expect.status-output.{key}: expected a text or a list of texts")


def _check_status_output(out: ReplayOutcome, value: Any) -> list[Check]:
    """What ``cvo status`` would print at the end (both tables and the Upgradeable section, with
    every OperatorCondition): each ``contains`` text is in it, each ``matches`` regex found (multi-line
    mode), each ``absent`` text is not."""
    if not isinstance(value, Mapping) or not set(value) <= {"contains", "matches", "absent"}:
        raise ScenarioError("expect.status-output: expected {contains?, matches?, absent?}")
    ocs = [obj for ref, obj in out.objects.items() if (ref.group, ref.kind) == (OC_GROUP, OC_KIND)]
    buffer = io.StringIO()
    write_status_text(out.cluster_version, out.cluster_operators, out.finished, buffer, ocs)
    text = buffer.getvalue()
    checks = []
    for needle in _texts(value.get("contains"), "contains"):
        checks.append(Check(f"status output contains {needle!r}", needle in text, f"output:\n{text}"))
    for pattern in _texts(value.get("matches"), "matches"):
        checks.append(Check(f"status output matches /{pattern}/", re.search(pattern, text, re.MULTILINE) is not None,
                            f"output:\n{text}"))
    for needle in _texts(value.get("absent"), "absent"):
        checks.append(Check(f"status output lacks {needle!r}", needle not in text, f"output:\n{text}"))
    return checks


def _machines(objects: list[dict[str, Any]]) -> Machines | None:
    """The pools, nodes and rendered configs among ``objects`` (as ``cvo upgrade status`` reads them from a
    cluster); ``None`` without pools, so a cluster with no simulated nodes reads as before."""
    def of(group: str, kind: str) -> list[dict[str, Any]]:
        return sorted((o for o in objects if o.get("kind") == kind and str(o.get("apiVersion", "")).startswith(
            f"{group}/" if group else "v1")), key=lambda o: str((o.get("metadata") or {}).get("name")))

    pools = of(MC_GROUP, "MachineConfigPool")
    if not pools:
        return None
    return Machines([MachineConfigPool.read(o) for o in pools], [Node.read(o) for o in of("", "Node")],
                    [MachineConfig.read(o) for o in of(MC_GROUP, "MachineConfig")])


def _upgrade_status_text(out: ReplayOutcome, spec: Mapping[str, Any]) -> tuple[str, str, str]:
    """(label, assessment, text) of ``cvo upgrade status`` at ``spec.at`` (default: the end)."""
    details = str(spec.get("details", "none"))
    if details not in DETAILS:
        raise ScenarioError(f"expect.upgrade-status.details: one of {', '.join(DETAILS)}")
    if "at" in spec:
        at = parse_duration(spec["at"], "expect.upgrade-status.at")
        if at not in out.snapshots:
            return f"upgrade status at {spec['at']}", "", f"<the replay ended after {out.elapsed:.0f}s>"
        when, cv, cos, records = out.snapshots[at]
        label = f"upgrade status at {spec['at']}"
        machines = _machines(out.machines.get(at, []))
    else:
        when, cv, cos, label = out.finished, out.cluster_version, out.cluster_operators, "upgrade status at the end"
        records = out.objects.get(RECORDS_REF)
        machines = _machines(list(out.objects.values()))
    try:
        status = assess(cv or None, cos, to_ns(when), machines=machines)
    except StatusUnavailable as err:
        return label, "", f"error: {err}"
    assessment = status.control_plane.assessment if status.updating and status.control_plane else "not updating"
    forecast = cluster_forecast(cv, cos, records, to_ns(when), machines=machines) if status.updating else None
    return label, assessment, render(status, details, forecast)


def _check_upgrade_status(out: ReplayOutcome, value: Any) -> list[Check]:
    """What ``cvo upgrade status`` prints at a moment of the replay (``at``, else the end): its assessment
    (``not updating`` when the cluster is not), texts it contains, regexes it matches, texts it lacks."""
    checks = []
    for spec in value or []:
        label, assessment, text = _upgrade_status_text(out, spec)
        if "assessment" in spec:
            checks.append(Check(f"{label}: assessment {spec['assessment']}", assessment == spec["assessment"],
                                f"assessment {assessment!r}; output:\n{text}"))
        for needle in _texts(spec.get("contains"), "contains"):
            checks.append(Check(f"{label} contains {needle!r}", needle in text, f"output:\n{text}"))
        for pattern in _texts(spec.get("matches"), "matches"):
            checks.append(Check(f"{label} matches /{pattern}/", re.search(pattern, text, re.MULTILINE) is not None,
                                f"output:\n{text}"))
        for needle in _texts(spec.get("absent"), "absent"):
            checks.append(Check(f"{label} lacks {needle!r}", needle not in text, f"output:\n{text}"))
    return checks


def _final_pools(out: ReplayOutcome) -> tuple[Pools | None, dict[str, dict[str, Any]]]:
    """oc's assessment of the pools and nodes at the end (:func:`assess_pools`), and the pools' objects by name."""
    objects = list(out.objects.values())
    machines = _machines(objects)
    if machines is None or not out.cluster_version:
        return None, {}
    raw = {p.name: dict(p.body) for p in machines.pools}
    return assess_pools(ClusterVersion.of(out.cluster_version), machines, False, to_ns(out.finished)), raw


_POOL_COUNTS = {"machines": "machineCount", "updated": "updatedMachineCount", "ready": "readyMachineCount",
                "unavailable": "unavailableMachineCount", "degraded": "degradedMachineCount"}


def _check_pools(out: ReplayOutcome, value: Any) -> list[Check]:
    """The MachineConfigPools at the end: oc's assessment and completion (as ``cvo upgrade status`` shows
    them), the status counts, ``paused``, or ``absent``."""
    pools, raw = _final_pools(out)
    rows = {} if pools is None else {r.name: r for r in ([pools.control_plane] if pools.control_plane else [])
                                     + pools.workers}
    checks = []
    for spec in value or []:
        name = str(spec.get("name"))
        label = f"pool {name} " + " ".join(f"{k}={v}" for k, v in spec.items() if k != "name")
        if name not in raw:
            checks.append(Check(label, spec.get("absent") is True, "no such MachineConfigPool"))
            continue
        if spec.get("absent"):
            checks.append(Check(label, False, "the pool is there"))
            continue
        row, obj = rows[name], raw[name]
        status = obj.get("status") or {}
        actual: dict[str, Any] = {"assessment": row.assessment, "completion": round(row.completion),
                                  "paused": bool((obj.get("spec") or {}).get("paused", False))}
        actual |= {key: status.get(field) for key, field in _POOL_COUNTS.items()}
        problems = [f"{key} is {actual[key]!r}" for key in spec if key in actual and actual[key] != spec[key]]
        unknown = sorted(set(spec) - set(actual) - {"name", "absent"})
        if unknown:
            raise ScenarioError(f"expect.pools: unknown key {unknown[0]!r}; known: name, absent, "
                                f"{', '.join(sorted(actual))}")
        checks.append(Check(label, not problems, "; ".join(problems) or "ok"))
    return checks


def _check_nodes(out: ReplayOutcome, value: Any) -> list[Check]:
    """The Nodes at the end as oc assesses them: pool, version, phase, assessment, the daemon's ``state``."""
    pools, _ = _final_pools(out)
    rows: dict[str, tuple[str, NodeRow | None]] = {}
    for assessed in ([pools.control_plane] if pools and pools.control_plane else []) + (pools.workers if pools else []):
        rows |= {n.name: (assessed.name, n) for n in assessed.nodes}
    nodes = {str((o.get("metadata") or {}).get("name")): o for o in out.objects.values() if o.get("kind") == "Node"
             and o.get("apiVersion") == "v1"}
    checks = []
    for spec in value or []:
        name = str(spec.get("name"))
        label = f"node {name} " + " ".join(f"{k}={v}" for k, v in spec.items() if k != "name")
        if name not in nodes:
            checks.append(Check(label, False, "no such Node"))
            continue
        pool, row = rows.get(name, ("", None))
        annotations = (nodes[name].get("metadata") or {}).get("annotations") or {}
        actual: dict[str, Any] = {"pool": pool, "state": annotations.get(STATE, ""),
                                  "cordoned": bool((nodes[name].get("spec") or {}).get("unschedulable", False)),
                                  "version": row.version if row else "", "phase": PHASE_NAMES[row.phase] if row else "",
                                  "assessment": ASSESSMENT_NAMES[row.assessment] if row else ""}
        unknown = sorted(set(spec) - set(actual) - {"name"})
        if unknown:
            raise ScenarioError(f"expect.nodes: unknown key {unknown[0]!r}; known: name, {', '.join(sorted(actual))}")
        problems = [f"{key} is {actual[key]!r}" for key in spec if key in actual and actual[key] != spec[key]]
        checks.append(Check(label, not problems, "; ".join(problems) or "ok"))
    return checks


CHECKS: dict[str, Callable[[ReplayOutcome, Any], Check | list[Check]]] = {
    "result": _check_result,
    "elapsed": _check_elapsed,
    "conditions": _check_conditions,
    "history": _check_history,
    "operators": _check_operators,
    "events": _check_events,
    "order": _check_order,
    "objects": _check_objects,
    "status-output": _check_status_output,
    "upgrade-status": _check_upgrade_status,
    "pools": _check_pools,
    "nodes": _check_nodes,
}
assert set(CHECKS) == set(EXPECTATIONS), "model.EXPECTATIONS and expect.CHECKS must list the same kinds"


def evaluate(out: ReplayOutcome) -> list[Check]:
    checks: list[Check] = []
    for key, value in out.scenario.expect.items():
        fn = CHECKS.get(key)
        if fn is None:
            raise ScenarioError(f"{out.scenario.path}: unknown expectation {key!r}; known: {', '.join(CHECKS)}")
        try:
            produced = fn(out, value)
        except ScenarioError as err:
            raise ScenarioError(f"{out.scenario.path}: {err}") from None
        except (AttributeError, TypeError, ValueError) as err:
            raise ScenarioError(f"{out.scenario.path}: expect.{key}: malformed ({err})") from None
        checks.extend(produced if isinstance(produced, list) else [produced])
    if not checks:
        raise ScenarioError(f"{out.scenario.path}: no expectations: a scenario must check something")
    return checks
