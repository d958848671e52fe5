"""Generated cases for ``cvo upgrade recommend`` against oc's own code (hack/oc-recommend/harness.py).

:func:`case` makes a ClusterVersion, an alerts answer (or none) and the flags from a seed, always the same ones:
conditions present or not in any status, versions that parse and that do not (blang/semver's errors), prereleases
and build metadata, several majors and minors, conditional updates with and without risks and conditions, crowded minors of equal versions (the order
Go's unstable sort leaves them in), the
available updates sharing their images, multi-line and padded messages, alerts of every group oc knows, pending
ones, and --version/--show-outdated-releases/--quiet/--accept in every combination (oc's refusals included).
"""
from __future__ import annotations

import json
import random
from pathlib import Path

VERSIONS = ["4.16.1", "4.16.2", "4.16.10", "4.16.3", "4.17.0", "4.17.1", "4.17.0-rc.1", "4.17.0-ec.2", "4.15.9",
            "5.0.0", "5.1.2", "4.16.2+build.1", "3.11.0", "4.18.0-okd-scos.1", "4.18.0-okd-scos.10",
            "4.16", "v4.16.4", "04.16.1", "4.16.x", "", "4.16.1-01", "not-a-version", "4.16.1-"]
NAMES = ["ARODNS", "RHELKernel", "AAA", "Zeta", "MCO-1094", ""]
MESSAGES = ["", "one line", "two\nlines", "  padded with spaces  \n", "tab\there", "\ttrailing\n\n",
            "unicode: é ü 中文", "ends with nbsp\xa0", "line\n  indented"]
REASONS = ["AsExpected", "EvaluationFailed", "MultipleReasons", "AdminAckRequired", "RiskA", "Alert:firing"]
ALERTNAMES = ["ClusterOperatorDown", "PodDisruptionBudgetLimit", "PodDisruptionBudgetAtLimit", "KubeContainerWaiting",
              "KubeletHealthState", "KubeNodeNotReady", "KubeNodeReadinessFlapping", "KubeNodeUnreachable",
              "VirtHandlerDaemonSetRolloutFailing", "VMCannotBeEvicted", "Watchdog", "UpdateAvailable", ""]


def condition(r: random.Random, type_: str, meta: bool = False) -> dict:
    c = {"type": type_, "status": r.choice(["True", "False", "Unknown"]),
         "lastTransitionTime": "2025-01-01T00:00:00Z"}
    if meta or r.random() < 0.8:
        c["reason"] = r.choice(REASONS)
    if meta or r.random() < 0.8:
        c["message"] = r.choice(MESSAGES)
    return c


CROWDED = ["4.16.2", "4.16.2+a", "4.16.2+b", "4.16.3", "4.16.3+x", "4.16.1"]  # equal versions: Go's unstable sort


def release(r: random.Random, images: list[str], versions: list[str] = VERSIONS) -> dict:
    out = {"version": r.choice(versions), "image": r.choice(images)}
    if r.random() < 0.7:
        out["url"] = r.choice(["https://example.com/errata/1", "https://example.com/errata/2"])
    return out


def clusterversion(r: random.Random) -> dict:
    crowded = r.random() < 0.15  # one minor with more than sort.Slice's 12 (insertion-sorted) updates
    versions = CROWDED if crowded else VERSIONS
    sizes = [12, 20, 30] if crowded else [0, 0, 1, 3, 6, 10]
    images = [f"quay.io/r@sha256:{i:064x}" for i in range(r.randint(1, 12) if not crowded else 60)]
    conditions = []
    for type_ in ("Failing", "Progressing", "RetrievedUpdates", "Upgradeable", "Available"):
        if r.random() < 0.75:
            conditions.append(condition(r, type_))
    r.shuffle(conditions)
    conditional = []
    for _ in range(r.choice(sizes)):
        risks = [{"name": r.choice(NAMES), "message": r.choice(MESSAGES), "url": "https://example.com/risk",
                  "matchingRules": [{"type": "Always"}]} for _ in range(r.choice([0, 1, 1, 2, 3]))]
        cu = {"release": release(r, images, versions), "risks": risks}
        if r.random() < 0.8:
            cu["conditions"] = [condition(r, "Recommended", meta=True)]
        conditional.append(cu)
    available = [release(r, images, versions) for _ in range(r.choice(sizes))]
    spec: dict = {"clusterID": "00000000-0000-0000-0000-000000000000"}
    if r.random() < 0.7:
        spec["channel"] = r.choice(["stable-4.16", "fast-4.17"])
    if r.random() < 0.5:
        spec["upstream"] = "https://updates.example/graph"
    desired = {"version": r.choice(["4.16.0", "4.16.0", "4.13.2", "4.12.0-rc.0", "bad", "5.0.0"]),
               "image": "quay.io/r@sha256:current"}
    if r.random() < 0.6:
        desired["channels"] = r.sample(["stable-4.16", "fast-4.16", "candidate-4.17"], r.randint(1, 3))
    status = {"desired": desired, "conditions": conditions, "observedGeneration": 1, "versionHash": "x"}
    if available:
        status["availableUpdates"] = available
    if conditional:
        status["conditionalUpdates"] = conditional
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
            "metadata": {"name": "version"}, "spec": spec, "status": status}


