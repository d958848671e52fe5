"""Release signatures as the CVO verifies them (library-go ``pkg/verify``), and signing your own.

A release image is trusted when every keyring of the verifier finds a signature of its digest: the
verifier's keyrings and stores come from the current release's ConfigMap annotated
``release.openshift.io/verification-config-map`` (``config.py``) and ``spec.signatureStores``; signatures
from stores (``file://``, ``http(s)://``, ``STORE/sha256=HEX/signature-N``) and from ConfigMaps labelled
``release.openshift.io/verification-signatures`` (``stores.py``); each is an OpenPGP signed message
(``gpg.py``) of an atomic container signature (``signature.py``); ``verifier.py`` ties them together,
``sign.py`` writes signatures.  Inputs are plain data (ConfigMaps as dicts); the caller reads them from the
cluster.
May import: ``cvo.payload`` only.
"""

from cvo.verify.config import ConfigError, VerifierConfig, find_verifier_config
from cvo.verify.sign import sign
from cvo.verify.verifier import VerificationFailed, Verified, Verifier

__all__ = ["ConfigError", "VerificationFailed", "Verified", "Verifier", "VerifierConfig", "find_verifier_config",
           "sign"]
