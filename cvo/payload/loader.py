"""Load a release directory into an ordered list of manifests, as ``pkg/payload.LoadUpdate`` does.

Order: the files of ``manifests/`` sorted byte-wise by name, then those of ``release-manifests/``,
not re-sorted; documents in file order.  Only ``.yaml``, ``.yml`` and ``.json`` files are read;
sub-directories are ignored.  ``manifests/`` is rendered as a Go template first.  What may be read
(regular files, sizes, names) is :mod:`cvo.payload.limits`' policy.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cvo.log import get_logger
from cvo.payload import limits, semver
from cvo.payload.cache import ParseCache, default_cache_dir, digest
from cvo.payload.filters import LoadFilter, load_exclusion
from cvo.payload.limits import (
    InputError,
    display_name,
    is_utf8_name,
    read_input,
    size_text,
)
from cvo.payload.manifest import (
    MANIFEST_EXTENSIONS,
    Header,
    Manifest,
    ManifestError,
    manifests_from_headers,
    parse_headers,
)
from cvo.payload.release import (
    ImageReferences,
    ReleaseMetadata,
    parse_image_references,
    parse_release_metadata,
)
from cvo.payload.template import RenderTooLarge, TemplateContext, TemplateError, render

log = get_logger("cvo.payload")

CVO_MANIFEST_DIR = "manifests"
RELEASE_MANIFEST_DIR = "release-manifests"
METADATA_FILE = "release-metadata"
IMAGE_REFERENCES_FILE = "image-references"

# Below this many bytes to parse, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 2 * 1024 * 1024

# on_progress(stage, done, total): "reading" files of a directory, then "parsing" files.
ProgressCallback = Callable[[str, int, int], None]


class LoadError(Exception):
    """The release cannot be loaded; every line of ``errors`` names a file and what is wrong."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__(errors[0] if len(errors) == 1 else f"{errors[0]} (and {len(errors) - 1} more)")
        self.errors = errors


@dataclass(frozen=True)
class SkippedFile:
    """A file of the release directory that is not read, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Excluded:
    """A document the load-time filters left out, and why."""

    manifest: Manifest
    reason: str


@dataclass
class Release:
    """A loaded release: its metadata and its manifests in payload order."""

    directory: Path
    version: str
    image: str
    metadata: ReleaseMetadata | None
    image_references: ImageReferences | None
    manifests: list[Manifest]  # every manifest that passed the load-time filters, in payload order
    excluded: list[Excluded]  # documents dropped by the load-time filters, with the reason
    skipped_files: list[SkippedFile]  # files not read: extension, template, sub-directory
    all_manifests: list[Manifest] = field(default_factory=list)  # before filtering, payload order
    warnings: list[str] = field(default_factory=list)

    @property
    def semver(self) -> semver.Version:
        return semver.parse(self.version)

    @functools.cached_property
    def manifest_hash(self) -> str:
        """The CVO's ``ManifestHash`` (ClusterVersion ``status.versionHash``) over :attr:`manifests`."""
        from cvo.payload.manifesthash import manifest_hash

        return manifest_hash(m.raw for m in self.manifests)


@dataclass
class _Source:
    """One manifest file as read: its path, name and bytes (templates rendered)."""

    path: str  # relative to the release directory
    file: str  # base name
    data: bytes  # b"" once parsed from the cache: not held while the rest is read
    headers: list[Header] | None = None  # from the parse cache, when it had them

    @functools.cached_property
    def key(self) -> bytes:
        """The parse cache's key: the digest of :attr:`data`."""
        return digest(self.data)


def _sorted_entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            entries = list(it)
    except OSError as err:
        raise LoadError([f"{display_name(str(directory))}: cannot read directory: {err.strerror}"]) from None
    entries.sort(key=lambda e: os.fsencode(e.name))  # byte-wise, as Go's os.ReadDir
    return entries


