"""Pulling a release image into the cache: resolve, pick the platform, extract, check, keep by digest.

    pull spec ──► manifest (an index: the manifest of this machine's architecture)
              ──► cached tree of that digest?  yes: done (by digest: no request at all)
              ──► config blob, layers applied in order into a temporary directory (cvo.images.extract)
              ──► release-manifests/release-metadata there?  no: not a release image
              ──► renamed into the cache (two pulls at once: the second finds the first's tree)

What the CVO does with a pull spec (``pkg/cvo/updatepayload.go`` ``fetchUpdatePayloadToDir``: a Pod that
copies ``/manifests`` and ``/release-manifests`` out of the image), done in process: the image's
filesystem is never assembled, only the two directories.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cvo.images.errors import ImageError, Problem
from cvo.images.extract import ExtractLimits, extract_layers
from cvo.images.layout import LayoutRepository
from cvo.images.manifest import (
    MAX_CONFIG_BYTES,
    ImageConfig,
    ImageIndex,
    ImageManifest,
    parse_config,
    parse_manifest,
)
from cvo.images.options import RegistryOptions
from cvo.images.reference import ImageRef, parse_image
from cvo.images.repository import Deadline, Descriptor, RawManifest, Repository

METADATA = Path("release-manifests") / "release-metadata"
MARKER = ".cvo-image.json"  # in a cached tree: what the image was (its manifests and config, as pulled)
MULTI = "multi"
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le",
           "s390x": "s390x"}


def go_arch() -> str:
    """This machine's architecture as Go (and OCI platforms) name it."""
    machine = platform.machine().lower()
    return _GOARCH.get(machine, machine)


def default_cache_dir() -> Path:
    """``$CVO_CACHE_DIR``, else ``$XDG_CACHE_HOME/cvo``, else ``~/.cache/cvo``; images under ``images/``."""
    if os.environ.get("CVO_CACHE_DIR"):
        return Path(os.environ["CVO_CACHE_DIR"]) / "images"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cvo" / "images"


@dataclass(frozen=True)
class PullOptions:
    """How release images are pulled."""

    registry: RegistryOptions = field(default_factory=RegistryOptions)  # credentials, TLS, read timeout
    timeout: float = 60.0  # seconds for a whole pull, retries and back-off included
    architecture: str = field(default_factory=go_arch)  # an index's entry to use; "multi": keep the index too
    cache_dir: Path = field(default_factory=default_cache_dir)
    limits: ExtractLimits = field(default_factory=ExtractLimits)

    def deadline(self) -> Deadline:
        return Deadline(self.timeout)


@dataclass(frozen=True)
class PulledRelease:
    """A release image in the cache."""

    ref: ImageRef  # as asked for
    digest: str  # of what the pull spec names (an index's own digest for a manifest list): what is signed
    pull_spec: str  # the image by that digest: what a ClusterVersion records
    directory: Path  # holds release-manifests/ and manifests/
    manifest: ImageManifest  # the platform's manifest
    config: ImageConfig
    index: ImageIndex | None = None
    cached: bool = False  # read from the cache, no layer pulled


def open_repository(ref: ImageRef, options: PullOptions, deadline: Deadline) -> Repository:
    """Where ``ref`` lives: a registry, or an OCI layout directory."""
    if ref.transport == "oci":
        return LayoutRepository(Path(ref.repository), str(ref))
    from cvo.images.registry import open_registry  # the HTTP stack, only when a registry is asked

    return open_registry(ref, options.registry, deadline)


def resolve(spec: str, options: PullOptions) -> tuple[ImageRef, str]:
    """``spec`` and the digest it names now (a tag is looked up: one manifest request)."""
    ref = parse_image(spec)
    if ref.digest:
        return ref, ref.digest
    repo = open_repository(ref, options, options.deadline())
    return ref, repo.get_manifest(ref.reference).digest


def _platforms(index: ImageIndex) -> str:
    found = sorted({f"{d.platform.os}/{d.platform.architecture}" for d in index.manifests if d.platform})
    return ", ".join(found) or "none"


def pick(image: str, index: ImageIndex, architecture: str) -> Descriptor:
    """The index's linux manifest for ``architecture`` (``multi``: this machine's)."""
    wanted = go_arch() if architecture == MULTI else architecture
    for entry in index.manifests:
        if entry.platform and entry.platform.architecture == wanted and entry.platform.os in ("linux", ""):
            return entry
    raise ImageError(image, f"the manifest list has no linux/{wanted} image (it has {_platforms(index)})",
                     Problem.NOT_FOUND)


def _tree(options: PullOptions, digest: str) -> Path:
    return options.cache_dir / "trees" / digest.replace(":", "-")


