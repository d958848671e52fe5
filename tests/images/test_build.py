"""cvo release new's core (cvo.images.build): a release directory built as oc adm release new lays a release
image out, checked with skopeo and tarfile (not with cvo's own reader), reproducibly, on a base image or not."""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import orjson
import pytest

from cvo.images import media
from cvo.images.build import build_release
from cvo.images.errors import ImageError, Problem
from cvo.images.pull import PullOptions, pull_release
from tests.support.helpers import PAYLOADS
from tests.support.oci_images import digest_of, entry, image_manifest, payload_tree, tar_bytes, write_index

SKOPEO = "/usr/bin/skopeo"
VERSION = "5.0.0-0.nightly-2026-08-22-120000"


def skopeo(*args: str) -> str:
    done = subprocess.run([SKOPEO, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def blob(layout: Path, digest: str) -> bytes:
    return (layout / "blobs/sha256" / digest.removeprefix("sha256:")).read_bytes()


def members(layer: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(layer))) as tar:
        return tar.getmembers()


@pytest.fixture(scope="module")
def corpus_image(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("build") / "corpus"
    built = build_release(corpus, f"oci:{out}", PullOptions(architecture="amd64"))
    return out, built.digest


def test_the_corpus_is_built_as_oc_lays_a_release_image_out(corpus_image: tuple[Path, str], corpus: Path) -> None:
    out, digest = corpus_image
    inspected = orjson.loads(skopeo("inspect", f"oci:{out}:{VERSION}"))
    assert inspected["Digest"] == digest
    assert inspected["Architecture"] == "amd64" and inspected["Os"] == "linux"
    assert inspected["Created"] == "2026-08-22T12:00:00Z"  # the image-references creationTimestamp
    labels = inspected["Labels"]
    assert labels["io.openshift.release"] == VERSION
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", labels["io.openshift.release.base-image-digest"])
    raw = orjson.loads(skopeo("inspect", "--raw", f"oci:{out}:{VERSION}"))
    assert raw["mediaType"] == media.OCI_MANIFEST and raw["config"]["mediaType"] == media.OCI_CONFIG
    assert [layer["mediaType"] for layer in raw["layers"]] == [media.OCI_LAYER_GZIP] * 2
    base, release = (members(blob(out, layer["digest"])) for layer in raw["layers"])
    assert {m.name.split("/")[0] for m in base} == {"manifests"}
    assert {m.name.split("/")[0] for m in release} == {"release-manifests"}
    assert [m.name for m in release][1:] == sorted(f"release-manifests/{p.name}"
                                                   for p in (corpus / "release-manifests").iterdir())
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in base + release} == {(0, 0, "", "", 1787400000)}
    config = orjson.loads(blob(out, raw["config"]["digest"]))
    assert config["rootfs"]["diff_ids"] == [digest_of(gzip.decompress(blob(out, layer["digest"])))
                                            for layer in raw["layers"]]
    # The base image the label names is in the layout, and holds the first layer alone.
    base_manifest = orjson.loads(blob(out, labels["io.openshift.release.base-image-digest"]))
    assert [layer["digest"] for layer in base_manifest["layers"]] == [raw["layers"][0]["digest"]]


def test_skopeo_copies_the_built_image_and_cvo_pulls_the_copy_back(corpus_image: tuple[Path, str], corpus: Path,
                                                                   tmp_path: Path) -> None:
    out, digest = corpus_image
    skopeo("copy", "--quiet", f"oci:{out}:{VERSION}", f"dir:{tmp_path / 'dir'}")
    skopeo("copy", "--quiet", f"dir:{tmp_path / 'dir'}", f"oci:{tmp_path / 'copy'}:again")
    pulled = pull_release(f"oci:{tmp_path / 'copy'}:again")
    assert pulled.digest == digest
    assert payload_tree(pulled.directory) == payload_tree(corpus)


def test_the_same_directory_gives_the_same_digest(corpus_image: tuple[Path, str], corpus: Path,
                                                  tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(corpus, copy)
    for path in copy.rglob("*"):
        os.utime(path, (1_000_000_000, 1_000_000_000))
    again = build_release(copy, f"oci:{tmp_path / 'again'}", PullOptions(architecture="amd64"))
    assert again.digest == corpus_image[1]


def test_docker_media_types_on_request_with_the_same_layers(corpus_image: tuple[Path, str], corpus: Path,
                                                            tmp_path: Path) -> None:
    built = build_release(corpus, f"oci:{tmp_path / 'docker'}:v1", PullOptions(architecture="amd64"), oci=False)
    # skopeo 1.9 finds a Docker manifest in a layout only as its only entry, not by tag
    raw = orjson.loads(skopeo("inspect", "--raw", f"oci:{tmp_path / 'docker'}"))
    assert raw["mediaType"] == media.DOCKER_MANIFEST and raw["config"]["mediaType"] == media.DOCKER_CONFIG
    assert [layer["mediaType"] for layer in raw["layers"]] == [media.DOCKER_LAYER_GZIP] * 2
    oci = orjson.loads(blob(corpus_image[0], corpus_image[1]))
    assert [d["digest"] for d in raw["layers"]] == [d["digest"] for d in oci["layers"]]
    assert built.ref.tag == "v1" and built.pull_spec == f"oci:{tmp_path / 'docker'}@{built.digest}"
    skopeo("copy", "--quiet", f"oci:{tmp_path / 'docker'}", f"dir:{tmp_path / 'dir'}")
    assert pull_release(f"oci:{tmp_path / 'docker'}:v1").manifest.media_type == media.DOCKER_MANIFEST


@pytest.mark.parametrize("version", ["4.16.0", "4.16.3", "4.17.0"])
def test_the_demo_releases_build_and_pull_back(version: str, tmp_path: Path) -> None:
    source = PAYLOADS / f"demo-{version}"
    built = build_release(source, f"oci:{tmp_path / 'demo'}")
    assert built.ref.tag == version and built.name == version
    assert built.created == "1970-01-01T00:00:00Z"  # no creationTimestamp, no SOURCE_DATE_EPOCH
    pulled = pull_release(f"oci:{tmp_path / 'demo'}:{version}")
    assert pulled.config.release == version
    assert payload_tree(pulled.directory) == payload_tree(source)


def test_created_from_source_date_epoch_or_given(make_release, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    release = make_release({"a.yaml": {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "a"}}})
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert build_release(release, f"oci:{tmp_path / 'a'}").created == "2023-11-14T22:13:20Z"
    given = build_release(release, f"oci:{tmp_path / 'b'}", created="2024-02-03T04:05:06Z")
    assert given.created == given.config.created == "2024-02-03T04:05:06Z"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "soon")
    with pytest.raises(ImageError, match="SOURCE_DATE_EPOCH 'soon' is not a number of seconds"):
        build_release(release, f"oci:{tmp_path / 'c'}")


def test_a_base_image_gives_the_lower_layers_and_its_config(make_release, tmp_path: Path) -> None:
    base_dir = tmp_path / "base"
    cvo_layer = tar_bytes({"manifests": None, "manifests/0000_00_cvo.yaml": b"kind: Namespace\n",
                           "manifests/stale.yaml": b"old\n", "usr/bin/cluster-version-operator": b"\x7fELF",
                           "release-manifests": None, "release-manifests/old-file.yaml": b"from a lower layer\n"})
    data, base_digest = image_manifest(base_dir, [cvo_layer], architecture="arm64", oci=False)
    write_index(base_dir, [entry(data, base_digest, tag="cvo", media_type=media.DOCKER_MANIFEST)])
    base_config = orjson.loads(blob(base_dir, orjson.loads(data)["config"]["digest"]))
    release = make_release({"a.yaml": {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "a"}}},
                           version="4.18.0")
    shutil.rmtree(release / "manifests")
    built = build_release(release, f"oci:{tmp_path / 'out'}", base=f"oci:{base_dir}:cvo")
    assert built.base_digest == base_digest
    assert built.config.labels["io.openshift.release.base-image-digest"] == base_digest
    assert built.config.architecture == "arm64"  # the base's platform
    assert [d.digest for d in built.manifest.layers][:1] == [orjson.loads(data)["layers"][0]["digest"]]
    config = orjson.loads(blob(tmp_path / "out", built.manifest.config.digest))
    assert len(config["rootfs"]["diff_ids"]) == 2 and config["rootfs"]["diff_ids"][0] == \
        base_config["rootfs"]["diff_ids"][0]
    release_members = [m.name for m in members(blob(tmp_path / "out", built.manifest.layers[1].digest))]
    assert release_members[:2] == ["release-manifests", "release-manifests/.wh..wh..opq"]
    skopeo("copy", "--quiet", f"oci:{tmp_path / 'out'}:4.18.0", f"dir:{tmp_path / 'dir'}")
    pulled = pull_release(f"oci:{tmp_path / 'out'}:4.18.0", PullOptions(architecture="arm64"))
    files = payload_tree(pulled.directory)
    assert files["manifests/0000_00_cvo.yaml"] == b"kind: Namespace\n"
    assert "release-manifests/old-file.yaml" not in files  # the opaque whiteout hid the base's
    assert files["release-manifests/a.yaml"] == (release / "release-manifests/a.yaml").read_bytes()