@dataclass
class _ReadBudget:
    """Bytes read so far for one release, against :data:`limits.MAX_RELEASE_BYTES`."""

    used: int = 0

    def charge(self, path: str, size: int) -> None:
        self.used += size
        if self.used > limits.MAX_RELEASE_BYTES:
            raise LoadError([f"{path}: the release's files add up to more than {size_text(limits.MAX_RELEASE_BYTES)}, "
                             "cvo's limit (see docs/loading.md)"])


def _render(data: bytes, path: str, ctx: TemplateContext) -> bytes:
    """``data`` rendered; :class:`TemplateError` to skip the file, :class:`InputError` for a bad file."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(path, f"not UTF-8 text: {err.reason}") from None
    try:
        rendered = render(text, ctx, limit=limits.MAX_FILE_BYTES).encode("utf-8", "surrogateescape")
    except RenderTooLarge:
        raise InputError(path, f"rendered template is over cvo's limit of {size_text(limits.MAX_FILE_BYTES)} "
                               "(see docs/loading.md)") from None
    except UnicodeEncodeError as err:
        raise InputError(path, f"rendered template is not valid Unicode: {err.reason}") from None
    if len(rendered) > limits.MAX_FILE_BYTES:
        raise InputError(path, f"rendered template is over cvo's limit of {size_text(limits.MAX_FILE_BYTES)} "
                               "(see docs/loading.md)")
    return rendered


def _collect(
    directory: Path, rel: str, skip_names: frozenset[str], render_ctx: TemplateContext | None,
    skipped: list[SkippedFile], errors: list[tuple[str, str]], budget: _ReadBudget,
    on_progress: ProgressCallback | None = None, parse_cache: ParseCache | None = None,
) -> list[_Source]:
    sources: list[_Source] = []
    entries = _sorted_entries(directory)
    for done, entry in enumerate(entries, start=1):
        if on_progress is not None:
            on_progress(f"reading {rel or directory.name}/", done, len(entries))
        shown = display_name(entry.name)
        path = f"{rel}/{shown}" if rel else shown
        if not is_utf8_name(entry.name):
            errors.append((path, f"{path}: file name is not UTF-8 (cvo's rule; rename the file)"))
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:  # a symbolic link loop: read_input names the problem
            is_dir = False
        if is_dir:
            skipped.append(SkippedFile(path, "sub-directory (not read)"))
            continue
        if entry.name in skip_names:
            continue
        if os.path.splitext(entry.name)[1] not in MANIFEST_EXTENSIONS:
            skipped.append(SkippedFile(path, "extension is not .yaml, .yml or .json (not read)"))
            continue
        try:
            data = read_input(entry.path, path)
            budget.charge(path, len(data))
            if render_ctx is not None and b"{{" in data:
                data = _render(data, path, render_ctx)
        except InputError as err:
            errors.append((path, str(err)))
            continue
        except TemplateError as err:
            log.warning("skipping manifest that does not render", file=path, reason=str(err))
            skipped.append(SkippedFile(path, f"template: {err} (skipped)"))
            continue
        src = _Source(path, entry.name, data)
        if parse_cache is not None and (hit := parse_cache.get(src.key)) is not None:
            src.headers, src.data = hit, b""  # parsed already: its bytes need not wait for the others
        sources.append(src)
    return sources


def _payload_order(path: str) -> tuple[int, bytes]:
    """Sort key of a file's relative path in payload order: manifests/, then release-manifests/."""
    directory, _, name = path.rpartition("/")
    return (1 if directory == RELEASE_MANIFEST_DIR else 0, os.fsencode(name))


def _parse_one(src: _Source) -> tuple[list[Header] | None, str | None]:
    try:
        return parse_headers(src.data, src.path), None
    except ManifestError as err:
        return None, str(err)


