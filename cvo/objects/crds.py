"""The schemas of the CRDs in cvo's ``manifests/`` directory, found where a checkout or an installed package has them.

``$CVO_MANIFESTS``; ``cvo/manifests`` inside the package; ``manifests/`` beside the package (a source
checkout, an editable install); ``<prefix>/share/cvo/manifests``, where pyproject's ``data-files`` put
them in a wheel installed into a virtualenv, system-wide, or with ``pip install --user`` (the same
places, in the same order, as ``cvo bootstrap`` looks: ``cvo/runner/bootstrap.py`` ``manifest_dirs``).
Each file is read once per process, with the payload's YAML decoder.
"""

from __future__ import annotations

import functools
import os
import site
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MANIFESTS_ENV = "CVO_MANIFESTS"
MARKER = "0000_00_cvo_01_clusterversions.crd.yaml"  # a file every copy of the directory has


class SchemaMissing(Exception):
    """cvo's CRD files are not where they should be: one line saying where they were looked for."""


def manifest_dirs() -> list[Path]:
    """Where ``manifests/`` is looked for, in order."""
    package = Path(__file__).resolve().parent.parent  # cvo/, from cvo/objects/crds.py
    shared = Path("share") / "cvo" / "manifests"
    candidates = [package / "manifests", package.parent / "manifests", Path(sys.prefix) / shared,
                  Path(site.getuserbase()) / shared]
    if env := os.environ.get(MANIFESTS_ENV):
        candidates.insert(0, Path(env))
    return candidates


def manifests_dir() -> Path:
    for candidate in manifest_dirs():
        if (candidate / MARKER).is_file():
            return candidate
    where = ", ".join(str(c) for c in manifest_dirs())
    raise SchemaMissing(f"cvo's CRD schemas are not installed (looked for manifests/{MARKER} in {where}); "
                        f"set ${MANIFESTS_ENV} to the manifests/ directory of cvo's source")


@functools.cache
def crd_schema(file: str, version: str) -> Mapping[str, Any]:
    """The ``openAPIV3Schema`` of ``version`` of the CRD in ``manifests/file``."""
    from cvo.payload.limits import InputError, read_input
    from cvo.payload.yamlorjson import load_documents
    from cvo.payload.yamlparse import DocumentError

    path = manifests_dir() / file
    try:
        documents = load_documents(read_input(path, str(path)))
    except (InputError, DocumentError, UnicodeDecodeError) as err:
        raise SchemaMissing(f"{path}: cannot read cvo's CRD: {err}") from None
    for doc in documents:
        versions = doc.get("spec", {}).get("versions") if isinstance(doc, dict) else None
        for v in versions if isinstance(versions, list) else []:
            if isinstance(v, dict) and v.get("name") == version:
                schema = (v.get("schema") or {}).get("openAPIV3Schema")
                if isinstance(schema, dict):
                    return schema
    raise SchemaMissing(f"{path}: no version {version} with an openAPIV3Schema")
