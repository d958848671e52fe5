"""cvo release info's core (cvo.images.info): oc adm release info's fields, its text as Go's tabwriter aligns
it (the golden strings were printed by Go 1.2x running oc's format strings), component versions, -o json."""

from __future__ import annotations

import orjson
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.images import media
from cvo.images.build import build_release
from cvo.images.errors import ImageError
from cvo.images.info import (
    ComponentVersion,
    ReleaseImage,
    ReleaseInfo,
    describe,
    go_value,
    parse_component_versions,
    read_component_versions,
    render_text,
    rfc3339,
    tabwrite,
    to_dict,
)
from cvo.images.layout import OciLayout
from cvo.images.manifest import ImageConfig
from cvo.images.pull import PullOptions, pull_release
from tests.support.helpers import PAYLOADS
from tests.support.oci_images import put_raw

# Printed by Go's text/tabwriter with oc's describeReleaseInfo format strings and values as below.
GOLDEN = ("Name:           4.16.0\nDigest:         sha256:abc\nCreated:        2024-06-01T10:20:30Z\n"
          "OS/Arch:        multi (linux/arm64)\nManifests:      12\nMetadata files: 1\n\n"
          "Pull From: quay.io/x/y@sha256:abc\n\nRelease Metadata:\n  Version:  4.16.0\n"
          "  Upgrades: 4.15.2, 4.15.10\n  Metadata:\n"
          "    io.openshift.upgrades.graph.release.channels: a,b\n"
          "    n:                                            map[a:1.5e+21 b:[1 x] c:true]\n"
          "    url:                                          https://x\n\nComponent Versions:\n"
          "  kubernetes 1.29.5        \n  machine-os 416.94.202406 Red Hat Enterprise Linux CoreOS\n\n"
          "Images:\n  NAME                     DIGEST\n  cli                      sha256:1\n"
          "  cluster-version-operator quay.io/x:latest\n\nWarnings:\n* w1\n\n")


def test_the_text_is_laid_out_as_oc_prints_it() -> None:
    info = ReleaseInfo(
        image="quay.io/x/y:4.16.0", name="4.16.0", digest="sha256:def", list_digest="sha256:abc",
        pull_from="quay.io/x/y@sha256:abc",
        config=ImageConfig(created="2024-06-01T12:20:30.123456789+02:00", os="linux", architecture="arm64"),
        manifests=12, metadata_files=1,
        metadata={"version": "4.16.0", "previous": ["4.15.10", "4.15.2"], "metadata": {
            "url": "https://x", "io.openshift.upgrades.graph.release.channels": "a,b", "empty": "", "none": [],
            "n": {"b": [1, "x"], "a": 1.5e21, "c": True}}},
        references={}, images=(ReleaseImage("cli", "quay.io/x@sha256:1"),
                               ReleaseImage("cluster-version-operator", "quay.io/x:latest")),
        component_versions={"machine-os": ComponentVersion("416.94.202406", "Red Hat Enterprise Linux CoreOS"),
                            "kubernetes": ComponentVersion("1.29.5")},
        warnings=("w1",))
    assert render_text(info) == GOLDEN


def test_tabwrite_is_go_s_tabwriter() -> None:
    # Go: tabwriter.NewWriter(os.Stdout, 0, 4, 1, ' ', 0) over the same text
    assert tabwrite("a\tbb\tc\n\tx\n\t\ty\nlong cell\tz\n") == "a         bb c\n          x\n           y\nlong cell z\n"
    assert tabwrite("no cells\n") == "no cells\n"


def test_go_value_is_go_s_percent_v_of_decoded_json() -> None:
    # Go: json.Unmarshal into interface{}, then fmt.Printf("%v")
    values = orjson.loads(b'{"a": 123456, "b": 1234567, "c": 0.0001, "d": 0.00001, "e": 100000, "f": 1000000, '
                          b'"g": -2.5, "h": [1, "x", null, true, {"z": 1, "y": [2]}], "i": 1e300, "j": 0}')
    assert {k: go_value(v) for k, v in values.items()} == {
        "a": "123456", "b": "1.234567e+06", "c": "0.0001", "d": "1e-05", "e": "100000", "f": "1e+06", "g": "-2.5",
        "h": "[1 x <nil> true map[y:[2] z:1]]", "i": "1e+300", "j": "0"}


