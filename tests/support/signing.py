"""A throwaway signing key with a user id, and releases that trust it: for the tests that sign with
``cvo release sign`` (built on :mod:`tests.support.gpgkeys`)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.support.gpgkeys import gpg, verifier_configmap

VERIFICATION_CONFIGMAP = "0000_90_cluster-update-keys_configmap.yaml"


@dataclass(frozen=True)
class Key:
    home: Path  # the GnuPG home holding the secret key
    uid: str
    public: str  # armored


def make_key(home: Path, uid: str, expire: str = "1d") -> Key:
    """A fresh ed25519 signing key without a passphrase in ``home`` (a new GnuPG home)."""
    home.mkdir(parents=True, mode=0o700)
    gpg(home, "--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", expire)
    public = gpg(home, "--armor", "--export", uid).decode()
    assert "BEGIN PGP PUBLIC KEY BLOCK" in public
    return Key(home, uid, public)


def trusting_release(source: Path, target: Path, public_keys: dict[str, str], stores: list[str]) -> Path:
    """A copy of the release directory ``source`` at ``target`` that trusts ``public_keys``: its verification
    ConfigMap, included in the default profile as the corpus's is."""
    shutil.copytree(source, target)
    configmap = verifier_configmap(public_keys, stores)
    configmap["metadata"]["annotations"]["include.release.openshift.io/self-managed-high-availability"] = "true"
    (target / "release-manifests" / VERIFICATION_CONFIGMAP).write_text(yaml.safe_dump(configmap))
    return target
