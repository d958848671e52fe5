"""Pulling release images (cvo.images.pull, cvo.images.cache): identical trees back, the cache keyed by
manifest digest (no blob request the second time, no request at all by digest), platforms of an index,
damaged cache entries pulled again, concurrent pulls, and images that are not releases."""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import threading
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvo.images import media
from cvo.images.build import build_release
from cvo.images.cache import PullCache
from cvo.images.errors import ImageError, Problem
from cvo.images.layout import OciLayout
from cvo.images.manifest import ImageIndex
from cvo.images.pull import PullOptions, pull_release, resolve, select_platform
from cvo.images.repository import Descriptor, Platform, RawManifest
from cvo.payload.arch import go_arch
from tests.support.helpers import PAYLOADS
from tests.support.oci_images import (
    digest_of,
    entry,
    image_manifest,
    payload_tree,
    put_raw,
    release_layers,
    tar_bytes,
    write_index,
)

DEMO = PAYLOADS / "demo-4.16.0"


def options(tmp_path: Path, **kw: object) -> PullOptions:
    return PullOptions(cache_dir=tmp_path / "cache", **kw)  # type: ignore[arg-type]


@pytest.fixture
def demo_image(tmp_path: Path) -> str:
    built = build_release(DEMO, f"oci:{tmp_path / 'demo'}", PullOptions(architecture="amd64"))
    return f"oci:{tmp_path / 'demo'}:{built.ref.tag}"


def test_the_corpus_comes_back_identical(corpus: Path, tmp_path: Path) -> None:
    built = build_release(corpus, f"oci:{tmp_path / 'c'}")
    pulled = pull_release(f"oci:{tmp_path / 'c'}", options(tmp_path))
    assert payload_tree(pulled.directory) == payload_tree(corpus)
    assert sorted(p.name for p in pulled.directory.iterdir()) == ["manifests", "release-manifests"]
    assert pulled.digest == built.digest and pulled.manifest.digest == built.digest and pulled.index is None
    assert pulled.pull_spec == f"oci:{tmp_path / 'c'}@{built.digest}"
    assert pulled.config.release == built.name and pulled.stats.blob_requests == 3  # config + 2 layers


def test_a_second_pull_sends_no_blob_request_and_by_digest_no_request_at_all(demo_image: str,
                                                                             tmp_path: Path) -> None:
    first = pull_release(demo_image, options(tmp_path))
    assert (first.stats.manifest_requests, first.stats.blob_requests, first.stats.cached) == (1, 3, False)
    again = pull_release(demo_image, options(tmp_path))
    assert (again.stats.manifest_requests, again.stats.blob_requests, again.stats.cached) == (1, 0, True)
    assert again.directory == first.directory and again.digest == first.digest
    shutil.rmtree(tmp_path / "demo")  # the image is gone: only the cache can answer
    by_digest = pull_release(first.pull_spec, options(tmp_path))
    assert (by_digest.stats.manifest_requests, by_digest.stats.blob_requests) == (0, 0)
    assert payload_tree(by_digest.directory) == payload_tree(DEMO)
    assert by_digest.config.release == "4.16.0"
    with pytest.raises(ImageError, match="no such directory"):
        pull_release(demo_image, options(tmp_path))  # a tag still needs its one manifest request


def test_resolve_gives_the_tag_s_digest_and_a_digest_as_it_is(demo_image: str, tmp_path: Path) -> None:
    pulled = pull_release(demo_image, options(tmp_path))
    ref, digest = resolve(demo_image, options(tmp_path))
    assert digest == pulled.digest and ref.tag == "4.16.0"
    missing = f"oci:{tmp_path / 'absent'}@{pulled.digest}"
    assert resolve(missing, options(tmp_path))[1] == pulled.digest  # no request for a digest


def test_the_default_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CVO_CACHE_DIR", str(tmp_path / "here"))
    assert PullOptions().cache_dir == tmp_path / "here/images"
    assert PullOptions().architecture == go_arch() and PullOptions().timeout == 60.0


