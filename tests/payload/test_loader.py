"""Loading a release directory: layout, order, documents, templates, metadata, cache, parallel parsing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

import pytest

from cvo.payload import cache as cache_mod
from cvo.payload import loader
from cvo.payload.filters import LoadFilter
from cvo.payload.loader import LoadError, Release, load_release
from cvo.payload.manifest import Manifest
from tests.support.helpers import HA, ReleaseFactory, obj


def cm(name: str, **annotations: str) -> dict[str, Any]:
    return obj("ConfigMap", name, "ns", annotations={**HA, **annotations}, data={"k": "v"})


def paths(manifests: list[Manifest]) -> list[str]:
    return [m.path for m in manifests]


def snapshot(release: Release) -> list[tuple[str, int, str, bytes]]:
    return [(m.path, m.document, m.kind, m.raw) for m in release.all_manifests]


def load_error(directory: Path, **kwargs: Any) -> list[str]:
    with pytest.raises(LoadError) as info:
        load_release(directory, **kwargs)
    return info.value.errors


# --- layout and order -----------------------------------------------------------------------


def test_manifests_dir_first_then_release_manifests_not_resorted(make_release: ReleaseFactory) -> None:
    root = make_release(
        {"0000_03_config_a.yaml": cm("r1"), "0000_50_x_b.yaml": cm("r2")},
        cvo_files={"0000_90_cluster-version-operator_x.yaml": cm("c1"), "0000_00_cvo_y.yaml": cm("c2")},
    )
    release = load_release(root)
    assert paths(release.manifests) == [
        "manifests/0000_00_cvo_y.yaml",
        "manifests/0000_90_cluster-version-operator_x.yaml",
        "release-manifests/0000_03_config_a.yaml",
        "release-manifests/0000_50_x_b.yaml",
    ]
    assert [m.file for m in release.manifests][1] == "0000_90_cluster-version-operator_x.yaml"


def test_files_sorted_bytewise_not_naturally_or_by_locale(make_release: ReleaseFactory) -> None:
    names = ["0000_10_a_10.yaml", "0000_10_a_9.yaml", "0000_10_B_x.yaml", "0000_10_a_é.yaml", "0000_10_a_z.yaml",
             "0000_10_a-b.yaml", "0000_10_a_.yaml"]
    root = make_release({n: cm(f"c{i}") for i, n in enumerate(names)})
    got = [m.file for m in load_release(root).manifests]
    assert got == sorted(names, key=lambda n: n.encode())
    assert got == ["0000_10_B_x.yaml", "0000_10_a-b.yaml", "0000_10_a_.yaml", "0000_10_a_10.yaml",
                   "0000_10_a_9.yaml", "0000_10_a_z.yaml", "0000_10_a_é.yaml"]


def test_only_yaml_yml_json_are_read_and_the_rest_is_reported(make_release: ReleaseFactory) -> None:
    root = make_release({
        "a.yaml": cm("a"), "b.yml": cm("b"), "c.json": json.dumps(cm("c")),
        "d.YAML": cm("d"), "e.txt": cm("e"), "README": "hello", "f.yaml.orig": cm("f"),
    })
    (root / "release-manifests" / "sub").mkdir()
    (root / "release-manifests" / "sub" / "g.yaml").write_text(json.dumps(cm("g")))
    (root / "release-manifests" / "dir.yaml").mkdir()
    release = load_release(root)
    assert [m.name for m in release.manifests] == ["a", "b", "c"]
    skipped = {s.path: s.reason for s in release.skipped_files}
    assert set(skipped) == {
        "release-manifests/d.YAML", "release-manifests/e.txt", "release-manifests/README",
        "release-manifests/f.yaml.orig", "release-manifests/sub", "release-manifests/dir.yaml",
    }
    assert "sub-directory" in skipped["release-manifests/dir.yaml"]
    assert "extension" in skipped["release-manifests/e.txt"]
    # release-metadata and image-references are read as metadata, never as manifests or skipped files
    assert not any("release-metadata" in p or "image-references" in p for p in skipped)


def test_manifests_dir_is_optional(make_release: ReleaseFactory) -> None:
    root = make_release({"a.yaml": cm("a")})
    (root / "manifests").rmdir()
    assert paths(load_release(root).manifests) == ["release-manifests/a.yaml"]


def test_plain_directory_with_version(tmp_path: Path) -> None:
    (tmp_path / "0000_10_a_x.yaml").write_text(json.dumps(cm("a")))
    (tmp_path / "notes.md").write_text("# not a manifest")
    release = load_release(tmp_path, version="4.17.1")
    assert release.version == "4.17.1"
    assert release.metadata is None and release.image_references is None
    assert paths(release.manifests) == ["0000_10_a_x.yaml"]
    assert [s.path for s in release.skipped_files] == ["notes.md"]


def test_plain_directory_needs_a_valid_version(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(json.dumps(cm("a")))
    (errors,) = [load_error(tmp_path)]
    assert len(errors) == 1 and "--release-version" in errors[0] and "not a release directory" in errors[0]
    assert "not a semantic version" in load_error(tmp_path, version="4.17")[0]


def test_missing_directory(tmp_path: Path) -> None:
    assert load_error(tmp_path / "nope") == [f"{tmp_path / 'nope'}: not a directory"]


def test_release_image_default_and_override(make_release: ReleaseFactory) -> None:
    root = make_release({"a.yaml": cm("a")})
    assert load_release(root).image == f"file://{root.resolve()}"
    assert load_release(root, release_image="quay.io/x/y@sha256:1").image == "quay.io/x/y@sha256:1"


# --- documents ------------------------------------------------------------------------------


def test_multi_document_files_drop_empty_and_null_documents(make_release: ReleaseFactory) -> None:
    text = "---\n" + json.dumps(cm("one")) + "\n---\n---\nnull\n---\n" + json.dumps(cm("two")) + "\n---\n"
    root = make_release({"0000_10_a_x.yaml": text})
    release = load_release(root)
    assert [(m.name, m.document) for m in release.all_manifests] == [("one", 1), ("two", 4)]
    assert {m.file for m in release.manifests} == {"0000_10_a_x.yaml"}


def test_json_file_json_in_yaml_and_bom(make_release: ReleaseFactory) -> None:
    root = make_release({
        "a.json": json.dumps(cm("a"), indent=2),
        "b.yaml": json.dumps(cm("b")) + "\n" + json.dumps(cm("c")),
        "d.yaml": b"\xef\xbb\xbf" + json.dumps(cm("d")).encode(),
        "e.yaml": b"\xef\xbb\xbfapiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e\n  annotations:\n"
                  b"    include.release.openshift.io/self-managed-high-availability: 'true'\n",
    })
    release = load_release(root)
    assert [(m.name, m.document) for m in release.manifests] == [("a", 1), ("b", 1), ("c", 2), ("d", 1), ("e", 1)]
    assert release.manifests[0].obj == cm("a")


def test_manifest_fields_and_raw_json(make_release: ReleaseFactory) -> None:
    doc = obj("Deployment", "op", "openshift-op", api="apps/v1", spec={"replicas": 1})
    root = make_release({"0000_50_op_deployment.yaml": doc})
    (m,) = load_release(root).manifests
    assert (m.api_version, m.group, m.version, m.kind, m.namespace, m.name) == (
        "apps/v1", "apps", "v1", "Deployment", "openshift-op", "op")
    assert m.path == "release-manifests/0000_50_op_deployment.yaml" and m.file == "0000_50_op_deployment.yaml"
    assert m.annotations == HA
    assert json.loads(m.raw) == doc
    assert b" " not in m.raw.replace(b"self-managed", b"")  # compact JSON
    assert m.key == ("apps", "Deployment", "openshift-op", "op")


@pytest.mark.parametrize(("document", "missing"), [
    ({"apiVersion": "v1", "metadata": {"name": "x"}}, "kind"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, "metadata.name"),
    ({"apiVersion": "v1", "kind": "ConfigMap"}, "metadata.name"),
    ({"apiVersion": "v1", "kind": "", "metadata": {"name": ""}}, "kind, metadata.name"),
])
def test_kind_and_name_are_required(make_release: ReleaseFactory, document: dict[str, Any], missing: str) -> None:
    root = make_release({"0000_10_a_x.yaml": [cm("fine"), document]})
    assert load_error(root) == [
        "release-manifests/0000_10_a_x.yaml (document 2): must contain kubernetes required fields kind and name "
        f"(missing {missing})"
    ]


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("document", "problem"), [
    ([1, 2], "document is a list, not an object"),
    ("just text", "document is a str, not an object"),
    (obj("ConfigMap", "x", annotations={"a": 1}), "annotation 'a' must be a string"),  # type: ignore[dict-item]
    ({"kind": "A", "metadata": {"name": "x", "namespace": 5}}, "metadata.namespace must be a string"),
    ({"kind": "A", "apiVersion": 1, "metadata": {"name": "x"}}, "apiVersion must be a string"),
    ({"kind": "A", "metadata": {"name": "x"}, "deep": nested(300)}, "nested deeper than 200 levels"),
])
def test_malformed_documents(make_release: ReleaseFactory, document: Any, problem: str) -> None:
    root = make_release({"x.yaml": json.dumps(document)})
    (error,) = load_error(root)
    assert error.startswith("release-manifests/x.yaml (document 1): ")
    assert problem in error


def test_duplicate_object_in_one_file_is_an_error(make_release: ReleaseFactory) -> None:
    root = make_release({"x.yaml": [cm("a"), cm("b"), cm("a", extra="1")]})
    assert load_error(root) == [
        "release-manifests/x.yaml (document 3): duplicate resource ConfigMap ns/a (also document 1)"
    ]


def test_same_name_different_kind_group_or_namespace_is_not_a_duplicate(make_release: ReleaseFactory) -> None:
    root = make_release({"x.yaml": [
        cm("a"), obj("Secret", "a", "ns"), obj("ConfigMap", "a", "other"), obj("ConfigMap", "a", "ns", api="x.io/v1"),
    ]})
    assert len(load_release(root).manifests) == 4


def test_duplicates_across_files_load(make_release: ReleaseFactory) -> None:
    root = make_release({"a.yaml": cm("same"), "b.yaml": cm("same")})
    assert paths(load_release(root).manifests) == ["release-manifests/a.yaml", "release-manifests/b.yaml"]


def test_every_broken_file_is_reported_once_in_payload_order(make_release: ReleaseFactory) -> None:
    root = make_release(
        {"a.yaml": "a: [\n", "b.yaml": cm("fine"), "c.yaml": [cm("x"), {"kind": "A"}], "d.yaml": b"k: \xff\n"},
        cvo_files={"z.yaml": "kind: [\n"},
    )
    os.symlink(root / "release-manifests" / "missing.yaml", root / "release-manifests" / "0_dangling.yaml")
    errors = load_error(root)
    assert [e.split(":")[0].split(" (")[0] for e in errors] == [
        "manifests/z.yaml", "release-manifests/0_dangling.yaml", "release-manifests/a.yaml",
        "release-manifests/c.yaml", "release-manifests/d.yaml",
    ]
    assert errors[1] == "release-manifests/0_dangling.yaml: file not found (dangling symbolic link)"
    assert errors[3].startswith("release-manifests/c.yaml (document 2): ")
    assert errors[4].startswith("release-manifests/d.yaml (document 1): invalid YAML/JSON, line 1: ")
    assert all("\n" not in e for e in errors)


def test_non_utf8_json_file(make_release: ReleaseFactory) -> None:
    root = make_release({"a.json": b'{"kind": "\xff"}'})
    (error,) = load_error(root)
    assert error.startswith("release-manifests/a.json: not UTF-8 text")


# --- templates ------------------------------------------------------------------------------


def test_manifests_dir_is_rendered(make_release: ReleaseFactory) -> None:
    template = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cvo\n  namespace: openshift-cluster-version\n"
        "  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n"
        "    profile: {{ .ClusterProfile }}\n"
        "    literal: '{{ \"{{ $labels.name }}\" }}'\n"
        "spec:\n  image: '{{.ReleaseImage}}'\n  cli: {{index .Images \"cli\"}}\n  raw: {{ `back` }}\n"
        "  {{- /* a comment */}}\n  trimmed: x {{- \" y\" -}}  \n"
    )
    root = make_release({}, cvo_files={"0000_00_cvo_deployment.yaml": template},
                        images={"cli": "quay.io/ocp/cli@sha256:abc"})
    (m,) = load_release(root, release_image="quay.io/ocp/release:5.0",
                        load_filter=LoadFilter(profile="self-managed-high-availability")).manifests
    assert m.annotations["profile"] == "self-managed-high-availability"
    assert m.annotations["literal"] == "{{ $labels.name }}"
    assert m.obj["spec"] == {"image": "quay.io/ocp/release:5.0", "cli": "quay.io/ocp/cli@sha256:abc",
                             "raw": "back", "trimmed": "x y"}


def test_cluster_profile_follows_the_load_filter(make_release: ReleaseFactory) -> None:
    doc = ("kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: p\n  annotations:\n"
           "    include.release.openshift.io/hypershift: 'true'\ndata:\n  profile: {{ .ClusterProfile }}\n")
    root = make_release({}, cvo_files={"p.yaml": doc})
    (m,) = load_release(root, load_filter=LoadFilter(profile="hypershift")).manifests
    assert m.obj["data"] == {"profile": "hypershift"}


@pytest.mark.parametrize("action", [
    "{{ .Unknown }}", "{{ .ReleaseImage | printf \"%s\" }}", "{{ if true }}x{{ end }}", "{{ .ReleaseImage ",
    "{{ index .Images \"nope\" }}",
])
def test_unsupported_template_skips_the_file_with_a_reason(make_release: ReleaseFactory, action: str) -> None:
    root = make_release({}, cvo_files={"a.yaml": cm("kept"), "b.yaml": f"# {action}\n" + json.dumps(cm("gone"))})
    release = load_release(root)
    assert [m.name for m in release.all_manifests] == ["kept"]
    (skipped,) = release.skipped_files
    assert skipped.path == "manifests/b.yaml"
    assert skipped.reason.startswith("template: ") and skipped.reason.endswith("(skipped)")


def test_release_manifests_are_never_templated(make_release: ReleaseFactory) -> None:
    root = make_release({"a.yaml": obj("ConfigMap", "a", "ns", data={"image": "{{.ReleaseImage}}",
                                                                          "bad": "{{ .Unknown }}"})})
    (m,) = load_release(root, release_image="quay.io/x").manifests
    assert m.obj["data"] == {"image": "{{.ReleaseImage}}", "bad": "{{ .Unknown }}"}
    assert release_skipped(root) == []


def release_skipped(root: Path) -> list[str]:
    return [s.path for s in load_release(root).skipped_files]


# --- release-metadata and image-references --------------------------------------------------


def write_metadata(root: Path, data: object) -> None:
    path = root / "release-manifests" / "release-metadata"
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_release_metadata_fields(make_release: ReleaseFactory) -> None:
    root = make_release({"a.yaml": cm("a")}, version="4.16.3")
    write_metadata(root, {
        "kind": "cincinnati-metadata-v0", "version": "4.16.3", "previous": ["4.16.1", "4.15.9"], "next": ["4.16.4"],
        "metadata": {"url": "https://example.com/errata", "release.openshift.io/architecture": "multi",
                     "io.openshift.upgrades.graph.release.channels": "stable-4.16,,candidate-4.16,fast-4.16"},
    })
    meta = load_release(root).metadata
    assert meta is not None
    assert meta.version == "4.16.3"
    assert meta.previous == ("4.16.1", "4.15.9") and meta.next == ("4.16.4",)
    assert meta.channels == ("candidate-4.16", "fast-4.16", "stable-4.16")
    assert meta.url == "https://example.com/errata" and meta.architecture == "Multi"
    assert meta.warnings == ()


def test_release_metadata_warnings_do_not_fail_the_load(make_release: ReleaseFactory) -> None:
    root = make_release({"a.yaml": cm("a")})
    write_metadata(root, {"kind": "cincinnati-metadata-v0", "version": "4.16.0", "metadata": {
        "release.openshift.io/architecture": "amd64", "io.openshift.upgrades.graph.release.channels": ["a"]}})
    release = load_release(root)
    assert release.metadata is not None and release.metadata.architecture == ""
    assert len(release.warnings) == 2
    assert all(w.startswith("release-manifests/release-metadata: ") for w in release.warnings)


@pytest.mark.parametrize(("content", "problem"), [
    ({"kind": "cincinnati-metadata-v1", "version": "4.16.0"}, "unrecognized Cincinnati metadata kind"),
    ({"version": "4.16.0"}, "unrecognized Cincinnati metadata kind"),
    ({"kind": "cincinnati-metadata-v0"}, "'version' is required"),
    ({"kind": "cincinnati-metadata-v0", "version": ""}, "'version' is required"),
    ({"kind": "cincinnati-metadata-v0", "version": 4}, "'version' must be a string"),
    ({"kind": "cincinnati-metadata-v0", "version": "4.16"}, "not a semantic version"),
    ({"kind": "cincinnati-metadata-v0", "version": "v4.16.0"}, "not a semantic version"),
    ({"kind": "cincinnati-metadata-v0", "version": "4.16.0", "previous": "4.15.0"}, "'previous' must be a list"),
    ({"kind": "cincinnati-metadata-v0", "version": "4.16.0", "next": [1]}, "'next' must be a list"),
    ({"kind": "cincinnati-metadata-v0", "version": "4.16.0", "previous": ["4.15"]}, "'previous' entry"),
    ("{not json", "invalid JSON"),
    ("[]", "must be a JSON object"),
])
def test_bad_release_metadata(make_release: ReleaseFactory, content: object, problem: str) -> None:
    root = make_release({"a.yaml": cm("a")})
    write_metadata(root, content)
    (error,) = load_error(root)
    assert error.startswith("release-manifests/release-metadata: ")
    assert problem in error
    assert "\n" not in error


def test_missing_release_metadata_and_image_references(make_release: ReleaseFactory) -> None:
    root = make_release({"a.yaml": cm("a")})
    (root / "release-manifests" / "release-metadata").unlink()
    [error] = load_error(root)
    assert error.startswith(f"{root}/release-manifests/release-metadata: file not found: a release directory names "
                            "its version there") and error.endswith("add one, or pass --release-version X.Y.Z")
    root = make_release({"a.yaml": cm("a")}, name="other")
    (root / "release-manifests" / "image-references").unlink()
    (root / "release-manifests" / "image-references").mkdir()
    assert load_error(root) == [
        "release-manifests/image-references: is a directory, not a regular file (cvo reads only regular files)"]


@pytest.mark.parametrize(("content", "problem"), [
    ({"kind": "ImageStreamList", "apiVersion": "image.openshift.io/v1"}, "not a v1 ImageStream"),
    ({"kind": "ImageStream", "apiVersion": "image.openshift.io/v2"}, "not a v1 ImageStream"),
    ({"kind": "ImageStream", "apiVersion": "image.openshift.io/v1"}, "no metadata.name"),
    ({"kind": "ImageStream", "apiVersion": "image.openshift.io/v1", "metadata": ["x"]}, "no metadata.name"),
    ({"kind": "ImageStream", "apiVersion": "image.openshift.io/v1", "metadata": {"name": "4.16.0"},
      "spec": "tags"}, "spec must be an object"),
    ({"kind": "ImageStream", "apiVersion": "image.openshift.io/v1", "metadata": {"name": "4.16.0"},
      "spec": {"tags": [{"name": "cli"}]}}, "spec.tags[0] (cli) has no from.name"),
    ({"kind": "ImageStream", "apiVersion": "image.openshift.io/v1", "metadata": {"name": "4.15.0"}},
     "version from image-references (4.15.0) differs from release-metadata (4.16.0)"),
    ("kind: [", "invalid YAML/JSON"),
    (b'{"kind": "ImageStream\xff"', "not UTF-8 text"),
])
def test_bad_image_references(make_release: ReleaseFactory, content: object, problem: str) -> None:
    root = make_release({"a.yaml": cm("a")})
    target = root / "release-manifests" / "image-references"
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content if isinstance(content, str) else json.dumps(content))
    (error,) = load_error(root)
    assert error.startswith("release-manifests/image-references: ")
    assert problem in error


def test_image_references_may_be_yaml(make_release: ReleaseFactory) -> None:
    root = make_release({"a.yaml": cm("a")})
    (root / "release-manifests" / "image-references").write_text(
        "kind: ImageStream\napiVersion: image.openshift.io/v1\nmetadata:\n  name: 4.16.0\n"
        "spec:\n  tags:\n  - name: cli\n    from: {kind: DockerImage, name: quay.io/cli}\n")
    refs = load_release(root).image_references
    assert refs is not None and refs.images == {"cli": "quay.io/cli"}


def test_expected_version_must_match_release_metadata(make_release: ReleaseFactory) -> None:
    root = make_release({"a.yaml": cm("a")}, version="4.16.2")
    assert load_release(root, version="4.16.2").version == "4.16.2"
    (error,) = load_error(root, version="4.16.3")
    assert "4.16.2 does not match the expected version 4.16.3" in error


# --- parse cache ----------------------------------------------------------------------------


class CountingParser:
    """Replaces ``loader.parse_headers``: records which files were parsed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parsed: list[str] = []
        self._real = loader.parse_headers
        monkeypatch.setattr(loader, "parse_headers", self)

    def __call__(self, data: bytes, path: str) -> Any:
        self.parsed.append(path)
        return self._real(data, path)


