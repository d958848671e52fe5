"""Synthetic k× copies of a payload: each copy renames its files' components and its objects."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from cvo.payload.graph import RUNLEVEL_PATTERN
from cvo.payload.yamlorjson import load_documents

MARK = "-cvobenchcopy"
GROUP_MARK = "cvobenchgroup"


def _template(data: bytes) -> bytes:
    """The file with every object's name marked, written back in its own format (YAML or JSON)."""
    docs = [d for d in load_documents(data) if isinstance(d, dict)]
    for doc in docs:
        meta = doc.get("metadata")
        spec = doc.get("spec")
        if doc.get("kind") == "CustomResourceDefinition" and isinstance(spec, dict) and isinstance(meta, dict):
            # A CRD's name must be <plural>.<group>: a copy defines its kinds in a group of its own.
            spec["group"] = f"{GROUP_MARK}.{spec.get('group', '')}"
            meta["name"] = f"{(spec.get('names') or {}).get('plural', '')}.{spec['group']}"
        elif isinstance(meta, dict) and isinstance(meta.get("name"), str):
            meta["name"] += MARK
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return "\n".join(json.dumps(d, indent=2) for d in docs).encode()
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(docs, Dumper=dumper, sort_keys=False, width=200).encode()


def _renamed(name: str, copy: int) -> str:
    match = RUNLEVEL_PATTERN.match(name)
    if match:
        end = match.end(2)
        return f"{name[:end]}-c{copy}{name[end:]}"
    return f"c{copy}-{name}"


def scaled_corpus(source: Path, factor: int, target: Path) -> Path:
    """``source`` plus ``factor - 1`` renamed copies of its release-manifests, written to ``target``."""
    shutil.copytree(source / "manifests", target / "manifests")
    out = target / "release-manifests"
    shutil.copytree(source / "release-manifests", out)
    for path in sorted((source / "release-manifests").iterdir()):
        if path.suffix not in (".yaml", ".yml", ".json"):
            continue
        template = _template(path.read_bytes())
        for copy in range(1, factor):
            text = template.replace(MARK.encode(), f"-c{copy}".encode()).replace(GROUP_MARK.encode(), f"c{copy}".encode())
            (out / _renamed(path.name, copy)).write_bytes(text)
    return target


def derived_release(source: Path, old: str, new: str, target: Path) -> Path:
    """A copy of ``source`` whose version strings say ``new``: the next release to upgrade to."""
    for directory in ("manifests", "release-manifests"):
        out = target / directory
        out.mkdir(parents=True, exist_ok=True)
        src_dir = source / directory
        if not src_dir.is_dir():
            continue
        for path in src_dir.iterdir():
            if path.is_file():
                (out / path.name).write_bytes(path.read_bytes().replace(old.encode(), new.encode()))
    return target
