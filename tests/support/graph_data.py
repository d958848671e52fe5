"""cincinnati-graph-data directories and release lists written for the graph tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from cvo.updates.build import ReleaseInfo


def write_graph_data(root: Path, channels: Mapping[str, Iterable[str]] | None = None,
                     blocked: Mapping[str, Mapping[str, Any]] | None = None, version: str = "1.1.0") -> Path:
    """A graph-data directory: ``channels`` name -> versions, ``blocked`` file stem -> document."""
    (root / "channels").mkdir(parents=True, exist_ok=True)
    (root / "blocked-edges").mkdir(parents=True, exist_ok=True)
    (root / "version").write_text(version + "\n")
    for name, versions in (channels or {}).items():
        (root / "channels" / f"{name}.yaml").write_text(yaml.safe_dump({"name": name, "versions": list(versions)}))
    for stem, doc in (blocked or {}).items():
        (root / "blocked-edges" / f"{stem}.yaml").write_text(yaml.safe_dump(dict(doc)))
    return root


def release(version: str, *previous: str, arch: str = "amd64", channels: str = "", **metadata: str) -> ReleaseInfo:
    meta = dict(metadata)
    if channels:
        meta["io.openshift.upgrades.graph.release.channels"] = channels
    return ReleaseInfo(version, f"quay.io/demo/release@sha256:{version}-{arch}", arch, tuple(previous), (), meta)


def risk_doc(to: str, from_: str, name: str, rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"to": to, "from": from_, "url": f"https://bugs.example.com/{name}", "name": name,
            "message": f"{name} hurts.", "matchingRules": rules or [{"type": "Always"}]}
