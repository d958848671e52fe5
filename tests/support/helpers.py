"""Helpers the tests share: manifest documents, release directories built on the fly, the repository's paths, and
an embedded store read with plain sqlite3.  Fixtures are in the conftest.py files."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "ocp-5.0-nightly"
PAYLOADS = REPO / "payloads"

HA = {"include.release.openshift.io/self-managed-high-availability": "true"}


def obj(kind: str, name: str, namespace: str | None = None, api: str = "v1", annotations: dict | None = None,
        **extra: object) -> dict:
    """A manifest document; included in the default profile unless ``annotations`` says otherwise."""
    meta: dict = {"name": name, "annotations": dict(HA if annotations is None else annotations)}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api, "kind": kind, "metadata": meta, **extra}


def cluster_operator(name: str, version: str, **versions: str) -> dict:
    entries = [{"name": "operator", "version": version}] + [{"name": k, "version": v} for k, v in versions.items()]
    return obj("ClusterOperator", name, api="config.openshift.io/v1", spec={}, status={"versions": entries})


def write_docs(path: Path, *docs: dict | None) -> None:
    path.write_text("\n---\n".join(yaml.safe_dump(d) if d is not None else "" for d in docs))


ReleaseFactory = Callable[..., Path]


def release_factory(tmp_path: Path) -> ReleaseFactory:
    """:func:`make_release` outside a fixture (hypothesis tests make a directory per example)."""

    def build(files: dict[str, object], version: str = "4.16.0", cvo_files: dict[str, object] | None = None,
              previous: list[str] | None = None, images: dict[str, str] | None = None,
              name: str = "release") -> Path:
        root = tmp_path / name
        rel = root / "release-manifests"
        rel.mkdir(parents=True)
        (rel / "release-metadata").write_text(json.dumps(
            {"kind": "cincinnati-metadata-v0", "version": version, "previous": previous or []}))
        tags = [{"name": k, "from": {"kind": "DockerImage", "name": v}} for k, v in (images or {}).items()]
        (rel / "image-references").write_text(json.dumps(
            {"kind": "ImageStream", "apiVersion": "image.openshift.io/v1", "metadata": {"name": version},
             "spec": {"tags": tags}}))
        for directory, content in ((rel, files), (root / "manifests", cvo_files or {})):
            directory.mkdir(exist_ok=True)
            for fname, value in content.items():
                target = directory / fname
                if isinstance(value, bytes):
                    target.write_bytes(value)
                elif isinstance(value, str):
                    target.write_text(value)
                elif isinstance(value, list):
                    write_docs(target, *value)
                else:
                    write_docs(target, value)  # type: ignore[arg-type]
        return root

    return build


def state_objects(path: Path) -> list[dict]:
    """Every live object in an embedded cluster's store, read with plain sqlite3 (not through cvo)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT data FROM objects WHERE data IS NOT NULL ORDER BY grp, kind, namespace, name")
        return [json.loads(data) for (data,) in rows]
    finally:
        conn.close()


def state_kind(path: Path, kind: str) -> list[dict]:
    return [o for o in state_objects(path) if o["kind"] == kind]


def state_resource_version(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT resource_version FROM meta").fetchone()[0])
    finally:
        conn.close()
