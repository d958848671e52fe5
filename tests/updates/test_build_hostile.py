"""Hostile graph data and releases: one ``error:`` line naming the file, exit 2, never a traceback."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvo.cli.main import main
from cvo.payload.limits import InputError
from cvo.updates.build import build_graph
from cvo.updates.graph_data import read_graph_data
from tests.support.graph_data import release, risk_doc, write_graph_data

REPO = Path(__file__).resolve().parents[2]
DEMO = [str(REPO / "payloads" / f"demo-{v}") for v in ("4.16.0", "4.16.3", "4.17.0")]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
                    st.sampled_from(["4.16.0", ".*", "4.16.0+amd64", "(", "PromQL", "Always", "[", "4.16"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                      max_leaves=12)
keys = st.sampled_from(["to", "from", "url", "name", "message", "matchingRules", "fixedIn", "versions", "extra"])
documents = st.one_of(values, st.dictionaries(keys, values, max_size=7),
                      st.builds(lambda base, k, v: {**base, k: v},
                                st.sampled_from([risk_doc("4.17.0", ".*", "Risk"), {"to": "4.17.0", "from": ".*"},
                                                 {"name": "stable-4.17", "versions": ["4.17.0"]}]), keys, values))


def _write(root: Path, where: str, content: bytes) -> Path:
    write_graph_data(root, channels={"stable-4.17": ["4.16.0", "4.17.0"]})
    path = root / where
    path.write_bytes(content)
    return path


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=st.sampled_from(["channels/odd.yaml", "blocked-edges/odd.yaml", "version", "raw/metadata.json"]),
       doc=documents, raw=st.one_of(st.none(), st.binary(max_size=60)))
def test_any_file_reads_or_is_one_error_naming_it(where: str, doc: Any, raw: bytes | None) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "raw").mkdir()
        content = raw if raw is not None else yaml.safe_dump(doc).encode()
        path = _write(root, where, content)
        try:
            data = read_graph_data(root)
        except InputError as err:
            assert str(err).startswith(f"{path}: ") and "\n" not in str(err)
            return
        # what reads also builds
        build_graph([release("4.16.0"), release("4.17.0", "4.16.0")], data)


@pytest.mark.parametrize(("where", "content", "message"), [
    ("blocked-edges/4.17.0.yaml", "to: 4.17.0\nfrom: '('\n", "'from' '(' is not a regular expression"),
    ("blocked-edges/4.17.0.yaml", "to: 4.17.x\nfrom: .*\n", "'to' '4.17.x' is not a semantic version"),
    ("blocked-edges/4.17.0.yaml", "to: 4.17\nfrom: .*\n", "'to' must be a version string, not a number"),
    ("blocked-edges/4.17.0.yaml", "to: 4.17.0\nfrom: .*\nname: X\n", "a conditional edge needs url, name, "
                                                                       "message, matchingRules; missing: url, message"),
    ("blocked-edges/4.17.0.yaml", "to: 4.17.0\nfrom: .*\nfixedIn: 4.17.1\n", "unknown field(s) 'fixedIn'"),
    ("blocked-edges/4.17.0.yaml", yaml.safe_dump(risk_doc("4.17.0", ".*", "R", [{"type": "PromQL"}])),
     "matchingRules[0] of type PromQL needs promql"),
    ("blocked-edges/4.17.0.yaml", yaml.safe_dump({**risk_doc("4.17.0", ".*", "R"), "matchingRules": []}),
     "'matchingRules' must be a non-empty list"),
    ("channels/stable-4.17.yaml", "name: stable-4.17\nversions: 4.17.0\n", "'versions' must be a list"),
    ("channels/stable-4.17.yaml", "versions: [4.17.0]\n", "'name' must be a string, not null"),
    ("channels/stable-4.17.yaml", "name: [x\n", "invalid YAML"),
    ("version", "2.0.0\n", "unrecognized graph-data version 2.0.0"),
])
def test_cvo_graph_build_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str,
                                        content: str, message: str) -> None:
    path = _write(tmp_path, where, content.encode())
    assert main(["graph", "build", *DEMO, "--graph-data", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: {path}: {message}")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err


def test_a_missing_version_file_and_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "build", *DEMO, "--graph-data", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nope'}: not a directory (a cincinnati-graph-data checkout)\n"
    (tmp_path / "channels").mkdir()
    assert main(["graph", "build", *DEMO, "--graph-data", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'version'}: missing")


def test_a_release_that_is_not_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rel" / "release-manifests").mkdir(parents=True)
    (tmp_path / "rel" / "release-manifests" / "release-metadata").write_text('{"kind": "cincinnati-metadata-v0"}')
    assert main(["graph", "build", str(tmp_path / "rel")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path / 'rel' / 'release-manifests' / 'release-metadata'}: 'version' is required\n"
    assert main(["graph", "build", str(tmp_path / "nothing-here")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nothing-here'}: neither a release directory nor a " \
                                      "release image\n"