def _parse_all(sources: list[_Source], jobs: int, on_progress: ProgressCallback | None = None,
               ) -> list[tuple[int, list[Header] | None, str | None]]:
    total = sum(len(s.data) for s in sources)
    workers = min(jobs, len(sources))
    # fork() copies only the calling thread: a lock another thread held at that moment (a watch, the
    # store's poller, the logging lock) stays locked in the child for ever.  Parse in this process then.
    if workers <= 1 or total < PARALLEL_THRESHOLD or threading.active_count() > 1:
        out = []
        for i, src in enumerate(sources):
            out.append((i, *_parse_one(src)))
            if on_progress is not None:
                on_progress("parsing", i + 1, len(sources))
        return out
    from cvo.payload.parallel import run_shared

    def progress(done: int, count: int) -> None:
        if on_progress is not None:
            on_progress("parsing", done, count)

    results = run_shared(list(range(len(sources))), [len(s.data) for s in sources],
                         lambda i: _parse_one(sources[i]), workers, progress)
    return [(i, *results[i]) for i in range(len(sources))]


def default_jobs() -> int:
    """Parser processes: ``CVO_PARSE_JOBS`` if set, else one per core (at most 8)."""
    if env := os.environ.get("CVO_PARSE_JOBS"):
        return max(1, int(env))
    return max(1, min(os.cpu_count() or 1, 8))


@dataclass
class ReadRelease:
    """A release directory read but not parsed: every input a :class:`Release` is made of.

    ``sources`` hold each manifest file's bytes (templates rendered), ``errors`` the files that could
    not be read; :func:`finish_release` parses them into a :class:`Release` (and raises the errors).
    """

    root: Path
    version: str
    image: str
    load_filter: LoadFilter
    metadata: ReleaseMetadata | None
    image_references: ImageReferences | None
    warnings: list[str]
    sources: list[_Source]
    skipped: list[SkippedFile]
    errors: list[tuple[str, str]]  # (path, message)
    side_files: list[tuple[str, bytes]] = field(default_factory=list)  # release-metadata, image-references

    def fingerprint(self) -> bytes:
        """SHA-256 over everything read: each file's path and bytes, the files not read, the version and
        image.  Two reads with the same fingerprint make the same :class:`Release` (for one filter)."""
        h = hashlib.sha256()

        def put(*parts: str | bytes) -> None:
            for part in parts:
                data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
                h.update(len(data).to_bytes(8, "little"))
                h.update(data)

        put(str(self.root), self.version, self.image, str(len(self.sources)))
        for path, data in self.side_files:
            put(path, data)
        for src in self.sources:
            put(src.path, src.file, src.key)
        put(str(len(self.skipped)))
        for sk in self.skipped:
            put(sk.path, sk.reason)
        return h.digest()


def load_release(
    directory: str | os.PathLike[str],
    *,
    version: str | None = None,
    release_image: str | None = None,
    load_filter: LoadFilter | None = None,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    jobs: int | None = None,
    on_progress: ProgressCallback | None = None,
) -> Release:
    """Load a release directory (or a plain directory of manifests when ``version`` is given).

    ``on_progress(stage, done, total)`` is called as files are read and parsed.
    """
    cache = ParseCache(cache_dir or default_cache_dir(), Path(directory)) if use_cache else None
    if cache is not None:
        cache.load()  # first, so that each file's bytes are dropped as soon as the cache has its parse
    try:
        read = read_release(directory, version=version, release_image=release_image, load_filter=load_filter,
                            on_progress=on_progress, parse_cache=cache)
        return finish_release(read, use_cache=use_cache, cache_dir=cache_dir, jobs=jobs, on_progress=on_progress,
                              parse_cache=cache)
    finally:
        if cache is not None:
            cache.close()


