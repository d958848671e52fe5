"""The release verifier: every keyring must have signed the digest (library-go pkg/verify/verify.go
``releaseVerifier.Verify``).

Signatures are looked up where the CVO looks (pkg/cvo/cvo.go ``loadConfigMapVerifierDataFromUpdate``):
first the ConfigMaps labelled ``release.openshift.io/verification-signatures``, then either
``spec.signatureStores`` when it is set (pkg/customsignaturestore ``Store.Signatures``: they replace the
ConfigMap's stores; an empty list is an error) or the ``store-*`` URLs of the verification ConfigMap.
Each signature is verified once by GnuPG; a keyring is satisfied by a good signature of one of its keys
whose JSON names the digest.  Verified digests are cached (the 64 most recent, as ``cacheVerification``).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from cvo.log import get_logger
from cvo.verify.config import VerifierConfig, check_store_url
from cvo.verify.digests import check_release_digest
from cvo.verify.errors import InvalidVerifierConfig, SignatureInvalid, VerificationFailed
from cvo.verify.gpg import GpgUnavailable, Keyrings
from cvo.verify.signature import check_signature
from cvo.verify.stores import ConfigMapStore, Deadline, Found, Problem, Store, open_store

log = get_logger("cvo.verify")

MAX_CACHE = 64               # verify.go maxSignatureCacheSize
MAX_REASONS = 6              # reasons quoted in a failure's message (all of them are logged)
EMPTY_CUSTOM_STORES = ("ClusterVersion spec.signatureStores is an empty array. Unset signatureStores "
                       "entirely if you want to enable the default signature stores")
CUSTOM_EXHAUSTED = "ClusterVersion spec.signatureStores exhausted without finding a valid signature"


class NowClock(Protocol):
    def now(self) -> datetime: ...


@dataclass(frozen=True)
class SignedBy:
    fingerprint: str         # the signing (primary) key
    source: str              # where the signature was read
    docker_reference: str   # the signature's critical.identity.docker-reference


@dataclass(frozen=True)
class Verified:
    digest: str
    signed_by: Mapping[str, SignedBy]   # keyring name → the signature that satisfied it
    cached: bool = False                # verified earlier by this verifier


class Verifier:
    """Verifies release digests against ``config``; one throwaway GNUPGHOME for its life (``close``)."""

    def __init__(self, config: VerifierConfig, *, signature_configmaps: Iterable[Mapping[str, Any]] = (),
                 signature_stores: Sequence[str] | None = None, timeout: float = 30.0,
                 ca_file: Path | None = None, clock: NowClock | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.timeout = timeout
        self._clock = clock
        self._monotonic = monotonic
        self._configmaps = ConfigMapStore(signature_configmaps)

        def open_(url: str) -> Store:
            return open_store(url, ca_file=ca_file, timeout=timeout)

        self._custom: list[Store] | None = None
        if signature_stores is not None:
            self._custom = [open_(check_store_url(url, "ClusterVersion spec.signatureStores", f"[{i}]"))
                            for i, url in enumerate(signature_stores)]
        self._defaults = [open_(url) for url in config.stores]
        self._keyrings: Keyrings | None = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, tuple[Verified, tuple[bytes, ...]]] = OrderedDict()

    # -- life --------------------------------------------------------------------------------

    def _gpg(self) -> Keyrings:
        if self._keyrings is None:
            try:
                self._keyrings = Keyrings(self.config.keyrings)
            except GpgUnavailable as err:
                raise VerificationFailed(str(err)) from None
            except ValueError as err:
                raise InvalidVerifierConfig(f"{self.config.source or 'the verifier'} has an invalid GPG public key: {err}") from None
        return self._keyrings

    def close(self) -> None:
        if self._keyrings is not None:
            self._keyrings.close()
            self._keyrings = None

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __str__(self) -> str:
        """verify.go ``releaseVerifier.String``, with fingerprints once known."""
        names = sorted(self.config.keyrings)
        parts = ["All release image digests must have GPG signatures from"]
        if not names:
            parts.append(" <ERROR: no verifiers>")
        for name in names:
            fingerprints = sorted(self._keyrings.fingerprints.get(name, ())) if self._keyrings else []
            parts.append(f" {name}" + (f" ({', '.join(fingerprints)})" if fingerprints else ""))
        stores = [s.name for s in self._stores()]
        parts.append(" - will check for signatures in containers/image format at "
                     + (", ".join(stores) if stores else "<ERROR: no store>"))
        return "".join(parts)

    def _stores(self) -> list[Store]:
        return [self._configmaps, *(self._custom if self._custom is not None else self._defaults)]

    # -- verification ------------------------------------------------------------------------

    def verify(self, digest: str) -> Verified:
        """The digest's verification, or :class:`VerificationFailed` ("unable to verify DIGEST against
        keyrings: NAMES (reasons)")."""
        if not self.config.keyrings or (not self._defaults and self._custom is None
                                        and not self._configmaps.configmaps):
            raise VerificationFailed("the release verifier is incorrectly configured, unable to verify digests")
        check_release_digest(digest)
        with self._lock:
            hit = self._cache.get(digest)
            if hit is not None:
                self._cache.move_to_end(digest)
                return Verified(digest, hit[0].signed_by, cached=True)
        keyrings = self._gpg()
        remaining = dict(keyrings.fingerprints)
        signed_by: dict[str, SignedBy] = {}
        signatures: list[bytes] = []
        reasons: list[str] = []
        deadline = Deadline(self.timeout, self._monotonic)
        for found in self._signatures(digest, deadline):
            if isinstance(found, Problem):
                reasons.append(found.message)
                continue
            try:
                signed = keyrings.verify(found.data, self._clock.now() if self._clock is not None else None)
                atomic = check_signature(signed.content, digest)
            except SignatureInvalid as err:
                reasons.append(f"{found.source}: {err}")
                continue
            matched = [name for name, fingerprints in remaining.items() if signed.fingerprint in fingerprints]
            if not matched:
                reasons.append(f"{found.source}: signed by {signed.fingerprint}, already counted for its keyring")
            for name in matched:
                del remaining[name]
                signed_by[name] = SignedBy(signed.fingerprint, found.source, atomic.docker_reference)
            if matched:
                signatures.append(found.data)
            if not remaining:
                break
        if remaining:
            if not reasons:
                searched = [s.name for s in self._stores() if s is not self._configmaps or self._configmaps.configmaps]
                reasons.append(f"no other signature in {', '.join(searched)}")
            for reason in reasons:
                log.debug("signature not accepted", digest=digest, reason=reason)
            message = f"unable to verify {digest} against keyrings: {', '.join(sorted(remaining))}"
            shown = reasons[:MAX_REASONS] + ([f"and {len(reasons) - MAX_REASONS} more"]
                                             if len(reasons) > MAX_REASONS else [])
            if shown:
                message += f" ({'; '.join(shown)})"
            raise VerificationFailed(message, tuple(reasons))
        verified = Verified(digest, signed_by)
        with self._lock:
            self._cache[digest] = (verified, tuple(signatures))
            self._cache.move_to_end(digest)
            while len(self._cache) > MAX_CACHE:
                self._cache.popitem(last=False)
        log.info("release digest verified", digest=digest,
                 keyrings={name: s.fingerprint for name, s in signed_by.items()})
        return verified

    def _signatures(self, digest: str, deadline: Deadline) -> Iterable[Found | Problem]:
        yield from self._configmaps.signatures(digest, deadline)
        if self._custom is not None:
            if not self._custom:
                yield Problem(EMPTY_CUSTOM_STORES)
                return
            for store in self._custom:
                yield from store.signatures(digest, deadline)
            yield Problem(CUSTOM_EXHAUSTED)
            return
        for store in self._defaults:
            yield from store.signatures(digest, deadline)

    def signatures(self) -> dict[str, tuple[bytes, ...]]:
        """The signatures of the digests verified so far (verify.go ``Signatures``: what the CVO
        persists into the ConfigMap ``signatures-managed``)."""
        with self._lock:
            return {digest: sigs for digest, (_, sigs) in self._cache.items()}
