"""parse_manifest and parse_config: Docker schema 2 and OCI manifests, indexes and image configs as typed values;
anything else one ImageError line naming the image and the field."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cvo.images import media
from cvo.images.errors import ImageError
from cvo.images.manifest import (
    MAX_ENTRIES,
    MAX_MANIFEST_BYTES,
    ImageConfig,
    ImageIndex,
    ImageManifest,
    parse_config,
    parse_manifest,
)
from cvo.images.repository import Descriptor, Platform, RawManifest

IMAGE = "quay.example.com/ocp/release:4.16.3"
D1, D2, D3 = ("sha256:" + c * 64 for c in "123")
MANIFEST_DIGEST = "sha256:" + "f" * 64


def raw(doc: Any, served: str = media.DOCKER_MANIFEST) -> RawManifest:
    return RawManifest(doc if isinstance(doc, bytes) else orjson.dumps(doc), served, MANIFEST_DIGEST)


def docker_manifest(**changes: Any) -> dict[str, Any]:
    """A release image's manifest as quay.io serves it (Docker schema 2)."""
    doc: dict[str, Any] = {
        "schemaVersion": 2, "mediaType": media.DOCKER_MANIFEST,
        "config": {"mediaType": media.DOCKER_CONFIG, "size": 7023, "digest": D1},
        "layers": [{"mediaType": media.DOCKER_LAYER_GZIP, "size": 79_000_000, "digest": D2},
                   {"mediaType": media.DOCKER_LAYER_GZIP, "size": 4_100_000, "digest": D3}],
    }
    doc.update(changes)
    return doc


def refused(doc: Any, served: str = media.DOCKER_MANIFEST) -> str:
    with pytest.raises(ImageError) as err:
        parse_manifest(IMAGE, raw(doc, served))
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"image {IMAGE}: "), message
    return message.removeprefix(f"image {IMAGE}: ")


def test_a_docker_schema_2_manifest() -> None:
    manifest = parse_manifest(IMAGE, raw(docker_manifest()))
    assert manifest == ImageManifest(media.DOCKER_MANIFEST, Descriptor(media.DOCKER_CONFIG, D1, 7023),
                                     (Descriptor(media.DOCKER_LAYER_GZIP, D2, 79_000_000),
                                      Descriptor(media.DOCKER_LAYER_GZIP, D3, 4_100_000)), MANIFEST_DIGEST)


def test_an_oci_manifest_may_omit_its_media_type() -> None:
    doc = {"schemaVersion": 2, "config": {"mediaType": media.OCI_CONFIG, "size": 2, "digest": D1},
           "layers": [{"mediaType": media.OCI_LAYER, "size": 10, "digest": D2,
                       "annotations": {"org.opencontainers.image.title": "x"}}]}
    manifest = parse_manifest(IMAGE, raw(doc, media.OCI_MANIFEST))
    assert isinstance(manifest, ImageManifest) and manifest.media_type == media.OCI_MANIFEST
    assert manifest.layers[0].annotations == {"org.opencontainers.image.title": "x"}
    # read from a file (an OCI layout's blob): the shape says which it is
    assert parse_manifest(IMAGE, raw(doc, "")).media_type == media.OCI_MANIFEST
    assert parse_manifest(IMAGE, raw({"schemaVersion": 2, "manifests": []}, "application/json")).media_type == (
        media.OCI_INDEX)


def test_a_served_media_type_with_parameters() -> None:
    assert parse_manifest(IMAGE, raw(docker_manifest(), media.DOCKER_MANIFEST + "; charset=utf-8")).media_type == (
        media.DOCKER_MANIFEST)


@pytest.mark.parametrize("kind", [media.DOCKER_LIST, media.OCI_INDEX])
def test_an_index_lists_a_manifest_per_platform(kind: str) -> None:
    doc = {"schemaVersion": 2, "mediaType": kind, "manifests": [
        {"mediaType": media.DOCKER_MANIFEST, "size": 1, "digest": D1,
         "platform": {"os": "linux", "architecture": "amd64"}},
        {"mediaType": media.DOCKER_MANIFEST, "size": 2, "digest": D2,
         "platform": {"os": "linux", "architecture": "arm64", "variant": "v8", "os.features": ["x"]}},
        {"mediaType": media.OCI_MANIFEST, "size": 3, "digest": D3}]}  # an attestation: no platform
    index = parse_manifest(IMAGE, raw(doc, kind))
    assert index == ImageIndex(kind, (Descriptor(media.DOCKER_MANIFEST, D1, 1, Platform("linux", "amd64")),
                                      Descriptor(media.DOCKER_MANIFEST, D2, 2, Platform("linux", "arm64", "v8")),
                                      Descriptor(media.OCI_MANIFEST, D3, 3)), MANIFEST_DIGEST)