# -- damaged cache entries and concurrent pulls ---------------------------------------------------------


@pytest.mark.parametrize("damage", ["edit", "truncate", "delete", "add", "entry", "config"])
def test_a_damaged_cache_entry_is_detected_and_pulled_again(demo_image: str, tmp_path: Path, damage: str) -> None:
    first = pull_release(demo_image, options(tmp_path))
    victim = first.directory / "release-manifests/release-metadata"
    entry_dir = first.directory.parent
    if damage == "edit":
        victim.write_bytes(victim.read_bytes().replace(b"4.16.0", b"4.99.0"))
    elif damage == "truncate":
        victim.write_bytes(b"")
    elif damage == "delete":
        victim.unlink()
    elif damage == "add":
        (first.directory / "manifests/extra.yaml").write_text("kind: Secret\n")
    elif damage == "entry":
        (entry_dir / "entry.json").write_text("{")
    else:
        (entry_dir / "config").write_text("{}")
    again = pull_release(demo_image, options(tmp_path))
    assert (again.stats.cached, again.stats.blob_requests) == (False, 3)
    assert payload_tree(again.directory) == payload_tree(DEMO)


def test_a_damaged_cached_manifest_is_asked_for_again(demo_image: str, tmp_path: Path) -> None:
    first = pull_release(demo_image, options(tmp_path))
    cached = tmp_path / "cache/manifests/sha256" / first.digest.removeprefix("sha256:")
    cached.write_bytes(cached.read_bytes() + b" ")
    again = pull_release(first.pull_spec, options(tmp_path))
    assert (again.stats.manifest_requests, again.stats.blob_requests) == (1, 0)
    assert PullCache(tmp_path / "cache").manifest(first.digest) is not None  # written again, intact


