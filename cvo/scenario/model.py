"""Scenario files: a starting cluster, operator behaviours, timed actions and expectations.

The format is documented in docs/scenarios.md.  Parsing turns every mistake into a
:class:`ScenarioError` naming the file and the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvo.images.reference import looks_like_image
from cvo.operators.behaviour import Behaviours, parse_duration
from cvo.payload.arch import go_arch
from cvo.payload.limits import InputError, display_name, printable, read_input
from cvo.payload.yamlorjson import load_documents
from cvo.payload.yamlparse import DocumentError

ACTIONS = ("install", "upgrade", "reconcile", "cancel", "resume", "set-condition", "override", "clear-override",
           "force", "delete", "apply", "patch", "patch-status", "cv-override", "fail-requests", "wait", "monitoring")
RESULTS = ("completed", "failed", "timeout", "cancelled", "blocked", "degraded")
# Expectation kinds (cvo.scenario.expect.CHECKS implements each): checked at load time, so a typo
# fails before a long replay.
EXPECTATIONS = ("result", "elapsed", "conditions", "history", "operators", "events", "order", "objects",
                "status-output", "upgrade-status", "pools", "nodes")
FEATURE_SETS = ("", "Default", "TechPreviewNoUpgrade", "DevPreviewNoUpgrade", "OKD")
UPGRADE_STATUS_KEYS = {"at", "details", "assessment", "contains", "matches", "absent"}


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and the problem."""


_IMAGE_REF = re.compile(r"\$\{image:([^}]+)\}")


def _expand_images(value: Any, base: Path) -> Any:
    """``${image:PATH}`` in expected text: the image of the release directory PATH (relative to the
    scenario file), i.e. ``file://`` + its absolute path, so messages that name a release image can
    be matched exactly wherever the repository is checked out.  ``${arch}``: the architecture a
    release is reported for on this machine (Go's name for it, as the CVO reports its own)."""
    if isinstance(value, str):
        value = value.replace("${arch}", go_arch())
        return _IMAGE_REF.sub(lambda m: f"file://{(base / m.group(1).strip()).resolve()}", value)
    if isinstance(value, list):
        return [_expand_images(v, base) for v in value]
    if isinstance(value, Mapping):
        return {k: _expand_images(v, base) for k, v in value.items()}
    return value


@dataclass
class Action:
    at: float
    kind: str
    value: Any
    index: int  # position in the file, for messages and stable ordering


@dataclass
class Scenario:
    path: Path
    name: str
    description: str
    behaviours: Behaviours
    actions: list[Action]
    expect: dict[str, Any]
    installed: Path | str | None = None  # a release installed before the timeline starts (a directory, or an image)
    objects: list[dict[str, Any]] = field(default_factory=list)
    openshift_apis: bool = True
    interval: float = 180.0
    timeout: float = 2 * 3600.0
    capabilities: list[str] | None = None
    # the simulated monitoring: PromQL query -> True/False (the query's one sample, 1 or 0) or an error's text;
    # None: no monitoring section (conditional updates are not evaluated by the replay)
    monitoring: dict[str, bool | str] | None = None
    feature_set: str = ""  # options.feature-set: the cluster's feature set (the CVO's gates, docs/updates.md)

    def resolve(self, value: str) -> Path:
        """A release path, relative to the scenario file."""
        return (self.path.parent / value).resolve()


def _duration(value: Any, where: str, minimum: float = 0.0) -> float:
    try:
        return parse_duration(value, where, minimum)
    except ValueError as err:
        raise ScenarioError(str(err)) from None


_SCALAR = (str, int, float, bool)
_REF = "expected {kind, name, namespace?, apiVersion?}"


def _scalars(value: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...] = ()) -> bool:
    """Whether the required keys are there and every named key present is a scalar (text or number)."""
    return all(k in value for k in required) and all(
        isinstance(value[k], _SCALAR) for k in required + optional if k in value)


