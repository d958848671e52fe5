"""OCI image layouts (cvo.images.layout): reading what skopeo and hand-written layouts hold, writing what
skopeo reads, and refusing hostile layouts with one clean ImageError."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvo.images import media
from cvo.images.errors import ImageError, Problem
from cvo.images.layout import REF_NAME, OciLayout, blob_digest
from cvo.images.repository import Descriptor, RawManifest
from tests.support.oci_images import (
    digest_of,
    entry,
    image_manifest,
    put_raw,
    release_layers,
    tar_bytes,
    write_blob,
    write_index,
)

SKOPEO = "/usr/bin/skopeo"


def skopeo(*args: str) -> str:
    done = subprocess.run([SKOPEO, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def two_images(layout: Path) -> tuple[str, str]:
    first, d1 = image_manifest(layout, release_layers("4.16.0"))
    second, d2 = image_manifest(layout, release_layers("4.16.3"))
    write_index(layout, [entry(first, d1, tag="4.16.0"), entry(second, d2, tag="4.16.3")])
    return d1, d2


def test_a_tag_picks_its_entry_and_the_bytes_match_the_digest(tmp_path: Path) -> None:
    d1, d2 = two_images(tmp_path / "l")
    layout = OciLayout(tmp_path / "l")
    assert layout.get_manifest("4.16.3").digest == d2
    raw = layout.get_manifest("4.16.0")
    assert raw.digest == d1 and digest_of(raw.data) == d1 and raw.media_type == media.OCI_MANIFEST
    assert layout.get_manifest(d2).digest == d2


def test_no_tag_is_the_only_entry_and_several_entries_need_a_tag(tmp_path: Path) -> None:
    data, digest = image_manifest(tmp_path / "one", release_layers())
    write_index(tmp_path / "one", [entry(data, digest)])
    assert OciLayout(tmp_path / "one").get_manifest("").digest == digest
    two_images(tmp_path / "two")
    with pytest.raises(ImageError, match=r"holds 2 images: name one as oci:DIR:TAG \(tags: 4.16.0, 4.16.3\)"):
        OciLayout(tmp_path / "two").get_manifest("")


def test_an_unknown_tag_is_not_found(tmp_path: Path) -> None:
    two_images(tmp_path / "l")
    with pytest.raises(ImageError, match=re.escape("no image tagged '4.17.0'")) as err:
        OciLayout(tmp_path / "l", "oci:l").get_manifest("4.17.0")
    assert err.value.problem is Problem.NOT_FOUND
    assert str(err.value).startswith("image oci:l:4.17.0: ")


def test_blobs_stream_checked_against_their_digest(tmp_path: Path) -> None:
    layer = tar_bytes({"manifests/a": b"x"})
    digest = write_blob(tmp_path / "l", layer)
    write_index(tmp_path / "l", [])
    layout = OciLayout(tmp_path / "l")
    with layout.open_blob(Descriptor(media.OCI_LAYER_GZIP, digest, len(layer))) as reader:
        assert reader.read() == layer
        reader.finish()
    (tmp_path / "l/blobs/sha256" / digest.removeprefix("sha256:")).write_bytes(layer[:10] + bytes([layer[10] ^ 1]) + layer[11:])
    with pytest.raises(ImageError, match="does not match its content"), \
            layout.open_blob(Descriptor(media.OCI_LAYER_GZIP, digest, len(layer))) as reader:
        reader.finish()


def test_a_manifest_whose_bytes_do_not_match_is_refused(tmp_path: Path) -> None:
    data, digest = image_manifest(tmp_path / "l", release_layers())
    write_index(tmp_path / "l", [entry(data, digest, tag="t")])
    (tmp_path / "l/blobs/sha256" / digest.removeprefix("sha256:")).write_bytes(data.replace(b"layers", b"Layers"))
    with pytest.raises(ImageError, match=f"manifest {digest} does not match its content"):
        OciLayout(tmp_path / "l").get_manifest("t")


# -- hostile layouts ------------------------------------------------------------------------------------


def test_a_digest_that_would_escape_the_blobs_directory_is_refused(tmp_path: Path) -> None:
    layout = tmp_path / "l"
    write_index(layout, [{"mediaType": media.OCI_MANIFEST, "digest": "sha256:../../../etc/passwd", "size": 1,
                          "annotations": {REF_NAME: "t"}}])
    with pytest.raises(ImageError, match=re.escape("index.json: index entry 0: digest 'sha256:../../../etc/passwd' is not")):
        OciLayout(layout).get_manifest("t")
    with pytest.raises(ImageError, match="is not sha256"):
        OciLayout(layout).get_manifest("sha256:../../../etc/passwd")


def test_a_symlinked_blobs_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    data, digest = image_manifest(real, release_layers())
    layout = tmp_path / "l"
    write_index(layout, [entry(data, digest, tag="t")])
    os.symlink(real / "blobs", layout / "blobs")
    with pytest.raises(ImageError, match="blobs is not a directory"):
        OciLayout(layout).get_manifest("t")
    os.unlink(layout / "blobs")
    (layout / "blobs").mkdir()
    os.symlink(real / "blobs/sha256", layout / "blobs/sha256")
    with pytest.raises(ImageError, match="blobs/sha256 is not a directory"):
        OciLayout(layout).get_manifest("t")


def test_a_symlinked_blob_and_a_fifo_blob_are_refused(tmp_path: Path) -> None:
    layout = tmp_path / "l"
    data, digest = image_manifest(layout, release_layers())
    write_index(layout, [entry(data, digest, tag="t")])
    blob = layout / "blobs/sha256" / digest.removeprefix("sha256:")
    (tmp_path / "copy").write_bytes(blob.read_bytes())
    blob.unlink()
    os.symlink(tmp_path / "copy", blob)
    with pytest.raises(ImageError, match=f"blob {digest} is a symlink"):
        OciLayout(layout).get_manifest("t")
    blob.unlink()
    os.mkfifo(blob)
    with pytest.raises(ImageError, match=f"blob {digest} is not a regular file"):
        OciLayout(layout).get_manifest("t")


def test_a_missing_blob_is_not_found(tmp_path: Path) -> None:
    layout = tmp_path / "l"
    data, digest = image_manifest(layout, release_layers())
    write_index(layout, [entry(data, digest, tag="t")])
    (layout / "blobs/sha256" / digest.removeprefix("sha256:")).unlink()
    with pytest.raises(ImageError, match=f"blob {digest} is missing from blobs/sha256") as err:
        OciLayout(layout).get_manifest("t")
    assert err.value.problem is Problem.NOT_FOUND


@pytest.mark.parametrize(("content", "message"), [
    (b"not json", "index.json is not JSON"),
    (b"[]", "index.json is not a JSON object"),
    (b'{"schemaVersion": 2, "layers": [], "config": {"mediaType": "application/vnd.oci.image.config.v1+json", '
     b'"digest": "sha256:' + b"0" * 64 + b'", "size": 2}}', "index.json is not an image index"),
    (b'{"schemaVersion": 1, "manifests": []}', "schemaVersion 1 is not 2"),
    (b'{"schemaVersion": 2, "manifests": {}}', "index: manifests is not a list"),
])
def test_an_index_json_that_is_not_an_index_is_refused(tmp_path: Path, content: bytes, message: str) -> None:
    write_index(tmp_path, [])
    (tmp_path / "index.json").write_bytes(content)
    with pytest.raises(ImageError, match=message):
        OciLayout(tmp_path).get_manifest("t")


def test_a_directory_that_is_not_a_layout(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match="no such directory") as err:
        OciLayout(tmp_path / "absent").get_manifest("")
    assert err.value.problem is Problem.NOT_FOUND
    with pytest.raises(ImageError, match=re.escape("not an OCI image layout: no index.json")):
        OciLayout(tmp_path).get_manifest("")
    (tmp_path / "index.json").write_text('{"schemaVersion": 2, "manifests": []}')
    with pytest.raises(ImageError, match="not an OCI image layout: no oci-layout"):
        OciLayout(tmp_path).get_manifest("")
    (tmp_path / "oci-layout").write_text("{}")
    with pytest.raises(ImageError, match="oci-layout is not a JSON object with an imageLayoutVersion"):
        OciLayout(tmp_path).get_manifest("")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=300), st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["schemaVersion", "manifests", "mediaType", "digest", "size", "annotations", REF_NAME]),
        inner, max_size=5), max_leaves=20).map(orjson.dumps)))
def test_any_index_json_is_read_or_refused_cleanly(tmp_path: Path, content: bytes) -> None:
    write_index(tmp_path, [])
    (tmp_path / "index.json").write_bytes(content)
    layout = OciLayout(tmp_path)
    for reference in ("", "t"):
        try:
            layout.get_manifest(reference)
        except ImageError as err:
            assert str(err).startswith(f"image {layout.image}")


# -- writing --------------------------------------------------------------------------------------------


def test_writes_create_the_layout_and_moving_a_tag_keeps_the_old_image(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    first, _ = image_manifest(scratch, release_layers("4.16.0"))
    second, _ = image_manifest(scratch, release_layers("4.16.3"))
    layout = OciLayout(tmp_path / "out")
    for blob in (scratch / "blobs/sha256").iterdir():
        digest, size = blob_digest(blob)
        layout.put_blob(blob, Descriptor(media.OCI_LAYER_GZIP, digest, size))
    d1 = put_raw(layout, "latest", first)
    assert orjson.loads((tmp_path / "out/oci-layout").read_bytes()) == {"imageLayoutVersion": "1.0.0"}
    d2 = put_raw(layout, "latest", second)
    put_raw(layout, "latest", second)  # again: nothing changes
    entries = layout.entries()
    assert [(e.descriptor.digest, e.name) for e in entries] == [(d1, ""), (d2, "latest")]
    put_raw(layout, "", first)  # an unnamed entry of the same digest is replaced, not added
    assert [(e.descriptor.digest, e.name) for e in layout.entries()] == [(d1, ""), (d2, "latest")]
    assert not [p for p in (tmp_path / "out").rglob("*") if ".cvo-tmp-" in p.name]


def test_a_blob_whose_file_does_not_match_its_descriptor_is_not_written(tmp_path: Path) -> None:
    source = tmp_path / "blob"
    source.write_bytes(b"hello")
    layout = OciLayout(tmp_path / "out")
    with pytest.raises(ImageError, match="does not match its content"):
        layout.put_blob(source, Descriptor(media.OCI_LAYER, digest_of(b"other"), 5))
    assert not (tmp_path / "out/blobs/sha256" / digest_of(b"other").removeprefix("sha256:")).exists()
    assert list((tmp_path / "out/blobs/sha256").iterdir()) == []


def test_a_broken_index_json_is_never_overwritten(tmp_path: Path) -> None:
    write_index(tmp_path, [])
    (tmp_path / "index.json").write_bytes(b"{broken")
    with pytest.raises(ImageError, match=re.escape("index.json is not JSON")):
        put_raw(OciLayout(tmp_path), "t", b'{"schemaVersion": 2, "manifests": []}', media.OCI_INDEX)
    assert (tmp_path / "index.json").read_bytes() == b"{broken"


def test_a_manifest_stored_by_digest_is_a_blob_only(tmp_path: Path) -> None:
    layout = OciLayout(tmp_path)
    data = b'{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}'
    layout.put_manifest(digest_of(data), RawManifest(data, media.OCI_INDEX, digest_of(data)))
    assert layout.has_blob(digest_of(data))
    assert not (tmp_path / "index.json").exists()
    assert layout.get_manifest(digest_of(data)).media_type == media.OCI_INDEX


# -- skopeo, the independent client ---------------------------------------------------------------------


def test_skopeo_reads_what_cvo_wrote_and_cvo_reads_what_skopeo_wrote(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    data, _ = image_manifest(scratch, release_layers("4.16.0"), labels={"io.openshift.release": "4.16.0"})
    layout = OciLayout(tmp_path / "cvo")
    for blob in (scratch / "blobs/sha256").iterdir():
        digest, size = blob_digest(blob)
        layout.put_blob(blob, Descriptor(media.OCI_LAYER_GZIP, digest, size))
    digest = put_raw(layout, "4.16.0", data)
    inspected = orjson.loads(skopeo("inspect", f"oci:{tmp_path / 'cvo'}:4.16.0"))
    assert inspected["Digest"] == digest and inspected["Labels"] == {"io.openshift.release": "4.16.0"}
    skopeo("copy", "--quiet", f"oci:{tmp_path / 'cvo'}:4.16.0", f"dir:{tmp_path / 'dir'}")
    skopeo("copy", "--quiet", f"dir:{tmp_path / 'dir'}", f"oci:{tmp_path / 'back'}:again")
    back = OciLayout(tmp_path / "back")
    raw = back.get_manifest("again")
    assert raw.digest == digest  # skopeo kept the manifest byte for byte
    assert back.get_manifest("").digest == digest
