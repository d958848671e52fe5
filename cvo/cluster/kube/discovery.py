"""Which kinds the API server serves, and where: a cached discovery that refreshes on a miss.

One aggregated-discovery request each for ``/api`` and ``/apis`` (``apidiscovery.k8s.io/v2``, GA
since Kubernetes 1.30) fills the cache; an older server gets the legacy walk (one request per
group-version).  A kind that is not in the cache is looked up once more before the answer is
"not served": a CustomResourceDefinition the payload just created is served as soon as it is
Established, and the next manifest of its kind must apply.  The miss costs one request for that
group-version (``/apis/<group>/<version>``), and a negative answer is remembered for
``negative_ttl`` seconds so that fifty manifests of an unserved kind do not make fifty requests.
:meth:`Discovery.forget_misses` drops the negative answers of a group at once (cvo calls it when it
writes a CRD or sees one Established).

All methods that may fetch block; :class:`cvo.cluster.kube.cluster.KubeCluster` calls them in threads.
The ``lookup*`` methods only read the cache and never block, so a hit costs no thread hop.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

# fetch(path, accept) -> the decoded JSON body, or None for a 404.
Fetch = Callable[[str, str], Any]


@dataclass(frozen=True, slots=True)
class Resource:
    """One served kind: its REST resource name (plural), scope, and whether it has a status subresource."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    status: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """``/api/v1/namespaces/ns/configmaps/name`` and the like; ``namespace`` is ignored when cluster-scoped."""
        parts = [f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes' version order, highest first when sorted ascending: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > foo."""
    m = _VERSION.match(version)
    if not m:
        return (0, 0, 0, version)
    stability = {None: 3, "beta": 2, "alpha": 1}[m.group(2)]
    return (-stability, -int(m.group(1)), -int(m.group(3) or 0), version)


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


