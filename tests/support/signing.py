"""Throwaway OpenPGP keys made with the real gpg, and releases that trust them: for the signature tests."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

VERIFICATION_CONFIGMAP = "0000_90_cluster-update-keys_configmap.yaml"


@dataclass(frozen=True)
class Key:
    home: Path  # the GnuPG home holding the secret key
    uid: str
    public: str  # armored


def make_key(home: Path, uid: str, expire: str = "1d") -> Key:
    """A fresh ed25519 signing key without a passphrase in ``home`` (a new GnuPG home)."""
    home.mkdir(parents=True, mode=0o700)
    subprocess.run(["gpg", "--homedir", str(home), "--batch", "--passphrase", "", "--quick-gen-key", uid,
                    "ed25519", "sign", expire], check=True, capture_output=True, timeout=60)
    public = subprocess.run(["gpg", "--homedir", str(home), "--armor", "--export", uid], check=True,
                            capture_output=True, text=True, timeout=30).stdout
    assert "BEGIN PGP PUBLIC KEY BLOCK" in public
    return Key(home, uid, public)


def verification_configmap(public_keys: dict[str, str], stores: list[str]) -> str:
    """The YAML of a release's verification ConfigMap (as the corpus's, with these keys and stores)."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: release-verification",
             "  namespace: openshift-config-managed", "  annotations:",
             '    include.release.openshift.io/self-managed-high-availability: "true"',
             '    release.openshift.io/verification-config-map: ""', "data:"]
    for i, store in enumerate(stores):
        lines.append(f"  store-{i}: {store}")
    for name, armored in public_keys.items():
        lines.append(f"  verifier-public-key-{name}: |")
        lines += [f"    {line}" for line in armored.strip().splitlines()]
    return "\n".join(lines) + "\n"


def trusting_release(source: Path, target: Path, public_keys: dict[str, str], stores: list[str]) -> Path:
    """A copy of the release directory ``source`` at ``target`` that trusts ``public_keys``."""
    shutil.copytree(source, target)
    (target / "release-manifests" / VERIFICATION_CONFIGMAP).write_text(verification_configmap(public_keys, stores))
    return target
