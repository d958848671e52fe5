"""Retrieving a release image as the CVO does: verify its digest, then pull it (``pkg/cvo/updatepayload.go``
``payloadRetriever.RetrievePayload``).

    the controller's own image ─────────► local: trusted, not verified
    verify(digest after "@") ──fails──┬─► not forced: RetrieveFailed "The update cannot be verified: …"
                                      └─► forced: go on, the failure becomes the history's acceptedRisks
    pull into the cache ───────fails────► RetrieveFailed "Unable to download and prepare the update: …"

The verifier is made from :class:`Trust`: the *current* release's ConfigMap annotated
``release.openshift.io/verification-config-map`` (``NewFromManifests``, library-go ``pkg/verify``), the
cluster's signature ConfigMaps and ``spec.signatureStores``; the async caller reads them
(:func:`read_trust`) before the decision, which stays synchronous.  With no current release (an install)
there is nothing to verify against: the image is pulled unverified, as the installer does.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cvo.cluster.api import ApiError, ApiErrorKind, Reader, Ref
from cvo.images.errors import ImageError
from cvo.images.pull import PullOptions, pull_release
from cvo.payload.fields import dig
from cvo.payload.loader import Release
from cvo.verify.config import VerifierConfig, find_verifier_config
from cvo.verify.errors import VerificationFailed
from cvo.verify.verifier import Verifier

SIGNATURES_NAMESPACE = "openshift-config-managed"
SIGNATURES_LABEL = "release.openshift.io/verification-signatures"
CONFIG_MAP = ("", "ConfigMap")
PULL_SECRET = Ref("", "Secret", "openshift-config", "pull-secret")


@dataclass(frozen=True)
class Trust:
    """What an image is verified against; ``config`` None: no verifier (an install, or a release without one)."""

    config: VerifierConfig | None = None
    signature_configmaps: tuple[Mapping[str, Any], ...] = ()
    signature_stores: tuple[str, ...] | None = None  # spec.signatureStores: replace the release's stores
    problem: str = ""  # the release's verifier ConfigMap cannot be used: every image is refused with this


@dataclass(frozen=True)
class Retrieved:
    """A release image on disk (the CVO's ``PayloadInfo``)."""

    directory: Path
    image: str  # the pull spec, as asked for
    digest: str
    verified: bool = False
    accepted_risks: str = ""  # the forced verification failure, recorded on the history entry
    local: bool = False


@dataclass
class Retriever:
    """Pulls and verifies release images; each verified digest is remembered (library-go's verifier cache)."""

    options: PullOptions = field(default_factory=PullOptions)
    own_image: str = ""

    def use_pull_secret(self, secret: Mapping[str, Any] | None) -> None:
        """Pull with a cluster's pull secret (its decoded ``.dockerconfigjson``) under the configured credentials."""
        registry = dataclasses.replace(self.options.registry, pull_secret=secret)
        self.options = dataclasses.replace(self.options, registry=registry)

    def retrieve(self, image: str, version: str, force: bool, trust: Trust | None) -> Retrieved:
        """``image`` verified (when ``trust`` has a verifier) and pulled; :class:`RetrieveError` naming the step."""
        local = bool(self.own_image) and image == self.own_image
        verified, risks = (False, "") if local else check_signature(image, version, force, trust)
        try:
            pulled = pull_release(image, self.options)
        except ImageError as err:
            raise RetrieveError(f"Unable to download and prepare the update: {err}") from None
        return Retrieved(pulled.directory, image, pulled.digest, verified, risks, local=local)


def check_signature(image: str, version: str, force: bool, trust: Trust | None) -> tuple[bool, str]:
    """(verified, accepted risks) for ``image``: verified against ``trust``'s verifier by the digest after its
    ``@``; a failure is a :class:`RetrieveError` unless ``force``, which records it as an accepted risk.  With no
    verifier (an install, a release without one) nothing is verified and nothing refused."""
    if trust is None or (trust.config is None and not trust.problem):
        return False, ""
    _, at, digest = image.rpartition("@")
    try:
        if trust.problem or trust.config is None:
            raise VerificationFailed(trust.problem)
        if not at or not digest:
            raise VerificationFailed("release images that are not accessed via digest cannot be verified")
        verifier = Verifier(trust.config, signature_configmaps=trust.signature_configmaps,
                            signature_stores=trust.signature_stores)
        try:
            verifier.verify(digest)
        finally:
            verifier.close()
    except VerificationFailed as err:
        if not force:
            raise RetrieveError(f"The update cannot be verified: {err}") from None
        return False, (f'Target release version="{version}" image="{image}" cannot be verified, but continuing '
                       f"anyway because the update was forced: {err}")
    return True, ""


class RetrieveError(Exception):
    """The ``RetrievePayload`` step failed; ``str()`` is the CVO's failure text."""


async def read_pull_secret(cluster: Reader) -> dict[str, Any] | None:
    """``openshift-config/pull-secret``'s ``.dockerconfigjson``, decoded (what the CVO's pods pull with); ``None``
    when there is none, it cannot be read, or it is not a docker config (never logged: it holds credentials)."""
    try:
        secret = await cluster.get(PULL_SECRET)
    except ApiError as err:
        if err.kind in (ApiErrorKind.NOT_FOUND, ApiErrorKind.FORBIDDEN):
            return None
        raise
    encoded = dig(secret or {}, "data", ".dockerconfigjson")
    if not isinstance(encoded, str):
        return None
    try:
        decoded = orjson.loads(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError):
        return None
    return decoded if isinstance(decoded, dict) else None


async def read_trust(cluster: Reader, current: Release | None, cv: Mapping[str, Any] | None) -> Trust:
    """What verifies an update of a cluster that runs ``current``: its release's verifier, the signature
    ConfigMaps of ``openshift-config-managed`` and ``spec.signatureStores``."""
    if current is None:
        return Trust()
    try:
        config = find_verifier_config(m.obj for m in current.manifests)
    except VerificationFailed as err:  # InvalidVerifierConfig: library-go's NewFromManifests refuses it
        return Trust(problem=str(err))
    if config is None:
        return Trust()
    try:
        listed = await cluster.list(*CONFIG_MAP, SIGNATURES_NAMESPACE)
    except ApiError as err:
        if err.kind not in (ApiErrorKind.NOT_FOUND, ApiErrorKind.FORBIDDEN):
            raise
        listed = []  # no signature ConfigMaps to be had: the stores alone
    configmaps = tuple(o for o in listed
                       if isinstance(dig(o, "metadata", "labels"), dict)
                       and SIGNATURES_LABEL in dig(o, "metadata", "labels"))
    return Trust(config, configmaps, signature_stores(cv))


def signature_stores(cv: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """``spec.signatureStores[].url`` (``None`` when unset: the release's own stores apply)."""
    stores = dig(cv or {}, "spec", "signatureStores")
    if not isinstance(stores, Sequence) or isinstance(stores, str) or not stores:
        return None
    return tuple(s["url"] for s in stores if isinstance(s, dict) and isinstance(s.get("url"), str))