def action_problem(kind: str, value: Any) -> str | None:
    """Why an action's value has the wrong shape for the replay, or ``None``; checked at load time."""
    if kind == "install":
        return None if isinstance(value, str) else "expected a release directory path"
    if kind in ("upgrade", "force"):
        if isinstance(value, dict):
            ok = isinstance(value.get("to"), str) and isinstance(value.get("force", False), bool)
            return None if ok else "expected a release directory path or {to: PATH, force?: true|false}"
        return None if isinstance(value, str) else "expected a release directory path"
    if kind == "set-condition":
        ok = isinstance(value, dict) and _scalars(value, ("clusteroperator", "type", "status"), ("reason", "message"))
        return None if ok else "expected {clusteroperator, type, status, reason?, message?}"
    if kind in ("delete", "patch", "patch-status"):
        if not isinstance(value, dict) or not _scalars(value, ("kind", "name"), ("namespace", "apiVersion")):
            return _REF
        if kind != "delete" and not isinstance(value.get("merge", {}), dict | type(None)):
            return "merge: expected an object (a JSON merge patch)"
        return None
    if kind == "apply":
        ok = (isinstance(value, dict) and isinstance(value.get("kind"), str)
              and isinstance(value.get("apiVersion", "v1"), str) and isinstance(value.get("metadata"), dict)
              and isinstance(value["metadata"].get("name"), str)
              and isinstance(value["metadata"].get("namespace", ""), str))
        return None if ok else "expected an object with apiVersion, kind and metadata.name"
    if kind == "cv-override":
        ok = value is None or (isinstance(value, list) and all(isinstance(v, dict) for v in value))
        return None if ok else "expected a list of {kind, group, namespace, name, unmanaged}"
    if kind in ("override", "clear-override"):
        required = ("name", "status") if kind == "override" else ("name",)
        ok = isinstance(value, dict) and _scalars(value, required, ("type", "reason", "message"))
        return None if ok else "expected {name, status, type?, reason?, message?}"
    if kind == "monitoring":
        return monitoring_problem(value)
    if kind == "fail-requests":
        ok = (isinstance(value, dict) and _scalars(value, ("kind",), ("name", "namespace", "apiVersion", "error"))
              and isinstance(value.get("count", 1), int) and not isinstance(value.get("count", 1), bool)
              and 0 <= value.get("count", 1) <= 1_000_000)
        return None if ok else "expected {kind, name?, namespace?, error, count (0 to 1,000,000)}"
    return None  # reconcile, cancel, resume, wait: the value is not used


def monitoring_problem(value: Any) -> str | None:
    """Why a ``monitoring`` mapping (PromQL query -> 0, 1, true, false or an error's text) is malformed."""
    if not isinstance(value, Mapping) or not value:
        return "expected a mapping of PromQL query to 0, 1 or an error's text"
    for query, answer in value.items():
        if not isinstance(query, str) or not query:
            return f"{printable(repr(query), 60)}: a query is non-empty text"
        if isinstance(answer, bool) or answer in (0, 1):
            continue
        if not isinstance(answer, str) or not answer:
            return (f"{printable(query, 60)}: {printable(repr(answer), 60)} is no answer: 0, 1 (the query's one sample) "
                    "or the text of the error the query fails with")
    return None


def monitoring_answers(value: Mapping[str, Any]) -> dict[str, bool | str]:
    """A checked ``monitoring`` mapping as the static registry's answers."""
    return {q: a if isinstance(a, str) else bool(a) for q, a in value.items()}


def _parse_actions(data: Any, where: str) -> list[Action]:
    if data is None:
        return []
    if not isinstance(data, list):
        raise ScenarioError(f"{where}: expected a list of actions")
    actions = []
    for index, item in enumerate(data):
        spot = f"{where}[{index}]"
        if not isinstance(item, Mapping):
            raise ScenarioError(f"{spot}: expected a mapping like {{at: 10m, upgrade: ../payloads/x}}")
        keys = [k for k in item if k != "at"]
        if len(keys) != 1 or keys[0] not in ACTIONS:
            raise ScenarioError(f"{spot}: expected exactly one action of {', '.join(ACTIONS)}; got {printable(repr(keys), 80)}")
        if (problem := action_problem(keys[0], item[keys[0]])) is not None:
            raise ScenarioError(f"{spot} ({keys[0]}): {problem}")
        actions.append(Action(_duration(item.get("at", 0), f"{spot}.at"), keys[0], item[keys[0]], index))
    actions.sort(key=lambda a: (a.at, a.index))
    return actions


def _read(path: Path) -> Any:
    """The file's one YAML document, read under cvo's input limits (``cvo.payload.limits``)."""
    shown = display_name(str(path))
    try:
        documents = [d for d in load_documents(read_input(path, shown)) if d is not None]
    except InputError as err:
        raise ScenarioError(str(err)) from None
    except DocumentError as err:
        where = f"line {err.line}: " if err.line else ""
        raise ScenarioError(f"{shown}: invalid YAML: {where}{err}") from None
    except UnicodeDecodeError as err:
        raise ScenarioError(f"{shown}: not UTF-8 text: {err.reason}") from None
    if len(documents) > 1:
        raise ScenarioError(f"{shown}: expected one YAML document")
    return documents[0] if documents else None