def test_created_is_utc_whole_seconds_or_go_s_zero_time() -> None:
    assert rfc3339("2024-06-01T12:20:30.999999999+02:00") == "2024-06-01T10:20:30Z"
    assert rfc3339("2024-06-01T10:20:30Z") == "2024-06-01T10:20:30Z"
    assert rfc3339("") == "0001-01-01T00:00:00Z"
    assert rfc3339("yesterday") == "yesterday"


# -- real images ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_info(tmp_path_factory: pytest.TempPathFactory, corpus) -> ReleaseInfo:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("info") / "corpus"
    build_release(corpus, f"oci:{out}", PullOptions(architecture="amd64"))
    pulled = pull_release(f"oci:{out}", PullOptions(cache_dir=out.parent / "cache"))
    return describe(pulled, f"oci:{out}")


def test_the_corpus_described(corpus_info: ReleaseInfo, corpus) -> None:  # type: ignore[no-untyped-def]
    info = corpus_info
    version = "5.0.0-0.nightly-2026-08-22-120000"
    refs = orjson.loads((corpus / "release-manifests/image-references").read_bytes())
    assert info.name == version and info.list_digest == "" and info.platform == "linux/amd64"
    assert info.manifests == len(list((corpus / "release-manifests").iterdir())) - 2 and info.metadata_files == 0
    assert info.component_versions == {"kubectl": ComponentVersion("1.36.2"), "kubernetes": ComponentVersion("1.36.2")}
    assert [i.name for i in info.images] == [t["name"] for t in refs["spec"]["tags"]]
    assert info.images[0].digest == refs["spec"]["tags"][0]["from"]["name"].split("@")[1]
    text = render_text(info)
    assert text.startswith(f"Name:      {version}\nDigest:    {info.digest}\nCreated:   2026-08-22T12:00:00Z\n"
                           f"OS/Arch:   linux/amd64\nManifests: {info.manifests}\n\nPull From: {info.pull_from}\n\n"
                           f"Release Metadata:\n  Version:  {version}\n  Upgrades: <none>\n  Metadata:\n\n"
                           "Component Versions:\n  kubectl    1.36.2 \n  kubernetes 1.36.2 \n\nImages:\n  NAME ")
    doc = to_dict(info)
    assert doc["digest"] == doc["contentDigest"] == info.digest and doc["listDigest"] == ""
    assert doc["references"] == refs and doc["metadata"]["version"] == version
    assert doc["config"]["config"]["Labels"]["io.openshift.release"] == version
    assert doc["versionsTags"] == {"kubectl": "cli-artifacts", "kubernetes": "hyperkube"}
    assert orjson.loads(orjson.dumps(doc)) == doc and yaml.safe_load(yaml.safe_dump(doc)) == doc


def test_a_demo_release_shows_its_metadata_and_upgrades(tmp_path) -> None:  # type: ignore[no-untyped-def]
    build_release(PAYLOADS / "demo-4.16.0", f"oci:{tmp_path / 'demo'}")
    info = describe(pull_release(f"oci:{tmp_path / 'demo'}"))
    text = render_text(info)
    assert "  Version:  4.16.0\n  Upgrades: 4.15.17, 4.15.18\n  Metadata:\n" in text
    assert ("    io.openshift.upgrades.graph.release.channels: stable-4.16,fast-4.16,candidate-4.16\n"
            "    url:                                          https://demo.example.com/releases/4.16.0\n") in text
    assert "Component Versions" not in text and "Warnings" not in text


def test_an_index_is_described_as_multi_with_its_digest(tmp_path) -> None:  # type: ignore[no-untyped-def]
    built = build_release(PAYLOADS / "demo-4.16.3", f"oci:{tmp_path / 'm'}:amd64", PullOptions(architecture="amd64"))
    layout = OciLayout(tmp_path / "m")
    raw = layout.get_manifest("amd64")
    index = orjson.dumps({"schemaVersion": 2, "mediaType": media.OCI_INDEX, "manifests": [
        {"mediaType": raw.media_type, "digest": raw.digest, "size": len(raw.data),
         "platform": {"os": "linux", "architecture": "amd64"}}]})
    index_digest = put_raw(layout, "4.16.3", index, media.OCI_INDEX)
    pulled = pull_release(f"oci:{tmp_path / 'm'}:4.16.3", PullOptions(architecture="multi"))
    info = describe(pulled)
    assert info.platform == "multi (linux/amd64)" and info.shown_digest == index_digest
    assert to_dict(info)["digest"] == built.digest and to_dict(info)["listDigest"] == index_digest
    assert f"Digest:    {index_digest}\n" in render_text(info)


