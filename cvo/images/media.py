"""The media types a release image is made of (OCI image-spec ``media-types.md``, Docker's
``distribution/manifest/schema2`` and ``manifestlist``)."""

from __future__ import annotations

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"

MANIFESTS = (DOCKER_MANIFEST, OCI_MANIFEST)
INDEXES = (DOCKER_LIST, OCI_INDEX)
# What a client sends in Accept: every manifest and index kind cvo reads (schema 1 is not among them).
ACCEPT = (*MANIFESTS, *INDEXES)
LAYERS_GZIP = (OCI_LAYER_GZIP, DOCKER_LAYER_GZIP)
LAYERS = (OCI_LAYER, *LAYERS_GZIP)
CONFIGS = (OCI_CONFIG, DOCKER_CONFIG)
