"""extract_layers applies an image's layers as a container runtime does: every layer in order, later entries
over earlier ones, whiteouts and opaque directories (OCI image-spec layer.md), only release-manifests/ and
manifests/ written; real tar streams made in the test (tests/support/layers.py)."""

from __future__ import annotations

import os
import tarfile
import tracemalloc
from pathlib import Path

import pytest

from cvo.images import media
from cvo.images.errors import ImageError
from cvo.images.extract import KEPT, ExtractLimits, ExtractStats, extract_layers, require_release
from tests.support.layers import (
    IMAGE,
    Blob,
    directory,
    entry,
    file,
    gzipped,
    hardlink,
    layer,
    symlink,
    tar,
)


def extract(target: Path, *blobs: Blob, limits: ExtractLimits | None = None) -> ExtractStats:
    return extract_layers(IMAGE, [blob.pair() for blob in blobs], target, limits or ExtractLimits())


def tree(root: Path) -> dict[str, str]:
    """Every path under ``root``: a file's text, ``/`` for a directory, ``-> TARGET`` for a symlink."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[rel] = "/"
            else:
                out[rel] = path.read_text()
    return out


# A CVO image as it is built: an OS layer (absolute symlinks, hard links, whiteouts, a device node outside the
# payload), the CVO's own layer with manifests/, and oc adm release new's layer with release-manifests/.
OS_LAYER = (directory("etc"), file("etc/os-release", "ID=rhel"),
            symlink("etc/localtime", "/usr/share/zoneinfo/UTC"), symlink("bin", "usr/bin"),
            directory("usr"), directory("usr/bin"), file("usr/bin/bash", b"\x7fELF"),
            hardlink("usr/bin/sh", "usr/bin/bash"), symlink("usr/bin/python3", "/usr/bin/python3.9"),
            directory("dev"), entry("dev/null", tarfile.CHRTYPE), entry("run/initctl", tarfile.FIFOTYPE),
            file("etc/.wh.machine-id"), directory("var/cache"), file("var/cache/.wh..wh..opq"))
CVO_LAYER = (directory("manifests"), file("manifests/0000_00_cluster-version-operator_01_cv.yaml", "kind: A"),
             file("manifests/0000_00_cluster-version-operator_02_deploy.yaml", "kind: B"),
             file("usr/bin/cluster-version-operator", b"\x7fELF"))
RELEASE_LAYER = (directory("release-manifests"), file("release-manifests/release-metadata", '{"version": "4.16.3"}'),
                 file("release-manifests/image-references", "{}"),
                 file("release-manifests/0000_50_etcd_01.yaml", "kind: C"))


def test_a_release_image_gives_its_two_payload_directories_and_nothing_else(target: Path) -> None:
    stats = extract(target, layer(*OS_LAYER), layer(*CVO_LAYER), layer(*RELEASE_LAYER))
    assert tree(target) == {
        "manifests": "/", "release-manifests": "/",
        "manifests/0000_00_cluster-version-operator_01_cv.yaml": "kind: A",
        "manifests/0000_00_cluster-version-operator_02_deploy.yaml": "kind: B",
        "release-manifests/release-metadata": '{"version": "4.16.3"}',
        "release-manifests/image-references": "{}",
        "release-manifests/0000_50_etcd_01.yaml": "kind: C",
    }
    # everything read, outside the two directories only counted (the OS layer's devices and links included)
    assert stats == ExtractStats(layers=3, entries=len(OS_LAYER) + len(CVO_LAYER) + len(RELEASE_LAYER),
                                 skipped=len(OS_LAYER) + 1, files=7, written_bytes=7 + 7 + 21 + 2 + 7,
                                 tar_bytes=stats.tar_bytes, header_bytes=0, whiteouts=0)
    require_release(IMAGE, target)


def test_layers_apply_in_order_never_just_the_top_one(target: Path) -> None:
    extract(target,
            layer(file("manifests/a.yaml", "a1"), file("manifests/b.yaml", "b1"), file("release-manifests/x", "x1")),
            layer(file("manifests/a.yaml", "a2")),
            layer(file("release-manifests/y", "y3"), file("manifests/a.yaml", "a3")))
    assert tree(target) == {"manifests": "/", "release-manifests": "/", "manifests/a.yaml": "a3",
                            "manifests/b.yaml": "b1", "release-manifests/x": "x1", "release-manifests/y": "y3"}


def test_an_entry_replaces_what_was_there_and_directories_merge(target: Path) -> None:
    extract(target,
            layer(file("manifests/f-then-dir", "f"), directory("manifests/dir-then-f"),
                  file("manifests/dir-then-f/inner", "i"), directory("manifests/merged"),
                  file("manifests/merged/lower", "l"), symlink("manifests/link-then-f", "merged/lower")),
            layer(directory("manifests/f-then-dir"), file("manifests/f-then-dir/new", "n"),
                  file("manifests/dir-then-f", "now a file"), directory("manifests/merged"),
                  file("manifests/merged/upper", "u"), file("manifests/link-then-f", "plain")))
    assert tree(target) == {"manifests": "/", "manifests/f-then-dir": "/", "manifests/f-then-dir/new": "n",
                            "manifests/dir-then-f": "now a file", "manifests/merged": "/",
                            "manifests/merged/lower": "l", "manifests/merged/upper": "u",
                            "manifests/link-then-f": "plain"}


def test_whiteouts_remove_what_lower_layers_put_there(target: Path) -> None:
    stats = extract(target,
                    layer(file("manifests/a", "a"), file("manifests/b", "b"), directory("manifests/sub"),
                          file("manifests/sub/c", "c"), file("release-manifests/release-metadata", "{}")),
                    layer(file("manifests/.wh.a"), file("manifests/.wh.sub"), file("manifests/.wh.never-there")))
    assert tree(target) == {"manifests": "/", "release-manifests": "/", "manifests/b": "b",
                            "release-manifests/release-metadata": "{}"}
    assert stats.whiteouts == 3


def test_a_whiteout_of_a_payload_directory_removes_it_all(target: Path) -> None:
    extract(target, layer(file("manifests/a", "a"), file("release-manifests/r", "r")),
            layer(file(".wh.manifests")))
    assert tree(target) == {"release-manifests": "/", "release-manifests/r": "r"}


def test_whiteouts_apply_to_lower_layers_only_wherever_they_are_in_the_layer(target: Path) -> None:
    # layer.md: "Files that are present in the same layer as a whiteout file can only be hidden by whiteout
    # files in subsequent layers" - before or after the whiteout in the stream
    extract(target,
            layer(file("manifests/a", "old a"), file("manifests/b", "old b"), directory("manifests/d"),
                  file("manifests/d/lower", "lower")),
            layer(file("manifests/.wh.a"), file("manifests/a", "new a"),
                  file("manifests/b", "new b"), file("manifests/.wh.b"),
                  file("manifests/d/upper", "upper"), file("manifests/.wh.d")))
    assert tree(target) == {"manifests": "/", "manifests/a": "new a", "manifests/b": "new b",
                            "manifests/d": "/", "manifests/d/upper": "upper"}


@pytest.mark.parametrize("opaque_first", [True, False])
def test_an_opaque_directory_hides_what_lower_layers_had_in_it(target: Path, opaque_first: bool) -> None:
    # layer.md: the opaque whiteout is applied first "regardless of the ordering in which the whiteout file
    # was encountered"
    opaque = file("manifests/.wh..wh..opq")
    upper = [directory("manifests"), file("manifests/new", "n"), directory("manifests/sub"),
             file("manifests/sub/new", "sn")]
    extract(target,
            layer(file("manifests/old", "o"), directory("manifests/sub"), file("manifests/sub/old", "so"),
                  file("release-manifests/kept", "k")),
            layer(*([opaque, *upper] if opaque_first else [*upper, opaque])))
    assert tree(target) == {"manifests": "/", "release-manifests": "/", "release-manifests/kept": "k",
                            "manifests/new": "n", "manifests/sub": "/", "manifests/sub/new": "sn"}


def test_a_whiteout_repeated_in_a_layer_is_applied_once(target: Path) -> None:
    # each application walks what the layer wrote there: 5,000 repeats of it would walk it 5,000 times
    lower = layer(*(file(f"manifests/old{i}") for i in range(50)))
    upper = layer(*(file(f"manifests/new{i}", "n") for i in range(50)),
                  *(file("manifests/.wh..wh..opq") for _ in range(5000)),
                  *(file("./manifests/.wh.new0") for _ in range(5000)))
    stats = extract(target, lower, upper)
    assert sorted(os.listdir(target / "manifests")) == sorted(f"new{i}" for i in range(50))
    assert stats.whiteouts == 2


def test_an_opaque_root_hides_both_payload_directories_below(target: Path) -> None:
    extract(target, layer(file("manifests/a", "a"), file("release-manifests/r", "r")),
            layer(file(".wh..wh..opq"), file("release-manifests/release-metadata", "{}")))
    assert tree(target) == {"release-manifests": "/", "release-manifests/release-metadata": "{}"}


def test_whiteouts_outside_the_payload_and_aufs_metadata_are_only_counted(target: Path) -> None:
    stats = extract(target, layer(file("manifests/a", "a"), file("etc/x", "x")),
                    layer(file("etc/.wh.x"), file(".wh..wh.plnk/123", "aufs"), file(".wh..wh.aufs"),
                          file("usr/.wh..wh..opq")))
    assert tree(target) == {"manifests": "/", "manifests/a": "a"}
    assert (stats.skipped, stats.whiteouts) == (5, 0)


@pytest.mark.parametrize("name", ["./manifests/a.yaml", "manifests//a.yaml", "manifests/./a.yaml"])
def test_names_are_normalised_as_a_runtime_cleans_them(target: Path, name: str) -> None:
    extract(target, layer(directory("./"), directory("./manifests"), file(name, "a")))
    assert tree(target) == {"manifests": "/", "manifests/a.yaml": "a"}


@pytest.mark.parametrize(("compression", "media_type"), [("gzip", media.OCI_LAYER_GZIP),
                                                         ("docker", media.DOCKER_LAYER_GZIP),
                                                         ("none", media.OCI_LAYER)])
def test_gzip_or_plain_tar_by_media_type(target: Path, compression: str, media_type: str) -> None:
    blob = layer(file("manifests/a", "a"), compression=compression)
    assert blob.media_type == media_type
    extract(target, blob)
    assert tree(target) == {"manifests": "/", "manifests/a": "a"}


def test_a_gzip_stream_of_several_members_is_read_through(target: Path) -> None:
    # Go's gzip.Reader (docker's DecompressStream) reads multistream gzip; pigz -i and concatenations make it
    data = tar(file("manifests/a", "a" * 5000), file("manifests/b", "b"))
    blob = Blob(gzipped(data[:3000]) + gzipped(data[3000:]))
    extract(target, blob)
    assert tree(target) == {"manifests": "/", "manifests/a": "a" * 5000, "manifests/b": "b"}


def test_bytes_after_the_gzip_stream_are_hashed_not_read(target: Path) -> None:
    blob = Blob(gzipped(tar(file("manifests/a", "a"))) + b"\0" * 4096)
    extract(target, blob)
    assert tree(target) == {"manifests": "/", "manifests/a": "a"}
    assert blob.readers[0].count == len(blob.data)


def test_every_layer_is_read_to_its_end_and_checked(target: Path) -> None:
    blobs = [layer(file("manifests/a", "a")), layer(file("etc/b", "b"), compression="none"),
             layer(file("release-manifests/c", "c"))]
    extract(target, *blobs)
    assert [b.readers[0].count for b in blobs] == [len(b.data) for b in blobs]


@pytest.mark.parametrize(("fmt", "length"), [(tarfile.PAX_FORMAT, 300), (tarfile.GNU_FORMAT, 300),
                                             (tarfile.USTAR_FORMAT, 200)])  # pax path, GNU longname, ustar prefix
def test_long_names_in_every_tar_format(target: Path, fmt: int, length: int) -> None:
    name = "manifests/" + "d" * 90 + "/" + "f" * (length - 106) + ".yaml"
    symlink_name = "manifests/" + "l" * 200
    extract(target, layer(file(name, "long"), *([symlink(symlink_name, name[10:])] if fmt != tarfile.USTAR_FORMAT
                                                else []), fmt=fmt))
    assert (target / name).read_text() == "long"
    if fmt != tarfile.USTAR_FORMAT:  # pax linkpath, GNU longlink
        assert (target / symlink_name).read_text() == "long"


def test_links_inside_the_payload_are_kept(target: Path) -> None:
    extract(target, layer(file("release-manifests/a.yaml", "a"), symlink("manifests/to-a", "../release-manifests/a.yaml"),
                          hardlink("manifests/hard-a", "release-manifests/a.yaml"),
                          symlink("manifests/dir", "../release-manifests")))
    assert tree(target)["manifests/to-a"] == "-> ../release-manifests/a.yaml"
    assert (target / "manifests/to-a").read_text() == "a"
    assert (target / "manifests/hard-a").stat().st_ino == (target / "release-manifests/a.yaml").stat().st_ino
    assert (target / "manifests/dir/a.yaml").read_text() == "a"


def test_a_dangling_link_inside_the_payload_is_kept(target: Path) -> None:
    # under a regular file or to a name never extracted: nothing to read, nothing outside (seen by the fuzzer)
    extract(target, layer(file("manifests/a.yaml", "a"), symlink("manifests/l", "a.yaml/x"),
                          symlink("manifests/m", "../release-manifests/none")))
    assert tree(target) == {"manifests": "/", "manifests/a.yaml": "a", "manifests/l": "-> a.yaml/x",
                            "manifests/m": "-> ../release-manifests/none"}


def test_names_that_are_not_utf8_are_written_as_their_bytes(target: Path) -> None:
    name = os.fsdecode(b"manifests/caf\xe9.yaml")
    extract(target, layer(file(name, "x")))
    assert os.listdir(os.fsencode(target / "manifests")) == [b"caf\xe9.yaml"]


def test_written_files_are_plain_whatever_modes_the_layer_gives(target: Path) -> None:
    info, data = file("manifests/a", "a")
    info.mode = 0o4777
    sealed, _ = directory("manifests/sealed")
    sealed.mode = 0
    extract(target, layer((info, data), (sealed, None), file("manifests/sealed/in", "in")))
    assert (target / "manifests/a").stat().st_mode & 0o7777 == 0o644 & ~_umask()
    assert (target / "manifests/sealed/in").read_text() == "in"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_memory_stays_flat_whatever_the_layer_size_and_entry_count(target: Path) -> None:
    # tarfile keeps every header it reads unless told otherwise; a file is copied in chunks
    many = layer(*(file(f"usr/share/doc/{i}", "") for i in range(20_000)))
    big = layer(file("manifests/big", b"\1" * (48 << 20)), file("etc/big", b"\2" * (48 << 20)))
    tracemalloc.start()
    try:
        extract(target, many, big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (target / "manifests/big").stat().st_size == 48 << 20
    assert peak < 8 << 20, peak


def test_the_target_must_be_an_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("")
    with pytest.raises(ValueError, match="not an empty directory"):
        extract(tmp_path, layer(file("manifests/a")))
    with pytest.raises(ValueError, match="not an empty directory"):
        extract(tmp_path / "missing", layer(file("manifests/a")))


def test_kept_names_are_the_two_payload_directories() -> None:
    assert KEPT == ("release-manifests", "manifests")


def test_require_release_wants_release_metadata(target: Path) -> None:
    extract(target, layer(*CVO_LAYER))
    with pytest.raises(ImageError) as err:
        require_release(IMAGE, target)
    assert str(err.value) == (f"image {IMAGE}: is not a release image: it has no "
                              f"release-manifests/release-metadata")