class RecordingCache(cache_mod.ParseCache):
    instances: ClassVar[list[RecordingCache]] = []

    def __init__(self, directory: Path, release_dir: Path) -> None:
        super().__init__(directory, release_dir)
        RecordingCache.instances.append(self)


@pytest.fixture
def recording_cache(monkeypatch: pytest.MonkeyPatch) -> list[RecordingCache]:
    RecordingCache.instances = []
    monkeypatch.setattr(loader, "ParseCache", RecordingCache)
    return RecordingCache.instances


def cached_release(make_release: ReleaseFactory) -> Path:
    return make_release(
        {"0000_10_a_x.yaml": [cm("a1"), cm("a2")], "0000_20_b_x.yaml": cm("b"), "0000_30_c_x.json": json.dumps(cm("c"))},
        cvo_files={"0000_00_cvo_x.yaml": "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: t\n  annotations:\n"
                                         "    include.release.openshift.io/self-managed-high-availability: 'true'\n"
                                         "data:\n  image: '{{.ReleaseImage}}'\n"},
    )


def test_second_load_is_served_from_the_cache(make_release: ReleaseFactory, cache_dir: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               recording_cache: list[RecordingCache]) -> None:
    root = cached_release(make_release)
    counter = CountingParser(monkeypatch)
    first = load_release(root)
    assert sorted(counter.parsed) == sorted(paths(first.all_manifests)[i] for i in (0, 1, 3, 4))
    assert recording_cache[0].hits == 0
    assert list((cache_dir / "parse").glob("*.pack"))

    counter.parsed.clear()
    second = load_release(root)
    assert counter.parsed == []
    assert recording_cache[1].hits == 4
    assert snapshot(second) == snapshot(first)
    assert [m.annotations for m in second.all_manifests] == [m.annotations for m in first.all_manifests]