def alerts(r: random.Random) -> dict | None:
    if r.random() < 0.3:
        return None
    found = []
    for _ in range(r.choice([0, 1, 2, 4, 7])):
        labels = {"alertname": r.choice(ALERTNAMES), "severity": r.choice(["critical", "warning", "info", "none"])}
        if r.random() < 0.3:
            labels["openShiftUpdatePrecheck"] = r.choice(["true", "false"])
        if r.random() < 0.5:
            labels["namespace"] = "openshift-x"
        if r.random() < 0.4:
            labels["poddisruptionbudget"] = "pdb-y"
        annotations = {}
        for key in ("summary", "description", "message", "runbook_url"):
            if r.random() < 0.5:
                annotations[key] = r.choice(["Text.", "Text", "multi\nline", "https://runbook"])
        found.append({"labels": labels, "annotations": annotations, "state": r.choice(["firing", "firing", "pending"]),
                      "activeAt": "2025-01-28T23:00:54.844366438Z", "value": "1e+00"})
    return {"status": "success", "data": {"alerts": found}}


def options(r: random.Random, cv: dict) -> dict:
    present = [u["release"]["version"] for u in cv["status"].get("conditionalUpdates", [])] + \
              [u["version"] for u in cv["status"].get("availableUpdates", [])]
    version = ""
    if r.random() < 0.5:
        version = r.choice(present + VERSIONS[:8] + ["4.99.0", "9.0.0"]) if present else r.choice(VERSIONS[:8])
    accept = r.sample(["Failing", "Progressing", "CannotRetrieveUpdates", "ConditionalUpdateRisk", "AlertNoTestData",
                       "ClusterOperatorDown", "PodDisruptionBudgetAtLimit", "KubeNodeNotReady"], r.randint(0, 5))
    refused = r.random() < 0.05  # oc's refusals: --show-outdated-releases with --version, --quiet without it
    show = r.random() < 0.4 if not version else refused
    quiet = r.random() < 0.3 if version else refused
    return {"show": show, "version": version, "quiet": quiet, "accept": accept}


def case(seed: int) -> dict:
    r = random.Random(seed)
    cv = clusterversion(r)
    return {"seed": seed, "cv": cv, "alerts": alerts(r), "options": options(r, cv)}


CV_FILE = "case-cv.yaml"
ALERTS_FILE = "case-alerts.json"  # oc's mock reads it beside the ClusterVersion, as examples_test.go runs


def write_case(generated: dict, where: Path) -> list[str]:
    """The case's files in ``where`` and the harness's flags (main.go) to run on them from there."""
    (where / CV_FILE).write_text(json.dumps(generated["cv"]))
    alerts = where / ALERTS_FILE
    if generated["alerts"] is None:
        alerts.unlink(missing_ok=True)
    else:
        alerts.write_text(json.dumps(generated["alerts"]))
    flags = generated["options"]
    return ["-cv", CV_FILE, "-version", flags["version"], "-accept", ",".join(flags["accept"]),
            *(["-show"] if flags["show"] else []), *(["-quiet"] if flags["quiet"] else [])]
