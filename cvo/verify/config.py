"""The verifier's configuration: the release's ConfigMap annotated
``release.openshift.io/verification-config-map`` (library-go pkg/verify/configmap.go ``NewFromManifests``,
``newFromConfigMapData``).

Its ``data`` holds ``verifier-public-key-*`` (one or more OpenPGP public keys, armored or not: every
one of these keyrings must have signed a release) and ``store-*`` (``file://``, ``http://`` or
``https://`` URLs of signature stores); other keys are ignored with a warning.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from cvo.log import get_logger
from cvo.verify.digests import go_quote
from cvo.verify.errors import InvalidVerifierConfig
from cvo.verify.gpg import GpgUnavailable, Keyrings

log = get_logger("cvo.verify.config")

VERIFIER_ANNOTATION = "release.openshift.io/verification-config-map"
PUBLIC_KEY_PREFIX = "verifier-public-key-"
STORE_PREFIX = "store-"
STORE_SCHEMES = ("file", "http", "https")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def configmap_source(cm: Mapping[str, Any], where: str = "") -> str:
    """``the config map NS/NAME`` as library-go names it, and where it was read when known."""
    meta = _mapping(cm.get("metadata"))
    name = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    return f"the config map {name}" + (f" in {where}" if where else "")


def check_store_url(url: str, src: str, key: str) -> str:
    """``url`` stripped if a signature store can be read from it (pkg/verify/configmap.go: scheme
    file, http or https).  Stricter: a ``file://`` URL names a local absolute path (no host), an
    ``http(s)://`` one has a host."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        parts = None
    ok = parts is not None and parts.scheme in STORE_SCHEMES and not any(c in url for c in "\r\n\t ")
    if ok and parts is not None:
        ok = (parts.netloc in ("", "localhost") and parts.path.startswith("/")) if parts.scheme == "file" \
            else bool(parts.hostname)
    if not ok:
        raise InvalidVerifierConfig(
            f"{src} has an invalid key {go_quote(key)}: must be a valid URL with scheme file://, http://, or https://")
    return url


@dataclass(frozen=True)
class VerifierConfig:
    """Who must have signed a release (``keyrings``: name → armored keys) and where signatures are."""

    keyrings: Mapping[str, str]
    stores: tuple[str, ...]
    source: str = field(default="", compare=False)

    @classmethod
    def from_configmap(cls, cm: Mapping[str, Any], where: str = "") -> VerifierConfig:
        """The configuration a ConfigMap gives, or :class:`InvalidVerifierConfig` with library-go's words."""
        src = configmap_source(cm, where)
        data = cm.get("data")
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise InvalidVerifierConfig(f"{src} is not valid: data is not a map of strings")
        keyrings: dict[str, str] = {}
        stores: list[str] = []
        for key in sorted(data, key=str):
            value = data[key]
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidVerifierConfig(f"{src} is not valid: data.{key} is not a string")
            if key.startswith(PUBLIC_KEY_PREFIX):
                keyrings[key] = value
            elif key.startswith(STORE_PREFIX):
                stores.append(check_store_url(value, src, key))
            else:
                log.warning("ignoring an unexpected key of the verification config map (expected store-* or "
                            "verifier-public-key-*)", config_map=src, key=key)
        if not stores:
            raise InvalidVerifierConfig(f"{src} did not provide any signature stores to read from and cannot be used")
        if not keyrings:
            raise InvalidVerifierConfig(
                f"{src} did not provide any GPG public keys to verify signatures from and cannot be used")
        check_keyrings(keyrings, src)
        return cls(keyrings, tuple(stores), src)


def check_keyrings(keyrings: Mapping[str, str], src: str) -> None:
    """Every keyring holds at least one OpenPGP public key (read by GnuPG in a throwaway home)."""
    for key, value in keyrings.items():
        try:
            with Keyrings({key: value}):
                pass
        except GpgUnavailable as err:
            raise InvalidVerifierConfig(f"{src} cannot be used: {err}") from None
        except ValueError as err:
            raise InvalidVerifierConfig(
                f"{src} has an invalid key {go_quote(key)} that must be a GPG public key: {err}") from None


def is_verifier_configmap(doc: Mapping[str, Any]) -> bool:
    meta = _mapping(doc.get("metadata"))
    return (doc.get("kind") == "ConfigMap" and doc.get("apiVersion") == "v1"
            and VERIFIER_ANNOTATION in _mapping(meta.get("annotations")))


def find_verifier_config(documents: Iterable[Mapping[str, Any]], where: str = "") -> VerifierConfig | None:
    """The configuration of the first annotated ConfigMap among a release's manifests (in payload
    order), or None when there is none: then the release asks for no verification."""
    for doc in documents:
        if isinstance(doc, Mapping) and is_verifier_configmap(doc):
            return VerifierConfig.from_configmap(doc, where)
    return None
