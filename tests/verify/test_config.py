"""The verification ConfigMap (library-go pkg/verify/configmap.go ``NewFromManifests``, ``newFromConfigMapData``)."""

from __future__ import annotations

import pytest

from cvo.verify.config import VerifierConfig, find_verifier_config
from cvo.verify.errors import InvalidVerifierConfig
from tests.support.gpgkeys import Keys, verifier_configmap

SRC = "the config map openshift-config-managed/release-verification"


def test_keys_and_stores(keys: Keys) -> None:
    cm = verifier_configmap({"a": keys.public("signer"), "b": keys.public("second")},
                            ["  https://mirror.example/sigs  ", "file:///var/sigs", "http://[::1]:8080/x"])
    cm["data"]["unexpected"] = "ignored with a warning"
    config = VerifierConfig.from_configmap(cm)
    assert sorted(config.keyrings) == ["verifier-public-key-a", "verifier-public-key-b"]
    assert config.stores == ("https://mirror.example/sigs", "file:///var/sigs", "http://[::1]:8080/x")
    assert config.source == SRC


@pytest.mark.parametrize(("data", "message"), [
    ({"verifier-public-key-a": "KEY"}, f"{SRC} did not provide any signature stores to read from and cannot be used"),
    ({"store-a": "file:///x"}, f"{SRC} did not provide any GPG public keys to verify signatures from and cannot be used"),
    ({"store-a": "file:///x", "verifier-public-key-a": "junk"},
     f'{SRC} has an invalid key "verifier-public-key-a" that must be a GPG public key: no OpenPGP public key found'),
    ({"store-a": 5}, f"{SRC} is not valid: data.store-a is not a string"),
])
def test_library_go_refusals(data: dict, message: str) -> None:
    cm = verifier_configmap({}, [])
    cm["data"] = data
    with pytest.raises(InvalidVerifierConfig) as err:
        VerifierConfig.from_configmap(cm)
    assert err.value.message == message


@pytest.mark.parametrize("url", ["ftp://h/x", "h/x", "", "file://host/x", "file:relative", "http:///x",
                                 "https://h:99999/x", "http://h/a b", "docker://quay.io/x"])
def test_store_urls(keys: Keys, url: str) -> None:
    with pytest.raises(InvalidVerifierConfig, match=f'^{SRC} has an invalid key "store-0": must be a valid URL with '
                       "scheme file://, http://, or https://$"):
        VerifierConfig.from_configmap(verifier_configmap({"a": keys.public("signer")}, [url]))


def test_data_must_be_a_map() -> None:
    with pytest.raises(InvalidVerifierConfig, match=f"^{SRC} in release-manifests/x.yaml is not valid: data is"):
        VerifierConfig.from_configmap({**verifier_configmap({}, []), "data": ["x"]}, "release-manifests/x.yaml")


def test_the_first_annotated_configmap_is_used(keys: Keys) -> None:
    first = verifier_configmap({"a": keys.public("signer")}, ["file:///first"], name="first")
    second = verifier_configmap({"a": keys.public("second")}, ["file:///second"], name="second")
    plain = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"}, "data": {}}
    secret = {**first, "kind": "Secret"}
    docs = [plain, secret, "not a mapping", first, second]
    assert find_verifier_config(docs).stores == ("file:///first",)   # type: ignore[arg-type, union-attr]
    assert find_verifier_config([plain, secret]) is None


def test_an_annotated_configmap_that_is_invalid_is_an_error(keys: Keys) -> None:
    # library-go: "If the annotation is set, a verifier or error is always returned"
    with pytest.raises(InvalidVerifierConfig):
        find_verifier_config([verifier_configmap({}, ["file:///x"])])