BAD_MANIFESTS: list[tuple[Any, str, str]] = [
    (b"\x00not json", media.DOCKER_MANIFEST, "manifest is not JSON: "),
    (b"[]", media.DOCKER_MANIFEST, "manifest is not a JSON object"),
    (docker_manifest(schemaVersion=1), media.DOCKER_MANIFEST, "manifest schemaVersion 1 is not 2 (schema 1 is not supported)"),
    (docker_manifest(schemaVersion=2.0), media.DOCKER_MANIFEST, "manifest schemaVersion '2.0' is not 2"),
    (docker_manifest(schemaVersion="2"), media.DOCKER_MANIFEST, "manifest schemaVersion '2' is not 2"),
    (docker_manifest(schemaVersion=True), media.DOCKER_MANIFEST, "manifest schemaVersion 'True' is not 2"),
    ({**docker_manifest(), "schemaVersion": None}, media.DOCKER_MANIFEST, "manifest schemaVersion 'None' is not 2"),
    (docker_manifest(), media.OCI_MANIFEST, f"manifest declares media type '{media.DOCKER_MANIFEST}' but was "
                                            f"served as {media.OCI_MANIFEST}"),
    (docker_manifest(mediaType="application/x\nfoo"), media.DOCKER_MANIFEST,
     "manifest declares media type 'application/x\\nfoo' but was served as"),
    (docker_manifest(mediaType=7), media.DOCKER_MANIFEST, "manifest: mediaType is not a string"),
    (docker_manifest(mediaType="application/vnd.oci.artifact.manifest.v1+json"), "application/json",
     "manifest of unknown media type 'application/vnd.oci.artifact.manifest.v1+json'"),
    ({**docker_manifest(), "mediaType": None}, "application/vnd.docker.distribution.manifest.v1+prettyjws",
     "manifest of unknown media type 'application/vnd.docker.distribution.manifest.v1+prettyjws'"),
    ({"schemaVersion": 2}, "", "manifest has no media type and is neither an image manifest nor an index"),
    (docker_manifest(layers={}), media.DOCKER_MANIFEST, "manifest: layers is not a list"),
    ({"schemaVersion": 2, "manifests": None}, media.OCI_INDEX, "index: manifests is not a list"),
    (docker_manifest(config=None), media.DOCKER_MANIFEST, "manifest config is not an object"),
    (docker_manifest(config={"size": 1, "digest": D1}), media.DOCKER_MANIFEST, "manifest config: mediaType is missing"),
    (docker_manifest(config={"mediaType": "", "size": 1, "digest": D1}), media.DOCKER_MANIFEST,
     "manifest config: mediaType is not a non-empty string"),
    (docker_manifest(config={"mediaType": "application/vnd.cncf.helm.config.v1+json", "size": 1, "digest": D1}),
     media.DOCKER_MANIFEST, "manifest config of unknown media type 'application/vnd.cncf.helm.config.v1+json'"),
    (docker_manifest(layers=[{"mediaType": media.OCI_LAYER_ZSTD, "size": 1, "digest": D2}]), media.DOCKER_MANIFEST,
     f"layer 0 ({D2}) of unsupported media type '{media.OCI_LAYER_ZSTD}'"),
    (docker_manifest(layers=[{"mediaType": media.OCI_LAYER, "size": 1}]), media.DOCKER_MANIFEST,
     "layer 0: digest 'None' is not sha256:<64 lowercase hex digits>"),
    (docker_manifest(layers=[{"mediaType": media.OCI_LAYER, "size": 1, "digest": "sha512:" + "a" * 128}]),
     media.DOCKER_MANIFEST, "layer 0: digest 'sha512:aaaa"),
    (docker_manifest(layers=[{"mediaType": media.OCI_LAYER, "size": 1, "digest": D2.upper()}]),
     media.DOCKER_MANIFEST, "layer 0: digest 'SHA256:2222"),
    (docker_manifest(layers=[{"mediaType": media.OCI_LAYER, "digest": D2}]), media.DOCKER_MANIFEST,
     "layer 0: size 'None' is not a non-negative integer"),
    (docker_manifest(layers=[{"mediaType": media.OCI_LAYER, "size": -1, "digest": D2}]), media.DOCKER_MANIFEST,
     "layer 0: size '-1' is not a non-negative integer"),
    (docker_manifest(layers=[{"mediaType": media.OCI_LAYER, "size": 1.0, "digest": D2}]), media.DOCKER_MANIFEST,
     "layer 0: size '1.0' is not a non-negative integer"),
    (docker_manifest(layers=[{"mediaType": media.OCI_LAYER, "size": True, "digest": D2}]), media.DOCKER_MANIFEST,
     "layer 0: size 'True' is not a non-negative integer"),
    (docker_manifest(layers=[{"mediaType": media.OCI_LAYER, "size": 1, "digest": D2, "annotations": {"a": 1}}]),
     media.DOCKER_MANIFEST, "layer 0: annotations is not a map of strings"),
    ({"schemaVersion": 2, "manifests": [{"mediaType": media.OCI_MANIFEST, "size": 1, "digest": D1,
                                         "platform": "linux/amd64"}]}, media.OCI_INDEX,
     "index entry 0: platform is not an object"),
    ({"schemaVersion": 2, "manifests": [{"mediaType": media.OCI_MANIFEST, "size": 1, "digest": D1,
                                         "platform": {"os": ["linux"]}}]}, media.OCI_INDEX,
     "index entry 0 platform: os is not a string"),
    (docker_manifest(layers=[{"mediaType": media.OCI_LAYER, "size": 1, "digest": D2}] * (MAX_ENTRIES + 1)),
     media.DOCKER_MANIFEST, f"manifest has {MAX_ENTRIES + 1} layers, over the limit of {MAX_ENTRIES}"),
    ({"schemaVersion": 2, "manifests": [{}] * (MAX_ENTRIES + 1)}, media.OCI_INDEX,
     f"index has {MAX_ENTRIES + 1} manifests, over the limit of {MAX_ENTRIES}"),
    (b" " * (MAX_MANIFEST_BYTES + 1), media.DOCKER_MANIFEST,
     f"manifest is {MAX_MANIFEST_BYTES + 1} bytes, over the limit of {MAX_MANIFEST_BYTES}"),
    (b"[" * 2000 + b"]" * 2000, media.DOCKER_MANIFEST, "manifest is not JSON: "),
]


