"""Release signatures as the CVO verifies them (library-go ``pkg/verify``), and signing your own.

A release image is trusted when every keyring of the verifier finds a signature of its digest: the
verifier's keyrings and stores come from the current release's ConfigMap annotated
``release.openshift.io/verification-config-map`` and ``spec.signatureStores``; signatures from stores
(``file://``, ``http(s)://``, ``STORE/sha256=HEX/signature-N``) and from ConfigMaps labelled
``release.openshift.io/verification-signatures``.  Inputs are plain data (ConfigMaps as dicts); the
caller reads them from the cluster.
Modules: ``config`` (VerifierConfig, find_verifier_config), ``verifier`` (Verifier, Verified), ``sign`` (sign),
``signature`` (the signed JSON), ``gpg`` (GnuPG in a throwaway home), ``stores`` (file, HTTP, ConfigMaps),
``errors`` (VerificationFailed, InvalidVerifierConfig, SigningFailed), ``digests``.  docs/images.md, "Release signatures".
May import: ``cvo.payload`` only.
"""
