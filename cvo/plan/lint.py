"""Findings about a payload that a sweep would trip over, each with how to fix it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cvo.payload.filters import KNOWN_CAPABILITIES, KNOWN_PROFILES, capabilities_of
from cvo.payload.graph import operator_versions, parse_filename
from cvo.payload.loader import Release
from cvo.payload.manifest import (
    CREATE_ONLY_ANNOTATION,
    DELETE_ANNOTATION,
    FEATURE_GATE_ANNOTATION,
    FEATURE_SET_ANNOTATION,
    PROFILE_ANNOTATION_PREFIX,
    Manifest,
)
from cvo.payload.shapes import shape_problem
from cvo.payload.workloads import STATUS_FROM, WorkloadSpecError, spec_of


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    file: str
    document: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": str(self.severity),
            "file": self.file,
            "document": self.document,
            "message": self.message,
        }


# rule id -> (severity, what it catches); the table docs/lint.md is generated from.
RULES: dict[str, tuple[Severity, str]] = {
    "clusteroperator-before-operator": (
        Severity.ERROR, "a ClusterOperator sorts before every Deployment of its component: the sweep would wait forever"),
    "clusteroperator-no-versions": (
        Severity.ERROR, "a ClusterOperator manifest declares no status.versions: the CVO fails the task"),
    "clusteroperator-no-operator-version": (
        Severity.WARNING, "a ClusterOperator's status.versions has no 'operator' entry"),
    "filename-unparsed": (
        Severity.WARNING, "a file name does not match 0000_<runlevel>_<component>_: it breaks parallel chains"),
    "ignored-file": (Severity.WARNING, "a file is not read (extension, sub-directory, template)"),
    "duplicate-object": (Severity.ERROR, "the same object is applied from two files with the same filters"),
    "invalid-delete-annotation": (Severity.ERROR, "release.openshift.io/delete is set to something other than true"),
    "delete-and-create-only": (Severity.WARNING, "a manifest is both create-only and a delete"),
    "feature-set-and-gate": (
        Severity.ERROR, "both feature-set and feature-gate annotations: the manifest is never applied"),
    "no-profile": (Severity.WARNING, "no known cluster profile includes the document: it is never applied"),
    "profile-opt-out": (
        Severity.INFO, "every profile annotation is set to a value other than true: deliberately never applied"),
    "unknown-capability": (Severity.WARNING, "the capability annotation names a capability cvo does not know"),
    "release-metadata": (Severity.WARNING, "release-metadata has a problem the CVO only warns about"),
    "workload-status-annotation": (
        Severity.ERROR, "release.cvo.dev/status-from-workloads or version-from is not usable: the ClusterOperator is "
                        "reported Degraded and never Available"),
    "workload-not-shipped": (
        Severity.WARNING, "a ClusterOperator's status comes from a workload the release does not ship: unless the "
                          "cluster already has it, it is never Available"),
    "malformed-object": (
        Severity.ERROR, "a field has a type the kind's Go struct refuses (e.g. spec: 5): the CVO fails the task"),
}


def _finding(rule: str, m_or_file: Manifest | str, message: str) -> Finding:
    severity = RULES[rule][0]
    if isinstance(m_or_file, Manifest):
        return Finding(rule, severity, m_or_file.path, m_or_file.document, message)
    return Finding(rule, severity, m_or_file, None, message)


def _name(m: Manifest) -> str:
    return f"{m.kind} {m.namespace}/{m.name}" if m.namespace else f"{m.kind} {m.name}"


def _operator_order(release: Release) -> list[Finding]:
    """ClusterOperators that sort before every Deployment of their own component."""
    findings = []
    first_deployment: dict[str, int] = {}
    deployments: dict[str, list[Manifest]] = defaultdict(list)
    for index, m in enumerate(release.manifests):
        parsed = parse_filename(m.file)
        if parsed and m.kind == "Deployment" and m.group == "apps":
            first_deployment.setdefault(parsed[1], index)
            deployments[parsed[1]].append(m)
    for index, m in enumerate(release.manifests):
        if m.kind != "ClusterOperator" or m.group != "config.openshift.io":
            continue
        parsed = parse_filename(m.file)
        if not parsed or parsed[1] not in first_deployment:
            continue
        component = parsed[1]
        if first_deployment[component] > index:
            dep = deployments[component][0]
            findings.append(_finding(
                "clusteroperator-before-operator", m,
                f"ClusterOperator {m.name} sorts before {_name(dep)} ({dep.path}), the operator that must "
                f"report it; the sweep would wait on it forever. Rename the file so it sorts after "
                f"{dep.file} (e.g. a higher run level or file number)",
            ))
    return findings


def _operator_versions(release: Release) -> list[Finding]:
    findings = []
    for m in release.all_manifests:
        if m.kind != "ClusterOperator" or m.group != "config.openshift.io":
            continue
        versions = operator_versions(m)
        if not versions:
            findings.append(_finding(
                "clusteroperator-no-versions", m,
                f"ClusterOperator {m.name} declares no status.versions; the CVO fails it with "
                f"ClusterOperatorNoVersions. Add status.versions with {{name: operator, version: <release>}}",
            ))
        elif not any(name == "operator" for name, _ in versions):
            findings.append(_finding(
                "clusteroperator-no-operator-version", m,
                f"ClusterOperator {m.name} status.versions has no 'operator' entry; add "
                f"{{name: operator, version: <release>}}, the version the CVO and admins watch",
            ))
    return findings


def _duplicates(release: Release) -> list[Finding]:
    """The same object in two files among the documents one cluster would get."""
    findings = []
    seen: dict[tuple[str, str, str, str], Manifest] = {}
    for m in release.manifests:
        first = seen.get(m.key)
        if first is None:
            seen[m.key] = m
        elif first.path != m.path:
            findings.append(_finding(
                "duplicate-object", m,
                f"{_name(m)} is also in {first.path} (document {first.document}); the later apply "
                f"overwrites the earlier one on every sweep. Keep one, or give them exclusive profile or "
                f"feature-set annotations",
            ))
    return findings


def _annotations(release: Release) -> list[Finding]:
    findings = []
    for m in release.all_manifests:
        ann = m.annotations
        delete = ann.get(DELETE_ANNOTATION)
        if delete is not None and delete != "true":
            findings.append(_finding(
                "invalid-delete-annotation", m,
                f'{DELETE_ANNOTATION}="{delete}" is invalid; the CVO fails the task. Use "true" or remove it',
            ))
        if delete == "true" and ann.get(CREATE_ONLY_ANNOTATION, "").lower() == "true":
            findings.append(_finding(
                "delete-and-create-only", m,
                f"{_name(m)} is both create-only and a delete; the delete wins. Remove {CREATE_ONLY_ANNOTATION}",
            ))
        if FEATURE_SET_ANNOTATION in ann and FEATURE_GATE_ANNOTATION in ann:
            findings.append(_finding(
                "feature-set-and-gate", m,
                f"{_name(m)} has both {FEATURE_SET_ANNOTATION} and {FEATURE_GATE_ANNOTATION}, so no cluster "
                f"applies it; keep one of them",
            ))
        profiles = {k: v for k, v in ann.items() if k.startswith(PROFILE_ANNOTATION_PREFIX)}
        if profiles and not any(v == "true" for v in profiles.values()):
            findings.append(_finding(
                "profile-opt-out", m,
                f"{_name(m)} is never applied by the CVO ({', '.join(f'{k}={v}' for k, v in profiles.items())}); "
                f"nothing to fix if another component applies it",
            ))
        elif not any(ann.get(f"{PROFILE_ANNOTATION_PREFIX}{p}") == "true" for p in KNOWN_PROFILES):
            findings.append(_finding(
                "no-profile", m,
                f"{_name(m)} is included by no cluster profile; add "
                f'{PROFILE_ANNOTATION_PREFIX}self-managed-high-availability: "true" (or another profile)',
            ))
        unknown = [c for c in capabilities_of(m) if c not in KNOWN_CAPABILITIES]
        if unknown:
            findings.append(_finding(
                "unknown-capability", m,
                f"capability {', '.join(unknown)} is not known; the task is skipped unless the cluster "
                f"knows it. Known: {', '.join(KNOWN_CAPABILITIES)}",
            ))
    return findings


def _files(release: Release) -> list[Finding]:
    findings = []
    reported: set[str] = set()
    for m in release.all_manifests:
        if m.path in reported or parse_filename(m.file):
            continue
        reported.add(m.path)
        findings.append(_finding(
            "filename-unparsed", m.path,
            "file name does not match 0000_<runlevel>_<component>_<name>; it gets no run level or component "
            "and breaks parallel chains. Rename it, e.g. 0000_50_my-operator_00_namespace.yaml",
        ))
    for s in release.skipped_files:
        findings.append(_finding("ignored-file", s.path, f"{s.reason}; rename it or move it out of the payload"))
    meta = release.warnings
    for w in meta:
        path, _, message = w.partition(": ")
        findings.append(_finding("release-metadata", path, message))
    return findings


def _shapes(release: Release) -> list[Finding]:
    return [_finding("malformed-object", m, f"{_name(m)}: {problem}; fix the field's type")
            for m in release.all_manifests if (problem := shape_problem(m)) is not None]


def _workloads(release: Release) -> list[Finding]:
    """release.cvo.dev/status-from-workloads (cvo/payload/workloads.py): usable, and naming what the release ships."""
    out = []
    shipped = {(m.kind, m.namespace, m.name) for m in release.manifests}
    for m in release.manifests:
        if m.kind != "ClusterOperator" or STATUS_FROM not in m.annotations:
            continue
        try:
            spec = spec_of(m)
        except WorkloadSpecError as err:
            out.append(_finding("workload-status-annotation", m, str(err).removeprefix(f"{m.path}: ")))
            continue
        for ref in spec.workloads if spec is not None else ():
            if ref.name and (ref.kind, ref.namespace, ref.name) not in shipped:
                out.append(_finding("workload-not-shipped", m, f"ClusterOperator {m.name}: {ref} is not in the "
                                                               "release"))
    return out


def lint(release: Release) -> list[Finding]:
    """Every finding for ``release``; rules about what one cluster gets use the load's filters."""
    findings = (
        _files(release)
        + _operator_versions(release)
        + _operator_order(release)
        + _duplicates(release)
        + _annotations(release)
        + _shapes(release)
        + _workloads(release)
    )
    order = {m.path: i for i, m in enumerate(release.all_manifests)}
    findings.sort(key=lambda f: (order.get(f.file, len(order)), f.document or 0, f.rule))
    return findings

