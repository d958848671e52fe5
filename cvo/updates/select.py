"""What a graph offers the cluster's version: pkg/cincinnati/cincinnati.go ``GetUpdates`` after the
download, and ``ParseMetadata``.

* The current version is the first node equal to it (semver equality: build metadata aside); none is
  ``VersionNotFound``.  Moving a single-architecture cluster to ``Multi``: the only update is the
  current version's multi-architecture release.
* Updates are the destinations of the edges from the current node, conditional updates the ``to`` of the
  conditional edges whose ``from`` is the current version; an update that is both is conditional.
* Each risk's matching rules are pruned by the registry (``PruneInvalid``); a risk left without rules
  drops its conditional update; a target named by two conditional entries is dropped altogether.
* A node whose metadata ``ParseMetadata`` refuses is ``ResponseInvalid``.  An edge to a node that does
  not exist is ``ResponseInvalid`` too: there the CVO's Go code indexes past the nodes and panics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from cvo.log import get_logger
from cvo.payload.gostrings import go_quote
from cvo.payload.semver import SemverError, Version
from cvo.updates.errors import UpdateError
from cvo.updates.graph import Graph, Node, go_value
from cvo.updates.model import ConditionalUpdate, Release
from cvo.updates.rules import ConditionRegistry

log = get_logger("cvo.updates")

MULTI = "Multi"  # configv1.ClusterVersionArchitectureMulti
CHANNELS = "io.openshift.upgrades.graph.release.channels"
ARCHITECTURE = "release.openshift.io/architecture"


@dataclass(frozen=True)
class Selection:
    current: Release
    updates: tuple[Release, ...] = ()
    conditional: tuple[ConditionalUpdate, ...] = ()


class MetadataInvalid(ValueError):
    """What ``ParseMetadata`` found wrong (its joined errors, one per line)."""


def parse_metadata(metadata: Mapping[str, Any]) -> tuple[str, str, tuple[str, ...], str]:
    """``ParseMetadata``: (url, architecture, channels, errors joined by newlines or "")."""
    url, arch = "", ""
    channels: tuple[str, ...] = ()
    errs: list[str] = []
    if "url" in metadata:
        value = metadata["url"]
        if isinstance(value, str):
            if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
                errs.append(f"invalid release URL: parse {go_quote(value)}: net/url: invalid control character in URL")
            else:
                url = value
        else:
            errs.append(f"URL is not a string: {go_value(value)}")
    if ARCHITECTURE in metadata:
        value = metadata[ARCHITECTURE]
        if isinstance(value, str):
            if value == "multi":
                arch = MULTI
            else:
                errs.append(f"unrecognized {ARCHITECTURE} value {go_quote(value)}")
        else:
            errs.append(f"{ARCHITECTURE} is not a string: {go_value(value)}")
    if CHANNELS in metadata:
        value = metadata[CHANNELS]
        if isinstance(value, str):
            if not value:
                errs.append(f"{CHANNELS} is an empty string")
            else:
                parts = value.split(",")
                for i in range(len(parts) - 1, -1, -1):
                    if not parts[i]:
                        errs.append(f"{CHANNELS} entry {i} is an empty string: {go_quote(value)}")
                        del parts[i]
                if not parts:
                    errs.append(f"no non-empty channels in {CHANNELS} []")
                else:
                    channels = tuple(sorted(parts))
        else:
            errs.append(f"{CHANNELS} is not a string: {go_value(value)}")
    return url, arch, channels, "\n".join(errs)


def release_of(node: Node) -> tuple[Release, str]:
    """``convertRetrievedUpdateToRelease``: the node as a Release, and ParseMetadata's errors ("" if none)."""
    url, arch, channels, errors = parse_metadata(node.metadata)
    return Release(node.version, node.payload, url, channels, arch), errors


def _release(node: Node, what: str) -> Release:
    release, errors = release_of(node)
    if errors:
        raise UpdateError("ResponseInvalid", f"invalid {what} node: {errors}")
    return release


def _parsed(node: Node) -> Version | None:
    try:
        return Version.parse(node.version)
    except SemverError:
        return None  # parse_graph refuses such nodes; a Graph built in code may still hold one


def select_updates(graph: Graph, version: str, arch: str, registry: ConditionRegistry, *,
                   current_arch: str | None = None, channel: str = "") -> Selection:
    """``GetUpdates``' rules over a downloaded graph for the cluster at ``version`` (a valid semantic
    version); ``arch`` is the desired architecture, ``current_arch`` the running one (default: ``arch``),
    ``channel`` only names the channel in ``VersionNotFound``."""
    current_version = Version.parse(version)
    current_arch = arch if current_arch is None else current_arch
    current_idx = -1
    for i, node in enumerate(graph.nodes):
        if _parsed(node) == current_version:
            current_idx = i
            current = _release(node, "current")
            if arch == MULTI and current_arch != arch:
                return Selection(current, (current,), ())
            break
    if current_idx < 0:
        raise UpdateError("VersionNotFound", f"currently reconciling cluster version {current_version} not "
                                             f"found in the {go_quote(channel)} channel")

    updates: list[Release] = []
    for origin, destination in graph.edges:
        if origin != current_idx:
            continue
        if not 0 <= destination < len(graph.nodes):
            raise UpdateError("ResponseInvalid", f"invalid recommended update node: edge [{origin},{destination}] "
                                                 f"points to no node (the graph has {len(graph.nodes)})")
        updates.append(_release(graph.nodes[destination], "recommended update"))

    conditional: list[ConditionalUpdate] = []
    current_text = str(current_version)
    by_version: dict[str, Node] = {}
    for node in reversed(graph.nodes):
        by_version[node.version] = node  # the first node of a version wins, as the CVO's loop finds it
    for entry in graph.conditional_edges:
        for origin_text, to in entry.edges:
            if origin_text != current_text:
                continue
            target = by_version.get(to)
            if target is None:
                raise UpdateError("ResponseInvalid", f"no node for conditional update {to}")
            conditional.append(ConditionalUpdate(_release(target, "conditional update"), entry.risks))

    conditional_images = {c.release.image for c in conditional}
    kept_updates = []
    for update in updates:
        if update.image in conditional_images:
            log.warning(f"Update to {update.version} listed as both a conditional and unconditional update; "
                        "preferring the conditional update.")
        else:
            kept_updates.append(update)

    pruned: list[ConditionalUpdate] = []
    for candidate in conditional:
        risks = []
        for risk in candidate.risks:
            rules, why = registry.prune_invalid(risk.matching_rules)
            if not rules:
                log.warning(f"Conditional update to {candidate.release.version}, risk {go_quote(risk.name)}, has empty "
                            "pruned matchingRules; dropping this target to avoid rejections when pushing to the "
                            f"Kubernetes API server. Pruning results: {why or '<nil>'}")
                break
            if why:
                log.warning(f"Conditional update to {candidate.release.version}, risk {go_quote(risk.name)}, has pruned "
                            "matchingRules (although other valid, recognized matchingRules were given, and are "
                            f"sufficient to keep the conditional update): {why}")
            risks.append(replace(risk, matching_rules=tuple(rules)))
        else:
            pruned.append(replace(candidate, risks=tuple(risks)))

    targets = Counter(c.release.image for c in pruned)
    for image, count in targets.items():
        if count > 1:
            version_of = next(c.release.version for c in pruned if c.release.image == image)
            log.warning(f"Upstream declares {count} conditional updates to {version_of}; dropping them all.")
    return Selection(current, tuple(kept_updates), tuple(c for c in pruned if targets[c.release.image] == 1))
