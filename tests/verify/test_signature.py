"""The atomic container signature JSON: containers/image signature/simple.go's format, checked as library-go
pkg/verify/verify.go ``verifyAtomicContainerSignature`` checks it (and stricter where Go's decoder is lenient)."""

from __future__ import annotations

import json

import pytest

from cvo.verify.errors import SignatureInvalid
from cvo.verify.signature import AtomicSignature, check_signature, parse_signature, signature_json
from tests.support.gpgkeys import DIGEST, OTHER_DIGEST, REFERENCE


def doc(**over: object) -> dict:
    base: dict = {"critical": {"type": "atomic container signature", "image": {"docker-manifest-digest": DIGEST},
                               "identity": {"docker-reference": REFERENCE}},
                  "optional": {"creator": "atomic 2.0.0", "timestamp": 1700000000}}
    for path, value in over.items():
        parts = path.split("__")
        target = base
        for part in parts[:-1]:
            target = target[part]
        if value is KeyError:
            del target[parts[-1]]
        else:
            target[parts[-1]] = value
    return base


def raw(d: object) -> bytes:
    return json.dumps(d).encode()


def test_a_good_signature_parses() -> None:
    assert check_signature(raw(doc()), DIGEST) == AtomicSignature(DIGEST, REFERENCE, "atomic 2.0.0", 1700000000)


def test_optional_may_be_missing_or_empty() -> None:
    assert parse_signature(raw(doc(optional=KeyError))).creator is None
    assert parse_signature(raw(doc(optional={}))).timestamp is None


def test_signature_json_is_what_containers_image_marshals() -> None:
    # Go's json.Marshal of maps: keys sorted, compact
    assert signature_json(DIGEST, REFERENCE, creator="c", timestamp=5) == (
        b'{"critical":{"identity":{"docker-reference":"' + REFERENCE.encode() + b'"},"image":'
        b'{"docker-manifest-digest":"' + DIGEST.encode() + b'"},"type":"atomic container signature"},'
        b'"optional":{"creator":"c","timestamp":5}}')
    assert parse_signature(signature_json(DIGEST, REFERENCE)) == AtomicSignature(DIGEST, REFERENCE)


def test_another_digest_is_refused() -> None:
    with pytest.raises(SignatureInvalid, match=r"^signature digest does not match$"):
        check_signature(raw(doc()), OTHER_DIGEST)


@pytest.mark.parametrize("field", ["extra", "critical__extra", "critical__image__extra",
                                   "critical__identity__extra", "optional__extra"])
def test_unknown_fields_are_refused_everywhere(field: str) -> None:
    with pytest.raises(SignatureInvalid, match=r'^the signature is not valid JSON: unknown field "[a-z.]*extra"$'):
        check_signature(raw(doc(**{field: 1})), DIGEST)


@pytest.mark.parametrize(("over", "message"), [
    ({"critical__type": "atomic container signature v2"}, "signature is not the correct type"),
    ({"critical": KeyError}, "signature is not the correct type"),
    ({"critical__identity__docker-reference": ""}, "signature must have an identity"),
    ({"critical__identity": KeyError}, "signature must have an identity"),
    ({"critical__image": KeyError}, "signature digest does not match"),
])
def test_library_go_messages(over: dict, message: str) -> None:
    with pytest.raises(SignatureInvalid, match=f"^{message}$"):
        check_signature(raw(doc(**over)), DIGEST)


@pytest.mark.parametrize("data", [
    b'{"critical": {}, "critical": {}}',                     # duplicate key (Go keeps the last)
    b'{"Critical": {}}',                                     # Go matches keys case-insensitively
    raw(doc(critical__type=None)),                          # Go leaves a string as "" for null
    raw(doc(**{"critical__image__docker-manifest-digest": 5})),
    raw(doc(optional__timestamp=1.5)), raw(doc(optional__timestamp=True)), raw(doc(optional__timestamp=2**63)),
    raw(doc(optional__creator=[])),
    raw(doc()) + b"{}", b"[]", b"", b"\xff", b"NaN", b'{"optional": {"timestamp": Infinity}}',
    b"[" * 60_000, b"{" + b" " * 70_000 + b"}",
]
)
def test_malformed_json_is_one_line(data: bytes) -> None:
    with pytest.raises(SignatureInvalid) as err:
        check_signature(data, DIGEST)
    assert str(err.value).startswith("the signature is not valid JSON: ") and "\n" not in str(err.value)