# -- bad input ------------------------------------------------------------------------------------------


def test_a_digest_as_destination_is_refused(make_release, tmp_path: Path) -> None:
    release = make_release({})
    with pytest.raises(ImageError, match="may only name a repository or a tag, not a digest") as err:
        build_release(release, f"oci:{tmp_path}@sha256:{'0' * 64}")
    assert err.value.problem is Problem.INVALID


def test_a_directory_that_is_not_a_release_is_refused(make_release, tmp_path: Path) -> None:
    with pytest.raises(ImageError, match=re.escape(f"{tmp_path}/none/release-manifests/release-metadata: ")):
        build_release(tmp_path / "none", f"oci:{tmp_path / 'out'}")
    release = make_release({})
    (release / "release-manifests/release-metadata").write_text('{"kind": "cincinnati-metadata-v0"}')
    with pytest.raises(ImageError, match="release-metadata: 'version' is required"):
        build_release(release, f"oci:{tmp_path / 'out'}")
    assert not (tmp_path / "out").exists()


def test_no_manifests_directory_without_a_base_is_refused(make_release, tmp_path: Path) -> None:
    release = make_release({})
    shutil.rmtree(release / "manifests")
    with pytest.raises(ImageError, match="manifests: no such directory"):
        build_release(release, f"oci:{tmp_path / 'out'}")


def test_special_files_and_directory_links_are_refused(make_release, tmp_path: Path) -> None:
    release = make_release({})
    os.mkfifo(release / "release-manifests/fifo")
    with pytest.raises(ImageError, match=r"release-manifests/fifo: .*FIFO"):
        build_release(release, f"oci:{tmp_path / 'out'}")
    os.unlink(release / "release-manifests/fifo")
    os.symlink(tmp_path, release / "manifests/elsewhere")
    with pytest.raises(ImageError, match="a symbolic link to a directory cannot be built"):
        build_release(release, f"oci:{tmp_path / 'out'}")
    os.unlink(release / "manifests/elsewhere")
    (tmp_path / "target.yaml").write_text("kind: Namespace\n")
    os.symlink(tmp_path / "target.yaml", release / "manifests/linked.yaml")  # a link to a file is its content
    built = build_release(release, f"oci:{tmp_path / 'out'}")
    names = {m.name: m for m in members(blob(tmp_path / "out", built.manifest.layers[0].digest))}
    assert names["manifests/linked.yaml"].isfile() and names["manifests/linked.yaml"].size == 16
