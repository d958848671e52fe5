"""Verifying a release digest: every keyring must find a good signature of it (library-go ``pkg/verify``).

``releaseVerifier.Verify`` (``pkg/verify/verify.go``): the signatures of every store and signature
ConfigMap are tried against each keyring still unverified; a keyring is done with the first signature
it verifies whose content authenticates the digest (:mod:`cvo.verify.signature`); the digest is verified
when no keyring remains, and then remembered (a later ``verify`` of it reads nothing).  Unlike library-go,
whose message names only the keyrings left, :class:`VerificationFailed` also says why: no signature found
in which stores, or each signature's reason (unknown key, expired, another digest, unknown field).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvo.verify.config import VerifierConfig
from cvo.verify.gpg import Keyring, KeyringError, NotVerified
from cvo.verify.signature import SignatureInvalid, check_signed_content
from cvo.verify.stores import Found, from_configmaps, from_store, valid_digest

MAX_REASONS = 4
_VERIFIED: dict[tuple[Any, ...], set[str]] = {}  # verifier identity → digests verified (the CVO's cache)


class VerificationFailed(Exception):
    """The digest is not verified; ``str()`` is the reason, as the CVO puts it after "cannot be verified: "."""


@dataclass(frozen=True)
class Verified:
    digest: str
    keyrings: tuple[str, ...]  # the keyrings that verified it
    cached: bool = False


class Verifier:
    """A release's verifier with the cluster's extra signatures and ``spec.signatureStores``."""

    def __init__(self, config: VerifierConfig, *, signature_configmaps: Iterable[Mapping[str, Any]] = (),
                 signature_stores: Sequence[str] | None = None, timeout: float = 30.0,
                 ca_file: Path | None = None) -> None:
        self.config = config
        self.configmaps = tuple(signature_configmaps)
        self.stores = tuple(signature_stores) if signature_stores is not None else config.stores
        self.timeout = timeout
        self.ca_file = ca_file
        self._key = (tuple(sorted(config.keyrings.items())),)

    def _signatures(self, digest: str) -> Iterator[Found]:
        yield from from_configmaps(self.configmaps, digest)
        for store in self.stores:
            yield from from_store(store, digest, self.timeout, self.ca_file)

    def verify(self, digest: str) -> Verified:
        if not self.config.keyrings or not (self.stores or self.configmaps):
            raise VerificationFailed("the release verifier is incorrectly configured, unable to verify digests")
        if not digest:
            raise VerificationFailed("release images that are not accessed via digest cannot be verified")
        if not valid_digest(digest):
            raise VerificationFailed(f"the provided release image digest has an invalid format: {digest!r}")
        if digest in _VERIFIED.get(self._key, set()):
            return Verified(digest, tuple(sorted(self.config.keyrings)), cached=True)
        keyrings: dict[str, Keyring] = {}
        reasons: list[str] = []
        try:
            for name, armored in sorted(self.config.keyrings.items()):
                try:
                    keyrings[name] = Keyring(name, armored)
                except KeyringError as err:
                    raise VerificationFailed(f"{self.config.source}: {err}") from None
            remaining = dict(keyrings)
            seen = 0
            for found in self._signatures(digest):
                if found.error:
                    reasons.append(found.error)
                    continue
                seen += 1
                for name, keyring in list(remaining.items()):
                    try:
                        check_signed_content(keyring.verify(found.signature), digest)
                    except (NotVerified, SignatureInvalid) as err:
                        reasons.append(f"{found.where}: {err}")
                        continue
                    del remaining[name]
                if not remaining:
                    break
            if remaining:
                if not seen and not reasons:
                    where = ", ".join([*self.stores, *(["the signature ConfigMaps"] if self.configmaps else [])])
                    reasons.append(f"no signature of {digest} in {where}")
                unique = list(dict.fromkeys(reasons))
                more = f" (and {len(unique) - MAX_REASONS} more)" if len(unique) > MAX_REASONS else ""
                raise VerificationFailed(f"unable to verify {digest} against keyrings: "
                                         f"{', '.join(sorted(remaining))}: {'; '.join(unique[:MAX_REASONS])}{more}")
        finally:
            for keyring in keyrings.values():
                keyring.close()
        _VERIFIED.setdefault(self._key, set()).add(digest)
        return Verified(digest, tuple(sorted(keyrings)))
