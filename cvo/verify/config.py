"""Where a release's verifier comes from: its ConfigMap annotated ``release.openshift.io/verification-config-map``.

library-go ``pkg/verify/configmap.go`` (``NewFromManifests``, ``newFromConfigMapData``): of the payload's
ConfigMaps with the annotation, the first in payload order is used; its ``data`` holds armored public keys
``verifier-public-key-*`` (each one a keyring that must verify the release) and signature stores
``store-*`` (``file://``, ``http://`` or ``https://`` URLs); other keys are ignored.  A ConfigMap with no
store or no key cannot verify anything and is refused, as library-go refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

ANNOTATION = "release.openshift.io/verification-config-map"
KEY_PREFIX = "verifier-public-key-"
STORE_PREFIX = "store-"
SCHEMES = ("file", "http", "https")


class ConfigError(ValueError):
    """A verification ConfigMap that cannot be used; ``str()`` names it and the key."""


@dataclass(frozen=True)
class VerifierConfig:
    """The keyrings that must each verify a release, and the stores its signatures are read from."""

    keyrings: Mapping[str, str] = field(default_factory=dict)  # verifier-public-key-NAME → armored keys
    stores: tuple[str, ...] = ()  # store-* URLs, sorted by key
    source: str = ""  # the ConfigMap, for messages

    @classmethod
    def from_configmap(cls, cm: Mapping[str, Any], where: str) -> VerifierConfig:
        data = cm.get("data")
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: data is not a map of strings")
        keyrings: dict[str, str] = {}
        stores: list[str] = []
        for key in sorted(k for k in data if isinstance(k, str)):
            value = data[key]
            if key.startswith(KEY_PREFIX):
                if not isinstance(value, str) or "BEGIN PGP PUBLIC KEY BLOCK" not in value:
                    raise ConfigError(f"{where} has an invalid key {key!r} that must be a GPG public key")
                keyrings[key] = value
            elif key.startswith(STORE_PREFIX):
                url = value.strip() if isinstance(value, str) else ""
                if urlsplit(url).scheme not in SCHEMES:
                    raise ConfigError(f"{where} has an invalid key {key!r}: must be a valid URL with scheme "
                                      f"file://, http://, or https://")
                stores.append(url)
        if not stores:
            raise ConfigError(f"{where} did not provide any signature stores to read from and cannot be used")
        if not keyrings:
            raise ConfigError(f"{where} did not provide any GPG public keys to verify signatures from and "
                              f"cannot be used")
        return cls(keyrings, tuple(stores), where)


def _annotated(obj: Mapping[str, Any]) -> bool:
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return (obj.get("kind") == "ConfigMap" and isinstance(annotations, dict)
            and ANNOTATION in annotations)


def find_verifier_config(documents: Iterable[Mapping[str, Any]]) -> VerifierConfig | None:
    """The verifier of a release's manifests (in payload order): the first annotated ConfigMap's;
    ``None`` when there is none (a release that does not ask for verification).  :class:`ConfigError` when
    the first one cannot be used."""
    for obj in documents:
        if isinstance(obj, Mapping) and _annotated(obj):
            metadata = obj.get("metadata") or {}
            where = f"configmap {metadata.get('namespace', '')}/{metadata.get('name', '')}"
            return VerifierConfig.from_configmap(obj, where)
    return None