def load_scenario(path: Path) -> Scenario:
    shown = display_name(str(path))
    data = _read(path)
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{shown}: expected a mapping at the top")
    known = {"name", "description", "cluster", "operators", "options", "actions", "expect", "monitoring"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ScenarioError(f"{shown}: unknown key {printable(repr(unknown[0]), 60)}; known: {', '.join(sorted(known))}")
    try:
        behaviours = Behaviours.parse(data.get("operators"), f"{shown}: operators")
    except ValueError as err:
        raise ScenarioError(str(err)) from None
    cluster = data.get("cluster") or {}
    options = data.get("options") or {}
    expect = data.get("expect") or {}
    if not isinstance(cluster, Mapping) or not isinstance(options, Mapping) or not isinstance(expect, Mapping):
        raise ScenarioError(f"{shown}: cluster, options and expect must be mappings")
    objects = cluster.get("objects") or []
    if not isinstance(objects, list) or any(action_problem("apply", o) for o in objects):
        raise ScenarioError(f"{shown}: cluster.objects: expected a list of objects with apiVersion, kind and "
                            "metadata.name")
    capabilities = options.get("capabilities")
    if capabilities is not None and not (isinstance(capabilities, list) and all(isinstance(c, str) for c in capabilities)):
        raise ScenarioError(f"{shown}: options.capabilities: expected a list of capability names")
    feature_set = options.get("feature-set", "")
    if feature_set not in FEATURE_SETS:
        raise ScenarioError(f"{shown}: options.feature-set: expected one of {', '.join(FEATURE_SETS[1:])}")
    installed = cluster.get("installed")
    if installed is not None and not isinstance(installed, str):
        raise ScenarioError(f"{shown}: cluster.installed: expected a release directory path or image")
    scenario = Scenario(
        path=path,
        name=str(data.get("name") or path.stem),
        description=str(data.get("description") or ""),
        behaviours=behaviours,
        actions=_parse_actions(data.get("actions"), f"{shown}: actions"),
        expect=_expand_images(dict(expect), path.parent),
        objects=list(objects),
        openshift_apis=bool(cluster.get("openshift-apis", True)),
        interval=_duration(options.get("interval", "3m"), f"{shown}: options.interval", minimum=1.0),
        timeout=_duration(options.get("timeout", "2h"), f"{shown}: options.timeout"),
        capabilities=capabilities,
        feature_set=feature_set,
    )
    if "monitoring" in data:
        if (problem := monitoring_problem(data["monitoring"])) is not None:
            raise ScenarioError(f"{shown}: monitoring: {problem}")
        scenario.monitoring = monitoring_answers(data["monitoring"])
    elif any(a.kind == "monitoring" for a in scenario.actions):
        scenario.monitoring = {}
    if cluster.get("installed"):
        given = str(cluster["installed"])
        scenario.installed = given if looks_like_image(given) else scenario.resolve(given)
    unknown_expect = sorted(str(k) for k in expect if k not in EXPECTATIONS)
    if unknown_expect:
        raise ScenarioError(f"{shown}: unknown expectation {printable(repr(unknown_expect[0]), 60)} in expect; "
                            f"known: {', '.join(EXPECTATIONS)}")
    if "status-output" in expect and not isinstance(expect["status-output"], Mapping):
        raise ScenarioError(f"{shown}: expect.status-output: expected {{contains?, matches?, absent?}}")
    for spec in expect.get("upgrade-status") or []:
        if not isinstance(spec, Mapping) or not set(spec) <= UPGRADE_STATUS_KEYS:
            raise ScenarioError(f"{shown}: expect.upgrade-status: each entry is {{at?, details?, assessment?, "
                                "contains?, matches?, absent?}")
        if "at" in spec:
            _duration(spec["at"], f"{shown}: expect.upgrade-status.at")
    for key in ("conditions", "operators", "events", "order", "objects", "upgrade-status", "pools", "nodes"):
        if key in expect and not isinstance(expect[key], list):
            raise ScenarioError(f"{shown}: expect.{key}: expected a list")
    result = expect.get("result")
    if result is not None and result not in RESULTS:
        raise ScenarioError(f"{shown}: expect.result must be one of {', '.join(RESULTS)}")
    if not scenario.actions and scenario.installed is None:
        raise ScenarioError(f"{shown}: no actions: add at least one (e.g. install: ../payloads/demo-4.16.0)")
    return scenario
