"""The errors of :mod:`cvo.verify`: ``str()`` is one line, worded as library-go ``pkg/verify`` words it."""

from __future__ import annotations


class VerificationFailed(Exception):
    """A digest could not be verified; ``message`` is what follows "The update cannot be verified: "
    (pkg/cvo/updatepayload.go ``payloadRetriever.RetrievePayload``); ``reasons`` what each store and
    signature said (library-go keeps them in the wrapped aggregate error)."""

    def __init__(self, message: str, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.reasons = reasons


class InvalidVerifierConfig(VerificationFailed):
    """The verification ConfigMap (or ``spec.signatureStores``) cannot be used: nothing can be verified
    with it (library-go pkg/verify/configmap.go ``newFromConfigMapData``)."""


class SignatureInvalid(Exception):
    """One signature does not verify (bad OpenPGP, unknown key, expired, wrong JSON, other digest)."""


class SigningFailed(Exception):
    """``sign`` could not write a signature; ``str()`` is one line naming the key or store."""
