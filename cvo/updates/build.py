"""Building an update graph from releases, as Cincinnati's graph builder does (openshift/cincinnati):

1. one node per release, its version with the architecture as SemVer build metadata (``4.16.3+amd64``),
   its metadata the release-metadata's plus ``…release.arch`` and, for an image, ``…release.manifestref``
   (``release_scrape_dockerv2/registry/mod.rs``); edges from ``previous`` and ``next`` to releases of the
   same architecture that are in the graph (``graph_builder/release.rs`` ``create_graph``; the others are
   pruned);
2. the graph data (:mod:`cvo.updates.graph_data`), in the secondary-metadata parser's order
   (``openshift_secondary_metadata_parser/plugin.rs`` ``run_internal``): raw metadata, blocked edges and
   conditional edges as ``…previous.remove_regex`` on their targets, channels appended to
   ``…release.channels`` and sorted as the plugin sorts them;
3. ``edge_add_remove.rs``: ``previous.add``/``next.add``, then the conditional edges (every existing edge
   into a target whose source matches ``from``, grouped by identical risk lists), then the removals.

The result is the graph builder's graph: every architecture and channel.  The update service's filters
(:func:`cvo.updates.serve.filter_graph`) turn it into what a cluster is answered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from cvo.payload import semver
from cvo.payload.limits import InputError
from cvo.payload.release import parse_release_metadata
from cvo.updates.graph import ConditionalEdges, Graph, Node
from cvo.updates.graph_data import GraphData
from cvo.updates.model import Risk

PREFIX = "io.openshift.upgrades.graph"
ARCH_KEY = f"{PREFIX}.release.arch"
CHANNELS_KEY = f"{PREFIX}.release.channels"
MANIFESTREF_KEY = f"{PREFIX}.release.manifestref"
REMOVE_REGEX_KEY = f"{PREFIX}.previous.remove_regex"
MULTI = "multi"


@dataclass(frozen=True)
class ReleaseInfo:
    """One release as the graph builder scrapes it."""

    version: str  # release-metadata's, without the architecture
    payload: str  # the pull spec by digest (a directory: file://DIR)
    architecture: str  # GOARCH, or "multi" for a manifest list
    previous: tuple[str, ...] = ()
    next: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    manifestref: str = ""  # the image's digest


def read_release_info(data: bytes, path: str, payload: str, architecture: str, manifestref: str = "") -> ReleaseInfo:
    """A release from its ``release-metadata`` bytes (validated with the CVO's rules); ``architecture`` is
    replaced by ``multi`` when the metadata says ``release.openshift.io/architecture: multi``."""
    meta = parse_release_metadata(data, path)
    raw = orjson.loads(data).get("metadata")
    strings = {k: v for k, v in raw.items() if isinstance(v, str)} if isinstance(raw, dict) else {}
    arch = MULTI if meta.architecture == "Multi" else architecture
    return ReleaseInfo(meta.version, payload, arch, meta.previous, meta.next, strings, manifestref)


def _with_build(version: semver.Version, build: tuple[str, ...]) -> semver.Version:
    return replace(version, build=build)


def _sorted_channels(channels: Iterable[str]) -> str:
    """The plugin's order: sorted, then (stably) by what follows the first ``-`` (``stable-4.16`` sorts by
    ``4.16``).  Duplicates are dropped (the plugin would repeat a channel the release metadata names too)."""
    names = sorted(set(c for c in channels if c))
    names.sort(key=lambda c: c.split("-", 1)[1] if "-" in c else "")
    return ",".join(names)


class _Builder:
    def __init__(self, releases: Sequence[ReleaseInfo]) -> None:
        infos: dict[str, ReleaseInfo] = {}
        for info in releases:
            try:
                version = semver.parse(info.version)
            except semver.SemverError as err:
                raise InputError(info.payload, f"version {info.version!r} is not a semantic version: {err}") from None
            key = str(_with_build(version, (info.architecture,)))
            if key in infos and infos[key].payload != info.payload:
                raise InputError(info.payload, f"release {key} is given twice ({infos[key].payload} and "
                                               f"{info.payload})")
            infos[key] = info
        order = sorted(infos, key=lambda k: (semver.parse(k), semver.parse(k).build))
        self.infos = [infos[k] for k in order]
        self.versions = [semver.parse(k) for k in order]
        self.names = order
        self.index = {k: i for i, k in enumerate(order)}
        self.metadata: list[dict[str, str]] = []
        for info in self.infos:
            meta = dict(info.metadata)
            meta[ARCH_KEY] = info.architecture
            if info.manifestref:
                meta[MANIFESTREF_KEY] = info.manifestref
            self.metadata.append(meta)
        self.edges: dict[tuple[int, int], None] = {}  # ordered set
        self.conditional: list[tuple[str, str, Risk]] = []  # (to, from regex, risk)
        for i, info in enumerate(self.infos):
            build = self.versions[i].build
            for text in info.previous:
                j = self.index.get(str(_with_build(semver.parse(text), build)))
                if j is not None:
                    self.edges[(j, i)] = None
            for text in info.next:
                j = self.index.get(str(_with_build(semver.parse(text), build)))
                if j is not None:
                    self.edges[(i, j)] = None

    def architectures(self) -> list[tuple[str, ...]]:
        return sorted({v.build for v in self.versions})

    def find(self, version: semver.Version) -> int | None:
        return self.index.get(str(version))

    def apply_raw(self, raw: Mapping[str, Mapping[str, str]]) -> None:
        for text, entries in raw.items():
            version = semver.parse(text)
            for i, v in enumerate(self.versions):
                if v == version:  # equal ignoring the build, as Rust's semver compares
                    for key, value in entries.items():
                        old = self.metadata[i].get(key)
                        self.metadata[i][key] = value if old is None else f"{old},{value}"

    def _add_remove_regex(self, i: int, regex: str) -> None:
        old = self.metadata[i].get(REMOVE_REGEX_KEY)
        # the plugin overwrites a blocked edge's regex and appends a conditional one's; cvo appends both, so that
        # two files for one target do not depend on the order the directory lists them in
        self.metadata[i][REMOVE_REGEX_KEY] = regex if old is None or old == regex else f"{old}|{regex}"

    def apply_blocked(self, data: GraphData) -> None:
        archs = self.architectures()
        for blocked in data.blocked:
            if blocked.risk is not None:
                continue
            to = blocked.to
            if to.build:
                targets = [to]
            elif to.pre == ("s390x",):  # the plugin's special case: s390x once written with '-'
                targets = [_with_build(to, ("s390x",))]
            else:
                targets = [_with_build(to, a) for a in archs]
            for target in targets:
                i = self.find(target)
                if i is not None:
                    self._add_remove_regex(i, blocked.from_regex)
        for blocked in data.blocked:
            if blocked.risk is None:
                continue
            self.conditional.append((str(blocked.to), blocked.from_regex, blocked.risk))
            for a in archs:
                i = self.find(_with_build(blocked.to, a))
                if i is not None:
                    self._add_remove_regex(i, blocked.from_regex)

    def apply_channels(self, data: GraphData) -> None:
        added: list[list[str]] = [[] for _ in self.infos]
        by_core: dict[tuple[object, ...], list[int]] = {}
        for i, v in enumerate(self.versions):
            by_core.setdefault((v.major, v.minor, v.patch, v.pre), []).append(i)
        for channel in data.channels:
            for i in sorted({i for c in channel.versions for i in by_core.get((c.major, c.minor, c.patch, c.pre), ())
                             if not c.build or c.build == self.versions[i].build}):
                added[i].append(channel.name)
        for i, names in enumerate(added):
            old = self.metadata[i].get(CHANNELS_KEY)
            if names or old is not None:
                self.metadata[i][CHANNELS_KEY] = _sorted_channels([*(old or "").split(","), *names])

    def _annotated(self, text: str, reference: int) -> int | None:
        """``try_annotate_semver_build``: ``text`` with the reference release's architecture."""
        try:
            version = semver.parse(text.strip())
        except semver.SemverError as err:
            raise InputError(self.infos[reference].payload, f"metadata names {text.strip()!r}, which is not a "
                                                            f"semantic version: {err}") from None
        return self.find(_with_build(version, (self.infos[reference].architecture,)))

    def _csv(self, key: str) -> list[tuple[int, list[str]]]:
        return [(i, m[key].split(",")) for i, m in enumerate(self.metadata) if key in m]

    def add_edges(self) -> None:
        for to, froms in self._csv(f"{PREFIX}.previous.add"):
            for text in froms:
                j = self._annotated(text, to)
                if j is not None:
                    self.edges[(j, to)] = None
        for source, tos in self._csv(f"{PREFIX}.next.add"):
            for text in tos:
                j = self._annotated(text, source)
                if j is not None:
                    self.edges[(source, j)] = None

    def conditional_edges(self) -> tuple[ConditionalEdges, ...]:
        parents: dict[int, list[int]] = {}
        for a, b in self.edges:
            parents.setdefault(b, []).append(a)
        edge_risks: dict[tuple[int, int], list[Risk]] = {}
        for to_text, regex, risk in self.conditional:
            pattern = re.compile(regex)
            for i, name in enumerate(self.names):
                if name != to_text and name.split("+")[0] != to_text:
                    continue
                for j in parents.get(i, []):
                    if regex == ".*" or pattern.search(self.names[j]):
                        edge_risks.setdefault((j, i), []).append(risk)
        grouped: dict[tuple[Risk, ...], list[tuple[int, int]]] = {}
        for edge in sorted(edge_risks):
            grouped.setdefault(tuple(edge_risks[edge]), []).append(edge)
        return tuple(ConditionalEdges(tuple((self.names[a], self.names[b]) for a, b in edges), risks)
                     for risks, edges in grouped.items())

    def remove_edges(self) -> None:
        for to, froms in self._csv(f"{PREFIX}.previous.remove"):
            if ",".join(froms).strip() == "*":
                self._drop(lambda a, b, to=to: b == to)
                continue
            for text in froms:
                j = self._annotated(text, to)
                if j is not None:
                    self.edges.pop((j, to), None)
        for to, meta in ((i, m) for i, m in enumerate(self.metadata) if REMOVE_REGEX_KEY in m):
            regex = meta[REMOVE_REGEX_KEY]
            if regex == ".*":
                self._drop(lambda a, b, to=to: b == to)
                continue
            try:
                pattern = re.compile(regex)
            except re.error as err:
                raise InputError(self.infos[to].payload, f"{REMOVE_REGEX_KEY} {regex!r} is not a regular "
                                                         f"expression: {err}") from None
            self._drop(lambda a, b, to=to, pattern=pattern: b == to and pattern.search(self.names[a]) is not None)
        for source, tos in self._csv(f"{PREFIX}.next.remove"):
            for text in tos:
                j = self._annotated(text, source)
                if j is not None:
                    self.edges.pop((source, j), None)

    def _drop(self, doomed: Any) -> None:
        for edge in [e for e in self.edges if doomed(*e)]:
            del self.edges[edge]

    def graph(self, conditional: tuple[ConditionalEdges, ...]) -> Graph:
        nodes = tuple(Node(self.names[i], info.payload, dict(sorted(self.metadata[i].items())))
                      for i, info in enumerate(self.infos))
        return Graph(nodes, tuple(sorted(self.edges)), conditional)


def build_graph(releases: Sequence[ReleaseInfo], data: GraphData | None = None) -> Graph:
    """The graph builder's graph of ``releases`` with ``data`` applied (see the module's docstring).
    :class:`InputError` for two different releases of one version and architecture."""
    builder = _Builder(releases)
    if data is not None:
        builder.apply_raw(data.raw)
        builder.apply_blocked(data)
        builder.apply_channels(data)
    builder.add_edges()
    conditional = builder.conditional_edges()
    builder.remove_edges()
    return builder.graph(conditional)