def _from_cache(ref: ImageRef, digest: str, options: PullOptions) -> PulledRelease | None:
    """The cached tree of ``digest``; ``None`` when absent or damaged (a damaged one is removed)."""
    tree = _tree(options, digest)
    marker = tree / MARKER
    if not marker.is_file():
        return None
    try:
        doc = orjson.loads(marker.read_bytes())
        image = str(ref)
        manifest = parse_manifest(image, RawManifest(doc["manifest"].encode(), doc["manifestType"],
                                                     doc["manifestDigest"]))
        index = None
        if doc.get("index"):
            parsed = parse_manifest(image, RawManifest(doc["index"].encode(), doc["indexType"], digest))
            index = parsed if isinstance(parsed, ImageIndex) else None
        config = parse_config(image, doc["config"].encode())
        if not isinstance(manifest, ImageManifest) or not (tree / METADATA).is_file():
            raise ValueError("incomplete")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ImageError):
        shutil.rmtree(tree, ignore_errors=True)
        return None
    return PulledRelease(ref, digest, str(ref.by_digest(digest)), tree, manifest, config, index, cached=True)


def pull_release(spec: str, options: PullOptions | None = None, *, into: Path | None = None) -> PulledRelease:
    """The release image ``spec`` in the cache; :class:`ImageError` naming the image and what is wrong.

    ``into`` (``cvo release extract``): the two payload directories written there instead (a directory that
    does not exist yet), copied from the cache when the digest is cached, else extracted straight into it
    (each file written once, as ``tar -x`` would) without filling the cache."""
    options = options or PullOptions()
    ref = parse_image(spec)
    if ref.digest and (hit := _from_cache(ref, ref.digest, options)) is not None:
        return _copied(hit, into)
    deadline = options.deadline()
    repo = open_repository(ref, options, deadline)
    top = repo.get_manifest(ref.reference)
    if ref.digest and top.digest != ref.digest:
        raise ImageError(str(ref), f"the manifest served is {top.digest}, not the digest asked for")
    if (hit := _from_cache(ref, top.digest, options)) is not None:
        return _copied(hit, into)
    parsed = parse_manifest(str(ref), top)
    index: ImageIndex | None = None
    raw = top
    if isinstance(parsed, ImageIndex):
        index = parsed
        entry = pick(str(ref), parsed, options.architecture)
        raw = repo.get_manifest(entry.digest)
        child = parse_manifest(str(ref), raw)
        if not isinstance(child, ImageManifest):
            raise ImageError(str(ref), f"manifest list entry {entry.digest} is itself a list")
        manifest = child
    else:
        manifest = parsed
    config_bytes = _read_config(repo, manifest)
    config = parse_config(str(ref), config_bytes)
    return _extract(ref, top, raw, manifest, config, config_bytes, index, repo, options, into)


def _copied(hit: PulledRelease, into: Path | None) -> PulledRelease:
    if into is None:
        return hit
    staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=into.parent))
    try:
        for name in ("manifests", "release-manifests"):
            if (hit.directory / name).is_dir():
                shutil.copytree(hit.directory / name, staging / name, symlinks=True)
        staging.rename(into)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return dataclasses.replace(hit, directory=into)


def _read_config(repo: Repository, manifest: ImageManifest) -> bytes:
    if manifest.config.size > MAX_CONFIG_BYTES:
        raise ImageError(repo.image, f"image config is {manifest.config.size} bytes, over {MAX_CONFIG_BYTES}")
    with repo.open_blob(manifest.config) as reader:
        data = reader.read()
        reader.finish()
    return data


def _extract(ref: ImageRef, top: RawManifest, raw: RawManifest, manifest: ImageManifest, config: ImageConfig,
             config_bytes: bytes, index: ImageIndex | None, repo: Repository, options: PullOptions,
             into: Path | None = None) -> PulledRelease:
    tree = into or _tree(options, top.digest)
    tree.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".pull-", dir=tree.parent))
    try:
        extract_layers(str(ref), ((d, repo.open_blob(d)) for d in manifest.layers), staging, options.limits)
        if not (staging / METADATA).is_file():
            raise ImageError(str(ref), f"not a release image: it has no {METADATA}")
        marker: dict[str, Any] = {"manifest": raw.data.decode("utf-8", "replace"), "manifestType": raw.media_type,
                                  "manifestDigest": raw.digest, "config": config_bytes.decode("utf-8", "replace")}
        if index is not None:
            marker.update(index=top.data.decode("utf-8", "replace"), indexType=top.media_type)
        if into is not None:
            staging.rename(into)
            return PulledRelease(ref, top.digest, str(ref.by_digest(top.digest)), into, manifest, config, index)
        (staging / MARKER).write_bytes(orjson.dumps(marker))
        with contextlib.suppress(OSError):  # another pull got there first: use its tree
            staging.rename(tree)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    if not (tree / MARKER).is_file():
        raise ImageError(str(ref), f"cannot keep the pulled image in {tree.parent}")
    return PulledRelease(ref, top.digest, str(ref.by_digest(top.digest)), tree, manifest, config, index)


def cached_directory(spec: str, options: PullOptions | None = None) -> Path | None:
    """The cached tree of a pull spec by digest, without a request; ``None`` when it is not cached (or not a
    pull spec by digest).  For read-only views (``cvo report``, ``cvo upgrade status``) that never pull."""
    try:
        ref = parse_image(spec)
    except ImageError:
        return None
    if not ref.digest:
        return None
    hit = _from_cache(ref, ref.digest, options or PullOptions())
    return hit.directory if hit is not None else None