def read_release(
    directory: str | os.PathLike[str],
    *,
    version: str | None = None,
    release_image: str | None = None,
    load_filter: LoadFilter | None = None,
    on_progress: ProgressCallback | None = None,
    parse_cache: ParseCache | None = None,
) -> ReadRelease:
    """Read (not parse) a release directory; :class:`LoadError` for a directory that is not one.

    With a loaded ``parse_cache``, a file the cache has parsed keeps its headers, not its bytes.
    """
    root = Path(directory)
    load_filter = load_filter or LoadFilter()
    if not is_utf8_name(str(root)):
        raise LoadError([f"{display_name(str(root))}: the directory's path is not UTF-8 (cvo's rule)"])
    if "\x00" in str(root):
        raise LoadError([f"{display_name(str(root))}: a path cannot contain a NUL byte"])
    if not root.is_dir():
        raise LoadError([f"{display_name(str(root))}: not a directory"])
    release_dir = root / RELEASE_MANIFEST_DIR
    metadata: ReleaseMetadata | None = None
    image_refs: ImageReferences | None = None
    warnings: list[str] = []
    side_files: list[tuple[str, bytes]] = []
    if release_dir.is_dir() and not (release_dir / METADATA_FILE).exists() and version is None:
        shown = display_name(os.fspath(release_dir / METADATA_FILE))
        raise LoadError([
            f"{shown}: file not found: a release directory names its version there (JSON: "
            '{"kind": "cincinnati-metadata-v0", "version": "X.Y.Z"}, as \'oc adm release new\' writes it); add one, '
            "or pass --release-version X.Y.Z"])
    if release_dir.is_dir() and not (release_dir / METADATA_FILE).exists():
        assert version is not None  # --release-version stands in for the missing release-metadata
        try:
            semver.parse(version)
        except semver.SemverError as err:
            raise LoadError([f"--release-version: {version!r} is not a semantic version: {err}"]) from None
        refs_path = f"{RELEASE_MANIFEST_DIR}/{IMAGE_REFERENCES_FILE}"
        if (release_dir / IMAGE_REFERENCES_FILE).exists():
            try:
                refs_bytes = read_input(release_dir / IMAGE_REFERENCES_FILE, refs_path)
                image_refs = parse_image_references(refs_bytes, refs_path)
            except InputError as err:
                raise LoadError([str(err)]) from None
            side_files = [(refs_path, refs_bytes)]
    elif release_dir.is_dir():
        meta_path = f"{RELEASE_MANIFEST_DIR}/{METADATA_FILE}"
        refs_path = f"{RELEASE_MANIFEST_DIR}/{IMAGE_REFERENCES_FILE}"
        try:
            meta_bytes = read_input(release_dir / METADATA_FILE, meta_path)
            metadata = parse_release_metadata(meta_bytes, meta_path)
            refs_bytes = read_input(release_dir / IMAGE_REFERENCES_FILE, refs_path)
            image_refs = parse_image_references(refs_bytes, refs_path)
            side_files = [(meta_path, meta_bytes), (refs_path, refs_bytes)]
        except InputError as err:
            raise LoadError([str(err)]) from None
        warnings.extend(f"{meta_path}: {w}" for w in metadata.warnings)
        if image_refs.name != metadata.version:
            raise LoadError([
                f"{refs_path}: version from image-references ({image_refs.name}) differs from "
                f"release-metadata ({metadata.version})"
            ])
        if version is not None and version != metadata.version:
            raise LoadError([
                f"{meta_path}: release version {metadata.version} does not match the expected version {version}"
            ])
        version = metadata.version
    elif version is None:
        raise LoadError([
            f"{root}: not a release directory (no {RELEASE_MANIFEST_DIR}/); "
            "pass --release-version to load it as a plain directory of manifests"
        ])
    else:
        try:
            semver.parse(version)
        except semver.SemverError as err:
            raise LoadError([f"--release-version: {version!r} is not a semantic version: {err}"]) from None
    assert version is not None
    try:
        image = release_image or f"file://{root.resolve()}"
    except OSError as err:
        raise LoadError([f"{root}: cannot resolve the directory's path: {err.strerror}"]) from None
    if not is_utf8_name(image):
        raise LoadError([f"{display_name(image)}: the release image is not UTF-8 text"])

    skipped: list[SkippedFile] = []
    errors: list[tuple[str, str]] = []  # (path, message)
    sources: list[_Source] = []
    budget = _ReadBudget()
    if release_dir.is_dir():
        cvo_dir = root / CVO_MANIFEST_DIR
        if cvo_dir.is_dir():
            ctx = TemplateContext(
                release_image=image,
                cluster_profile=load_filter.profile,
                images=dict(image_refs.images) if image_refs else {},
            )
            sources += _collect(cvo_dir, CVO_MANIFEST_DIR, frozenset(), ctx, skipped, errors, budget, on_progress,
                                parse_cache)
        sources += _collect(
            release_dir, RELEASE_MANIFEST_DIR, frozenset({METADATA_FILE, IMAGE_REFERENCES_FILE}), None,
            skipped, errors, budget, on_progress, parse_cache,
        )
    else:
        sources += _collect(root, "", frozenset(), None, skipped, errors, budget, on_progress, parse_cache)

    return ReadRelease(root=root, version=version, image=image, load_filter=load_filter, metadata=metadata,
                       image_references=image_refs, warnings=warnings, sources=sources, skipped=skipped,
                       errors=errors, side_files=side_files)


