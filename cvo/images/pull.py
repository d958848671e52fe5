"""Pulling a release image: a pull spec in, the two payload directories out, through the pull cache.

As the CVO's ``RetrievePayload`` (``pkg/cvo/updatepayload.go``) and ``oc adm release extract``
(``pkg/cli/admin/release/extract.go``) do: resolve the pull spec to a digest, pick the platform's
manifest from an index (``oc``'s ``--filter-by-os``; the machine's architecture here), apply every
layer in order and keep ``release-manifests/`` and ``manifests/``.  What is extracted is cached by the
image manifest's digest (:mod:`cvo.images.cache`): a second pull of the same digest reads no blob, and
a pull by digest does not even ask for the manifest.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from cvo.images.cache import TREE, CachedTree, PullCache
from cvo.images.digest import VerifyingReader
from cvo.images.errors import ImageError, Problem
from cvo.images.extract import extract_layers
from cvo.images.layout import OciLayout
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
from cvo.log import get_logger
from cvo.payload.arch import go_arch
from cvo.payload.cache import default_cache_dir

log = get_logger("cvo.images")

MULTI = "multi"
OS = "linux"
METADATA = "release-manifests/release-metadata"


def default_images_cache() -> Path:
    """``$CVO_CACHE_DIR/images``, else ``$XDG_CACHE_HOME/cvo/images``, else ``~/.cache/cvo/images``."""
    return default_cache_dir() / "images"


@dataclass(frozen=True)
class PullOptions:
    """How to pull: the registry's options, the time a pull may take, the platform, where to cache."""

    registry: RegistryOptions = field(default_factory=RegistryOptions)  # credentials, TLS, read timeout
    timeout: float = 60.0
    # GOARCH of the image to take from an index; "multi" keeps the whole index (info, extract).
    architecture: str = field(default_factory=go_arch)
    cache_dir: Path = field(default_factory=default_images_cache)


@dataclass
class PullStats:
    """What one pull asked its repository for (the cache answered the rest)."""

    manifest_requests: int = 0
    blob_requests: int = 0
    cached: bool = False


@dataclass(frozen=True)
class PulledRelease:
    """A release image on disk: ``directory`` holds its ``release-manifests/`` and ``manifests/``."""

    ref: ImageRef
    digest: str  # of what the pull spec names (the index for a list): what signatures sign
    pull_spec: str  # ref.by_digest(digest): what the ClusterVersion records
    directory: Path
    manifest: ImageManifest
    config: ImageConfig
    index: ImageIndex | None = None
    stats: PullStats = field(default_factory=PullStats, compare=False)


class _ExtractLayers(Protocol):
    def __call__(self, image: str,
                 layers: Iterable[tuple[Descriptor, AbstractContextManager[VerifyingReader]]],
                 target: Path) -> object: ...


def _extract_layers() -> _ExtractLayers:
    return extract_layers


def open_repository(ref: ImageRef, options: PullOptions, deadline: Deadline) -> Repository:
    """The repository ``ref`` names: an OCI layout directory for ``oci:``, else a registry."""
    if ref.transport == "oci":
        return OciLayout(Path(ref.repository), ref.name)
    from cvo.images.registry import open_registry  # the HTTP stack, only when a registry is asked

    return open_registry(ref, options.registry, deadline)


class _Counting:
    """A repository that counts what is asked of it, opened only when first needed."""

    def __init__(self, ref: ImageRef, options: PullOptions, deadline: Deadline, stats: PullStats) -> None:
        self._ref, self._options, self._deadline, self.stats = ref, options, deadline, stats
        self._repo: Repository | None = None

    @property
    def repo(self) -> Repository:
        if self._repo is None:
            self._repo = open_repository(self._ref, self._options, self._deadline)
        return self._repo

    def get_manifest(self, reference: str) -> RawManifest:
        self.stats.manifest_requests += 1
        return self.repo.get_manifest(reference)

    def open_blob(self, descriptor: Descriptor) -> AbstractContextManager[VerifyingReader]:
        self.stats.blob_requests += 1
        return self.repo.open_blob(descriptor)


