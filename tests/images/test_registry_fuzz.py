"""The registry client's fuzz targets (tests/support/fuzz_registry.py), bounded for make test; make fuzz runs
them longer (HYPOTHESIS_PROFILE=fuzz)."""

from __future__ import annotations

import base64
import os

import orjson
from hypothesis import HealthCheck, example, given, settings

from tests.support import fuzz_registry as t

BOUNDED = settings(max_examples=150 if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci" else 2_000,
                   derandomize=os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci", deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SLOW = settings(BOUNDED, max_examples=40 if BOUNDED.derandomize else 500)
SECRET_AUTH = base64.b64encode(f"user:{t.SECRET}".encode()).decode()


@BOUNDED
@given(t.auth_file_bytes)
@example(orjson.dumps({"auths": {"registry.example.com:5000": {"auth": SECRET_AUTH + "!"}}}))
@example(orjson.dumps({"auths": {"registry.example.com:5000": SECRET_AUTH}}))
@example(orjson.dumps({"credHelpers": {"registry.example.com:5000": "nosuchhelper-fuzz"}}))
def test_auth_files_give_credentials_or_one_clean_error(data: bytes) -> None:
    t.auth_file_target(data)


@BOUNDED
@given(t.auth_file_bytes)
@example(orjson.dumps({"https://registry.example.com:5000/v1/": {"auth": SECRET_AUTH}}))
def test_legacy_dockercfg_files_too(data: bytes) -> None:
    t.auth_file_target(data, legacy=True)


@BOUNDED
@given(t.challenge_text)
@example('Bearer realm="a\\')
@example('Basic realm="x", =y')
def test_challenges_parse_or_are_dropped(text: str) -> None:
    t.challenge_target(text)


@BOUNDED
@given(t.error_bodies)
@example(b'{"errors": [{"code": "X\\n\\u0000Y", "message": "' + b"m" * 500 + b'"}]}')
def test_error_bodies_give_one_short_printable_line(data: bytes) -> None:
    t.error_body_target(data)


@BOUNDED
@given(t.retry_after_text)
@example("Fri, 31 Dec 9999 23:59:59 GMT")
@example("99999999999999999999999")
@example("²")  # found: str.isdigit() took it, int() did not
def test_retry_after_is_a_finite_wait_or_nothing(text: str) -> None:
    t.retry_after_target(text)


@SLOW
@given(t.responses)
@example((301, [("Location", "http://[::1")], b""))
@example((200, [("Content-Length", "99999999")], b"{}"))
@example((200, [("Docker-Content-Digest", "sha256:" + "a" * 64)], b"{}"))
@example((401, [("WWW-Authenticate", 'Bearer realm="http://127.0.0.1:1/t"')], b""))
@example((429, [("Retry-After", "99999999")], b""))
def test_any_answer_to_a_manifest_request_is_a_manifest_or_one_clean_error(
        answer: tuple[int, list[tuple[str, str]], bytes]) -> None:
    t.response_target(answer)