def test_a_release_whose_metadata_cannot_be_read_is_one_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    build_release(PAYLOADS / "demo-4.16.0", f"oci:{tmp_path / 'demo'}")
    pulled = pull_release(f"oci:{tmp_path / 'demo'}")
    (pulled.directory / "release-manifests/image-references").write_text("[]")
    with pytest.raises(ImageError, match="release image could not be read: release-manifests/image-references: "
                                         "must hold exactly one ImageStream object"):
        describe(pulled, "oci:demo")


# -- component versions ---------------------------------------------------------------------------------


def tag(name: str, versions: str, names: str = "") -> dict:
    notes = {"io.openshift.build.versions": versions}
    if names:
        notes["io.openshift.build.version-display-names"] = names
    return {"name": name, "annotations": notes, "from": {"kind": "DockerImage", "name": f"q.io/r@sha256:{name}"}}


def test_component_versions_as_oc_reads_them() -> None:
    versions, tags, warnings = read_component_versions([
        tag("hyperkube", "kubernetes=1.29.5+abc"),
        tag("machine-os-content", "machine-os=416.94.1", "machine-os=Red Hat Enterprise Linux CoreOS"),
        tag("rhel-coreos-9", "machine-os=417.94.2", "machine-os=Red Hat Enterprise Linux CoreOS"),
        tag("oc-mirror", "kubectl=1.28.0"), tag("cli", "kubectl=1.29.5"),
    ])
    assert versions == {"kubernetes": ComponentVersion("1.29.5"),
                        "machine-os": ComponentVersion("416.94.1", "Red Hat Enterprise Linux CoreOS"),
                        "kubectl": ComponentVersion("1.29.5")}
    assert tags["kubectl"] == "cli" and warnings == []


def test_conflicting_and_invalid_component_versions_are_warnings() -> None:
    _, _, warnings = read_component_versions([
        tag("a", "kubernetes=1.29.5"), tag("b", "kubernetes=1.29.6"), tag("c", "kubernetes=one"),
        tag("d", "x=1.0.0"),
    ])
    assert warnings == [
        'the referenced image c had an invalid version annotation: the version pair "kubernetes=one" must have a '
        "valid semantic version: No Major.Minor.Patch elements found",
        'the referenced image d had an invalid version annotation: the version name "x" must be at least 2 characters',
        "multiple versions or display names reported for the following component(s): kubernetes"]


@pytest.mark.parametrize(("label", "names", "message"), [
    ("kubernetes", "", 'the version pair "kubernetes" must be NAME=VERSION'),
    ("Kube=1.0.0", "", 'the version name "Kube" must only be ASCII alphanumerics and internal hyphens'),
    ("kube=1.0.0", "kube", 'the display name pair "kube" must be NAME=DISPLAYNAME'),
    ("kube=1.0.0", "kube=K<8>s", 'the display name "K<8>s" must only be alphanumerics, spaces, and symbols in'),
])
def test_parse_component_versions_refuses_with_oc_s_messages(label: str, names: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_component_versions(label, names)


_json = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                 max_size=3), max_leaves=10)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["name", "annotations", "from"]), st.one_of(_json, st.dictionaries(
    st.sampled_from(["io.openshift.build.versions", "io.openshift.build.version-display-names"]),
    st.text(alphabet="akube-=,.0123 ", max_size=20))), max_size=3), max_size=5))
def test_any_tags_give_versions_or_warnings(tags: list) -> None:
    read_component_versions(tags)


@settings(max_examples=200, deadline=None)
@given(_json)
def test_go_value_formats_any_json_value(value: object) -> None:
    assert isinstance(go_value(value), str)