def resolve(spec: str, options: PullOptions) -> tuple[ImageRef, str]:
    """``spec`` parsed, and the digest it names: its own, or the tag's (one manifest request)."""
    ref = parse_image(spec)
    if ref.digest:
        return ref, ref.digest
    repo = open_repository(ref, options, Deadline(options.timeout))
    return ref, repo.get_manifest(ref.reference).digest


def select_platform(image: str, index: ImageIndex, architecture: str) -> Descriptor:
    """The entry of ``index`` for ``linux/architecture``; for ``multi``, this machine's or the first.

    Entries without a platform (attestations) are never picked."""
    candidates = [d for d in index.manifests if d.platform is not None and d.platform.os in (OS, "")]
    wanted = go_arch() if architecture == MULTI else architecture
    for each in candidates:
        if each.platform is not None and each.platform.architecture == wanted:
            return each
    if architecture == MULTI and candidates:
        return candidates[0]
    present = sorted({f"{d.platform.os}/{d.platform.architecture}" + (f"/{d.platform.variant}" if d.platform.variant
                                                                      else "")
                      for d in index.manifests if d.platform is not None})
    raise ImageError(image, f"the index has no image for {OS}/{wanted} (it has "
                            f"{', '.join(present) if present else 'no platform'})", Problem.NOT_FOUND)


def _manifest(image: str, cache: PullCache, repo: _Counting, reference: str) -> RawManifest:
    """The manifest ``reference`` names: from the cache for a digest, else from the repository (cached)."""
    raw = cache.manifest(reference) if reference.startswith("sha256:") else None
    if raw is None:
        raw = repo.get_manifest(reference)
        if reference.startswith("sha256:") and raw.digest != reference:
            raise ImageError(image, f"manifest {reference} was served as {raw.digest}")
        cache.put_manifest(raw)
    return raw


def fetch_image(spec: str, options: PullOptions, *, stats: PullStats | None = None,
                deadline: Deadline | None = None) -> tuple[ImageRef, str, ImageManifest, ImageIndex | None, _Counting]:
    """``spec`` down to one image manifest: the digest the spec names, the manifest, the index if any."""
    ref = parse_image(spec)
    stats = stats if stats is not None else PullStats()
    repo = _Counting(ref, options, deadline or Deadline(options.timeout), stats)
    cache = PullCache(options.cache_dir)
    top_raw = _manifest(spec, cache, repo, ref.reference)
    top = parse_manifest(spec, top_raw)
    index: ImageIndex | None = None
    if isinstance(top, ImageIndex):
        index = top
        chosen = select_platform(spec, index, options.architecture)
        child = parse_manifest(spec, _manifest(spec, cache, repo, chosen.digest))
        if isinstance(child, ImageIndex):
            raise ImageError(spec, f"index entry {chosen.digest} is itself an index")
        manifest = child
    else:
        manifest = top
    return ref, top_raw.digest, manifest, index, repo


def read_config(image: str, repo: _Counting, manifest: ImageManifest) -> bytes:
    """The config blob of ``manifest`` (at most :data:`MAX_CONFIG_BYTES`), checked against its digest."""
    if manifest.config.size > MAX_CONFIG_BYTES:
        raise ImageError(image, f"image config is {manifest.config.size} bytes, over the limit of {MAX_CONFIG_BYTES}")
    with repo.open_blob(manifest.config) as reader:
        data = reader.read(MAX_CONFIG_BYTES + 1)
        reader.finish()
    return data


def _layers(repo: _Counting, manifest: ImageManifest
            ) -> Iterator[tuple[Descriptor, AbstractContextManager[VerifyingReader]]]:
    for layer in manifest.layers:
        yield layer, repo.open_blob(layer)


