"""The input: the corpus as both cvo and kubectl can apply it, and the derived release to upgrade to."""

from __future__ import annotations

import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.kube.settings import CORPUS


@dataclass
class Prepared:
    directory: Path
    version: str
    documents: int
    files: int
    dropped_unserved: Counter[str]  # "apiVersion Kind" -> documents the plain API server cannot serve
    dropped_load: int  # documents cvo's own load filters exclude (other profiles, feature sets)
    dropped_delete: int  # documents cvo deletes rather than applies (release.openshift.io/delete)
    cluster_operators: int
    prepare_seconds: float
    needed_crds: frozenset[str] = frozenset()  # the payload's CRDs whose kinds it applies objects of


def crd_kinds(manifests: list[Any]) -> dict[tuple[str, str], str]:
    """(apiVersion, kind) the payload's own CustomResourceDefinitions serve -> the CRD's name."""
    served: dict[tuple[str, str], str] = {}
    for m in manifests:
        if m.kind != "CustomResourceDefinition" or m.group != "apiextensions.k8s.io":
            continue
        spec = m.obj.get("spec") or {}
        kind = (spec.get("names") or {}).get("kind")
        for version in spec.get("versions") or []:
            if version.get("served", True) and kind:
                served.setdefault((f"{spec.get('group')}/{version.get('name')}", kind), m.name)
    return served


def _no_template(data: bytes) -> bytes:
    """Rendered JSON that the loader will not render again: ``{{`` (only ever inside strings in compact
    JSON) written as ``\\u007b{``, which every JSON decoder reads back as the same ``{{``."""
    while b"{{" in data:
        data = data.replace(b"{{", b"\\u007b{")
    return data


def prepare(target: Path, builtin: set[tuple[str, str]]) -> Prepared:
    """The corpus as both tools get it: cvo's load filters applied, unservable kinds dropped, JSON files."""
    from cvo.payload.loader import IMAGE_REFERENCES_FILE, METADATA_FILE, RELEASE_MANIFEST_DIR, load_release
    from cvo.payload.manifest import DELETE_ANNOTATION

    started = time.perf_counter()
    release = load_release(CORPUS, use_cache=False)
    by_crd = crd_kinds(release.manifests)
    servable = builtin | set(by_crd)
    unserved: Counter[str] = Counter()
    deleted = 0
    by_file: dict[str, list[bytes]] = {}
    order: list[str] = []
    operators = 0
    for m in release.manifests:
        if m.path not in by_file:
            by_file[m.path] = []
            order.append(m.path)
        if (m.api_version, m.kind) not in servable:
            unserved[f"{m.api_version} {m.kind}"] += 1
            continue
        if m.annotations.get(DELETE_ANNOTATION) == "true":
            deleted += 1
            continue
        if m.kind == "ClusterOperator" and m.group == "config.openshift.io":
            operators += 1
        by_file[m.path].append(m.raw)
    for directory in ("manifests", RELEASE_MANIFEST_DIR):
        (target / directory).mkdir(parents=True, exist_ok=True)
    for name in (METADATA_FILE, IMAGE_REFERENCES_FILE):
        shutil.copyfile(CORPUS / RELEASE_MANIFEST_DIR / name, target / RELEASE_MANIFEST_DIR / name)
    files = 0
    for path in order:
        docs = by_file[path]
        if not docs:
            continue
        data = b"\n".join(docs) + b"\n"
        if path.startswith("manifests/"):
            data = _no_template(data)
        (target / path).write_bytes(data)
        files += 1
    documents = sum(len(d) for d in by_file.values())
    # What cvo will read back must be exactly what was kept, in the same order, from the same file names.
    import orjson

    again = load_release(target, use_cache=False)
    kept = [(m.path, orjson.loads(m.raw)) for m in release.manifests
            if (m.api_version, m.kind) in servable and m.annotations.get(DELETE_ANNOTATION) != "true"]
    if [(m.path, orjson.loads(m.raw)) for m in again.manifests] != kept or again.excluded:
        raise SystemExit("bench kube: the prepared release does not load back as the kept documents")
    needed = frozenset(by_crd[(m.api_version, m.kind)] for m in again.manifests if (m.api_version, m.kind) in by_crd)
    return Prepared(target, release.version, documents, files, unserved, len(release.excluded), deleted, operators,
                    time.perf_counter() - started, needed)


def next_release(prepared: Path, old: str, target: Path) -> tuple[Path, str]:
    """The upgrade target: ``derived_release`` with the next patch version, and every image renamed so
    that each operator with Deployments rolls out only when cvo applies its new Deployment."""
    from bench.scale import derived_release

    match = re.match(r"^(\d+)\.(\d+)\.(\d+)(.*)$", old)
    if not match:
        raise SystemExit(f"bench kube: cannot derive a next version from {old!r}")
    major, minor, patch, rest = match.groups()
    new = f"{major}.{minor}.{int(patch) + 1}{rest}"
    derived_release(prepared, old, new, target)
    for path in (target / "release-manifests").iterdir():
        data = path.read_bytes()
        renamed = data.replace(b"/ocp-v4.0-art-dev@", b"/ocp-v4.0-art-dev-next@")
        if renamed != data:
            path.write_bytes(renamed)
    return target, new