@pytest.mark.parametrize(("doc", "served", "message"), BAD_MANIFESTS, ids=[m[2][:50] for m in BAD_MANIFESTS])
def test_a_manifest_that_cannot_be_used_is_refused_naming_the_field(doc: Any, served: str, message: str) -> None:
    assert refused(doc, served).startswith(message)


def config(**fields: Any) -> bytes:
    return orjson.dumps(fields)


def test_an_image_config_gives_what_a_release_reader_uses() -> None:
    labels = {"io.openshift.release": "4.16.3", "io.openshift.release.base-image-digest": D1}
    parsed = parse_config(IMAGE, config(created="2024-07-01T12:00:00Z", os="linux", architecture="arm64",
                                        variant="v8", config={"Labels": labels, "Env": ["PATH=/bin"]},
                                        rootfs={"type": "layers", "diff_ids": [D2]}))
    assert parsed == ImageConfig("2024-07-01T12:00:00Z", "linux", "arm64", "v8", labels)
    assert parsed.release == "4.16.3"


@pytest.mark.parametrize("data", [config(), config(config=None), config(config={"Labels": None}),
                                  config(config={})])
def test_an_image_config_may_say_little(data: bytes) -> None:
    parsed = parse_config(IMAGE, data)
    assert parsed == ImageConfig()
    assert parsed.release == ""


@pytest.mark.parametrize(("data", "message"), [
    (b"{", "image config is not JSON: "),
    (b'"x"', "image config is not a JSON object"),
    (config(config=[]), "image config: config is not an object"),
    (config(config={"Labels": {"a": 1}}), "image config: config.Labels is not a map of strings"),
    (config(config={"Labels": ["a"]}), "image config: config.Labels is not a map of strings"),
    (config(created=1), "image config: created is not a string"),
    (config(architecture={}), "image config: architecture is not a string"),
    (b" " * (4 << 20) + b"{}", f"image config is {(4 << 20) + 2} bytes, over the limit of {4 << 20}"),
])
def test_an_image_config_that_cannot_be_used_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(ImageError) as err:
        parse_config(IMAGE, data)
    assert str(err.value).startswith(f"image {IMAGE}: {message}")
    assert "\n" not in str(err.value)