class Discovery:
    def __init__(self, fetch: Fetch, *, negative_ttl: float = 0.5, refresh_interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self.negative_ttl = negative_ttl
        self.refresh_interval = refresh_interval  # at most one full refresh per interval (group-kind misses)
        self._clock = clock
        self._lock = threading.Lock()  # serialises fetches; readers never take it
        # Replaced wholesale (copy on write), so readers in other threads always see a consistent map.
        self._gvk: dict[tuple[str, str, str], Resource] = {}
        self._versions: dict[str, tuple[str, ...]] = {}  # group -> served versions, preferred first
        self._loaded = False
        self._misses: dict[tuple[str, str], float] = {}  # (group, version) -> when a fetch found the kind missing
        self._full_at: float | None = None
        self.fetches = 0

    # ----------------------------------------------------------------------------- cache only

    def lookup(self, api_version: str, kind: str) -> Resource | None:
        group, version = split_api_version(api_version)
        return self._gvk.get((group, version, kind))

    def lookup_group_kind(self, group: str, kind: str) -> Resource | None:
        """The kind in the group's most preferred version that serves it."""
        for version in self._versions.get(group, ()):
            res = self._gvk.get((group, version, kind))
            if res is not None:
                return res
        return None

    @property
    def loaded(self) -> bool:
        return self._loaded

    def forget_misses(self, group: str) -> None:
        """Negative answers for ``group`` are stale (a CRD of that group changed): the next miss fetches."""
        for key in [k for k in list(self._misses) if k[0] == group]:  # list(): atomic under the GIL
            self._misses.pop(key, None)
        self._full_at = None

    def register(self, resources: Iterable[Resource]) -> None:
        """Add what a CRD just Established serves, before discovery documents catch up (they lag a little).

        Never blocks (it runs on the event loop): no lock, one atomic swap of each map.  A refresh
        finishing at the same moment may drop the addition; the next miss then looks again.
        """
        gvk = dict(self._gvk)
        versions = dict(self._versions)
        for res in resources:
            gvk[(res.group, res.version, res.kind)] = res
            served = set(versions.get(res.group, ())) | {res.version}
            versions[res.group] = tuple(sorted(served, key=version_priority))
            self._misses.pop((res.group, res.version), None)
        self._gvk, self._versions = gvk, versions

    def forget(self, group: str, kind: str) -> None:
        """Drop a kind (its CRD was deleted); the next look-up asks the server.  Never blocks."""
        self._gvk = {k: v for k, v in self._gvk.items() if (k[0], k[2]) != (group, kind)}
        self.forget_misses(group)

    # ------------------------------------------------------------------------------ may fetch

    def resolve(self, api_version: str, kind: str) -> Resource | None:
        """The resource for ``kind`` in exactly ``api_version``, or ``None`` when the server does not serve it."""
        self.ensure_loaded()
        res = self.lookup(api_version, kind)
        if res is not None:
            return res
        group, version = split_api_version(api_version)
        with self._lock:
            res = self.lookup(api_version, kind)  # another thread may have just refreshed it
            if res is not None:
                return res
            missed = self._misses.get((group, version))
            if missed is not None and self._clock() - missed < self.negative_ttl:
                return None
            self._refresh_group_version(group, version)
            res = self.lookup(api_version, kind)
            if res is None:
                self._misses[(group, version)] = self._clock()
            return res

    def resolve_group_kind(self, group: str, kind: str) -> Resource | None:
        """Like :meth:`lookup_group_kind`, refreshing everything (at most once per interval) on a miss."""
        self.ensure_loaded()
        res = self.lookup_group_kind(group, kind)
        if res is not None:
            return res
        with self._lock:
            res = self.lookup_group_kind(group, kind)
            if res is None and (self._full_at is None or self._clock() - self._full_at >= self.refresh_interval):
                self._load_all()
                res = self.lookup_group_kind(group, kind)
            return res

    def ensure_loaded(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if not self._loaded:
                self._load_all()

    def refresh(self) -> None:
        """Forget everything and load it again."""
        with self._lock:
            self._misses.clear()
            self._load_all()

    # -------------------------------------------------------------------------------- loading

    def _get(self, path: str, accept: str = "application/json") -> Any:
        self.fetches += 1
        return self._fetch(path, accept)

    def _load_all(self) -> None:
        gvk: dict[tuple[str, str, str], Resource] = {}
        versions: dict[str, tuple[str, ...]] = {}
        for root in ("/api", "/apis"):
            doc = self._get(root, AGGREGATED) or {}
            if doc.get("kind") == "APIGroupDiscoveryList":
                _parse_aggregated(doc, gvk, versions)
            else:
                self._load_legacy(root, doc, gvk, versions)
        self._gvk, self._versions = gvk, versions
        self._misses.clear()
        self._loaded = True
        self._full_at = self._clock()

    def _load_legacy(self, root: str, doc: Mapping[str, Any], gvk: dict[tuple[str, str, str], Resource],
                     versions: dict[str, tuple[str, ...]]) -> None:
        """``APIVersions`` (``/api``) or ``APIGroupList`` (``/apis``), then every group-version's resources."""
        if root == "/api":
            groups = [("", list(doc.get("versions") or []))]
        else:
            groups = []
            for g in doc.get("groups") or []:
                preferred = (g.get("preferredVersion") or {}).get("version")
                names = [v.get("version") for v in g.get("versions") or [] if v.get("version")]
                names.sort(key=lambda v: (v != preferred, version_priority(v)))
                groups.append((g.get("name", ""), names))
        for group, names in groups:
            served = []
            for version in names:
                path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
                resources = self._get(path)
                if resources is not None:
                    gvk.update(_parse_resource_list(group, version, resources))
                    served.append(version)
            if served:
                versions[group] = tuple(served)

    def _refresh_group_version(self, group: str, version: str) -> None:
        path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        doc = self._get(path)
        fresh = _parse_resource_list(group, version, doc) if doc is not None else {}
        gvk = {k: v for k, v in self._gvk.items() if (k[0], k[1]) != (group, version)}
        gvk.update(fresh)
        versions = dict(self._versions)
        served = [v for v in versions.get(group, ()) if v != version]
        if fresh:
            served.append(version)
            served.sort(key=version_priority)
        if served:
            versions[group] = tuple(served)
        else:
            versions.pop(group, None)
        self._gvk, self._versions = gvk, versions


def _parse_aggregated(doc: Mapping[str, Any], gvk: dict[tuple[str, str, str], Resource],
                      versions: dict[str, tuple[str, ...]]) -> None:
    for item in doc.get("items") or []:
        group = (item.get("metadata") or {}).get("name") or ""
        served = []
        for v in item.get("versions") or []:
            version = v.get("version") or ""
            for r in v.get("resources") or []:
                kind = (r.get("responseKind") or {}).get("kind")
                plural = r.get("resource")
                if not kind or not plural:
                    continue
                status = any(s.get("subresource") == "status" for s in r.get("subresources") or [])
                gvk.setdefault((group, version, kind),
                               Resource(group, version, kind, plural, r.get("scope") == "Namespaced", status))
            served.append(version)
        if served:
            versions[group] = tuple(served)


def _parse_resource_list(group: str, version: str, doc: Mapping[str, Any]) -> dict[tuple[str, str, str], Resource]:
    """An ``APIResourceList``: main resources, and which of them have a ``<plural>/status`` subresource."""
    resources: Iterable[Mapping[str, Any]] = doc.get("resources") or []
    names = {r.get("name", "") for r in resources}
    out: dict[tuple[str, str, str], Resource] = {}
    for r in resources:
        name, kind = r.get("name", ""), r.get("kind", "")
        if not name or not kind or "/" in name:
            continue
        out.setdefault((group, version, kind),
                       Resource(group, version, kind, name, bool(r.get("namespaced")), f"{name}/status" in names))
    return out
