"""The "atomic container signature": the JSON a release signature signs.

Format: containers/image signature/simple.go (``untrustedSignature.MarshalJSON``, ``strictUnmarshalJSON``)::

    {"critical": {"type": "atomic container signature",
                  "image": {"docker-manifest-digest": "sha256:…"},
                  "identity": {"docker-reference": "quay.io/openshift-release-dev/ocp-release:4.16.3-x86_64"}},
     "optional": {"creator": "…", "timestamp": 1483228800}}

Checked as library-go pkg/verify/verify.go ``verifyAtomicContainerSignature`` checks it (unknown fields
rejected everywhere, the type, a non-empty identity, the digest equal to the release's), and stricter
where Go's decoder is lenient: keys match exactly (Go matches them case-insensitively), no duplicate
keys (containers/image ``ParanoidUnmarshalJSONObject``), ``null`` is not a string, nothing after the object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cvo.verify.digests import go_quote
from cvo.verify.errors import SignatureInvalid

SIGNATURE_TYPE = "atomic container signature"
MAX_CONTENT = 64 * 1024  # bytes of signed JSON read; a release signature is about 300
INT64 = (-(2**63), 2**63 - 1)

_FIELDS: dict[str, frozenset[str]] = {
    "": frozenset({"critical", "optional"}),
    "critical": frozenset({"type", "image", "identity"}),
    "critical.image": frozenset({"docker-manifest-digest"}),
    "critical.identity": frozenset({"docker-reference"}),
    "optional": frozenset({"creator", "timestamp"}),
}


@dataclass(frozen=True)
class AtomicSignature:
    digest: str             # critical.image.docker-manifest-digest
    docker_reference: str   # critical.identity.docker-reference
    creator: str | None = None
    timestamp: int | None = None


class _Invalid(Exception):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Invalid(f"duplicate key {go_quote(key)}")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise _Invalid(f"invalid number {name}")


def _fields(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(f"{path or 'the signature'} is not a JSON object")
    for key in value:
        if key not in _FIELDS[path]:
            raise _Invalid(f"unknown field {go_quote(f'{path}.{key}' if path else key)}")
    return value


def _string(obj: Mapping[str, Any], key: str, path: str) -> str:
    value = obj.get(key, "")
    if not isinstance(value, str):
        raise _Invalid(f"{path}.{key} is not a string")
    return value


def parse_signature(content: bytes) -> AtomicSignature:
    """The signed JSON as a value, or :class:`SignatureInvalid` ("the signature is not valid JSON: …")."""
    try:
        if len(content) > MAX_CONTENT:
            raise _Invalid(f"larger than {MAX_CONTENT} bytes")
        doc = json.loads(content.decode("utf-8"), object_pairs_hook=_object, parse_constant=_constant)
        top = _fields(doc, "")
        critical = _fields(top.get("critical", {}), "critical")
        image = _fields(critical.get("image", {}), "critical.image")
        identity = _fields(critical.get("identity", {}), "critical.identity")
        optional = _fields(top.get("optional", {}), "optional")
        kind = _string(critical, "type", "critical")
        digest = _string(image, "docker-manifest-digest", "critical.image")
        reference = _string(identity, "docker-reference", "critical.identity")
        creator = _string(optional, "creator", "optional") if "creator" in optional else None
        timestamp = optional.get("timestamp")
        if timestamp is not None and (type(timestamp) is not int or not INT64[0] <= timestamp <= INT64[1]):
            raise _Invalid("optional.timestamp is not an integer")
    except (_Invalid, ValueError, RecursionError) as err:
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise SignatureInvalid(f"the signature is not valid JSON: {detail[:200]}") from None
    # library-go pkg/verify/verify.go verifyAtomicContainerSignature, in its order
    if kind != SIGNATURE_TYPE:
        raise SignatureInvalid("signature is not the correct type")
    if not reference:
        raise SignatureInvalid("signature must have an identity")
    return AtomicSignature(digest, reference, creator, timestamp)


def check_signature(content: bytes, digest: str) -> AtomicSignature:
    """The signed JSON if it attests ``digest``; :class:`SignatureInvalid` otherwise."""
    signature = parse_signature(content)
    if signature.digest != digest:
        raise SignatureInvalid("signature digest does not match")
    return signature


def signature_json(digest: str, docker_reference: str, *, creator: str | None = None,
                   timestamp: int | None = None) -> bytes:
    """The JSON to sign, as containers/image ``untrustedSignature.MarshalJSON`` writes it (Go's
    ``json.Marshal`` of maps: keys sorted, compact)."""
    if not digest or not docker_reference:
        raise ValueError("a signature needs a digest and a docker reference")
    optional: dict[str, Any] = {}
    if creator is not None:
        optional["creator"] = creator
    if timestamp is not None:
        optional["timestamp"] = timestamp
    doc = {"critical": {"identity": {"docker-reference": docker_reference},
                        "image": {"docker-manifest-digest": digest}, "type": SIGNATURE_TYPE},
           "optional": optional}
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
