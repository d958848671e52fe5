"""Fuzz targets of cvo.verify: name -> (hypothesis strategy, target), merged into fuzz_targets.TARGETS.

Every reader of what a signature store, a ConfigMap or a release hands the verifier: the signed JSON, the
OpenPGP message itself (through the real gpg), verifier ConfigMaps, and whole stores of hostile files.  A
target returns when cvo handled the input (accepted it, or refused it with its own error) and raises
anything else.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from cvo.verify.config import ConfigError, VerifierConfig, find_verifier_config
from cvo.verify.gpg import Keyring, NotVerified
from cvo.verify.signature import SignatureInvalid, check_signed_content, signed_content
from cvo.verify.verifier import VerificationFailed, Verifier

DIGEST = "sha256:" + "ab" * 32
JSON_TOKENS = ['{', '}', '"critical"', '"optional"', '"type"', '"atomic container signature"', '"image"',
               '"docker-manifest-digest"', f'"{DIGEST}"', '"identity"', '"docker-reference"', '"quay.io/x"',
               '"creator"', '"timestamp"', '1', '-1', '1e999', 'true', 'null', ':', ',', '[', ']', '"x"', ' ']


def _json_text() -> st.SearchStrategy[bytes]:
    tokens = st.lists(st.sampled_from(JSON_TOKENS), max_size=40).map(lambda t: "".join(t).encode())
    near = st.builds(lambda drop, extra: _near_valid(drop, extra), st.sampled_from(["", "type", "image", "identity"]),
                     st.sampled_from(["", "unknown", "optional.more"]))
    return tokens | near | st.binary(max_size=200)


def _near_valid(drop: str, extra: str) -> bytes:
    import orjson

    doc = orjson.loads(signed_content(DIGEST, "quay.io/x"))
    if drop:
        doc["critical"].pop(drop)
    if extra == "unknown":
        doc["unknown"] = 1
    elif extra:
        doc["optional"]["more"] = "x"
    return orjson.dumps(doc)


def signature_json_target(data: bytes) -> None:
    with contextlib.suppress(SignatureInvalid):
        assert check_signed_content(data, DIGEST) == "quay.io/x"


_KEYRING: list[Keyring] = []


def _keyring() -> Keyring:
    """One real keyring (a key made once per process), for the signed-message target."""
    if not _KEYRING:
        home = Path(tempfile.mkdtemp(prefix="cvo-fuzz-gpg-"))
        home.chmod(0o700)
        subprocess.run(["gpg", "--homedir", str(home), "--batch", "--passphrase", "", "--quick-gen-key",
                        "fuzz <fuzz@test.invalid>", "ed25519", "sign", "1d"], check=True, capture_output=True)
        public = subprocess.run(["gpg", "--homedir", str(home), "--armor", "--export", "fuzz@test.invalid"],
                                check=True, capture_output=True, text=True).stdout
        _KEYRING.append(Keyring("verifier-public-key-fuzz", public))
        atexit.register(lambda: (_KEYRING[0].close(), shutil.rmtree(home, ignore_errors=True)))
    return _KEYRING[0]


OPENPGP_PREFIXES = [b"", b"\xa3\x01", b"\x90\x0d\x03\x00", b"-----BEGIN PGP MESSAGE-----\n\n",
                    b"\xc8\x00", b"\x8c\x0d\x04\x09\x03\x02"]


def signed_message_target(prefix: bytes, rest: bytes) -> None:
    try:
        content = _keyring().verify(prefix + rest)
    except NotVerified:
        return
    raise AssertionError(f"a message nobody signed verified: {content[:80]!r}")


KEYS = ["verifier-public-key-a", "store-a", "store-b", "other", "verifier-public-key-", "store-"]
VALUES = ["file:///tmp/x", "https://example.com/s", "ftp://x", "", "not a url", 5, None, ["x"],
          "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxx\n-----END PGP PUBLIC KEY BLOCK-----\n"]
configmap_values = st.fixed_dictionaries({
    "kind": st.sampled_from(["ConfigMap", "Secret", 3]),
    "metadata": st.one_of(st.none(), st.integers(), st.fixed_dictionaries({
        "annotations": st.one_of(st.none(), st.just({"release.openshift.io/verification-config-map": ""}),
                                 st.just("x")),
        "name": st.sampled_from(["a", 1, None])})),
    "data": st.one_of(st.none(), st.text(max_size=5), st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES),
                                                                       max_size=5))})


def verifier_configmap_target(documents: list[Any]) -> None:
    try:
        config = find_verifier_config(documents)
    except ConfigError as err:
        assert str(err).startswith("configmap ") and "\n" not in str(err)
        return
    if config is not None:
        assert config.keyrings and config.stores


def store_target(files: dict[int, bytes]) -> None:
    """A file store holding whatever bytes as signature-N: refused with VerificationFailed, never verified."""
    with tempfile.TemporaryDirectory(prefix="cvo-fuzz-store-") as root:
        directory = Path(root) / f"sha256={DIGEST[7:]}"
        directory.mkdir()
        for n, data in files.items():
            (directory / f"signature-{n}").write_bytes(data)
        config = VerifierConfig({"verifier-public-key-fuzz": _public()}, (f"file://{root}",), "fuzz")
        try:
            Verifier(config).verify(DIGEST)
        except VerificationFailed as err:
            assert "unable to verify" in str(err) and "\n" not in str(err)
            return
        raise AssertionError("a store of random bytes verified")


def _public() -> str:
    keyring = _keyring()
    return subprocess.run(["gpg", "--homedir", str(keyring.home), "--armor", "--export"], check=True,
                          capture_output=True, text=True).stdout


TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {
    "signature-json": (_json_text(), signature_json_target),
    "signed-message": (st.tuples(st.sampled_from(OPENPGP_PREFIXES), st.binary(max_size=300)),
                       lambda pair: signed_message_target(*pair)),
    "verifier-configmaps": (st.lists(configmap_values | st.integers() | st.text(max_size=3), max_size=3),
                            verifier_configmap_target),
    "signature-store": (st.dictionaries(st.integers(1, 12), st.binary(max_size=200), max_size=4), store_target),
}
