"""The verifier's readers under hypothesis (bounded, derandomized in make test; longer in make fuzz): the
signed JSON, OpenPGP messages through the real gpg, verifier ConfigMaps, stores of hostile files."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings

from tests.support import fuzz_verify as v

FEW = settings(max_examples=25, deadline=None, derandomize=True, database=None)


@given(v.TARGETS["signature-json"][0])
@example(b'{"critical": {"type": "atomic container signature", "image": {"docker-manifest-digest": "x"}}}')
@example(b'{"critical": {}, "optional": {"timestamp": true}}')
@example(b"[]")
def test_signature_json_is_accepted_or_refused(data: bytes) -> None:
    v.signature_json_target(data)


@FEW
@given(v.TARGETS["signed-message"][0])
def test_an_openpgp_message_nobody_signed_never_verifies(pair: tuple[bytes, bytes]) -> None:
    v.signed_message_target(*pair)


@given(v.TARGETS["verifier-configmaps"][0])
@example([{"kind": "ConfigMap", "metadata": {"annotations": {"release.openshift.io/verification-config-map": ""},
                                             "name": "a"}, "data": {"store-a": "ftp://x"}}])
def test_verifier_configmaps_are_read_or_refused_in_one_line(documents: list[Any]) -> None:
    v.verifier_configmap_target(documents)


@FEW
@given(v.TARGETS["signature-store"][0])
@example({1: b"", 2: b"\xa3\x01" + b"\x00" * 50})
def test_a_store_of_hostile_files_never_verifies(files: dict[int, bytes]) -> None:
    v.store_target(files)