def test_two_pulls_at_once_both_succeed_when_the_other_publishes_first(demo_image: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The first pull has extracted and is about to rename its entry when the second finishes whole."""
    original = PullCache.publish
    extracted, second_done = threading.Event(), threading.Event()

    def publish(self: PullCache, tmp_entry: Path, manifest_digest: str, config: bytes):  # type: ignore[no-untyped-def]
        if threading.current_thread().name == "first":
            extracted.set()
            assert second_done.wait(60)
        return original(self, tmp_entry, manifest_digest, config)

    monkeypatch.setattr(PullCache, "publish", publish)
    results: dict[str, object] = {}

    def run() -> None:
        try:
            results["first"] = pull_release(demo_image, options(tmp_path))
        except BaseException as err:  # reported below
            results["first"] = err

    first = threading.Thread(target=run, name="first")
    first.start()
    assert extracted.wait(60)
    second = pull_release(demo_image, options(tmp_path))
    second_done.set()
    first.join(60)
    winner = results["first"]
    assert not isinstance(winner, BaseException), winner
    assert winner.directory == second.directory  # type: ignore[attr-defined]
    assert payload_tree(second.directory) == payload_tree(DEMO)
    assert [p.name for p in (tmp_path / "cache/tmp").iterdir()] == []  # the loser's entry is gone


def test_a_crashed_pull_s_temporary_entry_is_removed_after_a_day(demo_image: str, tmp_path: Path) -> None:
    stale, fresh = tmp_path / "cache/tmp/entry-1-dead", tmp_path / "cache/tmp/entry-2-busy"
    for each in (stale, fresh):
        (each / "release/manifests").mkdir(parents=True)
    os.utime(stale, (0, os.path.getmtime(stale) - 2 * 24 * 3600))
    pull_release(demo_image, options(tmp_path))
    assert not stale.exists() and fresh.exists()  # another process may still be writing a fresh one


def _pull_in_a_process(args: tuple[str, str]) -> str:
    spec, cache = args
    return str(pull_release(spec, PullOptions(cache_dir=Path(cache))).directory)


def test_processes_pulling_at_once_all_succeed(demo_image: str, tmp_path: Path) -> None:
    with multiprocessing.get_context("fork").Pool(3) as pool:
        directories = pool.map(_pull_in_a_process, [(demo_image, str(tmp_path / "cache"))] * 6)
    assert len(set(directories)) == 1
    assert payload_tree(Path(directories[0])) == payload_tree(DEMO)


# -- indexes --------------------------------------------------------------------------------------------


@pytest.fixture
def multi_image(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """An OCI index of linux/amd64 and linux/arm64 release images, and an attestation manifest."""
    layout = tmp_path / "multi"
    digests: dict[str, str] = {}
    entries = []
    for arch in ("amd64", "arm64"):
        data, digest = image_manifest(layout, release_layers(), architecture=arch)
        digests[arch] = digest
        entries.append(entry(data, digest, platform={"os": "linux", "architecture": arch}))
    data, digest = image_manifest(layout, [tar_bytes({"attestation": b"{}"})])
    entries.append(entry(data, digest, platform={"os": "unknown", "architecture": "unknown"}))
    index = orjson.dumps({"schemaVersion": 2, "mediaType": media.OCI_INDEX, "manifests": entries})
    digests["index"] = put_raw(OciLayout(layout), "4.16.0", index, media.OCI_INDEX)
    return f"oci:{layout}:4.16.0", digests


@pytest.mark.parametrize("arch", ["amd64", "arm64"])
def test_an_index_gives_the_wanted_architecture(multi_image: tuple[str, dict[str, str]], tmp_path: Path,
                                                arch: str) -> None:
    spec, digests = multi_image
    pulled = pull_release(spec, options(tmp_path, architecture=arch))
    assert pulled.digest == digests["index"] and pulled.manifest.digest == digests[arch]
    assert pulled.config.architecture == arch and isinstance(pulled.index, ImageIndex)
    assert pulled.pull_spec.endswith(f"@{digests['index']}")
    by_digest = pull_release(pulled.pull_spec, options(tmp_path, architecture=arch))
    assert (by_digest.stats.manifest_requests, by_digest.stats.blob_requests) == (0, 0)


def test_an_index_without_the_wanted_architecture_names_those_it_has(multi_image: tuple[str, dict[str, str]],
                                                                      tmp_path: Path) -> None:
    with pytest.raises(ImageError, match=re.escape(
            "the index has no image for linux/s390x (it has linux/amd64, linux/arm64, unknown/unknown)")) as err:
        pull_release(multi_image[0], options(tmp_path, architecture="s390x"))
    assert err.value.problem is Problem.NOT_FOUND
    assert not (tmp_path / "cache/trees").exists()


def test_multi_keeps_the_index_and_extracts_this_machine_s_image(multi_image: tuple[str, dict[str, str]],
                                                                 tmp_path: Path) -> None:
    spec, digests = multi_image
    pulled = pull_release(spec, options(tmp_path, architecture="multi"))
    assert pulled.index is not None and pulled.digest == digests["index"]
    assert pulled.manifest.digest == digests.get(go_arch(), digests["amd64"])


def test_select_platform_skips_entries_without_a_platform() -> None:
    index = ImageIndex(media.OCI_INDEX, (
        Descriptor(media.OCI_MANIFEST, "sha256:" + "1" * 64, 1),
        Descriptor(media.OCI_MANIFEST, "sha256:" + "2" * 64, 1, Platform("linux", "ppc64le")),
    ), "sha256:" + "3" * 64)
    assert select_platform("i", index, "multi").digest == "sha256:" + "2" * 64
    assert select_platform("i", index, "ppc64le").digest == "sha256:" + "2" * 64
    with pytest.raises(ImageError, match=re.escape("(it has linux/ppc64le)")):
        select_platform("i", index, "amd64")


def test_an_index_whose_entry_is_an_index_is_refused(tmp_path: Path) -> None:
    layout = OciLayout(tmp_path / "l")
    inner = orjson.dumps({"schemaVersion": 2, "mediaType": media.OCI_INDEX, "manifests": []})
    inner_digest = digest_of(inner)
    layout.put_manifest(inner_digest, RawManifest(inner, media.OCI_INDEX, inner_digest))
    outer = orjson.dumps({"schemaVersion": 2, "mediaType": media.OCI_INDEX, "manifests": [
        {"mediaType": media.OCI_INDEX, "digest": inner_digest, "size": len(inner),
         "platform": {"os": "linux", "architecture": "amd64"}}]})
    put_raw(layout, "t", outer, media.OCI_INDEX)
    with pytest.raises(ImageError, match=f"index entry {inner_digest} is itself an index"):
        pull_release(f"oci:{tmp_path / 'l'}:t", options(tmp_path, architecture="amd64"))


# -- images that cannot be used -------------------------------------------------------------------------


def test_an_image_without_release_metadata_is_not_a_release(tmp_path: Path) -> None:
    layout = tmp_path / "l"
    data, digest = image_manifest(layout, [tar_bytes({"manifests": None, "manifests/a.yaml": b"kind: A\n"})])
    write_index(layout, [entry(data, digest, tag="cvo")])
    with pytest.raises(ImageError, match=re.escape(
            f"image oci:{layout}:cvo: not a release image: no release-manifests/release-metadata")):
        pull_release(f"oci:{layout}:cvo", options(tmp_path))
    assert not (tmp_path / "cache/trees").exists()
    assert list((tmp_path / "cache/tmp").iterdir()) == []


def test_a_tampered_layer_leaves_nothing_in_the_cache(demo_image: str, tmp_path: Path) -> None:
    layout = Path(demo_image.removeprefix("oci:").rsplit(":", 1)[0])
    manifest = OciLayout(layout).get_manifest("4.16.0")
    top = orjson.loads(manifest.data)["layers"][-1]["digest"]
    path = layout / "blobs/sha256" / top.removeprefix("sha256:")
    data = path.read_bytes()
    path.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    with pytest.raises(ImageError, match=f"{top}"):
        pull_release(demo_image, options(tmp_path))
    assert not (tmp_path / "cache/trees").exists()
    assert list((tmp_path / "cache/tmp").iterdir()) == []


def test_an_unwritable_cache_is_one_clean_error(demo_image: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ImageError, match="cannot write the pull cache") as err:
        pull_release(demo_image, PullOptions(cache_dir=tmp_path / "file/cache"))
    assert err.value.problem is Problem.UNAVAILABLE
    assert os.path.isfile(tmp_path / "file")


# -- the cache's readers take anything ------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry_json=st.one_of(st.binary(max_size=200), st.dictionaries(
    st.sampled_from(["format", "manifest", "config", "files"]),
    st.one_of(st.none(), st.integers(0, 3), st.text(max_size=10), st.lists(st.text(max_size=5), max_size=3)),
    max_size=4).map(orjson.dumps)), manifest=st.binary(max_size=200))
def test_any_cache_content_is_used_or_refused(demo_image: str, tmp_path: Path, entry_json: bytes,
                                              manifest: bytes) -> None:
    root = tmp_path / "fuzz-cache"
    if not root.exists():
        pulled = pull_release(demo_image, PullOptions(cache_dir=root))
        shutil.copytree(pulled.directory.parent, tmp_path / "pristine")
        (tmp_path / "digest").write_text(pulled.manifest.digest)
    digest = (tmp_path / "digest").read_text()
    entry_dir = root / "trees/sha256" / digest.removeprefix("sha256:")
    shutil.rmtree(entry_dir, ignore_errors=True)
    shutil.copytree(tmp_path / "pristine", entry_dir)
    (entry_dir / "entry.json").write_bytes(entry_json)
    cache = PullCache(root)
    assert cache.tree(digest) is None or entry_json == (tmp_path / "pristine/entry.json").read_bytes()
    (root / "manifests/sha256" / digest.removeprefix("sha256:")).write_bytes(manifest)
    found = cache.manifest(digest)
    assert found is None or digest_of(found.data) == digest
