"""Go's text conventions where cvo must print exactly what a Go program prints (``%q``, ``strconv``)."""

from __future__ import annotations

import unicodedata

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
            "\\": "\\\\", '"': '\\"'}


def go_quote(text: str) -> str:
    """``strconv.Quote`` (what ``%q`` prints for a string): printable runes as they are, the rest escaped."""
    out = ['"']
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append("\\ufffd")  # Go holds a lone surrogate as the replacement character
        elif _printable(ch):
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def _printable(ch: str) -> bool:
    """``strconv.IsPrint``: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    if ch == " ":
        return True
    return unicodedata.category(ch)[0] in "LMNPS"


def go_parse_uint(text: str) -> int | str:
    """``strconv.ParseUint(text, 10, 64)``: the value, or Go's error text (ASCII digits only, no sign)."""
    if not text or not text.isascii() or not text.isdigit():
        return f"strconv.ParseUint: parsing {go_quote(text)}: invalid syntax"
    value = int(text)
    return value if value < 2**64 else f"strconv.ParseUint: parsing {go_quote(text)}: value out of range"
