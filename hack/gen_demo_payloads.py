#!/usr/bin/env python3
"""Generate the demo release payloads under ``payloads/`` from the templates in ``hack/demo-payloads/``.

Three releases of a small OpenShift-like product are written, each laid out the way the Cluster
Version Operator expects a release directory::

    payloads/demo-<version>/manifests/             CVO's own manifests (Go-templated)
    payloads/demo-<version>/release-manifests/     everything else, plus
        release-metadata                          Cincinnati metadata (JSON)
        image-references                          ImageStream named <version> (JSON)
    payloads/README.md                             what the releases hold, and how they differ

The inputs, in ``hack/demo-payloads/``::

    releases.yaml          the per-release facts: versions, operand versions, channels, which templates
                           and image tags each release ships
    manifests/*.yaml       one template per output file of manifests/
    release-manifests/*.yaml
                           one template per output file of release-manifests/
    README.md.in           the template of payloads/README.md (its tables are computed here)

A template is the output file with ``{{ name }}`` where it differs between releases; ``name`` is a
field of the release in releases.yaml (``version``, ``kube``, ``etcd``, ``coredns``) or
``image.<tag>``, the pullspec of one of the release's image tags. Lines between ``{{ if <flag> }}`` and
``{{ end }}``, each alone on its line, are kept only in the releases whose boolean field ``<flag>`` is
true. An unknown name is an error. Go template actions (``{{.ReleaseImage}}``, ``{{ .ClusterProfile }}``)
and Prometheus alert templates (``{{ $labels.job }}``) start with ``.`` or ``$`` and pass through.

Usage::

    python hack/gen_demo_payloads.py            # rewrite payloads/
    python hack/gen_demo_payloads.py --check    # verify payloads/ is up to date
    python hack/gen_demo_payloads.py --out DIR  # write somewhere else

Python 3.11, stdlib + PyYAML only. Output is fully deterministic (no clocks, no randomness; image
digests are sha256(tag + ":" + version)). Every release written is self-checked (file names, profile
annotations, images listed in image-references, each ClusterOperator after its Deployment).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).resolve().parent / "demo-payloads"
DEFAULT_OUT = REPO_ROOT / "payloads"
SUBDIRS = ("manifests", "release-manifests")
# Written by hand, beside the generated releases: neither rewritten nor checked here.
HAND_WRITTEN = frozenset({"demo-operators.yaml", "demo-operators-nodes.yaml"})
HAND_WRITTEN_DIRS = ("apps-1.0.0/", "apps-1.1.0/")  # the example of ordinary components (docs/workload-status.md)

HA = "include.release.openshift.io/self-managed-high-availability"
SNO = "include.release.openshift.io/single-node-developer"
CAPABILITY = "capability.openshift.io/name"
CREATE_ONLY = "release.openshift.io/create-only"
DELETE = "release.openshift.io/delete"
FEATURE_SET = "release.openshift.io/feature-set"
FEATURE_GATE = "release.openshift.io/feature-gate"

# Same regex the CVO uses (pkg/payload/task_graph.go), used by the self-check and the README.
FILENAME_RE = re.compile(r"^0000_(\d+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_", re.ASCII)
PLACEHOLDER_RE = re.compile(r"\{\{ ([a-z][a-z0-9_]*(?:\.[a-z0-9-]+)?) \}\}")
DIRECTIVE_RE = re.compile(r"^[ \t]*\{\{ (?:if ([a-z][a-z0-9_]*)|(end)) \}\}[ \t]*\n?$")

Files = dict[str, str]  # file name -> content
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# --------------------------------------------------------------------------------------------
# Releases and templates
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    version: str
    fields: dict[str, Any]  # its entry in releases.yaml
    registry: str
    images: dict[str, str]  # the image tags it ships -> source repository

    @property
    def dirname(self) -> str:
        return f"demo-{self.version}"

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    def pullspec(self, tag: str) -> str:
        return f"{self.registry}@sha256:{hashlib.sha256(f'{tag}:{self.version}'.encode()).hexdigest()}"

    def values(self) -> dict[str, object]:
        """What a template may name: the scalar fields, and image.<tag> for each image tag."""
        v: dict[str, object] = {k: x for k, x in self.fields.items() if isinstance(x, str | bool)}
        v.update({f"image.{tag}": self.pullspec(tag) for tag in self.images})
        return v


@dataclass(frozen=True)
class Data:
    templates: Path
    releases: list[Release]
    only_in: dict[str, list[str]]  # template-name pattern -> the releases that ship it
    readme_releases: dict[str, str] = field(default_factory=dict)

    def ships(self, r: Release, name: str) -> bool:
        return next((r.version in vs for pat, vs in self.only_in.items() if fnmatch.fnmatchcase(name, pat)), True)


def load_data(templates: Path = TEMPLATES) -> Data:
    d = yaml.safe_load((templates / "releases.yaml").read_text(encoding="utf-8"))
    versions = [e["version"] for e in d["releases"]]
    lists = [*d["only_in"].values(), *d["images_only_in"].values()]
    if unknown := {v for vs in lists for v in vs} - set(versions) | d["images_only_in"].keys() - d["images"].keys():
        raise SystemExit(f"releases.yaml: unknown releases or image tags {sorted(unknown)}")
    releases = [
        Release(e["version"], e, d["registry"],
                {t: src for t, src in d["images"].items() if e["version"] in d["images_only_in"].get(t, versions)})
        for e in d["releases"]
    ]
    names = [p.name for sub in SUBDIRS for p in (templates / sub).iterdir()]
    if unused := [pat for pat in d["only_in"] if not fnmatch.filter(names, pat)]:
        raise SystemExit(f"releases.yaml: only_in patterns that match no template: {unused}")
    return Data(templates, releases, d["only_in"], d.get("readme_releases", {}))


def render(text: str, values: dict[str, object], where: str) -> str:
    """Fill in a template: keep or drop the {{ if flag }} ... {{ end }} blocks, substitute {{ name }}."""
    kept: list[str] = []
    keep: bool | None = None  # None: outside any {{ if }}
    for line in text.splitlines(keepends=True):
        if m := DIRECTIVE_RE.match(line):
            flag = values.get(m.group(1)) if m.group(1) else None
            if m.group(1) and (keep is not None or not isinstance(flag, bool)):
                raise SystemExit(f"{where}: {{{{ if {m.group(1)} }}}} nested or not a boolean of the release")
            if m.group(2) and keep is None:
                raise SystemExit(f"{where}: {{{{ end }}}} without {{{{ if }}}}")
            keep = flag if m.group(1) else None
        elif keep is not False:
            kept.append(line)
    if keep is not None:
        raise SystemExit(f"{where}: {{{{ if }}}} without {{{{ end }}}}")

    def value(m: re.Match[str]) -> str:
        v = values.get(m.group(1))
        if not isinstance(v, str):
            raise SystemExit(f"{where}: no value for {m.group(0)}")
        return v

    return PLACEHOLDER_RE.sub(value, "".join(kept))


def render_release(data: Data, r: Release) -> dict[str, Files]:
    """The manifests of one release: subdirectory -> file name -> content, in byte-wise name order."""
    values = r.values()
    out: dict[str, Files] = {}
    for sub in SUBDIRS:
        paths = sorted((data.templates / sub).iterdir(), key=lambda p: p.name.encode())
        out[sub] = {p.name: render(p.read_text(encoding="utf-8"), values, f"{sub}/{p.name}")
                    for p in paths if data.ships(r, p.name)}
    return out


def release_metadata(r: Release) -> str:
    doc = {
        "kind": "cincinnati-metadata-v0",
        "version": r.version,
        "previous": list(r.fields["previous"]),
        "metadata": {
            # none given: the update graph's node supplies them (pkg/cvo/cvo.go mergeReleaseMetadata)
            **({"io.openshift.upgrades.graph.release.channels": r.fields["channels"]} if r.fields["channels"] else {}),
            "url": f"https://demo.example.com/releases/{r.version}",
        },
    }
    return json.dumps(doc, indent=2) + "\n"


def image_references(r: Release) -> str:
    tags = [{
        "name": tag,
        "annotations": {
            "io.openshift.build.commit.id": hashlib.sha1(f"{src}:{r.version}".encode()).hexdigest(),
            "io.openshift.build.source-location": f"https://github.com/openshift/{src}",
        },
        "from": {"kind": "DockerImage", "name": r.pullspec(tag)},
        "generation": None,
        "importPolicy": {},
        "referencePolicy": {"type": "Source"},
    } for tag, src in sorted(r.images.items())]
    doc = {
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {
            "name": r.version,
            "annotations": {"release.openshift.io/from-image-stream": f"demo/{r.minor}-art-latest"},
        },
        "spec": {"lookupPolicy": {"local": False}, "tags": tags},
    }
    return json.dumps(doc, indent=2) + "\n"


# --------------------------------------------------------------------------------------------
# Writing + self-check
# --------------------------------------------------------------------------------------------


def write_release(out: Path, r: Release, files: dict[str, Files]) -> None:
    root = out / r.dirname
    for sub in SUBDIRS:
        (root / sub).mkdir(parents=True)
        for name, text in files[sub].items():
            (root / sub / name).write_text(text, encoding="utf-8")
    (root / "release-manifests" / "release-metadata").write_text(release_metadata(r), encoding="utf-8")
    (root / "release-manifests" / "image-references").write_text(image_references(r), encoding="utf-8")


def docs_of(text: str) -> list[dict]:
    return [d for d in yaml.load_all(text, Loader=Loader) if d is not None]


def check_release(root: Path, r: Release) -> dict[str, int]:
    """Self-check of a written release; returns its counts of manifest files and documents."""
    problems: list[str] = []
    meta_doc = json.loads((root / "release-manifests" / "release-metadata").read_text(encoding="utf-8"))
    if meta_doc.get("kind") != "cincinnati-metadata-v0" or meta_doc.get("version") != r.version:
        problems.append("release-metadata kind/version")
    imgref = json.loads((root / "release-manifests" / "image-references").read_text(encoding="utf-8"))
    if imgref.get("kind") != "ImageStream" or imgref.get("apiVersion") != "image.openshift.io/v1":
        problems.append("image-references is not an image.openshift.io/v1 ImageStream")
    if imgref["metadata"]["name"] != r.version:
        problems.append("image-references name != version")
    pullspecs = {t["from"]["name"] for t in imgref["spec"]["tags"]}

    seen: dict[tuple[str, ...], str] = {}
    counts = {"files": 0, "docs": 0}
    deploy_file: dict[str, str] = {}  # component -> deployment file name
    co_files: list[tuple[str, str]] = []
    for sub in SUBDIRS:
        for path in sorted((root / sub).iterdir(), key=lambda p: p.name.encode()):
            if path.suffix not in (".yaml", ".yml", ".json"):
                continue
            counts["files"] += 1
            if not (m := FILENAME_RE.match(path.name)):
                problems.append(f"{path.name}: does not match the CVO file-name pattern")
                continue
            docs = docs_of(path.read_text(encoding="utf-8"))
            if not docs:
                problems.append(f"{path.name}: no documents")
            for d in docs:
                counts["docs"] += 1
                md = d.get("metadata") or {}
                if not d.get("kind") or not md.get("name"):
                    problems.append(f"{path.name}: document without kind or metadata.name")
                    continue
                ann = md.get("annotations") or {}
                if ann.get(HA) != "true":
                    problems.append(f"{path.name}: {d['kind']}/{md['name']} lacks the HA profile")
                key = (d["apiVersion"].rpartition("/")[0], d["kind"], md.get("namespace", ""), md["name"])
                if key in seen and ann.get(DELETE) != "true":
                    problems.append(f"{path.name}: duplicate {key} (also in {seen[key]})")
                seen[key] = path.name
                if d["kind"] == "Deployment" and ann.get(DELETE) != "true":
                    container = d["spec"]["template"]["spec"]["containers"][0]
                    if sub == "release-manifests":
                        env = {e["name"]: e.get("value") for e in container.get("env", [])}
                        if container["image"] not in pullspecs:
                            problems.append(f"{path.name}: image not in image-references")
                        if env.get("RELEASE_VERSION") != r.version:
                            problems.append(f"{path.name}: RELEASE_VERSION")
                        if "OPERAND_IMAGE" in env and env["OPERAND_IMAGE"] not in pullspecs:
                            problems.append(f"{path.name}: OPERAND_IMAGE not in image-references")
                    if d["spec"].get("replicas") != 1:
                        problems.append(f"{path.name}: replicas != 1")
                    deploy_file[m.group(2)] = path.name
                if d["kind"] == "ClusterOperator":
                    if {v["name"]: v["version"] for v in d["status"]["versions"]}.get("operator") != r.version:
                        problems.append(f"{path.name}: operator version")
                    co_files.append((m.group(2), path.name))
    for component, co_name in co_files:
        dep = deploy_file.get(component)
        if dep is None:
            problems.append(f"{co_name}: no Deployment for component {component}")
        elif not dep.encode() < co_name.encode():
            problems.append(f"{co_name}: sorts before its Deployment {dep}")
    if problems:
        raise SystemExit(f"{r.version}: self-check failed:\n  " + "\n  ".join(problems))
    return counts


# --------------------------------------------------------------------------------------------
# README: the template's tables, computed from the rendered manifests
# --------------------------------------------------------------------------------------------


def notes_of(name: str, doc: dict) -> list[str]:
    """Human-readable notes for the README about one document."""
    ann = doc["metadata"].get("annotations") or {}
    attrs = []
    if ann.get(CREATE_ONLY) == "true":
        attrs.append("create-only")
    if ann.get(DELETE) == "true":
        attrs.append(f"`release.openshift.io/delete` in `{name}`")
    if FEATURE_SET in ann:
        attrs.append(f"feature-set {ann[FEATURE_SET]}")
    if FEATURE_GATE in ann:
        attrs.append(f"feature-gate {ann[FEATURE_GATE]}")
    if ann.get(HA) == "true" and SNO not in ann:
        attrs.append("HA profile only")
    if doc["kind"] == "Job":
        attrs.append("`batch/v1`, in its own file: a barrier in the graph")
    if doc["kind"] == "CustomResourceDefinition" and "scale" in (doc["spec"]["versions"][0].get("subresources") or {}):
        attrs.append("status+scale subresources")
    return [f"{doc['kind']} `{doc['metadata']['name']}`: {', '.join(attrs)}"] if attrs else []


@dataclass
class Component:
    levels: set[str] = field(default_factory=set)
    releases: set[str] = field(default_factory=set)
    namespaces: set[str] = field(default_factory=set)
    caps: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    co: str | None = None
    operand: str | None = None  # the operand a ClusterOperator lists a version of
    operand_versions: dict[str, str] = field(default_factory=dict)  # release -> version
    dash_names: bool = False  # NN-name.yaml file names


def readme(data: Data, rendered: dict[str, dict[str, Files]]) -> str:
    versions = [r.version for r in data.releases]
    components: dict[str, Component] = {}
    for r in data.releases:
        for name, text in rendered[r.version]["release-manifests"].items():
            m = FILENAME_RE.match(name)
            assert m, name
            c = components.setdefault(m.group(2), Component())
            c.levels.add(m.group(1))
            c.releases.add(r.version)
            c.dash_names |= bool(re.match(r"\d\d-", name[m.end():]))
            for d in docs_of(text):
                ann = d["metadata"].get("annotations") or {}
                if CAPABILITY in ann:
                    c.caps.add(ann[CAPABILITY])
                if d["kind"] == "Namespace":
                    c.namespaces.add(d["metadata"]["name"])
                if d["kind"] == "ClusterOperator":
                    c.co = d["metadata"]["name"]
                    for v in d["status"]["versions"]:
                        if v["name"] != "operator":
                            assert c.operand in (None, v["name"]), name
                            c.operand, c.operand_versions[r.version] = v["name"], v["version"]
                c.notes += [n for n in notes_of(name, d) if n not in c.notes]

    component_rows = []
    for comp, c in sorted(components.items(), key=lambda kv: (min(kv[1].levels), kv[0])):
        vers = "—"
        if c.operand:
            vers = f"{c.operand}: " + " / ".join(c.operand_versions.get(v, "—") for v in versions)
        releases = "all" if len(c.releases) == len(versions) else ", ".join(v for v in versions if v in c.releases)
        notes = list(c.notes)
        if c.caps:
            notes.insert(0, "all documents `capability.openshift.io/name: " + ", ".join(sorted(c.caps)) + "`")
        if c.dash_names:
            notes.append("dash-style file names (`NN-name.yaml`)")
        component_rows.append(
            f"| `{comp}` | {', '.join(sorted(c.levels))} | {', '.join(sorted(c.namespaces)) or '—'} | "
            f"{c.co or '—'} | {vers} | {data.readme_releases.get(comp, releases)} | {'; '.join(notes)} |")
    release_rows = [f"| {r.version} | {r.fields['kind']} | {', '.join(r.fields['previous'])} | "
                    + (f"`{r.fields['channels']}` |" if r.fields["channels"] else "none: the update graph's |")
                    for r in data.releases]
    count_rows = []
    for r in data.releases:
        files = rendered[r.version]
        ndocs = sum(len(docs_of(text)) for sub in SUBDIRS for text in files[sub].values())
        count_rows.append(f"| {r.version} | {len(files['manifests'])} | {len(files['release-manifests'])} | 2 "
                          f"| {ndocs} |")
    tables = {"release_rows": release_rows, "component_rows": component_rows, "count_rows": count_rows}
    template = (data.templates / "README.md.in").read_text(encoding="utf-8")
    return render(template, {k: "\n".join(v) for k, v in tables.items()}, "README.md.in")


# --------------------------------------------------------------------------------------------


def generate(out: Path, templates: Path = TEMPLATES) -> dict[str, dict[str, int]]:
    """Write the releases and README.md into out from the templates; returns each release's counts."""
    data = load_data(templates)
    rendered = {r.version: render_release(data, r) for r in data.releases}
    out.mkdir(parents=True, exist_ok=True)
    for r in data.releases:
        if (out / r.dirname).exists():
            shutil.rmtree(out / r.dirname)
        write_release(out, r, rendered[r.version])
    (out / "README.md").write_text(readme(data, rendered), encoding="utf-8")
    return {r.version: check_release(out / r.dirname, r) for r in data.releases}


def differences(generated: Path, target: Path) -> list[str]:
    """The files (relative paths) whose bytes differ between the two trees, or that only one has;
    the hand-written files beside the releases in target do not count."""

    def tree(root: Path) -> dict[str, Path]:
        return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}

    g, t = tree(generated), tree(target)
    names = {n for n in (g.keys() | t.keys()) - HAND_WRITTEN if not n.startswith(HAND_WRITTEN_DIRS)}
    return sorted(n for n in names if n not in g or n not in t or g[n].read_bytes() != t[n].read_bytes())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default: payloads/)")
    ap.add_argument("--check", action="store_true", help="fail if the output directory is not up to date")
    args = ap.parse_args(argv)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            generate(Path(tmp))
            if diffs := differences(Path(tmp), args.out):
                print("payloads are out of date:\n  " + "\n  ".join(diffs), file=sys.stderr)
                return 1
        print("payloads are up to date")
        return 0
    for version, c in generate(args.out).items():
        print(f"demo-{version}: {c['files']} manifest files, {c['docs']} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
