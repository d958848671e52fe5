"""The "atomic container signature" a release signature signs (containers/image ``docs/containers-signature.5.md``).

library-go ``pkg/verify/verify.go`` ``verifyAtomicContainerSignature``: JSON with ``critical`` (``type``
"atomic container signature", ``image.docker-manifest-digest``, ``identity.docker-reference``) and
``optional`` (``creator``, ``timestamp``); an unknown field anywhere is refused (``DisallowUnknownFields``),
the type must be right, the identity present, the digest the release's.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

TYPE = "atomic container signature"
MAX_BYTES = 64 << 10
_FIELDS: dict[str, Any] = {"critical": {"type": str, "image": {"docker-manifest-digest": str},
                                        "identity": {"docker-reference": str}},
                           "optional": {"creator": str, "timestamp": int}}


class SignatureInvalid(ValueError):
    """The signed content does not authenticate the digest."""


def _check(doc: Any, shape: dict[str, Any], where: str) -> None:
    if not isinstance(doc, dict):
        raise SignatureInvalid(f"the signature is not valid JSON: {where or 'the document'} is not an object")
    for key, value in doc.items():
        if key not in shape:
            raise SignatureInvalid(f'the signature is not valid JSON: json: unknown field "{key[:80]}"')
        want = shape[key]
        if isinstance(want, dict):
            _check(value, want, f"{where}.{key}".lstrip("."))
        elif not isinstance(value, want) or isinstance(value, bool):
            raise SignatureInvalid(f"the signature is not valid JSON: {where}.{key} is not a {want.__name__}")


def check_signed_content(data: bytes, digest: str) -> str:
    """The ``docker-reference`` of a signature whose content authenticates ``digest``; else
    :class:`SignatureInvalid` with library-go's reason."""
    if len(data) > MAX_BYTES:
        raise SignatureInvalid(f"the signature is not valid JSON: over {MAX_BYTES} bytes")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise SignatureInvalid(f"the signature is not valid JSON: {err}") from None
    _check(doc, _FIELDS, "")
    critical = doc.get("critical") or {}
    if critical.get("type") != TYPE:
        raise SignatureInvalid("signature is not the correct type")
    reference = (critical.get("identity") or {}).get("docker-reference") or ""
    if not reference:
        raise SignatureInvalid("signature must have an identity")
    if (critical.get("image") or {}).get("docker-manifest-digest") != digest:
        raise SignatureInvalid("signature digest does not match")
    return str(reference)


def signed_content(digest: str, docker_reference: str, creator: str = "cvo") -> bytes:
    """What ``cvo release sign`` signs for ``digest``."""
    return orjson.dumps({"critical": {"type": TYPE, "image": {"docker-manifest-digest": digest},
                                      "identity": {"docker-reference": docker_reference}},
                         "optional": {"creator": creator, "timestamp": int(time.time())}})
