"""Fuzz targets of cvo.images (manifests, indexes, image configs, layers): name -> (hypothesis strategy, target),
merged into fuzz_targets.TARGETS.

``image-manifest`` / ``image-index``: a manifest or index near a real one (fields replaced by any JSON, dropped,
bytes cut), served under any media type; ``image-config``: an image config near a release image's;
``layer-tar``: one to three layers of generated entries (names with ``..``, absolute ones, whiteouts, links in
and out of the tree, devices, FIFOs, sparse and unknown types), plain or gzipped, their bytes sometimes cut,
flipped or spliced.  Each may only give its typed value or raise :class:`~cvo.images.errors.ImageError` of one
line naming the image; an extraction writes nothing beside its target and leaves only what it may keep.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

from cvo.images import media
from cvo.images.digest import sha256_of
from cvo.images.errors import ImageError
from cvo.images.extract import KEPT, ExtractLimits, extract_layers
from cvo.images.manifest import ImageConfig, ImageIndex, ImageManifest, parse_config, parse_manifest
from cvo.images.reference import SHA256
from cvo.images.repository import RawManifest
from tests.support.layers import IMAGE, Blob, gzipped

TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {}

DIGESTS = ["sha256:" + c * 64 for c in "0af"] + ["sha256:" + "A" * 64, "sha512:" + "0" * 128, "sha256:", ""]
MEDIA_TYPES = [*media.ACCEPT, *media.LAYERS, *media.CONFIGS, media.OCI_LAYER_ZSTD, "application/json",
               "application/octet-stream", "", "text/plain; charset=utf-8", media.DOCKER_MANIFEST + "; x=y",
               "application/vnd.docker.distribution.manifest.v1+prettyjws", "a/b\nc"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**63) | st.floats(allow_nan=False) | st.sampled_from(DIGESTS)
    | st.sampled_from(MEDIA_TYPES) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)


def _descriptor(media_type: str, size: int, digest: str, platform: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"mediaType": media_type, "size": size, "digest": digest}
    if platform is not None:
        doc["platform"] = platform
    return doc


MANIFEST = {"schemaVersion": 2, "mediaType": media.DOCKER_MANIFEST,
            "config": _descriptor(media.DOCKER_CONFIG, 7023, DIGESTS[0]),
            "layers": [_descriptor(media.DOCKER_LAYER_GZIP, 79_000_000, DIGESTS[1]),
                       _descriptor(media.DOCKER_LAYER_GZIP, 4_100_000, DIGESTS[2])]}
INDEX = {"schemaVersion": 2, "mediaType": media.OCI_INDEX,
         "manifests": [_descriptor(media.OCI_MANIFEST, 500, DIGESTS[0], {"os": "linux", "architecture": "amd64"}),
                       _descriptor(media.OCI_MANIFEST, 501, DIGESTS[1],
                                   {"os": "linux", "architecture": "arm64", "variant": "v8"})]}
CONFIG = {"created": "2024-07-01T12:00:00Z", "os": "linux", "architecture": "amd64",
          "config": {"Labels": {"io.openshift.release": "4.16.3",
                                "io.openshift.release.base-image-digest": DIGESTS[0]}},
          "rootfs": {"type": "layers", "diff_ids": DIGESTS[:2]}}


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _paths(value, (*prefix, i))
    return out


@st.composite
def near(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    """``base`` with a few fields replaced by any JSON value or dropped, as bytes; now and then cut short or
    not JSON at all."""
    doc = orjson.loads(orjson.dumps(base))
    paths = _paths(doc)
    for path in draw(st.lists(st.sampled_from(paths), max_size=3)):
        parent: Any = doc
        try:
            for step in path[:-1]:
                parent = parent[step]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change reshaped the document above this path
        key = path[-1]
        if not ((isinstance(parent, dict) and isinstance(key, str))
                or (isinstance(parent, list) and isinstance(key, int) and key < len(parent))):
            continue
        if draw(st.booleans()):
            parent[key] = draw(json_values)
        elif isinstance(parent, dict):
            parent.pop(key, None)
    data = orjson.dumps(doc)
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return data[:draw(st.integers(0, len(data)))]
    if choice == 1:
        return draw(st.binary(max_size=40))
    if choice == 2:
        return orjson.dumps(draw(json_values))
    return data


def check_error(err: ImageError) -> None:
    text = str(err)
    assert text.startswith(f"image {IMAGE}: "), text
    assert "\n" not in text and "\r" not in text, text


def manifest_target(case: tuple[bytes, str]) -> None:
    data, served = case
    try:
        parsed = parse_manifest(IMAGE, RawManifest(data, served, DIGESTS[2]))
    except ImageError as err:
        check_error(err)
        return
    assert isinstance(parsed, ImageManifest | ImageIndex)
    descriptors = parsed.manifests if isinstance(parsed, ImageIndex) else (parsed.config, *parsed.layers)
    for d in descriptors:
        assert SHA256.fullmatch(d.digest) and type(d.size) is int and d.size >= 0 and d.media_type, d
    if isinstance(parsed, ImageManifest):
        assert parsed.media_type in media.MANIFESTS and all(d.media_type in media.LAYERS for d in parsed.layers)
        assert parsed.config.media_type in media.CONFIGS
    else:
        assert parsed.media_type in media.INDEXES


def config_target(data: bytes) -> None:
    try:
        parsed = parse_config(IMAGE, data)
    except ImageError as err:
        check_error(err)
        return
    assert isinstance(parsed, ImageConfig)
    assert all(isinstance(v, str) for v in (parsed.created, parsed.os, parsed.architecture, parsed.variant))
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in parsed.labels.items())


served_types = st.sampled_from(MEDIA_TYPES)
TARGETS["image-manifest"] = (st.tuples(near(MANIFEST), served_types), manifest_target)
TARGETS["image-index"] = (st.tuples(near(INDEX), served_types), manifest_target)
TARGETS["image-config"] = (near(CONFIG), config_target)


# -- layers ---------------------------------------------------------------------------------------------------

# Mostly entries a real layer has (so that extractions go deep), now and then one that must be refused.
SAFE_COMPONENTS = ["manifests", "release-manifests", "manifests", "release-manifests", "etc", "a", "b", "a.yaml",
                   "release-metadata", ".wh.a", ".wh.a.yaml", ".wh..wh..opq", ".wh.manifests", "d" * 120]
WILD_COMPONENTS = ["..", ".", "", ".wh..wh.plnk", ".wh.", ".wh..", "outside", "canary", "\n", "x" * 300]
SAFE_LINKS = ["a", "a.yaml", "../a", "../release-manifests", "../release-manifests/a.yaml", "manifests/a",
              "release-manifests/a.yaml", "b/../a", "../manifests/a/../b", "."]
WILD_LINKS = ["..", "../..", "../../outside/canary", "../../../outside", "/etc/passwd", "/", "etc/a", "", "b/../.."]
SAFE_KINDS = [tarfile.REGTYPE, tarfile.REGTYPE, tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE, tarfile.DIRTYPE,
              tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE]
# pax and GNU long-name headers written as entries: their data is read as the next entry's header records
WILD_KINDS = [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE, tarfile.GNUTYPE_SPARSE, b"V", b"7",
              tarfile.XHDTYPE, tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK]


def _record(key: str, value: str) -> bytes:
    """One pax record, ``LEN key=value\\n`` with LEN counting itself."""
    body = f" {key}={value}\n".encode()
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length += 1
    return str(length).encode() + body


PAX_DATA = [_record("path", "manifests/../../x"), _record("path", "/etc/passwd"), _record("path", "manifests/p"),
            _record("linkpath", "/"), _record("linkpath", "../../outside"), _record("size", "-5"),
            _record("size", "99999999999999999999"), _record("size", "x"), _record("mtime", "1e999"),
            _record("uid", "-1"), _record("GNU.sparse.major", "1") + _record("GNU.sparse.minor", "0"),
            _record("GNU.sparse.map", "0,1,x"), _record("GNU.sparse.size", "10"), _record("hdrcharset", "BINARY"),
            b"0 path=x\n", b"99 path=short\n", b"manifests/long-name\0"]


def _names(components: st.SearchStrategy[str], prefixes: list[str]) -> st.SearchStrategy[str]:
    return st.tuples(st.sampled_from(prefixes), st.lists(components, min_size=1, max_size=5)).map(
        lambda t: t[0] + "/".join(t[1]))


def _entries(wild: bool) -> st.SearchStrategy[tuple[str, bytes, bytes, str]]:
    """Entries of a layer a real image could have, or (``wild``) with one thing in ten that must be refused."""
    def pick(safe: list[Any], bad: list[Any]) -> st.SearchStrategy[Any]:
        return st.integers(0, 9).flatmap(lambda n: st.sampled_from(bad if wild and n == 0 else safe))

    names = _names(pick(SAFE_COMPONENTS, WILD_COMPONENTS), ["", "", "", "", "", "", "./", "/"] if wild else ["", "./"])
    data = st.binary(max_size=40) | st.sampled_from([b"", b"kind: A\n"])
    if wild:
        data |= st.lists(st.sampled_from(PAX_DATA), min_size=1, max_size=3).map(b"".join)
    return st.tuples(names, pick(SAFE_KINDS, WILD_KINDS), data, pick(SAFE_LINKS, WILD_LINKS) | names)


layers_spec = st.fixed_dictionaries({
    "entries": st.integers(0, 3).flatmap(lambda n: st.lists(_entries(wild=n == 0), max_size=12)),
    "format": st.sampled_from([tarfile.PAX_FORMAT, tarfile.GNU_FORMAT]),
    "gzip": st.booleans(),
    # (where, what): 0 as made; 1 cut the tar, 2 flip a tar byte, 3 cut the gzip, 4 flip a gzip byte, 5 splice
    "damage": st.tuples(st.integers(0, 5) | st.just(0) | st.just(0), st.integers(0, 1 << 16), st.binary(max_size=8)),
    "digest_matches": st.booleans() | st.just(True),
})
tar_specs = st.lists(layers_spec, min_size=1, max_size=3)


def _damage(data: bytes, where: int, at: int, splice: bytes) -> bytes:
    if not data:
        return data
    at %= len(data)
    if where in (1, 3):
        return data[:at]
    if where in (2, 4):
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
    return data[:at] + splice + data[at:]


def build_layer(spec: dict[str, Any]) -> Blob:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=spec["format"], encoding="utf-8",
                      errors="surrogateescape") as archive:
        for name, kind, data, linkname in spec["entries"]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mtime = kind, linkname, 1_700_000_000
            regular = kind in tarfile.REGULAR_TYPES or kind in (tarfile.XHDTYPE, tarfile.XGLTYPE,
                                                                tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
            info.size = len(data) if regular else 0
            archive.addfile(info, io.BytesIO(data) if regular else None)
    where, at, splice = spec["damage"]
    data = buf.getvalue()
    if where in (1, 2) or (where in (3, 4) and not spec["gzip"]):
        data = _damage(data, where, at, splice)  # the tar itself, then (maybe) gzipped whole
    made = blob = gzipped(data) if spec["gzip"] else data
    if where == 5 or (where in (3, 4) and spec["gzip"]):
        blob = _damage(blob, where, at, splice)  # the bytes as served
    return Blob(blob, media.OCI_LAYER_GZIP if spec["gzip"] else media.OCI_LAYER,
                digest=sha256_of(blob if spec["digest_matches"] else made + b"x"))


LIMITS = ExtractLimits(max_written_bytes=1 << 20, max_files=200, max_tar_bytes=8 << 20, max_entries=1000)


def _snapshot(root: Path) -> dict[str, tuple[int, bytes | str]]:
    out: dict[str, tuple[int, bytes | str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st_ = path.lstat()
            content: bytes | str = os.readlink(path) if path.is_symlink() else (
                path.read_bytes() if stat.S_ISREG(st_.st_mode) else b"")
            out[str(path.relative_to(root))] = (stat.S_IFMT(st_.st_mode), content)
    return out


def tar_stream_target(specs: list[dict[str, Any]]) -> None:
    """Layers of any entries and bytes: extracted or refused with one ImageError line naming the image and the
    layer; nothing written beside the target; only regular files, directories and links leading inside the
    kept directories under it."""
    blobs = [build_layer(spec) for spec in specs]
    with tempfile.TemporaryDirectory(prefix="cvo-fuzz-layers-") as tmp:
        root = Path(tmp)
        (root / "outside").mkdir()
        (root / "outside" / "canary").write_text("canary")
        target = root / "tree"
        target.mkdir()
        before = _snapshot(root / "outside")
        try:
            extract_layers(IMAGE, [b.pair() for b in blobs], target, LIMITS)
            extracted = True
        except ImageError as err:
            check_error(err)
            assert str(err).startswith(f"image {IMAGE}: layer sha256:"), str(err)
            extracted = False
        assert sorted(os.listdir(root)) == ["outside", "tree"]
        assert _snapshot(root / "outside") == before
        tree = _snapshot(target)
        for rel, (kind, _) in tree.items():
            assert rel.split("/")[0] in KEPT, rel
            assert kind in (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK), (rel, kind)
        if extracted:  # links are checked once every layer is in: a refused extraction's tree is thrown away
            real_target = os.path.realpath(target)
            for rel, (kind, _) in tree.items():
                if kind == stat.S_IFLNK:
                    resolved = Path(os.path.realpath(target / rel))
                    assert any(resolved.is_relative_to(Path(real_target, k)) for k in KEPT), (rel, resolved)


TARGETS["layer-tar"] = (tar_specs, tar_stream_target)
