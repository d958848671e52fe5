"""``kube_section``: prepare the input, alternate cvo and kubectl runs, measure the reaction delay, render."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.kube.prepare import next_release, prepare
from bench.kube.processes import cvo_argv
from bench.kube.reaction import Reaction, reaction_run
from bench.kube.render import render
from bench.kube.server import api_get, builtin_kinds, control_plane, first_write_latency
from bench.kube.settings import BEHAVIOURS
from bench.kube.tool_runs import ToolRun, cvo_run, kubectl_run, kubectl_version


def _progress(message: str) -> None:
    print(f"bench: kube: {message}", file=sys.stderr, flush=True)


def a_crd(directory: Path) -> dict[str, Any] | None:
    """The first CustomResourceDefinition of the prepared release (one JSON document per line)."""
    for sub in ("manifests", "release-manifests"):
        for path in sorted((directory / sub).iterdir()):
            for line in path.read_bytes().splitlines():
                if b'"CustomResourceDefinition"' in line:
                    doc = json.loads(line)
                    if doc.get("kind") == "CustomResourceDefinition":
                        return dict(doc)
    return None


def kube_section(repeats: int) -> list[str]:
    lines = ["## Sweeping the corpus into a real API server: `cvo install` vs `kubectl apply --server-side`", ""]
    work = Path(tempfile.mkdtemp(prefix="cvo-bench-kube-"))
    env = dict(os.environ, CVO_CACHE_DIR=str(work / "cache"))
    env.pop("KUBECONFIG", None)
    try:
        _progress("preparing the corpus")
        with control_plane() as cp:
            builtin = builtin_kinds(cp)
            apiserver_version = api_get(cp, "/version").get("gitVersion", "?")
            prep = prepare(work / "release", builtin)
            crd = a_crd(prep.directory)
            first_write = first_write_latency(cp, crd) if crd is not None else None
        nxt, next_version = next_release(prep.directory, prep.version, work / "next")
        for directory in (prep.directory, nxt):  # fill the parse cache: sweeps are measured, not parsing
            subprocess.run(cvo_argv("plan", "-o", "json", str(directory)), env=env, check=True, timeout=300,
                           stdout=subprocess.DEVNULL)
        at_once, after_a_second = work / "at-once.yaml", work / "after-a-second.yaml"
        at_once.write_text(BEHAVIOURS)
        after_a_second.write_text("default:\n  delay: 1s\n")
        kubectl = kubectl_version()

        cvo_runs: list[ToolRun] = []
        kubectl_runs: list[ToolRun] = []
        for i in range(repeats):
            for tool in (("cvo", "kubectl") if i % 2 == 0 else ("kubectl", "cvo")):
                if tool == "kubectl" and kubectl is None:
                    continue
                _progress(f"{tool} run {i + 1}/{repeats}")
                try:
                    if tool == "cvo":
                        cvo_runs.append(cvo_run(prep, env, at_once))
                    else:
                        kubectl_runs.append(kubectl_run(prep, env, work))
                except (RuntimeError, OSError, subprocess.SubprocessError) as err:  # a run that could not be set up
                    failed = ToolRun(None, Counter(), 0, False, f"not run: {str(err).splitlines()[0][:200]}")
                    (cvo_runs if tool == "cvo" else kubectl_runs).append(failed)
                    _progress(f"{tool} run {i + 1} failed: {err}")
        _progress("reaction delay (install, then upgrade)")
        try:
            react = reaction_run(prep, nxt, next_version, env, at_once, after_a_second)
        except (RuntimeError, OSError, subprocess.SubprocessError) as err:
            react = Reaction(note=f"the run could not be set up: {str(err).splitlines()[0][:200]}")
        lines += render(prep, repeats, cvo_runs, kubectl_runs, kubectl, apiserver_version, react, first_write)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return lines