def finish_release(
    read: ReadRelease,
    *,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    jobs: int | None = None,
    on_progress: ProgressCallback | None = None,
    parse_cache: ParseCache | None = None,
) -> Release:
    """Parse what :func:`read_release` read (through the parse cache) and filter it into a Release.

    ``parse_cache``: the cache ``read`` was read with (loaded); otherwise one is opened here.
    """
    root, version, sources, load_filter = read.root, read.version, read.sources, read.load_filter
    errors = list(read.errors)
    cache = parse_cache
    if cache is None and use_cache:
        cache = ParseCache(cache_dir or default_cache_dir(), root)
        cache.load()
    parsed: list[list[Header] | None] = [None] * len(sources)
    misses: list[int] = []
    for i, src in enumerate(sources):
        hit = src.headers
        if hit is None and cache is not None:
            hit = cache.get(src.key)  # no digest without a cache
        if hit is None:
            misses.append(i)
        else:
            parsed[i] = hit
    if misses:
        results = _parse_all([sources[i] for i in misses], jobs or default_jobs(), on_progress)
        for local, headers, error in results:
            if error is not None:
                errors.append((sources[misses[local]].path, error))
            else:
                parsed[misses[local]] = headers
    if errors:
        # One line per problem, in payload order whatever the order the parser workers finished in.
        errors.sort(key=lambda e: _payload_order(e[0]))
        raise LoadError([message for _, message in errors])
    if cache is not None and misses:
        cache.save({src.key: parsed[i] for i, src in enumerate(sources) if parsed[i] is not None})  # type: ignore[misc]
    if cache is not None and parse_cache is None:
        cache.close()

    major = semver.parse(version).major
    filt = LoadFilter(
        profile=load_filter.profile,
        feature_set=load_filter.feature_set,
        feature_gates=load_filter.feature_gates,
        exclude_id=load_filter.exclude_id,
        major_version=major if load_filter.major_version is None else load_filter.major_version,
    )
    kept: list[Manifest] = []
    excluded: list[Excluded] = []
    everything: list[Manifest] = []
    for src, headers in zip(sources, parsed, strict=True):
        assert headers is not None
        for m in manifests_from_headers(headers, src.file, src.path):
            everything.append(m)
            reason = load_exclusion(m, filt)
            if reason is None:
                kept.append(m)
            else:
                excluded.append(Excluded(m, reason))
    return Release(
        directory=root,
        version=version,
        image=read.image,
        metadata=read.metadata,
        image_references=read.image_references,
        manifests=kept,
        excluded=excluded,
        skipped_files=read.skipped,
        all_manifests=everything,
        warnings=read.warnings,
    )