def test_editing_one_file_reparses_only_that_file(make_release: ReleaseFactory, cache_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = cached_release(make_release)
    load_release(root)
    counter = CountingParser(monkeypatch)
    (root / "release-manifests" / "0000_20_b_x.yaml").write_text(json.dumps(cm("b-edited")))
    release = load_release(root)
    assert counter.parsed == ["release-manifests/0000_20_b_x.yaml"]
    assert [m.name for m in release.all_manifests] == ["t", "a1", "a2", "b-edited", "c"]


def test_a_different_release_image_rerenders_and_reparses_the_template(make_release: ReleaseFactory,
                                                                       cache_dir: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = cached_release(make_release)
    load_release(root, release_image="quay.io/a")
    counter = CountingParser(monkeypatch)
    release = load_release(root, release_image="quay.io/b")
    assert counter.parsed == ["manifests/0000_00_cvo_x.yaml"]
    assert release.all_manifests[0].obj["data"] == {"image": "quay.io/b"}


def test_no_cache_parses_every_time_and_writes_nothing(make_release: ReleaseFactory, cache_dir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = cached_release(make_release)
    counter = CountingParser(monkeypatch)
    load_release(root, use_cache=False)
    load_release(root, use_cache=False)
    assert len(counter.parsed) == 8
    assert not cache_dir.exists()


def test_a_corrupt_cache_is_ignored(make_release: ReleaseFactory, cache_dir: Path) -> None:
    root = cached_release(make_release)
    first = load_release(root)
    (pack,) = (cache_dir / "parse").glob("*.pack")
    pack.write_bytes(cache_mod.FORMAT + b"garbage")
    assert snapshot(load_release(root)) == snapshot(first)
    pack.write_bytes(b"old-format\n")
    assert snapshot(load_release(root)) == snapshot(first)


def test_errors_are_not_cached(make_release: ReleaseFactory, cache_dir: Path) -> None:
    root = make_release({"a.yaml": "kind: [\n", "b.yaml": cm("b")})
    first = load_error(root)
    assert load_error(root) == first


# --- parallel parsing -----------------------------------------------------------------------


def probe(root: Path) -> dict[str, Any]:
    """Serial and forked-parallel loads of root, in a fresh interpreter with no other thread (see the probe)."""
    import subprocess
    import sys
    here = Path(__file__).resolve().parents[1] / "support"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parents[1]), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(here / "parallel_load_probe.py"), str(root)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def parallel_release(make_release: ReleaseFactory) -> Path:
    files: dict[str, object] = {}
    for i in range(12):
        files[f"0000_{i:02d}_c{i % 3}_x.yaml"] = [cm(f"m{i}-{j}") for j in range(1 + i % 4)]
    files["0000_99_big_x.yaml"] = obj("ConfigMap", "big", "ns", data={f"k{i}": "v" * 50 for i in range(3000)})
    return make_release(files, cvo_files={"0000_00_cvo_x.json": json.dumps(cm("cvo"))})


def test_parallel_parser_gives_exactly_the_serial_result(make_release: ReleaseFactory) -> None:
    result = probe(parallel_release(make_release))
    serial, parallel = result["serial"], result["parallel"]
    assert serial["pools"] == []
    assert parallel["pools"] == ["fork"]
    assert len(serial["manifests"]) == 32
    assert parallel["manifests"] == serial["manifests"]
    assert parallel["annotations"] == serial["annotations"]
    shared = result["shared"]
    assert all(shared["squares"]) and len(shared["squares"]) == 1500
    assert shared["dies"] is True
    assert shared["progress"] == [True, True]  # this process's progress counts every participant's claims
    assert (shared["empty"], shared["one"]) == ({}, {"4": 16})


def test_parallel_parser_reports_the_same_errors_in_the_same_order(make_release: ReleaseFactory) -> None:
    files: dict[str, object] = {f"f{i}.yaml": cm(f"c{i}") for i in range(6)}
    files["f5.yaml"] = "x" * 5000 + ": [\n"  # the biggest file: the first worker parses it first
    files["f0.yaml"] = "kind: [\n"
    files["f2.yaml"] = [cm("d"), cm("d")]
    result = probe(make_release(files))
    serial, parallel = result["serial"], result["parallel"]
    assert parallel["pools"] == ["fork"]
    assert parallel["errors"] == serial["errors"]
    assert [e.split(" ")[0] for e in serial["errors"]] == ["release-manifests/f0.yaml", "release-manifests/f2.yaml",
                                                           "release-manifests/f5.yaml"]


def test_no_parser_processes_are_forked_while_other_threads_run(corpus: Path, monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """fork() copies only the calling thread, so a lock another thread holds stays locked in the child: a
    test run once hung in a forked parser.  With another thread alive the loader parses in its own process."""
    import threading

    def no_fork(*args: object, **kwargs: object) -> None:
        raise AssertionError("a parser process was started while another thread ran")

    monkeypatch.setattr(os, "fork", no_fork)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        release = load_release(corpus, use_cache=False, jobs=2)
    finally:
        stop.set()
        other.join()
    assert len(release.manifests) == 1002


def test_a_warm_load_keeps_no_file_bytes_the_cache_has_parsed(make_release: ReleaseFactory, cache_dir: Path) -> None:
    """Reading a release with the parse cache loaded drops each cached file's bytes as it goes: a 20x
    corpus's files are 330 MB, which a sweep held beside the cache's entries and the cluster's state."""
    from cvo.payload.cache import ParseCache, default_cache_dir
    from cvo.payload.loader import finish_release, read_release

    root = cached_release(make_release)
    first = load_release(root)
    (root / "release-manifests" / "0000_20_b_x.yaml").write_text(json.dumps(cm("b2")))
    cache = ParseCache(default_cache_dir(), root)
    cache.load()
    read = read_release(root, parse_cache=cache)
    by_path = {s.path: s for s in read.sources}
    assert by_path["release-manifests/0000_20_b_x.yaml"].data  # edited: to be parsed
    assert by_path["release-manifests/0000_20_b_x.yaml"].headers is None
    kept = [s for p, s in by_path.items() if p != "release-manifests/0000_20_b_x.yaml"]
    assert kept and all(s.data == b"" and s.headers for s in kept)
    second = finish_release(read, parse_cache=cache)
    cache.close()
    assert [m.name for m in second.all_manifests] == [m.name if m.name != "b" else "b2" for m in first.all_manifests]