def pull_release(spec: str, options: PullOptions | None = None, *, into: Path | None = None) -> PulledRelease:
    """Pull the release image ``spec`` (``REGISTRY/REPO[:TAG][@DIGEST]``, ``oci:DIR[:TAG]``) into the cache.

    :class:`ImageError` for anything that is wrong with the spec, the repository or the image; nothing
    is written outside the cache's temporary directory before the image is complete and checked.
    ``into`` (``cvo release extract``): the two payload directories are written there instead (a directory that
    does not exist yet): copied from the cache when the image is cached, else extracted straight into it, each
    file written once as ``tar -x`` would, without filling the cache."""
    options = options or PullOptions()
    stats = PullStats()
    ref, digest, manifest, index, repo = fetch_image(spec, options, stats=stats)
    cache = PullCache(options.cache_dir)
    try:
        hit = cache.tree(manifest.digest)
        if into is not None:
            return _pull_into(spec, ref, digest, manifest, index, repo, stats, hit, into)
        if hit is None:
            config = read_config(spec, repo, manifest)
            parse_config(spec, config)
            tmp = cache.begin()
            try:
                _extract_layers()(spec, _layers(repo, manifest), tmp / TREE)
                metadata = tmp / TREE / METADATA
                if not metadata.is_file() or metadata.is_symlink():
                    raise ImageError(spec, f"not a release image: no {METADATA}")
                hit = cache.publish(tmp, manifest.digest, config)
            except BaseException:
                cache.discard(tmp)
                raise
        else:
            stats.cached = True
    except OSError as err:
        raise ImageError(spec, f"cannot write the pull cache {options.cache_dir}: {err}", Problem.UNAVAILABLE) from None
    (log.debug if stats.cached else log.info)(  # a cached pull imports no logging (cvo.log)
        "pulled release image", image=spec, digest=digest, manifest=manifest.digest, cached=stats.cached,
        manifest_requests=stats.manifest_requests, blob_requests=stats.blob_requests)
    return PulledRelease(ref, digest, str(ref.by_digest(digest)), hit.directory, manifest,
                         parse_config(spec, hit.config), index, stats)


def _pull_into(spec: str, ref: ImageRef, digest: str, manifest: ImageManifest, index: ImageIndex | None,
               repo: _Counting, stats: PullStats, hit: CachedTree | None, into: Path) -> PulledRelease:
    into.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".cvo-extract-", dir=into.parent))
    try:
        if hit is not None:
            stats.cached = True
            config = hit.config
            for name in ("manifests", "release-manifests"):
                if (hit.directory / name).is_dir():
                    shutil.copytree(hit.directory / name, staging / name, symlinks=True)
        else:
            config = read_config(spec, repo, manifest)
            parse_config(spec, config)
            _extract_layers()(spec, _layers(repo, manifest), staging)
            metadata = staging / METADATA
            if not metadata.is_file() or metadata.is_symlink():
                raise ImageError(spec, f"not a release image: no {METADATA}")
        staging.rename(into)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return PulledRelease(ref, digest, str(ref.by_digest(digest)), into, manifest, parse_config(spec, config), index,
                         stats)


def cached_directory(spec: str, options: PullOptions | None = None) -> Path | None:
    """The cached tree of a pull spec by digest, without a request; ``None`` when it is not cached (or not a pull
    spec by digest).  For the read-only views (``cvo report``, ``cvo upgrade status``), which never pull."""
    try:
        ref = parse_image(spec)
    except ImageError:
        return None
    if not ref.digest:
        return None
    options = options or PullOptions()
    cache = PullCache(options.cache_dir)
    try:
        raw = cache.manifest(ref.digest)
        parsed = parse_manifest(spec, raw) if raw is not None else None
        if isinstance(parsed, ImageIndex):
            raw = cache.manifest(select_platform(spec, parsed, options.architecture).digest)
            parsed = parse_manifest(spec, raw) if raw is not None else None
        hit = cache.tree(parsed.digest) if isinstance(parsed, ImageManifest) else None
    except (ImageError, OSError):
        return None
    return hit.directory if hit is not None else None
