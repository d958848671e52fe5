"""Go's ``encoding/json`` text of a decoded YAML document: the bytes library-go keeps as ``Manifest.Raw``.

``sigs.k8s.io/yaml``'s ``YAMLToJSON`` ends in ``json.Marshal`` of ``map[string]interface{}`` values
(golang/go ``src/encoding/json/encode.go``):

* compact, object keys sorted byte-wise (Python's code-point order is the same for UTF-8);
* strings: ``\\"`` ``\\\\`` ``\\b`` ``\\f`` ``\\n`` ``\\r`` ``\\t``, other bytes below 0x20 as ``\\u00xx``,
  ``<`` ``>`` ``&`` as ``\\u003c`` ``\\u003e`` ``\\u0026`` (``escapeHTML``), U+2028 and U+2029 escaped;
* integers in decimal; floats as ``floatEncoder`` writes them: the shortest digits that read back, in
  plain notation from 1e-6 to below 1e21 (``1e20`` is ``100000000000000000000``, ``-0.0`` is ``-0``),
  otherwise with an exponent (``1e+21``, ``1.5e-7``); NaN and infinities are an error.

orjson writes the same text apart from the HTML and line-separator escapes and floats (orjson writes
``1e+20``, ``123.0``, and ``null`` for a NaN), so a document without floats is orjson's output with
those escapes added, and a document with a float (the YAML decoder says which) is written by the exact
encoder below.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

__all__ = ["UnsupportedValue", "go_float", "go_json"]

_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
            ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


class UnsupportedValue(ValueError):
    """A value ``json.Marshal`` refuses: its message is Go's (``json: unsupported value: NaN``)."""


def _shortest(value: float) -> tuple[str, int]:
    """The shortest decimal digits that read back as ``value`` (> 0) and the decimal point: 0.DIGITS × 10^point."""
    mantissa, _, exponent = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).rstrip("0")
    stripped = digits.lstrip("0")
    point = len(whole) - (len(digits) - len(stripped)) + (int(exponent) if exponent else 0)
    return stripped, point


def go_float(value: float) -> str:
    """``json.Marshal(float64)``: Go's ``floatEncoder`` (ES6 number-to-string with Go's exponent form)."""
    if math.isnan(value) or math.isinf(value):
        name = "NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"
        raise UnsupportedValue(f"json: unsupported value: {name}")
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    digits, point = _shortest(abs(value))
    if 1e-6 <= abs(value) < 1e21:  # strconv 'f' with the shortest precision
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return sign + digits + "0" * (point - len(digits))
        return f"{sign}{digits[:point]}.{digits[point:]}"
    exponent = point - 1  # strconv 'e' (two exponent digits at least), then "clean up e-09 to e-9"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    if exponent < 0:
        return f"{sign}{mantissa}e-{-exponent}" if exponent > -10 else f"{sign}{mantissa}e{exponent:03d}"
    return f"{sign}{mantissa}e+{exponent:02d}"


def _string(text: str) -> bytes:
    out = orjson.dumps(text)
    for plain, escaped in _ESCAPES:
        if plain in out:
            out = out.replace(plain, escaped)
    return out


def _exact(value: Any, out: list[bytes]) -> None:
    if isinstance(value, str):
        out.append(_string(value))
    elif value is None:
        out.append(b"null")
    elif value is True:
        out.append(b"true")
    elif value is False:
        out.append(b"false")
    elif isinstance(value, int):
        out.append(str(value).encode())
    elif isinstance(value, float):
        out.append(go_float(value).encode())
    elif isinstance(value, dict):
        out.append(b"{")
        for i, key in enumerate(sorted(value)):
            if i:
                out.append(b",")
            out.append(_string(key))
            out.append(b":")
            _exact(value[key], out)
        out.append(b"}")
    elif isinstance(value, list):
        out.append(b"[")
        for i, item in enumerate(value):
            if i:
                out.append(b",")
            _exact(item, out)
        out.append(b"]")
    else:
        raise TypeError(f"not a decoded YAML value: {type(value).__name__}")


def go_json(value: Any, exact: bool) -> bytes:
    """``json.Marshal(value)`` for a decoded YAML value; ``exact`` unless it is known to hold no float.

    Raises :class:`UnsupportedValue` for a NaN or an infinity and ``orjson.JSONEncodeError`` for a
    string that is not valid Unicode.
    """
    if not exact:
        out = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        for plain, escaped in _ESCAPES:
            if plain in out:
                out = out.replace(plain, escaped)
        return out
    parts: list[bytes] = []
    _exact(value, parts)
    return b"".join(parts)
