"""Finding the release a ClusterVersion asks for: ``spec.desiredUpdate`` → a loaded :class:`Release`.

The CVO retrieves a payload by image pullspec (``pkg/cvo/updatepayload.go``); with only a version,
it looks the version up in ``status.availableUpdates``.  cvo reads releases from images and directories:

* ``desiredUpdate.image`` a pull spec (``REGISTRY/REPO@sha256:…``, ``oci:DIR``) is verified and pulled by
  :mod:`cvo.runner.retrieve`, then loaded from the cache;
* ``desiredUpdate.image`` ``file://DIR`` is the release in DIR (loaded with that image, so the
  history keeps the name the cluster knows; trusted, not verified);
* ``desiredUpdate.version`` alone is looked up in the ``--releases`` catalogue: every sub-directory
  of it that is a release directory, by the version in its ``release-metadata``;
* with both, the release found must be of that version (the CVO's ``VerifyPayloadVersion``).

A release that cannot be found or read is a :class:`RetrieveFailed` with the CVO's step as reason
and its message (``sync_worker.go``, ``loadUpdatedPayload``): ``Retrieving payload failed
version="V" image="I" failure=…`` (``RetrievePayload``), ``Loading payload failed … failure=…``
(``LoadPayload``) and ``Verifying payload failed … failure=release image version X does not match
the expected upstream version Y`` (``VerifyPayloadVersion``).  The controller writes it as
``ReleaseAccepted=False`` and keeps running.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvo.cluster.api import Reader
from cvo.images.reference import looks_like_image
from cvo.payload.fields import dig
from cvo.payload.filters import LoadFilter
from cvo.payload.limits import InputError, read_input
from cvo.payload.loader import LoadError, Release, load_release
from cvo.payload.release import parse_release_metadata
from cvo.runner.retrieve import Retrieved, RetrieveError, Retriever, Trust, read_pull_secret, read_trust

FILE_SCHEME = "file://"
METADATA = Path("release-manifests") / "release-metadata"


@dataclass(frozen=True)
class Desired:
    """What the ClusterVersion asks for (``spec.desiredUpdate``, as the CVO's ``configv1.Update``)."""

    version: str = ""
    image: str = ""
    force: bool = False

    @classmethod
    def of(cls, update: Any) -> Desired | None:
        """``spec.desiredUpdate``; ``None`` when it is unset or names nothing."""
        if not isinstance(update, dict):
            return None
        version = update.get("version") if isinstance(update.get("version"), str) else ""
        image = update.get("image") if isinstance(update.get("image"), str) else ""
        if not version and not image:
            return None
        return cls(str(version), str(image), update.get("force") is True)


class RetrieveFailed(Exception):
    """The desired release could not be retrieved, loaded or verified; ``reason`` is the CVO's step."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def retrieve_failure(step: str, desired: Desired, image: str, failure: str) -> RetrieveFailed:
    verb = {"RetrievePayload": "Retrieving", "LoadPayload": "Loading", "VerifyPayloadVersion": "Verifying"}[step]
    return RetrieveFailed(step, f'{verb} payload failed version="{desired.version}" image="{image}" '
                                f"failure={failure}")


class Catalogue:
    """Release directories by version: the sub-directories of ``--releases DIR`` (read when asked)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def find(self, version: str) -> Path | None:
        if self.root is None or not self.root.is_dir():
            return None
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if entry.is_dir() and release_version(Path(entry.path)) == version:
                return Path(entry.path)
        return None

    def describe(self) -> str:
        return str(self.root) if self.root is not None else "no --releases catalogue"


def release_version(directory: Path) -> str | None:
    """The version a release directory's ``release-metadata`` declares; ``None`` if it has none."""
    path = directory / METADATA
    try:
        return parse_release_metadata(read_input(path, str(METADATA)), str(METADATA)).version
    except (InputError, OSError, ValueError):
        return None


Loader = Callable[[Path, str], Release]


def default_loader(load_filter: LoadFilter | None = None) -> Loader:
    def load(directory: Path, image: str) -> Release:
        return load_release(directory, release_image=image, load_filter=load_filter)
    return load


class Releases:
    """Resolves and loads releases, keeping each loaded one (by image) for the next sweep."""

    def __init__(self, catalogue: Catalogue, load: Loader, retriever: Retriever | None = None) -> None:
        self.catalogue = catalogue
        self._load = load
        self._cache: dict[str, Release] = {}
        self.retriever = retriever
        self.trust: Trust | None = None  # what images are verified against (set by the caller, read_trust)
        self.retrieved: dict[str, Retrieved] = {}  # pulled images: verified, accepted risks

    def add(self, release: Release, image: str = "") -> None:
        """Know ``release`` by its image without reading it again (a command has loaded it already); with
        ``image``, by that one instead: the image the cluster recorded for it, its directory having moved."""
        self._cache[image or release.image] = release

    def resolve(self, desired: Desired) -> Release:
        """The release ``desired`` names; :class:`RetrieveFailed` when there is none to be had."""
        image = desired.image
        if not image:
            found = self.catalogue.find(desired.version)
            if found is None:
                raise retrieve_failure("RetrievePayload", desired, "",
                               f"no release {desired.version} in the releases catalogue "
                               f"({self.catalogue.describe()})")
            image = FILE_SCHEME + str(found.resolve())
        release = self.by_image(image, desired, verify=True)
        if desired.version and release.version != desired.version:
            raise retrieve_failure("VerifyPayloadVersion", desired, image,
                           f"release image version {release.version} does not match the expected upstream "
                           f"version {desired.version}")
        return release

    async def prepare_trust(self, cluster: Reader, cv: Mapping[str, Any] | None) -> None:
        """Before a decision that may pull: the cluster's pull secret for the retriever, and for
        ``spec.desiredUpdate.image`` what verifies it (the release the cluster runs, its signature ConfigMaps,
        ``spec.signatureStores``) into :attr:`trust`."""
        if self.retriever is None:
            return
        # every pull the decision may make (the controller's own release too) uses the cluster's pull secret
        self.retriever.use_pull_secret(await read_pull_secret(cluster))
        desired = Desired.of(dig(cv or {}, "spec", "desiredUpdate"))
        running = dig(cv or {}, "status", "desired", "image")
        if desired is None or not looks_like_image(desired.image) or desired.image == running or (
                desired.image in self._cache):
            return
        current = None
        if isinstance(running, str) and running:
            try:
                current = self.by_image(running)
            except RetrieveFailed:
                current = None  # the decision reports it
        self.trust = await read_trust(cluster, current, cv)

    def by_image(self, image: str, desired: Desired | None = None, verify: bool = False) -> Release:
        """The release of a ``file://`` image or a pull spec (cached); ``verify``: a target, whose signature is
        checked against :attr:`trust` (a release the cluster runs already is not)."""
        desired = desired or Desired(image=image)
        if image in self._cache:
            return self._cache[image]
        if image.startswith(FILE_SCHEME):
            directory = Path(image[len(FILE_SCHEME):])
            if not directory.is_dir():
                raise retrieve_failure("RetrievePayload", desired, image, f"{directory}: no such release directory")
        elif looks_like_image(image) and self.retriever is not None:
            try:
                retrieved = self.retriever.retrieve(image, desired.version, desired.force,
                                                    self.trust if verify else None)
            except RetrieveError as err:
                raise retrieve_failure("RetrievePayload", desired, image, str(err)) from None
            self.retrieved[image] = retrieved
            directory = retrieved.directory
        elif looks_like_image(image):
            raise retrieve_failure("RetrievePayload", desired, image, "release images are not pulled here")
        else:
            raise retrieve_failure("RetrievePayload", desired, image,
                                   "not a release directory (file://DIR) or a pull spec "
                                   "(REGISTRY/REPO@sha256:…, oci:DIR)")
        try:
            release = self._load(directory, image)
        except LoadError as err:
            raise retrieve_failure("LoadPayload", desired, image, "; ".join(err.errors)) from None
        self._cache[image] = release
        return release
