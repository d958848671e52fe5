"""What extract_layers refuses: names and links leaving the tree, devices, writing through a link, every cap
(a gzip bomb stops at its cap), blobs that do not match their digest or end early.  Each refusal is one
ImageError line naming the image, the layer digest and the entry, and nothing is written outside the target."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from cvo.images import media
from cvo.images.digest import sha256_of
from cvo.images.errors import ImageError, Problem
from cvo.images.extract import MAX_HEADER_BYTES, ExtractLimits, extract_layers
from tests.support.layers import (
    IMAGE,
    Blob,
    EndlessGzip,
    Entry,
    directory,
    entry,
    file,
    gzipped,
    hardlink,
    header,
    layer,
    symlink,
    tar,
)


def refused(target: Path, *blobs: Blob, limits: ExtractLimits | None = None) -> str:
    """The one-line message extraction of ``blobs`` is refused with; nothing was written beside ``target``."""
    with pytest.raises(ImageError) as err:
        extract_layers(IMAGE, [blob.pair() for blob in blobs], target, limits or ExtractLimits())
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"image {IMAGE}: layer sha256:"), message
    assert err.value.problem == Problem.REFUSED
    assert os.listdir(target.parent) == [target.name]
    return message


def where(blob: Blob, name: str) -> str:
    quoted = repr(name) if len(repr(name)) <= 200 else repr(name)[:197] + "..."  # names are cut at 200
    return f"image {IMAGE}: layer {blob.descriptor.digest}: entry {quoted}: "


ESCAPES: list[tuple[list[Entry], str, str]] = [
    ([file("../evil", "x")], "../evil", "leaves the image through '..'"),
    ([file("manifests/../../evil", "x")], "manifests/../../evil", "leaves the image through '..'"),
    ([file("etc/../../evil", "x")], "etc/../../evil", "leaves the image through '..'"),  # outside the payload too
    ([file("/manifests/evil", "x")], "/manifests/evil", "is an absolute path"),
    ([file("/etc/passwd", "x")], "/etc/passwd", "is an absolute path"),
    ([symlink("manifests/l", "/etc/passwd")], "manifests/l",
     "is a symlink to the absolute path '/etc/passwd', outside the extracted tree"),
    ([symlink("manifests/l", "../../etc/passwd")], "manifests/l",
     "is a symlink to '../../etc/passwd', which leads outside the image"),
    ([file("etc/passwd"), symlink("manifests/l", "../etc/passwd")], "manifests/l",
     "is a symlink to '../etc/passwd', outside release-manifests/ and manifests/"),
    ([symlink("release-manifests/l", "..")], "release-manifests/l",
     "is a symlink to '..', outside release-manifests/ and manifests/"),
    ([hardlink("manifests/h", "../../etc/passwd")], "manifests/h",
     "is a hard link to '../../etc/passwd', which leaves the image through '..'"),
    ([hardlink("manifests/h", "/etc/passwd")], "manifests/h",
     "is a hard link to '/etc/passwd', which is an absolute path"),
    ([file("etc/passwd", "x"), hardlink("manifests/h", "etc/passwd")], "manifests/h",
     "is a hard link to 'etc/passwd', outside release-manifests/ and manifests/"),
    ([file("manifests/a"), symlink("manifests/s", "a"), hardlink("manifests/h", "manifests/s")], "manifests/h",
     "is a hard link to 'manifests/s', which is not a regular file extracted before it"),
    ([hardlink("manifests/h", "manifests/later"), file("manifests/later")], "manifests/h",
     "is a hard link to 'manifests/later', which is not a regular file extracted before it"),
    ([symlink("manifests/d", "../release-manifests"), file("manifests/d/x", "x")], "manifests/d/x",
     "is under 'manifests/d', a symlink: cvo never writes through one"),
    ([file("manifests/f"), file("manifests/f/x")], "manifests/f/x", "is under 'manifests/f', which is not a directory"),
    ([entry("manifests/tty", tarfile.CHRTYPE)], "manifests/tty", "is a character device, which cvo does not extract"),
    ([entry("manifests/sda", tarfile.BLKTYPE)], "manifests/sda", "is a block device, which cvo does not extract"),
    ([entry("release-manifests/p", tarfile.FIFOTYPE)], "release-manifests/p", "is a FIFO, which cvo does not extract"),
    ([entry("manifests/v", b"V")], "manifests/v", "is of tar type b'V', which cvo does not extract"),
    ([file("manifests/.wh.")], "manifests/.wh.", "is a whiteout of no file"),
    ([file("manifests/.wh..")], "manifests/.wh..", "is a whiteout of no file"),
    # a ustar name ends at its first NUL; a pax path or linkpath may hold one
    ([entry("manifests/a", data=b"x", pax={"path": "manifests/a\0b"})], "manifests/a\0b",
     "has a NUL byte in its name"),
    ([entry("manifests/l", tarfile.SYMTYPE, linkname="a", pax={"linkpath": "a\0b"})], "manifests/l",
     "is a symlink whose target has a NUL byte"),
]


@pytest.mark.parametrize(("entries", "name", "why"), ESCAPES, ids=[f"{i}-{e[1]}" for i, e in enumerate(ESCAPES)])
def test_a_layer_that_would_leave_the_tree_is_refused(target: Path, entries: list[Entry], name: str,
                                                      why: str) -> None:
    blob = layer(*entries)
    assert refused(target, blob) == where(blob, name) + why


def test_a_whiteout_through_a_symlink_is_refused(target: Path) -> None:
    lower = layer(file("release-manifests/x", "x"), symlink("manifests/d", "../release-manifests"))
    upper = layer(file("manifests/d/.wh.x"))
    assert refused(target, lower, upper) == where(upper, "manifests/d/.wh.x") + (
        "is under 'manifests/d', a symlink: cvo never writes through one")
    assert (target / "release-manifests/x").read_text() == "x"


def test_a_symlink_that_a_later_link_makes_leave_the_tree_is_refused_once_all_layers_are_applied(
        target: Path) -> None:
    # manifests/x/y/a -> b/../.. stays inside while b does not exist; once b -> ../../../release-manifests is
    # there the kernel follows b first, and a leads to the target's parent
    lower = layer(directory("manifests/x/y"), symlink("manifests/x/y/a", "b/../.."))
    upper = layer(symlink("manifests/x/y/b", "../../../release-manifests"), directory("release-manifests"))
    message = refused(target, lower, upper)
    assert message == where(lower, "manifests/x/y/a") + (
        "is a symlink to 'b/../..', which leads outside the image (once every layer is applied)")
    assert not Path(os.path.realpath(target / "manifests/x/y/a")).is_relative_to(target)  # what was at stake


def test_a_chain_of_more_than_40_symlinks_is_refused(target: Path) -> None:
    links = [symlink(f"manifests/l{i}", f"l{i + 1}") for i in range(41)] + [symlink("manifests/l41", "l0")]
    blob = layer(*links)
    assert refused(target, blob) == where(blob, "manifests/l41") + "is a symlink to 'l0', through more than 40 links"


def test_symlinks_that_take_too_long_to_follow_are_refused(target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,000 components per target, 40 links deep: checking them would take 80,000 lookups each
    from cvo.images import extract

    monkeypatch.setattr(extract, "MAX_LINK_STEPS", 10_000)
    long = "/".join(["."] * 2000)
    blob = layer(*(symlink(f"manifests/l{i}", f"{long}/l{i + 1}") for i in range(40)))
    message = refused(target, blob)
    assert message.endswith("is a symlink: following the symlinks written took more than 10000 steps"), message


def test_outside_the_payload_links_and_devices_are_only_counted(target: Path) -> None:
    # an OS layer's absolute symlinks, links leaving it, device nodes: never written, so never a risk
    blob = layer(symlink("etc/localtime", "/usr/share/zoneinfo/UTC"), symlink("lib/x", "../../../../outside"),
                 hardlink("usr/h", "/etc/shadow"), entry("dev/null", tarfile.CHRTYPE),
                 entry("dev/sda", tarfile.BLKTYPE), entry("run/fifo", tarfile.FIFOTYPE), file("manifests/a", "a"))
    stats = extract_layers(IMAGE, [blob.pair()], target)
    assert (stats.skipped, stats.files) == (6, 2)
    assert os.listdir(target) == ["manifests"]


# -- caps -----------------------------------------------------------------------------------------------------

def test_too_many_files(target: Path) -> None:
    blob = layer(*(file(f"manifests/{i}") for i in range(4)))
    assert refused(target, blob, limits=ExtractLimits(max_files=4)) == where(blob, "manifests/3") + (
        "the layers hold more than 4 files under release-manifests/ and manifests/")  # manifests/ is the 1st


def test_too_many_bytes_written_is_refused_before_the_file_is_read(target: Path) -> None:
    blob = layer(file("manifests/a", b"a" * 60), file("manifests/b", b"b" * 60))
    assert refused(target, blob, limits=ExtractLimits(max_written_bytes=100)) == where(blob, "manifests/b") + (
        "a file of 60 bytes would take the files written past the limit of 100 bytes")
    # a header that claims a terabyte: refused from the header, before any data
    big = Blob(gzipped(header(entry("manifests/huge", size=1 << 40))))
    message = refused(_fresh(target), big)
    assert message == where(big, "manifests/huge") + (
        f"a file of {1 << 40} bytes would take the files written past the limit of {512 << 20} bytes")


def _fresh(target: Path) -> Path:
    import shutil

    shutil.rmtree(target)
    target.mkdir()
    return target


def test_a_negative_size_from_a_pax_record(target: Path) -> None:
    blob = layer(entry("manifests/a", data=b"", pax={"size": "-5"}))
    assert refused(target, blob) == where(blob, "manifests/a") + "has a negative size (-5)"


def test_too_many_entries(target: Path) -> None:
    blob = layer(*(file(f"usr/{i}") for i in range(6)))
    assert refused(target, blob, limits=ExtractLimits(max_entries=5)) == where(blob, "usr/5") + (
        "the layers hold more than 5 entries")


def test_names_and_link_targets_over_the_path_limit(target: Path) -> None:
    name = "etc/" + "/".join(["d" * 200] * 21)  # 4,224 bytes; outside the payload too
    blob = layer(file(name))
    assert refused(target, blob) == where(blob, name) + f"has a name of {len(name)} bytes, over the limit of 4096"
    link = layer(symlink("manifests/l", "x" * 5000))
    assert refused(_fresh(target), link).endswith("is a symlink whose target is over the limit of 4096 bytes")


def test_a_written_entry_deeper_than_the_limit(target: Path) -> None:
    deep = "manifests/" + "/".join("d" * 65)
    blob = layer(file(deep), file("usr/" + "/".join("d" * 100)))
    assert refused(target, blob).endswith("is 66 directories deep, over the limit of 64")
    ok = layer(file("usr/" + "/".join("d" * 100)), file("manifests/" + "/".join("d" * 60)))
    extract_layers(IMAGE, [ok.pair()], _fresh(target))


def test_too_many_header_bytes(target: Path) -> None:
    blob = layer(*(entry(f"usr/{i}", pax={"comment": "c" * 1000}) for i in range(20)))
    assert refused(target, blob, limits=ExtractLimits(max_header_bytes=10_000)).endswith(
        "the layers hold more than 10000 bytes of pax and long-name headers")


@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME])
def test_a_header_tarfile_would_read_whole_is_refused_before_it_is_read(target: Path, kind: bytes) -> None:
    # it claims 2 MiB and holds nothing: refused from its size alone
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = kind, 2 << 20
    blob = Blob(gzipped(info.tobuf(tarfile.USTAR_FORMAT) + bytes(1024)))
    assert refused(target, blob) == f"image {IMAGE}: layer {blob.descriptor.digest}: at its start: " + (
        f"a pax or long-name header of {2 << 20} bytes (at tar byte 0) is over the limit of {MAX_HEADER_BYTES}")


@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME])
def test_a_long_run_of_headers_is_refused_not_a_recursion_error(target: Path, kind: bytes) -> None:
    # tarfile reads each pax or long-name header by recursion into the next: 5,000 in a row (2.5 MB, a few
    # kB gzipped) made a RecursionError
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = kind, 20
    one = info.tobuf(tarfile.USTAR_FORMAT) + b"20 comment=aaaaaaaa\n".ljust(512, b"\0")
    blob = Blob(gzipped(one * 5000 + tar(file("manifests/a", "a"))))
    assert refused(target, blob) == f"image {IMAGE}: layer {blob.descriptor.digest}: at its start: " + (
        "more than 8 pax or long-name headers in a row (at tar byte 8192)")


def test_a_global_header_an_extended_one_and_long_names_in_a_row_are_read(target: Path) -> None:
    name, link = "manifests/" + "n" * 200, "m" * 150
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "git"}) as archive:
        info, data = entry(name, data=b"x", pax={"SCHILY.xattr.security.selinux": "system_u:object_r:etc_t:s0"})
        archive.addfile(info, io.BytesIO(data))
        archive.addfile(symlink("manifests/" + link, name.removeprefix("manifests/"))[0])
    extract_layers(IMAGE, [Blob(gzipped(buf.getvalue())).pair()], target)
    assert (target / "manifests" / link).read_text() == "x"


def test_global_pax_headers_with_many_keys(target: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT,
                      pax_headers={f"k{i}": "v" for i in range(65)}) as archive:
        info, data = file("usr/a", "a")
        archive.addfile(info, io.BytesIO(data))
    blob = Blob(gzipped(buf.getvalue()))
    assert refused(target, blob) == where(blob, "usr/a") + "global pax headers with more than 64 keys"


def test_sparse_files_are_refused(target: Path) -> None:
    old = tarfile.TarInfo("usr/sparse")  # GNU sparse: refused wherever it is (its map is read whole)
    old.type = tarfile.GNUTYPE_SPARSE
    old_blob = Blob(gzipped(old.tobuf(tarfile.GNU_FORMAT) + bytes(1024)))
    assert refused(target, old_blob).endswith("a GNU sparse file (at tar byte 0), which cvo does not extract")
    pax10 = layer(entry("usr/s", pax={"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                                      "GNU.sparse.name": "usr/s", "GNU.sparse.realsize": "10"}, data=b"1\n0\n10\n"))
    assert refused(_fresh(target), pax10).endswith("a GNU sparse file (at tar byte 0), which cvo does not extract")
    pax01 = layer(entry("manifests/s", pax={"GNU.sparse.map": "0,4", "GNU.sparse.size": "4"}, data=b"data"))
    assert refused(_fresh(target), pax01) == where(pax01, "manifests/s") + (
        "is a sparse file, which cvo does not extract")


# -- gzip bombs -----------------------------------------------------------------------------------------------

def test_a_gzip_bomb_stops_at_the_cap(target: Path) -> None:
    zeros = bytes(64 << 20)
    blob = layer(file("usr/zeros", zeros))
    assert len(blob.data) < 100_000  # a small compressed file that decompresses to 64 MiB
    assert refused(target, blob, limits=ExtractLimits(max_tar_bytes=1 << 20)) == where(blob, "usr/zeros") + (
        "the layers hold more than 1048576 bytes of tar (gunzipped)")


def test_a_layer_that_would_decompress_forever_stops_at_the_cap(target: Path) -> None:
    # never-ending gzip: a tar header for a terabyte of zeros outside the payload, then zeros without end
    source = EndlessGzip(header(entry("usr/zeros", size=1 << 40)))
    blob = Blob(b"", digest="sha256:" + "0" * 64, size=1 << 50, stream=source)
    cap = 32 << 20
    message = refused(target, blob, limits=ExtractLimits(max_tar_bytes=cap))
    assert message == where(blob, "usr/zeros") + f"the layers hold more than {cap} bytes of tar (gunzipped)"
    assert source.produced < 64 << 10  # about 1 kB of deflate per MiB: it stopped at the cap, not later


# -- blobs that are not what their descriptor says -----------------------------------------------------------

def test_a_layer_that_does_not_match_its_digest(target: Path) -> None:
    good = layer(file("manifests/a", "a"))
    blob = Blob(good.data, digest=sha256_of(b"another layer"))
    message = refused(target, blob)
    assert message == (f"image {IMAGE}: layer {blob.descriptor.digest} does not match its content "
                       f"({sha256_of(good.data)})")


@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_a_truncated_layer_says_it_ended_early(target: Path, compression: str) -> None:
    whole = layer(file("manifests/a", os.urandom(40_000)), file("manifests/b", "b"), compression=compression)
    cut = Blob(whole.data[: len(whole.data) // 2], whole.media_type, whole.descriptor.digest, len(whole.data))
    message = refused(target, cut)
    assert message == (f"image {IMAGE}: layer {whole.descriptor.digest} ended after {len(cut.data)} of its "
                       f"declared {len(whole.data)} bytes")


def test_a_layer_longer_than_declared(target: Path) -> None:
    whole = layer(file("manifests/a", "a"))
    blob = Blob(whole.data + b"x" * 100, digest=whole.descriptor.digest, size=len(whole.data))
    assert refused(target, blob) == (f"image {IMAGE}: layer {blob.descriptor.digest} is longer than its declared "
                                     f"{len(whole.data)} bytes")


def test_bytes_that_are_not_what_the_media_type_says(target: Path) -> None:
    plain = tar(file("manifests/a", "a"))
    as_gzip = Blob(plain, media.OCI_LAYER_GZIP)
    assert refused(target, as_gzip).startswith(
        f"image {IMAGE}: layer {as_gzip.descriptor.digest}: at its start: not a valid gzip-compressed tar stream: "
        f"not gzip: Error -3 while decompressing data")
    as_tar = Blob(gzipped(plain), media.OCI_LAYER)
    assert refused(_fresh(target), as_tar).startswith(
        f"image {IMAGE}: layer {as_tar.descriptor.digest}: at its start: not a valid tar stream: ")
    empty = Blob(b"", media.OCI_LAYER)
    assert refused(_fresh(target), empty).endswith("at its start: not a valid tar stream: empty file")


def test_a_damaged_gzip_stream_with_a_matching_digest(target: Path) -> None:
    good = layer(file("manifests/a", os.urandom(20_000)), file("manifests/b", "b"))
    data = bytearray(good.data)
    data[len(data) // 2] ^= 0xFF
    blob = Blob(bytes(data))  # the digest of the damaged bytes: only the gzip stream can tell
    assert "not a valid gzip-compressed tar stream" in refused(target, blob)


@pytest.mark.parametrize(("media_type", "why"), [
    (media.OCI_LAYER_ZSTD, "is zstd-compressed, which cvo does not read (gzip-compressed or plain tar only)"),
    ("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
     "is of media type 'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip', not a tar layer"),
])
def test_layers_of_other_media_types_are_refused_unread(target: Path, media_type: str, why: str) -> None:
    blob = Blob(b"\x28\xb5\x2f\xfd", media_type)
    assert refused(target, blob) == f"image {IMAGE}: layer {blob.descriptor.digest} {why}"
    assert blob.readers == []
