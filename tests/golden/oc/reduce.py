"""Reduce one of oc's example files to what `oc adm upgrade status` reads (see README.md):

    .venv/bin/python tests/golden/oc/reduce.py OC_EXAMPLES_DIR NAME-node.yaml > tests/golden/oc/NAME-node.yaml

The kind is told by the file's suffix (-cv, -co, -mcp, -node, -mc); timestamps stay the text they were.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

MC = "machineconfiguration.openshift.io/"


class _Loader(yaml.SafeLoader):
    """YAML without timestamps read as datetimes: a time stays the text the file holds."""


_Loader.yaml_implicit_resolvers = {k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
                                   for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}

WHAT = {
    "cv": "managedFields, spec, capabilities, available and conditional updates and the history's acceptedRisks "
          "dropped",
    "co": "metadata other than the name and the release and capability annotations, relatedObjects, extension, "
          "spec, and the messages of conditions other than Available, Progressing and Degraded dropped",
    "mcp": "metadata other than the name, labels and machineconfiguration annotations, the configuration's "
           "source list, the machine config selector and the conditions' messages dropped",
    "node": "metadata other than the name, labels and machineconfiguration annotations, spec other than "
            "unschedulable, and status other than the Ready, DiskPressure and NetworkUnavailable conditions "
            "(without heartbeats) dropped",
    "mc": "everything but the name and the release-image-version annotation dropped",
}


def _meta(meta: dict[str, Any], labels: bool, keep: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": meta["name"]}
    if labels and meta.get("labels"):
        out["labels"] = meta["labels"]
    notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith(keep)}
    if notes:
        out["annotations"] = notes
    return out


def _conditions(conditions: list[dict[str, Any]], messages: tuple[str, ...]) -> list[dict[str, Any]]:
    keys = ("lastTransitionTime", "message", "reason", "status", "type")
    return [{k: c[k] for k in keys if k in c and (k != "message" or c.get("type") in messages)} for c in conditions]


def reduce(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": obj["apiVersion"], "kind": obj["kind"]}
    status = obj.get("status") or {}
    if kind == "cv":
        meta = obj["metadata"]
        out["metadata"] = {"name": meta["name"]}
        kept = {k: v for k, v in status.items() if k not in ("availableUpdates", "conditionalUpdates", "capabilities")}
        kept["history"] = [{k: v for k, v in h.items() if k != "acceptedRisks"} for h in status.get("history", [])]
        out["status"] = kept
    elif kind == "co":
        out["metadata"] = _meta(obj["metadata"], False, ("include.release.openshift.io/", "exclude.release.openshift.io/",
                                                         "capability.openshift.io/"))
        out["status"] = {"conditions": _conditions(status.get("conditions", []), ("Available", "Progressing", "Degraded")),
                         "versions": status.get("versions", [])}
    elif kind == "mcp":
        out["metadata"] = _meta(obj["metadata"], True, (MC,))
        spec = obj.get("spec") or {}
        out["spec"] = {k: spec[k] for k in ("nodeSelector", "paused", "maxUnavailable") if k in spec}
        out["spec"]["configuration"] = {"name": (spec.get("configuration") or {}).get("name", "")}
        kept = {k: v for k, v in status.items() if k.endswith("Count") or k == "observedGeneration"}
        kept["configuration"] = {"name": (status.get("configuration") or {}).get("name", "")}
        kept["conditions"] = _conditions(status.get("conditions", []), ())
        out["status"] = kept
    elif kind == "node":
        out["metadata"] = _meta(obj["metadata"], True, (MC,))
        if (obj.get("spec") or {}).get("unschedulable"):
            out["spec"] = {"unschedulable": True}
        read = ("Ready", "DiskPressure", "NetworkUnavailable")
        out["status"] = {"conditions": _conditions([c for c in status.get("conditions", []) if c.get("type") in read],
                                                   read)}
    elif kind == "mc":
        out["metadata"] = _meta(obj["metadata"], False, (MC + "release-image-version",))
    return out


def main(directory: str, name: str) -> None:
    kind = name.removesuffix(".yaml").rsplit("-", 1)[1]
    doc = yaml.load((Path(directory) / name).read_text(), Loader=_Loader)  # a SafeLoader without timestamps
    items = doc["items"] if doc.get("kind", "").endswith("List") else None
    words = f"openshift/oc pkg/cli/admin/upgrade/status/examples/{name} (Apache-2.0), reduced to what " \
            f"`oc adm upgrade status` reads: {WHAT[kind]}."
    header = "".join(f"# {line}\n" for line in textwrap.wrap(words, 108))
    if items is not None and kind == "cv":
        items, doc = None, items[0]  # a one-item List unwrapped
    if items is None:
        body = reduce(kind, doc)
    else:
        list_kind = items[0]["kind"] + "List" if items else "List"
        body = {"apiVersion": "v1" if list_kind == "NodeList" else items[0]["apiVersion"] if items else "v1",
                "kind": list_kind, "items": [reduce(kind, o) for o in items]}
    sys.stdout.write(header + yaml.safe_dump(body, sort_keys=False, width=120, allow_unicode=True))


if __name__ == "__main__":
    main(*sys.argv[1:3])
