"""The fuzz targets of cvo.verify (tests/support/fuzz_verify.py), bounded for make test; make fuzz runs them longer."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings

from tests.support import fuzz_verify as t

BOUNDED = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@BOUNDED
@given(t.TARGETS["signature-json"][0])
@example(b'{"critical":{"type":"atomic container signature","image":{"docker-manifest-digest":"x"},'
         b'"identity":{"docker-reference":"r"}},"optional":{"timestamp":1e400}}')
@example(b"[" * 5000)
def test_signature_json(data: bytes) -> None:
    t.signature_json_target(data)


@settings(BOUNDED, max_examples=40)
@given(t.TARGETS["signed-message"][0])
@example(("good", []))
@example(("plain", [(60, 2, b"[]")]))
def test_signed_message(spec: Any) -> None:
    t.signed_message_target(spec)


@settings(BOUNDED, max_examples=40)
@given(t.TARGETS["verifier-configmap"][0])
@example({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "v", "namespace": "ns"},
          "data": {"verifier-public-key-a": "@KEY@", "store-a": "file:///s"}})
def test_verifier_configmap(cm: Any) -> None:
    t.verifier_configmap_target(cm)


@settings(BOUNDED, max_examples=30)
@given(t.TARGETS["store-response"][0])
@example({"status": 200, "headers": [], "body": b"@GOOD@", "binaryData": {}})
@example({"status": 200, "headers": [("Content-Length", "999999")], "body": b"@GOOD@", "binaryData": {}})
@example({"status": 302, "headers": [("Location", "ftp://h/x")], "body": b"", "binaryData": {}})
@example({"status": 404, "headers": [], "body": b"", "binaryData": {f"sha256-{'ab' * 32}-1": "@GOOD@"}})
def test_store_response(spec: Any) -> None:
    t.store_response_target(spec)
