#!/usr/bin/env python3
"""oc's own ``oc adm upgrade recommend`` code as a small program, to record what it prints for generated cases.

    hack/oc-recommend/harness.py build OC_REPO [COMMIT]   # print the built binary's path
    hack/oc-recommend/harness.py record OC_REPO [COMMIT]  # (re)write tests/golden/recommend/oc-differential.jsonl

``build`` takes recommend.go, precheck.go, alerts.go and mockresources.go from ``pkg/cli/admin/upgrade/recommend``
of a git checkout of openshift/oc (``git show COMMIT:PATH``) and the alert types of ``pkg/cli/admin/upgrade/status/
alerts.go``, cuts what needs a live cluster (the cobra command, the REST client, the Thanos route) and builds them
with main.go, which runs ``options.Complete`` and ``options.Run`` with oc's ``--mock-clusterversion`` data.  The
rest of the code is oc's, unchanged.  Go modules come through the Go module proxy (go.mod, go.sum).

``record`` runs the binary on the cases of ``tests/support/recommend_cases.py`` (seeds 0..N-1) and writes oc's
standard output, error stream and returned error for each, one JSON line per seed.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PKG = "pkg/cli/admin/upgrade/recommend"
DEFAULT_COMMIT = "014fa165b6e237c41525012287ed8bc3458a8375"
SEEDS = 400
OUT = ROOT / "tests" / "golden" / "recommend" / "oc-differential.jsonl"


def show(repo: str, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def cut(text: str, start: str, end: str, instead: str = "") -> str:
    i = text.index(start)
    return text[:i] + instead + text[text.index(end, i):]


def drop_imports(text: str, imports: list[str]) -> str:
    for imp in imports:
        assert "\t" + imp + "\n" in text, imp
        text = text.replace("\t" + imp + "\n", "")
    return text


def rewrite(repo: str, commit: str, into: Path) -> None:
    s = show(repo, commit, f"{PKG}/recommend.go")
    s = cut(s, "func newOptions(", "func New(")
    s = cut(s, "func New(f kcmdutil.Factory", "type options struct")
    s = s.replace("\tRESTConfig *rest.Config\n\tClient     configv1client.Interface\n", "")
    s = s.replace("\tgenericiooptions.IOStreams\n", "\tOut    io.Writer\n\tErrOut io.Writer\n")
    s = cut(s, "func (o *options) Complete(", '\tif o.rawVersion == "" {', instead=(
        "func (o *options) Complete() error {\n\t{\n\t\tcvSuffix := \"-cv.yaml\"\n"
        "\t\to.mockData.alertsPath = strings.Replace(o.mockData.cvPath, cvSuffix, \"-alerts.json\", 1)\n"
        "\t\tif err := o.mockData.load(); err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n\n"))
    s = cut(s, "\t\tvar err error\n\t\tcv, err = o.Client.ConfigV1()", "\t}\n\n\tif c := findClusterOperatorStatusCondition",
            instead='\t\treturn fmt.Errorf("No cluster version information available - you must be connected to an '
                    'OpenShift version 4 server to fetch the current version")\n')
    s = drop_imports(s, ['"github.com/spf13/cobra"', 'apierrors "k8s.io/apimachinery/pkg/api/errors"',
                         '"k8s.io/cli-runtime/pkg/genericiooptions"', '"k8s.io/client-go/rest"',
                         'kcmdutil "k8s.io/kubectl/pkg/cmd/util"', '"k8s.io/kubectl/pkg/util/templates"',
                         'configv1client "github.com/openshift/client-go/config/clientset/versioned"'])
    s = s.replace("import (\n", 'import (\n\t"io"\n', 1)
    a = show(repo, commit, f"{PKG}/alerts.go")
    a = cut(a, "\t} else {\n\t\tif err := inspectalerts", "\tvar alertData status.AlertData",
            instead='\t} else {\n\t\treturn nil, fmt.Errorf("no live alerts in the harness")\n\t}\n\n')
    a = drop_imports(a, ['routev1 "github.com/openshift/api/route/v1"',
                         'routev1client "github.com/openshift/client-go/route/clientset/versioned/typed/route/v1"',
                         '"k8s.io/client-go/rest"', '"github.com/openshift/oc/pkg/cli/admin/inspectalerts"',
                         '"github.com/openshift/oc/pkg/cli/admin/upgrade/status"'])
    a = a.replace("status.AlertData", "AlertData")
    status = show(repo, commit, "pkg/cli/admin/upgrade/status/alerts.go")
    types = ["package recommend\n\nimport \"time\"\n"]
    for name in ("AlertLabels", "AlertAnnotations", "Alert", "AlertData", "Data"):
        start = status.index(f"type {name} struct")
        types.append(status[start:status.index("\n}\n", start) + 3])
    files = {"recommend.go": s, "alerts.go": a, "types.go": "\n".join(types),
             "precheck.go": show(repo, commit, f"{PKG}/precheck.go"),
             "mockresources.go": show(repo, commit, f"{PKG}/mockresources.go")}
    for name, text in files.items():
        (into / name).write_text(text.replace("package recommend", "package main", 1))
    for name in ("main.go", "go.mod", "go.sum"):
        shutil.copy(HERE / name, into / name)


def build(repo: str, commit: str) -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cvo" / "oc-recommend" / commit
    binary = cache / "oc-recommend"
    if binary.exists():
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        rewrite(repo, commit, Path(tmp))
        subprocess.run(["go", "build", "-o", str(binary), "."], cwd=tmp, check=True)
    return binary


def record(repo: str, commit: str) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.support.recommend_cases import case, write_case

    binary = build(repo, commit)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(SEEDS):
            generated = case(seed)
            argv = [str(binary), *write_case(generated, Path(tmp))]
            answer = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True, cwd=tmp).stdout)
            lines.append(json.dumps({"seed": seed, **answer}, ensure_ascii=False, sort_keys=True))
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{OUT.relative_to(ROOT)}: {len(lines)} cases of oc {commit[:8]}")


if __name__ == "__main__":
    command, repo, *rest = sys.argv[1:]
    commit = rest[0] if rest else DEFAULT_COMMIT
    if command == "build":
        print(build(repo, commit))
    elif command == "record":
        record(repo, commit)
    else:
        sys.exit(f"unknown command {command!r}: build or record")
