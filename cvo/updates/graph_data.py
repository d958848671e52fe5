"""A cincinnati-graph-data directory, read as the graph builder reads it (openshift/cincinnati
``plugins/internal/graph_builder/openshift_secondary_metadata_parser/plugin.rs``): ``version`` (the schema,
major 1), ``channels/*.yaml`` (``name`` and ``versions``), ``blocked-edges/*.yaml`` (``to`` and a ``from``
regex: a removed edge; with ``url``, ``name``, ``message`` and ``matchingRules`` too: a conditional edge and
its risk) and the optional ``raw/metadata.json`` (extra node metadata by version).

Where the plugin logs a file it cannot read and goes on without it, cvo refuses the directory with one line
naming the file (:class:`~cvo.payload.limits.InputError`): a file that would silently drop a channel or a
risk is a mistake its author wants to hear about.  Files whose extension does not match the plugin's
``ya+ml`` are skipped, as the plugin skips them (``_OWNERS``, ``README.md``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cvo.payload import semver
from cvo.payload.limits import InputError, printable, read_input
from cvo.updates.model import PROMQL, MatchingRule, Risk

MAX_SUPPORTED_VERSION = (1, 2, 0)  # the plugin's MAX_SUPPORTED_VERSION
BLOCKED_EDGES_DIR = "blocked-edges"
CHANNELS_DIR = "channels"
_EXTENSION = re.compile("ya+ml")  # the plugin's deserialize_directory_files(…, Regex::new("ya+ml"))
_CONDITIONAL_KEYS = ("url", "name", "message", "matchingRules")
_OPTIONAL_KEYS = ("fixedIn", "autoExtend")  # documented in cincinnati-graph-data's README; not read by the builder
MAX_GRAPH_DATA_FILE = 1 << 20  # the real files are a few hundred bytes; raw/metadata.json a few KiB


@dataclass(frozen=True)
class Channel:
    name: str
    versions: tuple[semver.Version, ...]
    path: str


@dataclass(frozen=True)
class BlockedEdge:
    """``to`` (a version, maybe with ``+ARCH``) and the ``from`` regex over source versions (``+ARCH`` included).
    ``risk`` set: a conditional edge; else the matching edges are removed."""

    to: semver.Version
    from_regex: str
    path: str
    risk: Risk | None = None


@dataclass(frozen=True)
class GraphData:
    version: str = "1.0.0"
    channels: tuple[Channel, ...] = ()
    blocked: tuple[BlockedEdge, ...] = ()
    raw: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def _display(root: Path, path: Path) -> str:
    return printable(os.fspath(path))


def _yaml_mapping(path: Path, display: str) -> dict[str, Any]:
    from cvo.payload.yamlorjson import load_documents
    from cvo.payload.yamlparse import DocumentError

    data = read_input(path, display, MAX_GRAPH_DATA_FILE)
    try:
        docs = [d for d in load_documents(data) if d is not None]
    except DocumentError as err:
        raise InputError(display, f"invalid YAML: {err}") from None
    except UnicodeDecodeError as err:
        raise InputError(display, f"not UTF-8 text: {err.reason}") from None
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise InputError(display, "must hold one YAML mapping")
    return docs[0]


def _version(value: Any, display: str, key: str) -> semver.Version:
    if not isinstance(value, str):
        raise InputError(display, f"{key!r} must be a version string, not {_kind(value)}")
    try:
        return semver.parse(value)
    except semver.SemverError as err:
        raise InputError(display, f"{key!r} {printable(value, 80)!r} is not a semantic version: {err}") from None


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _string(doc: Mapping[str, Any], key: str, display: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str):
        raise InputError(display, f"{key!r} must be a string, not {_kind(value)}")
    return value


def _files(root: Path, name: str) -> list[Path]:
    directory = root / name
    if not directory.is_dir():
        return []
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as err:
        raise InputError(_display(root, directory), f"cannot list the directory: {err.strerror}") from None
    return [Path(e.path) for e in entries
            if _EXTENSION.search(Path(e.name).suffix[1:]) and not e.is_dir()]


def _read_version(root: Path) -> str:
    path = root / "version"
    display = _display(root, path)
    if not path.exists():
        raise InputError(display, "missing: a cincinnati-graph-data directory names its schema version there "
                                  "(e.g. 1.1.0)")
    text = read_input(path, display, 4096).decode("utf-8", "replace").strip()
    try:
        version = semver.parse(text)
    except semver.SemverError as err:
        raise InputError(display, f"{printable(text, 40)!r} is not a semantic version: {err}") from None
    if version.major != MAX_SUPPORTED_VERSION[0]:
        raise InputError(display, f"unrecognized graph-data version {text}; "
                                  f"{'.'.join(map(str, MAX_SUPPORTED_VERSION))} and compatible versions are supported")
    return text


def _channel(path: Path, display: str) -> Channel:
    doc = _yaml_mapping(path, display)
    name = _string(doc, "name", display)
    versions = doc.get("versions")
    if versions is None:
        versions = []
    if not isinstance(versions, list):
        raise InputError(display, f"'versions' must be a list of versions, not {_kind(versions)}")
    return Channel(name, tuple(_version(v, display, "versions") for v in versions), display)


def _rules(value: Any, display: str) -> tuple[MatchingRule, ...]:
    if not isinstance(value, list) or not value:
        raise InputError(display, "'matchingRules' must be a non-empty list of {type: …} entries")
    rules = []
    for i, rule in enumerate(value):
        if not isinstance(rule, dict) or not isinstance(rule.get("type"), str) or not rule["type"]:
            raise InputError(display, f"matchingRules[{i}] must be a mapping with a 'type' string")
        query: Any = ""
        if rule["type"] == PROMQL:
            promql = rule.get("promql")
            query = promql.get("promql") if isinstance(promql, dict) else None
            if not isinstance(query, str) or not query.strip():
                raise InputError(display, f"matchingRules[{i}] of type PromQL needs promql: {{promql: QUERY}}")
        rules.append(MatchingRule(rule["type"], str(query)))
    return tuple(rules)


def _blocked_edge(path: Path, display: str) -> BlockedEdge:
    doc = _yaml_mapping(path, display)
    to = _version(doc.get("to"), display, "to")
    from_regex = _string(doc, "from", display)
    try:
        re.compile(from_regex)
    except re.error as err:
        raise InputError(display, f"'from' {printable(from_regex, 80)!r} is not a regular expression: {err}") from None
    present = [k for k in _CONDITIONAL_KEYS if k in doc]
    if not present:
        unknown = sorted(set(doc) - {"to", "from"})
        if unknown:
            raise InputError(display, f"unknown field(s) {', '.join(map(repr, unknown))}: a blocked edge has only "
                                      f"'to' and 'from', a conditional one also {', '.join(_CONDITIONAL_KEYS)}")
        return BlockedEdge(to, from_regex, display)
    missing = [k for k in _CONDITIONAL_KEYS if k not in doc]
    if missing:
        raise InputError(display, f"a conditional edge needs {', '.join(_CONDITIONAL_KEYS)}; missing: "
                                  f"{', '.join(missing)}")
    for key in _OPTIONAL_KEYS:
        if key in doc and not isinstance(doc[key], str):
            raise InputError(display, f"{key!r} must be a string, not {_kind(doc[key])}")
    risk = Risk(_string(doc, "name", display), _string(doc, "message", display), _string(doc, "url", display),
                _rules(doc["matchingRules"], display))
    if not risk.name:
        raise InputError(display, "'name' must not be empty")
    return BlockedEdge(to, from_regex, display, risk)


def _raw(root: Path) -> dict[str, dict[str, str]]:
    path = root / "raw" / "metadata.json"
    if not path.exists():
        return {}
    display = _display(root, path)
    try:
        doc = orjson.loads(read_input(path, display, MAX_GRAPH_DATA_FILE))
    except orjson.JSONDecodeError as err:
        raise InputError(display, f"invalid JSON: {err}") from None
    if not isinstance(doc, dict) or not all(
            isinstance(m, dict) and all(isinstance(v, str) for v in m.values()) for m in doc.values()):
        raise InputError(display, "must map versions to objects of string metadata")
    for version in doc:
        _version(version, display, "a version key")
    return doc


def read_graph_data(root: Path) -> GraphData:
    """The graph data in ``root``, or :class:`InputError` naming the first file that is wrong."""
    if not root.is_dir():
        raise InputError(printable(os.fspath(root)), "not a directory (a cincinnati-graph-data checkout)")
    version = _read_version(root)
    channels = tuple(_channel(p, _display(root, p)) for p in _files(root, CHANNELS_DIR))
    blocked = tuple(_blocked_edge(p, _display(root, p)) for p in _files(root, BLOCKED_EDGES_DIR))
    return GraphData(version, channels, blocked, _raw(root))
