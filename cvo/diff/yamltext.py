"""JSON data as block-style YAML lines, for the diff's unified diffs (what ``kubectl diff`` compares): a few times
faster than PyYAML's representer, which dominated the diff of a release.

Keys in their order; a list's ``-`` at its key's indent; a string plain when YAML reads it back as that string
(by PyYAML's resolver's rules), a multi-line one as a literal block (``|``) so that a changed line of a
ConfigMap's file is one changed line of the diff, anything else double-quoted (JSON's escapes are YAML's).
``yaml.safe_load`` of the lines gives the data back (tests/diff/test_yamltext.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_PLAIN = re.compile(r"(?:[A-Za-z0-9_./$(]|-(?=[^ ]))[A-Za-z0-9_./:@=+,~()$*%^ -]*")
# The plain scalars YAML 1.1 reads as something else than a string: PyYAML's implicit resolvers
# (yaml/resolver.py ``Resolver.add_implicit_resolver``: bool, float, int, null, timestamp; merge and value
# start with characters _PLAIN never starts with), without importing PyYAML.
_NOT_A_STRING = re.compile(r"""(?x)
    yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
  | [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)? | \.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
  | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]* | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
  | [-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(?:0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+ | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
  | ~|null|Null|NULL
  | [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
  | [0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[\ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
    (?:[\ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?
""")


def _plain(text: str) -> bool:
    return (_PLAIN.fullmatch(text) is not None and not text.endswith((" ", ":")) and ": " not in text
            and " #" not in text and _NOT_A_STRING.fullmatch(text) is None)


def _block(text: str) -> bool:
    """A literal block keeps it exactly: several lines, no control character but tab, no leading blank."""
    return ("\n" in text and not text.startswith((" ", "\n", "\t")) and text.strip("\n") != ""
            and all(c == "\n" or c == "\t" or c.isprintable() for c in text) and "\u2028" not in text)


# What PyYAML's reader refuses raw (yaml/reader.py NON_PRINTABLE) or reads as a line break inside quotes
_ESCAPE = re.compile("[^\x09\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _quoted(text: str) -> str:
    """Double-quoted: JSON's escapes, and YAML's ``\\u``/``\\U`` for what YAML would not read raw."""
    quoted = json.dumps(text, ensure_ascii=False)
    return _ESCAPE.sub(lambda m: f"\\u{ord(m[0]):04x}" if ord(m[0]) <= 0xFFFF else f"\\U{ord(m[0]):08x}", quoted)


def scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return value if _plain(value) else _quoted(value)
    if isinstance(value, float):
        text = repr(value)  # YAML 1.1 reads a float only with a dot: 1e+16 is 1.0e+16
        return text if "." in text or "e" not in text else text.replace("e", ".0e", 1)
    return str(value) if isinstance(value, int) else orjson.dumps(value).decode()


def _string(prefix: str, text: str, indent: int, out: list[str]) -> None:
    if not _block(text):
        out.append(f"{prefix} {scalar(text)}" if prefix else scalar(text))
        return
    chomp = "+" if text.endswith("\n\n") else "" if text.endswith("\n") else "-"
    out.append(f"{prefix} |{chomp}" if prefix else f"|{chomp}")
    pad = " " * (indent + 2)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines = lines[:-1]
    out.extend(f"{pad}{line}" if line else "" for line in lines)


def _value(prefix: str, value: Any, indent: int, out: list[str]) -> None:
    """``prefix`` (``key:`` or ``-``) and ``value`` at ``indent``."""
    if isinstance(value, dict) and value:
        out.append(prefix)
        _mapping(value, indent + 2, out)
    elif isinstance(value, list) and value:
        out.append(prefix)
        _sequence(value, indent if prefix.endswith(":") else indent + 2, out)
    elif isinstance(value, str):
        _string(prefix, value, indent, out)
    else:
        empty = "{}" if isinstance(value, dict) else "[]" if isinstance(value, list) else scalar(value)
        out.append(f"{prefix} {empty}")


def _mapping(data: dict[str, Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for key, value in data.items():
        _value(f"{pad}{scalar(str(key))}:", value, indent, out)


def _sequence(items: list[Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for item in items:
        if isinstance(item, dict) and item:
            start = len(out)
            _mapping(item, indent + 2, out)
            out[start] = f"{pad}- {out[start][indent + 2:]}"  # the first key on the dash's line
        else:
            _value(f"{pad}-", item, indent, out)


def to_lines(data: Any) -> list[str]:
    """``data`` (JSON values) as YAML lines."""
    out: list[str] = []
    if isinstance(data, dict) and data:
        _mapping(data, 0, out)
    elif isinstance(data, list) and data:
        _sequence(data, 0, out)
    else:
        _value("", data, 0, out) if not isinstance(data, str) else _string("", data, 0, out)
    return [line.lstrip() if i == 0 and not (isinstance(data, dict | list) and data) else line
            for i, line in enumerate(out)]
